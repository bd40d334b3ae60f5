//! Load balancers and pools of origins (SPEC §7): what users write ([`PoolSpec`],
//! [`LoadBalancerSpec`]), its validated form ([`PoolConfig`], [`LbConfig`]), the rules a zone
//! with load balancers must keep (names, references, limits, ownership of A/AAAA/CNAME), and
//! the compiled form ([`LbSnapshot`]) that the answer path reads from a name's node.

use std::net::IpAddr;

pub use api::{LbRuleSpec, LoadBalancerSpec, Location, OriginSpec, PoolSpec};
use geo::{Continent, Country};

use crate::name::Dname;
use crate::rdata::{Rdata, Rtype};
use crate::snapshot::{NodeMap, Rrset};
use crate::steering::{CheckConfig, Validate};
use crate::zone::{FieldError, ZoneConfig};

/// Limits per zone (SPEC §7).
pub const MAX_POOLS: usize = 50;
pub const MAX_ORIGINS: usize = 20;
pub const MAX_LOAD_BALANCERS: usize = 50;
/// Pool entries of one load balancer: defaults, every rule's pools, and the fallback.
pub const MAX_POOL_ENTRIES: usize = 200;
pub const MIN_LB_TTL: u32 = 5;
pub const MAX_LB_TTL: u32 = 3600;
pub const DEFAULT_LB_TTL: u32 = 30;
/// Checks of origins run every 60 s unless they say otherwise (SPEC §7).
pub const DEFAULT_ORIGIN_INTERVAL: i64 = 60;
pub const MAX_ORIGIN_WEIGHT: u32 = 100;

/// How a pool picks one of its healthy origins.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Algorithm {
    /// At random, in proportion to weight.
    #[default]
    Weighted,
    /// The lowest priority number; ties broken by weight.
    Failover,
}

impl Algorithm {
    pub fn as_str(self) -> &'static str {
        match self {
            Algorithm::Weighted => "weighted",
            Algorithm::Failover => "failover",
        }
    }

    pub fn parse(text: &str) -> Option<Algorithm> {
        [Algorithm::Weighted, Algorithm::Failover]
            .into_iter()
            .find(|a| a.as_str() == text)
    }
}

/// A validated location in degrees (finite, in range), so equality is total.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Coordinates {
    pub latitude: f64,
    pub longitude: f64,
}

impl Eq for Coordinates {}

impl Coordinates {
    /// Checks the range: latitude −90..90, longitude −180..180.
    pub fn new(latitude: f64, longitude: f64) -> Option<Coordinates> {
        ((-90.0..=90.0).contains(&latitude) && (-180.0..=180.0).contains(&longitude)).then_some(
            Coordinates {
                latitude,
                longitude,
            },
        )
    }

    /// Parses `LAT,LON`.
    pub fn parse(text: &str) -> Option<Coordinates> {
        let (lat, lon) = text.split_once(',')?;
        Coordinates::new(lat.trim().parse().ok()?, lon.trim().parse().ok()?)
    }

    /// Great-circle distance in kilometres (haversine).
    pub fn distance_km(self, other: Coordinates) -> f64 {
        let (lat1, lat2) = (self.latitude.to_radians(), other.latitude.to_radians());
        let d_lat = lat2 - lat1;
        let d_lon = (other.longitude - self.longitude).to_radians();
        let a = (d_lat / 2.0).sin().powi(2) + lat1.cos() * lat2.cos() * (d_lon / 2.0).sin().powi(2);
        2.0 * 6371.0 * a.sqrt().min(1.0).asin()
    }

    pub fn to_api(self) -> Location {
        Location {
            latitude: self.latitude,
            longitude: self.longitude,
        }
    }
}

/// One origin of a pool.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OriginConfig {
    /// The store's id; 0 for an origin not yet stored.
    pub id: i64,
    pub address: IpAddr,
    pub enabled: bool,
    /// 1 to 100.
    pub weight: u32,
    pub priority: u32,
    pub check: Option<CheckConfig>,
}

impl OriginConfig {
    pub fn rdata(&self) -> Rdata {
        match self.address {
            IpAddr::V4(v4) => Rdata::new(&v4.octets()),
            IpAddr::V6(v6) => Rdata::new(&v6.octets()),
        }
    }

    /// The Host header and TLS name of the origin's check: as set, else the address. Pools
    /// are shared by load balancers of several names, so no one name is the origin's.
    pub fn check_host(&self) -> Option<String> {
        let check = self.check.as_ref()?;
        Some(
            check
                .host
                .clone()
                .unwrap_or_else(|| self.address.to_string()),
        )
    }

    /// The origin's key in the health table: the same address checked the same way shares
    /// its state with records that check it so (SPEC §5).
    pub fn check_key(&self) -> Option<u64> {
        let check = self.check.as_ref()?;
        // A wildcard owner makes the default host the address, as `check_host` says.
        let owner = Dname::from_wire_unchecked(b"\x01*\x00");
        Some(check.key(&owner, &self.rdata()))
    }

    pub fn to_spec(&self) -> OriginSpec {
        OriginSpec {
            address: self.address.to_string(),
            enabled: Some(self.enabled),
            weight: Some(self.weight.into()),
            priority: Some(self.priority.into()),
            check: self.check.as_ref().map(CheckConfig::to_spec),
        }
    }
}

/// A named group of origins.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PoolConfig {
    pub id: i64,
    pub name: String,
    pub enabled: bool,
    pub algorithm: Algorithm,
    pub location: Option<Coordinates>,
    pub origins: Vec<OriginConfig>,
}

impl PoolConfig {
    pub fn to_spec(&self) -> PoolSpec {
        PoolSpec {
            name: self.name.clone(),
            enabled: Some(self.enabled),
            algorithm: Some(self.algorithm.as_str().into()),
            location: self.location.map(Coordinates::to_api),
            origins: self.origins.iter().map(OriginConfig::to_spec).collect(),
        }
    }
}

/// How a load balancer orders its pools.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum SteeringPolicy {
    #[default]
    Off,
    Random,
    Geographic,
    Proximity,
}

impl SteeringPolicy {
    pub fn as_str(self) -> &'static str {
        match self {
            SteeringPolicy::Off => "off",
            SteeringPolicy::Random => "random",
            SteeringPolicy::Geographic => "geographic",
            SteeringPolicy::Proximity => "proximity",
        }
    }

    pub fn parse(text: &str) -> Option<SteeringPolicy> {
        [
            SteeringPolicy::Off,
            SteeringPolicy::Random,
            SteeringPolicy::Geographic,
            SteeringPolicy::Proximity,
        ]
        .into_iter()
        .find(|s| s.as_str() == text)
    }
}

/// Where the client is taken to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum LocateBy {
    /// The answering PoP (this server's configured place).
    #[default]
    Pop,
    /// The resolver's (or ECS) address through GeoIP; the PoP when GeoIP does not know it.
    Resolver,
}

impl LocateBy {
    pub fn as_str(self) -> &'static str {
        match self {
            LocateBy::Pop => "pop",
            LocateBy::Resolver => "resolver",
        }
    }

    pub fn parse(text: &str) -> Option<LocateBy> {
        [LocateBy::Pop, LocateBy::Resolver]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// Session affinity.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Affinity {
    #[default]
    None,
    /// The same client subnet gets the same origin while it stays healthy.
    ClientIp,
}

impl Affinity {
    pub fn as_str(self) -> &'static str {
        match self {
            Affinity::None => "none",
            Affinity::ClientIp => "client-ip",
        }
    }

    pub fn parse(text: &str) -> Option<Affinity> {
        [Affinity::None, Affinity::ClientIp]
            .into_iter()
            .find(|s| s.as_str() == text)
    }
}

/// What a rule matches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RuleMatch {
    /// The answering PoP's name (lower case).
    Pop(String),
    Country(Country),
    Continent(Continent),
}

impl RuleMatch {
    pub fn kind(&self) -> &'static str {
        match self {
            RuleMatch::Pop(_) => "pop",
            RuleMatch::Country(_) => "country",
            RuleMatch::Continent(_) => "continent",
        }
    }

    pub fn key(&self) -> String {
        match self {
            RuleMatch::Pop(name) => name.clone(),
            RuleMatch::Country(c) => c.to_string(),
            RuleMatch::Continent(c) => c.to_string(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LbRule {
    pub matches: RuleMatch,
    pub pools: Vec<String>,
}

/// A validated load balancer; pools are named, and the names are checked against the zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LbConfig {
    pub id: i64,
    pub name: Dname,
    pub enabled: bool,
    pub ttl: u32,
    pub pools: Vec<String>,
    pub rules: Vec<LbRule>,
    pub fallback: Option<String>,
    pub steering: SteeringPolicy,
    pub locate_by: LocateBy,
    pub affinity: Affinity,
}

impl LbConfig {
    pub fn to_spec(&self, zone: &Dname) -> LoadBalancerSpec {
        LoadBalancerSpec {
            name: self.name.to_relative_string(zone),
            enabled: Some(self.enabled),
            ttl: Some(self.ttl.into()),
            pools: self.pools.clone(),
            rules: self
                .rules
                .iter()
                .map(|r| LbRuleSpec {
                    kind: r.matches.kind().into(),
                    key: r.matches.key(),
                    pools: r.pools.clone(),
                })
                .collect(),
            fallback: self.fallback.clone(),
            steering: Some(self.steering.as_str().into()),
            locate_by: Some(self.locate_by.as_str().into()),
            affinity: Some(self.affinity.as_str().into()),
        }
    }

    /// Every pool name the load balancer refers to, with the field that names it.
    pub fn pool_refs(&self) -> Vec<(String, &str)> {
        let mut refs = Vec::new();
        for (idx, pool) in self.pools.iter().enumerate() {
            refs.push((format!("pools[{idx}]"), pool.as_str()));
        }
        for (rule_idx, rule) in self.rules.iter().enumerate() {
            for (idx, pool) in rule.pools.iter().enumerate() {
                refs.push((format!("rules[{rule_idx}].pools[{idx}]"), pool.as_str()));
            }
        }
        if let Some(pool) = &self.fallback {
            refs.push(("fallback".into(), pool.as_str()));
        }
        refs
    }
}

/// A pool name: 1 to 64 letters, digits, `-`, `_` or `.`.
fn valid_pool_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 64
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_.".contains(c))
}

impl Validate for OriginSpec {
    type Output = OriginConfig;

    fn validate(&self, prefix: &str) -> Result<OriginConfig, Vec<FieldError>> {
        let mut errors = Vec::new();
        let address: Option<IpAddr> = self.address.trim().parse().ok();
        if address.is_none() {
            errors.push(FieldError::new(
                format!("{prefix}address"),
                format!("{:?} is not an IPv4 or IPv6 address", self.address),
            ));
        }
        let weight = match self.weight {
            None => 1,
            Some(w) if (1..=MAX_ORIGIN_WEIGHT as i64).contains(&w) => w as u32,
            Some(w) => {
                errors.push(FieldError::new(
                    format!("{prefix}weight"),
                    format!("weight {w} is out of range: 1 to {MAX_ORIGIN_WEIGHT}"),
                ));
                1
            }
        };
        let priority = match self.priority {
            None => 0,
            Some(p) if (0..=u32::MAX as i64).contains(&p) => p as u32,
            Some(p) => {
                errors.push(FieldError::new(
                    format!("{prefix}priority"),
                    format!("priority {p} is out of range: 0 to {}", u32::MAX),
                ));
                0
            }
        };
        let check = match &self.check {
            None => None,
            Some(spec) => {
                let mut spec = spec.clone();
                spec.interval = spec.interval.or(Some(DEFAULT_ORIGIN_INTERVAL));
                match spec.validate(&format!("{prefix}check.")) {
                    Ok(check) => Some(check),
                    Err(mut e) => {
                        errors.append(&mut e);
                        None
                    }
                }
            }
        };
        match address {
            Some(address) if errors.is_empty() => Ok(OriginConfig {
                id: 0,
                address,
                enabled: self.enabled.unwrap_or(true),
                weight,
                priority,
                check,
            }),
            _ => Err(errors),
        }
    }
}

impl Validate for PoolSpec {
    type Output = PoolConfig;

    fn validate(&self, prefix: &str) -> Result<PoolConfig, Vec<FieldError>> {
        let mut errors = Vec::new();
        let name = self.name.trim();
        if !valid_pool_name(name) {
            errors.push(FieldError::new(
                format!("{prefix}name"),
                format!("{name:?} is not a pool name: 1 to 64 letters, digits, - _ or ."),
            ));
        }
        let algorithm = match self.algorithm.as_deref() {
            None => Algorithm::Weighted,
            Some(text) => Algorithm::parse(text).unwrap_or_else(|| {
                errors.push(FieldError::new(
                    format!("{prefix}algorithm"),
                    format!("{text:?} is not an algorithm (weighted, failover)"),
                ));
                Algorithm::Weighted
            }),
        };
        let location = self.location.and_then(|l| {
            let found = Coordinates::new(l.latitude, l.longitude);
            if found.is_none() {
                errors.push(FieldError::new(
                    format!("{prefix}location"),
                    format!(
                        "{},{} is not a place: latitude -90 to 90, longitude -180 to 180",
                        l.latitude, l.longitude
                    ),
                ));
            }
            found
        });
        if self.origins.len() > MAX_ORIGINS {
            errors.push(FieldError::new(
                format!("{prefix}origins"),
                format!(
                    "a pool holds at most {MAX_ORIGINS} origins; this one has {}",
                    self.origins.len()
                ),
            ));
            // Not checked one by one: the duplicate check is quadratic, and a body of
            // megabytes would hold the zone's lock for minutes.
            return Err(errors);
        }
        let mut origins: Vec<OriginConfig> = Vec::new();
        for (idx, spec) in self.origins.iter().enumerate() {
            let field = format!("{prefix}origins[{idx}].");
            match spec.validate(&field) {
                Ok(origin) if origins.iter().any(|o| o.address == origin.address) => {
                    errors.push(FieldError::new(
                        format!("{field}address"),
                        format!("{} is already an origin of this pool", origin.address),
                    ))
                }
                Ok(origin) => origins.push(origin),
                Err(mut e) => errors.append(&mut e),
            }
        }
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(PoolConfig {
            id: 0,
            name: name.to_string(),
            enabled: self.enabled.unwrap_or(true),
            algorithm,
            location,
            origins,
        })
    }
}

/// Validates a load balancer of the zone `zone` on its own; the pools it names are checked
/// against the zone by [`check_zone`].
pub fn validate_lb(spec: &LoadBalancerSpec, zone: &Dname) -> Result<LbConfig, Vec<FieldError>> {
    let mut errors = Vec::new();
    let name = match Dname::parse(spec.name.trim(), zone) {
        Ok(name) if name.is_within(zone) => Some(name.to_lowercase()),
        Ok(name) => {
            errors.push(FieldError::new(
                "name",
                format!("{name} is outside the zone {zone}"),
            ));
            None
        }
        Err(e) => {
            errors.push(FieldError::new("name", e.to_string()));
            None
        }
    };
    let ttl = match spec.ttl {
        None => DEFAULT_LB_TTL,
        Some(t) if (MIN_LB_TTL as i64..=MAX_LB_TTL as i64).contains(&t) => t as u32,
        Some(t) => {
            errors.push(FieldError::new(
                "ttl",
                format!("TTL {t} is out of range: {MIN_LB_TTL} to {MAX_LB_TTL}"),
            ));
            DEFAULT_LB_TTL
        }
    };
    let pool_list = |field: &str, names: &[String], errors: &mut Vec<FieldError>| {
        let mut out: Vec<String> = Vec::new();
        for (idx, pool) in names.iter().enumerate() {
            let pool = pool.trim();
            if out.iter().any(|p| p == pool) {
                errors.push(FieldError::new(
                    format!("{field}[{idx}]"),
                    format!("pool {pool} is listed twice"),
                ));
            } else {
                out.push(pool.to_string());
            }
        }
        out
    };
    let entries = spec.pools.len()
        + spec.rules.iter().map(|r| r.pools.len()).sum::<usize>()
        + usize::from(spec.fallback.is_some());
    if entries > MAX_POOL_ENTRIES {
        // Not checked one by one: the duplicate checks are quadratic, and a body of megabytes
        // would hold the zone's lock for minutes.
        errors.push(FieldError::new(
            "pools",
            format!(
                "a load balancer holds at most {MAX_POOL_ENTRIES} pool entries (defaults, rules and fallback); this one has {entries}"
            ),
        ));
        return Err(errors);
    }
    if spec.pools.is_empty() {
        errors.push(FieldError::new(
            "pools",
            "a load balancer needs at least one default pool",
        ));
    }
    let pools = pool_list("pools", &spec.pools, &mut errors);
    let mut rules = Vec::new();
    for (idx, rule) in spec.rules.iter().enumerate() {
        let field = format!("rules[{idx}]");
        let key = rule.key.trim();
        let matches = match rule.kind.as_str() {
            "pop" if valid_pool_name(key) => Some(RuleMatch::Pop(key.to_ascii_lowercase())),
            "pop" => {
                errors.push(FieldError::new(
                    format!("{field}.key"),
                    format!("{key:?} is not a PoP name: 1 to 64 letters, digits, - _ or ."),
                ));
                None
            }
            "country" => Country::parse(key).map(RuleMatch::Country).or_else(|| {
                errors.push(FieldError::new(
                    format!("{field}.key"),
                    format!("{key:?} is not an ISO 3166 alpha-2 country code (upper case, such as ID, SG, US)"),
                ));
                None
            }),
            "continent" => Continent::parse(key).map(RuleMatch::Continent).or_else(|| {
                errors.push(FieldError::new(
                    format!("{field}.key"),
                    format!("{key:?} is not a continent code (AF, AN, AS, EU, NA, OC, SA)"),
                ));
                None
            }),
            other => {
                errors.push(FieldError::new(
                    format!("{field}.kind"),
                    format!("{other:?} is not a rule kind (pop, country, continent)"),
                ));
                None
            }
        };
        if rule.pools.is_empty() {
            errors.push(FieldError::new(
                format!("{field}.pools"),
                "a rule needs at least one pool",
            ));
        }
        let rule_pools = pool_list(&format!("{field}.pools"), &rule.pools, &mut errors);
        if let Some(matches) = matches {
            rules.push(LbRule {
                matches,
                pools: rule_pools,
            });
        }
    }
    let mut choice = |field: &str, text: &str, allowed: &str| {
        errors.push(FieldError::new(
            field,
            format!("{text:?} is not one of {allowed}"),
        ))
    };
    let steering = match spec.steering.as_deref() {
        None => SteeringPolicy::Off,
        Some(text) => SteeringPolicy::parse(text).unwrap_or_else(|| {
            choice("steering", text, "off, random, geographic, proximity");
            SteeringPolicy::Off
        }),
    };
    let locate_by = match spec.locate_by.as_deref() {
        None => LocateBy::Pop,
        Some(text) => LocateBy::parse(text).unwrap_or_else(|| {
            choice("locate_by", text, "pop, resolver");
            LocateBy::Pop
        }),
    };
    let affinity = match spec.affinity.as_deref() {
        None => Affinity::None,
        Some(text) => Affinity::parse(text).unwrap_or_else(|| {
            choice("affinity", text, "none, client-ip");
            Affinity::None
        }),
    };
    let fallback = spec
        .fallback
        .as_deref()
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(str::to_string);
    match name {
        Some(name) if errors.is_empty() => Ok(LbConfig {
            id: 0,
            name,
            enabled: spec.enabled.unwrap_or(true),
            ttl,
            pools,
            rules,
            fallback,
            steering,
            locate_by,
            affinity,
        }),
        _ => Err(errors),
    }
}

/// Where a zone's load balancers break its rules: what is wrong, and whether it is a conflict
/// with other data (HTTP 409) rather than a bad value (422).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneProblem {
    pub error: FieldError,
    pub conflict: bool,
}

/// Checks a zone's pools and load balancers together with its records: limits, unique names,
/// references to pools, and that no A, AAAA or CNAME record sits at a load balancer's name.
/// `lb_field` prefixes the fields of the load balancer at an index (empty for the one being
/// written), `pool_field` likewise for pools.
pub fn check_zone(zone: &ZoneConfig) -> Vec<ZoneProblem> {
    let mut problems = Vec::new();
    let mut push = |field: String, message: String, conflict: bool| {
        problems.push(ZoneProblem {
            error: FieldError::new(field, message),
            conflict,
        })
    };
    if zone.pools.len() > MAX_POOLS {
        push(
            "name".into(),
            format!(
                "a zone holds at most {MAX_POOLS} pools; {} has {}",
                zone.name,
                zone.pools.len()
            ),
            true,
        );
    }
    if zone.load_balancers.len() > MAX_LOAD_BALANCERS {
        push(
            "name".into(),
            format!(
                "a zone holds at most {MAX_LOAD_BALANCERS} load balancers; {} has {}",
                zone.name,
                zone.load_balancers.len()
            ),
            true,
        );
    }
    for (idx, pool) in zone.pools.iter().enumerate() {
        if zone.pools[..idx].iter().any(|p| p.name == pool.name) {
            push(
                "name".into(),
                format!("a pool named {} already exists in {}", pool.name, zone.name),
                true,
            );
        }
    }
    for (idx, lb) in zone.load_balancers.iter().enumerate() {
        if zone.load_balancers[..idx]
            .iter()
            .any(|other| other.name.eq_ignore_case(&lb.name))
        {
            push(
                "name".into(),
                format!("a load balancer already owns {}", lb.name),
                true,
            );
        }
        for (field, pool) in lb.pool_refs() {
            if !zone.pools.iter().any(|p| p.name == pool) {
                push(
                    field,
                    format!("no pool named {pool} in {}", zone.name),
                    false,
                );
            }
        }
        if let Some(record) = zone.records.iter().find(|r| {
            matches!(r.rtype, Rtype::A | Rtype::AAAA | Rtype::CNAME)
                && r.name.eq_ignore_case(&lb.name)
        }) {
            push(
                "name".into(),
                format!(
                    "the load balancer {} owns A, AAAA and CNAME at its name; a {} record is there",
                    lb.name, record.rtype
                ),
                true,
            );
        }
    }
    problems
}

// ---- the compiled form ----------------------------------------------------------------------

/// One origin, compiled: its answer is a ready RRset of one record with the LB's TTL.
#[derive(Clone, Debug)]
pub struct OriginSnapshot {
    pub address: IpAddr,
    pub enabled: bool,
    pub weight: u32,
    pub priority: u32,
    /// The check's key in the health table, when the origin has a check.
    pub check: Option<u64>,
    pub rrset: Rrset,
}

impl OriginSnapshot {
    pub fn is_v6(&self) -> bool {
        self.address.is_ipv6()
    }
}

#[derive(Clone, Debug)]
pub struct PoolSnapshot {
    pub name: Box<str>,
    pub enabled: bool,
    pub algorithm: Algorithm,
    pub location: Option<Coordinates>,
    /// At most [`MAX_ORIGINS`], so masks over them fit in a `u32`.
    pub origins: Box<[OriginSnapshot]>,
}

#[derive(Clone, Debug)]
pub struct RuleSnapshot {
    pub matches: RuleMatch,
    /// Indexes into [`LbSnapshot::pools`].
    pub pools: Box<[u8]>,
}

/// A load balancer compiled for the answer path: pools referenced by index.
#[derive(Clone, Debug)]
pub struct LbSnapshot {
    pub enabled: bool,
    pub ttl: u32,
    /// Every pool the LB names, once each (at most [`MAX_POOLS`]).
    pub pools: Box<[PoolSnapshot]>,
    pub defaults: Box<[u8]>,
    pub rules: Box<[RuleSnapshot]>,
    pub fallback: Option<u8>,
    pub steering: SteeringPolicy,
    pub locate_by: LocateBy,
    pub affinity: Affinity,
}

impl LbSnapshot {
    /// Compiles `lb` with the zone's pools; names that do not resolve (a zone that did not
    /// validate) are left out.
    pub fn compile(lb: &LbConfig, all_pools: &[PoolConfig]) -> LbSnapshot {
        let mut pools: Vec<PoolSnapshot> = Vec::new();
        let mut names: Vec<&str> = Vec::new();
        let mut index_of = |name: &str| -> Option<u8> {
            if let Some(idx) = names.iter().position(|n| *n == name) {
                return Some(idx as u8);
            }
            let pool = all_pools.iter().find(|p| p.name == name)?;
            if pools.len() >= MAX_POOLS {
                return None;
            }
            pools.push(compile_pool(pool, lb.ttl));
            names.push(pool.name.as_str());
            Some((pools.len() - 1) as u8)
        };
        let defaults: Vec<u8> = lb.pools.iter().filter_map(|p| index_of(p)).collect();
        let rules: Vec<RuleSnapshot> = lb
            .rules
            .iter()
            .map(|rule| RuleSnapshot {
                matches: rule.matches.clone(),
                pools: rule.pools.iter().filter_map(|p| index_of(p)).collect(),
            })
            .collect();
        let fallback = lb.fallback.as_deref().and_then(&mut index_of);
        LbSnapshot {
            enabled: lb.enabled,
            ttl: lb.ttl,
            pools: pools.into_boxed_slice(),
            defaults: defaults.into_boxed_slice(),
            rules: rules.into_boxed_slice(),
            fallback,
            steering: lb.steering,
            locate_by: lb.locate_by,
            affinity: lb.affinity,
        }
    }
}

fn compile_pool(pool: &PoolConfig, ttl: u32) -> PoolSnapshot {
    PoolSnapshot {
        name: pool.name.clone().into_boxed_str(),
        enabled: pool.enabled,
        algorithm: pool.algorithm,
        location: pool.location,
        origins: pool
            .origins
            .iter()
            .take(MAX_ORIGINS)
            .map(|origin| OriginSnapshot {
                address: origin.address,
                enabled: origin.enabled,
                weight: origin.weight.max(1),
                priority: origin.priority,
                check: origin.check_key(),
                rrset: Rrset {
                    rtype: if origin.address.is_ipv6() {
                        Rtype::AAAA
                    } else {
                        Rtype::A
                    },
                    ttl,
                    rdatas: smallvec::smallvec![origin.rdata()],
                    steered: None,
                },
            })
            .collect(),
    }
}

/// Puts each load balancer of `zone` on its name's node, creating the node and the empty
/// non-terminals above it (called by [`crate::ZoneSnapshot::compile`]).
pub fn compile_into(zone: &ZoneConfig, apex: &Dname, nodes: &mut NodeMap) {
    for lb in &zone.load_balancers {
        let key = lb.name.to_lowercase();
        if !key.is_within(apex) {
            continue;
        }
        let mut parent = key.parent();
        while let Some(name) = parent {
            if name.label_count() <= apex.label_count() {
                break;
            }
            nodes.entry(name.as_wire());
            parent = name.parent();
        }
        let node = nodes.entry(key.as_wire());
        node.lb = Some(Box::new(LbSnapshot::compile(lb, &zone.pools)));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn zone_name() -> Dname {
        Dname::parse_absolute("example.com").unwrap()
    }

    fn fields(errors: &[FieldError]) -> Vec<String> {
        errors.iter().map(|e| e.to_string()).collect()
    }

    #[test]
    fn pool_fields_are_validated_and_named() {
        let spec = PoolSpec {
            name: "eu west".into(),
            algorithm: Some("roundrobin".into()),
            location: Some(Location {
                latitude: 91.0,
                longitude: 0.0,
            }),
            origins: vec![
                OriginSpec {
                    address: "192.0.2.1".into(),
                    ..Default::default()
                },
                OriginSpec {
                    address: "192.0.2.1".into(),
                    ..Default::default()
                },
                OriginSpec {
                    address: "nope".into(),
                    weight: Some(101),
                    ..Default::default()
                },
            ],
            ..Default::default()
        };
        let errors = spec.validate("").unwrap_err();
        let found = fields(&errors);
        let names: Vec<&str> = found.iter().map(|e| e.split(':').next().unwrap()).collect();
        assert_eq!(
            names,
            [
                "name",
                "algorithm",
                "location",
                "origins[1].address",
                "origins[2].address",
                "origins[2].weight"
            ],
            "{found:#?}"
        );
    }

    #[test]
    fn origin_checks_default_to_every_minute() {
        let spec = OriginSpec {
            address: "2001:db8::1".into(),
            check: Some(crate::steering::CheckSpec {
                kind: "tcp".into(),
                port: Some(8080),
                host: None,
                path: None,
                method: None,
                status: None,
                body: None,
                payload: None,
                interval: None,
                timeout: None,
                down_after: None,
                up_after: None,
            }),
            ..Default::default()
        };
        let origin = spec.validate("").unwrap();
        assert_eq!(origin.check.as_ref().unwrap().interval_secs, 60);
        assert_eq!(origin.check_host().as_deref(), Some("2001:db8::1"));
        assert_eq!(
            (origin.weight, origin.priority, origin.enabled),
            (1, 0, true)
        );
    }

    /// A pool named `big` of `n` distinct origins.
    fn pool_of(n: u32) -> PoolSpec {
        PoolSpec {
            name: "big".into(),
            origins: (0..n)
                .map(|i| OriginSpec {
                    address: std::net::Ipv4Addr::from(0x0a00_0000 + i).to_string(),
                    ..Default::default()
                })
                .collect(),
            ..Default::default()
        }
    }

    #[test]
    fn too_many_origins_is_refused() {
        let spec = pool_of(21);
        let errors = spec.validate("").unwrap_err();
        assert_eq!(
            fields(&errors),
            ["origins: a pool holds at most 20 origins; this one has 21"]
        );
    }

    #[test]
    fn load_balancer_fields_are_validated_and_named() {
        let spec = LoadBalancerSpec {
            name: "www".into(),
            ttl: Some(4),
            pools: vec!["a".into(), "a".into()],
            rules: vec![
                LbRuleSpec {
                    kind: "country".into(),
                    key: "de".into(),
                    pools: vec![],
                },
                LbRuleSpec {
                    kind: "continent".into(),
                    key: "EU".into(),
                    pools: vec!["b".into()],
                },
            ],
            steering: Some("nearest".into()),
            ..Default::default()
        };
        let errors = validate_lb(&spec, &zone_name()).unwrap_err();
        assert_eq!(
            fields(&errors),
            [
                "ttl: TTL 4 is out of range: 5 to 3600",
                "pools[1]: pool a is listed twice",
                "rules[0].key: \"de\" is not an ISO 3166 alpha-2 country code (upper case, such as ID, SG, US)",
                "rules[0].pools: a rule needs at least one pool",
                "steering: \"nearest\" is not one of off, random, geographic, proximity",
            ]
        );
        let ok = LoadBalancerSpec {
            name: "www".into(),
            pools: vec!["a".into()],
            ..Default::default()
        };
        let lb = validate_lb(&ok, &zone_name()).unwrap();
        assert_eq!(lb.ttl, DEFAULT_LB_TTL);
        assert_eq!(lb.to_spec(&zone_name()).name, "www");
    }

    #[test]
    fn too_many_pool_entries_is_refused() {
        let spec = LoadBalancerSpec {
            name: "www".into(),
            pools: vec!["a".into()],
            rules: (0..40)
                .map(|i| LbRuleSpec {
                    kind: "pop".into(),
                    key: format!("pop{i}"),
                    pools: (0..5).map(|p| format!("p{p}")).collect(),
                })
                .collect(),
            ..Default::default()
        };
        let errors = validate_lb(&spec, &zone_name()).unwrap_err();
        assert_eq!(
            fields(&errors),
            [
                "pools: a load balancer holds at most 200 pool entries (defaults, rules and fallback); this one has 201"
            ]
        );
    }

    /// A body of megabytes over the limits is refused by its count alone: the duplicate checks
    /// are quadratic and run under the zone's lock (this took minutes before).
    #[test]
    fn huge_pools_and_pool_lists_are_refused_without_checking_each_entry() {
        let spec = pool_of(200_000);
        // One error, the limit: no entry was checked on its own.
        let errors = spec.validate("").unwrap_err();
        assert_eq!(
            fields(&errors),
            ["origins: a pool holds at most 20 origins; this one has 200000"]
        );
        let lb = LoadBalancerSpec {
            name: "www".into(),
            pools: (0..200_000).map(|p| format!("p{p}")).collect(),
            ..Default::default()
        };
        let errors = validate_lb(&lb, &zone_name()).unwrap_err();
        assert_eq!(
            fields(&errors),
            [
                "pools: a load balancer holds at most 200 pool entries (defaults, rules and fallback); this one has 200000"
            ]
        );
    }

    #[test]
    fn distance_is_great_circle() {
        let frankfurt = Coordinates::new(50.11, 8.68).unwrap();
        let jakarta = Coordinates::new(-6.2, 106.85).unwrap();
        let km = frankfurt.distance_km(jakarta);
        assert!((11_000.0..11_200.0).contains(&km), "{km}");
        assert_eq!(frankfurt.distance_km(frankfurt), 0.0);
        assert!(Coordinates::parse("50.1,8.7").is_some());
        assert!(Coordinates::parse("50.1,181").is_none());
    }
}
