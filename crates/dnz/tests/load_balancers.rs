//! Load balancers through the API and DNS (SPEC §7): ownership of A/AAAA/CNAME at the name
//! (409 both ways), a disabled load balancer, the per-zone limits with their messages, the
//! answers surviving a restart, and health end to end with real TCP listeners.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use domain::base::iana::Rtype;
use test_support::{DnzServer, QueryOptions, query};

fn error_of(body: &str) -> (String, String) {
    let error: api::ErrorBody =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    (error.field.unwrap_or_default(), error.error)
}

fn answers(server: &DnzServer, name: &str, rtype: Rtype) -> Vec<String> {
    query(server.dns, name, rtype, &QueryOptions::default()).answer
}

#[test]
fn load_balancer_owns_its_name_and_answers_one_origin() {
    let dir = tempfile::tempdir().unwrap();
    let server = DnzServer::start_in(dir.path(), &[]);
    server.api_ok("POST", "/api/v1/zones", Some(r#"{"name":"lb.test"}"#));
    server.api_ok(
        "POST",
        "/api/v1/zones/lb.test/pools",
        Some(r#"{"name":"eu","origins":[{"address":"192.0.2.1"},{"address":"2001:db8::1"}]}"#),
    );
    // An LB cannot be created over an A record.
    server.api_ok(
        "POST",
        "/api/v1/zones/lb.test/records",
        Some(r#"{"name":"old","type":"A","value":"192.0.2.9"}"#),
    );
    let (status, body) = server.api(
        "POST",
        "/api/v1/zones/lb.test/load-balancers",
        Some(r#"{"name":"old","pools":["eu"]}"#),
        None,
    );
    assert_eq!(status, 409, "{body}");
    let (field, message) = error_of(&body);
    assert_eq!(field, "name");
    assert!(message.contains("owns A, AAAA and CNAME"), "{message}");
    // A pool that does not exist is named by its field.
    let (status, body) = server.api(
        "POST",
        "/api/v1/zones/lb.test/load-balancers",
        Some(r#"{"name":"www","pools":["eu","nope"]}"#),
        None,
    );
    assert_eq!(status, 422, "{body}");
    assert_eq!(error_of(&body).0, "pools[1]");
    let created = server.api_ok(
        "POST",
        "/api/v1/zones/lb.test/load-balancers",
        Some(r#"{"name":"www","pools":["eu"],"ttl":60}"#),
    );
    let lb: api::LoadBalancer = serde_json::from_str(&created).unwrap();
    assert_eq!(lb.fqdn, "www.lb.test.");
    let a = answers(&server, "www.lb.test", Rtype::A);
    assert_eq!(a.len(), 1, "{a:?}");
    assert!(a[0].contains("60") && a[0].ends_with("192.0.2.1"), "{a:?}");
    let aaaa = answers(&server, "www.lb.test", Rtype::AAAA);
    assert!(
        aaaa.len() == 1 && aaaa[0].ends_with("2001:db8::1"),
        "{aaaa:?}"
    );
    // While it exists, A/AAAA/CNAME at its name are refused; other types are fine.
    for (rtype, value) in [
        ("A", "192.0.2.7"),
        ("AAAA", "2001:db8::7"),
        ("CNAME", "other"),
    ] {
        let (status, body) = server.api(
            "POST",
            "/api/v1/zones/lb.test/records",
            Some(&format!(
                r#"{{"name":"www","type":"{rtype}","value":"{value}"}}"#
            )),
            None,
        );
        assert_eq!(status, 409, "{rtype}: {body}");
        assert!(error_of(&body).1.contains("load balancer"), "{body}");
    }
    server.api_ok(
        "POST",
        "/api/v1/zones/lb.test/records",
        Some(r#"{"name":"www","type":"TXT","value":"\"hello\""}"#),
    );
    // A pool in use cannot be deleted.
    let (status, body) = server.api("DELETE", "/api/v1/zones/lb.test/pools/eu", None, None);
    assert_eq!(status, 409, "{body}");
    // Disabled: no A/AAAA answers, other types unaffected.
    server.api_ok(
        "PUT",
        "/api/v1/zones/lb.test/load-balancers/www",
        Some(r#"{"name":"www","pools":["eu"],"enabled":false}"#),
    );
    let response = query(
        server.dns,
        "www.lb.test",
        Rtype::A,
        &QueryOptions::default(),
    );
    assert_eq!(
        (response.rcode.as_str(), response.answer.len()),
        ("NOERROR", 0)
    );
    assert_eq!(answers(&server, "www.lb.test", Rtype::TXT).len(), 1);
    // Enabled again; the answer survives a restart (pools and LBs are stored).
    server.api_ok(
        "PUT",
        "/api/v1/zones/lb.test/load-balancers/www",
        Some(r#"{"name":"www","pools":["eu"],"ttl":60}"#),
    );
    let pools = server.api_ok("GET", "/api/v1/zones/lb.test/pools", None);
    let pools: Vec<api::Pool> = serde_json::from_str(&pools).unwrap();
    assert_eq!(pools[0].origins[0].health, "healthy");
    server.stop();
    let server = DnzServer::start_in(dir.path(), &[]);
    let a = answers(&server, "www.lb.test", Rtype::A);
    assert!(a.len() == 1 && a[0].ends_with("192.0.2.1"), "{a:?}");
    let shown = server.api_ok("GET", "/api/v1/zones/lb.test/load-balancers/www", None);
    let shown: api::LoadBalancer = serde_json::from_str(&shown).unwrap();
    assert_eq!((shown.spec.ttl, shown.spec.enabled), (Some(60), Some(true)));
    // Deleting the LB frees the name for records.
    server.api_ok("DELETE", "/api/v1/zones/lb.test/load-balancers/www", None);
    server.api_ok(
        "POST",
        "/api/v1/zones/lb.test/records",
        Some(r#"{"name":"www","type":"A","value":"192.0.2.7"}"#),
    );
}

#[test]
fn per_zone_limits_are_refused_with_their_messages() {
    let server = DnzServer::start(&[]);
    server.api_ok("POST", "/api/v1/zones", Some(r#"{"name":"limits.test"}"#));
    // 21 origins in one pool.
    let origins: Vec<String> = (0..21)
        .map(|i| format!(r#"{{"address":"192.0.2.{i}"}}"#))
        .collect();
    let (status, body) = server.api(
        "POST",
        "/api/v1/zones/limits.test/pools",
        Some(&format!(
            r#"{{"name":"big","origins":[{}]}}"#,
            origins.join(",")
        )),
        None,
    );
    assert_eq!(status, 422, "{body}");
    assert_eq!(
        error_of(&body),
        (
            "origins".into(),
            "a pool holds at most 20 origins; this one has 21".into()
        )
    );
    // Origin fields are named by index.
    let (status, body) = server.api(
        "POST",
        "/api/v1/zones/limits.test/pools",
        Some(r#"{"name":"w","origins":[{"address":"192.0.2.1"},{"address":"192.0.2.2","weight":0}]}"#),
        None,
    );
    assert_eq!(status, 422, "{body}");
    assert_eq!(error_of(&body).0, "origins[1].weight");
    // 50 pools, then the 51st.
    for i in 0..50 {
        server.api_ok(
            "POST",
            "/api/v1/zones/limits.test/pools",
            Some(&format!(
                r#"{{"name":"p{i}","origins":[{{"address":"192.0.2.1"}}]}}"#
            )),
        );
    }
    let (status, body) = server.api(
        "POST",
        "/api/v1/zones/limits.test/pools",
        Some(r#"{"name":"p50"}"#),
        None,
    );
    assert_eq!(status, 409, "{body}");
    assert!(error_of(&body).1.contains("at most 50 pools"), "{body}");
    server.api_ok("DELETE", "/api/v1/zones/limits.test/pools/p49", None);
    let (status, body) = server.api(
        "POST",
        "/api/v1/zones/limits.test/pools",
        Some(r#"{"name":"p1"}"#),
        None,
    );
    assert_eq!(status, 409, "{body}");
    assert!(error_of(&body).1.contains("already exists"), "{body}");
    // 201 pool entries in one load balancer.
    let rules: Vec<String> = (0..40)
        .map(|i| format!(r#"{{"kind":"pop","key":"pop{i}","pools":["p0","p1","p2","p3","p4"]}}"#))
        .collect();
    let (status, body) = server.api(
        "POST",
        "/api/v1/zones/limits.test/load-balancers",
        Some(&format!(
            r#"{{"name":"www","pools":["p0"],"rules":[{}]}}"#,
            rules.join(",")
        )),
        None,
    );
    assert_eq!(status, 422, "{body}");
    assert!(
        error_of(&body).1.contains("at most 200 pool entries"),
        "{body}"
    );
    // 50 load balancers, then the 51st.
    for i in 0..50 {
        server.api_ok(
            "POST",
            "/api/v1/zones/limits.test/load-balancers",
            Some(&format!(r#"{{"name":"lb{i}","pools":["p0"]}}"#)),
        );
    }
    let (status, body) = server.api(
        "POST",
        "/api/v1/zones/limits.test/load-balancers",
        Some(r#"{"name":"lb50","pools":["p0"]}"#),
        None,
    );
    assert_eq!(status, 409, "{body}");
    assert!(
        error_of(&body).1.contains("at most 50 load balancers"),
        "{body}"
    );
    // Rule keys are validated like steering's.
    let (status, body) = server.api(
        "POST",
        "/api/v1/zones/limits.test/load-balancers",
        Some(r#"{"name":"geo","pools":["p0"],"rules":[{"kind":"country","key":"XX","pools":["p1"]}]}"#),
        None,
    );
    assert_eq!(status, 422, "{body}");
    assert_eq!(error_of(&body).0, "rules[0].key");
}

/// Waits until `name` answers `want`, or fails after `limit`.
fn wait_for_answer(server: &DnzServer, name: &str, want: &str, limit: Duration) {
    let start = Instant::now();
    loop {
        let a = answers(server, name, Rtype::A);
        if a.len() == 1 && a[0].ends_with(want) {
            return;
        }
        assert!(
            start.elapsed() < limit,
            "{name} never answered {want}: {a:?}"
        );
        std::thread::sleep(Duration::from_millis(100));
    }
}

#[test]
fn failover_pool_moves_to_the_next_priority_when_a_tcp_check_fails() {
    let first = TcpListener::bind("127.0.0.1:0").unwrap();
    let second = TcpListener::bind("127.0.0.2:0").unwrap();
    let (port1, port2) = (
        first.local_addr().unwrap().port(),
        second.local_addr().unwrap().port(),
    );
    let server = DnzServer::start(&[]);
    server.api_ok("POST", "/api/v1/zones", Some(r#"{"name":"hc.test"}"#));
    let check = |port: u16| {
        format!(
            r#"{{"kind":"tcp","port":{port},"interval":1,"timeout":500,"down_after":1,"up_after":1}}"#
        )
    };
    server.api_ok(
        "POST",
        "/api/v1/zones/hc.test/pools",
        Some(&format!(
            r#"{{"name":"main","algorithm":"failover","origins":[
                {{"address":"127.0.0.1","priority":1,"check":{}}},
                {{"address":"127.0.0.2","priority":2,"check":{}}}]}}"#,
            check(port1),
            check(port2)
        )),
    );
    server.api_ok(
        "POST",
        "/api/v1/zones/hc.test/load-balancers",
        Some(r#"{"name":"www","pools":["main"]}"#),
    );
    wait_for_answer(&server, "www.hc.test", "127.0.0.1", Duration::from_secs(5));
    // "Run health checks" sees both up.
    let checked = server.api_ok("POST", "/api/v1/zones/hc.test/pools/main/check", Some("{}"));
    let checked: Vec<api::OriginCheck> = serde_json::from_str(&checked).unwrap();
    assert!(checked.iter().all(|c| c.result.healthy), "{checked:?}");
    // Stop the first listener: the pool fails over to priority 2.
    drop(first);
    wait_for_answer(&server, "www.hc.test", "127.0.0.2", Duration::from_secs(10));
    let pools = server.api_ok("GET", "/api/v1/zones/hc.test/pools/main", None);
    let pool: api::Pool = serde_json::from_str(&pools).unwrap();
    assert_eq!(pool.origins[0].health, "unhealthy", "{pool:?}");
    assert_eq!(pool.origins[1].health, "healthy", "{pool:?}");
    // Back up: priority 1 answers again.
    let _first = TcpListener::bind(("127.0.0.1", port1)).unwrap();
    wait_for_answer(&server, "www.hc.test", "127.0.0.1", Duration::from_secs(10));
    drop(second);
}
