//! The control plane for zones and records: validate a change against the whole zone, store
//! it in one transaction, then rebuild that zone's snapshot and swap it in.
//!
//! Writes are serialised by one async mutex that holds each zone's settings; the records stay
//! in the store and are read back for a change (a second copy in memory was most of the memory
//! of a big zone). The query path never takes the mutex.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use arc_swap::ArcSwap;
use model::rdata::{parse_rtype, rtype_allowed};
use model::steering::Validate as _;
use model::zone::{next_serial, parse_zone_name};
use model::{Dname, FieldError, Rdata, RecordConfig, Snapshot, Soa, ZoneConfig, ZoneSnapshot};
use store::{Store, StoreError};
use tokio::sync::Mutex;

use crate::metrics::Metrics;

/// Why a management call failed; mapped to HTTP in `http::ApiError`.
#[derive(Debug, thiserror::Error)]
pub enum ManageError {
    #[error("{0}")]
    NotFound(String),
    #[error("{}", .0.first().map(|e| e.to_string()).unwrap_or_default())]
    Invalid(Vec<FieldError>),
    #[error("{message}")]
    Conflict {
        message: String,
        field: Option<String>,
    },
    #[error(transparent)]
    Store(#[from] StoreError),
}

type Result<T> = std::result::Result<T, ManageError>;

/// Today as `YYYYMMDD` in UTC, for dated serials.
pub fn today_yyyymmdd() -> u32 {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let (y, m, d) = civil_from_days((secs / 86_400) as i64);
    (y as u32) * 10_000 + m * 100 + d
}

/// Days since 1970-01-01 to a proleptic Gregorian date (H. Hinnant's algorithm).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    (y, m, d)
}

pub fn now_secs() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs() as i64)
        .unwrap_or(0)
}

pub struct Manager {
    store: Store,
    pub(crate) snapshot: Arc<ArcSwap<Snapshot>>,
    pub(crate) zones: Mutex<BTreeMap<Dname, HeldZone>>,
    metrics: Arc<Metrics>,
    /// Health of check targets by key, kept by the health runner, shown with records.
    pub(crate) health: std::sync::RwLock<HashMap<u64, api::HealthInfo>>,
    /// Bumped on every change of zones, so the health runner can follow the checks.
    changes: tokio::sync::watch::Sender<u64>,
    /// Saved images of the compiled zones, when the data dir can hold them.
    images: Option<Arc<crate::images::Images>>,
}

/// What the manager keeps of a zone between changes.
pub(crate) struct HeldZone {
    /// The zone without its records (`records` is empty): they are in the store.
    pub config: ZoneConfig,
    pub record_count: usize,
    /// The A and AAAA records of every name where one of them is steered, for the health
    /// runner and the topology.
    pub steered: Vec<RecordConfig>,
}

impl HeldZone {
    pub fn of(zone: &ZoneConfig) -> HeldZone {
        HeldZone::new(zone, &zone.records, zone.records.len())
    }

    /// From a zone's settings (its `records` are not read), its records (at least every A and
    /// AAAA record) and how many records it has.
    pub fn new(zone: &ZoneConfig, records: &[RecordConfig], record_count: usize) -> HeldZone {
        let steered_names: std::collections::HashSet<Dname> = records
            .iter()
            .filter(|r| r.steering.is_some())
            .map(|r| r.name.to_lowercase())
            .collect();
        let steered = if steered_names.is_empty() {
            Vec::new()
        } else {
            records
                .iter()
                .filter(|r| matches!(r.rtype, model::Rtype::A | model::Rtype::AAAA))
                .filter(|r| steered_names.contains(&r.name.to_lowercase()))
                .cloned()
                .collect()
        };
        HeldZone {
            config: ZoneConfig {
                id: zone.id,
                name: zone.name.clone(),
                soa: zone.soa.clone(),
                default_ttl: zone.default_ttl,
                records: Vec::new(),
                pools: zone.pools.clone(),
                load_balancers: zone.load_balancers.clone(),
            },
            record_count,
            steered,
        }
    }
}

/// A checked target as the zones name it: one per (key, record).
#[derive(Clone, Debug)]
pub struct CheckedRecord {
    pub key: u64,
    pub record_id: i64,
    pub address: std::net::IpAddr,
    pub host: String,
    pub check: model::steering::CheckConfig,
}

fn to_api_zone(held: &HeldZone) -> api::Zone {
    let zone = &held.config;
    api::Zone {
        name: zone.name.to_string(),
        serial: zone.soa.serial,
        default_ttl: zone.default_ttl,
        soa: api::Soa {
            mname: zone.soa.mname.to_string(),
            rname: zone.soa.rname.to_string(),
            serial: zone.soa.serial,
            refresh: zone.soa.refresh,
            retry: zone.soa.retry,
            expire: zone.soa.expire,
            minimum: zone.soa.minimum,
        },
        record_count: held.record_count,
    }
}

/// The address of A or AAAA rdata.
pub fn ip_of(rdata: &Rdata) -> Option<std::net::IpAddr> {
    match rdata.as_wire().len() {
        4 => <[u8; 4]>::try_from(rdata.as_wire())
            .ok()
            .map(std::net::IpAddr::from),
        16 => <[u8; 16]>::try_from(rdata.as_wire())
            .ok()
            .map(std::net::IpAddr::from),
        _ => None,
    }
}

fn to_api_record(zone: &ZoneConfig, record: &RecordConfig) -> api::Record {
    api::Record {
        id: record.id,
        name: record.name.to_relative_string(&zone.name),
        fqdn: record.name.to_string(),
        rtype: record.rtype.to_string(),
        ttl: record.ttl,
        value: record.rdata.to_text(record.rtype),
        steering: record.steering.as_ref().map(|s| s.to_spec()),
        health: None,
    }
}

fn invalid(field: &str, message: impl Into<String>) -> ManageError {
    ManageError::Invalid(vec![FieldError::new(field, message)])
}

/// Parses an API record against its zone; every bad field is reported.
fn record_from_spec(zone: &ZoneConfig, spec: &api::RecordSpec) -> Result<RecordConfig> {
    let mut errors = Vec::new();
    let name = Dname::parse(&spec.name, &zone.name)
        .map_err(|e| errors.push(FieldError::new("name", e.to_string())));
    let rtype =
        parse_rtype(&spec.rtype).map_err(|e| errors.push(FieldError::new("type", e.to_string())));
    let mut rdata = Err(());
    if let Ok(rtype) = rtype {
        if !rtype_allowed(rtype) {
            errors.push(FieldError::new(
                "type",
                format!("type {rtype} cannot be stored as a record"),
            ));
        } else {
            rdata = Rdata::parse(rtype, &spec.value, &zone.name)
                .map_err(|e| errors.push(FieldError::new("value", e.to_string())));
        }
    }
    let steering = match &spec.steering {
        None => None,
        Some(steering) => match steering.validate("steering.") {
            Ok(valid) => Some(valid),
            Err(mut found) => {
                errors.append(&mut found);
                None
            }
        },
    };
    match (name, rtype, rdata) {
        (Ok(name), Ok(rtype), Ok(rdata)) if errors.is_empty() => Ok(RecordConfig {
            id: 0,
            name,
            rtype,
            ttl: spec.ttl.unwrap_or(zone.default_ttl),
            rdata,
            steering: steering.map(Box::new),
        }),
        _ => Err(ManageError::Invalid(errors)),
    }
}

/// Runs whole-zone validation; problems are reported by field name.
fn validate(zone: &ZoneConfig) -> Result<()> {
    let errors = zone.validate(&|_| String::new());
    if errors.is_empty() {
        Ok(())
    } else {
        Err(ManageError::Invalid(errors))
    }
}

impl Manager {
    /// Loads every zone and publishes the first snapshot: from its saved image where that is
    /// current, else from the store.
    pub async fn load(
        store: Store,
        snapshot: Arc<ArcSwap<Snapshot>>,
        metrics: Arc<Metrics>,
        images: Option<Arc<crate::images::Images>>,
    ) -> Result<Manager> {
        let started = std::time::Instant::now();
        let mut next = Snapshot::empty();
        let mut map = BTreeMap::new();
        let (mut records, mut from_images) = (0, 0);
        let mut compile_wait = std::time::Duration::ZERO;
        for zone in store.load_zone_settings().await? {
            let (compiled, held) = match Self::read_image(&store, images.as_ref(), &zone).await? {
                Some(loaded) => {
                    from_images += 1;
                    loaded
                }
                None => {
                    let (compiled, held, waited) = Self::load_zone(&store, zone).await?;
                    compile_wait += waited;
                    (compiled, held)
                }
            };
            records += held.record_count;
            next = next.with_zone(Arc::new(compiled));
            map.insert(held.config.name.to_lowercase(), held);
        }
        metrics.zones.set(map.len() as i64);
        metrics.zones_from_images.set(from_images);
        snapshot.store(Arc::new(next));
        tracing::info!(
            zones = map.len(),
            from_images,
            records,
            ms = started.elapsed().as_millis() as u64,
            compile_after_read_ms = compile_wait.as_millis() as u64,
            "zones loaded"
        );
        crate::heap::release_free_memory(None).await;
        Ok(Manager {
            store,
            snapshot,
            zones: Mutex::new(map),
            metrics,
            health: Default::default(),
            changes: tokio::sync::watch::channel(0).0,
            images,
        })
    }

    /// A zone from its image, when there is one of the zone's current revision.
    async fn read_image(
        store: &Store,
        images: Option<&Arc<crate::images::Images>>,
        zone: &ZoneConfig,
    ) -> Result<Option<(ZoneSnapshot, HeldZone)>> {
        let (Some(images), Some(revision)) = (images, store.revision(zone.id)) else {
            return Ok(None);
        };
        let (id, apex, reader) = (zone.id, zone.name.clone(), images.clone());
        let read = tokio::task::spawn_blocking(move || reader.read(id, revision, &apex))
            .await
            .map_err(|e| StoreError::Corrupt(format!("reading a zone image: {e}")))?;
        let loaded = match read {
            Ok(Some(loaded)) => loaded,
            Ok(None) => return Ok(None),
            Err(e) => {
                tracing::warn!(zone = %zone.name, error = %e, "zone image not used; loading from the store");
                return Ok(None);
            }
        };
        images.saved.lock().await.insert(zone.id, revision);
        let addresses = match loaded.steered {
            true => store.load_address_records(zone.id).await?,
            false => Vec::new(),
        };
        let held = HeldZone::new(zone, &addresses, loaded.record_count);
        Ok(Some((loaded.zone, held)))
    }

    /// Writes the image of every zone whose image is not of its current revision, and removes
    /// those of zones that are gone. Compiled zones are taken with the zones held, so each is
    /// the one its revision was written with.
    pub async fn save_images(&self) {
        let Some(images) = &self.images else { return };
        let mut saved = images.saved.lock().await;
        let (todo, ids) = {
            let zones = self.zones.lock().await;
            let snapshot = self.snapshot.load();
            let ids: std::collections::HashSet<i64> =
                zones.values().map(|held| held.config.id).collect();
            let todo: Vec<_> = zones
                .iter()
                .filter_map(|(apex, held)| {
                    let id = held.config.id;
                    let revision = self.store.revision(id)?;
                    if saved.get(&id) == Some(&revision) {
                        return None;
                    }
                    let compiled = snapshot.zone(apex.as_wire())?.clone();
                    let steered = !held.steered.is_empty();
                    Some((id, revision, held.record_count, steered, compiled))
                })
                .collect();
            (todo, ids)
        };
        let gone = saved.keys().any(|id| !ids.contains(id));
        if todo.is_empty() && !gone {
            return;
        }
        saved.retain(|id, _| ids.contains(id));
        let writer = images.clone();
        let written = tokio::task::spawn_blocking(move || {
            let mut written = Vec::new();
            for (id, revision, count, steered, compiled) in todo {
                let started = std::time::Instant::now();
                match writer.write(id, revision, count, steered, &compiled) {
                    Ok(()) => {
                        tracing::debug!(zone = %compiled.apex, ms = started.elapsed().as_millis() as u64, "zone image saved");
                        written.push((id, revision));
                    }
                    Err(e) => tracing::warn!(zone = %compiled.apex, error = %e, "saving a zone image"),
                }
            }
            writer.retain(&ids);
            written
        })
        .await;
        match written {
            Ok(written) => saved.extend(written),
            Err(e) => tracing::warn!(error = %e, "saving zone images"),
        }
    }

    /// Saves zone images after changes, once they have paused for a while: a zone changed
    /// every second is written once the changes stop, or at shutdown.
    pub fn keep_images(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        const SETTLE: std::time::Duration = std::time::Duration::from_secs(2);
        let manager = self.clone();
        let mut changes = self.changes.subscribe();
        tokio::spawn(async move {
            loop {
                manager.save_images().await;
                if changes.changed().await.is_err() {
                    return;
                }
                loop {
                    tokio::time::sleep(SETTLE).await;
                    if !changes.has_changed().unwrap_or(false) {
                        break;
                    }
                    changes.borrow_and_update();
                }
            }
        })
    }

    /// Reads a zone's records page by page into a builder on a blocking thread, so that
    /// reading and compiling overlap. Also returns how long compiling went on after the last
    /// page was read.
    async fn load_zone(
        store: &Store,
        zone: ZoneConfig,
    ) -> Result<(ZoneSnapshot, HeldZone, std::time::Duration)> {
        let zone_id = zone.id;
        let count = store.count_records(zone_id).await?;
        // Unbounded: the compile frees each page once added, and pages waiting for it never
        // hold more than the whole zone, which the load held before.
        let (pages, received) = std::sync::mpsc::channel::<Vec<RecordConfig>>();
        let settings = zone.clone();
        let compiling = tokio::task::spawn_blocking(move || {
            let mut builder = model::snapshot::ZoneBuilder::new(&zone, count);
            let (mut added, mut steered) = (0, false);
            for page in received {
                for record in &page {
                    builder.add(record);
                    steered |= record.steering.is_some();
                }
                added += page.len();
            }
            (builder.finish(&zone), added, steered)
        });
        let read = store
            .read_records(zone_id, false, |page| {
                pages
                    .send(page)
                    .map_err(|_| StoreError::Corrupt("the zone's compile stopped".into()))
            })
            .await;
        drop(pages);
        let read_done = std::time::Instant::now();
        let joined = compiling.await;
        let waited = read_done.elapsed();
        // A failed compile first: reading then fails only because the compile went away.
        let (compiled, added, steered) = joined.map_err(|e| {
            ManageError::Store(StoreError::Corrupt(format!("compiling a zone failed: {e}")))
        })?;
        read?;
        // Which names are steered is known only at the end; the addresses are read again
        // for the few zones that steer at all.
        let addresses = match steered {
            true => store.load_address_records(zone_id).await?,
            false => Vec::new(),
        };
        Ok((
            compiled,
            HeldZone::new(&settings, &addresses, added),
            waited,
        ))
    }

    /// The snapshot the query path is answering from now.
    pub fn snapshot(&self) -> Arc<Snapshot> {
        self.snapshot.load_full()
    }

    /// Swaps in another GeoIP database (or none); queries in flight finish with the old one.
    pub fn set_geo(&self, geo: Arc<dyn geo::Locate>) {
        self.snapshot.rcu(|current| current.with_geo(geo.clone()));
        self.metrics.snapshot_swaps.inc();
    }

    pub fn metrics(&self) -> &Metrics {
        &self.metrics
    }

    /// Sets the CH TXT answers about the server.
    pub fn set_chaos(&self, chaos: model::snapshot::Chaos) {
        let chaos = Arc::new(chaos);
        self.snapshot
            .rcu(|current| current.with_chaos(chaos.clone()));
    }

    pub fn store(&self) -> &Store {
        &self.store
    }

    /// Compiles and swaps in one zone; the returned task frees the replaced snapshot.
    pub(crate) fn publish(&self, zone: &ZoneConfig) -> Option<tokio::task::JoinHandle<()>> {
        let compiled = Arc::new(ZoneSnapshot::compile(zone));
        let replaced = self
            .snapshot
            .rcu(|current| current.with_zone(compiled.clone()));
        self.metrics.snapshot_swaps.inc();
        self.changes.send_modify(|generation| *generation += 1);
        crate::heap::drop_later(replaced)
    }

    /// Swaps in new health states: failing checks leave the answers at once.
    pub fn set_health(&self, health: Arc<model::snapshot::HealthTable>) {
        self.snapshot
            .rcu(|current| current.with_health(health.clone()));
        self.metrics.snapshot_swaps.inc();
    }

    /// Follows changes of the zones (for the health runner).
    pub fn subscribe(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.subscribe()
    }

    /// Sets what the API shows of a target's health.
    pub fn set_health_info(&self, key: u64, info: Option<api::HealthInfo>) {
        if let Ok(mut health) = self.health.write() {
            match info {
                Some(info) => health.insert(key, info),
                None => health.remove(&key),
            };
        }
    }

    /// Every checked record of every zone.
    pub async fn checked_records(&self) -> Vec<CheckedRecord> {
        let zones = self.zones.lock().await;
        let mut out = Vec::new();
        for zone in zones.values() {
            for record in &zone.steered {
                let Some(check) = record.steering.as_ref().and_then(|s| s.check.as_ref()) else {
                    continue;
                };
                let Some(address) = ip_of(&record.rdata) else {
                    continue;
                };
                out.push(CheckedRecord {
                    key: check.key(&record.name, &record.rdata),
                    record_id: record.id,
                    address,
                    host: check.effective_host(&record.name, &record.rdata),
                    check: check.clone(),
                });
            }
            // Origins of load balancer pools: their events go to record id -origin id.
            out.extend(crate::lb::checked_origins(&zone.config));
        }
        out
    }

    /// The API view of a record, with the health of its check.
    fn api_record(&self, zone: &ZoneConfig, record: &RecordConfig) -> api::Record {
        let mut view = to_api_record(zone, record);
        if let Some(check) = record.steering.as_ref().and_then(|s| s.check.as_ref()) {
            let key = check.key(&record.name, &record.rdata);
            let known = self.health.read().ok().and_then(|h| h.get(&key).cloned());
            view.health = Some(known.unwrap_or(api::HealthInfo {
                state: "unknown".into(),
                since: None,
                reason: None,
                status: None,
                latency_ms: None,
                checked: None,
            }));
        }
        view
    }

    /// Whether the zone holds a record with this id (health history is looked up by id).
    pub async fn has_record(&self, zone: &str, id: i64) -> Result<()> {
        let key = Self::zone_key(zone)?;
        let zones = self.zones.lock().await;
        let zone = &zones
            .get(&key)
            .ok_or_else(|| ManageError::NotFound(format!("no zone {key}")))?
            .config;
        if self.store.has_record(zone.id, id).await? {
            Ok(())
        } else {
            Err(ManageError::NotFound(format!(
                "no record {id} in {}",
                zone.name
            )))
        }
    }

    /// A held zone with its records, read from the store.
    pub(crate) async fn full_zone(
        &self,
        key: &Dname,
        zones: &BTreeMap<Dname, HeldZone>,
    ) -> Result<ZoneConfig> {
        let held = zones
            .get(key)
            .ok_or_else(|| ManageError::NotFound(format!("no zone {key}")))?;
        let mut zone = held.config.clone();
        zone.records = self.store.load_records(zone.id).await?;
        Ok(zone)
    }

    pub(crate) fn zone_key(name: &str) -> Result<Dname> {
        parse_zone_name(name)
            .map_err(|e| ManageError::NotFound(format!("zone {name:?}: {}", e.message)))
    }

    pub async fn list_zones(&self) -> Vec<api::Zone> {
        self.zones.lock().await.values().map(to_api_zone).collect()
    }

    pub async fn zone(&self, name: &str) -> Result<api::Zone> {
        let key = Self::zone_key(name)?;
        let zones = self.zones.lock().await;
        zones
            .get(&key)
            .map(to_api_zone)
            .ok_or_else(|| ManageError::NotFound(format!("no zone {key}")))
    }

    pub async fn create_zone(&self, spec: &api::ZoneCreate) -> Result<api::Zone> {
        let name = parse_zone_name(&spec.name).map_err(|e| ManageError::Invalid(vec![e]))?;
        let mut zones = self.zones.lock().await;
        if zones.contains_key(&name) {
            return Err(ManageError::Conflict {
                message: format!("zone {name} already exists"),
                field: Some("name".into()),
            });
        }
        let mut soa = Soa::default_for(&name, next_serial(0, today_yyyymmdd()));
        let mut errors = Vec::new();
        for (field, value, target) in [
            ("soa.mname", &spec.soa.mname, &mut soa.mname),
            ("soa.rname", &spec.soa.rname, &mut soa.rname),
        ] {
            if let Some(text) = value {
                match Dname::parse(text, &name) {
                    Ok(parsed) => *target = parsed,
                    Err(e) => errors.push(FieldError::new(field, e.to_string())),
                }
            }
        }
        soa.refresh = spec.soa.refresh.unwrap_or(soa.refresh);
        soa.retry = spec.soa.retry.unwrap_or(soa.retry);
        soa.expire = spec.soa.expire.unwrap_or(soa.expire);
        soa.minimum = spec.soa.minimum.unwrap_or(soa.minimum);
        let default_ttl = spec.default_ttl.unwrap_or(3600);
        let ns_names: Vec<String> = if spec.ns.is_empty() {
            vec![soa.mname.to_string()]
        } else {
            spec.ns.clone()
        };
        let mut records = Vec::new();
        for (idx, ns) in ns_names.iter().enumerate() {
            match Rdata::parse(model::Rtype::NS, ns, &name) {
                Ok(rdata) => records.push(RecordConfig {
                    id: 0,
                    name: name.clone(),
                    rtype: model::Rtype::NS,
                    ttl: default_ttl,
                    rdata,
                    steering: None,
                }),
                Err(e) => errors.push(FieldError::new(format!("ns[{idx}]"), e.to_string())),
            }
        }
        if !errors.is_empty() {
            return Err(ManageError::Invalid(errors));
        }
        let zone = ZoneConfig {
            id: 0,
            name: name.clone(),
            soa,
            default_ttl,
            records,
            pools: Vec::new(),
            load_balancers: Vec::new(),
        };
        validate(&zone)?;
        let stored = self.store.create_zone(&zone, now_secs()).await?;
        self.publish(&stored);
        let held = HeldZone::of(&stored);
        let api_zone = to_api_zone(&held);
        zones.insert(name, held);
        self.metrics.zones.set(zones.len() as i64);
        tracing::info!(zone = %api_zone.name, "zone created");
        Ok(api_zone)
    }

    pub async fn delete_zone(&self, name: &str) -> Result<()> {
        let key = Self::zone_key(name)?;
        let mut zones = self.zones.lock().await;
        if !zones.contains_key(&key) {
            return Err(ManageError::NotFound(format!("no zone {key}")));
        }
        self.store.delete_zone(&key).await?;
        zones.remove(&key);
        self.changes.send_modify(|generation| *generation += 1);
        let replaced = self.snapshot.rcu(|current| current.without_zone(&key));
        let freed = crate::heap::drop_later(replaced);
        self.metrics.snapshot_swaps.inc();
        self.metrics.zones.set(zones.len() as i64);
        drop(zones);
        tracing::info!(zone = %key, "zone deleted");
        crate::heap::release_free_memory(freed).await;
        Ok(())
    }

    pub async fn records(&self, zone: &str) -> Result<Vec<api::Record>> {
        let key = Self::zone_key(zone)?;
        let zones = self.zones.lock().await;
        let zone = self.full_zone(&key, &zones).await?;
        drop(zones);
        Ok(zone
            .records
            .iter()
            .map(|r| self.api_record(&zone, r))
            .collect())
    }

    /// Applies a change to one zone: `edit` turns the current zone into the wanted one (or
    /// fails), which is validated, stored with a new serial and published.
    async fn change<T>(
        &self,
        zone: &str,
        edit: impl FnOnce(&mut ZoneConfig) -> Result<(Vec<i64>, Vec<RecordConfig>, T)>,
    ) -> Result<(ZoneConfig, Vec<i64>, T)> {
        let key = Self::zone_key(zone)?;
        let mut zones = self.zones.lock().await;
        let mut next = self.full_zone(&key, &zones).await?;
        let old_serial = next.soa.serial;
        let (deleted, added, extra) = edit(&mut next)?;
        next.records.retain(|r| !deleted.contains(&r.id));
        let first_new = next.records.len();
        next.records.extend(added.iter().cloned());
        validate(&next)?;
        crate::lb::check_zone(&next)?;
        next.soa.serial = next_serial(old_serial, today_yyyymmdd());
        let ids = self
            .store
            .change_zone(
                next.id,
                &next.soa,
                next.default_ttl,
                &deleted,
                &added,
                false,
            )
            .await?;
        for (record, id) in next.records[first_new..].iter_mut().zip(&ids) {
            record.id = *id;
        }
        self.publish(&next);
        zones.insert(key, HeldZone::of(&next));
        Ok((next, ids, extra))
    }

    pub async fn add_record(&self, zone: &str, spec: &api::RecordSpec) -> Result<api::Record> {
        let (zone, ids, ()) = self
            .change(zone, |zone| {
                let record = record_from_spec(zone, spec)?;
                Ok((Vec::new(), vec![record], ()))
            })
            .await?;
        let record = zone
            .records
            .iter()
            .find(|r| r.id == ids[0])
            .map(|r| self.api_record(&zone, r));
        record.ok_or_else(|| ManageError::NotFound("record vanished".into()))
    }

    pub async fn update_record(
        &self,
        zone: &str,
        id: i64,
        spec: &api::RecordSpec,
    ) -> Result<api::Record> {
        let (zone, ids, ()) = self
            .change(zone, |zone| {
                if !zone.records.iter().any(|r| r.id == id) {
                    return Err(ManageError::NotFound(format!(
                        "no record {id} in {}",
                        zone.name
                    )));
                }
                // Same id: an edit keeps the record's identity (and health history).
                let mut record = record_from_spec(zone, spec)?;
                record.id = id;
                Ok((vec![id], vec![record], ()))
            })
            .await?;
        let record = zone
            .records
            .iter()
            .find(|r| r.id == ids[0])
            .map(|r| self.api_record(&zone, r));
        record.ok_or_else(|| ManageError::NotFound("record vanished".into()))
    }

    /// Sets or (with `None`) removes the steering of one record, keeping the record.
    pub async fn set_steering(
        &self,
        zone: &str,
        id: i64,
        steering: Option<&api::SteeringSpec>,
    ) -> Result<api::Record> {
        let (zone, ids, ()) = self
            .change(zone, |zone| {
                let Some(current) = zone.records.iter().find(|r| r.id == id) else {
                    return Err(ManageError::NotFound(format!(
                        "no record {id} in {}",
                        zone.name
                    )));
                };
                let mut record = current.clone();
                record.steering = match steering {
                    None => None,
                    Some(spec) => Some(Box::new(
                        spec.validate("steering.").map_err(ManageError::Invalid)?,
                    )),
                };
                Ok((vec![id], vec![record], ()))
            })
            .await?;
        let record = zone
            .records
            .iter()
            .find(|r| r.id == ids[0])
            .map(|r| self.api_record(&zone, r));
        record.ok_or_else(|| ManageError::NotFound("record vanished".into()))
    }

    pub async fn delete_record(&self, zone: &str, id: i64) -> Result<()> {
        self.change(zone, |zone| {
            if !zone.records.iter().any(|r| r.id == id) {
                return Err(ManageError::NotFound(format!(
                    "no record {id} in {}",
                    zone.name
                )));
            }
            Ok((vec![id], Vec::new(), ()))
        })
        .await?;
        Ok(())
    }

    /// Deletes the records that match a name, a type and (when given) a value.
    pub async fn delete_matching(
        &self,
        zone: &str,
        name: &str,
        rtype: &str,
        value: Option<&str>,
    ) -> Result<Vec<api::Record>> {
        let (_, _, deleted) = self
            .change(zone, |zone| {
                let name =
                    Dname::parse(name, &zone.name).map_err(|e| invalid("name", e.to_string()))?;
                let rtype = parse_rtype(rtype).map_err(|e| invalid("type", e.to_string()))?;
                let rdata = match value {
                    Some(text) if !text.is_empty() => Some(
                        Rdata::parse(rtype, text, &zone.name)
                            .map_err(|e| invalid("value", e.to_string()))?,
                    ),
                    _ => None,
                };
                let matching: Vec<api::Record> = zone
                    .records
                    .iter()
                    .filter(|r| r.name.eq_ignore_case(&name) && r.rtype == rtype)
                    .filter(|r| rdata.as_ref().is_none_or(|d| *d == r.rdata))
                    .map(|r| self.api_record(zone, r))
                    .collect();
                if matching.is_empty() {
                    return Err(ManageError::NotFound(format!(
                        "no {rtype} record at {name} matches"
                    )));
                }
                Ok((
                    matching.iter().map(|r| r.id).collect(),
                    Vec::new(),
                    matching,
                ))
            })
            .await?;
        Ok(deleted)
    }

    /// Replaces a zone's contents with a zone file (creating the zone when it is new). Any bad
    /// line rejects the whole file.
    pub async fn import(&self, zone: &str, text: &str) -> Result<api::ImportResult> {
        let key = parse_zone_name(zone).map_err(|e| ManageError::Invalid(vec![e]))?;
        let mut zones = self.zones.lock().await;
        let current = match zones.contains_key(&key) {
            true => Some(self.full_zone(&key, &zones).await?),
            false => None,
        };
        let default_ttl = current.as_ref().map_or(3600, |z| z.default_ttl);
        let parsed =
            model::zonefile::parse(text, &key, default_ttl).map_err(ManageError::Invalid)?;
        let old_serial = current.as_ref().map_or(0, |z| z.soa.serial);
        let (soa, soa_ttl) = match parsed.soa {
            Some((soa, ttl)) => (soa, ttl),
            None => match &current {
                Some(zone) => (zone.soa.clone(), zone.default_ttl),
                None => (Soa::default_for(&key, 0), default_ttl),
            },
        };
        let mut next = ZoneConfig {
            id: current.as_ref().map_or(0, |z| z.id),
            name: key.clone(),
            soa,
            default_ttl: soa_ttl,
            records: parsed.records,
            pools: current.as_ref().map_or_else(Vec::new, |z| z.pools.clone()),
            load_balancers: current
                .as_ref()
                .map_or_else(Vec::new, |z| z.load_balancers.clone()),
        };
        // Zone files carry no steering: a record that was already there keeps its id, its
        // steering and so its health history.
        if let Some(current) = &current {
            let mut by_content: HashMap<(Dname, model::Rtype, Rdata), &RecordConfig> = current
                .records
                .iter()
                .map(|r| ((r.name.to_lowercase(), r.rtype, r.rdata.clone()), r))
                .collect();
            for record in &mut next.records {
                let content = (
                    record.name.to_lowercase(),
                    record.rtype,
                    record.rdata.clone(),
                );
                if let Some(old) = by_content.remove(&content) {
                    record.id = old.id;
                    record.steering = old.steering.clone();
                }
            }
        }
        let lines = parsed.lines;
        let errors = next.validate(&|idx| {
            lines
                .get(idx)
                .map(|l| format!("line {l}: "))
                .unwrap_or_default()
        });
        if !errors.is_empty() {
            return Err(ManageError::Invalid(errors));
        }
        crate::lb::check_zone(&next)?;
        // The serial never goes down, whatever the file says (RFC 1982 order).
        let file_serial = next.soa.serial;
        next.soa.serial = if serial_gt(file_serial, old_serial) {
            file_serial
        } else {
            next_serial(old_serial, today_yyyymmdd())
        };
        let stored = match &current {
            None => self.store.create_zone(&next, now_secs()).await?,
            Some(_) => {
                let ids = self
                    .store
                    .change_zone(
                        next.id,
                        &next.soa,
                        next.default_ttl,
                        &[],
                        &next.records,
                        true,
                    )
                    .await?;
                for (record, id) in next.records.iter_mut().zip(ids) {
                    record.id = id;
                }
                next
            }
        };
        let freed = self.publish(&stored);
        let result = api::ImportResult {
            zone: stored.name.to_string(),
            records: stored.records.len(),
            serial: stored.soa.serial,
        };
        zones.insert(key, HeldZone::of(&stored));
        drop(stored);
        drop(current);
        self.metrics.zones.set(zones.len() as i64);
        drop(zones);
        tracing::info!(zone = %result.zone, records = result.records, serial = result.serial, "zone imported");
        crate::heap::release_free_memory(freed).await;
        Ok(result)
    }

    pub async fn export(&self, zone: &str) -> Result<String> {
        let key = Self::zone_key(zone)?;
        let zones = self.zones.lock().await;
        let zone = self.full_zone(&key, &zones).await?;
        drop(zones);
        Ok(model::zonefile::export(&zone))
    }
}

/// RFC 1982 serial number comparison: `a` is newer than `b`.
fn serial_gt(a: u32, b: u32) -> bool {
    a != b && a.wrapping_sub(b) < 0x8000_0000
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn civil_dates() {
        assert_eq!(civil_from_days(0), (1970, 1, 1));
        assert_eq!(civil_from_days(20_786), (2026, 11, 29));
        assert!(serial_gt(5, 4) && !serial_gt(4, 5) && serial_gt(1, u32::MAX));
    }
}
