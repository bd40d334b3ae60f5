//! The `dnz` command line against a real server: tables by default, `--json` for scripts, the
//! server's message and a non-zero exit on errors.

use domain::base::iana::Rtype;
use test_support::{DnzServer, QueryOptions, query};

fn run_ok(server: &DnzServer, args: &[&str]) -> String {
    let output = server.cli(args);
    assert!(
        output.status.success(),
        "dnz {args:?} failed: {}\n{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

#[test]
fn zone_and_record_commands_work_end_to_end() {
    let server = DnzServer::start(&[]);
    run_ok(&server, &["zone", "create", "cli.test"]);
    let list = run_ok(&server, &["zone", "list"]);
    assert!(list.lines().next().unwrap().starts_with("NAME"), "{list}");
    assert!(list.contains("cli.test."), "{list}");

    run_ok(
        &server,
        &[
            "record",
            "add",
            "cli.test",
            "www",
            "A",
            "192.0.2.1",
            "--ttl",
            "60",
        ],
    );
    run_ok(
        &server,
        &["record", "add", "cli.test", "@", "MX", "10", "mail"],
    );
    let table = run_ok(&server, &["record", "list", "cli.test"]);
    assert!(
        table.contains("www") && table.contains("192.0.2.1") && table.contains("10 mail.cli.test."),
        "{table}"
    );
    let json = run_ok(&server, &["--json", "record", "list", "cli.test"]);
    let records: Vec<api::Record> = serde_json::from_str(&json).unwrap();
    assert_eq!(records.len(), 3);
    let answer = query(
        server.dns,
        "www.cli.test",
        Rtype::A,
        &QueryOptions::default(),
    );
    assert_eq!(answer.answer, ["www.cli.test. 60 IN A 192.0.2.1"]);

    // Errors: the server's message on stderr, exit code 1, nothing stored.
    let bad = server.cli(&["record", "add", "cli.test", "www", "A", "300.1.1.1"]);
    assert_eq!(bad.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad.stderr);
    assert!(
        stderr.contains("expected IPv4 address") && stderr.contains("value"),
        "{stderr}"
    );
    let missing = server.cli(&["zone", "show", "missing.test"]);
    assert_eq!(missing.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no zone missing.test."));

    run_ok(
        &server,
        &["record", "delete", "cli.test", "www", "A", "192.0.2.1"],
    );
    let answer = query(
        server.dns,
        "www.cli.test",
        Rtype::A,
        &QueryOptions::default(),
    );
    assert_eq!(answer.rcode, "NXDOMAIN");

    // Export to a file, import it as the same zone, then a bad file lists its lines.
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("cli.zone");
    run_ok(
        &server,
        &["zone", "export", "cli.test", file.to_str().unwrap()],
    );
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("MX\t10 mail.cli.test."), "{text}");
    run_ok(
        &server,
        &["zone", "import", "cli.test", file.to_str().unwrap()],
    );
    std::fs::write(
        &file,
        "$ORIGIN cli.test.\n@ IN NS ns1\nx IN A 1.2.3\ny IN AAAA nope\n",
    )
    .unwrap();
    let bad_import = server.cli(&["zone", "import", "cli.test", file.to_str().unwrap()]);
    assert_eq!(bad_import.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&bad_import.stderr);
    assert!(
        stderr.contains("line 3") && stderr.contains("line 4"),
        "{stderr}"
    );

    run_ok(&server, &["zone", "delete", "cli.test"]);
    assert!(!run_ok(&server, &["zone", "list"]).contains("cli.test."));
}

#[test]
fn the_cli_finds_the_token_in_the_data_dir() {
    let server = DnzServer::start(&[]);
    let output = std::process::Command::new(test_support::server::dnz_binary())
        .args([
            "--server",
            &format!("http://{}", server.http),
            "zone",
            "list",
        ])
        .env("DNZ_DATA_DIR", &server.data_dir)
        .env_remove("DNZ_TOKEN")
        .env("HOME", server.data_dir.join("home"))
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let wrong = std::process::Command::new(test_support::server::dnz_binary())
        .args([
            "--server",
            &format!("http://{}", server.http),
            "--token",
            "dnz_nope",
            "zone",
            "list",
        ])
        .env("HOME", server.data_dir.join("home"))
        .output()
        .unwrap();
    assert_eq!(wrong.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&wrong.stderr).contains("invalid or revoked token"));
}
