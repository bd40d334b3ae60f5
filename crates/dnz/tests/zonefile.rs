//! Zone file import and export through the API: a round trip keeps every record, the export
//! passes BIND's `named-checkzone`, and a bad file changes nothing and names every bad line.

use test_support::{DnzServer, require_program};

const ZONE: &str = include_str!("fixtures/roundtrip.zone");

fn records(server: &DnzServer, zone: &str) -> Vec<(String, String, u32, String)> {
    let text = server.api_ok("GET", &format!("/api/v1/zones/{zone}/records"), None);
    let list: Vec<api::Record> = serde_json::from_str(&text).unwrap();
    let mut out: Vec<_> = list
        .into_iter()
        .map(|r| (r.fqdn.to_lowercase(), r.rtype, r.ttl, r.value))
        .collect();
    out.sort();
    out
}

#[test]
fn import_export_import_keeps_every_record_and_passes_named_checkzone() {
    let server = DnzServer::start(&[]);
    let imported: api::ImportResult = serde_json::from_str(&server.api_ok(
        "POST",
        "/api/v1/zones/roundtrip.test/import",
        Some(ZONE),
    ))
    .unwrap();
    assert_eq!(imported.records, 24);
    assert_eq!(
        imported.serial, 2024050101,
        "a new zone takes the file's serial"
    );
    let first = records(&server, "roundtrip.test");
    assert_eq!(first.len(), 24);

    let exported = server.api_ok("GET", "/api/v1/zones/roundtrip.test/export", None);
    let again: api::ImportResult = serde_json::from_str(&server.api_ok(
        "POST",
        "/api/v1/zones/roundtrip.test/import",
        Some(&exported),
    ))
    .unwrap();
    assert!(
        again.serial > imported.serial,
        "serial went from {} to {}",
        imported.serial,
        again.serial
    );
    assert_eq!(records(&server, "roundtrip.test"), first);

    let Some(checkzone) = require_program("named-checkzone") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("roundtrip.zone");
    std::fs::write(&path, &exported).unwrap();
    let output = std::process::Command::new(checkzone)
        .arg("roundtrip.test")
        .arg(&path)
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "named-checkzone rejected the export:\n{}\n{}\n{exported}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

#[test]
fn a_bad_file_changes_nothing_and_names_every_bad_line() {
    let server = DnzServer::start(&[]);
    server.api_ok("POST", "/api/v1/zones/roundtrip.test/import", Some(ZONE));
    let before = records(&server, "roundtrip.test");
    let bad = "$ORIGIN roundtrip.test.\n@ IN NS ns1\nok IN A 192.0.2.1\nbad1 IN A 999.0.0.1\nbad2 IN MX mail\n$INCLUDE /etc/passwd\nw IN CNAME x\nw IN A 192.0.2.2\nout.example.org. IN A 192.0.2.3\n";
    let (status, body) = server.api(
        "POST",
        "/api/v1/zones/roundtrip.test/import",
        Some(bad),
        None,
    );
    assert_eq!(status, 422, "{body}");
    let error: api::ErrorBody = serde_json::from_str(&body).unwrap();
    let fields: Vec<&str> = error.errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["line 4", "line 5", "line 6"], "{body}");
    assert!(error.errors[2].message.contains("$INCLUDE"), "{body}");
    assert_eq!(records(&server, "roundtrip.test"), before);

    // Syntax is fine, the data is not: each problem still names its line.
    let semantic = "$ORIGIN roundtrip.test.\n@ IN NS ns1\nw IN CNAME x\nw IN A 192.0.2.2\nout.example.org. IN A 192.0.2.3\n";
    let (status, body) = server.api(
        "POST",
        "/api/v1/zones/roundtrip.test/import",
        Some(semantic),
        None,
    );
    assert_eq!(status, 422, "{body}");
    let error: api::ErrorBody = serde_json::from_str(&body).unwrap();
    let fields: Vec<&str> = error.errors.iter().map(|e| e.field.as_str()).collect();
    assert_eq!(fields, ["line 5: name", "line 3: type"], "{body}");
    assert_eq!(records(&server, "roundtrip.test"), before);
}
