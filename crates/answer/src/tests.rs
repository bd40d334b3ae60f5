//! Fast tests of the answer logic on a tiny compiled snapshot: a zone file is parsed, compiled
//! and answered through [`respond`], and the wire response read back with `domain`.

use std::sync::Arc;

use domain::base::Message;
use domain::base::iana::Rtype;
use model::snapshot::ZoneSnapshot;
use model::{Dname, Snapshot};

use crate::{Outcome, Reason, Transport, respond};

const ZONE: &str = r#"
$ORIGIN example.com.
@        3600 IN SOA   ns1 hostmaster 1 7200 3600 1209600 300
@        3600 IN NS    ns1
ns1      3600 IN A     192.0.2.1
www      300  IN A     192.0.2.20
www      300  IN AAAA  2001:db8::20
a.b.c    3600 IN A     192.0.2.30
*.wild   3600 IN A     192.0.2.100
*.wild   3600 IN TXT   "wild"
x.wild   3600 IN A     192.0.2.101
loop1    3600 IN CNAME loop2
loop2    3600 IN CNAME loop1
alias    3600 IN CNAME www
sub      3600 IN NS    ns.sub
sub      3600 IN NS    ns.elsewhere.net.
ns.sub   3600 IN A     192.0.2.53
big      3600 IN TXT   "0123456789012345678901234567890123456789012345678901234567890123456789 one"
big      3600 IN TXT   "0123456789012345678901234567890123456789012345678901234567890123456789 two"
big      3600 IN TXT   "0123456789012345678901234567890123456789012345678901234567890123456789 three"
big      3600 IN TXT   "0123456789012345678901234567890123456789012345678901234567890123456789 four"
big      3600 IN TXT   "0123456789012345678901234567890123456789012345678901234567890123456789 five"
big      3600 IN TXT   "0123456789012345678901234567890123456789012345678901234567890123456789 six"
big      3600 IN TXT   "0123456789012345678901234567890123456789012345678901234567890123456789 seven"
"#;

fn snapshot() -> Snapshot {
    let origin = Dname::parse_absolute("example.com").unwrap();
    let parsed = model::zonefile::parse(ZONE, &origin, 3600).expect("zone parses");
    let zone = parsed.into_zone(origin).expect("SOA");
    assert_eq!(zone.validate(&|_| String::new()), []);
    Snapshot::empty().with_zone(Arc::new(ZoneSnapshot::compile(&zone)))
}

fn packet(name: &str, qtype: Rtype, edns: Option<u16>) -> Vec<u8> {
    let mut p = vec![
        0x12,
        0x34,
        0x01,
        0,
        0,
        1,
        0,
        0,
        0,
        0,
        0,
        u8::from(edns.is_some()),
    ];
    p.extend_from_slice(Dname::parse_absolute(name).unwrap().as_wire());
    p.extend_from_slice(&qtype.to_int().to_be_bytes());
    p.extend_from_slice(&1u16.to_be_bytes());
    if let Some(size) = edns {
        p.extend_from_slice(&[0, 0, 41]);
        p.extend_from_slice(&size.to_be_bytes());
        p.extend_from_slice(&[0, 0, 0, 0, 0, 0]);
    }
    p
}

/// The parts of a response the tests look at; records as `owner TYPE`.
#[derive(Debug)]
struct Reply {
    rcode: u8,
    aa: bool,
    tc: bool,
    reason: Reason,
    question: String,
    answer: Vec<String>,
    authority: Vec<String>,
    additional: Vec<String>,
}

fn ask_with(name: &str, qtype: Rtype, edns: Option<u16>, transport: Transport) -> Reply {
    let mut out = Vec::new();
    let Outcome::Respond { reason, .. } =
        respond(&snapshot(), &packet(name, qtype, edns), transport, &mut out)
    else {
        panic!("query dropped");
    };
    let message = Message::from_slice(&out[..]).expect("response parses");
    let header = message.header();
    let lines = |section: domain::base::message::RecordSection<'_, [u8]>| -> Vec<String> {
        section
            .map(|r| r.expect("record"))
            .filter(|r| r.rtype() != Rtype::OPT)
            .map(|r| format!("{} {}", r.owner(), r.rtype()))
            .collect()
    };
    let question = message.first_question().expect("question");
    Reply {
        rcode: header.rcode().to_int(),
        aa: header.aa(),
        tc: header.tc(),
        reason,
        question: format!("{} {}", question.qname(), question.qtype()),
        answer: lines(message.answer().unwrap()),
        authority: lines(message.authority().unwrap()),
        additional: lines(message.additional().unwrap()),
    }
}

fn ask(name: &str, qtype: Rtype) -> Reply {
    ask_with(name, qtype, Some(1232), Transport::Udp)
}

const NOERROR: u8 = 0;
const NXDOMAIN: u8 = 3;
const REFUSED: u8 = 5;

#[test]
fn empty_non_terminal_is_nodata_and_a_missing_name_nxdomain() {
    let ent = ask("b.c.example.com", Rtype::A);
    assert_eq!(
        (ent.rcode, ent.aa, ent.reason),
        (NOERROR, true, Reason::NoData)
    );
    assert!(ent.answer.is_empty());
    assert_eq!(ent.authority, ["example.com SOA"]);

    let missing = ask("x.b.c.example.com", Rtype::A);
    assert_eq!((missing.rcode, missing.aa), (NXDOMAIN, true));
    assert_eq!(missing.authority, ["example.com SOA"]);

    let wrong_type = ask("www.example.com", Rtype::MX);
    assert_eq!(
        (wrong_type.rcode, wrong_type.reason),
        (NOERROR, Reason::NoData)
    );
}

#[test]
fn wildcard_answers_in_the_qname_except_where_a_name_exists() {
    let a = ask("foo.wild.example.com", Rtype::A);
    assert_eq!((a.rcode, a.aa), (NOERROR, true));
    assert_eq!(a.answer, ["foo.wild.example.com A"]);
    let deeper = ask("a.b.wild.example.com", Rtype::TXT);
    assert_eq!(deeper.answer, ["a.b.wild.example.com TXT"]);
    // The wildcard has no MX: NODATA, not NXDOMAIN.
    let mx = ask("foo.wild.example.com", Rtype::MX);
    assert_eq!((mx.rcode, mx.answer.len()), (NOERROR, 0));
    // x.wild exists, so the wildcard does not apply to it (RFC 4592 §2.2.1).
    let txt = ask("x.wild.example.com", Rtype::TXT);
    assert_eq!(
        (txt.rcode, txt.reason, txt.answer.len()),
        (NOERROR, Reason::NoData, 0)
    );
    let below = ask("y.x.wild.example.com", Rtype::A);
    assert_eq!(below.rcode, NXDOMAIN);
}

#[test]
fn referral_has_no_aa_and_carries_glue() {
    for name in [
        "sub.example.com",
        "host.sub.example.com",
        "ns.sub.example.com",
    ] {
        let r = ask(name, Rtype::A);
        assert_eq!(
            (r.rcode, r.aa, r.reason),
            (NOERROR, false, Reason::Referral),
            "{name}"
        );
        assert!(r.answer.is_empty(), "{name}");
        assert_eq!(
            r.authority,
            ["sub.example.com NS", "sub.example.com NS"],
            "{name}"
        );
        assert_eq!(r.additional, ["ns.sub.example.com A"], "{name}");
    }
    // DS belongs to the parent side of the cut: authoritative NODATA here.
    let ds = ask("sub.example.com", Rtype::DS);
    assert_eq!(
        (ds.rcode, ds.aa, ds.reason),
        (NOERROR, true, Reason::NoData)
    );
    assert_eq!(ds.authority, ["example.com SOA"]);
}

#[test]
fn cname_chain_is_followed_and_a_loop_stops() {
    let chain = ask("alias.example.com", Rtype::A);
    assert_eq!(
        (chain.rcode, chain.aa, chain.reason),
        (NOERROR, true, Reason::Cname)
    );
    assert_eq!(
        chain.answer,
        ["alias.example.com CNAME", "www.example.com A"]
    );

    let looped = ask("loop1.example.com", Rtype::A);
    assert_eq!(looped.rcode, NOERROR);
    assert_eq!(
        looped.answer,
        ["loop1.example.com CNAME", "loop2.example.com CNAME"]
    );
    assert!(looped.authority.is_empty());
}

#[test]
fn qname_case_is_kept_in_the_echo_and_the_answer() {
    let r = ask("WwW.ExAmPlE.cOm", Rtype::AAAA);
    assert_eq!(r.question, "WwW.ExAmPlE.cOm AAAA");
    assert_eq!(r.answer, ["WwW.ExAmPlE.cOm AAAA"]);
    let wild = ask("FOO.Wild.example.com", Rtype::A);
    assert_eq!(wild.answer, ["FOO.Wild.example.com A"]);
}

#[test]
fn too_large_for_udp_sets_tc_and_tcp_gets_it_all() {
    let no_edns = ask_with("big.example.com", Rtype::TXT, None, Transport::Udp);
    assert!(no_edns.tc);
    assert_eq!((no_edns.rcode, no_edns.aa), (NOERROR, true));
    assert!(no_edns.answer.is_empty(), "no partial RRset");
    let small = ask_with("big.example.com", Rtype::TXT, Some(512), Transport::Udp);
    assert!(small.tc);
    let large = ask_with("big.example.com", Rtype::TXT, Some(1232), Transport::Udp);
    assert!(!large.tc);
    assert_eq!(large.answer.len(), 7);
    let tcp = ask_with("big.example.com", Rtype::TXT, None, Transport::Tcp);
    assert!(!tcp.tc);
    assert_eq!(tcp.answer.len(), 7);
}

/// An RRset of 70,000 addresses fits no response, not even over TCP: it is refused whole (TC
/// set), the record count never passes 65,535 (found by fuzzing the zone image) and the buffer
/// stops growing at the size limit instead of holding the whole RRset first.
#[test]
fn an_rrset_larger_than_any_message_is_truncated_without_growing_the_buffer() {
    let mut text = String::from(
        "$ORIGIN example.com.\n@ 3600 IN SOA ns1 hostmaster 1 7200 3600 1209600 300\n@ 3600 IN NS ns1\n",
    );
    for i in 0..70_000u32 {
        let [_, a, b, c] = i.to_be_bytes();
        text.push_str(&format!("huge 60 IN A 10.{a}.{b}.{c}\n"));
    }
    let origin = Dname::parse_absolute("example.com").unwrap();
    let zone = model::zonefile::parse(&text, &origin, 3600).expect("zone parses");
    let zone = ZoneSnapshot::compile(&zone.into_zone(origin).expect("SOA"));
    let snapshot = Snapshot::empty().with_zone(Arc::new(zone));
    for transport in [Transport::Udp, Transport::Tcp] {
        let mut out = Vec::with_capacity(4096);
        let question = packet("huge.example.com", Rtype::A, Some(1232));
        assert!(matches!(
            respond(&snapshot, &question, transport, &mut out),
            Outcome::Respond { .. }
        ));
        let message = Message::from_slice(&out[..]).expect("response parses");
        assert!(message.header().tc(), "{transport:?}");
        assert_eq!(message.header_counts().ancount(), 0, "{transport:?}");
        assert!(
            out.capacity() <= 2 * 65_536,
            "{transport:?}: {}",
            out.capacity()
        );
    }
}

#[test]
fn any_gets_one_rrset_over_udp_and_tcp() {
    for transport in [Transport::Udp, Transport::Tcp] {
        let r = ask_with("www.example.com", Rtype::ANY, Some(1232), transport);
        assert_eq!((r.rcode, r.aa, r.tc), (NOERROR, true, false));
        assert_eq!(r.answer, ["www.example.com A"]);
    }
    let apex = ask_with("example.com", Rtype::ANY, Some(1232), Transport::Tcp);
    assert_eq!(apex.answer, ["example.com NS"]);
    assert_eq!(apex.additional, ["ns1.example.com A"]);
    let ent = ask("b.c.example.com", Rtype::ANY);
    assert_eq!((ent.rcode, ent.answer.len()), (NOERROR, 0));
}

#[test]
fn a_name_in_no_zone_is_refused() {
    let r = ask("www.example.org", Rtype::A);
    assert_eq!((r.rcode, r.aa, r.reason), (REFUSED, false, Reason::NotOurs));
}

/// An image with random bytes changed and its checksum made good again, so that the parse
/// itself meets the damage: it is refused, or it reads into a zone that answers every query
/// without a panic. (A damaged checksum is refused before parsing; see `model`'s tests.)
#[test]
fn a_mangled_image_with_a_good_checksum_is_refused_or_answered_from() {
    use model::snapshot::image;
    let origin = Dname::parse_absolute("example.com").unwrap();
    let parsed = model::zonefile::parse(ZONE, &origin, 3600).expect("zone parses");
    let zone = ZoneSnapshot::compile(&parsed.into_zone(origin).expect("SOA"));
    let mut bytes = Vec::new();
    assert!(image::write(&zone, &mut bytes).unwrap());
    let questions: Vec<Vec<u8>> = [
        ("www.example.com", Rtype::A),
        ("example.com", Rtype::SOA),
        ("example.com", Rtype::NS),
        ("alias.example.com", Rtype::A),
        ("loop1.example.com", Rtype::A),
        ("host.sub.example.com", Rtype::A),
        ("x.wild.example.com", Rtype::TXT),
        ("y.wild.example.com", Rtype::A),
        ("missing.example.com", Rtype::AAAA),
        ("b.c.example.com", Rtype::A),
        ("big.example.com", Rtype::ANY),
    ]
    .iter()
    .map(|&(name, qtype)| packet(name, qtype, Some(1232)))
    .collect();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let (mut refused, mut answered) = (0, 0);
    for _ in 0..3000 {
        let mut mangled = bytes.clone();
        let body = mangled.len() - 4;
        for _ in 0..1 + next() % 4 {
            let at = next() as usize % body;
            mangled[at] = next() as u8;
        }
        let crc = crc32fast::hash(&mangled[..body]);
        mangled[body..].copy_from_slice(&crc.to_le_bytes());
        let Ok(read) = image::read(std::io::Cursor::new(&mangled), mangled.len() as u64) else {
            refused += 1;
            continue;
        };
        answered += 1;
        let snapshot = Snapshot::empty().with_zone(Arc::new(read));
        let mut out = Vec::new();
        for question in &questions {
            for transport in [Transport::Udp, Transport::Tcp] {
                respond(&snapshot, question, transport, &mut out);
            }
        }
    }
    // Both ways were taken: the test says something about each.
    assert!(
        refused > 100 && answered > 100,
        "{refused} refused, {answered} read"
    );
}
