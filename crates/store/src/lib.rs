//! Persistent state: zones, records, users, API tokens and settings, in SQLite (WAL, one file
//! in the data dir) with embedded migrations.
//!
//! Every write is one transaction and is durable when the call returns (`synchronous=FULL`),
//! so a change the API acknowledged survives a crash. The query path never reads the store:
//! the server loads zones from here and compiles them into a snapshot.

mod lb;

use std::path::Path;
use std::str::FromStr;

use model::steering::Validate as _;
use model::{Dname, Rdata, RecordConfig, Rtype, Soa, ZoneConfig};
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};
use sqlx::{Row, SqlitePool};

/// Failures of the store.
#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("database: {0}")]
    Database(#[from] sqlx::Error),
    #[error("migrating the database: {0}")]
    Migrate(#[from] sqlx::migrate::MigrateError),
    #[error("stored data is corrupt: {0}")]
    Corrupt(String),
}

pub type Result<T> = std::result::Result<T, StoreError>;

/// A user as stored.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredUser {
    pub id: i64,
    pub name: String,
    pub password_hash: String,
    pub role: String,
}

/// An API token as stored (the hash only).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredToken {
    pub id: i64,
    pub name: String,
    pub user: String,
    pub role: String,
    pub created: i64,
}

/// A dashboard session that has not expired, with its user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredSession {
    pub user: String,
    pub role: String,
    pub csrf: String,
    pub expires: i64,
}

/// A target's last known health.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredHealth {
    pub key: u64,
    pub state: String,
    pub since: i64,
    pub reason: Option<String>,
}

/// One state change of a target, to store.
#[derive(Clone, Debug)]
pub struct HealthChange<'a> {
    pub key: u64,
    pub record_ids: &'a [i64],
    pub time: i64,
    pub old_state: &'a str,
    pub new_state: &'a str,
    pub reason: Option<&'a str>,
    pub status: Option<u16>,
    pub latency_ms: Option<i64>,
}

/// One stored state change of a record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StoredHealthEvent {
    pub time: i64,
    pub old_state: String,
    pub new_state: String,
    pub reason: Option<String>,
    pub status: Option<u16>,
    pub latency_ms: Option<i64>,
}

#[derive(Clone)]
pub struct Store {
    pool: SqlitePool,
    /// Each zone's revision as this process last loaded or wrote it.
    revisions: std::sync::Arc<std::sync::Mutex<std::collections::HashMap<i64, i64>>>,
}

static MIGRATOR: sqlx::migrate::Migrator = sqlx::migrate!("./migrations");

impl Store {
    /// Opens (creating if needed) the SQLite database at `path` and migrates it.
    pub async fn open_sqlite(path: &Path) -> Result<Store> {
        let options = SqliteConnectOptions::new()
            .filename(path)
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true)
            .busy_timeout(std::time::Duration::from_secs(10));
        Store::open_with(options).await
    }

    /// Opens a `sqlite://…` URL.
    pub async fn open_url(url: &str) -> Result<Store> {
        let options = SqliteConnectOptions::from_str(url)?
            .create_if_missing(true)
            .journal_mode(SqliteJournalMode::Wal)
            .synchronous(SqliteSynchronous::Full)
            .foreign_keys(true);
        Store::open_with(options).await
    }

    async fn open_with(options: SqliteConnectOptions) -> Result<Store> {
        let pool = SqlitePoolOptions::new()
            .max_connections(4)
            .connect_with(options)
            .await?;
        MIGRATOR.run(&pool).await?;
        Ok(Store {
            pool,
            revisions: Default::default(),
        })
    }

    /// Commits a write to zone `zone_id` and notes the revision it left the zone at.
    async fn commit(
        &self,
        mut tx: sqlx::Transaction<'_, sqlx::Sqlite>,
        zone_id: i64,
    ) -> Result<()> {
        let revision: i64 = sqlx::query_scalar("SELECT revision FROM zones WHERE id = ?")
            .bind(zone_id)
            .fetch_one(&mut *tx)
            .await?;
        tx.commit().await?;
        self.revisions.lock().unwrap().insert(zone_id, revision);
        Ok(())
    }

    /// Zone `zone_id`'s revision as this process last loaded or wrote it. The store changes
    /// it with everything the zone's compiled form is made of, however that is written; while
    /// the caller holds writes to the zone back, it is the revision of what it last read or
    /// wrote.
    pub fn revision(&self, zone_id: i64) -> Option<i64> {
        self.revisions.lock().unwrap().get(&zone_id).copied()
    }

    pub async fn close(&self) {
        self.pool.close().await;
    }

    // ---- zones and records ----

    /// Every zone with its pools and load balancers but without its records (`records` is
    /// empty): for a load that reads them with [`Store::read_records`].
    pub async fn load_zone_settings(&self) -> Result<Vec<ZoneConfig>> {
        let rows = sqlx::query("SELECT * FROM zones ORDER BY id")
            .fetch_all(&self.pool)
            .await?;
        let mut zones = Vec::with_capacity(rows.len());
        for row in rows {
            let zone = self.zone_settings(&row).await?;
            let revision = row.try_get("revision")?;
            self.revisions.lock().unwrap().insert(zone.id, revision);
            zones.push(zone);
        }
        Ok(zones)
    }

    /// A zone row with its pools and load balancers.
    async fn zone_settings(&self, row: &sqlx::sqlite::SqliteRow) -> Result<ZoneConfig> {
        let mut zone = zone_from_row(row)?;
        zone.pools = self.load_pools(zone.id).await?;
        zone.load_balancers = self.load_load_balancers(zone.id, &zone.name).await?;
        Ok(zone)
    }

    /// How many records a zone has.
    pub async fn count_records(&self, zone_id: i64) -> Result<usize> {
        let count: i64 = sqlx::query_scalar("SELECT COUNT(*) FROM records WHERE zone_id = ?")
            .bind(zone_id)
            .fetch_one(&self.pool)
            .await?;
        Ok(count as usize)
    }

    /// One zone with its records.
    pub async fn load_zone(&self, name: &Dname) -> Result<Option<ZoneConfig>> {
        let row = sqlx::query("SELECT * FROM zones WHERE name = ?")
            .bind(name.to_lowercase().as_wire())
            .fetch_optional(&self.pool)
            .await?;
        let Some(row) = row else { return Ok(None) };
        let mut zone = self.zone_settings(&row).await?;
        zone.records = self.load_records(zone.id).await?;
        Ok(Some(zone))
    }

    /// A zone's records, in the order they were stored.
    pub async fn load_records(&self, zone_id: i64) -> Result<Vec<RecordConfig>> {
        self.collect_records(zone_id, false).await
    }

    /// A zone's A and AAAA records, in the order they were stored.
    pub async fn load_address_records(&self, zone_id: i64) -> Result<Vec<RecordConfig>> {
        self.collect_records(zone_id, true).await
    }

    async fn collect_records(
        &self,
        zone_id: i64,
        addresses_only: bool,
    ) -> Result<Vec<RecordConfig>> {
        let mut records = Vec::new();
        self.read_records(zone_id, addresses_only, |page| {
            records.extend(page);
            Ok(())
        })
        .await?;
        records.shrink_to_fit();
        Ok(records)
    }

    /// A zone's records (only A and AAAA with `addresses_only`) in pages, in the order they
    /// were stored, handed to `each` as they are read: a caller can compile one page while the
    /// next is read.
    pub async fn read_records(
        &self,
        zone_id: i64,
        addresses_only: bool,
        mut each: impl FnMut(Vec<RecordConfig>) -> Result<()>,
    ) -> Result<()> {
        // Pages of records as one JSON text each: sqlx hands rows over from its SQLite thread
        // one message at a time, and a million such hand-offs were most of a restart. SQLite
        // builds the page (blobs as hex) in C, with the page's size and last id so that the
        // next page is being built while this one is parsed.
        async fn fetch(
            pool: sqlx::SqlitePool,
            zone_id: i64,
            addresses_only: bool,
            after: i64,
        ) -> Result<(i64, Option<i64>, String)> {
            Ok(sqlx::query_as(
                "SELECT count(*), max(id),
                        json_group_array(json_array(id, hex(name), rtype, ttl, hex(rdata), steering))
                 FROM (SELECT id, name, rtype, ttl, rdata, steering FROM records
                       WHERE zone_id = ? AND (? = 0 OR rtype IN (1, 28)) AND id > ?
                       ORDER BY id LIMIT ?)",
            )
            .bind(zone_id)
            .bind(addresses_only)
            .bind(after)
            .bind(LOAD_PAGE)
            .fetch_one(&pool)
            .await?)
        }
        let mut page = fetch(self.pool.clone(), zone_id, addresses_only, 0).await?;
        loop {
            let (count, last, text) = page;
            let next = match (count == LOAD_PAGE, last) {
                (true, Some(last)) => Some(tokio::spawn(fetch(
                    self.pool.clone(),
                    zone_id,
                    addresses_only,
                    last,
                ))),
                _ => None,
            };
            if count > 0 {
                each(parse_page(&text)?)?;
            }
            match next {
                Some(next) => {
                    page = next
                        .await
                        .map_err(|e| StoreError::Corrupt(format!("reading records: {e}")))??
                }
                None => break,
            }
        }
        Ok(())
    }

    /// Whether record `id` belongs to zone `zone_id`.
    pub async fn has_record(&self, zone_id: i64, id: i64) -> Result<bool> {
        let found: Option<i64> =
            sqlx::query_scalar("SELECT id FROM records WHERE id = ? AND zone_id = ?")
                .bind(id)
                .bind(zone_id)
                .fetch_optional(&self.pool)
                .await?;
        Ok(found.is_some())
    }

    /// Stores a new zone and its records; returns the zone with ids filled in.
    pub async fn create_zone(&self, zone: &ZoneConfig, now: i64) -> Result<ZoneConfig> {
        let mut tx = self.pool.begin().await?;
        let soa = &zone.soa;
        let id: i64 = sqlx::query(
            "INSERT INTO zones (name, default_ttl, mname, rname, serial, refresh, retry, expire, minimum, created)
             VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?) RETURNING id",
        )
        .bind(zone.name.to_lowercase().as_wire())
        .bind(zone.default_ttl as i64)
        .bind(soa.mname.as_wire())
        .bind(soa.rname.as_wire())
        .bind(soa.serial as i64)
        .bind(soa.refresh as i64)
        .bind(soa.retry as i64)
        .bind(soa.expire as i64)
        .bind(soa.minimum as i64)
        .bind(now)
        .fetch_one(&mut *tx)
        .await?
        .try_get(0)?;
        let mut stored = zone.clone();
        stored.id = id;
        let ids = insert_records(&mut tx, id, &stored.records).await?;
        for (record, id) in stored.records.iter_mut().zip(ids) {
            record.id = id;
        }
        self.commit(tx, id).await?;
        Ok(stored)
    }

    pub async fn delete_zone(&self, name: &Dname) -> Result<bool> {
        let done = sqlx::query("DELETE FROM zones WHERE name = ?")
            .bind(name.to_lowercase().as_wire())
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Applies one change to a zone in one transaction: new SOA and default TTL, records
    /// deleted by id, records added (their ids are returned in order).
    pub async fn change_zone(
        &self,
        zone_id: i64,
        soa: &Soa,
        default_ttl: u32,
        delete_ids: &[i64],
        add: &[RecordConfig],
        replace_all: bool,
    ) -> Result<Vec<i64>> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "UPDATE zones SET default_ttl = ?, mname = ?, rname = ?, serial = ?, refresh = ?, retry = ?, expire = ?, minimum = ?
             WHERE id = ?",
        )
        .bind(default_ttl as i64)
        .bind(soa.mname.as_wire())
        .bind(soa.rname.as_wire())
        .bind(soa.serial as i64)
        .bind(soa.refresh as i64)
        .bind(soa.retry as i64)
        .bind(soa.expire as i64)
        .bind(soa.minimum as i64)
        .bind(zone_id)
        .execute(&mut *tx)
        .await?;
        if replace_all {
            sqlx::query("DELETE FROM records WHERE zone_id = ?")
                .bind(zone_id)
                .execute(&mut *tx)
                .await?;
        }
        for id in delete_ids {
            sqlx::query("DELETE FROM records WHERE id = ? AND zone_id = ?")
                .bind(id)
                .bind(zone_id)
                .execute(&mut *tx)
                .await?;
        }
        let ids = insert_records(&mut tx, zone_id, add).await?;
        self.commit(tx, zone_id).await?;
        Ok(ids)
    }

    // ---- users and tokens ----

    pub async fn count_users(&self) -> Result<i64> {
        Ok(sqlx::query("SELECT COUNT(*) FROM users")
            .fetch_one(&self.pool)
            .await?
            .try_get(0)?)
    }

    pub async fn create_user(
        &self,
        name: &str,
        password_hash: &str,
        role: &str,
        now: i64,
    ) -> Result<i64> {
        Ok(sqlx::query("INSERT INTO users (name, password_hash, role, created) VALUES (?, ?, ?, ?) RETURNING id")
            .bind(name)
            .bind(password_hash)
            .bind(role)
            .bind(now)
            .fetch_one(&self.pool)
            .await?
            .try_get(0)?)
    }

    pub async fn find_user(&self, name: &str) -> Result<Option<StoredUser>> {
        let row = sqlx::query("SELECT id, name, password_hash, role FROM users WHERE name = ?")
            .bind(name)
            .fetch_optional(&self.pool)
            .await?;
        row.map(|r| user_from_row(&r)).transpose()
    }

    pub async fn list_users(&self) -> Result<Vec<StoredUser>> {
        let rows = sqlx::query("SELECT id, name, password_hash, role FROM users ORDER BY name")
            .fetch_all(&self.pool)
            .await?;
        rows.iter().map(user_from_row).collect()
    }

    pub async fn delete_user(&self, name: &str) -> Result<bool> {
        let done = sqlx::query("DELETE FROM users WHERE name = ?")
            .bind(name)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    pub async fn create_token(
        &self,
        user_id: i64,
        name: &str,
        hash: &[u8],
        now: i64,
    ) -> Result<i64> {
        Ok(sqlx::query(
            "INSERT INTO tokens (user_id, name, hash, created) VALUES (?, ?, ?, ?) RETURNING id",
        )
        .bind(user_id)
        .bind(name)
        .bind(hash)
        .bind(now)
        .fetch_one(&self.pool)
        .await?
        .try_get(0)?)
    }

    /// The token with this hash and its user.
    pub async fn find_token(&self, hash: &[u8]) -> Result<Option<StoredToken>> {
        let row = sqlx::query(
            "SELECT t.id, t.name, u.name AS user, u.role, t.created FROM tokens t JOIN users u ON u.id = t.user_id
             WHERE t.hash = ?",
        )
        .bind(hash)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|r| token_from_row(&r)).transpose()
    }

    /// Tokens of one user, or of everyone.
    pub async fn list_tokens(&self, user: Option<&str>) -> Result<Vec<StoredToken>> {
        let rows = sqlx::query(
            "SELECT t.id, t.name, u.name AS user, u.role, t.created FROM tokens t JOIN users u ON u.id = t.user_id
             WHERE ? IS NULL OR u.name = ? ORDER BY t.id",
        )
        .bind(user)
        .bind(user)
        .fetch_all(&self.pool)
        .await?;
        rows.iter().map(token_from_row).collect()
    }

    pub async fn delete_token(&self, id: i64, user: Option<&str>) -> Result<bool> {
        let done = sqlx::query(
            "DELETE FROM tokens WHERE id = ? AND (? IS NULL OR user_id = (SELECT id FROM users WHERE name = ?))",
        )
        .bind(id)
        .bind(user)
        .bind(user)
        .execute(&self.pool)
        .await?;
        Ok(done.rows_affected() > 0)
    }

    // ---- dashboard sessions ----

    pub async fn create_session(
        &self,
        id_hash: &[u8],
        user_id: i64,
        csrf: &str,
        created: i64,
        expires: i64,
    ) -> Result<()> {
        sqlx::query(
            "INSERT INTO sessions (id_hash, user_id, csrf, created, expires) VALUES (?, ?, ?, ?, ?)",
        )
        .bind(id_hash)
        .bind(user_id)
        .bind(csrf)
        .bind(created)
        .bind(expires)
        .execute(&self.pool)
        .await?;
        Ok(())
    }

    /// The session with this id hash and its user, unless it expired by `now`.
    pub async fn find_session(&self, id_hash: &[u8], now: i64) -> Result<Option<StoredSession>> {
        let row = sqlx::query(
            "SELECT u.name AS user, u.role, s.csrf, s.expires FROM sessions s JOIN users u ON u.id = s.user_id
             WHERE s.id_hash = ? AND s.expires > ?",
        )
        .bind(id_hash)
        .bind(now)
        .fetch_optional(&self.pool)
        .await?;
        row.map(|row| {
            Ok(StoredSession {
                user: row.try_get("user")?,
                role: row.try_get("role")?,
                csrf: row.try_get("csrf")?,
                expires: row.try_get("expires")?,
            })
        })
        .transpose()
    }

    pub async fn delete_session(&self, id_hash: &[u8]) -> Result<bool> {
        let done = sqlx::query("DELETE FROM sessions WHERE id_hash = ?")
            .bind(id_hash)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected() > 0)
    }

    /// Removes sessions that expired by `now`; returns how many.
    pub async fn delete_expired_sessions(&self, now: i64) -> Result<u64> {
        let done = sqlx::query("DELETE FROM sessions WHERE expires <= ?")
            .bind(now)
            .execute(&self.pool)
            .await?;
        Ok(done.rows_affected())
    }

    // ---- health ----

    /// Last known state of every checked target: (key, state, since, reason).
    pub async fn health_states(&self) -> Result<Vec<StoredHealth>> {
        let rows = sqlx::query("SELECT key, state, since, reason FROM health_states")
            .fetch_all(&self.pool)
            .await?;
        rows.iter()
            .map(|row| {
                Ok(StoredHealth {
                    key: row.try_get::<i64, _>("key")? as u64,
                    state: row.try_get("state")?,
                    since: row.try_get("since")?,
                    reason: row.try_get("reason")?,
                })
            })
            .collect()
    }

    /// Records a state change: the target's state, and one event per record that uses it,
    /// keeping the newest `keep` events per record.
    pub async fn record_health_change(&self, change: &HealthChange<'_>, keep: i64) -> Result<()> {
        let mut tx = self.pool.begin().await?;
        sqlx::query(
            "INSERT INTO health_states (key, state, since, reason) VALUES (?, ?, ?, ?)
             ON CONFLICT(key) DO UPDATE SET state = excluded.state, since = excluded.since, reason = excluded.reason",
        )
        .bind(change.key as i64)
        .bind(change.new_state)
        .bind(change.time)
        .bind(change.reason)
        .execute(&mut *tx)
        .await?;
        for record_id in change.record_ids {
            sqlx::query(
                "INSERT INTO health_events (record_id, time, old_state, new_state, reason, status, latency_ms)
                 VALUES (?, ?, ?, ?, ?, ?, ?)",
            )
            .bind(record_id)
            .bind(change.time)
            .bind(change.old_state)
            .bind(change.new_state)
            .bind(change.reason)
            .bind(change.status.map(i64::from))
            .bind(change.latency_ms)
            .execute(&mut *tx)
            .await?;
            sqlx::query(
                "DELETE FROM health_events WHERE record_id = ? AND id NOT IN
                 (SELECT id FROM health_events WHERE record_id = ? ORDER BY id DESC LIMIT ?)",
            )
            .bind(record_id)
            .bind(record_id)
            .bind(keep)
            .execute(&mut *tx)
            .await?;
        }
        tx.commit().await?;
        Ok(())
    }

    /// Forgets targets no record uses any more.
    pub async fn retain_health_states(&self, keys: &[u64]) -> Result<()> {
        let existing = self.health_states().await?;
        for state in existing.iter().filter(|s| !keys.contains(&s.key)) {
            sqlx::query("DELETE FROM health_states WHERE key = ?")
                .bind(state.key as i64)
                .execute(&self.pool)
                .await?;
        }
        Ok(())
    }

    /// A record's state changes, oldest first.
    pub async fn health_events(&self, record_id: i64) -> Result<Vec<StoredHealthEvent>> {
        let rows = sqlx::query(
            "SELECT time, old_state, new_state, reason, status, latency_ms FROM health_events WHERE record_id = ? ORDER BY id",
        )
        .bind(record_id)
        .fetch_all(&self.pool)
        .await?;
        rows.iter()
            .map(|row| {
                Ok(StoredHealthEvent {
                    time: row.try_get("time")?,
                    old_state: row.try_get("old_state")?,
                    new_state: row.try_get("new_state")?,
                    reason: row.try_get("reason")?,
                    status: row.try_get::<Option<i64>, _>("status")?.map(|s| s as u16),
                    latency_ms: row.try_get("latency_ms")?,
                })
            })
            .collect()
    }

    // ---- settings ----

    pub async fn setting(&self, key: &str) -> Result<Option<String>> {
        let row = sqlx::query("SELECT value FROM settings WHERE key = ?")
            .bind(key)
            .fetch_optional(&self.pool)
            .await?;
        Ok(row.map(|r| r.try_get(0)).transpose()?)
    }

    pub async fn set_setting(&self, key: &str, value: &str) -> Result<()> {
        sqlx::query("INSERT INTO settings (key, value) VALUES (?, ?) ON CONFLICT(key) DO UPDATE SET value = excluded.value")
            .bind(key)
            .bind(value)
            .execute(&self.pool)
            .await?;
        Ok(())
    }
}

/// Rows per INSERT: 7 values each stays far below SQLite's 32,766 bound parameters.
const INSERT_CHUNK: usize = 500;

/// Inserts records in multi-row statements and returns their ids in order. Each statement is
/// a round trip to the database thread, so a million records one by one took most of a
/// minute; ids are chosen here so no row has to be read back.
async fn insert_records(
    tx: &mut sqlx::Transaction<'_, sqlx::Sqlite>,
    zone_id: i64,
    records: &[RecordConfig],
) -> Result<Vec<i64>> {
    if records.is_empty() {
        return Ok(Vec::new());
    }
    let highest: i64 = sqlx::query("SELECT COALESCE(MAX(id), 0) FROM records")
        .fetch_one(&mut **tx)
        .await?
        .try_get(0)?;
    // A record that already has an id (an edit: deleted and written again in this
    // transaction) keeps it, so its health history stays attached; new ones come after every
    // id in the table and in this batch.
    let mut next = records.iter().map(|r| r.id).max().unwrap_or(0).max(highest) + 1;
    let ids: Vec<i64> = records
        .iter()
        .map(|r| {
            if r.id != 0 {
                r.id
            } else {
                next += 1;
                next - 1
            }
        })
        .collect();
    for (chunk, chunk_ids) in records.chunks(INSERT_CHUNK).zip(ids.chunks(INSERT_CHUNK)) {
        let steering: Vec<Option<String>> =
            chunk.iter().map(steering_json).collect::<Result<_>>()?;
        let mut insert = sqlx::QueryBuilder::<sqlx::Sqlite>::new(
            "INSERT INTO records (id, zone_id, name, rtype, ttl, rdata, steering) ",
        );
        insert.push_values(
            chunk.iter().zip(chunk_ids).zip(steering),
            |mut row, ((record, id), steering)| {
                row.push_bind(*id)
                    .push_bind(zone_id)
                    .push_bind(record.name.as_wire())
                    .push_bind(record.rtype.to_int() as i64)
                    .push_bind(record.ttl as i64)
                    .push_bind(record.rdata.as_wire())
                    .push_bind(steering);
            },
        );
        insert.build().execute(&mut **tx).await?;
    }
    Ok(ids)
}

fn steering_json(record: &RecordConfig) -> Result<Option<String>> {
    record
        .steering
        .as_ref()
        .map(|s| {
            serde_json::to_string(&s.to_spec()).map_err(|e| StoreError::Corrupt(e.to_string()))
        })
        .transpose()
}

fn parse_steering(text: &str) -> Result<model::steering::Steering> {
    let spec: model::steering::SteeringSpec = serde_json::from_str(text)
        .map_err(|e| StoreError::Corrupt(format!("steering {text:?}: {e}")))?;
    spec.validate("").map_err(|errors| {
        StoreError::Corrupt(format!(
            "steering {text:?}: {}",
            errors.first().map(|e| e.to_string()).unwrap_or_default()
        ))
    })
}

fn u32_col(row: &sqlx::sqlite::SqliteRow, col: &str) -> Result<u32> {
    let value: i64 = row.try_get(col)?;
    u32::try_from(value)
        .map_err(|_| StoreError::Corrupt(format!("{col} = {value} is out of range")))
}

fn name_col(row: &sqlx::sqlite::SqliteRow, col: &str) -> Result<Dname> {
    let wire: Vec<u8> = row.try_get(col)?;
    Dname::from_wire(&wire).ok_or_else(|| StoreError::Corrupt(format!("bad name in {col}")))
}

fn zone_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<ZoneConfig> {
    Ok(ZoneConfig {
        id: row.try_get("id")?,
        name: name_col(row, "name")?,
        default_ttl: u32_col(row, "default_ttl")?,
        soa: Soa {
            mname: name_col(row, "mname")?,
            rname: name_col(row, "rname")?,
            serial: u32_col(row, "serial")?,
            refresh: u32_col(row, "refresh")?,
            retry: u32_col(row, "retry")?,
            expire: u32_col(row, "expire")?,
            minimum: u32_col(row, "minimum")?,
        },
        records: Vec::new(),
        pools: Vec::new(),
        load_balancers: Vec::new(),
    })
}

/// Records per page when loading (see `load_records`).
const LOAD_PAGE: i64 = 20_000;

/// A record from its stored columns, the blobs as hex.
/// One page of records as `read_records` has SQLite write it, parsed with borrowed strings.
fn parse_page(text: &str) -> Result<Vec<RecordConfig>> {
    #[derive(serde::Deserialize)]
    struct Row<'a>(
        i64,
        &'a str,
        i64,
        i64,
        &'a str,
        #[serde(borrow)] Option<std::borrow::Cow<'a, str>>,
    );
    let rows: Vec<Row> = serde_json::from_str(text)
        .map_err(|e| StoreError::Corrupt(format!("records page: {e}")))?;
    rows.into_iter()
        .map(|Row(id, name, rtype, ttl, rdata, steering)| {
            record_from_parts(id, name, rtype, ttl, rdata, steering.as_deref())
        })
        .collect()
}

fn record_from_parts(
    id: i64,
    name_hex: &str,
    rtype: i64,
    ttl: i64,
    rdata_hex: &str,
    steering: Option<&str>,
) -> Result<RecordConfig> {
    let rtype = Rtype::from_int(
        u16::try_from(rtype).map_err(|_| StoreError::Corrupt(format!("record type {rtype}")))?,
    );
    let name = unhex(name_hex)?;
    let rdata = unhex(rdata_hex)?;
    Ok(RecordConfig {
        id,
        name: Dname::from_wire(&name)
            .ok_or_else(|| StoreError::Corrupt(format!("bad name in record {id}")))?,
        rtype,
        ttl: u32::try_from(ttl).map_err(|_| StoreError::Corrupt(format!("ttl {ttl}")))?,
        rdata: Rdata::from_wire(rtype, &rdata).map_err(|e| StoreError::Corrupt(e.to_string()))?,
        steering: steering.map(parse_steering).transpose()?.map(Box::new),
    })
}

fn unhex(text: &str) -> Result<Vec<u8>> {
    let digit = |c: u8| match c {
        b'0'..=b'9' => Ok(c - b'0'),
        b'A'..=b'F' => Ok(c - b'A' + 10),
        b'a'..=b'f' => Ok(c - b'a' + 10),
        _ => Err(StoreError::Corrupt(format!("not hex: {text:?}"))),
    };
    let bytes = text.as_bytes();
    if !bytes.len().is_multiple_of(2) {
        return Err(StoreError::Corrupt(format!("odd hex: {text:?}")));
    }
    bytes
        .chunks_exact(2)
        .map(|pair| Ok(digit(pair[0])? << 4 | digit(pair[1])?))
        .collect()
}

fn user_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<StoredUser> {
    Ok(StoredUser {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        password_hash: row.try_get("password_hash")?,
        role: row.try_get("role")?,
    })
}

fn token_from_row(row: &sqlx::sqlite::SqliteRow) -> Result<StoredToken> {
    Ok(StoredToken {
        id: row.try_get("id")?,
        name: row.try_get("name")?,
        user: row.try_get("user")?,
        role: row.try_get("role")?,
        created: row.try_get("created")?,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// More records than one load page, with a steered one, odd names and several types:
    /// every record comes back as stored, in order, across page boundaries.
    #[tokio::test]
    async fn records_load_across_pages_exactly_as_stored() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(&dir.path().join("dnz.db"))
            .await
            .unwrap();
        let apex = Dname::parse_absolute("pages.test").unwrap();
        let mut records = vec![RecordConfig {
            id: 0,
            name: apex.clone(),
            rtype: Rtype::NS,
            ttl: 3600,
            rdata: Rdata::parse(Rtype::NS, "ns1", &apex).unwrap(),
            steering: None,
        }];
        let total = 2 * LOAD_PAGE as usize + 7;
        for i in 1..total {
            let (rtype, value) = match i % 3 {
                0 => (Rtype::A, format!("10.0.{}.{}", i / 256 % 256, i % 256)),
                1 => (Rtype::TXT, format!("\"rec {i} \\\" quoted\"")),
                _ => (Rtype::AAAA, format!("2001:db8::{i:x}")),
            };
            records.push(RecordConfig {
                id: 0,
                name: Dname::parse(&format!("h{i}.Mixed-Case"), &apex).unwrap(),
                rtype,
                ttl: i as u32,
                rdata: Rdata::parse(rtype, &value, &apex).unwrap(),
                steering: (i == LOAD_PAGE as usize + 3).then(|| {
                    Box::new(
                        model::steering::SteeringSpec {
                            countries: vec!["DE".into()],
                            weight: Some(7),
                            ..Default::default()
                        }
                        .validate("")
                        .unwrap(),
                    )
                }),
            });
        }
        let zone = ZoneConfig {
            id: 0,
            name: apex.clone(),
            soa: Soa::default_for(&apex, 1),
            default_ttl: 3600,
            records,
            pools: Vec::new(),
            load_balancers: Vec::new(),
        };
        let stored = store.create_zone(&zone, 0).await.unwrap();
        let loaded = store.load_zone(&apex).await.unwrap().unwrap();
        assert_eq!(loaded.records.len(), total);
        assert_eq!(loaded.records, stored.records);
        assert!(loaded.records[LOAD_PAGE as usize + 3].steering.is_some());
    }

    /// The revision moves with every write to what a zone compiles from, including writes
    /// that bypass the store's methods, and a new zone does not continue a deleted one's.
    #[tokio::test]
    async fn a_zone_revision_follows_every_write() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("dnz.db");
        let store = Store::open_sqlite(&path).await.unwrap();
        let apex = Dname::parse_absolute("rev.test").unwrap();
        let record = |name: &str, address: &str| RecordConfig {
            id: 0,
            name: Dname::parse(name, &apex).unwrap(),
            rtype: Rtype::A,
            ttl: 60,
            rdata: Rdata::parse(Rtype::A, address, &apex).unwrap(),
            steering: None,
        };
        let zone = ZoneConfig {
            id: 0,
            name: apex.clone(),
            soa: Soa::default_for(&apex, 1),
            default_ttl: 3600,
            records: vec![record("a", "192.0.2.1")],
            pools: Vec::new(),
            load_balancers: Vec::new(),
        };
        let stored = store.create_zone(&zone, 0).await.unwrap();
        let created = store.revision(stored.id).unwrap();
        let ids = store
            .change_zone(
                stored.id,
                &stored.soa,
                3600,
                &[],
                &[record("b", "192.0.2.2")],
                false,
            )
            .await
            .unwrap();
        let changed = store.revision(stored.id).unwrap();
        assert_ne!(changed, created);
        // A write by hand, as an operator with sqlite3 would make it.
        sqlx::query("UPDATE records SET ttl = 61 WHERE id = ?")
            .bind(ids[0])
            .execute(&store.pool)
            .await
            .unwrap();
        let other = Store::open_sqlite(&path).await.unwrap();
        other.load_zone_settings().await.unwrap();
        let by_hand = other.revision(stored.id).unwrap();
        assert_ne!(by_hand, changed);
        assert_eq!(
            store.revision(stored.id),
            Some(changed),
            "this process did not see it"
        );
        sqlx::query("DELETE FROM records WHERE id = ?")
            .bind(ids[0])
            .execute(&store.pool)
            .await
            .unwrap();
        other.load_zone_settings().await.unwrap();
        assert_ne!(other.revision(stored.id).unwrap(), by_hand);
        // Pools change it too.
        let before = other.revision(stored.id).unwrap();
        let pool = model::lb::PoolConfig {
            id: 0,
            name: "p".into(),
            enabled: true,
            algorithm: Default::default(),
            location: None,
            origins: Vec::new(),
        };
        store.save_pool(stored.id, 2, &pool).await.unwrap();
        other.load_zone_settings().await.unwrap();
        assert_ne!(other.revision(stored.id).unwrap(), before);
        assert_eq!(store.revision(stored.id), other.revision(stored.id));
        // A zone made again, even with the same id, starts somewhere else.
        assert!(store.delete_zone(&apex).await.unwrap());
        let again = store.create_zone(&zone, 0).await.unwrap();
        assert_eq!(again.id, stored.id, "SQLite reuses the highest id");
        let fresh = store.revision(again.id).unwrap();
        assert!(![created, changed, by_hand, before].contains(&fresh));
    }

    #[tokio::test]
    async fn zone_round_trip_and_change() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(&dir.path().join("dnz.db"))
            .await
            .unwrap();
        let name = Dname::parse_absolute("example.com").unwrap();
        let ns = RecordConfig {
            id: 0,
            name: name.clone(),
            rtype: Rtype::NS,
            ttl: 3600,
            rdata: Rdata::parse(Rtype::NS, "ns1", &name).unwrap(),
            steering: None,
        };
        let zone = ZoneConfig {
            id: 0,
            name: name.clone(),
            soa: Soa::default_for(&name, 1),
            default_ttl: 3600,
            records: vec![ns],
            pools: Vec::new(),
            load_balancers: Vec::new(),
        };
        let stored = store.create_zone(&zone, 0).await.unwrap();
        assert!(stored.id > 0 && stored.records[0].id > 0);
        let www = RecordConfig {
            id: 0,
            name: Dname::parse("www", &name).unwrap(),
            rtype: Rtype::A,
            ttl: 300,
            rdata: Rdata::parse(Rtype::A, "192.0.2.1", &name).unwrap(),
            steering: Some(Box::new(
                model::steering::SteeringSpec {
                    countries: vec!["ID".into()],
                    weight: Some(3),
                    ..Default::default()
                }
                .validate("")
                .unwrap(),
            )),
        };
        let mut soa = stored.soa.clone();
        soa.serial = 2;
        let ids = store
            .change_zone(
                stored.id,
                &soa,
                3600,
                &[],
                std::slice::from_ref(&www),
                false,
            )
            .await
            .unwrap();
        store.close().await;
        // Reopen: the change is there.
        let store = Store::open_sqlite(&dir.path().join("dnz.db"))
            .await
            .unwrap();
        let loaded = store.load_zone(&name).await.unwrap().unwrap();
        assert_eq!(loaded.soa.serial, 2);
        assert_eq!(loaded.records.len(), 2);
        assert_eq!(loaded.records[1], RecordConfig { id: ids[0], ..www });
        // Health: the state and a bounded history per record.
        for n in 0..5 {
            let (old, new) = if n % 2 == 0 {
                ("up", "down")
            } else {
                ("down", "up")
            };
            let change = HealthChange {
                key: u64::MAX - 1,
                record_ids: &[ids[0]],
                time: n,
                old_state: old,
                new_state: new,
                reason: Some("status 503"),
                status: Some(503),
                latency_ms: Some(12),
            };
            store.record_health_change(&change, 3).await.unwrap();
        }
        let events = store.health_events(ids[0]).await.unwrap();
        assert_eq!(events.iter().map(|e| e.time).collect::<Vec<_>>(), [2, 3, 4]);
        let states = store.health_states().await.unwrap();
        assert_eq!(
            (states[0].key, states[0].state.as_str()),
            (u64::MAX - 1, "down")
        );
        store.retain_health_states(&[]).await.unwrap();
        assert!(store.health_states().await.unwrap().is_empty());
        assert!(store.delete_zone(&name).await.unwrap());
        assert!(store.load_zone_settings().await.unwrap().is_empty());
    }

    #[tokio::test]
    async fn sessions_expire_and_go_with_their_user() {
        let dir = tempfile::tempdir().unwrap();
        let store = Store::open_sqlite(&dir.path().join("dnz.db"))
            .await
            .unwrap();
        let user = store.create_user("ann", "hash", "editor", 0).await.unwrap();
        store
            .create_session(b"live", user, "csrf-1", 100, 200)
            .await
            .unwrap();
        store
            .create_session(b"old", user, "csrf-2", 0, 150)
            .await
            .unwrap();
        let found = store.find_session(b"live", 199).await.unwrap().unwrap();
        assert_eq!(
            (
                found.user.as_str(),
                found.role.as_str(),
                found.csrf.as_str()
            ),
            ("ann", "editor", "csrf-1")
        );
        // Expired at `expires`, and no longer found even before it is deleted.
        assert!(store.find_session(b"live", 200).await.unwrap().is_none());
        assert!(store.find_session(b"old", 160).await.unwrap().is_none());
        assert!(store.find_session(b"nope", 0).await.unwrap().is_none());
        assert_eq!(store.delete_expired_sessions(160).await.unwrap(), 1);
        assert!(store.find_session(b"live", 160).await.unwrap().is_some());
        assert!(!store.delete_session(b"old").await.unwrap());
        // Deleting the user deletes the session (foreign keys are on).
        assert!(store.delete_user("ann").await.unwrap());
        assert!(store.find_session(b"live", 160).await.unwrap().is_none());
        assert!(!store.delete_session(b"live").await.unwrap());
    }
}
