//! Zones and records as validated configuration, and the rules every write must pass.

use std::collections::{HashMap, HashSet};

use foldhash::fast::RandomState;

use crate::name::Dname;
use crate::rdata::{Rdata, Rtype};
use crate::steering::{MAX_STEERED_RECORDS, Steering};

/// The SOA fields of a zone (RFC 1035 §3.3.13); the owner is the zone name.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Soa {
    pub mname: Dname,
    pub rname: Dname,
    pub serial: u32,
    pub refresh: u32,
    pub retry: u32,
    pub expire: u32,
    pub minimum: u32,
}

impl Soa {
    /// Defaults for a new zone: `ns1.<zone>` and `hostmaster.<zone>`.
    pub fn default_for(zone: &Dname, serial: u32) -> Soa {
        let ns1 = Dname::parse("ns1", zone).unwrap_or_else(|_| zone.clone());
        let hostmaster = Dname::parse("hostmaster", zone).unwrap_or_else(|_| zone.clone());
        Soa {
            mname: ns1,
            rname: hostmaster,
            serial,
            refresh: 3600,
            retry: 600,
            expire: 1_209_600,
            minimum: 300,
        }
    }

    /// Wire rdata.
    pub fn to_rdata(&self) -> Rdata {
        let mut wire = Vec::with_capacity(64);
        wire.extend_from_slice(self.mname.as_wire());
        wire.extend_from_slice(self.rname.as_wire());
        for value in [
            self.serial,
            self.refresh,
            self.retry,
            self.expire,
            self.minimum,
        ] {
            wire.extend_from_slice(&value.to_be_bytes());
        }
        Rdata::new(&wire)
    }
}

/// One record of a zone.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordConfig {
    /// The store's id; 0 for a record not yet stored.
    pub id: i64,
    pub name: Dname,
    pub rtype: Rtype,
    pub ttl: u32,
    pub rdata: Rdata,
    /// Traffic steering; A and AAAA only.
    /// Boxed: most records are not steered, and the inline value would triple every record.
    pub steering: Option<Box<Steering>>,
}

/// A zone with all its records (the SOA is kept apart, in `soa`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ZoneConfig {
    pub id: i64,
    pub name: Dname,
    pub soa: Soa,
    /// TTL of the SOA record and the default for new records.
    pub default_ttl: u32,
    pub records: Vec<RecordConfig>,
    /// Pools of origins for the zone's load balancers (SPEC §7).
    pub pools: Vec<crate::lb::PoolConfig>,
    /// Load balancers, each owning A, AAAA and CNAME at its name.
    pub load_balancers: Vec<crate::lb::LbConfig>,
}

/// A problem with one field of an input, for the API's `{error, field}` and import reports.
#[derive(Clone, Debug, PartialEq, Eq, serde::Serialize)]
pub struct FieldError {
    pub field: String,
    pub message: String,
}

impl FieldError {
    pub fn new(field: impl Into<String>, message: impl Into<String>) -> FieldError {
        FieldError {
            field: field.into(),
            message: message.into(),
        }
    }
}

impl std::fmt::Display for FieldError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.field, self.message)
    }
}

/// RFC 2181 §8: TTLs are 31-bit.
pub const MAX_TTL: u32 = 2_147_483_647;

/// The next SOA serial after `old` in date form `YYYYMMDDnn`; never goes down, so a zone whose
/// serial is already ahead of the date (or plain counting) keeps counting (RFC 1982).
pub fn next_serial(old: u32, today_yyyymmdd: u32) -> u32 {
    let dated = today_yyyymmdd.saturating_mul(100);
    if old < dated {
        dated
    } else {
        old.wrapping_add(1)
    }
}

/// Validates a zone name given as text.
pub fn parse_zone_name(text: &str) -> Result<Dname, FieldError> {
    let name = Dname::parse_absolute(text).map_err(|e| FieldError::new("name", e.to_string()))?;
    if name.is_root() {
        return Err(FieldError::new("name", "the root zone is not supported"));
    }
    if name.is_wildcard() {
        return Err(FieldError::new("name", "a zone name cannot be a wildcard"));
    }
    Ok(name.to_lowercase())
}

impl ZoneConfig {
    /// Checks the whole zone; returns every problem, each naming its field. `field_of` gives the
    /// prefix that names the record at an index (`line 12: ` for zone files, empty for the API).
    pub fn validate(&self, field_of: &dyn Fn(usize) -> String) -> Vec<FieldError> {
        let mut errors = Vec::new();
        if self.default_ttl > MAX_TTL {
            errors.push(FieldError::new(
                "default_ttl",
                format!("TTL {} is above {MAX_TTL}", self.default_ttl),
            ));
        }
        for (field, name) in [
            ("soa.mname", &self.soa.mname),
            ("soa.rname", &self.soa.rname),
        ] {
            if name.is_root() {
                errors.push(FieldError::new(field, "must not be the root"));
            }
        }
        if self.soa.refresh == 0 || self.soa.retry == 0 || self.soa.expire == 0 {
            errors.push(FieldError::new(
                "soa",
                "refresh, retry and expire must be above 0",
            ));
        }
        // One pass, one lower-cased name per record and no per-record allocation otherwise:
        // a million-record import spends its validation here. Names are grouped in order of
        // first appearance, with what the CNAME and steering rules need counted per group.
        #[derive(Default)]
        struct Group {
            first: usize,
            total: usize,
            cnames: usize,
            first_cname: usize,
            other: Option<Rtype>,
            // A, then AAAA: how many, whether any is steered, the first one's index.
            addresses: [(usize, bool, usize); 2],
        }
        let mut group_of: HashMap<Dname, usize, RandomState> =
            HashMap::with_capacity_and_hasher(self.records.len(), RandomState::default());
        let mut groups: Vec<Group> = Vec::new();
        let mut seen: HashSet<(usize, Rtype, &[u8]), RandomState> =
            HashSet::with_capacity_and_hasher(self.records.len(), RandomState::default());
        for (idx, record) in self.records.iter().enumerate() {
            if !record.name.is_within(&self.name) {
                errors.push(FieldError::new(
                    format!("{}name", field_of(idx)),
                    format!("{} is outside the zone {}", record.name, self.name),
                ));
            }
            if record.ttl > MAX_TTL {
                errors.push(FieldError::new(
                    format!("{}ttl", field_of(idx)),
                    format!("TTL {} is above {MAX_TTL}", record.ttl),
                ));
            }
            if !crate::rdata::rtype_allowed(record.rtype) {
                errors.push(FieldError::new(
                    format!("{}type", field_of(idx)),
                    format!("type {} cannot be stored as a record", record.rtype),
                ));
            }
            if record.steering.is_some() && !matches!(record.rtype, Rtype::A | Rtype::AAAA) {
                errors.push(FieldError::new(
                    format!("{}steering", field_of(idx)),
                    format!(
                        "steering applies to A and AAAA records, not {}",
                        record.rtype
                    ),
                ));
            }
            let lower = record.name.to_lowercase();
            let group = match group_of.get(&lower) {
                Some(&group) => group,
                None => {
                    group_of.insert(lower, groups.len());
                    groups.push(Group {
                        first: idx,
                        ..Group::default()
                    });
                    groups.len() - 1
                }
            };
            if !seen.insert((group, record.rtype, record.rdata.as_wire())) {
                errors.push(FieldError::new(
                    format!("{}value", field_of(idx)),
                    format!(
                        "duplicate record {} {} {}",
                        record.name,
                        record.rtype,
                        record.rdata.to_text(record.rtype)
                    ),
                ));
            }
            let stats = &mut groups[group];
            stats.total += 1;
            match record.rtype {
                Rtype::CNAME => {
                    if stats.cnames == 0 {
                        stats.first_cname = idx;
                    }
                    stats.cnames += 1;
                }
                other => {
                    stats.other.get_or_insert(other);
                }
            }
            let family = match record.rtype {
                Rtype::A => Some(0),
                Rtype::AAAA => Some(1),
                _ => None,
            };
            if let Some(family) = family {
                let (count, steered, first) = &mut stats.addresses[family];
                if *count == 0 {
                    *first = idx;
                }
                *count += 1;
                *steered |= record.steering.is_some();
            }
        }
        for stats in &groups {
            let name = self.records[stats.first].name.to_lowercase();
            for (family, rtype) in [Rtype::A, Rtype::AAAA].into_iter().enumerate() {
                let (count, steered, first) = stats.addresses[family];
                if count > MAX_STEERED_RECORDS && steered {
                    errors.push(FieldError::new(
                        format!("{}steering", field_of(first)),
                        format!("{name} {rtype} has {count} records; steering handles at most {MAX_STEERED_RECORDS}"),
                    ));
                }
            }
            if stats.cnames == 0 {
                continue;
            }
            let field = field_of(stats.first_cname);
            if name.eq_ignore_case(&self.name) {
                errors.push(FieldError::new(
                    format!("{field}type"),
                    "a CNAME cannot be at the zone apex",
                ));
            } else if stats.cnames > 1 {
                errors.push(FieldError::new(
                    format!("{field}type"),
                    format!("{name} has more than one CNAME"),
                ));
            } else if stats.total > 1 {
                errors.push(FieldError::new(
                    format!("{field}type"),
                    format!(
                        "a CNAME cannot be beside other data: {name} also has {}",
                        stats.other.map(|t| t.to_string()).unwrap_or_default()
                    ),
                ));
            }
        }
        let apex_ns = self
            .records
            .iter()
            .any(|r| r.rtype == Rtype::NS && r.name.eq_ignore_case(&self.name));
        if !apex_ns {
            errors.push(FieldError::new(
                "ns",
                format!(
                    "the zone {} needs at least one NS record at its apex",
                    self.name
                ),
            ));
        }
        errors
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn serial_is_dated_and_never_goes_down() {
        assert_eq!(next_serial(1, 20261129), 2026112900);
        assert_eq!(next_serial(2026112900, 20261129), 2026112901);
        assert_eq!(next_serial(2030010100, 20261129), 2030010101);
    }

    fn zone(records: &[(&str, &str, &str)]) -> ZoneConfig {
        let name = Dname::parse_absolute("example.com").unwrap();
        let records = records
            .iter()
            .map(|(n, t, v)| {
                let rtype = crate::rdata::parse_rtype(t).unwrap();
                RecordConfig {
                    id: 0,
                    name: Dname::parse(n, &name).unwrap(),
                    rtype,
                    ttl: 300,
                    rdata: Rdata::parse(rtype, v, &name).unwrap(),
                    steering: None,
                }
            })
            .collect();
        ZoneConfig {
            id: 1,
            soa: Soa::default_for(&name, 1),
            name,
            default_ttl: 3600,
            records,
            pools: Vec::new(),
            load_balancers: Vec::new(),
        }
    }

    fn messages(zone: &ZoneConfig) -> Vec<String> {
        zone.validate(&|_| String::new())
            .iter()
            .map(|e| e.to_string())
            .collect()
    }

    #[test]
    fn cname_rules() {
        let ok = zone(&[("@", "NS", "ns1"), ("www", "CNAME", "web")]);
        assert!(messages(&ok).is_empty());
        let beside = zone(&[
            ("@", "NS", "ns1"),
            ("www", "CNAME", "web"),
            ("www", "A", "192.0.2.1"),
        ]);
        assert_eq!(
            messages(&beside),
            ["type: a CNAME cannot be beside other data: www.example.com. also has A"]
        );
        let apex = zone(&[("@", "NS", "ns1"), ("@", "CNAME", "web")]);
        assert_eq!(
            messages(&apex),
            ["type: a CNAME cannot be at the zone apex"]
        );
    }

    #[test]
    fn outside_and_missing_ns() {
        let bad = zone(&[("www.other.org.", "A", "192.0.2.1")]);
        assert_eq!(
            messages(&bad),
            [
                "name: www.other.org. is outside the zone example.com.",
                "ns: the zone example.com. needs at least one NS record at its apex"
            ]
        );
    }
}
