//! GeoIP database management end to end: downloads from a local HTTP server (this month's
//! file missing, `.gz`, `.tar.gz`, no suffix), corrupt downloads refused with the old file and
//! database kept, the swap under DNS load, ECS scopes seen by dig for both `.mmdb` schemas, the
//! real DB-IP country lite database from the npm registry, settings, roles and a schedule that
//! survives a restart.

use std::io::Write;
use std::net::SocketAddr;
use std::path::Path;
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mmdb_writer::{Value, Writer};
use test_support::files::{FileServer, dbip_country_mmdb};
use test_support::{DnzServer, require_program};

const DEFAULT_URL: &str =
    "https://download.db-ip.com/free/dbip-country-lite-{year}-{month}.mmdb.gz";

// ---- fixtures ----------------------------------------------------------------------------

#[derive(Clone, Copy, Debug)]
enum Schema {
    /// MaxMind/DB-IP: `country.iso_code` and `continent.code`.
    MaxMind,
    /// ip-location-db: `country_code` only; dnz's table gives the continent.
    Flat,
}

fn continent_of(country: &str) -> &'static str {
    match country {
        "ID" | "SG" => "AS",
        "DE" | "FR" => "EU",
        "US" => "NA",
        "BR" => "SA",
        other => panic!("no continent for {other} in this test"),
    }
}

/// An `.mmdb` placing each network in a country.
fn mmdb(schema: Schema, places: &[(&str, &str)]) -> Vec<u8> {
    let mut writer = Writer::builder(match schema {
        Schema::MaxMind => "GeoLite2-Country",
        Schema::Flat => "ip-location-db-country",
    })
    .description(&[("en", "dnz test fixture")])
    .build();
    for (network, country) in places {
        let record = match schema {
            Schema::MaxMind => Value::map([
                ("country", Value::map([("iso_code", *country)])),
                ("continent", Value::map([("code", continent_of(country))])),
            ]),
            Schema::Flat => Value::map([("country_code", *country)]),
        };
        writer
            .insert_value(
                network.parse::<mmdb_writer::ipnet::IpNet>().unwrap(),
                record,
            )
            .unwrap();
    }
    writer.to_bytes().unwrap()
}

/// A valid `.mmdb` whose records have no country at all.
fn mmdb_without_countries() -> Vec<u8> {
    let mut writer = Writer::builder("GeoLite2-ASN")
        .description(&[("en", "ASN only")])
        .build();
    writer
        .insert_value(
            "192.0.2.0/24".parse::<mmdb_writer::ipnet::IpNet>().unwrap(),
            Value::map([("autonomous_system_number", Value::from(64_512u32))]),
        )
        .unwrap();
    writer.to_bytes().unwrap()
}

fn gz(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn tar_gz(files: &[(&str, &[u8])]) -> Vec<u8> {
    let mut builder = tar::Builder::new(Vec::new());
    for (name, bytes) in files {
        let mut header = tar::Header::new_gnu();
        header.set_size(bytes.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append_data(&mut header, name, *bytes).unwrap();
    }
    gz(&builder.into_inner().unwrap())
}

/// Deterministic noise (xorshift).
fn noise(len: usize) -> Vec<u8> {
    let mut x: u64 = 0x9e37_79b9_7f4a_7c15;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}

/// This month and the month before, in UTC, as dnz fills `{year}` and `{month}`.
fn this_and_last_month() -> ((i64, u32), (i64, u32)) {
    let secs = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    // H. Hinnant's civil_from_days.
    let z = secs.div_euclid(86_400) + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let y = yoe + era * 400 + i64::from(m <= 2);
    let last = if m == 1 { (y - 1, 12) } else { (y, m - 1) };
    ((y, m), last)
}

fn now() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64
}

// ---- API helpers -------------------------------------------------------------------------

fn status(server: &DnzServer) -> api::GeoIpStatus {
    serde_json::from_str(&server.api_ok("GET", "/api/v1/settings/geoip", None)).unwrap()
}

fn set_url(server: &DnzServer, url: &str) -> api::GeoIpStatus {
    let body = serde_json::json!({ "url": url }).to_string();
    serde_json::from_str(&server.api_ok("PUT", "/api/v1/settings/geoip", Some(&body))).unwrap()
}

fn download(server: &DnzServer) -> (u16, String) {
    server.api("POST", "/api/v1/settings/geoip/download", Some("{}"), None)
}

fn download_ok(server: &DnzServer) -> api::GeoIpStatus {
    let (code, body) = download(server);
    assert_eq!(code, 200, "download: {body}");
    serde_json::from_str(&body).unwrap()
}

/// A refused download: 502 with the reason, which is also the status's `last_error`.
fn download_refused(server: &DnzServer) -> String {
    let (code, body) = download(server);
    assert_eq!(code, 502, "download: {body}");
    let error: api::ErrorBody = serde_json::from_str(&body).unwrap();
    let status = status(server);
    assert_eq!(status.last_result.as_deref(), Some("failed"));
    assert_eq!(status.last_error.as_deref(), Some(error.error.as_str()));
    error.error
}

fn lookup(server: &DnzServer, ip: &str) -> api::GeoLookup {
    serde_json::from_str(&server.api_ok("GET", &format!("/api/v1/geoip/lookup?ip={ip}"), None))
        .unwrap()
}

fn place(server: &DnzServer, ip: &str) -> (String, String, String) {
    let found = lookup(server, ip);
    (
        found.country.unwrap_or_default(),
        found.continent.unwrap_or_default(),
        found.network.unwrap_or_default(),
    )
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

/// Creates a user with `role` and returns a token for it.
fn token_for(server: &DnzServer, name: &str, role: &str) -> String {
    let body = format!(r#"{{"name":"{name}","password":"correct horse","role":"{role}"}}"#);
    server.api_ok("POST", "/api/v1/users", Some(&body));
    let login = format!(r#"{{"name":"{name}","password":"correct horse"}}"#);
    let (code, text) = server.api("POST", "/api/v1/session", Some(&login), Some("none"));
    assert_eq!(code, 200, "{text}");
    serde_json::from_str::<api::Session>(&text)
        .unwrap()
        .token
        .expect("a password login returns a token")
}

// ---- DNS helpers -------------------------------------------------------------------------

/// `NAME A` with EDNS and an ECS option for `address/prefix` (IPv4).
fn ecs_query(name: &str, address: [u8; 4], prefix: u8, id: u16) -> Vec<u8> {
    let mut packet = id.to_be_bytes().to_vec();
    packet.extend_from_slice(&[0, 0, 0, 1, 0, 0, 0, 0, 0, 1]);
    for label in name.split('.') {
        packet.push(label.len() as u8);
        packet.extend_from_slice(label.as_bytes());
    }
    packet.extend_from_slice(&[0, 0, 1, 0, 1]);
    let bytes = (prefix as usize).div_ceil(8);
    let mut option = vec![0, 8];
    option.extend_from_slice(&((4 + bytes) as u16).to_be_bytes());
    option.extend_from_slice(&[0, 1, prefix, 0]);
    option.extend_from_slice(&address[..bytes]);
    packet.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0]);
    packet.extend_from_slice(&(option.len() as u16).to_be_bytes());
    packet.extend_from_slice(&option);
    packet
}

/// The A addresses answered, or why there was no good answer.
fn steered_answer(server: SocketAddr, address: [u8; 4], id: u16) -> Result<Vec<String>, String> {
    let packet = ecs_query("www.example.com", address, 24, id);
    let raw = test_support::query_raw(server, &packet, false).ok_or("timeout")?;
    let response = test_support::dns::parse_response(&raw)?;
    if response.rcode != "NOERROR" {
        return Err(response.rcode);
    }
    Ok(response
        .answer
        .iter()
        .map(|l| l.split_whitespace().last().unwrap_or_default().to_string())
        .collect())
}

/// dig with `+subnet`: the answer's addresses and the ECS scope it carries.
fn dig_subnet(dig: &Path, server: &DnzServer, name: &str, subnet: &str) -> (String, u8) {
    let output = Command::new(dig)
        .args([
            "@127.0.0.1",
            "-p",
            &server.dns.port().to_string(),
            name,
            "A",
            &format!("+subnet={subnet}"),
            "+noall",
            "+comments",
            "+answer",
            "+time=3",
            "+tries=1",
        ])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    // `; CLIENT-SUBNET: 203.0.113.0/24/22`
    let scope = text
        .lines()
        .find_map(|l| l.split("CLIENT-SUBNET: ").nth(1))
        .and_then(|s| s.trim().rsplit('/').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("no ECS option in the answer to {name} {subnet}:\n{text}"));
    let answer = text
        .lines()
        .filter(|l| !l.starts_with(';') && !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().last())
        .collect::<Vec<_>>()
        .join(",");
    (answer, scope)
}

// ---- tests -------------------------------------------------------------------------------

#[test]
fn the_month_before_is_used_while_this_month_is_not_published() {
    let files = FileServer::start();
    let ((year, month), (last_year, last_month)) = this_and_last_month();
    let this_path = format!("/dbip-country-lite-{year:04}-{month:02}.mmdb.gz");
    let last_path = format!("/dbip-country-lite-{last_year:04}-{last_month:02}.mmdb.gz");
    let db = mmdb(Schema::MaxMind, &[("192.0.2.0/24", "DE")]);
    files.put(&last_path, 200, gz(&db));

    let server = DnzServer::start(&[]);
    let before = status(&server);
    assert!(
        !before.loaded && !before.demo && before.file_size.is_none(),
        "{before:?}"
    );
    assert_eq!(lookup(&server, "192.0.2.7").status, "no database");

    let template = files.url("/dbip-country-lite-{year}-{month}.mmdb.gz");
    assert_eq!(set_url(&server, &template).url, template);
    let after = download_ok(&server);
    assert_eq!(files.requests(), [this_path.clone(), last_path.clone()]);
    assert_eq!(after.last_url, Some(files.url(&last_path)));
    assert_eq!(after.last_result.as_deref(), Some("ok"));
    assert_eq!(after.last_error, None);
    assert!(after.loaded && !after.demo);
    assert_eq!(after.database_type.as_deref(), Some("GeoLite2-Country"));
    assert_eq!(after.file_size, Some(db.len() as u64));
    let on_disk = std::fs::read(server.data_dir.join("geoip-country.mmdb")).unwrap();
    assert!(on_disk == db, "the unpacked database is the file");
    assert_eq!(
        place(&server, "192.0.2.7"),
        ("DE".into(), "EU".into(), "192.0.2.0/24".into())
    );
    let text = cli_ok(&server, &["geoip", "lookup", "192.0.2.7"]);
    assert!(text.contains("country    DE\n"), "{text}");
    assert!(text.contains("network    192.0.2.0/24\n"), "{text}");

    // When neither month is there, both are named and nothing changes.
    files.remove(&last_path);
    let error = download_refused(&server);
    assert_eq!(
        error,
        format!(
            "download failed: HTTP 404 from {} and from {} (the month before)",
            files.url(&this_path),
            files.url(&last_path)
        )
    );
    assert_eq!(place(&server, "192.0.2.7").0, "DE");
}

#[test]
fn gz_and_tar_gz_are_unpacked_and_bad_downloads_keep_the_old_database() {
    let files = FileServer::start();
    let one = mmdb(Schema::Flat, &[("192.0.2.0/24", "ID")]);
    let two = mmdb(Schema::MaxMind, &[("192.0.2.0/24", "FR")]);
    let three = mmdb(Schema::Flat, &[("192.0.2.0/25", "BR")]);
    files.put("/one.mmdb.gz", 200, gz(&one));
    files.put(
        "/two.tar.gz",
        200,
        tar_gz(&[
            ("GeoLite2-Country_20260101/COPYRIGHT.txt", b"(c)"),
            ("GeoLite2-Country_20260101/GeoLite2-Country.mmdb", &two),
        ]),
    );
    // No suffix at all: the magic bytes say gzip.
    files.put("/download", 200, gz(&three));

    let server = DnzServer::start(&[]);
    let path = server.data_dir.join("geoip-country.mmdb");
    for (url, expected) in [
        ("/one.mmdb.gz", ("ID", "AS", "192.0.2.0/24")),
        ("/two.tar.gz", ("FR", "EU", "192.0.2.0/24")),
        ("/download", ("BR", "SA", "192.0.2.0/25")),
    ] {
        set_url(&server, &files.url(url));
        download_ok(&server);
        let (country, continent, network) = place(&server, "192.0.2.1");
        assert_eq!(
            (country.as_str(), continent.as_str(), network.as_str()),
            expected,
            "{url}"
        );
    }
    let good = std::fs::read(&path).unwrap();
    assert!(good == three);

    files.put("/random.mmdb", 200, noise(100_000));
    files.put("/garbage.mmdb.gz", 200, gz(&noise(50_000)));
    files.put("/asn.mmdb", 200, mmdb_without_countries());
    files.put(
        "/readme.tar.gz",
        200,
        tar_gz(&[("README", b"nothing here")]),
    );
    files.put("/plain.mmdb.gz", 200, b"this is not gzip".to_vec());
    files.put("/error.mmdb", 500, b"oops".to_vec());
    for (url, reason) in [
        ("/random.mmdb", "not a MaxMind DB file".to_string()),
        ("/garbage.mmdb.gz", "not a MaxMind DB file".to_string()),
        ("/asn.mmdb", "the database has no country data".to_string()),
        (
            "/readme.tar.gz",
            "the tar archive holds no .mmdb file".to_string(),
        ),
        ("/plain.mmdb.gz", "not a gzip file".to_string()),
        (
            "/error.mmdb",
            format!(
                "download failed: HTTP 500 from {}",
                files.url("/error.mmdb")
            ),
        ),
    ] {
        set_url(&server, &files.url(url));
        let error = download_refused(&server);
        assert!(error.contains(&reason), "{url}: {error}");
        assert!(
            std::fs::read(&path).unwrap() == good,
            "{url}: the old file is kept"
        );
        assert_eq!(
            place(&server, "192.0.2.1").0,
            "BR",
            "{url}: the old database answers"
        );
    }
    let leftovers: Vec<_> = std::fs::read_dir(&server.data_dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");

    // The CLI says why and exits 1.
    let output = server.cli(&["geoip", "download"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("HTTP 500 from"), "{stderr}");
    let text = cli_ok(&server, &["geoip", "status"]);
    assert!(text.contains("failed: download failed: HTTP 500"), "{text}");
}

#[test]
fn the_swap_under_query_load_loses_no_query_and_answers_follow_the_new_database() {
    let files = FileServer::start();
    files.put(
        "/de.mmdb",
        200,
        mmdb(Schema::MaxMind, &[("192.0.2.0/24", "DE")]),
    );
    let server = DnzServer::start(&["--demo"]);
    assert!(status(&server).demo);
    let client = [192, 0, 2, 0];
    // The demo database places 192.0.2.0/25 in Indonesia: the Jakarta record.
    assert_eq!(
        steered_answer(server.dns, client, 1).unwrap(),
        ["203.0.113.10"]
    );

    let stop = Arc::new(AtomicBool::new(false));
    let load = {
        let (stop, dns) = (stop.clone(), server.dns);
        std::thread::spawn(move || {
            let mut answers = Vec::new();
            let mut failures = Vec::new();
            let deadline = Instant::now() + Duration::from_secs(20);
            for id in 0..50_000u16 {
                if stop.load(Ordering::Relaxed) || Instant::now() > deadline {
                    break;
                }
                match steered_answer(dns, client, id) {
                    Ok(answer) => answers.push(answer.join(",")),
                    Err(why) => failures.push(why),
                }
            }
            (answers, failures)
        })
    };
    std::thread::sleep(Duration::from_millis(300));
    set_url(&server, &files.url("/de.mmdb"));
    let after = download_ok(&server);
    assert!(!after.demo);
    std::thread::sleep(Duration::from_millis(300));
    stop.store(true, Ordering::Relaxed);
    let (answers, failures) = load.join().unwrap();
    eprintln!(
        "{} steered queries during the swap, {} failed",
        answers.len(),
        failures.len()
    );

    assert!(failures.is_empty(), "failed queries: {failures:?}");
    assert!(answers.len() > 20, "only {} queries", answers.len());
    let first_eu = answers
        .iter()
        .position(|a| a == "198.51.100.20")
        .expect("answers changed to the EU record");
    assert!(
        first_eu > 0,
        "answers before the swap came from the demo database"
    );
    assert!(
        answers[..first_eu].iter().all(|a| a == "203.0.113.10"),
        "{answers:?}"
    );
    assert!(
        answers[first_eu..].iter().all(|a| a == "198.51.100.20"),
        "once swapped, every answer follows the new database"
    );
    assert_eq!(
        steered_answer(server.dns, client, 2).unwrap(),
        ["198.51.100.20"]
    );
}

#[test]
fn ecs_scope_is_the_prefix_of_the_database_network_in_both_schemas() {
    let Some(dig) = require_program("dig") else {
        return;
    };
    let files = FileServer::start();
    let server = DnzServer::start(&["--demo"]);
    for (schema, jakarta, europe) in [
        (Schema::MaxMind, "203.0.112.0/22", "198.51.96.0/21"),
        (Schema::Flat, "203.0.112.0/23", "198.51.96.0/20"),
    ] {
        let path = format!("/{schema:?}.mmdb");
        files.put(&path, 200, mmdb(schema, &[(jakarta, "ID"), (europe, "DE")]));
        set_url(&server, &files.url(&path));
        download_ok(&server);
        let prefix = |net: &str| net.rsplit('/').next().unwrap().parse::<u8>().unwrap();

        assert_eq!(
            lookup(&server, "203.0.113.1").network.as_deref(),
            Some(jakarta)
        );
        let (answer, scope) = dig_subnet(&dig, &server, "www.example.com", "203.0.113.0/24");
        assert_eq!(answer, "203.0.113.10", "{schema:?}");
        assert_eq!(scope, prefix(jakarta), "{schema:?}");

        let (answer, scope) = dig_subnet(&dig, &server, "www.example.com", "198.51.100.0/24");
        assert_eq!(answer, "198.51.100.20", "{schema:?}: DE is in EU");
        assert_eq!(scope, prefix(europe), "{schema:?}");

        // A name whose answer does not depend on place: scope 0.
        let (answer, scope) = dig_subnet(&dig, &server, "mail.example.com", "203.0.113.0/24");
        assert_eq!((answer.as_str(), scope), ("192.0.2.25", 0), "{schema:?}");
    }
}

#[test]
fn the_real_dbip_country_lite_database() {
    let Some(db) = dbip_country_mmdb() else {
        return;
    };
    let Some(dig) = require_program("dig") else {
        return;
    };
    let files = FileServer::start();
    files.put("/dbip-country.mmdb", 200, db);
    let server = DnzServer::start(&["--demo"]);
    set_url(&server, &files.url("/dbip-country.mmdb"));
    let after = download_ok(&server);
    assert!(!after.demo && after.loaded);
    assert!(after.file_size.unwrap() > 1_000_000, "{after:?}");

    let text = cli_ok(&server, &["geoip", "lookup", "8.8.8.8"]);
    assert!(text.contains("country    US\n"), "{text}");
    assert!(text.contains("continent  NA\n"), "{text}");
    assert_eq!(lookup(&server, "10.1.2.3").status, "private");

    // A German network gets the EU record, with the network's prefix as the ECS scope.
    for (address, country, answer) in [
        ("80.128.0.1", "DE", "198.51.100.20"),
        ("36.64.0.1", "ID", "203.0.113.10"),
    ] {
        let found = lookup(&server, address);
        assert_eq!(found.country.as_deref(), Some(country), "{found:?}");
        let network = found.network.unwrap();
        let prefix: u8 = network.rsplit('/').next().unwrap().parse().unwrap();
        let (got, scope) = dig_subnet(&dig, &server, "www.example.com", &network);
        eprintln!("{address}: {country} in {network}, answer {got}, ECS scope /{scope}");
        assert_eq!(got, answer, "{address} in {network}");
        assert_eq!(scope, prefix, "{address} in {network}");
    }
}

#[test]
fn status_settings_roles_and_a_schedule_that_survives_a_restart() {
    let files = FileServer::start();
    files.put(
        "/db.mmdb",
        200,
        mmdb(Schema::MaxMind, &[("192.0.2.0/24", "DE")]),
    );
    let dir = tempfile::tempdir().unwrap();
    let server = DnzServer::start_in(dir.path(), &[]);

    // Defaults: DB-IP with its attribution, monthly updates on, a first download scheduled.
    let first = status(&server);
    assert_eq!(first.url, DEFAULT_URL);
    assert!(first.default_url && first.auto_update);
    assert_eq!(
        first.attribution.as_deref(),
        Some("IP Geolocation by DB-IP")
    );
    let next = first.next_download.expect("a download is scheduled");
    assert!((now()..now() + 3600).contains(&next), "{first:?}");
    let text = cli_ok(&server, &["geoip", "status"]);
    assert!(text.contains("IP Geolocation by DB-IP"), "{text}");
    assert!(
        text.contains("(default: DB-IP IP-to-Country Lite)"),
        "{text}"
    );

    // Validation names the field.
    for bad in ["ftp://example.com/db.mmdb", "not a url", "http:///db"] {
        let body = serde_json::json!({ "url": bad }).to_string();
        let (code, text) = server.api("PUT", "/api/v1/settings/geoip", Some(&body), None);
        assert_eq!(code, 422, "{bad}: {text}");
        let error: api::ErrorBody = serde_json::from_str(&text).unwrap();
        assert_eq!(error.field.as_deref(), Some("url"), "{text}");
    }
    let (code, text) = server.api("GET", "/api/v1/geoip/lookup?ip=nope", None, None);
    assert_eq!(code, 422, "{text}");
    assert!(text.contains(r#""field":"ip""#), "{text}");
    assert_eq!(status(&server).url, DEFAULT_URL, "nothing was stored");

    // Viewers read; only a superadmin changes settings or downloads.
    let viewer = token_for(&server, "vera", "viewer");
    for (method, path, body, expected) in [
        ("GET", "/api/v1/settings/geoip", None, 200),
        ("GET", "/api/v1/geoip/lookup?ip=192.0.2.1", None, 200),
        (
            "PUT",
            "/api/v1/settings/geoip",
            Some(r#"{"auto_update":false}"#),
            403,
        ),
        ("POST", "/api/v1/settings/geoip/download", Some("{}"), 403),
    ] {
        let (code, text) = server.api(method, path, body, Some(&viewer));
        assert_eq!(code, expected, "{method} {path}: {text}");
    }
    assert!(status(&server).auto_update);

    // Another source: no DB-IP attribution. A download schedules the next one a month on.
    let text = cli_ok(
        &server,
        &[
            "geoip",
            "set",
            "--url",
            &files.url("/db.mmdb"),
            "--auto-update",
            "on",
        ],
    );
    assert!(text.contains(&files.url("/db.mmdb")), "{text}");
    let custom = status(&server);
    assert!(
        !custom.default_url && custom.attribution.is_none(),
        "{custom:?}"
    );
    let downloaded = download_ok(&server);
    let next = downloaded.next_download.unwrap();
    let month = 30 * 86_400;
    assert!(
        (now() + month - 60..=now() + month).contains(&next),
        "{downloaded:?}"
    );

    let text = cli_ok(&server, &["geoip", "set", "--auto-update", "off"]);
    assert!(text.contains("(auto update is off)"), "{text}");
    assert_eq!(status(&server).next_download, None);
    let json = cli_ok(
        &server,
        &[
            "geoip",
            "set",
            "--url",
            "default",
            "--auto-update",
            "on",
            "--json",
        ],
    );
    let back: api::GeoIpStatus = serde_json::from_str(&json).unwrap();
    assert_eq!(back.url, DEFAULT_URL);
    assert_eq!(back.attribution.as_deref(), Some("IP Geolocation by DB-IP"));
    assert_eq!(back.next_download, Some(next), "the schedule was kept");
    let output = server.cli(&["geoip", "set"]);
    assert_eq!(
        output.status.code(),
        Some(2),
        "nothing to set is a usage error"
    );

    // A restart reads the file and keeps the schedule and the settings.
    let before = status(&server);
    assert!(server.stop().success());
    let server = DnzServer::start_in(dir.path(), &[]);
    let after = status(&server);
    assert_eq!(after.next_download, Some(next));
    assert_eq!(after.last_download, before.last_download);
    assert_eq!(after.last_url, before.last_url);
    assert!(
        after.loaded && after.auto_update && after.default_url,
        "{after:?}"
    );
    assert_eq!(after.database_type.as_deref(), Some("GeoLite2-Country"));
    assert_eq!(place(&server, "192.0.2.1").0, "DE");
    let json = cli_ok(&server, &["geoip", "lookup", "192.0.2.1", "--json"]);
    let found: api::GeoLookup = serde_json::from_str(&json).unwrap();
    assert_eq!(found.network.as_deref(), Some("192.0.2.0/24"));
}
