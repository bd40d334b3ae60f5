//! The `/api/v1` request and response bodies, shared by the server, the CLI and (as JSON) the
//! dashboard. Plain data with serde; no behaviour.

use serde::{Deserialize, Serialize};

/// Every error body: a message, the field it is about when there is one, and for validation
/// of many items (zone file import) every problem found.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ErrorBody {
    pub error: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<FieldProblem>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct FieldProblem {
    pub field: String,
    pub message: String,
}

/// SOA fields of a zone; all optional on input (defaults are filled in).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct SoaSpec {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rname: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expire: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub minimum: Option<u32>,
}

/// `POST /api/v1/zones`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct ZoneCreate {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub default_ttl: Option<u32>,
    #[serde(default)]
    pub soa: SoaSpec,
    /// Name servers for the apex NS set; `ns1.<zone>` when empty.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub ns: Vec<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Soa {
    pub mname: String,
    pub rname: String,
    pub serial: u32,
    pub refresh: u32,
    pub retry: u32,
    pub expire: u32,
    pub minimum: u32,
}

/// A zone as the API shows it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Zone {
    pub name: String,
    pub serial: u32,
    pub default_ttl: u32,
    pub soa: Soa,
    pub record_count: usize,
}

/// `POST /api/v1/zones/{zone}/records` and `PUT …/records/{id}`.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct RecordSpec {
    /// Relative to the zone (`www`, `@`) or absolute with a trailing dot.
    pub name: String,
    #[serde(rename = "type")]
    pub rtype: String,
    /// Presentation format rdata (`192.0.2.1`, `10 mail`, `"text"`, `\# 4 0a000001`).
    pub value: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<u32>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steering: Option<SteeringSpec>,
}

/// A record as the API shows it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Record {
    pub id: i64,
    /// Relative to the zone.
    pub name: String,
    pub fqdn: String,
    #[serde(rename = "type")]
    pub rtype: String,
    pub ttl: u32,
    pub value: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steering: Option<SteeringSpec>,
    /// The health of the record's check, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub health: Option<HealthInfo>,
}

/// Result of `POST /api/v1/zones/{zone}/import`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct ImportResult {
    pub zone: String,
    pub records: usize,
    pub serial: u32,
}

#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    Viewer,
    Editor,
    Superadmin,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Viewer => "viewer",
            Role::Editor => "editor",
            Role::Superadmin => "superadmin",
        }
    }

    pub fn parse(text: &str) -> Option<Role> {
        match text {
            "viewer" => Some(Role::Viewer),
            "editor" => Some(Role::Editor),
            "superadmin" => Some(Role::Superadmin),
            _ => None,
        }
    }
}

/// `POST /api/v1/users`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct UserCreate {
    pub name: String,
    pub password: String,
    pub role: Role,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct User {
    pub name: String,
    pub role: Role,
}

/// `POST /api/v1/tokens`: a token for the calling user, or for `user` (superadmin only).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct TokenCreate {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub user: Option<String>,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Token {
    pub id: i64,
    pub name: String,
    pub user: String,
    pub created: i64,
    /// The secret; present only in the response that created it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
}

/// `POST /api/v1/session`: log in with a password, get a token back, or with `cookie` a
/// dashboard session (an HttpOnly cookie) and its CSRF token.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Login {
    pub name: String,
    pub password: String,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cookie: bool,
}

/// Who is logged in: the answer of `POST` and `GET /api/v1/session`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Session {
    pub user: String,
    pub role: Role,
    /// A new API token; only from a password login without `cookie`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<String>,
    /// What a cookie session must send as `X-CSRF-Token` on every write.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub csrf: Option<String>,
}

/// Traffic steering of an A or AAAA record (SPEC §4), as stored and as the API shows it.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SteeringSpec {
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub countries: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub continents: Vec<String>,
    /// Absent counts as 1; 0 answers only when every record left has 0.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i64>,
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub backup: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckSpec>,
}

/// A health check as users write it; every field but `kind` has the default of SPEC §5.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct CheckSpec {
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub port: Option<i64>,
    /// Host header and TLS name; default the record's own name.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub method: Option<String>,
    /// Healthy statuses: `200-399`, `200,204`, `2xx`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<String>,
    /// A regex the first 64 KiB of the body (http/https) or the reply (tcp/udp) must match.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub body: Option<String>,
    /// What tcp and udp checks send.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload: Option<String>,
    /// Seconds between checks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub interval: Option<i64>,
    /// Milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub timeout: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub down_after: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub up_after: Option<i64>,
}

/// `GET /api/v1/explain`: how a query would be answered, step by step.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Explain {
    pub query: String,
    pub rcode: String,
    /// The answer section as dig prints it.
    pub answer: Vec<String>,
    pub authority: Vec<String>,
    /// The address placed and what GeoIP says of it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client: Option<GeoLookup>,
    /// The ECS scope prefix length the answer would carry.
    pub ecs_scope: u8,
    /// One line per steering step: what was removed and why, the place, the pick.
    pub steps: Vec<String>,
}

/// What GeoDNS sees for an address.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct GeoLookup {
    pub address: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub country: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub continent: Option<String>,
    /// The database network that holds the address, as CIDR.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<String>,
    /// `placed`, `private` (or another special range), `not in database`, `no database`.
    pub status: String,
}

/// `GET /api/v1/settings/geoip`: the GeoIP database in use, where updates come from, and when.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct GeoIpStatus {
    /// `<data dir>/geoip-country.mmdb`.
    pub path: String,
    /// Size of that file in bytes; absent when there is no file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_size: Option<u64>,
    /// When the file was last written, Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub file_modified: Option<i64>,
    /// A database answers GeoDNS lookups (the file's, or the demo's).
    pub loaded: bool,
    /// The synthetic demo database of `dnz serve --demo` is the one in use.
    pub demo: bool,
    /// From the database's metadata, e.g. `DBIP-Country-Lite` or `GeoLite2-Country`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub database_type: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// When the database was built, Unix seconds (its metadata's build epoch).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_epoch: Option<i64>,
    /// The source URL; `{year}` and `{month}` are filled in at download time. Passwords and
    /// license keys in it are masked.
    pub url: String,
    /// `url` is the default source (DB-IP IP-to-Country Lite).
    pub default_url: bool,
    /// Download a new database every month.
    pub auto_update: bool,
    /// When the last download was tried, Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_download: Option<i64>,
    /// `ok` or `failed`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_result: Option<String>,
    /// The URL the last download fetched (with the date filled in).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_url: Option<String>,
    /// Why the last download failed; the old database stayed in use.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
    /// When the next automatic download runs, Unix seconds; absent while auto update is off.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_download: Option<i64>,
    /// The credit the source's licence asks for (`IP Geolocation by DB-IP` for DB-IP).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attribution: Option<String>,
}

/// `PUT /api/v1/settings/geoip`: only the fields given change.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct GeoIpSettings {
    /// An `http://` or `https://` URL, may hold `{year}` and `{month}`; `default` goes back to
    /// DB-IP.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub auto_update: Option<bool>,
}

/// The health of a record's check target (SPEC §5).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct HealthInfo {
    /// `unknown`, `up` or `down`.
    pub state: String,
    /// When the state began, Unix seconds (absent while unknown).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub since: Option<i64>,
    /// Why the last check failed, when it did.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<u64>,
    /// When the last check ran, Unix seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<i64>,
}

/// One state change in a record's health history.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct HealthEvent {
    pub time: i64,
    pub old_state: String,
    pub new_state: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_ms: Option<i64>,
}

/// `POST /api/v1/checks/test`: run one check now, without saving anything.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct CheckTest {
    /// The address to check.
    pub address: String,
    /// The record's name: the Host header and TLS name when the check sets no host.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    pub check: CheckSpec,
}

/// The verdict of one check.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct CheckResult {
    pub healthy: bool,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub status: Option<u16>,
    pub latency_ms: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reason: Option<String>,
}

// ---- load balancers (SPEC §7) ------------------------------------------------------------

/// Where a pool (or a PoP) is, in degrees.
#[derive(Clone, Copy, Debug, Serialize, Deserialize, PartialEq)]
pub struct Location {
    pub latitude: f64,
    pub longitude: f64,
}

/// One origin of a pool as users write it; defaults: enabled, weight 1, priority 0, no check
/// (a check's interval defaults to 60 s here).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct OriginSpec {
    /// An IPv4 or IPv6 address.
    pub address: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// 1 to 100.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub weight: Option<i64>,
    /// Failover pools answer the lowest number first.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckSpec>,
}

/// `POST /api/v1/zones/{zone}/pools` and `PUT …/pools/{id}` (the whole pool).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq)]
pub struct PoolSpec {
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// `weighted` (default) or `failover`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub algorithm: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    #[serde(default)]
    pub origins: Vec<OriginSpec>,
}

/// An origin as the API shows it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Origin {
    pub id: i64,
    pub address: String,
    pub enabled: bool,
    pub weight: u32,
    pub priority: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check: Option<CheckSpec>,
    /// `healthy`, `unhealthy` or `unknown` (unknown and no check count as healthy).
    pub health: String,
    /// The state of the origin's check, when it has one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_state: Option<HealthInfo>,
}

/// A pool as the API shows it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq)]
pub struct Pool {
    pub id: i64,
    pub name: String,
    pub enabled: bool,
    pub algorithm: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub location: Option<Location>,
    pub origins: Vec<Origin>,
}

/// The verdict of one origin's check (`POST …/pools/{id}/check`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct OriginCheck {
    pub address: String,
    pub result: CheckResult,
}

/// A rule of a load balancer: clients matched by PoP, country or continent get these pools.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct LbRuleSpec {
    /// `pop`, `country` or `continent`.
    pub kind: String,
    /// The PoP's name, an ISO country code or a continent code.
    pub key: String,
    pub pools: Vec<String>,
}

/// `POST /api/v1/zones/{zone}/load-balancers` and `PUT …/{id}` (the whole load balancer);
/// also how the API shows one (with `id` and `fqdn`).
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct LoadBalancerSpec {
    /// Relative to the zone (`www`, `@`) or absolute with a trailing dot.
    pub name: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// 5 to 3600 s; default 30.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ttl: Option<i64>,
    /// Default pools, in order.
    #[serde(default)]
    pub pools: Vec<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub rules: Vec<LbRuleSpec>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fallback: Option<String>,
    /// `off` (default), `random`, `geographic` or `proximity`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub steering: Option<String>,
    /// `pop` (default) or `resolver`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub locate_by: Option<String>,
    /// `none` (default) or `client-ip`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub affinity: Option<String>,
}

/// A load balancer as the API shows it.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct LoadBalancer {
    pub id: i64,
    pub fqdn: String,
    #[serde(flatten)]
    pub spec: LoadBalancerSpec,
}

// ---- topology ----------------------------------------------------------------------------

/// `GET /api/v1/topology`: where clients are steered, by which name, to which address.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct Topology {
    pub places: Vec<TopologyPlace>,
    pub names: Vec<TopologyName>,
    pub origins: Vec<TopologyOrigin>,
    pub edges: Vec<TopologyEdge>,
}

/// A place clients are steered by: `country:DE`, `continent:EU`, `pop:fra` or `everywhere`.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct TopologyPlace {
    pub id: String,
    pub label: String,
    /// `country`, `continent`, `pop` or `everywhere`.
    pub kind: String,
}

/// A steered A/AAAA RRset (`record:<owner>/<type>`) or a load balancer (`lb:<name>`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct TopologyName {
    pub id: String,
    pub label: String,
    /// `record` or `lb`.
    pub kind: String,
    /// The zone, without the trailing dot.
    pub zone: String,
}

/// One address, however many records and pools name it (`origin:<address>`).
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct TopologyOrigin {
    pub id: String,
    pub address: String,
    /// `down` if any check of the address is down, else `up` if any is up, else `unknown`.
    pub health: String,
}

/// Place → name or name → origin.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq, PartialOrd, Ord)]
pub struct TopologyEdge {
    pub from: String,
    pub to: String,
    pub label: String,
}
