//! Saved zone images: a restart reads a zone back from its image and answers exactly as
//! before; an image that is stale (the database changed behind dnz's back), damaged or of a
//! zone with load balancers is not used, and the zone is compiled from the store instead.

use std::io::Read;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use domain::base::iana::Rtype;
use test_support::{DnzServer, QueryOptions, query, require_program};

const ZONE_FILE: &str = r#"
$ORIGIN image.test.
$TTL 300
@        IN SOA   ns1 hostmaster 1 7200 3600 1209600 300
@        IN NS    ns1
@        IN MX    10 mail
ns1      IN A     192.0.2.1
mail     IN A     192.0.2.25
mail     IN AAAA  2001:db8::25
www      IN A     192.0.2.80
www      IN AAAA  2001:db8::80
www      IN TXT   "a text longer than twenty-two bytes, kept out of line"
*.wild   IN A     192.0.2.99
alias    IN CNAME www
sub      IN NS    ns.sub
ns.sub   IN A     192.0.2.53
"#;

const QUESTIONS: &[(&str, Rtype)] = &[
    ("image.test", Rtype::SOA),
    ("image.test", Rtype::MX),
    ("image.test", Rtype::NS),
    ("www.image.test", Rtype::A),
    ("www.image.test", Rtype::AAAA),
    ("www.image.test", Rtype::TXT),
    ("www.image.test", Rtype::MX),
    ("alias.image.test", Rtype::A),
    ("x.wild.image.test", Rtype::A),
    ("host.sub.image.test", Rtype::A),
    ("nothing.image.test", Rtype::A),
    ("steer.image.test", Rtype::A),
    ("www.lb.test", Rtype::A),
];

/// Every question's response, without the random ID.
fn answers(server: &DnzServer) -> Vec<String> {
    QUESTIONS
        .iter()
        .map(|&(name, rtype)| {
            let mut response = query(server.dns, name, rtype, &QueryOptions::default());
            response.id = 0;
            response.raw.clear();
            format!("{response:?}")
        })
        .collect()
}

fn from_images(server: &DnzServer) -> u64 {
    let text = server.api_ok("GET", "/metrics", None);
    text.lines()
        .find_map(|l| l.strip_prefix("dnz_zones_from_images "))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no dnz_zones_from_images in /metrics"))
}

fn image_files(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir.join("images"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.file_name().to_string_lossy().into_owned())
                .collect()
        })
        .unwrap_or_default();
    names.sort();
    names
}

/// A zone with steered records and a zone with a load balancer.
fn fill(server: &DnzServer) {
    server.api_ok("POST", "/api/v1/zones/image.test/import", Some(ZONE_FILE));
    for body in [
        r#"{"name":"steer","type":"A","value":"192.0.2.10","steering":{"countries":["DE"],"weight":3}}"#,
        r#"{"name":"steer","type":"A","value":"192.0.2.11"}"#,
        r#"{"name":"steer","type":"A","value":"192.0.2.12","steering":{"backup":true}}"#,
    ] {
        server.api_ok("POST", "/api/v1/zones/image.test/records", Some(body));
    }
    server.api_ok("POST", "/api/v1/zones", Some(r#"{"name":"lb.test"}"#));
    server.api_ok(
        "POST",
        "/api/v1/zones/lb.test/pools",
        Some(r#"{"name":"eu","origins":[{"address":"192.0.2.7"}]}"#),
    );
    server.api_ok(
        "POST",
        "/api/v1/zones/lb.test/load-balancers",
        Some(r#"{"name":"www","pools":["eu"]}"#),
    );
}

#[test]
fn a_restart_reads_current_images_and_compiles_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let server = DnzServer::start_in(dir.path(), &[]);
    fill(&server);
    let before = answers(&server);
    assert!(before[3].contains("192.0.2.80"), "{}", before[3]);
    assert_eq!(from_images(&server), 0);
    assert!(server.stop().success());
    // The zone's image is written by the stop at the latest; the load balancer's zone has none.
    let files = image_files(dir.path());
    assert_eq!(files.len(), 1, "{files:?}");

    let server = DnzServer::start_in(dir.path(), &[]);
    assert_eq!(from_images(&server), 1);
    assert_eq!(answers(&server), before);
    // A change through the API after an image start is served, and saved again.
    server.api_ok(
        "POST",
        "/api/v1/zones/image.test/records",
        Some(r#"{"name":"new","type":"A","value":"192.0.2.44"}"#),
    );
    let new = query(
        server.dns,
        "new.image.test",
        Rtype::A,
        &QueryOptions::default(),
    );
    assert_eq!(new.answer.len(), 1, "{new:?}");
    assert!(server.stop().success());
    let server = DnzServer::start_in(dir.path(), &[]);
    assert_eq!(from_images(&server), 1);
    let new = query(
        server.dns,
        "new.image.test",
        Rtype::A,
        &QueryOptions::default(),
    );
    assert_eq!(
        new.answer.len(),
        1,
        "the change is in the new image: {new:?}"
    );
    let before = answers(&server);
    assert!(server.stop().success());

    // Damaged: one flipped byte in the middle. The zone is compiled from the store, answers
    // as before, and its image is written again.
    let image = dir.path().join("images").join(&files[0]);
    let mut bytes = std::fs::read(&image).unwrap();
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x40;
    std::fs::write(&image, &bytes).unwrap();
    let server = DnzServer::start_in(dir.path(), &[]);
    assert_eq!(from_images(&server), 0);
    assert_eq!(answers(&server), before);
    assert!(server.stop().success());
    assert_ne!(std::fs::read(&image).unwrap(), bytes, "written again");
    let server = DnzServer::start_in(dir.path(), &[]);
    assert_eq!(from_images(&server), 1);
    assert!(server.stop().success());

    // Deleting the zone deletes its image.
    let server = DnzServer::start_in(dir.path(), &[]);
    server.api_ok("DELETE", "/api/v1/zones/image.test", None);
    assert!(server.stop().success());
    assert_eq!(image_files(dir.path()), Vec::<String>::new());
}

/// A data dir filled and stopped (so its image is saved), then changed behind dnz's back with
/// `sql`; None without sqlite3 (allowed outside CI only).
fn filled_then_edited(sql: &str) -> Option<tempfile::TempDir> {
    let sqlite3 = require_program("sqlite3")?;
    let dir = tempfile::tempdir().unwrap();
    let server = DnzServer::start_in(dir.path(), &[]);
    fill(&server);
    assert!(server.stop().success());
    assert_eq!(image_files(dir.path()).len(), 1);
    let edit = Command::new(&sqlite3)
        .arg(dir.path().join("dnz.db"))
        .arg(sql)
        .status()
        .unwrap();
    assert!(edit.success());
    Some(dir)
}

#[test]
fn an_image_is_not_used_once_the_database_changed_behind_dnz() {
    // www's A record becomes 192.0.2.81 (wire rdata C0 00 02 51), written by hand.
    let Some(dir) = filled_then_edited(
        "UPDATE records SET rdata = X'C0000251' WHERE rdata = X'C0000250' AND rtype = 1",
    ) else {
        return;
    };
    let server = DnzServer::start_in(dir.path(), &[]);
    assert_eq!(from_images(&server), 0, "the stale image was used");
    let www = query(
        server.dns,
        "www.image.test",
        Rtype::A,
        &QueryOptions::default(),
    );
    assert_eq!(www.answer.len(), 1, "{www:?}");
    assert!(www.answer[0].ends_with("192.0.2.81"), "{www:?}");
    assert!(server.stop().success());
}

/// Record data whose name holds a compression pointer (written by hand: dnz writes names
/// whole) is refused when the zone is read, by name, instead of being served; the answer path
/// reads such names label by label.
#[test]
fn a_compressed_name_written_into_the_database_is_refused_at_start() {
    // MX 10 "mail", a label of length 1, then a pointer to the preference's zero byte.
    let Some(dir) =
        filled_then_edited("UPDATE records SET rdata = X'000A056D61696C01C000' WHERE rtype = 15")
    else {
        return;
    };
    let mut child = Command::new(test_support::server::dnz_binary())
        .args(["serve", "--dns", "127.0.0.1:0", "--http", "127.0.0.1:0"])
        .arg("--data-dir")
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("dnz served a zone with a compressed name in its data");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let mut stderr = String::new();
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut stderr)
        .unwrap();
    assert!(!status.success());
    assert!(
        stderr.contains("bad MX data") && stderr.contains("compressed name"),
        "{stderr}"
    );
}
