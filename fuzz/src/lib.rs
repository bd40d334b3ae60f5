//! The shared body of the fuzz targets and their stable-toolchain replayer. `query`: one
//! snapshot built once, and a check that runs a packet through `answer::respond` over UDP and
//! TCP and asserts the response is sane. `image`: an input read as a zone image, and every zone
//! read answering a fixed set of queries through the same check. `zonefile`: an input parsed
//! as a zone file; its records must print and parse back, and a valid zone answers a fixed set
//! of queries through the same check.

use std::io::Cursor;
use std::sync::Arc;

use answer::{Outcome, Transport};
use domain::base::Message;
use model::snapshot::{Chaos, image};
use model::steering::{SteeringSpec, Validate as _};
use model::{Dname, Rdata, RecordConfig, Rtype, Snapshot, Soa, ZoneConfig, ZoneSnapshot};

/// A small zone touching every answer path: apex data, A/AAAA, CNAME chains and a loop, a
/// wildcard, an empty non-terminal, a delegation with glue, MX/SRV additionals, big TXT sets
/// for truncation, and an unknown type.
const ZONE: &str = r#"$ORIGIN example.com.
$TTL 300
@         IN SOA ns1 hostmaster 2024010101 3600 600 1209600 60
@         IN NS  ns1
@         IN NS  ns2.example.net.
@         IN MX  10 mail
@         IN TXT "v=spf1 mx -all"
@         IN A   192.0.2.1
@         IN CAA 0 issue "letsencrypt.org"
ns1       IN A   192.0.2.53
ns1       IN AAAA 2001:db8::53
mail      IN A   192.0.2.25
www       IN A   192.0.2.30
www       IN AAAA 2001:db8::30
api       IN CNAME www
chain     IN CNAME api
out       IN CNAME www.example.net.
loop1     IN CNAME loop2
loop2     IN CNAME loop1
*.dev     IN A   203.0.113.7
*.dev     IN TXT "wild"
a.b.c.ent IN A   192.0.2.77
sub       IN NS  ns.sub
sub       IN NS  ns.elsewhere.net.
ns.sub    IN A   192.0.2.99
_sip._udp IN SRV 0 5 5060 www
ptr       IN PTR www
odd       IN TYPE999 \# 4 0a000001
"#;

/// Records that push responses past 512 and 1232 bytes.
fn big_txt() -> String {
    let mut text = String::new();
    for i in 0..40 {
        text.push_str(&format!("big IN TXT \"{i:02} {}\"\n", "x".repeat(60)));
    }
    for i in 0..30 {
        text.push_str(&format!("many IN A 198.51.100.{i}\n"));
    }
    text
}

/// A sub-zone served next to its parent, so the closest enclosing zone is chosen.
const SUB_ZONE: &str = r#"$ORIGIN deep.example.com.
$TTL 60
@   IN SOA ns1.example.com. hostmaster.example.com. 7 3600 600 1209600 30
@   IN NS  ns1.example.com.
x   IN A   192.0.2.200
"#;

fn zone_config(origin: &str, text: &str) -> ZoneConfig {
    let name = Dname::parse_absolute(origin).expect("zone name");
    let parsed = model::zonefile::parse(text, &name, 300).expect("fuzz zone parses");
    let (soa, default_ttl) = parsed.soa.expect("fuzz zone has an SOA");
    ZoneConfig {
        id: 1,
        name,
        soa,
        default_ttl,
        records: parsed.records,
        pools: Vec::new(),
        load_balancers: Vec::new(),
    }
}

fn compile_config(zone: &ZoneConfig) -> Arc<ZoneSnapshot> {
    let errors = zone.validate(&|_| String::new());
    assert!(errors.is_empty(), "fuzz zone is invalid: {errors:?}");
    Arc::new(ZoneSnapshot::compile(zone))
}

fn compile(origin: &str, text: &str) -> Arc<ZoneSnapshot> {
    compile_config(&zone_config(origin, text))
}

fn main_zone() -> Arc<ZoneSnapshot> {
    compile("example.com", &format!("{ZONE}{}", big_txt()))
}

/// The snapshot every input is answered from.
pub fn snapshot() -> Snapshot {
    Snapshot::empty()
        .with_zone(main_zone())
        .with_zone(compile("deep.example.com", SUB_ZONE))
        .with_chaos(Arc::new(Chaos::new(Some("dnz-fuzz"), Some("fuzz-1"))))
}

/// Answers `data` over UDP and TCP and checks both outcomes. Panics on anything wrong.
pub fn check(snapshot: &Snapshot, data: &[u8], out: &mut Vec<u8>) {
    check_transports(snapshot, data, out, false);
}

/// `check`; with `tcp_may_truncate`, TC over TCP is allowed (an image may hold an RRset that
/// does not fit in 65535 bytes, as any zone may; the fuzz zone has none).
fn check_transports(snapshot: &Snapshot, data: &[u8], out: &mut Vec<u8>, tcp_may_truncate: bool) {
    for transport in [Transport::Udp, Transport::Tcp] {
        let outcome = answer::respond(snapshot, data, transport, out);
        check_one(data, transport, outcome, out, tcp_may_truncate);
    }
}

fn check_one(
    data: &[u8],
    transport: Transport,
    outcome: Outcome,
    out: &[u8],
    tcp_may_truncate: bool,
) {
    if outcome == Outcome::Drop {
        assert!(out.is_empty(), "a drop left {} bytes", out.len());
        // Only packets without a header, and responses, are dropped.
        assert!(
            data.len() < 12 || data[2] & 0x80 != 0,
            "dropped a readable query"
        );
        return;
    }
    assert!(out.len() >= 12, "response of {} bytes", out.len());
    assert!(out.len() <= 65535, "response of {} bytes", out.len());
    if transport == Transport::Udp {
        // Our UDP size caps every UDP response (RFC 6891 §6.2.5); 512 without EDNS.
        assert!(
            out.len() <= answer::OUR_UDP_SIZE as usize,
            "UDP response of {} bytes",
            out.len()
        );
    }
    assert!(data.len() >= 12, "answered a packet without a header");
    assert_eq!(out[..2], data[..2], "id not echoed");
    assert!(out[2] & 0x80 != 0, "QR not set");
    assert_eq!(out[2] & 0x78, data[2] & 0x78, "opcode not echoed");
    assert_eq!(out[3] & 0x80, 0, "RA set");
    if let Outcome::Respond { truncated, .. } = outcome {
        assert_eq!(out[2] & 0x02 != 0, truncated, "TC bit and outcome disagree");
        if transport == Transport::Tcp && !tcp_may_truncate {
            assert!(!truncated, "truncated over TCP");
        }
    }
    // The response must be a well-formed message: every section and record parses.
    let message = Message::from_slice(out).expect("response parses");
    let counts = message.header_counts();
    assert!(counts.qdcount() <= 1, "more than one question echoed");
    let mut questions = 0;
    for question in message.question() {
        question.expect("echoed question parses");
        questions += 1;
    }
    assert_eq!(questions, counts.qdcount(), "question count");
    let mut records = 0u32;
    let mut section = message.answer().expect("answer section");
    loop {
        for record in &mut section {
            let record = record.expect("record parses");
            record
                .to_record::<domain::base::rdata::UnknownRecordData<&[u8]>>()
                .expect("record data parses");
            records += 1;
        }
        match section.next_section() {
            Ok(Some(next)) => section = next,
            Ok(None) => break,
            Err(e) => panic!("section: {e}"),
        }
    }
    assert_eq!(
        records,
        u32::from(counts.ancount()) + u32::from(counts.nscount()) + u32::from(counts.arcount()),
        "record count"
    );
}

/// xorshift64*: deterministic inputs for the replayer.
pub struct Rng(pub u64);

impl Rng {
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: usize) -> usize {
        (self.next_u64() % n as u64) as usize
    }

    pub fn byte(&mut self) -> u8 {
        self.next_u64() as u8
    }
}

const NAMES: &[&str] = &[
    "example.com",
    "www.example.com",
    "WwW.ExAmPlE.cOm",
    "api.example.com",
    "chain.example.com",
    "out.example.com",
    "loop1.example.com",
    "x.dev.example.com",
    "a.b.dev.example.com",
    "c.ent.example.com",
    "ent.example.com",
    "sub.example.com",
    "x.sub.example.com",
    "ns.sub.example.com",
    "_sip._udp.example.com",
    "ptr.example.com",
    "odd.example.com",
    "big.example.com",
    "many.example.com",
    "nope.example.com",
    "deep.example.com",
    "x.deep.example.com",
    "example.org",
    "",
    "version.bind",
    "id.server",
];

const TYPES: &[u16] = &[
    1, 28, 2, 5, 6, 12, 15, 16, 33, 65, 999, 257, 255, 252, 251, 41, 0, 99,
];

/// Appends a name in wire form.
fn push_name(out: &mut Vec<u8>, name: &str) {
    for label in name.split('.').filter(|l| !l.is_empty()) {
        out.push(label.len() as u8);
        out.extend_from_slice(label.as_bytes());
    }
    out.push(0);
}

/// A valid query: random name, type, class (mostly IN, some CH), flags, and sometimes an OPT
/// record with ECS and other options.
pub fn valid_query(rng: &mut Rng) -> Vec<u8> {
    let mut p = Vec::with_capacity(128);
    p.extend_from_slice(&(rng.next_u64() as u16).to_be_bytes());
    let flags: u16 = (rng.below(2) as u16) << 8 | (rng.below(2) as u16) << 4;
    p.extend_from_slice(&flags.to_be_bytes());
    let edns = rng.below(3) != 0;
    p.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, u8::from(edns)]);
    push_name(&mut p, NAMES[rng.below(NAMES.len())]);
    p.extend_from_slice(&TYPES[rng.below(TYPES.len())].to_be_bytes());
    let class: u16 = match rng.below(10) {
        0 => 3,
        1 => 255,
        _ => 1,
    };
    p.extend_from_slice(&class.to_be_bytes());
    if edns {
        p.push(0);
        p.extend_from_slice(&41u16.to_be_bytes());
        let size = [0u16, 512, 1232, 1400, 4096, 65535][rng.below(6)];
        p.extend_from_slice(&size.to_be_bytes());
        p.extend_from_slice(&[0, 0, if rng.below(2) == 0 { 0x80 } else { 0 }, 0]);
        let mut options = Vec::new();
        if rng.below(2) == 0 {
            let v6 = rng.below(2) == 0;
            let source = rng.below(if v6 { 129 } else { 33 }) as u8;
            let n = usize::from(source).div_ceil(8);
            let mut address: Vec<u8> = (0..n).map(|_| rng.byte()).collect();
            if let Some(last) = address.last_mut()
                && !source.is_multiple_of(8)
            {
                *last &= 0xff << (8 - source % 8);
            }
            options.extend_from_slice(&8u16.to_be_bytes());
            options.extend_from_slice(&((4 + n) as u16).to_be_bytes());
            options.extend_from_slice(&(if v6 { 2u16 } else { 1 }).to_be_bytes());
            options.extend_from_slice(&[source, 0]);
            options.extend_from_slice(&address);
        }
        if rng.below(4) == 0 {
            // A cookie (option 10): ignored.
            options.extend_from_slice(&[0, 10, 0, 8]);
            options.extend((0..8).map(|_| rng.byte()));
        }
        p.extend_from_slice(&(options.len() as u16).to_be_bytes());
        p.extend_from_slice(&options);
    }
    p
}

/// A random input: a quarter noise, the rest valid queries with a few mutations.
pub fn random_input(rng: &mut Rng) -> Vec<u8> {
    if rng.below(4) == 0 {
        let len = rng.below(600);
        return (0..len).map(|_| rng.byte()).collect();
    }
    let mut p = valid_query(rng);
    let mutations = rng.below(5);
    for _ in 0..mutations {
        match rng.below(7) {
            0 if !p.is_empty() => {
                let i = rng.below(p.len());
                p[i] ^= 1 << rng.below(8);
            }
            1 if !p.is_empty() => {
                let i = rng.below(p.len());
                p[i] = rng.byte();
            }
            2 if !p.is_empty() => {
                let keep = rng.below(p.len());
                p.truncate(keep);
            }
            3 => {
                let i = rng.below(p.len() + 1);
                let n = 1 + rng.below(16);
                let bytes: Vec<u8> = (0..n).map(|_| rng.byte()).collect();
                p.splice(i..i, bytes);
            }
            4 if p.len() >= 12 => {
                let at = 4 + 2 * rng.below(4);
                p[at] = 0;
                p[at + 1] = rng.below(4) as u8;
            }
            5 if p.len() > 14 => {
                // A compression pointer somewhere in the name or the OPT owner.
                let i = 12 + rng.below(p.len() - 13);
                p[i] = 0xc0 | (rng.byte() & 0x3f >> rng.below(6));
                p[i + 1] = rng.byte();
            }
            6 if p.len() >= 12 => p[2] &= 0x7f,
            _ => {}
        }
    }
    p
}

/// Checks that the snapshot answers what the zone holds, so a fuzz run that only ever sees
/// REFUSED cannot pass unnoticed.
pub fn self_test(snapshot: &Snapshot) {
    let mut query = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
    push_name(&mut query, "www.example.com");
    query.extend_from_slice(&[0, 1, 0, 1]);
    let mut out = Vec::new();
    let outcome = answer::respond(snapshot, &query, Transport::Udp, &mut out);
    assert!(
        matches!(outcome, Outcome::Respond { rcode: 0, .. }),
        "www.example.com A: {outcome:?}"
    );
    assert_eq!(u16::from_be_bytes([out[6], out[7]]), 1, "one answer");
    assert!(
        out.ends_with(&[0, 1, 0, 1, 0, 0, 1, 44, 0, 4, 192, 0, 2, 30]),
        "{out:02x?}"
    );
    check(snapshot, &query, &mut out);
}

/// A zone small enough that blind mutations of its image often land in a name or a count.
const TINY_ZONE: &str = r#"$ORIGIN t.
$TTL 60
@    IN SOA ns hostmaster 1 3600 600 86400 60
@    IN NS  ns
@    IN MX  10 mail
ns   IN A   192.0.2.1
mail IN A   192.0.2.25
c    IN CNAME mail
"#;

/// A zone with steered A records (countries, continents, weights, backup, checks).
const STEERED_ZONE: &str = r#"$ORIGIN steer.test.
$TTL 60
@    IN SOA ns hostmaster 1 3600 600 86400 60
@    IN NS  ns
ns   IN A   192.0.2.1
www  IN A   192.0.2.80
www  IN A   192.0.2.81
www  IN A   192.0.2.82
www  IN AAAA 2001:db8::80
"#;

fn steered_zone() -> Arc<ZoneSnapshot> {
    let mut zone = zone_config("steer.test", STEERED_ZONE);
    let spec = |countries: &[&str], weight, check: bool| SteeringSpec {
        countries: countries.iter().map(|c| c.to_string()).collect(),
        continents: vec!["EU".into()],
        weight,
        backup: countries.is_empty(),
        check: check.then(|| model::steering::CheckSpec {
            kind: "tcp".into(),
            port: Some(443),
            ..Default::default()
        }),
    };
    let steering = [
        spec(&["ID", "SG"], Some(3), true),
        spec(&["DE"], None, false),
        spec(&[], Some(1), true),
    ];
    let www = zone
        .records
        .iter_mut()
        .filter(|r| r.name.to_string().starts_with("www") && r.rtype == Rtype::A);
    for (record, spec) in www.zip(steering) {
        record.steering = Some(Box::new(spec.validate("").expect("steering")));
    }
    compile_config(&zone)
}

/// The body of a zone's image: what `image::write` writes without its CRC-32 trailer, which
/// the image target appends to every input.
fn image_body(zone: &ZoneSnapshot) -> Vec<u8> {
    let mut bytes = Vec::new();
    assert!(
        image::write(zone, &mut bytes).expect("write image"),
        "no image"
    );
    bytes.truncate(bytes.len() - 4);
    bytes
}

/// The image target's seeds (file name, image body): the query target's two zones, a tiny
/// zone and a steered one. Hash seeds are random per compile, so each run writes other bytes.
pub fn seed_images() -> Vec<(&'static str, Vec<u8>)> {
    vec![
        ("example.com", image_body(&main_zone())),
        (
            "deep.example.com",
            image_body(&compile("deep.example.com", SUB_ZONE)),
        ),
        ("t", image_body(&compile("t", TINY_ZONE))),
        ("steer.test", image_body(&steered_zone())),
    ]
}

/// Names asked under an image's apex, relative to it: the fuzz zone's names (which a mangled
/// image of it may still hold), a wildcard's siblings, and names that exist nowhere.
const IMAGE_NAMES: &[&str] = &[
    "www",
    "WwW",
    "api",
    "chain",
    "out",
    "loop1",
    "x.dev",
    "*.dev",
    "c.ent",
    "a.b.c.ent",
    "sub",
    "x.sub",
    "ns.sub",
    "ns1",
    "ns",
    "mail",
    "c",
    "_sip._udp",
    "ptr",
    "odd",
    "big",
    "many",
    "x.deep",
    "nope",
];

const IMAGE_TYPES: &[u16] = &[1, 28, 2, 5, 6, 15, 16, 33, 12, 255, 43, 999];

/// Reads `body` followed by its CRC-32 as an image; when it reads, answers the image's own
/// apex, the names in its SOA and apex NS/MX records, the names above under the apex and two
/// names made from the input, every type of `IMAGE_TYPES`, over UDP and TCP, with and without
/// EDNS, through the query target's check. Returns whether the image was read.
pub fn check_image(body: &[u8], out: &mut Vec<u8>) -> bool {
    let crc = crc32fast::hash(body);
    let mut bytes = Vec::with_capacity(body.len() + 4);
    bytes.extend_from_slice(body);
    bytes.extend_from_slice(&crc.to_le_bytes());
    let Ok(zone) = image::read(Cursor::new(&bytes[..]), bytes.len() as u64) else {
        return false;
    };
    let names = image_names(&zone, crc);
    let snapshot = Snapshot::empty().with_zone(Arc::new(zone));
    let mut rng = Rng(u64::from(crc) | 1);
    for name in &names {
        ask_types(&snapshot, name, IMAGE_TYPES, &mut rng, out, true);
    }
    true
}

/// The names `check_image` asks, in wire form.
fn image_names(zone: &ZoneSnapshot, salt: u32) -> Vec<Vec<u8>> {
    let apex = zone.apex.as_wire();
    let mut names = vec![apex.to_vec()];
    let mut under = |labels: &[&[u8]]| {
        let mut wire = Vec::with_capacity(255);
        for label in labels {
            wire.push(label.len() as u8);
            wire.extend_from_slice(label);
        }
        wire.extend_from_slice(apex);
        if wire.len() <= 255 {
            names.push(wire);
        }
    };
    for name in IMAGE_NAMES {
        let labels: Vec<&[u8]> = name.split('.').map(str::as_bytes).collect();
        under(&labels);
    }
    let mut rng = Rng(u64::from(salt) << 1 | 1);
    for _ in 0..2 {
        let label: Vec<u8> = (0..1 + rng.below(8))
            .map(|_| b"abcdefghijklmnopqrstuvwxyz0123456789-*"[rng.below(38)])
            .collect();
        under(&[&label]);
    }
    // Names the image itself holds: the SOA's, and the targets of the apex's NS and MX.
    let mut targets = Vec::new();
    for rdata in zone.soa.rdatas.iter() {
        let wire = rdata.as_wire();
        if let Some(mname) = model::name::wire_name_len(wire) {
            targets.push(wire[..mname].to_vec());
            if let Some(rname) = model::name::wire_name_len(&wire[mname..]) {
                targets.push(wire[mname..mname + rname].to_vec());
            }
        }
    }
    if let Some(node) = zone.node(apex) {
        for rtype in [Rtype::NS, Rtype::MX] {
            for rdata in node.rrset(rtype).iter().flat_map(|r| r.rdatas.iter()) {
                if let Some(target) = rdata.target(rtype) {
                    targets.push(target.as_wire().to_vec());
                }
            }
        }
    }
    targets.truncate(8);
    names.extend(targets);
    names
}

/// Appends a query for a wire name, with an OPT record of `edns` bytes when given.
/// Asks `name` every type of `types`, each without EDNS, with 1232 or with 65535 (at random),
/// over UDP and TCP through the query target's check.
fn ask_types(
    snapshot: &Snapshot,
    name: &[u8],
    types: &[u16],
    rng: &mut Rng,
    out: &mut Vec<u8>,
    tcp_may_truncate: bool,
) {
    let mut query = Vec::with_capacity(300);
    for &qtype in types {
        query.clear();
        let edns = match rng.below(3) {
            0 => None,
            1 => Some(1232),
            _ => Some(65535),
        };
        push_query(&mut query, rng.next_u64() as u16, name, qtype, edns);
        check_transports(snapshot, &query, out, tcp_may_truncate);
    }
}

fn push_query(out: &mut Vec<u8>, id: u16, name: &[u8], qtype: u16, edns: Option<u16>) {
    out.extend_from_slice(&id.to_be_bytes());
    out.extend_from_slice(&[1, 0, 0, 1, 0, 0, 0, 0, 0, u8::from(edns.is_some())]);
    out.extend_from_slice(name);
    out.extend_from_slice(&qtype.to_be_bytes());
    out.extend_from_slice(&1u16.to_be_bytes());
    if let Some(size) = edns {
        out.push(0);
        out.extend_from_slice(&41u16.to_be_bytes());
        out.extend_from_slice(&size.to_be_bytes());
        out.extend_from_slice(&[0, 0, 0x80, 0, 0, 0]);
    }
}

/// Checks that the seed images read back and answer, so that an image run that refuses every
/// input, or reads zones that answer nothing, cannot pass unnoticed.
pub fn image_self_test() {
    let mut out = Vec::new();
    for (name, body) in seed_images() {
        assert!(check_image(&body, &mut out), "seed image {name} not read");
    }
    let (_, body) = seed_images().swap_remove(0);
    let mut bytes = body.clone();
    bytes.extend_from_slice(&crc32fast::hash(&body).to_le_bytes());
    let zone = image::read(Cursor::new(&bytes[..]), bytes.len() as u64).expect("seed image");
    self_test(&Snapshot::empty().with_zone(Arc::new(zone)));
}

/// A mutation of a seed image for the replayer: 1 to 8 bytes changed (random values, bit
/// flips, small numbers, compression pointers), and one time in eight each a cut or 1 to 16
/// bytes inserted (which mostly only the length checks see).
pub fn mutated_image(rng: &mut Rng, seeds: &[Vec<u8>]) -> Vec<u8> {
    let mut p = seeds[rng.below(seeds.len())].clone();
    for _ in 0..1 + rng.below(8) {
        let i = rng.below(p.len());
        match rng.below(5) {
            0 => p[i] = rng.byte(),
            1 => p[i] ^= 1 << rng.below(8),
            2 => p[i] = rng.below(4) as u8,
            3 => p[i] = [0, 0x3f, 0x40, 0x7f, 0x80, 0xc0, 0xff][rng.below(7)],
            _ if i + 1 < p.len() => {
                // A compression pointer to near the start of some record data.
                p[i] = 0xc0;
                p[i + 1] = rng.below(32) as u8;
            }
            _ => {}
        }
    }
    if rng.below(8) == 0 {
        let keep = rng.below(p.len());
        p.truncate(keep);
    }
    if rng.below(8) == 0 {
        let i = rng.below(p.len() + 1);
        let bytes: Vec<u8> = (0..1 + rng.below(16)).map(|_| rng.byte()).collect();
        p.splice(i..i, bytes);
    }
    p
}

/// The zone file target's seeds (file name, text): the files in `seeds/zonefile`, built in so
/// that the self-test and the replayer's mutations need no files at run time.
pub const ZONEFILE_SEEDS: &[(&str, &str)] = &[
    ("basic.zone", include_str!("../seeds/zonefile/basic.zone")),
    ("types.zone", include_str!("../seeds/zonefile/types.zone")),
    (
        "escapes.zone",
        include_str!("../seeds/zonefile/escapes.zone"),
    ),
    (
        "origins.zone",
        include_str!("../seeds/zonefile/origins.zone"),
    ),
    (
        "include.zone",
        include_str!("../seeds/zonefile/include.zone"),
    ),
    ("nosoa.zone", include_str!("../seeds/zonefile/nosoa.zone")),
];

/// Every input of the zone file target is parsed for this origin.
pub const ZONEFILE_ORIGIN: &str = "example.com.";

/// How far a zone file got.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ZonefileOutcome {
    /// The parser reported errors.
    Refused,
    /// It parsed, but the zone does not validate.
    Invalid,
    /// It parsed, validated, compiled and answered the queries.
    Served,
}

/// Types asked at every name a zone file's zone is queried for, besides the types found there.
const ZONEFILE_TYPES: &[u16] = &[1, 28, 2, 5, 6, 15, 16, 33, 43, 65, 255, 999];

/// Parses `data` (lossy UTF-8) as a zone file for `ZONEFILE_ORIGIN`. A refusal must carry
/// reasons. Every record parsed must print (`to_text` and the generic form) and parse back to
/// the same bytes. A zone that validates (with a default SOA when the file has none, as an
/// import does) must export to a file that parses back to the same zone, compile, and answer
/// its apex, its owners, the names its records point at, names under a wildcard and random
/// names, over UDP and TCP, through the query target's check.
pub fn check_zonefile(data: &[u8], out: &mut Vec<u8>) -> ZonefileOutcome {
    let text = String::from_utf8_lossy(data);
    let origin = Dname::parse_absolute(ZONEFILE_ORIGIN).expect("origin");
    let parsed = match model::zonefile::parse(&text, &origin, 3600) {
        Ok(parsed) => parsed,
        Err(errors) => {
            assert!(!errors.is_empty(), "refused without a reason");
            for error in &errors {
                assert!(
                    error.field.starts_with("line ") && !error.message.is_empty(),
                    "error without a line or a reason: {error:?}"
                );
            }
            return ZonefileOutcome::Refused;
        }
    };
    assert_eq!(
        parsed.records.len(),
        parsed.lines.len(),
        "a line per record"
    );
    let last_line = text.bytes().filter(|&b| b == b'\n').count() + 1;
    assert!(
        parsed.lines.windows(2).all(|w| w[0] <= w[1])
            && parsed.lines.iter().all(|&l| (1..=last_line).contains(&l)),
        "record lines {:?} in a file of {last_line} lines",
        parsed.lines
    );
    for record in &parsed.records {
        check_rdata_round_trip(record.rtype, &record.rdata, &origin);
    }
    if let Some((soa, _)) = &parsed.soa {
        check_rdata_round_trip(Rtype::SOA, &soa.to_rdata(), &origin);
    }
    let zone = match parsed.soa {
        Some(_) => parsed.into_zone(origin.clone()).expect("an SOA"),
        // An import without an SOA keeps the zone's, or makes one (`manage.rs`).
        None => ZoneConfig {
            id: 1,
            soa: Soa::default_for(&origin, 0),
            name: origin,
            default_ttl: 3600,
            records: parsed.records,
            pools: Vec::new(),
            load_balancers: Vec::new(),
        },
    };
    if !zone.validate(&|_| String::new()).is_empty() {
        return ZonefileOutcome::Invalid;
    }
    check_export_round_trip(&zone);
    let snapshot = ZoneSnapshot::compile(&zone);
    let names = zonefile_names(&zone, data);
    let snapshot = Snapshot::empty().with_zone(Arc::new(snapshot));
    let mut rng = Rng(u64::from(crc32fast::hash(data)) << 1 | 1);
    for (name, types) in &names {
        let types: Vec<u16> = ZONEFILE_TYPES.iter().chain(types).copied().collect();
        ask_types(&snapshot, name, &types, &mut rng, out, false);
    }
    ZonefileOutcome::Served
}

/// A record's data printed (presentation form and RFC 3597 generic form) must parse back to the
/// same bytes. Holds for every type: `Rdata` is only made from data that `domain` parses from
/// the wire and composes back unchanged, and `to_text` prints the generic form for data that
/// `domain` has no presentation form for, or prints in a form that does not parse back.
fn check_rdata_round_trip(rtype: Rtype, rdata: &Rdata, origin: &Dname) {
    for text in [rdata.to_text(rtype), rdata.generic_text()] {
        match Rdata::parse(rtype, &text, origin) {
            Ok(again) => assert_eq!(
                again.as_wire(),
                rdata.as_wire(),
                "{rtype} {text:?} parses back to other data"
            ),
            Err(e) => panic!("{rtype} data {:?} prints as {text:?}: {e}", rdata),
        }
    }
}

/// A valid zone exported as a zone file must parse back to the same SOA and records. Owners
/// are compared without case: written relative to the origin, the origin part of an owner
/// takes the origin's case (`$ORIGIN Example.COM.` owners come back as `…example.com.`).
fn check_export_round_trip(zone: &ZoneConfig) {
    let text = model::zonefile::export(zone);
    let again = model::zonefile::parse(&text, &zone.name, zone.default_ttl)
        .unwrap_or_else(|e| panic!("the export does not parse: {e:?}\n{text}"));
    let (soa, soa_ttl) = again.soa.expect("the export has an SOA");
    assert_eq!((&soa, soa_ttl), (&zone.soa, zone.default_ttl), "SOA");
    let key = |r: &RecordConfig| {
        (
            r.name.to_lowercase(),
            r.rtype.to_int(),
            r.ttl,
            r.rdata.clone(),
        )
    };
    let mut before: Vec<_> = zone.records.iter().map(key).collect();
    let mut after: Vec<_> = again.records.iter().map(key).collect();
    before.sort();
    after.sort();
    assert_eq!(before, after, "records after export and import\n{text}");
}

/// The names `check_zonefile` asks (wire form), each with the types the zone holds there: the
/// apex, owners, the targets of NS/MX/CNAME/SRV/PTR/DNAME data, a name under each wildcard,
/// a name under each owner, and two random names under the apex. At most 40.
fn zonefile_names(zone: &ZoneConfig, data: &[u8]) -> Vec<(Vec<u8>, Vec<u16>)> {
    let mut names: Vec<(Vec<u8>, Vec<u16>)> = Vec::new();
    let mut add = |wire: Vec<u8>, rtype: Option<u16>| {
        if wire.len() > 255 {
            return;
        }
        if let Some((_, types)) = names
            .iter_mut()
            .find(|(n, _)| n.eq_ignore_ascii_case(&wire))
        {
            if let Some(rtype) = rtype.filter(|t| !types.contains(t)) {
                types.push(rtype);
            }
        } else if names.len() < 40 {
            names.push((wire, rtype.into_iter().collect()));
        }
    };
    let prefixed = |label: &[u8], name: &[u8]| {
        let mut wire = vec![label.len() as u8];
        wire.extend_from_slice(label);
        wire.extend_from_slice(name);
        wire
    };
    let apex = zone.name.as_wire();
    add(apex.to_vec(), Some(Rtype::SOA.to_int()));
    for record in &zone.records {
        let owner = record.name.as_wire();
        add(owner.to_vec(), Some(record.rtype.to_int()));
        if record.name.is_wildcard() {
            // `*.rest`: a name the wildcard covers.
            add(
                prefixed(b"x-wild", &owner[2..]),
                Some(record.rtype.to_int()),
            );
        }
        if let Some(target) = record.rdata.target(record.rtype) {
            add(target.as_wire().to_vec(), None);
        }
    }
    for record in zone.records.iter().take(8) {
        add(prefixed(b"below", record.name.as_wire()), None);
    }
    let mut rng = Rng(u64::from(crc32fast::hash(data)) | 1);
    for _ in 0..2 {
        let label: Vec<u8> = (0..1 + rng.below(8))
            .map(|_| b"abcdefghijklmnopqrstuvwxyz0123456789-*"[rng.below(38)])
            .collect();
        add(prefixed(&label, apex), None);
    }
    names
}

/// Checks that the seed zone files do what they are there for, so that a zone file run that
/// refuses every input, or serves zones that answer nothing, cannot pass unnoticed: every seed
/// but `include.zone` (refused for its `$INCLUDE`) is served, and the fuzz zone answers.
pub fn zonefile_self_test() {
    let origin = Dname::parse_absolute(ZONEFILE_ORIGIN).expect("origin");
    let mut out = Vec::new();
    for (name, text) in ZONEFILE_SEEDS {
        let expected = if *name == "include.zone" {
            ZonefileOutcome::Refused
        } else {
            ZonefileOutcome::Served
        };
        let outcome = check_zonefile(text.as_bytes(), &mut out);
        assert_eq!(
            outcome,
            expected,
            "seed {name}: {:?}",
            model::zonefile::parse(text, &origin, 3600).map(|parsed| parsed
                .into_zone(origin.clone())
                .map(|zone| zone.validate(&|_| String::new())))
        );
    }
    let errors = model::zonefile::parse(ZONEFILE_SEEDS[4].1, &origin, 3600).unwrap_err();
    assert!(
        errors
            .iter()
            .all(|e| e.message.contains("$INCLUDE is not allowed")),
        "{errors:?}"
    );
    let text = format!("{ZONE}{}", big_txt());
    assert_eq!(
        check_zonefile(text.as_bytes(), &mut out),
        ZonefileOutcome::Served,
        "the fuzz zone"
    );
    let zone = model::zonefile::parse(&text, &origin, 3600)
        .expect("fuzz zone")
        .into_zone(origin)
        .expect("SOA");
    self_test(&Snapshot::empty().with_zone(Arc::new(ZoneSnapshot::compile(&zone))));
}

/// Special characters and tokens that zone file mutations insert.
const ZONEFILE_SPECIALS: &[&str] = &[
    "(",
    ")",
    ";",
    "\"",
    "\\",
    "$",
    "@",
    "*",
    ".",
    "\n",
    "\t",
    " ",
    "\\#",
    "\\000",
    "\\255",
    "\\.",
    "\\\"",
    "\\\n",
    "\r\n",
    "$ORIGIN ",
    "$TTL ",
    "$INCLUDE ",
    "$GENERATE ",
    "IN",
    "CH",
    "TYPE65535",
    "0",
    "65535",
    "4294967295",
    "4294967296",
    "-1",
    "1w",
    "99999999999w",
    "..",
    "\u{fffd}",
    "\u{e9}",
    "0x",
    "::",
    "\\# 0",
    "\\# 65535",
    "ff",
    "AAAA",
    "=",
    ",",
];

/// A mutation of a seed zone file for the replayer: 1 (half the time) to 4 of byte changes, line duplications,
/// deletions and swaps, token swaps and copies, insertions of special characters and tokens,
/// and long runs of one character or token.
pub fn mutated_zonefile(rng: &mut Rng, seeds: &[&str]) -> Vec<u8> {
    let mut p = seeds[rng.below(seeds.len())].as_bytes().to_vec();
    // Half the inputs get one mutation: most mutations break a file, and a zone that still
    // parses is what reaches the round trips and the query path.
    let mutations = if rng.below(2) == 0 {
        1
    } else {
        1 + rng.below(4)
    };
    for _ in 0..mutations {
        let at = rng.below(p.len() + 1);
        match rng.below(10) {
            0 if !p.is_empty() => {
                let i = rng.below(p.len());
                p[i] = match rng.below(3) {
                    0 => rng.byte(),
                    1 => b"()\";\\$@*. \t\n0123456789"[rng.below(22)],
                    _ => p[i] ^ 1 << rng.below(8),
                };
            }
            1 | 2 => {
                // Lines: duplicate one, delete one, swap two, or copy one from another seed.
                let text = String::from_utf8_lossy(&p).into_owned();
                let mut lines: Vec<&str> = text.split('\n').collect();
                let other = seeds[rng.below(seeds.len())];
                let others: Vec<&str> = other.split('\n').collect();
                let i = rng.below(lines.len());
                let j = rng.below(lines.len());
                match rng.below(4) {
                    0 => lines.insert(j, lines[i]),
                    1 if lines.len() > 1 => {
                        lines.remove(i);
                    }
                    2 => lines.swap(i, j),
                    _ => lines.insert(j, others[rng.below(others.len())]),
                }
                p = lines.join("\n").into_bytes();
            }
            3 | 4 => {
                // Tokens: swap two, or put a copy of one somewhere else.
                let spans = token_spans(&p);
                if spans.len() >= 2 {
                    let a = spans[rng.below(spans.len())];
                    let b = spans[rng.below(spans.len())];
                    if rng.below(2) == 0 && a.1 <= b.0 {
                        let (first, second) = (p[a.0..a.1].to_vec(), p[b.0..b.1].to_vec());
                        p.splice(b.0..b.1, first);
                        p.splice(a.0..a.1, second);
                    } else {
                        let token = p[a.0..a.1].to_vec();
                        let mut insert = vec![b' '];
                        insert.extend_from_slice(&token);
                        insert.push(b' ');
                        p.splice(b.0..b.0, insert);
                    }
                }
            }
            5..=7 => {
                let special = ZONEFILE_SPECIALS[rng.below(ZONEFILE_SPECIALS.len())];
                p.splice(at..at, special.bytes());
            }
            8 => {
                // A long run: one character or a special token many times.
                let unit: Vec<u8> = if rng.below(2) == 0 {
                    vec![b"()\";\\$@*.a0 \n"[rng.below(13)]]
                } else {
                    ZONEFILE_SPECIALS[rng.below(ZONEFILE_SPECIALS.len())]
                        .bytes()
                        .collect()
                };
                let count = [64, 255, 256, 1000, 4000][rng.below(5)];
                let run: Vec<u8> = unit
                    .iter()
                    .copied()
                    .cycle()
                    .take(unit.len() * count)
                    .collect();
                p.splice(at..at, run);
            }
            _ if !p.is_empty() => {
                // Cut the file short, or cut a piece out.
                let from = rng.below(p.len());
                let to = (from + 1 + rng.below(32)).min(p.len());
                if rng.below(2) == 0 {
                    p.truncate(from);
                } else {
                    p.drain(from..to);
                }
            }
            _ => {}
        }
    }
    p
}

/// Start and end of each whitespace-separated token.
fn token_spans(p: &[u8]) -> Vec<(usize, usize)> {
    let mut spans = Vec::new();
    let mut start = None;
    for (i, &b) in p.iter().enumerate() {
        match (b.is_ascii_whitespace(), start) {
            (true, Some(s)) => {
                spans.push((s, i));
                start = None;
            }
            (false, None) => start = Some(i),
            _ => {}
        }
    }
    if let Some(s) = start {
        spans.push((s, p.len()));
    }
    spans
}
