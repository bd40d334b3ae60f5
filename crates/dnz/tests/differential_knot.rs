//! Differential test: the same zone file served by Knot DNS and by dnz must give the same
//! answers to every query below: rcode, AA/TC/RD/RA flags, OPT presence and DO bit, the echoed
//! question, and the answer, authority and additional sections compared as sorted record lines.
//! Truncated (TC=1) responses are compared on rcode and flags only, as servers may keep
//! different amounts of data in them.
//!
//! Run with `cargo test -p dnz --test differential_knot` (`DIFF_VERBOSE=1` and `-- --nocapture`
//! print every compared response). Needs `knotd`: skipped with a note when it is missing,
//! except under `CI=true`.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use domain::base::Message;
use domain::base::iana::Rtype;
use test_support::dns::{build_query, parse_response};
use test_support::{DnzServer, QueryOptions, free_port, query_raw, require_program};

const ZONE: &str = include_str!("fixtures/differential.zone");
const ZONE_PATH: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/fixtures/differential.zone"
);

/// A `knotd` serving the fixture zone from a temp dir; killed on drop.
struct Knot {
    child: Child,
    addr: SocketAddr,
    dir: tempfile::TempDir,
}

impl Knot {
    fn start(knotd: &Path) -> Knot {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
        let root = dir.path();
        std::fs::create_dir_all(root.join("run")).unwrap();
        std::fs::create_dir_all(root.join("db")).unwrap();
        // Knot never writes the zone file back (zonefile-sync: -1) and keeps no journal, so the
        // fixture is only read.
        let conf = format!(
            "server:\n    rundir: \"{run}\"\n    listen: 127.0.0.1@{port}\n\
             log:\n  - target: stderr\n    any: info\n\
             database:\n    storage: \"{db}\"\n\
             template:\n  - id: default\n    storage: \"{db}\"\n    zonefile-sync: -1\n    \
             zonefile-load: whole\n    journal-content: none\n\
             zone:\n  - domain: example.com.\n    file: \"{zone}\"\n",
            run = root.join("run").display(),
            db = root.join("db").display(),
            zone = ZONE_PATH,
        );
        let conf_path = root.join("knot.conf");
        std::fs::write(&conf_path, conf).unwrap();
        let log = std::fs::File::create(root.join("knotd.log")).unwrap();
        let child = Command::new(knotd)
            .arg("-c")
            .arg(&conf_path)
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .expect("start knotd");
        let mut knot = Knot { child, addr, dir };
        knot.wait_ready();
        knot
    }

    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.path().join("knotd.log")).unwrap_or_default()
    }

    /// Waits until knotd answers the zone's SOA with AA over TCP (a refused connection fails
    /// fast, unlike a UDP query to a port nobody listens on yet).
    fn wait_ready(&mut self) {
        let deadline = Instant::now() + Duration::from_secs(30);
        let packet = build_query("example.com", Rtype::SOA, &QueryOptions::default());
        loop {
            if let Ok(Some(status)) = self.child.try_wait() {
                panic!("knotd exited with {status}:\n{}", self.log());
            }
            if let Some(raw) = query_raw(self.addr, &packet, true)
                && let Ok(response) = parse_response(&raw)
                && response.rcode == "NOERROR"
                && response.aa
                && !response.answer.is_empty()
            {
                return;
            }
            assert!(
                Instant::now() < deadline,
                "knotd did not serve example.com:\n{}",
                self.log()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    }
}

impl Drop for Knot {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// One query of the test.
struct Case {
    name: &'static str,
    rtype: Rtype,
    opts: QueryOptions,
}

fn udp() -> QueryOptions {
    QueryOptions::default()
}

fn tcp() -> QueryOptions {
    QueryOptions {
        tcp: true,
        ..Default::default()
    }
}

fn edns(size: u16) -> QueryOptions {
    QueryOptions {
        edns: Some(size),
        ..Default::default()
    }
}

fn no_edns() -> QueryOptions {
    QueryOptions {
        edns: None,
        ..Default::default()
    }
}

fn dnssec_ok() -> QueryOptions {
    QueryOptions {
        dnssec_ok: true,
        ..Default::default()
    }
}

fn recursion_desired() -> QueryOptions {
    QueryOptions {
        rd: true,
        ..Default::default()
    }
}

fn cases() -> Vec<Case> {
    let generic = Rtype::from_int(65534);
    let list: Vec<(&'static str, Rtype, QueryOptions)> = vec![
        // Existing names and types.
        ("example.com", Rtype::SOA, udp()),
        ("example.com", Rtype::NS, udp()),
        ("example.com", Rtype::A, udp()),
        ("example.com", Rtype::AAAA, udp()),
        ("example.com", Rtype::MX, udp()),
        ("example.com", Rtype::TXT, udp()),
        ("example.com", Rtype::CAA, udp()),
        ("www.example.com", Rtype::A, udp()),
        ("www.example.com", Rtype::AAAA, udp()),
        ("mail.example.com", Rtype::A, udp()),
        ("txt.example.com", Rtype::TXT, udp()),
        ("_sip._tcp.example.com", Rtype::SRV, udp()),
        ("ptr.example.com", Rtype::PTR, udp()),
        ("generic.example.com", generic, udp()),
        ("ns1.example.com", Rtype::A, udp()),
        ("ns2.example.com", Rtype::AAAA, udp()),
        // Wrong types: NODATA.
        ("www.example.com", Rtype::MX, udp()),
        ("www.example.com", Rtype::TXT, udp()),
        ("www.example.com", Rtype::CNAME, udp()),
        ("example.com", Rtype::PTR, udp()),
        ("example.com", Rtype::DNSKEY, udp()),
        ("mail2.example.com", Rtype::AAAA, udp()),
        ("generic.example.com", Rtype::A, udp()),
        ("txt.example.com", Rtype::A, udp()),
        ("www.example.com", Rtype::SOA, udp()),
        // Missing names: NXDOMAIN.
        ("nx.example.com", Rtype::A, udp()),
        ("below.www.example.com", Rtype::A, udp()),
        ("deep.nx.example.com", Rtype::AAAA, udp()),
        // Empty non-terminals.
        ("b.c.example.com", Rtype::A, udp()),
        ("c.example.com", Rtype::TXT, udp()),
        ("a.b.c.example.com", Rtype::A, udp()),
        ("x.b.c.example.com", Rtype::A, udp()),
        // Wildcard.
        ("foo.wild.example.com", Rtype::A, udp()),
        ("foo.wild.example.com", Rtype::TXT, udp()),
        ("foo.wild.example.com", Rtype::MX, udp()),
        ("deep.er.wild.example.com", Rtype::A, udp()),
        ("exists.wild.example.com", Rtype::A, udp()),
        ("exists.wild.example.com", Rtype::TXT, udp()),
        ("x.exists.wild.example.com", Rtype::A, udp()),
        ("wild.example.com", Rtype::A, udp()),
        ("*.wild.example.com", Rtype::TXT, udp()),
        ("foo.cn.example.com", Rtype::A, udp()),
        ("foo.cn.example.com", Rtype::CNAME, udp()),
        // Delegation: referrals, and DS answered by the parent side.
        ("sub.example.com", Rtype::NS, udp()),
        ("sub.example.com", Rtype::A, udp()),
        ("host.sub.example.com", Rtype::A, udp()),
        ("ns.sub.example.com", Rtype::A, udp()),
        ("deep.host.sub.example.com", Rtype::AAAA, udp()),
        ("sub.example.com", Rtype::DS, udp()),
        ("example.com", Rtype::DS, udp()),
        ("ns.sub.example.com", Rtype::AAAA, udp()),
        ("host.sub.example.com", Rtype::DS, udp()),
        // CNAME chains.
        ("chain1.example.com", Rtype::A, udp()),
        ("chain2.example.com", Rtype::AAAA, udp()),
        ("chain1.example.com", Rtype::CNAME, udp()),
        ("chain1.example.com", Rtype::MX, udp()),
        ("below.chain1.example.com", Rtype::A, udp()),
        ("outside.example.com", Rtype::A, udp()),
        ("dangling.example.com", Rtype::A, udp()),
        ("loop1.example.com", Rtype::A, udp()),
        ("loop2.example.com", Rtype::AAAA, udp()),
        ("towild.example.com", Rtype::A, udp()),
        ("towild.example.com", Rtype::TXT, udp()),
        ("tosub.example.com", Rtype::A, udp()),
        // ANY over UDP and TCP.
        ("example.com", Rtype::ANY, udp()),
        ("example.com", Rtype::ANY, tcp()),
        ("www.example.com", Rtype::ANY, udp()),
        ("_sip._tcp.example.com", Rtype::ANY, tcp()),
        ("foo.wild.example.com", Rtype::ANY, udp()),
        ("b.c.example.com", Rtype::ANY, udp()),
        ("nx.example.com", Rtype::ANY, udp()),
        ("chain1.example.com", Rtype::ANY, udp()),
        ("sub.example.com", Rtype::ANY, udp()),
        // Mixed-case qnames: the echo keeps the case.
        ("WwW.ExAmPlE.CoM", Rtype::A, udp()),
        ("CHAIN1.Example.COM", Rtype::A, udp()),
        ("FOO.Wild.example.com", Rtype::TXT, udp()),
        ("Sub.Example.Com", Rtype::A, udp()),
        ("NX.example.COM", Rtype::A, udp()),
        ("Example.Com", Rtype::MX, udp()),
        // TCP.
        ("www.example.com", Rtype::A, tcp()),
        ("big.example.com", Rtype::TXT, tcp()),
        ("example.com", Rtype::MX, tcp()),
        ("host.sub.example.com", Rtype::A, tcp()),
        // EDNS sizes and no EDNS.
        ("big.example.com", Rtype::TXT, edns(512)),
        ("big.example.com", Rtype::TXT, no_edns()),
        ("big.example.com", Rtype::TXT, edns(1232)),
        ("example.com", Rtype::NS, no_edns()),
        ("www.example.com", Rtype::A, no_edns()),
        ("nx.example.com", Rtype::A, no_edns()),
        // DO bit.
        ("www.example.com", Rtype::A, dnssec_ok()),
        ("nx.example.com", Rtype::A, dnssec_ok()),
        ("sub.example.com", Rtype::A, dnssec_ok()),
        // RD copied, RA never set.
        ("www.example.com", Rtype::A, recursion_desired()),
        // Not our zone: REFUSED.
        ("example.org", Rtype::A, udp()),
        ("www.example.net", Rtype::A, udp()),
        ("com", Rtype::SOA, udp()),
        (".", Rtype::NS, udp()),
    ];
    list.into_iter()
        .map(|(name, rtype, opts)| Case { name, rtype, opts })
        .collect()
}

fn describe(case: &Case) -> String {
    let o = &case.opts;
    let mut text = format!("{} {}", case.name, case.rtype);
    text.push_str(if o.tcp { " tcp" } else { " udp" });
    match o.edns {
        Some(size) => write!(text, " edns={size}").unwrap(),
        None => text.push_str(" no-edns"),
    }
    if o.dnssec_ok {
        text.push_str(" do");
    }
    if o.rd {
        text.push_str(" rd");
    }
    text
}

/// What is compared of a response, as lines of text.
fn view(raw: &[u8]) -> Vec<String> {
    let response = match parse_response(raw) {
        Ok(response) => response,
        Err(e) => return vec![format!("unparseable response: {e}")],
    };
    let opt = Message::from_slice(raw).ok().and_then(|m| {
        m.opt()
            .map(|opt| if opt.dnssec_ok() { "opt do" } else { "opt" })
    });
    let mut lines = vec![format!(
        "rcode={} aa={} tc={} rd={} ra={} {}",
        response.rcode,
        u8::from(response.aa),
        u8::from(response.tc),
        u8::from(response.rd),
        u8::from(response.ra),
        opt.unwrap_or("no-opt"),
    )];
    for q in &response.question {
        lines.push(format!("question: {q}"));
    }
    if response.tc {
        // Servers differ in what a truncated response keeps; the client discards it and
        // retries over TCP (RFC 2181 §9), so only rcode and flags matter.
        return lines;
    }
    for (section, records) in [
        ("answer", &response.answer),
        ("authority", &response.authority),
        ("additional", &response.additional),
    ] {
        let mut records = records.clone();
        records.sort();
        for record in records {
            lines.push(format!("{section}: {record}"));
        }
    }
    lines
}

fn ask(server: SocketAddr, packet: &[u8], tcp: bool) -> Vec<u8> {
    // One retry: a lost UDP datagram on loopback is rare but not impossible.
    query_raw(server, packet, tcp)
        .or_else(|| query_raw(server, packet, tcp))
        .unwrap_or_else(|| panic!("no response from {server}"))
}

#[test]
fn dnz_answers_like_knot() {
    let Some(knotd) = require_program("knotd") else {
        return;
    };
    let knot = Knot::start(&knotd);
    let dnz = DnzServer::start(&[]);
    dnz.api_ok("POST", "/api/v1/zones/example.com/import", Some(ZONE));

    // DIFF_VERBOSE=1 prints what was compared for every query.
    let verbose = std::env::var_os("DIFF_VERBOSE").is_some();
    let cases = cases();
    let mut report = String::new();
    let mut mismatches = 0;
    for (i, case) in cases.iter().enumerate() {
        let opts = QueryOptions {
            id: 0x4000 + i as u16,
            ..case.opts.clone()
        };
        let packet = build_query(case.name, case.rtype, &opts);
        let from_knot = view(&ask(knot.addr, &packet, opts.tcp));
        let from_dnz = view(&ask(dnz.dns, &packet, opts.tcp));
        if verbose {
            eprintln!("#{i} {}\n  {}", describe(case), from_dnz.join("\n  "));
        }
        if from_knot == from_dnz {
            continue;
        }
        mismatches += 1;
        writeln!(report, "\n#{i} {}", describe(case)).unwrap();
        for line in &from_knot {
            let mark = if from_dnz.contains(line) { ' ' } else { '-' };
            writeln!(report, "  {mark} knot {line}").unwrap();
        }
        for line in &from_dnz {
            if !from_knot.contains(line) {
                writeln!(report, "  + dnz  {line}").unwrap();
            }
        }
    }
    assert!(cases.len() >= 60, "only {} queries", cases.len());
    assert!(
        mismatches == 0,
        "{mismatches} of {} queries answered differently by dnz and Knot \
         (- only Knot, + only dnz):{report}",
        cases.len()
    );
    eprintln!("{} queries answered alike by dnz and Knot", cases.len());
}
