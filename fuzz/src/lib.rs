//! The shared body of the query-parser fuzz target and its stable-toolchain replayer: one
//! snapshot built once, and a check that runs a packet through `answer::respond` over UDP and
//! TCP and asserts the response is sane.

use std::sync::Arc;

use answer::{Outcome, Transport};
use domain::base::Message;
use model::snapshot::Chaos;
use model::{Dname, Snapshot, ZoneConfig, ZoneSnapshot};

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

fn compile(origin: &str, text: &str) -> Arc<ZoneSnapshot> {
    let name = Dname::parse_absolute(origin).expect("zone name");
    let parsed = model::zonefile::parse(text, &name, 300).expect("fuzz zone parses");
    let (soa, default_ttl) = parsed.soa.expect("fuzz zone has an SOA");
    let zone = ZoneConfig {
        id: 1,
        name,
        soa,
        default_ttl,
        records: parsed.records,
        pools: Vec::new(),
        load_balancers: Vec::new(),
    };
    let errors = zone.validate(&|_| String::new());
    assert!(errors.is_empty(), "fuzz zone is invalid: {errors:?}");
    Arc::new(ZoneSnapshot::compile(&zone))
}

/// The snapshot every input is answered from.
pub fn snapshot() -> Snapshot {
    let main = format!("{ZONE}{}", big_txt());
    Snapshot::empty()
        .with_zone(compile("example.com", &main))
        .with_zone(compile("deep.example.com", SUB_ZONE))
        .with_chaos(Arc::new(Chaos::new(Some("dnz-fuzz"), Some("fuzz-1"))))
}

/// Answers `data` over UDP and TCP and checks both outcomes. Panics on anything wrong.
pub fn check(snapshot: &Snapshot, data: &[u8], out: &mut Vec<u8>) {
    for transport in [Transport::Udp, Transport::Tcp] {
        let outcome = answer::respond(snapshot, data, transport, out);
        check_one(data, transport, outcome, out);
    }
}

fn check_one(data: &[u8], transport: Transport, outcome: Outcome, out: &[u8]) {
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
        if transport == Transport::Tcp {
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
