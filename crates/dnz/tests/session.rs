//! Dashboard sessions (SPEC §11: secure cookie with CSRF protection), the embedded dashboard's
//! files and headers, and `GET /api/v1/topology`, against a real `dnz serve`.

use std::time::{Duration, Instant};

use serde_json::{Value, json};
use test_support::DnzServer;

const PASSWORD: &str = "correct horse";

/// What came back from one request.
struct Reply {
    status: u16,
    headers: Vec<(String, String)>,
    body: String,
}

impl Reply {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    fn json(&self) -> Value {
        serde_json::from_str(&self.body).unwrap_or_else(|e| panic!("not JSON ({e}): {}", self.body))
    }
}

/// Sends a request with exactly these headers (no token unless given).
fn send(
    server: &DnzServer,
    method: &str,
    path: &str,
    body: Option<&str>,
    headers: &[(&str, &str)],
) -> Reply {
    let agent = ureq::Agent::config_builder()
        .http_status_as_error(false)
        .build()
        .new_agent();
    let mut builder = ureq::http::Request::builder()
        .method(method)
        .uri(server.url(path));
    for (name, value) in headers {
        builder = builder.header(*name, *value);
    }
    let result = match body {
        Some(body) => agent.run(
            builder
                .header("Content-Type", "application/json")
                .body(body.to_string())
                .unwrap(),
        ),
        None => agent.run(builder.body(()).unwrap()),
    };
    let mut response = result.unwrap_or_else(|e| panic!("{method} {path}: {e}"));
    let headers = response
        .headers()
        .iter()
        .map(|(n, v)| (n.to_string(), v.to_str().unwrap_or("").to_string()))
        .collect();
    Reply {
        status: response.status().as_u16(),
        headers,
        body: response.body_mut().read_to_string().unwrap_or_default(),
    }
}

fn create_user(server: &DnzServer, name: &str, role: &str) {
    let body = format!(r#"{{"name":"{name}","password":"{PASSWORD}","role":"{role}"}}"#);
    server.api_ok("POST", "/api/v1/users", Some(&body));
}

/// A cookie session: the `Cookie` header value to send and the CSRF token.
struct Browser {
    cookie: String,
    csrf: String,
}

impl Browser {
    fn send(&self, server: &DnzServer, method: &str, path: &str, body: Option<&str>) -> Reply {
        send(
            server,
            method,
            path,
            body,
            &[("Cookie", &self.cookie), ("X-CSRF-Token", &self.csrf)],
        )
    }
}

fn cookie_login(server: &DnzServer, name: &str) -> (Reply, Browser) {
    let body = format!(r#"{{"name":"{name}","password":"{PASSWORD}","cookie":true}}"#);
    let reply = send(server, "POST", "/api/v1/session", Some(&body), &[]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let set_cookie = reply.header("set-cookie").expect("Set-Cookie").to_string();
    let cookie = set_cookie.split(';').next().unwrap().trim().to_string();
    let csrf = reply.json()["csrf"].as_str().expect("csrf").to_string();
    (reply, Browser { cookie, csrf })
}

fn zone_exists(server: &DnzServer, zone: &str) -> bool {
    let (status, _) = server.api("GET", &format!("/api/v1/zones/{zone}"), None, None);
    status == 200
}

#[test]
fn cookie_session_needs_csrf_on_writes_and_ends_at_logout() {
    let server = DnzServer::start(&[]);
    create_user(&server, "ed", "editor");
    let (login, browser) = cookie_login(&server, "ed");

    // The cookie: HttpOnly, SameSite=Strict, 12 hours, not Secure over plain HTTP.
    let set_cookie = login.header("set-cookie").unwrap();
    let value = browser.cookie.strip_prefix("dnz_session=").unwrap();
    assert_eq!(value.len(), 64, "{set_cookie}");
    assert!(value.bytes().all(|b| b.is_ascii_hexdigit()), "{set_cookie}");
    assert_eq!(
        set_cookie,
        format!("dnz_session={value}; Path=/; HttpOnly; SameSite=Strict; Max-Age=43200")
    );
    // No token in the body: a page's script never holds a bearer secret.
    let body = login.json();
    assert_eq!(body["user"], "ed");
    assert_eq!(body["role"], "editor");
    assert!(body.get("token").is_none(), "{body}");
    assert_ne!(browser.csrf, value);

    // GET session tells the page who it is and its CSRF token again (after a reload).
    let who = send(
        &server,
        "GET",
        "/api/v1/session",
        None,
        &[("Cookie", &browser.cookie)],
    );
    assert_eq!(who.status, 200, "{}", who.body);
    assert_eq!(
        who.json(),
        json!({"user": "ed", "role": "editor", "csrf": browser.csrf})
    );
    // Reads need no CSRF token.
    let zones = send(
        &server,
        "GET",
        "/api/v1/zones",
        None,
        &[("Cookie", &browser.cookie)],
    );
    assert_eq!(zones.status, 200, "{}", zones.body);

    // A write with the cookie but without the CSRF token, or with a wrong one: 403, nothing done.
    let zone = r#"{"name":"csrf.test"}"#;
    let missing = send(
        &server,
        "POST",
        "/api/v1/zones",
        Some(zone),
        &[("Cookie", &browser.cookie)],
    );
    let wrong_token = "0".repeat(browser.csrf.len());
    let wrong = send(
        &server,
        "POST",
        "/api/v1/zones",
        Some(zone),
        &[("Cookie", &browser.cookie), ("X-CSRF-Token", &wrong_token)],
    );
    for reply in [&missing, &wrong] {
        assert_eq!(reply.status, 403, "{}", reply.body);
        assert_eq!(
            reply.json(),
            json!({"error": "missing or wrong CSRF token"})
        );
    }
    assert!(!zone_exists(&server, "csrf.test"));
    // Another session's token is wrong too.
    let (_, other) = cookie_login(&server, "ed");
    let crossed = send(
        &server,
        "POST",
        "/api/v1/zones",
        Some(zone),
        &[("Cookie", &browser.cookie), ("X-CSRF-Token", &other.csrf)],
    );
    assert_eq!(crossed.status, 403, "{}", crossed.body);
    assert!(!zone_exists(&server, "csrf.test"));

    // With the right one: done.
    let created = browser.send(&server, "POST", "/api/v1/zones", Some(zone));
    assert_eq!(created.status, 201, "{}", created.body);
    assert!(zone_exists(&server, "csrf.test"));
    let record = r#"{"name":"www","type":"A","value":"192.0.2.1"}"#;
    let added = browser.send(
        &server,
        "POST",
        "/api/v1/zones/csrf.test/records",
        Some(record),
    );
    assert_eq!(added.status, 201, "{}", added.body);

    // Logging out is a write as well.
    let logout = send(
        &server,
        "DELETE",
        "/api/v1/session",
        None,
        &[("Cookie", &browser.cookie)],
    );
    assert_eq!(logout.status, 403, "{}", logout.body);
    let logout = browser.send(&server, "DELETE", "/api/v1/session", None);
    assert_eq!(logout.status, 204, "{}", logout.body);
    assert_eq!(
        logout.header("set-cookie"),
        Some("dnz_session=; Path=/; HttpOnly; SameSite=Strict; Max-Age=0")
    );
    // The old cookie is worth nothing now, for reads and writes; the other session lives on.
    for (method, body) in [("GET", None), ("POST", Some(r#"{"name":"late.test"}"#))] {
        let path = if method == "GET" {
            "/api/v1/session"
        } else {
            "/api/v1/zones"
        };
        let reply = browser.send(&server, method, path, body);
        assert_eq!(reply.status, 401, "{method} {}", reply.body);
        assert_eq!(
            reply.json(),
            json!({"error": "session expired, log in again"})
        );
    }
    assert!(!zone_exists(&server, "late.test"));
    assert_eq!(
        other.send(&server, "GET", "/api/v1/session", None).status,
        200
    );
}

#[test]
fn a_viewer_session_cannot_write() {
    let server = DnzServer::start(&[]);
    create_user(&server, "vic", "viewer");
    let (login, browser) = cookie_login(&server, "vic");
    assert_eq!(login.json()["role"], "viewer");
    let zones = browser.send(&server, "GET", "/api/v1/zones", None);
    assert_eq!(zones.status, 200, "{}", zones.body);
    let write = browser.send(
        &server,
        "POST",
        "/api/v1/zones",
        Some(r#"{"name":"viewer.test"}"#),
    );
    assert_eq!(write.status, 403, "{}", write.body);
    assert!(
        write.json()["error"]
            .as_str()
            .unwrap()
            .contains("this needs editor"),
        "{}",
        write.body
    );
    assert!(!zone_exists(&server, "viewer.test"));
}

#[test]
fn failed_cookie_login_sets_no_cookie_and_is_rate_limited() {
    let server = DnzServer::start(&[]);
    create_user(&server, "ed", "editor");
    let bad = r#"{"name":"ed","password":"wrong password","cookie":true}"#;
    let mut statuses = Vec::new();
    for _ in 0..6 {
        let reply = send(&server, "POST", "/api/v1/session", Some(bad), &[]);
        assert_eq!(reply.header("set-cookie"), None, "{}", reply.body);
        statuses.push(reply.status);
    }
    assert_eq!(statuses, [401, 401, 401, 401, 401, 429]);
    // A right password is refused too while the address waits.
    let good = format!(r#"{{"name":"ed","password":"{PASSWORD}","cookie":true}}"#);
    let reply = send(&server, "POST", "/api/v1/session", Some(&good), &[]);
    assert_eq!(reply.status, 429, "{}", reply.body);
    assert_eq!(reply.header("set-cookie"), None);
}

#[test]
fn cookie_is_secure_behind_an_https_proxy() {
    let server = DnzServer::start(&[]);
    create_user(&server, "ed", "editor");
    let body = format!(r#"{{"name":"ed","password":"{PASSWORD}","cookie":true}}"#);
    let reply = send(
        &server,
        "POST",
        "/api/v1/session",
        Some(&body),
        &[("X-Forwarded-Proto", "https")],
    );
    assert_eq!(reply.status, 200, "{}", reply.body);
    let set_cookie = reply.header("set-cookie").unwrap();
    assert!(set_cookie.ends_with("; Secure"), "{set_cookie}");
    assert!(
        set_cookie.contains("; HttpOnly; SameSite=Strict;"),
        "{set_cookie}"
    );
}

#[test]
fn token_login_and_bearer_callers_are_as_before() {
    let server = DnzServer::start(&[]);
    create_user(&server, "ed", "editor");
    let body = format!(r#"{{"name":"ed","password":"{PASSWORD}"}}"#);
    let reply = send(&server, "POST", "/api/v1/session", Some(&body), &[]);
    assert_eq!(reply.status, 200, "{}", reply.body);
    assert_eq!(reply.header("set-cookie"), None);
    let session = reply.json();
    assert!(session.get("csrf").is_none(), "{session}");
    let token = session["token"].as_str().expect("token").to_string();
    let bearer = format!("Bearer {token}");

    // No CSRF header needed with a token, and GET session shows no csrf.
    let who = send(
        &server,
        "GET",
        "/api/v1/session",
        None,
        &[("Authorization", &bearer)],
    );
    assert_eq!(who.json(), json!({"user": "ed", "role": "editor"}));
    let created = send(
        &server,
        "POST",
        "/api/v1/zones",
        Some(r#"{"name":"bearer.test"}"#),
        &[("Authorization", &bearer)],
    );
    assert_eq!(created.status, 201, "{}", created.body);
    // DELETE session with a token changes nothing.
    let logout = send(
        &server,
        "DELETE",
        "/api/v1/session",
        None,
        &[("Authorization", &bearer)],
    );
    assert_eq!(logout.status, 204, "{}", logout.body);
    assert_eq!(logout.header("set-cookie"), None);
    let again = send(
        &server,
        "GET",
        "/api/v1/session",
        None,
        &[("Authorization", &bearer)],
    );
    assert_eq!(again.status, 200, "{}", again.body);

    // The bearer token wins over a cookie; a bad token is not rescued by a good cookie.
    let (_, browser) = cookie_login(&server, "ed");
    let both = send(
        &server,
        "GET",
        "/api/v1/session",
        None,
        &[
            ("Authorization", "Bearer dnz_wrong"),
            ("Cookie", &browser.cookie),
        ],
    );
    assert_eq!(both.status, 401, "{}", both.body);

    // Neither: 401; an unknown cookie: 401 that says to log in again.
    let none = send(&server, "GET", "/api/v1/session", None, &[]);
    assert_eq!(none.status, 401, "{}", none.body);
    let unknown = send(
        &server,
        "GET",
        "/api/v1/zones",
        None,
        &[(
            "Cookie",
            &format!("theme=dark; dnz_session={}", "ab".repeat(32)),
        )],
    );
    assert_eq!(unknown.status, 401, "{}", unknown.body);
    assert_eq!(unknown.json()["error"], "session expired, log in again");
}

#[test]
fn deleting_a_user_ends_their_sessions() {
    let server = DnzServer::start(&[]);
    create_user(&server, "gone", "editor");
    let (_, browser) = cookie_login(&server, "gone");
    assert_eq!(
        browser.send(&server, "GET", "/api/v1/session", None).status,
        200
    );
    server.api_ok("DELETE", "/api/v1/users/gone", None);
    let reply = browser.send(&server, "GET", "/api/v1/session", None);
    assert_eq!(reply.status, 401, "{}", reply.body);
}

const CSP: &str = "default-src 'self'; img-src 'self' data:; style-src 'self'; \
    script-src 'self'; connect-src 'self'; frame-ancestors 'none'; base-uri 'none'; \
    form-action 'self'";

fn assert_secured(reply: &Reply, what: &str) {
    for (name, want) in [
        ("content-security-policy", CSP),
        ("x-content-type-options", "nosniff"),
        ("referrer-policy", "no-referrer"),
        ("x-frame-options", "DENY"),
    ] {
        assert_eq!(reply.header(name), Some(want), "{name} of {what}");
    }
}

fn dashboard_dir() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../dashboard")
}

#[test]
fn the_dashboard_is_served_with_strict_headers() {
    let server = DnzServer::start(&[]);
    let index = send(&server, "GET", "/", None, &[]);
    assert_eq!(index.status, 200, "{}", index.body);
    assert_eq!(
        index.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(index.header("cache-control"), Some("no-cache"));
    assert_secured(&index, "/");
    let on_disk = std::fs::read_to_string(dashboard_dir().join("index.html")).unwrap();
    assert_eq!(index.body, on_disk);
    assert_eq!(send(&server, "GET", "/index.html", None, &[]).body, on_disk);
    let head = send(&server, "HEAD", "/", None, &[]);
    assert_eq!((head.status, head.body.as_str()), (200, ""));
    assert_secured(&head, "HEAD /");

    // Every stylesheet and script by its type.
    let mut checked = 0;
    let mut dirs = vec![dashboard_dir()];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let relative = path.strip_prefix(dashboard_dir()).unwrap();
            let relative = relative.to_str().unwrap().to_string();
            if relative.starts_with("tests") || relative.contains("node_modules") {
                continue;
            }
            if path.is_dir() {
                dirs.push(path);
                continue;
            }
            let want = match path.extension().and_then(|e| e.to_str()) {
                Some("css") => "text/css; charset=utf-8",
                Some("js" | "mjs") => "text/javascript; charset=utf-8",
                _ => continue,
            };
            let reply = send(&server, "GET", &format!("/{relative}"), None, &[]);
            assert_eq!(reply.status, 200, "/{relative}");
            assert_eq!(reply.header("content-type"), Some(want), "/{relative}");
            assert_secured(&reply, &relative);
            checked += 1;
        }
    }
    assert!(checked > 0, "the dashboard has no CSS or JS");

    // The API's unknown paths stay JSON; other unknown paths, the browser tests and paths that
    // climb out of the folder are 404.
    let api = send(&server, "GET", "/api/v1/nope", None, &[]);
    assert_eq!(api.status, 404);
    assert_eq!(api.header("content-type"), Some("application/json"));
    assert_eq!(api.json(), json!({"error": "no such endpoint"}));
    let posted = send(&server, "POST", "/api/v1/nope", Some("{}"), &[]);
    assert_eq!(posted.status, 404, "{}", posted.body);
    assert!(posted.json()["error"].is_string());
    for path in [
        "/nope.html",
        "/tests/package.json",
        "/js/../../Cargo.toml",
        "/%2e%2e/Cargo.toml",
    ] {
        let reply = send(&server, "GET", path, None, &[]);
        assert_eq!(reply.status, 404, "{path}: {}", reply.body);
        assert_secured(&reply, path);
    }
    let post = send(&server, "POST", "/", Some("{}"), &[]);
    assert_eq!(post.status, 405);
    // The rest of the server is where it was.
    assert_eq!(send(&server, "GET", "/healthz", None, &[]).body, "ok\n");
}

#[test]
fn topology_joins_places_names_and_origins() {
    let server = DnzServer::start(&[]);
    server.api_ok("POST", "/api/v1/zones", Some(r#"{"name":"topo.test"}"#));
    let records = "/api/v1/zones/topo.test/records";
    for record in [
        r#"{"name":"www","type":"A","value":"192.0.2.1","steering":{"countries":["DE"],"weight":10}}"#,
        r#"{"name":"www","type":"A","value":"192.0.2.2","steering":{"continents":["EU"],"backup":true}}"#,
        r#"{"name":"www","type":"A","value":"192.0.2.3"}"#,
        // Not steered at all: no name node, no origin.
        r#"{"name":"plain","type":"A","value":"192.0.2.9"}"#,
        r#"{"name":"v6","type":"AAAA","value":"2001:db8::1","steering":{"weight":2}}"#,
    ] {
        server.api_ok("POST", records, Some(record));
    }
    server.api_ok(
        "POST",
        "/api/v1/zones/topo.test/pools",
        Some(r#"{"name":"eu","origins":[{"address":"192.0.2.1"},{"address":"198.51.100.7"}]}"#),
    );
    server.api_ok(
        "POST",
        "/api/v1/zones/topo.test/load-balancers",
        Some(
            r#"{"name":"lb","pools":["eu"],"rules":[{"kind":"pop","key":"fra","pools":["eu"]},{"kind":"continent","key":"EU","pools":["eu"]}]}"#,
        ),
    );

    // A viewer may look.
    create_user(&server, "vic", "viewer");
    let (_, browser) = cookie_login(&server, "vic");
    let reply = browser.send(&server, "GET", "/api/v1/topology", None);
    assert_eq!(reply.status, 200, "{}", reply.body);
    let topology = reply.json();

    let www = "record:www.topo.test./A";
    let lb = "lb:lb.topo.test.";
    let edge = |from: &str, to: &str, label: &str| json!({"from": from, "to": to, "label": label});
    let expected = json!({
        "places": [
            {"id": "country:DE", "label": "DE", "kind": "country"},
            {"id": "continent:EU", "label": "EU", "kind": "continent"},
            {"id": "pop:fra", "label": "fra", "kind": "pop"},
            {"id": "everywhere", "label": "Everywhere", "kind": "everywhere"},
        ],
        "names": [
            {"id": "record:v6.topo.test./AAAA", "label": "v6.topo.test AAAA", "kind": "record", "zone": "topo.test"},
            {"id": www, "label": "www.topo.test A", "kind": "record", "zone": "topo.test"},
            {"id": lb, "label": "lb.topo.test", "kind": "lb", "zone": "topo.test"},
        ],
        "origins": [
            {"id": "origin:192.0.2.1", "address": "192.0.2.1", "health": "unknown"},
            {"id": "origin:192.0.2.2", "address": "192.0.2.2", "health": "unknown"},
            {"id": "origin:192.0.2.3", "address": "192.0.2.3", "health": "unknown"},
            {"id": "origin:198.51.100.7", "address": "198.51.100.7", "health": "unknown"},
            {"id": "origin:2001:db8::1", "address": "2001:db8::1", "health": "unknown"},
        ],
        "edges": [
            edge("continent:EU", lb, "eu"),
            edge("continent:EU", www, ""),
            edge("country:DE", www, ""),
            edge("everywhere", lb, "eu"),
            edge("everywhere", "record:v6.topo.test./AAAA", ""),
            edge("everywhere", www, ""),
            edge(lb, "origin:192.0.2.1", "eu"),
            edge(lb, "origin:198.51.100.7", "eu"),
            edge("pop:fra", lb, "eu"),
            edge("record:v6.topo.test./AAAA", "origin:2001:db8::1", "weight 2"),
            edge(www, "origin:192.0.2.1", "weight 10"),
            edge(www, "origin:192.0.2.2", "backup"),
            edge(www, "origin:192.0.2.3", "not steered"),
        ],
    });
    assert_eq!(
        topology,
        expected,
        "{}",
        serde_json::to_string_pretty(&topology).unwrap()
    );
    // 192.0.2.1 is both a record's address and an origin of the pool: one node.
    let shared = topology["origins"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|o| o["address"] == "192.0.2.1")
        .count();
    assert_eq!(shared, 1);

    // Without steering the RRset leaves the graph.
    let listed: Vec<api::Record> =
        serde_json::from_str(&server.api_ok("GET", records, None)).unwrap();
    for record in listed
        .iter()
        .filter(|r| r.name == "www" && r.steering.is_some())
    {
        server.api_ok("DELETE", &format!("{records}/{}/steering", record.id), None);
    }
    let topology: Value =
        serde_json::from_str(&server.api_ok("GET", "/api/v1/topology", None)).unwrap();
    let ids: Vec<&str> = topology["names"]
        .as_array()
        .unwrap()
        .iter()
        .map(|n| n["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["record:v6.topo.test./AAAA", lb]);
    assert!(
        topology["places"]
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["id"] != "country:DE"),
        "{topology}"
    );

    // Anonymous callers get nothing.
    assert_eq!(
        send(&server, "GET", "/api/v1/topology", None, &[]).status,
        401
    );
}

#[test]
fn topology_origin_health_is_down_when_any_check_is() {
    let server = DnzServer::start(&[]);
    server.api_ok("POST", "/api/v1/zones", Some(r#"{"name":"hc.test"}"#));
    // Listeners that never accept: the kernel completes the handshake, so tcp checks pass.
    let open = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let open_port = open.local_addr().unwrap().port();
    let open4 = std::net::TcpListener::bind("127.0.0.4:0").unwrap();
    let open4_port = open4.local_addr().unwrap().port();
    let closed_port = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.local_addr().unwrap().port()
    };
    let tcp = |port: u16| {
        format!(
            r#"{{"kind":"tcp","port":{port},"interval":1,"timeout":300,"down_after":1,"up_after":1}}"#
        )
    };
    for (address, port) in [
        ("127.0.0.1", open_port),
        ("127.0.0.2", closed_port),
        ("127.0.0.4", open4_port),
    ] {
        let body = format!(
            r#"{{"name":"www","type":"A","value":"{address}","steering":{{"check":{}}}}}"#,
            tcp(port)
        );
        server.api_ok("POST", "/api/v1/zones/hc.test/records", Some(&body));
    }
    // The pool checks 127.0.0.1 on a closed port: that address is down, although the
    // record's check of it is up. 127.0.0.3 has no check at all.
    let pool = format!(
        r#"{{"name":"p","origins":[{{"address":"127.0.0.1","check":{}}},{{"address":"127.0.0.3"}}]}}"#,
        tcp(closed_port)
    );
    server.api_ok("POST", "/api/v1/zones/hc.test/pools", Some(&pool));
    server.api_ok(
        "POST",
        "/api/v1/zones/hc.test/load-balancers",
        Some(r#"{"name":"lb","pools":["p"]}"#),
    );

    let want = json!([
        {"id": "origin:127.0.0.1", "address": "127.0.0.1", "health": "down"},
        {"id": "origin:127.0.0.2", "address": "127.0.0.2", "health": "down"},
        {"id": "origin:127.0.0.3", "address": "127.0.0.3", "health": "unknown"},
        {"id": "origin:127.0.0.4", "address": "127.0.0.4", "health": "up"},
    ]);
    let start = Instant::now();
    loop {
        let topology: Value =
            serde_json::from_str(&server.api_ok("GET", "/api/v1/topology", None)).unwrap();
        if topology["origins"] == want {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(15),
            "origins never became {want}: {}",
            topology["origins"]
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    drop((open, open4));
}
