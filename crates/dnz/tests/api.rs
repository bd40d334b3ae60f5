//! The HTTP API's contract: authentication, roles, validation errors that name the field and
//! store nothing, serial increments, health, metrics and the OpenAPI document.

use domain::base::iana::Rtype;
use test_support::{DnzServer, QueryOptions, query};

fn serial(server: &DnzServer, zone: &str) -> u32 {
    let zone: api::Zone =
        serde_json::from_str(&server.api_ok("GET", &format!("/api/v1/zones/{zone}"), None))
            .unwrap();
    zone.serial
}

fn error(body: &str) -> api::ErrorBody {
    serde_json::from_str(body).unwrap_or_else(|e| panic!("not an error body ({e}): {body}"))
}

/// Creates a user with `role` and returns a token for it, through the public API.
fn token_for(server: &DnzServer, name: &str, role: &str) -> String {
    let body = format!(r#"{{"name":"{name}","password":"correct horse","role":"{role}"}}"#);
    server.api_ok("POST", "/api/v1/users", Some(&body));
    let login = format!(r#"{{"name":"{name}","password":"correct horse"}}"#);
    let (status, text) = server.api("POST", "/api/v1/session", Some(&login), Some("none"));
    assert_eq!(status, 200, "{text}");
    let session: api::Session = serde_json::from_str(&text).unwrap();
    session
        .token
        .expect("a password login without cookie returns a token")
}

#[test]
fn writes_need_a_token_and_the_right_role() {
    let server = DnzServer::start(&[]);
    server.api_ok("POST", "/api/v1/zones", Some(r#"{"name":"roles.test"}"#));
    let record = r#"{"name":"www","type":"A","value":"192.0.2.1"}"#;

    // No token, then a wrong one: 401.
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .new_agent();
    let response = agent
        .post(&server.url("/api/v1/zones/roles.test/records"))
        .header("Content-Type", "application/json")
        .send(record)
        .unwrap();
    assert_eq!(response.status().as_u16(), 401);
    let (status, body) = server.api(
        "POST",
        "/api/v1/zones/roles.test/records",
        Some(record),
        Some("dnz_wrong"),
    );
    assert_eq!(status, 401, "{body}");
    assert!(error(&body).error.contains("invalid or revoked token"));
    let (status, _) = server.api("GET", "/api/v1/zones", None, Some("dnz_wrong"));
    assert_eq!(status, 401);

    // A viewer reads but cannot write; an editor writes but cannot manage users.
    let viewer = token_for(&server, "vera", "viewer");
    let (status, _) = server.api(
        "GET",
        "/api/v1/zones/roles.test/records",
        None,
        Some(&viewer),
    );
    assert_eq!(status, 200);
    let (status, body) = server.api(
        "POST",
        "/api/v1/zones/roles.test/records",
        Some(record),
        Some(&viewer),
    );
    assert_eq!(status, 403, "{body}");
    assert!(error(&body).error.contains("needs editor"), "{body}");
    let (status, _) = server.api("DELETE", "/api/v1/zones/roles.test", None, Some(&viewer));
    assert_eq!(status, 403);
    let editor = token_for(&server, "ed", "editor");
    let (status, body) = server.api(
        "POST",
        "/api/v1/zones/roles.test/records",
        Some(record),
        Some(&editor),
    );
    assert_eq!(status, 201, "{body}");
    let (status, _) = server.api("GET", "/api/v1/users", None, Some(&editor));
    assert_eq!(status, 403);
    let (status, _) = server.api(
        "POST",
        "/api/v1/users",
        Some(r#"{"name":"x","password":"12345678","role":"superadmin"}"#),
        Some(&editor),
    );
    assert_eq!(status, 403);

    // Only the editor's write is stored.
    let records: Vec<api::Record> =
        serde_json::from_str(&server.api_ok("GET", "/api/v1/zones/roles.test/records", None))
            .unwrap();
    assert_eq!(records.iter().filter(|r| r.rtype == "A").count(), 1);

    // A revoked token stops working.
    let tokens: Vec<api::Token> =
        serde_json::from_str(&server.api_ok("GET", "/api/v1/tokens", None)).unwrap();
    let ed_token = tokens.iter().find(|t| t.user == "ed").unwrap();
    server.api_ok("DELETE", &format!("/api/v1/tokens/{}", ed_token.id), None);
    let (status, _) = server.api("GET", "/api/v1/zones", None, Some(&editor));
    assert_eq!(status, 401);
}

#[test]
fn bad_records_are_refused_naming_the_field_and_nothing_is_stored() {
    let server = DnzServer::start(&[]);
    server.api_ok("POST", "/api/v1/zones", Some(r#"{"name":"valid.test"}"#));
    server.api_ok(
        "POST",
        "/api/v1/zones/valid.test/records",
        Some(r#"{"name":"www","type":"A","value":"192.0.2.1"}"#),
    );
    let before = server.api_ok("GET", "/api/v1/zones/valid.test/records", None);
    let serial_before = serial(&server, "valid.test");

    let cases = [
        (
            r#"{"name":"www","type":"A","value":"192.0.2.300"}"#,
            422,
            "value",
            "expected IPv4",
        ),
        (
            r#"{"name":"www","type":"AAAA","value":"192.0.2.1"}"#,
            422,
            "value",
            "AAAA",
        ),
        (
            r#"{"name":"www","type":"BOGUS","value":"1"}"#,
            422,
            "type",
            "unknown record type",
        ),
        (
            r#"{"name":"www","type":"SOA","value":"a b 1 2 3 4 5"}"#,
            422,
            "type",
            "cannot be stored",
        ),
        (
            r#"{"name":"www.other.org.","type":"A","value":"192.0.2.1"}"#,
            422,
            "name",
            "outside the zone",
        ),
        (
            r#"{"name":"bad..name","type":"A","value":"192.0.2.1"}"#,
            422,
            "name",
            "bad name",
        ),
        (
            r#"{"name":"www","type":"CNAME","value":"web"}"#,
            422,
            "type",
            "beside other data",
        ),
        (
            r#"{"name":"@","type":"CNAME","value":"web"}"#,
            422,
            "type",
            "apex",
        ),
        (
            r#"{"name":"www","type":"A","value":"192.0.2.2","ttl":4294967295}"#,
            422,
            "ttl",
            "above",
        ),
        (
            r#"{"name":"www","type":"A","value":"192.0.2.1"}"#,
            422,
            "value",
            "duplicate",
        ),
        (
            r#"{"name":"www","type":"MX","value":"mail"}"#,
            422,
            "value",
            "MX",
        ),
        (
            r#"{"name":"www","type":"A","value":"192.0.2.1","ttl":-5}"#,
            400,
            "ttl",
            "bad JSON",
        ),
        (
            r#"{"name":"www","type":"A"}"#,
            400,
            "value",
            "missing field",
        ),
        (r#"not json"#, 400, "", "bad JSON"),
    ];
    for (body, want_status, want_field, want_text) in cases {
        let (status, text) =
            server.api("POST", "/api/v1/zones/valid.test/records", Some(body), None);
        assert_eq!(status, want_status, "{body} -> {text}");
        let err = error(&text);
        if !want_field.is_empty() {
            assert_eq!(err.field.as_deref(), Some(want_field), "{body} -> {text}");
        }
        assert!(err.error.contains(want_text), "{body} -> {text}");
    }
    assert_eq!(
        server.api_ok("GET", "/api/v1/zones/valid.test/records", None),
        before
    );
    assert_eq!(
        serial(&server, "valid.test"),
        serial_before,
        "a refused write must not bump the serial"
    );

    // Zone names are checked too, and a second zone of the same name conflicts.
    let (status, text) = server.api(
        "POST",
        "/api/v1/zones",
        Some(r#"{"name":"bad..zone"}"#),
        None,
    );
    assert_eq!(
        (status, error(&text).field.as_deref()),
        (422, Some("name")),
        "{text}"
    );
    let (status, _) = server.api(
        "POST",
        "/api/v1/zones",
        Some(r#"{"name":"valid.test"}"#),
        None,
    );
    assert_eq!(status, 409);
    let (status, _) = server.api("GET", "/api/v1/zones/missing.test/records", None, None);
    assert_eq!(status, 404);
}

#[test]
fn every_change_increases_the_serial_and_reaches_dns_at_once() {
    let server = DnzServer::start(&[]);
    server.api_ok("POST", "/api/v1/zones", Some(r#"{"name":"serial.test"}"#));
    let mut last = serial(&server, "serial.test");
    let added: api::Record = serde_json::from_str(&server.api_ok(
        "POST",
        "/api/v1/zones/serial.test/records",
        Some(r#"{"name":"www","type":"A","value":"192.0.2.1","ttl":60}"#),
    ))
    .unwrap();
    let now = serial(&server, "serial.test");
    assert!(now > last);
    last = now;
    let dns = query(
        server.dns,
        "www.serial.test",
        Rtype::A,
        &QueryOptions::default(),
    );
    assert_eq!(dns.answer, ["www.serial.test. 60 IN A 192.0.2.1"]);
    let soa = query(
        server.dns,
        "serial.test",
        Rtype::SOA,
        &QueryOptions::default(),
    );
    assert!(
        soa.answer[0].contains(&format!(" {last} ")),
        "{:?} lacks serial {last}",
        soa.answer
    );

    server.api_ok(
        "PUT",
        &format!("/api/v1/zones/serial.test/records/{}", added.id),
        Some(r#"{"name":"www","type":"A","value":"192.0.2.2","ttl":60}"#),
    );
    let now = serial(&server, "serial.test");
    assert!(now > last);
    last = now;
    let dns = query(
        server.dns,
        "www.serial.test",
        Rtype::A,
        &QueryOptions::default(),
    );
    assert_eq!(dns.answer, ["www.serial.test. 60 IN A 192.0.2.2"]);

    let deleted = server.api_ok(
        "DELETE",
        "/api/v1/zones/serial.test/records?name=www&type=A&value=192.0.2.2",
        None,
    );
    assert!(deleted.contains("192.0.2.2"));
    assert!(serial(&server, "serial.test") > last);
    let dns = query(
        server.dns,
        "www.serial.test",
        Rtype::A,
        &QueryOptions::default(),
    );
    assert_eq!(dns.rcode, "NXDOMAIN");

    server.api_ok("DELETE", "/api/v1/zones/serial.test", None);
    let dns = query(
        server.dns,
        "www.serial.test",
        Rtype::A,
        &QueryOptions::default(),
    );
    assert_eq!((dns.rcode.as_str(), dns.aa), ("REFUSED", false));
}

#[test]
fn health_metrics_openapi_and_login_rate_limit() {
    let server = DnzServer::start(&["--demo"]);
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .new_agent();
    let mut health = agent.get(&server.url("/healthz")).call().unwrap();
    assert_eq!(health.status().as_u16(), 200);
    assert_eq!(health.body_mut().read_to_string().unwrap(), "ok\n");

    query(
        server.dns,
        "www.example.com",
        Rtype::A,
        &QueryOptions::default(),
    );
    query(
        server.dns,
        "nope.example.com",
        Rtype::A,
        &QueryOptions::default(),
    );
    query(
        server.dns,
        "www.not-ours.test",
        Rtype::A,
        &QueryOptions::default(),
    );
    let metrics = agent
        .get(&server.url("/metrics"))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    for line in [
        "dnz_queries_by_rcode_total{rcode=\"NOERROR\"} 1",
        "dnz_queries_by_rcode_total{rcode=\"NXDOMAIN\"} 1",
        "dnz_queries_by_rcode_total{rcode=\"REFUSED\"} 1",
        "dnz_queries_total{transport=\"udp\"} 3",
    ] {
        assert!(metrics.contains(line), "metrics lack {line}:\n{metrics}");
    }

    let epoch_line = metrics
        .lines()
        .find(|l| l.starts_with("dnz_geoip_build_epoch_seconds "))
        .unwrap_or_else(|| panic!("no GeoIP age metric:\n{metrics}"));
    let epoch: i64 = epoch_line
        .split_whitespace()
        .last()
        .unwrap()
        .parse()
        .unwrap();
    assert!(
        epoch > 1_600_000_000,
        "the demo database's build time: {epoch_line}"
    );

    let openapi = agent
        .get(&server.url("/api/v1/openapi.json"))
        .call()
        .unwrap()
        .body_mut()
        .read_to_string()
        .unwrap();
    let doc: serde_json::Value = serde_json::from_str(&openapi).unwrap();
    assert_eq!(doc["openapi"], "3.1.0");
    assert!(doc["paths"]["/api/v1/zones/{zone}/records"]["post"].is_object());

    // Failed logins from one address are limited.
    let bad = r#"{"name":"admin","password":"wrong password"}"#;
    let mut statuses = Vec::new();
    for _ in 0..7 {
        statuses.push(
            server
                .api("POST", "/api/v1/session", Some(bad), Some("none"))
                .0,
        );
    }
    assert_eq!(statuses, [401, 401, 401, 401, 401, 429, 429]);
}
