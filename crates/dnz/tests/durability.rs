//! Data written through the API survives a graceful restart (SIGTERM) and a crash (SIGKILL):
//! every write that was acknowledged with a 2xx is there after the restart, through the API and
//! over DNS, the SOA serial never goes back, and nothing that was refused or never sent appears.

use std::collections::{BTreeMap, BTreeSet};
use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use domain::base::iana::Rtype;
use test_support::{DnzServer, QueryOptions, query};

const ZONE: &str = "durable.test";

fn records(server: &DnzServer) -> Vec<api::Record> {
    let body = server.api_ok("GET", &format!("/api/v1/zones/{ZONE}/records"), None);
    serde_json::from_str(&body).unwrap_or_else(|e| panic!("records JSON ({e}): {body}"))
}

fn zone_serial(server: &DnzServer) -> u32 {
    let body = server.api_ok("GET", &format!("/api/v1/zones/{ZONE}"), None);
    let zone: api::Zone =
        serde_json::from_str(&body).unwrap_or_else(|e| panic!("zone JSON ({e}): {body}"));
    assert_eq!(zone.serial, zone.soa.serial, "zone serial and SOA serial");
    zone.serial
}

/// The SOA serial as answered over DNS.
fn dns_serial(server: &DnzServer) -> u32 {
    let response = query(server.dns, ZONE, Rtype::SOA, &QueryOptions::default());
    assert_eq!(response.rcode, "NOERROR", "{response:?}");
    assert!(response.aa, "{response:?}");
    let [soa] = &response.answer[..] else {
        panic!("one SOA expected: {response:?}");
    };
    // `owner ttl class SOA mname rname serial refresh retry expire minimum`
    let fields: Vec<&str> = soa.split_whitespace().collect();
    fields[6]
        .parse()
        .unwrap_or_else(|e| panic!("serial in {soa:?}: {e}"))
}

fn answer_of(server: &DnzServer, name: &str, rtype: Rtype, tcp: bool) -> Vec<String> {
    let opts = QueryOptions {
        tcp,
        ..Default::default()
    };
    let response = query(server.dns, name, rtype, &opts);
    assert_eq!(response.rcode, "NOERROR", "{name} {rtype}: {response:?}");
    assert!(response.aa, "{name} {rtype}: {response:?}");
    response.answer
}

/// `(name, type, value)` of every record, for comparisons.
fn record_set(records: &[api::Record]) -> BTreeSet<(String, String, String)> {
    records
        .iter()
        .map(|r| (r.name.clone(), r.rtype.clone(), r.value.clone()))
        .collect()
}

#[test]
fn zone_and_records_survive_a_graceful_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = DnzServer::start_in(dir.path(), &[]);
    server.api_ok(
        "POST",
        "/api/v1/zones",
        Some(&format!(r#"{{"name":"{ZONE}"}}"#)),
    );
    let adds = [
        r#"{"name":"www","type":"A","value":"192.0.2.10","ttl":120}"#,
        r#"{"name":"www","type":"A","value":"192.0.2.11","ttl":120}"#,
        r#"{"name":"www","type":"AAAA","value":"2001:db8::10"}"#,
        r#"{"name":"@","type":"MX","value":"10 mail"}"#,
        r#"{"name":"mail","type":"A","value":"192.0.2.25"}"#,
        r#"{"name":"@","type":"TXT","value":"\"durable text\""}"#,
        r#"{"name":"alias","type":"CNAME","value":"www"}"#,
    ];
    for body in adds {
        server.api_ok("POST", &format!("/api/v1/zones/{ZONE}/records"), Some(body));
    }
    let before = records(&server);
    let serial_before = zone_serial(&server);
    assert_eq!(dns_serial(&server), serial_before);
    let www_before = answer_of(&server, "www.durable.test", Rtype::A, false);
    assert_eq!(www_before.len(), 2, "{www_before:?}");

    let status = server.stop();
    assert!(status.success(), "SIGTERM exit status {status:?}");

    let server = DnzServer::start_in(dir.path(), &[]);
    let zones = server.api_ok("GET", "/api/v1/zones", None);
    assert!(
        zones.contains("durable.test"),
        "zone list after restart: {zones}"
    );
    let after = records(&server);
    assert_eq!(
        record_set(&after),
        record_set(&before),
        "records after restart"
    );
    let ids_before: BTreeSet<i64> = before.iter().map(|r| r.id).collect();
    let ids_after: BTreeSet<i64> = after.iter().map(|r| r.id).collect();
    assert_eq!(ids_after, ids_before, "record ids after restart");
    assert_eq!(zone_serial(&server), serial_before, "serial after restart");
    assert_eq!(
        dns_serial(&server),
        serial_before,
        "DNS serial after restart"
    );

    for tcp in [false, true] {
        let mut www = answer_of(&server, "www.durable.test", Rtype::A, tcp);
        www.sort();
        assert_eq!(
            www,
            [
                "www.durable.test. 120 IN A 192.0.2.10",
                "www.durable.test. 120 IN A 192.0.2.11"
            ],
            "tcp={tcp}"
        );
        let aaaa = answer_of(&server, "www.durable.test", Rtype::AAAA, tcp);
        assert_eq!(aaaa.len(), 1, "{aaaa:?}");
        assert!(aaaa[0].ends_with("AAAA 2001:db8::10"), "{aaaa:?}");
    }
    let mx = answer_of(&server, ZONE, Rtype::MX, false);
    assert_eq!(mx.len(), 1, "{mx:?}");
    assert!(mx[0].ends_with("MX 10 mail.durable.test."), "{mx:?}");
    let txt = answer_of(&server, ZONE, Rtype::TXT, false);
    assert_eq!(txt.len(), 1, "{txt:?}");
    assert!(txt[0].contains("durable text"), "{txt:?}");
    let alias = answer_of(&server, "alias.durable.test", Rtype::A, false);
    assert!(
        alias[0].ends_with("CNAME www.durable.test.") && alias.len() == 3,
        "{alias:?}"
    );

    // The restarted server keeps counting from the stored serial.
    server.api_ok(
        "POST",
        &format!("/api/v1/zones/{ZONE}/records"),
        Some(r#"{"name":"late","type":"A","value":"192.0.2.99"}"#),
    );
    assert!(zone_serial(&server) > serial_before, "serial went back");
    let status = server.stop();
    assert!(status.success(), "second SIGTERM exit status {status:?}");
}

/// What happened to one write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum WriteResult {
    /// A 2xx came back: it must survive.
    Acked,
    /// An error status came back: it must not be there.
    Refused(u16),
    /// No status line came back (the server died, or was dead): it may or may not be there.
    Unknown,
}

/// One HTTP/1.0 request on a fresh connection (so the body ends at EOF, never chunked); the
/// status and body, or an error when no complete status line came back.
fn http(
    addr: SocketAddr,
    token: &str,
    method: &str,
    path: &str,
    body: Option<&str>,
) -> std::io::Result<(u16, String)> {
    let mut stream = TcpStream::connect_timeout(&addr, Duration::from_secs(2))?;
    stream.set_read_timeout(Some(Duration::from_secs(10)))?;
    stream.set_write_timeout(Some(Duration::from_secs(10)))?;
    let body = body.unwrap_or("");
    let request = format!(
        "{method} {path} HTTP/1.0\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\n\
         Content-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    stream.write_all(request.as_bytes())?;
    let mut response = Vec::new();
    // A reset after the status line still tells us the status: keep what was read.
    let read = stream.read_to_end(&mut response);
    let text = String::from_utf8_lossy(&response);
    let status = text
        .lines()
        .next()
        .filter(|line| line.starts_with("HTTP/1.") && line.len() >= 12)
        .and_then(|line| line.get(9..12))
        .and_then(|code| code.parse::<u16>().ok());
    match (status, read) {
        (Some(status), _) => {
            let body = text.split_once("\r\n\r\n").map_or("", |(_, b)| b);
            Ok((status, body.to_string()))
        }
        (None, Err(e)) => Err(e),
        (None, Ok(_)) => Err(std::io::Error::other(format!("no status line in {text:?}"))),
    }
}

fn address(i: usize) -> String {
    format!("198.18.{}.{}", i / 256, i % 256)
}

struct Burst {
    writes: Vec<WriteResult>,
    /// The highest serial read back from the API after an acknowledged write.
    max_serial_seen: u32,
    /// Transport errors before the kill was announced: there should be none.
    early_errors: Vec<String>,
}

/// Adds `r{i} A 198.18.x.y` one after another until `deadline`, or until a write fails after
/// `killed` is set. After each acknowledged write it reads the zone's serial back.
fn write_burst(
    addr: SocketAddr,
    token: String,
    killed: Arc<AtomicBool>,
    deadline: Instant,
) -> Burst {
    let mut burst = Burst {
        writes: Vec::new(),
        max_serial_seen: 0,
        early_errors: Vec::new(),
    };
    let path = format!("/api/v1/zones/{ZONE}/records");
    while Instant::now() < deadline {
        let i = burst.writes.len();
        let body = format!(
            r#"{{"name":"r{i}","type":"A","value":"{}","ttl":60}}"#,
            address(i)
        );
        // Read the flag before the request: an error is only expected once it was set.
        let kill_announced = killed.load(Ordering::SeqCst);
        match http(addr, &token, "POST", &path, Some(&body)) {
            Ok((status, _)) if (200..300).contains(&status) => {
                burst.writes.push(WriteResult::Acked);
                if let Ok((200, zone)) =
                    http(addr, &token, "GET", &format!("/api/v1/zones/{ZONE}"), None)
                    && let Ok(zone) = serde_json::from_str::<api::Zone>(&zone)
                {
                    burst.max_serial_seen = burst.max_serial_seen.max(zone.serial);
                }
            }
            Ok((status, text)) => {
                burst.writes.push(WriteResult::Refused(status));
                if !killed.load(Ordering::SeqCst) {
                    burst.early_errors.push(format!("r{i}: {status} {text}"));
                }
            }
            Err(e) => {
                burst.writes.push(WriteResult::Unknown);
                if kill_announced {
                    break;
                }
                if !killed.load(Ordering::SeqCst) {
                    burst.early_errors.push(format!("r{i}: {e}"));
                }
            }
        }
    }
    burst
}

#[test]
fn acknowledged_writes_survive_kill_9() {
    let dir = tempfile::tempdir().expect("temp dir");
    let server = DnzServer::start_in(dir.path(), &[]);
    server.api_ok(
        "POST",
        "/api/v1/zones",
        Some(&format!(r#"{{"name":"{ZONE}"}}"#)),
    );
    server.api_ok(
        "POST",
        &format!("/api/v1/zones/{ZONE}/records"),
        Some(r#"{"name":"before","type":"A","value":"192.0.2.1"}"#),
    );
    let serial_at_start = zone_serial(&server);

    let (addr, token) = (server.http, server.token.clone());
    let killed = Arc::new(AtomicBool::new(false));
    let started = Instant::now();
    let writer = {
        let killed = killed.clone();
        let deadline = started + Duration::from_secs(2);
        std::thread::spawn(move || write_burst(addr, token, killed, deadline))
    };
    std::thread::sleep(Duration::from_millis(1000));
    killed.store(true, Ordering::SeqCst);
    server.kill9();
    let killed_at = started.elapsed();
    let burst = writer.join().expect("writer thread");

    assert!(
        burst.early_errors.is_empty(),
        "writes failed before the kill: {:?}",
        burst.early_errors
    );
    let acked: BTreeMap<String, String> = burst
        .writes
        .iter()
        .enumerate()
        .filter(|(_, w)| **w == WriteResult::Acked)
        .map(|(i, _)| (format!("r{i}"), address(i)))
        .collect();
    let maybe: BTreeMap<String, String> = burst
        .writes
        .iter()
        .enumerate()
        .filter(|(_, w)| **w == WriteResult::Unknown)
        .map(|(i, _)| (format!("r{i}"), address(i)))
        .collect();
    let refused: Vec<(usize, u16)> = burst
        .writes
        .iter()
        .enumerate()
        .filter_map(|(i, w)| match w {
            WriteResult::Refused(status) => Some((i, *status)),
            _ => None,
        })
        .collect();
    eprintln!(
        "killed after {killed_at:?}: {} writes acknowledged, {} unknown, {} refused {refused:?}",
        acked.len(),
        maybe.len(),
        refused.len()
    );
    assert!(
        acked.len() >= 5,
        "too few writes before the kill to test anything: {:?}",
        burst.writes
    );

    let server = DnzServer::start_in(dir.path(), &[]);
    let after = records(&server);
    let mut present: BTreeMap<String, String> = BTreeMap::new();
    for record in &after {
        if record.name == "before" {
            assert_eq!(record.value, "192.0.2.1");
            continue;
        }
        if record.rtype == "NS" && record.name == "@" {
            continue;
        }
        assert_eq!(record.rtype, "A", "unexpected record {record:?}");
        let previous = present.insert(record.name.clone(), record.value.clone());
        assert!(previous.is_none(), "record stored twice: {record:?}");
    }
    assert!(
        after.iter().any(|r| r.name == "before"),
        "record written before the burst is gone"
    );
    for (name, value) in &acked {
        assert_eq!(
            present.get(name),
            Some(value),
            "acknowledged write {name} A {value} lost after kill -9"
        );
    }
    for (name, value) in &present {
        let allowed = acked.get(name).or_else(|| maybe.get(name));
        assert_eq!(
            allowed,
            Some(value),
            "{name} A {value} is present but was never acknowledged nor in flight"
        );
    }

    // Over DNS: every acknowledged record answers, alternately over UDP and TCP.
    for (k, (name, value)) in acked.iter().enumerate() {
        let fqdn = format!("{name}.{ZONE}");
        let answer = answer_of(&server, &fqdn, Rtype::A, k % 8 == 0);
        assert_eq!(answer, [format!("{fqdn}. 60 IN A {value}")], "{fqdn}");
    }
    let answer = answer_of(&server, &format!("before.{ZONE}"), Rtype::A, false);
    assert_eq!(answer.len(), 1, "{answer:?}");

    // The serial never goes back past an acknowledged change.
    let serial = zone_serial(&server);
    let served = dns_serial(&server);
    assert_eq!(served, serial, "DNS and API serial after restart");
    assert!(
        serial >= burst.max_serial_seen,
        "serial {serial} is below {} seen after an acknowledged write",
        burst.max_serial_seen
    );
    assert!(
        serial >= serial_at_start.saturating_add(acked.len() as u32),
        "serial {serial} did not count {} acknowledged changes from {serial_at_start}",
        acked.len()
    );

    // And the restarted server keeps working.
    server.api_ok(
        "POST",
        &format!("/api/v1/zones/{ZONE}/records"),
        Some(r#"{"name":"after","type":"A","value":"192.0.2.2"}"#),
    );
    assert!(zone_serial(&server) > serial);
    let status = server.stop();
    assert!(status.success(), "SIGTERM exit status {status:?}");
}
