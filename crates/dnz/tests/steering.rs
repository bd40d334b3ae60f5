//! Traffic steering through the API, the CLI and DNS: validation errors that name the field,
//! `record steer` changing only what it is given, `explain`, and ECS scopes seen by dig.

use domain::base::iana::Rtype;
use test_support::{DnzServer, QueryOptions, query, require_program};

fn error_field(body: &str) -> (String, String) {
    let error: api::ErrorBody =
        serde_json::from_str(body).unwrap_or_else(|e| panic!("{e}: {body}"));
    (error.field.unwrap_or_default(), error.error)
}

#[test]
fn bad_steering_is_refused_naming_the_field() {
    let server = DnzServer::start(&[]);
    server.api_ok("POST", "/api/v1/zones", Some(r#"{"name":"steer.test"}"#));
    let cases = [
        (
            r#"{"countries":["XX"]}"#,
            "A",
            "steering.countries",
            "not an ISO 3166",
        ),
        (
            r#"{"countries":["id"]}"#,
            "A",
            "steering.countries",
            "upper case",
        ),
        (
            r#"{"continents":["EUROPE"]}"#,
            "A",
            "steering.continents",
            "not a continent code",
        ),
        (r#"{"weight":-1}"#, "A", "steering.weight", "out of range"),
        (
            r#"{"check":{"kind":"https","timeout":40000}}"#,
            "A",
            "steering.check.timeout",
            "below the interval",
        ),
        (
            r#"{"check":{"kind":"gopher"}}"#,
            "A",
            "steering.check.kind",
            "not a check kind",
        ),
        (r#"{"weight":1}"#, "TXT", "steering", "A and AAAA"),
    ];
    for (steering, rtype, field, text) in cases {
        let value = if rtype == "TXT" {
            r#""hello""#
        } else {
            "192.0.2.1"
        };
        let body = format!(
            r#"{{"name":"www","type":"{rtype}","value":{},"steering":{steering}}}"#,
            serde_json::json!(value)
        );
        let (status, response) = server.api(
            "POST",
            "/api/v1/zones/steer.test/records",
            Some(&body),
            None,
        );
        assert_eq!(status, 422, "{body} -> {response}");
        let (got_field, message) = error_field(&response);
        assert_eq!(got_field, field, "{body} -> {response}");
        assert!(message.contains(text), "{body} -> {response}");
    }
    let records: Vec<api::Record> =
        serde_json::from_str(&server.api_ok("GET", "/api/v1/zones/steer.test/records", None))
            .unwrap();
    assert_eq!(records.len(), 1, "only the NS record: nothing was stored");

    // Steering set on an existing record: the same checks, and the record keeps its id.
    let added: api::Record = serde_json::from_str(&server.api_ok(
        "POST",
        "/api/v1/zones/steer.test/records",
        Some(r#"{"name":"www","type":"A","value":"192.0.2.1"}"#),
    ))
    .unwrap();
    let path = format!("/api/v1/zones/steer.test/records/{}/steering", added.id);
    let (status, response) = server.api("PUT", &path, Some(r#"{"countries":["ZZ"]}"#), None);
    assert_eq!(
        (status, error_field(&response).0.as_str()),
        (422, "steering.countries"),
        "{response}"
    );
    let steered: api::Record = serde_json::from_str(&server.api_ok(
        "PUT",
        &path,
        Some(r#"{"countries":["ID"],"weight":3}"#),
    ))
    .unwrap();
    assert_eq!(steered.id, added.id);
    assert_eq!(steered.steering.unwrap().countries, ["ID"]);
    let plain: api::Record = serde_json::from_str(&server.api_ok("DELETE", &path, None)).unwrap();
    assert_eq!((plain.id, plain.steering), (added.id, None));
}

fn cli_ok(server: &DnzServer, args: &[&str]) -> String {
    let output = server.cli(args);
    assert!(
        output.status.success(),
        "dnz {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn record_steer_changes_only_the_options_given_and_explain_shows_the_steps() {
    let server = DnzServer::start(&["--demo"]);
    // Created when missing.
    let created = cli_ok(
        &server,
        &[
            "record",
            "steer",
            "example.com",
            "shop",
            "A",
            "192.0.2.50",
            "--countries",
            "ID,SG",
            "--weight",
            "3",
        ],
    );
    assert!(
        created.contains("ID,SG") && created.contains('3'),
        "{created}"
    );
    // Only --continents changes; countries and weight stay.
    cli_ok(
        &server,
        &[
            "record",
            "steer",
            "example.com",
            "shop",
            "A",
            "192.0.2.50",
            "--continents",
            "EU",
        ],
    );
    let json = cli_ok(&server, &["--json", "record", "steering", "example.com"]);
    let steered: Vec<api::Record> = serde_json::from_str(&json).unwrap();
    let shop = steered
        .iter()
        .find(|r| r.name == "shop")
        .expect("shop is steered");
    let steering = shop.steering.clone().unwrap();
    assert_eq!(
        (steering.countries, steering.continents, steering.weight),
        (vec!["ID".into(), "SG".into()], vec!["EU".into()], Some(3))
    );
    // A bad option: the server's message, exit 1.
    let bad = server.cli(&[
        "record",
        "steer",
        "example.com",
        "shop",
        "A",
        "192.0.2.50",
        "--countries",
        "XX",
    ]);
    assert_eq!(bad.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&bad.stderr).contains("steering.countries"));
    // --off removes the steering and keeps the record.
    cli_ok(
        &server,
        &[
            "record",
            "steer",
            "example.com",
            "shop",
            "A",
            "192.0.2.50",
            "--off",
        ],
    );
    let table = cli_ok(&server, &["record", "steering", "example.com"]);
    assert!(!table.contains("192.0.2.50"), "{table}");
    assert!(cli_ok(&server, &["record", "list", "example.com"]).contains("192.0.2.50"));

    let explained = cli_ok(
        &server,
        &[
            "explain",
            "www.example.com",
            "A",
            "--client",
            "198.51.100.7",
        ],
    );
    for part in [
        "198.51.100.7 is in DE (EU)",
        "records for continent EU",
        "198.51.100.20",
        "4. weight",
    ] {
        assert!(
            explained.contains(part),
            "explain lacks {part:?}:\n{explained}"
        );
    }
    let explained = cli_ok(
        &server,
        &[
            "explain",
            "www.example.com",
            "A",
            "--client",
            "10.0.0.1",
            "--ecs",
            "192.0.2.0/24",
        ],
    );
    assert!(
        explained.contains("records for country ID") && explained.contains("ECS scope /24"),
        "{explained}"
    );
}

#[test]
fn ecs_scope_over_dns_with_the_demo_database() {
    let server = DnzServer::start(&["--demo"]);
    // Our own client first: place-dependent answers carry the deciding network's prefix.
    let opts = QueryOptions {
        edns: Some(1232),
        ..Default::default()
    };
    let plain = query(server.dns, "www.example.com", Rtype::A, &opts);
    assert_eq!(
        plain.answer,
        ["www.example.com. 300 IN A 192.0.2.30"],
        "loopback has no place: the default"
    );

    let Some(dig) = require_program("dig") else {
        return;
    };
    let dig_subnet = |name: &str, subnet: &str| -> (String, String) {
        let output = std::process::Command::new(&dig)
            .args([
                "@127.0.0.1",
                "-p",
                &server.dns.port().to_string(),
                name,
                "A",
                &format!("+subnet={subnet}"),
                "+noall",
                "+answer",
                "+comments",
                "+time=3",
                "+tries=1",
            ])
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&output.stdout).to_string();
        let scope_line = text
            .lines()
            .find(|l| l.contains("CLIENT-SUBNET"))
            .unwrap_or_default()
            .to_string();
        let answer = text
            .lines()
            .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
            .map(|l| l.split_whitespace().last().unwrap_or("").to_string())
            .collect::<Vec<_>>()
            .join(",");
        (scope_line, answer)
    };
    // 192.0.2.0/25 is ID in the demo database: source /24, network /25, scope /24 (never above the source).
    let (scope, answer) = dig_subnet("www.example.com", "192.0.2.0/24");
    assert!(scope.ends_with("192.0.2.0/24/24"), "{scope}");
    assert_eq!(answer, "203.0.113.10");
    let (scope, answer) = dig_subnet("www.example.com", "192.0.2.0/30");
    assert!(scope.ends_with("192.0.2.0/30/25"), "{scope}");
    assert_eq!(answer, "203.0.113.10");
    let (scope, answer) = dig_subnet("www.example.com", "198.51.100.0/24");
    assert!(scope.ends_with("198.51.100.0/24/24"), "{scope}");
    assert_eq!(answer, "198.51.100.20");
    // An unsteered name does not depend on place: scope 0.
    let (scope, answer) = dig_subnet("mail.example.com", "198.51.100.0/24");
    assert!(scope.ends_with("198.51.100.0/24/0"), "{scope}");
    assert_eq!(answer, "192.0.2.25");
}

#[test]
fn reimporting_a_zone_file_keeps_steering_and_ids() {
    let server = DnzServer::start(&["--demo"]);
    let before: Vec<api::Record> =
        serde_json::from_str(&server.api_ok("GET", "/api/v1/zones/example.com/records", None))
            .unwrap();
    let exported = server.api_ok("GET", "/api/v1/zones/example.com/export", None);
    // The zone file has no steering; importing it again must not lose any.
    let with_new = format!("{exported}new\t300\tIN\tA\t192.0.2.99\n");
    server.api_ok("POST", "/api/v1/zones/example.com/import", Some(&with_new));
    let after: Vec<api::Record> =
        serde_json::from_str(&server.api_ok("GET", "/api/v1/zones/example.com/records", None))
            .unwrap();
    for old in before.iter().filter(|r| r.steering.is_some()) {
        let kept = after
            .iter()
            .find(|r| r.id == old.id)
            .unwrap_or_else(|| panic!("record {} lost its id", old.id));
        assert_eq!((&kept.value, &kept.steering), (&old.value, &old.steering));
    }
    assert!(
        after
            .iter()
            .any(|r| r.name == "new" && r.steering.is_none())
    );
    assert_eq!(
        query(
            server.dns,
            "www.example.com",
            Rtype::A,
            &QueryOptions::default()
        )
        .answer,
        ["www.example.com. 300 IN A 192.0.2.30"]
    );
}
