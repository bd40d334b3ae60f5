//! Traffic steering of A and AAAA records (SPEC §4) and the health check that may go with it
//! (SPEC §5): what users write ([`SteeringSpec`], [`CheckSpec`]) and its validated form.

use std::fmt;

pub use api::{CheckSpec, SteeringSpec};
use geo::{Continent, Country};
use serde::{Deserialize, Serialize};

use crate::zone::FieldError;

/// Most records one steered RRset may hold (the answer path keeps a 64-bit selection mask).
pub const MAX_STEERED_RECORDS: usize = 64;
pub const MAX_WEIGHT: u32 = 1_000_000;

/// Validated steering of one record.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Steering {
    pub countries: Vec<Country>,
    pub continents: Vec<Continent>,
    pub weight: Option<u32>,
    pub backup: bool,
    pub check: Option<CheckConfig>,
}

impl Steering {
    /// True when a place decides whether this record is answered.
    pub fn has_place(&self) -> bool {
        !self.countries.is_empty() || !self.continents.is_empty()
    }

    pub fn to_spec(&self) -> SteeringSpec {
        SteeringSpec {
            countries: self.countries.iter().map(|c| c.to_string()).collect(),
            continents: self.continents.iter().map(|c| c.to_string()).collect(),
            weight: self.weight.map(i64::from),
            backup: self.backup,
            check: self.check.as_ref().map(CheckConfig::to_spec),
        }
    }
}

/// Validation of the API's steering and check specs.
pub trait Validate {
    type Output;
    /// Checks every field; `prefix` names the object in messages (`steering.`).
    fn validate(&self, prefix: &str) -> Result<Self::Output, Vec<FieldError>>;
}

impl Validate for SteeringSpec {
    type Output = Steering;

    /// Checks every field; `prefix` names the steering object in messages (`steering.`).
    fn validate(&self, prefix: &str) -> Result<Steering, Vec<FieldError>> {
        let mut errors = Vec::new();
        let mut countries = Vec::new();
        for code in &self.countries {
            match Country::parse(code) {
                Some(country) if !countries.contains(&country) => countries.push(country),
                Some(_) => {}
                None => errors.push(FieldError::new(
                    format!("{prefix}countries"),
                    format!("{code:?} is not an ISO 3166 alpha-2 country code (upper case, such as ID, SG, US)"),
                )),
            }
        }
        let mut continents = Vec::new();
        for code in &self.continents {
            match Continent::parse(code) {
                Some(continent) if !continents.contains(&continent) => continents.push(continent),
                Some(_) => {}
                None => errors.push(FieldError::new(
                    format!("{prefix}continents"),
                    format!("{code:?} is not a continent code (AF, AN, AS, EU, NA, OC, SA)"),
                )),
            }
        }
        let weight = match self.weight {
            None => None,
            Some(w) if (0..=MAX_WEIGHT as i64).contains(&w) => Some(w as u32),
            Some(w) => {
                errors.push(FieldError::new(
                    format!("{prefix}weight"),
                    format!("weight {w} is out of range: 0 to {MAX_WEIGHT}"),
                ));
                None
            }
        };
        let check = match &self.check {
            None => None,
            Some(spec) => match spec.validate(&format!("{prefix}check.")) {
                Ok(check) => Some(check),
                Err(mut e) => {
                    errors.append(&mut e);
                    None
                }
            },
        };
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(Steering {
            countries,
            continents,
            weight,
            backup: self.backup,
            check,
        })
    }
}

/// The kinds of health check.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CheckKind {
    Https,
    Http,
    Tcp,
    Udp,
    Icmp,
}

impl CheckKind {
    pub fn as_str(self) -> &'static str {
        match self {
            CheckKind::Https => "https",
            CheckKind::Http => "http",
            CheckKind::Tcp => "tcp",
            CheckKind::Udp => "udp",
            CheckKind::Icmp => "icmp",
        }
    }

    pub fn parse(text: &str) -> Option<CheckKind> {
        [
            CheckKind::Https,
            CheckKind::Http,
            CheckKind::Tcp,
            CheckKind::Udp,
            CheckKind::Icmp,
        ]
        .into_iter()
        .find(|k| k.as_str() == text)
    }
}

impl fmt::Display for CheckKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Validated check settings, defaults filled in.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct CheckConfig {
    pub kind: CheckKind,
    pub port: u16,
    pub host: Option<String>,
    pub path: String,
    pub head: bool,
    pub status: StatusSet,
    pub body: Option<String>,
    pub payload: Option<String>,
    pub interval_secs: u32,
    pub timeout_ms: u32,
    pub down_after: u8,
    pub up_after: u8,
}

/// A set of HTTP statuses, as inclusive ranges.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct StatusSet(pub Vec<(u16, u16)>);

impl StatusSet {
    /// Parses `200-399`, `200,204`, `2xx`, and lists of those.
    pub fn parse(text: &str) -> Option<StatusSet> {
        let mut ranges = Vec::new();
        for part in text.split(',').map(str::trim) {
            let range = if let Some(hundreds) =
                part.strip_suffix("xx").or_else(|| part.strip_suffix("XX"))
            {
                let h: u16 = hundreds.parse().ok().filter(|h| (1..=5).contains(h))?;
                (h * 100, h * 100 + 99)
            } else if let Some((a, b)) = part.split_once('-') {
                (a.trim().parse().ok()?, b.trim().parse().ok()?)
            } else {
                let code: u16 = part.parse().ok()?;
                (code, code)
            };
            if range.0 > range.1 || range.0 < 100 || range.1 > 599 {
                return None;
            }
            ranges.push(range);
        }
        Some(StatusSet(ranges))
    }

    pub fn contains(&self, status: u16) -> bool {
        self.0.iter().any(|(a, b)| (*a..=*b).contains(&status))
    }
}

impl fmt::Display for StatusSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let parts: Vec<String> = self
            .0
            .iter()
            .map(|(a, b)| {
                if a == b {
                    a.to_string()
                } else {
                    format!("{a}-{b}")
                }
            })
            .collect();
        f.write_str(&parts.join(","))
    }
}

impl Validate for CheckSpec {
    type Output = CheckConfig;

    fn validate(&self, prefix: &str) -> Result<CheckConfig, Vec<FieldError>> {
        let mut errors = Vec::new();
        let mut bad = |field: &str, message: String| {
            errors.push(FieldError::new(format!("{prefix}{field}"), message))
        };
        let kind = CheckKind::parse(&self.kind);
        if kind.is_none() {
            bad(
                "kind",
                format!(
                    "{:?} is not a check kind (https, http, tcp, udp, icmp)",
                    self.kind
                ),
            );
        }
        let kind = kind.unwrap_or(CheckKind::Http);
        let default_port = if kind == CheckKind::Https { 443 } else { 80 };
        let port = match self.port {
            None => default_port,
            Some(p) if (1..=65535).contains(&p) => p as u16,
            Some(p) => {
                bad("port", format!("port {p} is out of range: 1 to 65535"));
                default_port
            }
        };
        let path = self.path.clone().unwrap_or_else(|| "/".into());
        if !path.starts_with('/') || path.chars().any(|c| c.is_whitespace() || c.is_control()) {
            bad(
                "path",
                format!("{path:?} must start with / and hold no spaces"),
            );
        }
        let head = match self
            .method
            .as_deref()
            .map(str::to_ascii_uppercase)
            .as_deref()
        {
            None | Some("GET") => false,
            Some("HEAD") => true,
            Some(other) => {
                bad("method", format!("method {other:?} is not GET or HEAD"));
                false
            }
        };
        let status = match &self.status {
            None => StatusSet(vec![(200, 399)]),
            Some(text) => StatusSet::parse(text).unwrap_or_else(|| {
                bad(
                    "status",
                    format!("{text:?} is not a status list such as 200-399, 200,204 or 2xx"),
                );
                StatusSet(vec![(200, 399)])
            }),
        };
        if let Some(host) = &self.host
            && (host.is_empty()
                || host.len() > 253
                || host.chars().any(|c| c.is_whitespace() || c == '/'))
        {
            bad("host", format!("{host:?} is not a host name"));
        }
        if let Some(body) = &self.body
            && let Err(e) = regex::Regex::new(body)
        {
            bad("body", format!("the regex does not compile: {e}"));
        }
        if self.payload.is_some() && !matches!(kind, CheckKind::Tcp | CheckKind::Udp) {
            bad("payload", "only tcp and udp checks send a payload".into());
        }
        if kind == CheckKind::Udp && self.payload.is_none() {
            bad("payload", "a udp check needs a payload to send".into());
        }
        let interval_secs = match self.interval {
            None => 30,
            Some(s) if (1..=3600).contains(&s) => s as u32,
            Some(s) => {
                bad(
                    "interval",
                    format!("interval {s} s is out of range: 1 to 3600"),
                );
                30
            }
        };
        let timeout_ms = match self.timeout {
            None => 3000.min(interval_secs * 1000 - 1),
            Some(ms) if ms >= 1 && ms < interval_secs as i64 * 1000 => ms as u32,
            Some(ms) => {
                bad(
                    "timeout",
                    format!(
                        "timeout {ms} ms must be at least 1 and below the interval ({interval_secs} s)"
                    ),
                );
                1000
            }
        };
        let mut threshold = |field: &str, value: Option<i64>, default: u8| match value {
            None => default,
            Some(n) if (1..=10).contains(&n) => n as u8,
            Some(n) => {
                bad(field, format!("{n} is out of range: 1 to 10"));
                default
            }
        };
        let down_after = threshold("down_after", self.down_after, 3);
        let up_after = threshold("up_after", self.up_after, 2);
        if !errors.is_empty() {
            return Err(errors);
        }
        Ok(CheckConfig {
            kind,
            port,
            host: self.host.clone(),
            path,
            head,
            status,
            body: self.body.clone(),
            payload: self.payload.clone(),
            interval_secs,
            timeout_ms,
            down_after,
            up_after,
        })
    }
}

impl CheckConfig {
    /// The Host header and TLS name: as set, else the record's own name, or for a wildcard
    /// record (whose names are many) the address itself.
    pub fn effective_host(&self, owner: &crate::Dname, rdata: &crate::Rdata) -> String {
        if let Some(host) = &self.host {
            return host.clone();
        }
        if owner.is_wildcard() {
            return match rdata.as_wire().len() {
                4 => std::net::Ipv4Addr::from(
                    <[u8; 4]>::try_from(rdata.as_wire()).unwrap_or_default(),
                )
                .to_string(),
                16 => std::net::Ipv6Addr::from(
                    <[u8; 16]>::try_from(rdata.as_wire()).unwrap_or_default(),
                )
                .to_string(),
                _ => crate::rdata::hex(rdata.as_wire()),
            };
        }
        let name = owner.to_lowercase().to_string();
        name.strip_suffix('.').unwrap_or(&name).to_string()
    }

    /// The identity of a check target: the same address checked the same way is one check,
    /// shared by every record that names it (SPEC §5). FNV-1a, so it is stable across runs.
    pub fn key(&self, owner: &crate::Dname, rdata: &crate::Rdata) -> u64 {
        let text = format!(
            "{}|{}|{}|{}|{}|{}|{}|{:?}|{:?}|{}|{}|{}|{}",
            self.kind,
            crate::rdata::hex(rdata.as_wire()),
            self.port,
            self.effective_host(owner, rdata),
            self.path,
            self.head,
            self.status,
            self.body,
            self.payload,
            self.interval_secs,
            self.timeout_ms,
            self.down_after,
            self.up_after
        );
        text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |hash, b| {
            (hash ^ b as u64).wrapping_mul(0x0100_0000_01b3)
        })
    }

    pub fn to_spec(&self) -> CheckSpec {
        CheckSpec {
            kind: self.kind.as_str().into(),
            port: Some(self.port.into()),
            host: self.host.clone(),
            path: Some(self.path.clone()),
            method: Some(if self.head { "HEAD" } else { "GET" }.into()),
            status: Some(self.status.to_string()),
            body: self.body.clone(),
            payload: self.payload.clone(),
            interval: Some(self.interval_secs.into()),
            timeout: Some(self.timeout_ms.into()),
            down_after: Some(self.down_after.into()),
            up_after: Some(self.up_after.into()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors(spec: &SteeringSpec) -> Vec<String> {
        spec.validate("")
            .err()
            .unwrap_or_default()
            .iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn codes_weights_and_checks_are_validated() {
        let ok = SteeringSpec {
            countries: vec!["ID".into(), "SG".into()],
            continents: vec!["EU".into()],
            weight: Some(9),
            ..Default::default()
        };
        let steering = ok.validate("").unwrap();
        assert_eq!(steering.countries.len(), 2);
        assert!(steering.has_place());
        let bad = SteeringSpec {
            countries: vec!["id".into(), "XX".into()],
            continents: vec!["EUROPE".into()],
            weight: Some(-1),
            check: Some(CheckSpec {
                kind: "https".into(),
                port: Some(70000),
                host: None,
                path: None,
                method: Some("POST".into()),
                status: Some("2xx,600".into()),
                body: Some("(".into()),
                payload: None,
                interval: Some(5),
                timeout: Some(5000),
                down_after: Some(0),
                up_after: None,
            }),
            backup: false,
        };
        let found = errors(&bad);
        let fields: Vec<&str> = found.iter().map(|e| e.split(':').next().unwrap()).collect();
        assert_eq!(
            fields,
            [
                "countries",
                "countries",
                "continents",
                "weight",
                "check.port",
                "check.method",
                "check.status",
                "check.body",
                "check.timeout",
                "check.down_after"
            ],
            "{found:#?}"
        );
    }

    #[test]
    fn check_defaults_follow_the_spec() {
        let spec = CheckSpec {
            kind: "https".into(),
            ..Default::default()
        };
        let check = spec.validate("").unwrap();
        assert_eq!(
            (
                check.port,
                check.path.as_str(),
                check.interval_secs,
                check.timeout_ms
            ),
            (443, "/", 30, 3000)
        );
        assert_eq!((check.down_after, check.up_after), (3, 2));
        assert!(
            check.status.contains(200) && check.status.contains(399) && !check.status.contains(400)
        );
        assert!(StatusSet::parse("2xx").unwrap().contains(204));
        assert_eq!(StatusSet::parse("200,204").unwrap().to_string(), "200,204");
    }
}
