//! Health checks end to end over DNS: the failover example of SPEC §4 with a real HTTPS origin
//! (stop it: the backup answers; start it: the primary is back, each within
//! interval × (threshold + 1) + 1 s), fail-open and backup records acting on real checks, the
//! per-record history and "Test now".

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use domain::base::iana::Rtype;
use test_support::tls::{HttpsOrigin, TestPki};
use test_support::{DnzServer, QueryOptions, free_port, query};

fn answers(server: &DnzServer, name: &str) -> Vec<String> {
    let mut got: Vec<String> = query(server.dns, name, Rtype::A, &QueryOptions::default())
        .answer
        .iter()
        .map(|line| line.split_whitespace().last().unwrap_or("").to_string())
        .collect();
    got.sort();
    got
}

/// Polls DNS until the answer is `want`; returns how long it took.
fn wait_for(server: &DnzServer, name: &str, want: &[&str], limit: Duration) -> Duration {
    let start = Instant::now();
    loop {
        let got = answers(server, name);
        if got == want {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < limit,
            "{name} still answers {got:?}, not {want:?}, after {limit:?}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
}

#[test]
fn failover_follows_a_real_https_origin() {
    let pki = TestPki::new("www.failover.test");
    let dir = tempfile::tempdir().unwrap();
    let ca = dir.path().join("ca.pem");
    std::fs::write(&ca, &pki.ca_pem).unwrap();
    let port = free_port();
    let origin_addr: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let origin = HttpsOrigin::start(&pki, origin_addr);

    let server = DnzServer::start(&["--check-ca", ca.to_str().unwrap()]);
    server.api_ok("POST", "/api/v1/zones", Some(r#"{"name":"failover.test"}"#));
    let check = format!(
        r#"{{"kind":"https","port":{port},"path":"/health","interval":1,"timeout":500,"down_after":2,"up_after":2}}"#
    );
    let primary = format!(
        r#"{{"name":"www","type":"A","value":"127.0.0.1","steering":{{"weight":1,"check":{check}}}}}"#
    );
    let primary: api::Record = serde_json::from_str(&server.api_ok(
        "POST",
        "/api/v1/zones/failover.test/records",
        Some(&primary),
    ))
    .unwrap();
    server.api_ok(
        "POST",
        "/api/v1/zones/failover.test/records",
        Some(r#"{"name":"www","type":"A","value":"127.0.0.2","steering":{"weight":0}}"#),
    );
    // Healthy (or not yet checked): the primary.
    wait_for(
        &server,
        "www.failover.test",
        &["127.0.0.1"],
        Duration::from_secs(5),
    );
    // Let a passing check land so the record is known up.
    std::thread::sleep(Duration::from_millis(1500));

    // Interval 1 s, down after 2: within 1 × (2 + 1) + 1 = 4 s of the stop.
    origin.stop();
    let took = wait_for(
        &server,
        "www.failover.test",
        &["127.0.0.2"],
        Duration::from_secs(10),
    );
    assert!(took <= Duration::from_secs(4), "failover took {took:?}");

    // Up after 2 passes: within 4 s of the restart on the same port.
    let origin = HttpsOrigin::start(&pki, origin_addr);
    let took = wait_for(
        &server,
        "www.failover.test",
        &["127.0.0.1"],
        Duration::from_secs(10),
    );
    assert!(took <= Duration::from_secs(4), "recovery took {took:?}");

    // The history has both changes, with the failing reason. The answer flips first and the
    // event is written just after, so give the write a moment.
    let expected = [
        ("up".to_string(), "down".to_string()),
        ("down".into(), "up".into()),
    ];
    let deadline = Instant::now() + Duration::from_secs(5);
    let events = loop {
        let events: Vec<api::HealthEvent> = serde_json::from_str(&server.api_ok(
            "GET",
            &format!(
                "/api/v1/zones/failover.test/records/{}/health-events",
                primary.id
            ),
            None,
        ))
        .unwrap();
        let flips: Vec<(String, String)> = events
            .iter()
            .map(|e| (e.old_state.clone(), e.new_state.clone()))
            .collect();
        if flips.ends_with(&expected) {
            break events;
        }
        assert!(Instant::now() < deadline, "{events:?}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let down = events.iter().rev().find(|e| e.new_state == "down").unwrap();
    assert_eq!(
        down.reason.as_deref(),
        Some("connection refused"),
        "{events:?}"
    );

    // The record shows its health; the CLI table too.
    let steering = server.cli(&["record", "steering", "failover.test"]);
    let table = String::from_utf8_lossy(&steering.stdout);
    assert!(
        table.contains("HEALTH")
            && table
                .lines()
                .any(|l| l.contains("127.0.0.1") && l.contains(" up ")),
        "{table}"
    );

    // Test now: runs once, saves nothing.
    let test = format!(r#"{{"address":"127.0.0.1","name":"www.failover.test","check":{check}}}"#);
    let result: api::CheckResult =
        serde_json::from_str(&server.api_ok("POST", "/api/v1/checks/test", Some(&test))).unwrap();
    assert!(result.healthy, "{result:?}");
    let wrong_host =
        format!(r#"{{"address":"127.0.0.1","name":"other.failover.test","check":{check}}}"#);
    let result: api::CheckResult =
        serde_json::from_str(&server.api_ok("POST", "/api/v1/checks/test", Some(&wrong_host)))
            .unwrap();
    assert!(!result.healthy);
    assert_eq!(
        result.reason.as_deref(),
        Some("TLS: certificate not valid for other.failover.test")
    );
    let cli = server.cli(&[
        "record",
        "steer",
        "failover.test",
        "www",
        "A",
        "127.0.0.1",
        "--test",
    ]);
    assert!(
        String::from_utf8_lossy(&cli.stdout).starts_with("healthy"),
        "{cli:?}"
    );
    drop(origin);
}

#[test]
fn fail_open_and_backup_act_on_real_checks() {
    let server = DnzServer::start(&[]);
    server.api_ok(
        "POST",
        "/api/v1/zones",
        Some(r#"{"name":"realhealth.test"}"#),
    );
    // A closed port: every tcp check fails with "connection refused".
    let closed = free_port();
    let up = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let open = up.local_addr().unwrap().port();
    let add = |name: &str, address: &str, steering: String| {
        let body =
            format!(r#"{{"name":"{name}","type":"A","value":"{address}","steering":{steering}}}"#);
        server.api_ok("POST", "/api/v1/zones/realhealth.test/records", Some(&body));
    };
    let tcp = |port: u16| {
        format!(
            r#"{{"check":{{"kind":"tcp","port":{port},"interval":1,"timeout":300,"down_after":1,"up_after":1}}}}"#
        )
    };
    // All down and nothing else: all answered.
    add("all", "127.0.0.1", tcp(closed));
    add("all", "127.0.0.2", tcp(closed));
    // Backup: answers only once both primaries are down.
    add("bk", "127.0.0.1", tcp(open));
    add("bk", "127.0.0.2", tcp(closed));
    add("bk", "127.0.0.9", r#"{"backup":true}"#.to_string());
    add("bk2", "127.0.0.3", tcp(closed));
    add("bk2", "127.0.0.4", tcp(closed));
    add("bk2", "127.0.0.9", r#"{"backup":true}"#.to_string());

    wait_for(
        &server,
        "bk2.realhealth.test",
        &["127.0.0.9"],
        Duration::from_secs(10),
    );
    wait_for(
        &server,
        "bk.realhealth.test",
        &["127.0.0.1"],
        Duration::from_secs(10),
    );
    assert_eq!(
        answers(&server, "all.realhealth.test"),
        ["127.0.0.1", "127.0.0.2"]
    );
    let records: Vec<api::Record> =
        serde_json::from_str(&server.api_ok("GET", "/api/v1/zones/realhealth.test/records", None))
            .unwrap();
    let all_down = records
        .iter()
        .filter(|r| r.name == "all")
        .all(|r| r.health.as_ref().is_some_and(|h| h.state == "down"));
    assert!(all_down, "{records:?}");
    drop(up);
}

#[test]
fn known_states_survive_a_restart_and_removed_checks_stop() {
    let dir = tempfile::tempdir().unwrap();
    // An origin that counts the connections (checks) it gets.
    let counting = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let counted_port = counting.local_addr().unwrap().port();
    let hits = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
    {
        let hits = hits.clone();
        std::thread::spawn(move || {
            for stream in counting.incoming() {
                if stream.is_err() {
                    break;
                }
                hits.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
            }
        });
    }
    // An origin that accepts and never replies: each check takes its whole 900 ms timeout, so
    // right after a restart no new result can exist yet and only the stored state decides.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    std::thread::spawn(move || {
        let mut held = Vec::new();
        for stream in silent.incoming().flatten() {
            held.push(stream);
        }
    });
    let server = DnzServer::start_in(dir.path(), &[]);
    server.api_ok("POST", "/api/v1/zones", Some(r#"{"name":"persist.test"}"#));
    let check = format!(
        r#"{{"kind":"tcp","port":{silent_port},"payload":"ping","body":"pong","interval":1,"timeout":900,"down_after":1,"up_after":1}}"#
    );
    let body = format!(
        r#"{{"name":"www","type":"A","value":"127.0.0.1","steering":{{"check":{check}}}}}"#
    );
    server.api_ok("POST", "/api/v1/zones/persist.test/records", Some(&body));
    server.api_ok(
        "POST",
        "/api/v1/zones/persist.test/records",
        Some(r#"{"name":"www","type":"A","value":"127.0.0.9","steering":{"backup":true}}"#),
    );
    // A steered name with an unsteered member: the topology after the restart shows both.
    for body in [
        r#"{"name":"api","type":"A","value":"127.0.0.5","steering":{"weight":2}}"#,
        r#"{"name":"API","type":"A","value":"127.0.0.6"}"#,
        r#"{"name":"other","type":"A","value":"127.0.0.7"}"#,
    ] {
        server.api_ok("POST", "/api/v1/zones/persist.test/records", Some(body));
    }
    wait_for(
        &server,
        "www.persist.test",
        &["127.0.0.9"],
        Duration::from_secs(10),
    );
    let records: Vec<api::Record> =
        serde_json::from_str(&server.api_ok("GET", "/api/v1/zones/persist.test/records", None))
            .unwrap();
    assert!(
        records
            .iter()
            .any(|r| r.health.as_ref().is_some_and(|h| h.state == "down")),
        "{records:?}"
    );
    assert!(server.stop().success());

    let server = DnzServer::start_in(dir.path(), &[]);
    // Right after the restart, before any new result could flip it: still down, backup answers.
    assert_eq!(answers(&server, "www.persist.test"), ["127.0.0.9"]);
    // The restart read back the steered names' records, unsteered members too, and no others.
    let topology: api::Topology =
        serde_json::from_str(&server.api_ok("GET", "/api/v1/topology", None)).unwrap();
    let mut edges: Vec<(&str, &str, &str)> = topology
        .edges
        .iter()
        .filter(|e| e.from.starts_with("record:"))
        .map(|e| (e.from.as_str(), e.to.as_str(), e.label.as_str()))
        .collect();
    edges.sort();
    assert_eq!(
        edges,
        [
            ("record:api.persist.test./A", "origin:127.0.0.5", "weight 2"),
            (
                "record:api.persist.test./A",
                "origin:127.0.0.6",
                "not steered"
            ),
            ("record:www.persist.test./A", "origin:127.0.0.1", "weight 1"),
            ("record:www.persist.test./A", "origin:127.0.0.9", "backup"),
        ],
        "{topology:?}"
    );
    let down = topology.origins.iter().find(|o| o.address == "127.0.0.1");
    assert_eq!(
        down.map(|o| o.health.as_str()),
        Some("down"),
        "{topology:?}"
    );

    // A check on a record that is then deleted stops at once.
    let counted = format!(r#"{{"kind":"tcp","port":{counted_port},"interval":1,"timeout":300}}"#);
    let body = format!(
        r#"{{"name":"count","type":"A","value":"127.0.0.1","steering":{{"check":{counted}}}}}"#
    );
    let record: api::Record = serde_json::from_str(&server.api_ok(
        "POST",
        "/api/v1/zones/persist.test/records",
        Some(&body),
    ))
    .unwrap();
    let start = Instant::now();
    while hits.load(std::sync::atomic::Ordering::SeqCst) < 2 {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "the check never ran"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    server.api_ok(
        "DELETE",
        &format!("/api/v1/zones/persist.test/records/{}", record.id),
        None,
    );
    std::thread::sleep(Duration::from_millis(300));
    let after_delete = hits.load(std::sync::atomic::Ordering::SeqCst);
    std::thread::sleep(Duration::from_millis(2500));
    assert_eq!(
        hits.load(std::sync::atomic::Ordering::SeqCst),
        after_delete,
        "checks went on after the record was deleted"
    );
}
