//! The immutable, indexed form of all zones that the query path reads.
//!
//! Built from [`ZoneConfig`]s by [`ZoneSnapshot::compile`]; a [`Snapshot`] is a set of zone
//! snapshots shared by `Arc`, so a change to one zone rebuilds only that zone. Everything a
//! query needs is precomputed here: lower-case name keys, empty non-terminals, zone cuts,
//! negative-answer SOA, and the A/AAAA records for additional-section processing.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;

use foldhash::fast::RandomState;
use geo::{Country, Locate};
use smallvec::{SmallVec, smallvec};

use crate::name::{Dname, label_offsets};
use crate::rdata::{Rdata, Rtype};
use crate::steering::Steering;
use crate::zone::ZoneConfig;

/// A map keyed by lower-case wire names; lookups take a borrowed `&[u8]`.
pub type NameMap<V> = HashMap<Box<[u8]>, V, RandomState>;

/// A zone's nodes as the query path reads them: the entries in one exact-size array and an
/// open-addressing table of 8-byte slots (32 bits of the hash, 32 bits of index). A `HashMap`
/// of the same entries rounds its buckets up to a power of two of entry size: at a million
/// names that alone was ~170 bytes per name, here it is ~16.
#[derive(Clone, Debug, Default)]
pub struct NodeIndex {
    entries: Box<[(Box<[u8]>, Node)]>,
    /// `EMPTY`, or `hash >> 32 << 32 | index`; length a power of two, at most 3/4 full.
    slots: Box<[u64]>,
    hasher: RandomState,
}

const EMPTY: u64 = u64::MAX;

impl NodeIndex {
    pub fn build(map: NameMap<Node>) -> NodeIndex {
        let hasher = RandomState::default();
        let entries: Box<[(Box<[u8]>, Node)]> = map.into_iter().collect();
        let size = (entries.len() * 4 / 3 + 1).next_power_of_two().max(8);
        let mut slots = vec![EMPTY; size].into_boxed_slice();
        let mask = size - 1;
        for (index, (key, _)) in entries.iter().enumerate() {
            let hash = hasher.hash_one(&key[..]);
            let mut at = hash as usize & mask;
            while slots[at] != EMPTY {
                at = (at + 1) & mask;
            }
            slots[at] = (hash & 0xffff_ffff_0000_0000) | index as u64;
        }
        NodeIndex {
            entries,
            slots,
            hasher,
        }
    }

    pub fn get_key_value(&self, key: &[u8]) -> Option<(&[u8], &Node)> {
        if self.entries.is_empty() {
            return None;
        }
        let hash = self.hasher.hash_one(key);
        let mask = self.slots.len() - 1;
        let mut at = hash as usize & mask;
        loop {
            let slot = self.slots[at];
            if slot == EMPTY {
                return None;
            }
            if slot >> 32 == hash >> 32 {
                let (k, node) = &self.entries[(slot & 0xffff_ffff) as usize];
                if &k[..] == key {
                    return Some((k, node));
                }
            }
            at = (at + 1) & mask;
        }
    }

    pub fn get(&self, key: &[u8]) -> Option<&Node> {
        self.get_key_value(key).map(|(_, node)| node)
    }
}

/// All zones being served, with the health of their checks and the GeoIP database: everything
/// an answer depends on, swapped as one.
#[derive(Clone)]
pub struct Snapshot {
    zones: NameMap<Arc<ZoneSnapshot>>,
    /// CH TXT answers about the server itself, off unless configured.
    pub chaos: Arc<Chaos>,
    pub health: Arc<HealthTable>,
    pub geo: Arc<dyn Locate>,
    /// This server's point of presence, where load balancers locate clients by PoP.
    pub pop: Arc<Pop>,
    /// Label counts of the zone apexes, so a zone search tries only lengths that exist.
    max_zone_labels: usize,
}

/// The answering point of presence (`--pop`, `--pop-country`, `--pop-continent`,
/// `--pop-location`): where load balancers that locate clients by PoP take them to be.
#[derive(Clone, Debug, Default)]
pub struct Pop {
    /// Lower case.
    pub name: Option<Box<str>>,
    pub country: Option<Country>,
    pub continent: Option<geo::Continent>,
    pub location: Option<crate::lb::Coordinates>,
}

/// CH-class TXT answers (`version.bind`, `id.server`, `hostname.bind`, `version.server`).
#[derive(Clone, Debug, Default)]
pub struct Chaos {
    pub names: Vec<(Box<[u8]>, Rrset)>,
}

impl Chaos {
    pub fn new(version: Option<&str>, id: Option<&str>) -> Chaos {
        let txt = |text: &str| {
            // One character-string of at most 255 bytes (RFC 1035 §3.3.14).
            let bytes = &text.as_bytes()[..text.len().min(255)];
            let mut wire = Vec::with_capacity(bytes.len() + 1);
            wire.push(bytes.len() as u8);
            wire.extend_from_slice(bytes);
            Rrset {
                rtype: Rtype::TXT,
                ttl: 0,
                rdatas: smallvec![Rdata::new(&wire)],
                steered: None,
            }
        };
        let mut names = Vec::new();
        for (name, value) in [
            ("version.bind.", version),
            ("version.server.", version),
            ("id.server.", id),
            ("hostname.bind.", id),
        ] {
            if let (Some(value), Ok(name)) = (value, Dname::parse_absolute(name)) {
                names.push((name.as_wire().into(), txt(value)));
            }
        }
        Chaos { names }
    }

    pub fn find(&self, lower_name: &[u8]) -> Option<&Rrset> {
        self.names
            .iter()
            .find(|(n, _)| &n[..] == lower_name)
            .map(|(_, r)| r)
    }
}

/// One RRset: records of one name and type.
#[derive(Clone, Debug)]
pub struct Rrset {
    pub rtype: Rtype,
    /// RFC 2181 §5.2: one TTL per RRset; the lowest of the records is used.
    pub ttl: u32,
    /// Most RRsets hold one record: it lives inline.
    pub rdatas: SmallVec<[Rdata; 1]>,
    /// Steering of an A or AAAA RRset, one member per rdata; `None` when no record is steered.
    pub steered: Option<Box<Steered>>,
}

/// The steering of one record, compiled for the answer path.
#[derive(Clone, Debug, Default)]
pub struct SteeredMember {
    pub countries: Box<[Country]>,
    /// Bit `Continent::index()` set for each continent.
    pub continents: u8,
    pub weight: Option<u32>,
    pub backup: bool,
    /// The health check's key in [`HealthTable`], when the record has a check.
    pub check: Option<u64>,
}

impl SteeredMember {
    pub fn has_place(&self) -> bool {
        !self.countries.is_empty() || self.continents != 0
    }

    fn new(steering: &Steering, check: Option<u64>) -> SteeredMember {
        SteeredMember {
            countries: steering.countries.clone().into_boxed_slice(),
            continents: steering
                .continents
                .iter()
                .fold(0u8, |bits, c| bits | 1 << c.index()),
            weight: steering.weight,
            backup: steering.backup,
            check,
        }
    }
}

/// A steered RRset's members and what they use, so the answer path skips what is unused.
#[derive(Clone, Debug, Default)]
pub struct Steered {
    pub members: Vec<SteeredMember>,
    pub has_place: bool,
    pub has_weight: bool,
}

/// Checks that are failing now, by check key. Everything else (up, unknown, unchecked) counts
/// as healthy (SPEC §5).
#[derive(Clone, Debug, Default)]
pub struct HealthTable {
    pub failing: std::collections::HashSet<u64, RandomState>,
}

impl HealthTable {
    pub fn is_failing(&self, key: u64) -> bool {
        !self.failing.is_empty() && self.failing.contains(&key)
    }
}

/// Records for additional-section processing: the A and AAAA RRsets of a target name.
#[derive(Clone, Debug)]
pub struct Additional {
    pub owner: Dname,
    pub rrset: Rrset,
}

/// One owner name of a zone.
#[derive(Clone, Debug, Default)]
pub struct Node {
    /// Sorted by type number.
    pub rrsets: SmallVec<[Rrset; 1]>,
    /// For NS, MX and SRV RRsets: the in-zone A/AAAA of their targets, in RRset order.
    pub additionals: Vec<(Rtype, Vec<Additional>)>,
    /// An NS RRset below the apex: a delegation (RFC 1034 §4.2.1).
    pub is_cut: bool,
    /// Strictly below a delegation: glue or occluded data, never answered authoritatively.
    pub below_cut: bool,
    /// A load balancer owns A, AAAA and CNAME here (SPEC §7).
    pub lb: Option<Box<crate::lb::LbSnapshot>>,
}

impl Node {
    pub fn rrset(&self, rtype: Rtype) -> Option<&Rrset> {
        self.rrsets.iter().find(|r| r.rtype == rtype)
    }

    pub fn additional(&self, rtype: Rtype) -> &[Additional] {
        self.additionals
            .iter()
            .find(|(t, _)| *t == rtype)
            .map(|(_, a)| a.as_slice())
            .unwrap_or(&[])
    }

    /// An empty non-terminal: the name exists only because names below it do.
    pub fn is_empty_non_terminal(&self) -> bool {
        self.rrsets.is_empty() && self.lb.is_none()
    }
}

/// One zone, indexed for lookup.
#[derive(Clone, Debug)]
pub struct ZoneSnapshot {
    /// Lower-case apex.
    pub apex: Dname,
    /// The SOA RRset as answered to SOA queries.
    pub soa: Rrset,
    /// The SOA RRset for negative answers: TTL = min(SOA TTL, MINIMUM) (RFC 2308 §3).
    pub negative_soa: Rrset,
    pub nodes: NodeIndex,
    pub has_cuts: bool,
    pub serial: u32,
    pub apex_labels: u8,
}

impl ZoneSnapshot {
    /// Indexes a validated zone.
    pub fn compile(zone: &ZoneConfig) -> ZoneSnapshot {
        let apex = zone.name.to_lowercase();
        let soa_rdata = zone.soa.to_rdata();
        let soa = Rrset {
            rtype: Rtype::SOA,
            ttl: zone.default_ttl,
            rdatas: smallvec![soa_rdata.clone()],
            steered: None,
        };
        let negative_soa = Rrset {
            rtype: Rtype::SOA,
            ttl: zone.default_ttl.min(zone.soa.minimum),
            rdatas: smallvec![soa_rdata],
            steered: None,
        };
        let mut nodes: NameMap<Node> =
            NameMap::with_capacity_and_hasher(zone.records.len() + 1, RandomState::default());
        let mut apex_node = Node::default();
        apex_node.rrsets.push(soa.clone());
        nodes.insert(apex.as_wire().into(), apex_node);
        for record in &zone.records {
            let key = record.name.to_lowercase();
            // Empty non-terminals: every name between the record and the apex exists.
            let mut parent = key.parent();
            while let Some(name) = parent {
                if name.label_count() <= apex.label_count() {
                    break;
                }
                nodes.entry(name.as_wire().into()).or_default();
                parent = name.parent();
            }
            let node = match nodes.get_mut(key.as_wire()) {
                Some(node) => node,
                None => nodes.entry(key.into_wire()).or_default(),
            };
            let rrset = match node.rrsets.iter().position(|r| r.rtype == record.rtype) {
                Some(idx) => &mut node.rrsets[idx],
                None => {
                    node.rrsets.push(Rrset {
                        rtype: record.rtype,
                        ttl: record.ttl,
                        rdatas: SmallVec::new(),
                        steered: None,
                    });
                    let last = node.rrsets.len() - 1;
                    &mut node.rrsets[last]
                }
            };
            rrset.ttl = rrset.ttl.min(record.ttl);
            if let Some(steering) = &record.steering {
                let existing = rrset.rdatas.len();
                let steered = rrset.steered.get_or_insert_with(|| {
                    Box::new(Steered {
                        members: vec![SteeredMember::default(); existing],
                        ..Default::default()
                    })
                });
                let check = steering
                    .check
                    .as_ref()
                    .map(|check| check.key(&record.name, &record.rdata));
                let member = SteeredMember::new(steering, check);
                steered.has_place |= member.has_place();
                steered.has_weight |= member.weight.is_some();
                steered.members.push(member);
            } else if let Some(steered) = &mut rrset.steered {
                steered.members.push(SteeredMember::default());
            }
            rrset.rdatas.push(record.rdata.clone());
        }
        crate::lb::compile_into(zone, &apex, &mut nodes);
        // Zone cuts, then what lies below them.
        let mut cuts: Vec<Box<[u8]>> = Vec::new();
        for (key, node) in nodes.iter_mut() {
            node.rrsets.sort_by_key(|r| r.rtype.to_int());
            if &key[..] != apex.as_wire() && node.rrset(Rtype::NS).is_some() {
                node.is_cut = true;
                cuts.push(key.clone());
            }
        }
        let has_cuts = !cuts.is_empty();
        if has_cuts {
            let keys: Vec<Box<[u8]>> = nodes.keys().cloned().collect();
            for key in keys {
                let below = cuts.iter().any(|cut| {
                    key.len() > cut.len()
                        && key.ends_with(cut)
                        && label_offsets(&key).any(|o| o == key.len() - cut.len())
                });
                if below && let Some(node) = nodes.get_mut(&key) {
                    node.below_cut = true;
                }
            }
        }
        // Additional-section data (RFC 1034 §3.6.2 / RFC 2782): in-zone A and AAAA of targets.
        let mut additionals: Vec<(Box<[u8]>, Rtype, Vec<Additional>)> = Vec::new();
        for (key, node) in nodes.iter() {
            for rrset in &node.rrsets {
                if !matches!(rrset.rtype, Rtype::NS | Rtype::MX | Rtype::SRV) {
                    continue;
                }
                let mut found = Vec::new();
                for rdata in &rrset.rdatas {
                    let Some(target) = rdata.target(rrset.rtype) else {
                        continue;
                    };
                    let target_key = target.to_lowercase();
                    let Some(target_node) = nodes.get(target_key.as_wire()) else {
                        continue;
                    };
                    // Data below a cut is only glue for that cut's own NS RRset.
                    if target_node.below_cut && rrset.rtype != Rtype::NS {
                        continue;
                    }
                    for rtype in [Rtype::A, Rtype::AAAA] {
                        if let Some(address) = target_node.rrset(rtype) {
                            found.push(Additional {
                                owner: target_key.clone(),
                                rrset: address.clone(),
                            });
                        }
                    }
                }
                if !found.is_empty() {
                    additionals.push((key.clone(), rrset.rtype, found));
                }
            }
        }
        for (key, rtype, found) in additionals {
            if let Some(node) = nodes.get_mut(&key) {
                node.additionals.push((rtype, found));
            }
        }
        // The snapshot never grows: give back what RRsets of several records over-reserved.
        for node in nodes.values_mut() {
            node.rrsets.shrink_to_fit();
            node.additionals.shrink_to_fit();
            for rrset in &mut node.rrsets {
                rrset.rdatas.shrink_to_fit();
            }
        }
        let apex_labels = apex.label_count() as u8;
        ZoneSnapshot {
            apex,
            soa,
            negative_soa,
            nodes: NodeIndex::build(nodes),
            has_cuts,
            serial: zone.soa.serial,
            apex_labels,
        }
    }

    pub fn node(&self, lower_name: &[u8]) -> Option<&Node> {
        self.nodes.get(lower_name)
    }
}

impl Default for Snapshot {
    fn default() -> Snapshot {
        Snapshot {
            zones: NameMap::default(),
            chaos: Arc::default(),
            health: Arc::default(),
            geo: Arc::new(geo::NoGeo),
            pop: Arc::default(),
            max_zone_labels: 0,
        }
    }
}

impl Snapshot {
    pub fn empty() -> Snapshot {
        Snapshot::default()
    }

    /// A new snapshot with another GeoIP database.
    pub fn with_geo(&self, geo: Arc<dyn Locate>) -> Snapshot {
        Snapshot {
            geo,
            ..self.clone()
        }
    }

    /// A new snapshot with another PoP.
    pub fn with_pop(&self, pop: Arc<Pop>) -> Snapshot {
        Snapshot {
            pop,
            ..self.clone()
        }
    }

    /// A new snapshot with other health states.
    pub fn with_health(&self, health: Arc<HealthTable>) -> Snapshot {
        Snapshot {
            health,
            ..self.clone()
        }
    }

    /// A new snapshot with `zone` added or replaced.
    pub fn with_zone(&self, zone: Arc<ZoneSnapshot>) -> Snapshot {
        let mut next = self.clone();
        next.zones.insert(zone.apex.as_wire().into(), zone);
        next.recount();
        next
    }

    /// A new snapshot with other CH TXT answers.
    pub fn with_chaos(&self, chaos: Arc<Chaos>) -> Snapshot {
        Snapshot {
            chaos,
            ..self.clone()
        }
    }

    /// A new snapshot without the zone named `apex`.
    pub fn without_zone(&self, apex: &Dname) -> Snapshot {
        let mut next = self.clone();
        next.zones.remove(apex.to_lowercase().as_wire());
        next.recount();
        next
    }

    fn recount(&mut self) {
        self.max_zone_labels = self
            .zones
            .values()
            .map(|z| z.apex.label_count())
            .max()
            .unwrap_or(0);
    }

    pub fn zones(&self) -> impl Iterator<Item = &Arc<ZoneSnapshot>> {
        self.zones.values()
    }

    /// The most specific zone that holds a lower-case wire name, given the offsets of its
    /// labels: the closest enclosing zone wins, as with sub-zones served by the same server.
    pub fn find_zone_by_labels(
        &self,
        lower_qname: &[u8],
        label_starts: &[u8],
    ) -> Option<&ZoneSnapshot> {
        let skip = label_starts.len().saturating_sub(self.max_zone_labels);
        for &start in &label_starts[skip..] {
            if let Some(zone) = self.zones.get(&lower_qname[start as usize..]) {
                return Some(zone);
            }
        }
        None
    }
}
