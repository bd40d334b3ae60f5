//! The immutable, indexed form of all zones that the query path reads.
//!
//! Built from [`ZoneConfig`]s by [`ZoneSnapshot::compile`]; a [`Snapshot`] is a set of zone
//! snapshots shared by `Arc`, so a change to one zone rebuilds only that zone. Everything a
//! query needs is precomputed here: lower-case name keys, empty non-terminals, zone cuts,
//! negative-answer SOA, and the A/AAAA records for additional-section processing.

use std::collections::HashMap;
use std::hash::BuildHasher;
use std::sync::Arc;

use foldhash::fast::{FixedState, RandomState};
use geo::{Country, Locate};
use smallvec::{SmallVec, smallvec};

pub mod image;

use crate::name::{Dname, label_offsets};
use crate::rdata::{Rdata, Rtype};
use crate::steering::Steering;
use crate::zone::{RecordConfig, ZoneConfig};

/// A map keyed by lower-case wire names; lookups take a borrowed `&[u8]`.
pub type NameMap<V> = HashMap<Box<[u8]>, V, RandomState>;

/// A zone's nodes as the query path reads them, in flat arrays built once by
/// [`ZoneSnapshot::compile`]: the owner names concatenated, the RRsets grouped by node, a
/// 16-byte [`NodeData`] per node, the rare additionals and load balancers apart in `extras`,
/// and an open-addressing table of 8-byte slots (32 bits of the hash, 32 bits of node index).
/// A heap block per name and a 96-byte node per entry cost ~149 bytes per one-record name at
/// a million names; this costs ~96 (RRset 48, node 16, name ~20, slots 12) in a handful of
/// heap blocks per zone.
#[derive(Clone, Debug, Default)]
pub struct NodeIndex {
    names: Box<[u8]>,
    /// Grouped by node, sorted by type number within a node.
    rrsets: Box<[Rrset]>,
    nodes: Box<[NodeData]>,
    extras: Box<[NodeExtra]>,
    /// `EMPTY`, or `hash >> 32 << 32 | index`. Probes start in the first `home` slots: 3/2
    /// per node, not rounded up to a power of two (2^21 at a million names); at 4/3 per node
    /// the longer probes of misses slowed NXDOMAIN answers.
    slots: Box<[u64]>,
    home: usize,
    hasher: NameHasher,
}

/// Hashes a zone's node names: seeded at random per zone, with the seed kept so that a saved
/// image's slot table is valid when it is read back.
#[derive(Clone, Debug)]
struct NameHasher {
    seed: u64,
    state: FixedState,
}

impl NameHasher {
    fn with_seed(seed: u64) -> NameHasher {
        NameHasher {
            seed,
            state: FixedState::with_seed(seed),
        }
    }

    fn hash_one(&self, key: &[u8]) -> u64 {
        self.state.hash_one(key)
    }
}

impl Default for NameHasher {
    fn default() -> NameHasher {
        NameHasher::with_seed(RandomState::default().hash_one(0u64))
    }
}

const EMPTY: u64 = u64::MAX;

/// `NodeData::extra` of a node with neither additionals nor a load balancer.
const NO_EXTRA: u32 = u32::MAX;

const IS_CUT: u8 = 1;
const BELOW_CUT: u8 = 2;

/// One node, by position in its [`NodeIndex`]'s arrays; small so a zone's nodes stay dense.
#[derive(Clone, Copy, Debug)]
pub struct NodeData {
    name: u32,
    first_rrset: u32,
    /// Index into `extras`, or `NO_EXTRA`.
    extra: u32,
    rrset_count: u16,
    name_len: u8,
    flags: u8,
}

/// What few nodes have, kept out of [`NodeData`] so the many do not pay for it.
#[derive(Clone, Debug)]
struct NodeExtra {
    /// For NS, MX and SRV RRsets: the in-zone A/AAAA of their targets, in RRset order.
    additionals: Box<[(Rtype, Box<[Additional]>)]>,
    lb: Option<Box<crate::lb::LbSnapshot>>,
}

/// Maps a 32-bit hash onto `0..len` with a multiply and a shift, so the table need not be a
/// power of two long.
fn reduce(hash: u64, len: usize) -> usize {
    (((hash & 0xffff_ffff) * len as u64) >> 32) as usize
}

/// Zones with at least this many names fill their slot table on a thread of its own.
const PARALLEL_SLOTS: usize = 100_000;

/// The slot table for nodes whose hashes are `hashes`, node `i` at the first free slot from
/// `reduce(hash, home)` on. A probe runs on past `home` instead of wrapping; the last slot stays
/// empty to end it.
fn fill_slots(hashes: &[u64], home: usize) -> Vec<u64> {
    let mut slots = vec![EMPTY; home + 1];
    for (index, &hash) in hashes.iter().enumerate() {
        let mut at = reduce(hash, home);
        while slots[at] != EMPTY {
            at += 1;
        }
        if at == slots.len() - 1 {
            slots.push(EMPTY);
        }
        slots[at] = (hash & 0xffff_ffff_0000_0000) | index as u64;
    }
    slots
}

impl NodeIndex {
    /// Flattens the nodes compile built, in the order they were added: the names are already
    /// in one arena and each name's hash is known, so this moves RRsets and fills the slots.
    pub fn build(map: NodeMap) -> NodeIndex {
        let NodeMap {
            hasher,
            mut names,
            spans,
            hashes,
            nodes: builders,
            table,
        } = map;
        drop(table);
        let rrset_total: usize = builders.iter().map(|n| n.rrsets.len()).sum();
        // Offsets and indexes are u32, and `EMPTY` must not be a node's slot.
        assert!(
            names.len() < u32::MAX as usize
                && rrset_total < u32::MAX as usize
                && builders.len() < u32::MAX as usize,
            "a zone too large for a 32-bit node index"
        );
        let mut rrsets = Vec::with_capacity(rrset_total);
        let mut nodes = Vec::with_capacity(builders.len());
        let mut extras = Vec::new();
        let home = (builders.len() * 3 / 2 + 1).max(8);
        // The slots need only the hashes: for a big zone they are filled on a second thread
        // while this one moves the RRsets (each is a pass of cache misses of its own).
        let slots = std::thread::scope(|scope| {
            let filler =
                (hashes.len() >= PARALLEL_SLOTS).then(|| scope.spawn(|| fill_slots(&hashes, home)));
            for (node, (name, name_len)) in builders.into_iter().zip(spans) {
                let extra = if node.has_extra() {
                    extras.push(NodeExtra {
                        additionals: node
                            .additionals
                            .into_iter()
                            .map(|(rtype, found)| (rtype, found.into_boxed_slice()))
                            .collect(),
                        lb: node.lb,
                    });
                    (extras.len() - 1) as u32
                } else {
                    NO_EXTRA
                };
                nodes.push(NodeData {
                    name,
                    first_rrset: rrsets.len() as u32,
                    extra,
                    rrset_count: u16::try_from(node.rrsets.len())
                        .expect("one RRset per type, and type 0 is no data type"),
                    name_len,
                    flags: if node.is_cut { IS_CUT } else { 0 }
                        | if node.below_cut { BELOW_CUT } else { 0 },
                });
                // The index never grows: give back what RRsets of several records over-reserved.
                rrsets.extend(node.rrsets.into_iter().map(|mut rrset| {
                    rrset.rdatas.shrink_to_fit();
                    rrset
                }));
            }
            match filler {
                Some(filler) => filler.join().expect("filling the slots"),
                None => fill_slots(&hashes, home),
            }
        });
        names.shrink_to_fit();
        NodeIndex {
            names: names.into_boxed_slice(),
            rrsets: rrsets.into_boxed_slice(),
            nodes: nodes.into_boxed_slice(),
            extras: extras.into_boxed_slice(),
            slots: slots.into_boxed_slice(),
            home,
            hasher,
        }
    }

    pub fn get(&self, key: &[u8]) -> Option<Node<'_>> {
        if self.slots.is_empty() {
            return None;
        }
        let hash = self.hasher.hash_one(key);
        let mut at = reduce(hash, self.home);
        loop {
            let slot = self.slots[at];
            if slot == EMPTY {
                return None;
            }
            if slot >> 32 == hash >> 32 {
                let node = self.at((slot & 0xffff_ffff) as usize);
                if node.name() == key {
                    return Some(node);
                }
            }
            at += 1;
        }
    }

    fn at(&self, index: usize) -> Node<'_> {
        Node {
            index: self,
            data: &self.nodes[index],
        }
    }
}

/// A node of a [`ZoneSnapshot`] as lookups return it: a view into its [`NodeIndex`].
#[derive(Clone, Copy)]
pub struct Node<'a> {
    index: &'a NodeIndex,
    data: &'a NodeData,
}

impl<'a> Node<'a> {
    /// The lower-case wire owner name.
    pub fn name(self) -> &'a [u8] {
        let start = self.data.name as usize;
        &self.index.names[start..start + self.data.name_len as usize]
    }

    /// Sorted by type number.
    pub fn rrsets(self) -> &'a [Rrset] {
        let start = self.data.first_rrset as usize;
        &self.index.rrsets[start..start + self.data.rrset_count as usize]
    }

    pub fn rrset(self, rtype: Rtype) -> Option<&'a Rrset> {
        self.rrsets().iter().find(|r| r.rtype == rtype)
    }

    pub fn additional(self, rtype: Rtype) -> &'a [Additional] {
        self.extra()
            .and_then(|extra| extra.additionals.iter().find(|(t, _)| *t == rtype))
            .map(|(_, found)| &found[..])
            .unwrap_or(&[])
    }

    /// A load balancer owns A, AAAA and CNAME here (SPEC §7).
    pub fn lb(self) -> Option<&'a crate::lb::LbSnapshot> {
        self.extra().and_then(|extra| extra.lb.as_deref())
    }

    /// An NS RRset below the apex: a delegation (RFC 1034 §4.2.1).
    pub fn is_cut(self) -> bool {
        self.data.flags & IS_CUT != 0
    }

    /// Strictly below a delegation: glue or occluded data, never answered authoritatively.
    pub fn below_cut(self) -> bool {
        self.data.flags & BELOW_CUT != 0
    }

    /// An empty non-terminal: the name exists only because names below it do.
    pub fn is_empty_non_terminal(self) -> bool {
        self.data.rrset_count == 0 && self.lb().is_none()
    }

    /// `NO_EXTRA` is past the end of any `extras`.
    fn extra(self) -> Option<&'a NodeExtra> {
        self.index.extras.get(self.data.extra as usize)
    }
}

impl std::fmt::Debug for Node<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Node")
            .field("name", &Dname::from_wire_unchecked(self.name()))
            .field("rrsets", &self.rrsets())
            .field("is_cut", &self.is_cut())
            .field("below_cut", &self.below_cut())
            .field("extra", &self.extra())
            .finish()
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

/// A zone's nodes while [`ZoneSnapshot::compile`] builds them: the names in one arena in the
/// order they were added, a builder and the hash of each name, and a table of node numbers
/// (4 bytes a node). The index is built from these without hashing or copying names again.
pub struct NodeMap {
    hasher: NameHasher,
    names: Vec<u8>,
    /// Offset and length of each node's name in `names`.
    spans: Vec<(u32, u8)>,
    hashes: Vec<u64>,
    nodes: Vec<NodeBuilder>,
    table: hashbrown::HashTable<u32>,
}

impl NodeMap {
    pub fn with_capacity(nodes: usize) -> NodeMap {
        NodeMap {
            hasher: NameHasher::default(),
            names: Vec::with_capacity(nodes * 20),
            spans: Vec::with_capacity(nodes),
            hashes: Vec::with_capacity(nodes),
            nodes: Vec::with_capacity(nodes),
            table: hashbrown::HashTable::with_capacity(nodes),
        }
    }

    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The lower-case wire name of node `index`.
    pub fn name(&self, index: usize) -> &[u8] {
        span_of(&self.names, self.spans[index])
    }

    pub fn node(&self, index: usize) -> &NodeBuilder {
        &self.nodes[index]
    }

    pub fn node_mut(&mut self, index: usize) -> &mut NodeBuilder {
        &mut self.nodes[index]
    }

    /// The node named `key` (lower-case wire), if there is one.
    pub fn find(&self, key: &[u8]) -> Option<usize> {
        let hash = self.hasher.hash_one(key);
        self.table
            .find(hash, |&i| self.name(i as usize) == key)
            .map(|&i| i as usize)
    }

    pub fn get(&self, key: &[u8]) -> Option<&NodeBuilder> {
        self.find(key).map(|i| &self.nodes[i])
    }

    /// The node named `key` (lower-case wire), added empty when it is new.
    pub fn entry(&mut self, key: &[u8]) -> &mut NodeBuilder {
        let hash = self.hasher.hash_one(key);
        let NodeMap {
            names,
            spans,
            hashes,
            nodes,
            table,
            ..
        } = self;
        let index = match table.find(hash, |&i| span_of(names, spans[i as usize]) == key) {
            Some(&i) => i as usize,
            None => {
                let index = nodes.len();
                table.insert_unique(hash, index as u32, |&i| hashes[i as usize]);
                spans.push((names.len() as u32, key.len() as u8));
                names.extend_from_slice(key);
                hashes.push(hash);
                nodes.push(NodeBuilder::default());
                index
            }
        };
        &mut nodes[index]
    }
}

/// The name at `(start, len)` of a name arena.
fn span_of(names: &[u8], (start, len): (u32, u8)) -> &[u8] {
    &names[start as usize..start as usize + len as usize]
}

/// One owner name of a zone while [`ZoneSnapshot::compile`] builds it; flattened into the
/// [`NodeIndex`] once complete.
#[derive(Clone, Debug, Default)]
pub struct NodeBuilder {
    /// Sorted by type number once every record is in.
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

impl NodeBuilder {
    pub fn rrset(&self, rtype: Rtype) -> Option<&Rrset> {
        self.rrsets.iter().find(|r| r.rtype == rtype)
    }

    fn has_extra(&self) -> bool {
        !self.additionals.is_empty() || self.lb.is_some()
    }
}

/// One zone, indexed for lookup; its nodes are in [`NodeIndex`]'s flat arrays.
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
        let mut builder = ZoneBuilder::new(zone, zone.records.len());
        for record in &zone.records {
            builder.add(record);
        }
        builder.finish(zone)
    }

    pub fn node(&self, lower_name: &[u8]) -> Option<Node<'_>> {
        self.nodes.get(lower_name)
    }
}

/// A [`ZoneSnapshot`] being built record by record, so that a load can compile one page of
/// records while the next is read.
pub struct ZoneBuilder {
    apex: Dname,
    soa: Rrset,
    negative_soa: Rrset,
    nodes: NodeMap,
    /// The lower-case name of the record being added.
    key: Vec<u8>,
}

impl ZoneBuilder {
    /// Starts from `zone`'s settings (its `records` are not read); `records` is how many will
    /// be added, to size the node map once.
    pub fn new(zone: &ZoneConfig, records: usize) -> ZoneBuilder {
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
        let mut nodes = NodeMap::with_capacity(records + 1);
        nodes.entry(apex.as_wire()).rrsets.push(soa.clone());
        ZoneBuilder {
            apex,
            soa,
            negative_soa,
            nodes,
            key: Vec::with_capacity(255),
        }
    }

    /// Adds one record of a validated zone.
    pub fn add(&mut self, record: &RecordConfig) {
        let ZoneBuilder {
            apex, nodes, key, ..
        } = self;
        key.clear();
        key.extend(record.name.as_wire().iter().map(u8::to_ascii_lowercase));
        // Empty non-terminals: every name between the record and the apex exists. Names are
        // in the zone (validated), so a suffix longer than the apex is strictly below it.
        for start in label_offsets(key).skip(1) {
            let name = &key[start..];
            if name.len() <= apex.as_wire().len() {
                break;
            }
            nodes.entry(name);
        }
        let node = nodes.entry(key);
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

    /// Completes the snapshot: load balancers (from `zone`), zone cuts, additional-section
    /// data, and the flat index.
    pub fn finish(self, zone: &ZoneConfig) -> ZoneSnapshot {
        let ZoneBuilder {
            apex,
            soa,
            negative_soa,
            mut nodes,
            ..
        } = self;
        crate::lb::compile_into(zone, &apex, &mut nodes);
        // Zone cuts, then what lies below them.
        let mut has_cuts = false;
        for index in 0..nodes.len() {
            let node = nodes.node_mut(index);
            node.rrsets.sort_by_key(|r| r.rtype.to_int());
            if node.rrset(Rtype::NS).is_some() && nodes.name(index) != apex.as_wire() {
                nodes.node_mut(index).is_cut = true;
                has_cuts = true;
            }
        }
        if has_cuts {
            // Every name between a node and the apex is a node too (empty non-terminals), so
            // a node's ancestors are looked up, not compared with every cut: a zone of many
            // delegations is not quadratic.
            for index in 0..nodes.len() {
                let key = nodes.name(index);
                let below = label_offsets(key)
                    .skip(1)
                    .map(|start| &key[start..])
                    .take_while(|ancestor| ancestor.len() > apex.as_wire().len())
                    .any(|ancestor| nodes.find(ancestor).is_some_and(|i| nodes.node(i).is_cut));
                nodes.node_mut(index).below_cut = below;
            }
        }
        // Additional-section data (RFC 1034 §3.6.2 / RFC 2782): in-zone A and AAAA of targets.
        let mut additionals: Vec<(usize, Rtype, Vec<Additional>)> = Vec::new();
        for index in 0..nodes.len() {
            let node = nodes.node(index);
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
                    additionals.push((index, rrset.rtype, found));
                }
            }
        }
        for (index, rtype, found) in additionals {
            nodes.node_mut(index).additionals.push((rtype, found));
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

    /// The zone whose apex is `lower_apex` (lower-case wire).
    pub fn zone(&self, lower_apex: &[u8]) -> Option<&Arc<ZoneSnapshot>> {
        self.zones.get(lower_apex)
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::lb::{LbConfig, OriginConfig, PoolConfig};

    const ZONE: &str = r#"
$ORIGIN example.com.
@        3600 IN SOA   ns1 hostmaster 1 7200 3600 1209600 300
@        3600 IN NS    ns1
@        3600 IN MX    10 mail
ns1      3600 IN A     192.0.2.1
ns1      3600 IN AAAA  2001:db8::1
mail     3600 IN A     192.0.2.25
www      3600 IN TXT   "web"
www      3600 IN AAAA  2001:db8::80
www      3600 IN A     192.0.2.80
a.b.c    3600 IN TXT   "deep"
sub      3600 IN NS    ns.sub
ns.sub   3600 IN A     192.0.2.53
x.y.sub  3600 IN TXT   "occluded"
in.sub   3600 IN NS    ns.sub
xsub     3600 IN TXT   "not below sub"
"#;

    fn name(text: &str) -> Dname {
        Dname::parse_absolute(text).unwrap()
    }

    fn compile() -> ZoneSnapshot {
        let origin = name("example.com");
        let parsed = crate::zonefile::parse(ZONE, &origin, 3600).expect("zone parses");
        let mut zone = parsed.into_zone(origin).expect("SOA");
        add_load_balancer(&mut zone);
        assert_eq!(zone.validate(&|_| String::new()), []);
        ZoneSnapshot::compile(&zone)
    }

    /// A pool `web` of one origin, 192.0.2.9, and a load balancer at `lb.<zone>` over it.
    pub(crate) fn add_load_balancer(zone: &mut ZoneConfig) {
        let pool = PoolConfig {
            id: 0,
            name: "web".into(),
            enabled: true,
            algorithm: Default::default(),
            location: None,
            origins: vec![OriginConfig {
                id: 0,
                address: "192.0.2.9".parse().unwrap(),
                enabled: true,
                weight: 1,
                priority: 1,
                check: None,
            }],
        };
        let lb = LbConfig {
            id: 0,
            name: Dname::parse("lb", &zone.name).unwrap(),
            enabled: true,
            ttl: 30,
            pools: vec!["web".into()],
            rules: Vec::new(),
            fallback: None,
            steering: Default::default(),
            locate_by: Default::default(),
            affinity: Default::default(),
        };
        zone.pools = vec![pool];
        zone.load_balancers = vec![lb];
    }

    fn types(node: Node<'_>) -> Vec<Rtype> {
        node.rrsets().iter().map(|r| r.rtype).collect()
    }

    fn owners(found: &[Additional]) -> Vec<(String, Rtype)> {
        found
            .iter()
            .map(|a| (a.owner.to_string(), a.rrset.rtype))
            .collect()
    }

    #[test]
    fn nodes_are_viewed_from_the_flat_arrays() {
        assert_eq!(size_of::<NodeData>(), 16);
        let zone = compile();
        let node = |text: &str| zone.node(name(text).as_wire()).expect(text);

        let apex = node("example.com");
        assert_eq!(apex.name(), name("example.com").as_wire());
        assert_eq!(types(apex), [Rtype::NS, Rtype::SOA, Rtype::MX]);
        assert_eq!(
            owners(apex.additional(Rtype::MX)),
            [("mail.example.com.".to_string(), Rtype::A)]
        );
        assert_eq!(
            owners(apex.additional(Rtype::NS)),
            [
                ("ns1.example.com.".to_string(), Rtype::A),
                ("ns1.example.com.".to_string(), Rtype::AAAA)
            ]
        );
        assert!(apex.additional(Rtype::SOA).is_empty());
        assert!(!apex.is_cut() && !apex.below_cut() && apex.lb().is_none());

        let www = node("www.example.com");
        assert_eq!(types(www), [Rtype::A, Rtype::TXT, Rtype::AAAA]);
        assert_eq!(www.rrset(Rtype::TXT).unwrap().rdatas.len(), 1);
        assert!(www.rrset(Rtype::MX).is_none());
        assert!(www.additional(Rtype::A).is_empty() && www.lb().is_none());

        for ent in ["c.example.com", "b.c.example.com"] {
            let ent = node(ent);
            assert!(ent.is_empty_non_terminal() && ent.rrsets().is_empty());
        }
        assert!(!node("a.b.c.example.com").is_empty_non_terminal());

        let sub = node("sub.example.com");
        assert!(sub.is_cut() && !sub.below_cut());
        assert_eq!(types(sub), [Rtype::NS]);
        assert_eq!(
            owners(sub.additional(Rtype::NS)),
            [("ns.sub.example.com.".to_string(), Rtype::A)]
        );
        let glue = node("ns.sub.example.com");
        assert!(glue.below_cut() && !glue.is_cut());
        // Everything under the cut, however deep, empty non-terminals and a cut below the cut
        // included; a name that only ends in the same letters is not under it.
        for under in [
            "x.y.sub.example.com",
            "y.sub.example.com",
            "in.sub.example.com",
        ] {
            assert!(node(under).below_cut(), "{under}");
        }
        assert!(node("in.sub.example.com").is_cut());
        assert!(!node("xsub.example.com").below_cut());

        let lb = node("lb.example.com");
        assert!(lb.lb().is_some_and(|lb| lb.ttl == 30));
        assert!(lb.rrsets().is_empty() && !lb.is_empty_non_terminal());

        assert!(zone.node(name("nope.example.com").as_wire()).is_none());
        assert!(zone.node(name("WWW.example.com").as_wire()).is_none());
        assert!(zone.node(name("www.example.org").as_wire()).is_none());
        assert!(
            NodeIndex::default()
                .get(name("example.com").as_wire())
                .is_none()
        );
    }

    #[test]
    fn every_node_is_found_by_its_name() {
        let zone = compile();
        let index = &zone.nodes;
        // 10 names with records, 3 empty non-terminals and the load balancer.
        assert_eq!(index.nodes.len(), 14);
        assert_eq!(index.rrsets.len(), 15);
        // Additionals at the apex, sub and in.sub; the load balancer.
        assert_eq!(index.extras.len(), 4);
        assert!(index.home > index.nodes.len() * 3 / 2);
        assert_eq!(index.slots.last(), Some(&EMPTY));
        for at in 0..index.nodes.len() {
            let node = index.at(at);
            let found = index.get(node.name()).expect("found");
            assert!(std::ptr::eq(found.data, node.data));
        }
    }

    #[test]
    fn a_big_index_fills_its_slots_on_a_second_thread_alike() {
        let count = PARALLEL_SLOTS + 7;
        let mut map = NodeMap::with_capacity(count);
        for i in 0..count {
            let text = format!("n{i}.example.com");
            map.entry(name(&text).as_wire());
        }
        let index = NodeIndex::build(map);
        assert_eq!(index.nodes.len(), count);
        // The same table the one-thread path fills, from the same hashes in node order.
        let hashes: Vec<u64> = (0..count)
            .map(|at| index.hasher.hash_one(index.at(at).name()))
            .collect();
        assert!(*fill_slots(&hashes, index.home) == *index.slots);
        for at in (0..count).step_by(97) {
            let node = index.at(at);
            assert!(std::ptr::eq(
                index.get(node.name()).expect("found").data,
                node.data
            ));
        }
    }
}
