//! A seeded, bounded storm of bad API calls against the real binary: every write route gets its
//! valid body with one field made invalid, garbage and truncated JSON, wrong content types, bad
//! path segments, wrong methods, bad query strings, bad tokens and a few bodies of megabytes.
//!
//! The promise checked: no call gets a 5xx, every 4xx under `/api/` is a JSON error body with a
//! message, the process stays up, and nothing changes (zone export, every list, DNS answers,
//! the SOA serial) — every request is built so it cannot be valid, and any write that
//! succeeded anyway is printed and fails the test.
//!
//! `DNZ_ABUSE_SEED` and `DNZ_ABUSE_COUNT` override the fixed seed and the request count.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use domain::base::iana::Rtype;
use serde_json::{Value, json};
use test_support::{DnzServer, QueryOptions, Rng, query};

const ZONE: &str = "abuse.test";

const ZONE_FILE: &str = "$ORIGIN abuse.test.
$TTL 300
@ IN SOA ns1.abuse.test. hostmaster.abuse.test. 2024010101 3600 600 86400 300
@ IN NS ns1.abuse.test.
ns1 IN A 192.0.2.53
mail IN A 192.0.2.25
@ IN MX 10 mail.abuse.test.
txt IN TXT \"hello world\"
alias IN CNAME mail.abuse.test.
v6 IN AAAA 2001:db8::53
";

/// A raw JSON value spliced into a serialized body (numbers serde_json cannot hold, bad text).
const RAW: &str = "\u{1}RAW:";

fn raw(text: &str) -> Value {
    Value::String(format!("{RAW}{text}"))
}

struct Request {
    method: String,
    path: String,
    content_type: Option<String>,
    /// `None`: the admin token; `Some("")`: no Authorization header.
    auth: Option<String>,
    body: Vec<u8>,
    what: String,
}

struct Response {
    status: u16,
    content_type: String,
    body: Vec<u8>,
}

/// One request on its own connection, written byte for byte (no client normalises the path).
fn send(server: &DnzServer, request: &Request) -> Result<Response, String> {
    let mut stream = TcpStream::connect(server.http).map_err(|e| format!("connect: {e}"))?;
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .map_err(|e| e.to_string())?;
    let mut head = format!(
        "{} {} HTTP/1.1\r\nHost: {}\r\nConnection: close\r\nContent-Length: {}\r\n",
        request.method,
        request.path,
        server.http,
        request.body.len()
    );
    match request.auth.as_deref() {
        None => head.push_str(&format!("Authorization: Bearer {}\r\n", server.token)),
        Some("") => {}
        Some(value) => head.push_str(&format!("Authorization: {value}\r\n")),
    }
    if let Some(content_type) = &request.content_type {
        head.push_str(&format!("Content-Type: {content_type}\r\n"));
    }
    head.push_str("\r\n");
    let mut bytes = head.into_bytes();
    bytes.extend_from_slice(&request.body);
    // The server may answer before reading all of a body; its answer is what counts.
    let written = stream.write_all(&bytes);
    let mut reply = Vec::new();
    let read = stream.read_to_end(&mut reply);
    if reply.is_empty() {
        return Err(format!("no response (write: {written:?}, read: {read:?})"));
    }
    let split = reply
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or_else(|| format!("no end of headers in {:?}", String::from_utf8_lossy(&reply)))?;
    let head = String::from_utf8_lossy(&reply[..split]).to_string();
    let mut body = reply[split + 4..].to_vec();
    let status: u16 = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| format!("bad status line: {head}"))?;
    let header = |name: &str| {
        head.lines()
            .skip(1)
            .filter_map(|l| l.split_once(':'))
            .find(|(k, _)| k.trim().eq_ignore_ascii_case(name))
            .map(|(_, v)| v.trim().to_string())
    };
    if header("transfer-encoding").is_some_and(|v| v.eq_ignore_ascii_case("chunked")) {
        body = dechunk(&body)?;
    }
    Ok(Response {
        status,
        content_type: header("content-type").unwrap_or_default(),
        body,
    })
}

fn dechunk(mut data: &[u8]) -> Result<Vec<u8>, String> {
    let mut out = Vec::new();
    loop {
        let line_end = data
            .windows(2)
            .position(|w| w == b"\r\n")
            .ok_or("truncated chunk size")?;
        let size_text = String::from_utf8_lossy(&data[..line_end]);
        let size = usize::from_str_radix(size_text.split(';').next().unwrap_or("").trim(), 16)
            .map_err(|e| format!("chunk size {size_text:?}: {e}"))?;
        data = &data[line_end + 2..];
        if size == 0 {
            return Ok(out);
        }
        if data.len() < size + 2 {
            return Err("truncated chunk".into());
        }
        out.extend_from_slice(&data[..size]);
        data = &data[size + 2..];
    }
}

fn get(server: &DnzServer, path: &str) -> String {
    let response = send(
        server,
        &Request {
            method: "GET".into(),
            path: path.into(),
            content_type: None,
            auth: None,
            body: Vec::new(),
            what: String::new(),
        },
    )
    .unwrap_or_else(|e| panic!("GET {path}: {e}"));
    let text = String::from_utf8_lossy(&response.body).to_string();
    assert_eq!(response.status, 200, "GET {path}: {text}");
    text
}

/// Everything a refused call must leave as it was, each part labelled.
fn snapshot(server: &DnzServer) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for path in [
        "/api/v1/zones".to_string(),
        format!("/api/v1/zones/{ZONE}"),
        format!("/api/v1/zones/{ZONE}/export"),
        format!("/api/v1/zones/{ZONE}/records"),
        format!("/api/v1/zones/{ZONE}/pools"),
        format!("/api/v1/zones/{ZONE}/load-balancers"),
        "/api/v1/users".into(),
        "/api/v1/tokens".into(),
        "/api/v1/settings/geoip".into(),
        "/api/v1/topology".into(),
    ] {
        out.push((path.clone(), get(server, &path)));
    }
    for (name, rtype) in [
        ("abuse.test", Rtype::SOA),
        ("abuse.test", Rtype::NS),
        ("abuse.test", Rtype::MX),
        ("www.abuse.test", Rtype::A),
        ("lb.abuse.test", Rtype::A),
        ("lb.abuse.test", Rtype::AAAA),
        ("txt.abuse.test", Rtype::TXT),
        ("alias.abuse.test", Rtype::A),
        ("v6.abuse.test", Rtype::AAAA),
        ("nothere.abuse.test", Rtype::A),
    ] {
        let response = query(server.dns, name, rtype, &QueryOptions::default());
        out.push((
            format!("dns {name} {rtype}"),
            format!(
                "{} {:?} {:?}",
                response.rcode, response.answer, response.authority
            ),
        ));
    }
    out
}

fn soa_serial(server: &DnzServer) -> u32 {
    let zone: api::Zone =
        serde_json::from_str(&get(server, &format!("/api/v1/zones/{ZONE}"))).expect("zone JSON");
    zone.serial
}

fn diff(before: &[(String, String)], after: &[(String, String)]) -> Vec<String> {
    before
        .iter()
        .zip(after)
        .filter(|(b, a)| b.1 != a.1)
        .map(|(b, a)| format!("{}:\n  before: {}\n  after:  {}", b.0, b.1, a.1))
        .collect()
}

// ---- what is invalid --------------------------------------------------------------------

/// Names that no zone, record or load balancer can have.
fn bad_names() -> Vec<Value> {
    vec![
        json!(""),
        json!("   "),
        json!("."),
        json!("a..b"),
        json!(".."),
        json!(".leading"),
        json!(format!("{}.x", "a".repeat(64))),
        json!(format!("{}x", "abcdefg.".repeat(32))),
        json!("a".repeat(100_000)),
        json!("www.other.example."),
        json!("a\\"),
        json!("\\999"),
        json!(null),
        json!(5),
        json!(-1),
        json!(true),
        json!([]),
        json!(["www"]),
        json!({"name": "www"}),
    ]
}

/// Values no `u32` field accepts.
fn bad_u32() -> Vec<Value> {
    vec![
        json!(-1),
        json!(4_294_967_296_u64),
        json!(1.5),
        json!("300"),
        json!(true),
        json!([]),
        json!({}),
        raw("1e400"),
        raw("-0.0e"),
        raw("99999999999999999999999999999"),
        raw("0x10"),
        raw("NaN"),
    ]
}

/// Values no `i64` field accepts.
fn bad_i64_types() -> Vec<Value> {
    vec![
        json!(1.5),
        json!("5"),
        json!(true),
        json!([1]),
        json!({}),
        raw("1e30"),
        raw("99999999999999999999"),
        raw("-99999999999999999999"),
        raw("Infinity"),
    ]
}

/// Strings that are not IPv4 addresses (some are other things).
fn bad_ips() -> Vec<Value> {
    vec![
        json!(""),
        json!("999.0.0.1"),
        json!("192.0.2"),
        json!("192.0.2.1.5"),
        json!("192.0.2.1/24"),
        json!("::g"),
        json!("localhost"),
        json!("1.2.3.4 5.6.7.8"),
        json!("\u{0}"),
        json!("１９２.0.2.1"),
        json!("9".repeat(5000)),
        json!(null),
        json!(3_221_225_985_u64),
        json!([192, 0, 2, 1]),
    ]
}

fn bad_checks() -> Vec<Value> {
    vec![
        json!({"kind": "gopher"}),
        json!({}),
        json!({"kind": ""}),
        json!({"kind": "HTTP\u{0}"}),
        json!({"kind": "http", "port": 0}),
        json!({"kind": "http", "port": 65536}),
        json!({"kind": "http", "port": i64::MIN}),
        json!({"kind": "http", "port": "80"}),
        json!({"kind": "http", "path": "no-slash"}),
        json!({"kind": "http", "path": "/a b"}),
        json!({"kind": "http", "path": "/\u{7}"}),
        json!({"kind": "http", "method": "POST"}),
        json!({"kind": "http", "status": "abc"}),
        json!({"kind": "http", "status": ""}),
        json!({"kind": "http", "host": ""}),
        json!({"kind": "http", "host": "a/b"}),
        json!({"kind": "http", "host": "h".repeat(300)}),
        json!({"kind": "http", "body": "("}),
        json!({"kind": "http", "body": "(a{1000}){1000}"}),
        json!({"kind": "http", "payload": "x"}),
        json!({"kind": "udp"}),
        json!({"kind": "tcp", "interval": 0}),
        json!({"kind": "tcp", "interval": 3601}),
        json!({"kind": "tcp", "interval": i64::MAX}),
        json!({"kind": "tcp", "timeout": 0}),
        json!({"kind": "tcp", "interval": 1, "timeout": 1000}),
        json!({"kind": "tcp", "timeout": i64::MIN}),
        json!({"kind": "tcp", "down_after": 0}),
        json!({"kind": "tcp", "up_after": 11}),
        json!({"kind": "tcp", "up_after": 1.0}),
        json!({"kind": ["tcp"]}),
        json!("http"),
        json!(5),
        json!([]),
    ]
}

fn bad_steering() -> Vec<Value> {
    let mut out = vec![
        json!({"countries": ["XX"]}),
        json!({"countries": ["de"]}),
        json!({"countries": ["DEU"]}),
        json!({"countries": "DE"}),
        json!({"countries": [1]}),
        json!({"countries": [""]}),
        json!({"countries": [null]}),
        json!({"continents": ["EUROPE"]}),
        json!({"continents": ["eu"]}),
        json!({"weight": -1}),
        json!({"weight": i64::MAX}),
        json!({"weight": 1.5}),
        json!({"weight": "5"}),
        json!({"backup": "yes"}),
        json!({"backup": 1}),
        json!({"backup": null}),
        json!("steering"),
        json!(5),
        // serde reads a struct from a sequence too: its first field, countries.
        json!([["XX"]]),
    ];
    out.extend(
        bad_checks()
            .into_iter()
            .map(|check| json!({"check": check})),
    );
    out
}

fn bad_pool_names() -> Vec<Value> {
    vec![
        json!(""),
        json!("   "),
        json!("a b"),
        json!("a/b"),
        json!("p".repeat(65)),
        json!("ünï"),
        json!("a\nb"),
        json!("a\u{0}"),
        json!(null),
        json!(5),
        json!(["eu"]),
    ]
}

/// A field of a body and values that make the body invalid whatever else it holds.
type FieldMutations = Vec<(&'static str, Vec<Value>)>;

/// A write route with a body: its path, a valid (or conflicting) body, what makes it invalid,
/// and the fields it cannot do without.
struct JsonRoute {
    method: &'static str,
    path: String,
    base: Value,
    fields: FieldMutations,
    required: Vec<&'static str>,
}

fn json_routes(record_id: i64) -> Vec<JsonRoute> {
    let record_fields = || -> FieldMutations {
        vec![
            ("/name", bad_names()),
            (
                "/type",
                vec![
                    json!(""),
                    json!("BOGUS"),
                    json!("A A"),
                    json!("TYPE70000"),
                    json!("A\u{0}"),
                    json!("AAAA"),
                    json!("MX"),
                    json!("SOA"),
                    json!("TXT"),
                    json!("a".repeat(10_000)),
                    json!(1),
                    json!(null),
                    json!(["A"]),
                ],
            ),
            ("/value", {
                let mut v = bad_ips();
                v.extend([json!("\\# 3 0a0000"), json!("\\# 4 zz")]);
                v
            }),
            ("/ttl", {
                let mut v = bad_u32();
                v.push(json!(4_294_967_295_u64));
                v.push(json!(2_147_483_648_u64));
                v
            }),
            ("/steering", bad_steering()),
            ("/steering/countries", vec![json!(["XX"]), json!("DE")]),
            ("/steering/weight", {
                let mut v = bad_i64_types();
                v.push(json!(-5));
                v.push(json!(i64::MAX));
                v
            }),
            ("/steering/check", bad_checks()),
        ]
    };
    let record = json!({
        "name": "www",
        "type": "A",
        "value": "192.0.2.10",
        "ttl": 300,
        "steering": {"continents": ["EU"], "weight": 5}
    });
    let steering = json!({"countries": ["DE"], "weight": 5, "backup": false});
    let steering_fields = {
        let mut fields: FieldMutations = vec![
            ("/countries", vec![json!(["XX"]), json!("DE"), json!([5])]),
            ("/weight", {
                let mut v = bad_i64_types();
                v.push(json!(-5));
                v
            }),
            ("/backup", vec![json!("no"), json!(0), json!(null)]),
            ("/check", bad_checks()),
        ];
        // The whole body replaced by a bad steering.
        fields.push(("", bad_steering()));
        fields
    };
    let pool = json!({
        "name": "eu",
        "enabled": true,
        "algorithm": "weighted",
        "location": {"latitude": 50.1, "longitude": 8.7},
        "origins": [
            {"address": "192.0.2.1", "weight": 10, "priority": 0},
            {"address": "2001:db8::1"}
        ]
    });
    let pool_fields = || -> FieldMutations {
        vec![
            ("/name", bad_pool_names()),
            ("/enabled", vec![json!("yes"), json!(1), json!([])]),
            (
                "/algorithm",
                vec![json!(""), json!("roundrobin"), json!("Weighted!"), json!(1)],
            ),
            (
                "/location",
                vec![
                    json!({"latitude": 91, "longitude": 0}),
                    json!({"latitude": 0, "longitude": -180.5}),
                    json!({"latitude": -1000000.0, "longitude": 1e300}),
                    json!({"latitude": "50"}),
                    json!({"latitude": 1}),
                    json!({}),
                    json!([50]),
                    json!(["50", "8"]),
                    raw(r#"{"latitude": 1e400, "longitude": 0}"#),
                ],
            ),
            (
                "/origins",
                vec![
                    json!([{"address": "999.0.0.1"}]),
                    json!([{"address": ""}]),
                    json!([{"address": "192.0.2.1"}, {"address": "192.0.2.1"}]),
                    json!(
                        (0..21)
                            .map(|i| json!({"address": format!("192.0.2.{i}")}))
                            .collect::<Vec<_>>()
                    ),
                    json!([{"address": "192.0.2.1", "weight": 0}]),
                    json!([{"address": "192.0.2.1", "weight": 101}]),
                    json!([{"address": "192.0.2.1", "weight": i64::MIN}]),
                    json!([{"address": "192.0.2.1", "priority": -1}]),
                    json!([{"address": "192.0.2.1", "priority": 4_294_967_296_u64}]),
                    json!([{"address": "192.0.2.1", "enabled": "no"}]),
                    json!([{"address": "192.0.2.1", "check": {"kind": "gopher"}}]),
                    json!([{"address": "192.0.2.1", "check": {"kind": "tcp", "timeout": 0}}]),
                    json!([{"weight": 1}]),
                    json!("192.0.2.1"),
                    json!([1]),
                    json!({}),
                ],
            ),
            ("/origins/0/address", bad_ips()),
            ("/origins/0/weight", bad_i64_types()),
            ("/origins/1/check", bad_checks()),
        ]
    };
    let lb = json!({
        "name": "lb",
        "pools": ["eu"],
        "ttl": 60,
        "steering": "off",
        "locate_by": "pop",
        "affinity": "none"
    });
    let lb_fields = || -> FieldMutations {
        vec![
            ("/name", bad_names()),
            ("/ttl", {
                let mut v = bad_i64_types();
                v.extend([json!(0), json!(4), json!(3601), json!(-60), json!(i64::MAX)]);
                v
            }),
            (
                "/pools",
                vec![
                    json!([]),
                    json!(["nope"]),
                    json!(["eu", "eu"]),
                    json!([""]),
                    json!(["EU"]),
                    json!("eu"),
                    json!([1]),
                    json!(null),
                    json!(vec!["eu"; 100]),
                ],
            ),
            (
                "/rules",
                vec![
                    json!([{"kind": "planet", "key": "x", "pools": ["eu"]}]),
                    json!([{"kind": "country", "key": "XX", "pools": ["eu"]}]),
                    json!([{"kind": "country", "key": "DE", "pools": []}]),
                    json!([{"kind": "country", "key": "DE", "pools": ["nope"]}]),
                    json!([{"kind": "pop", "key": "a b", "pools": ["eu"]}]),
                    json!([{"kind": "continent", "key": "EUROPE", "pools": ["eu"]}]),
                    json!([{"kind": "country", "key": "DE"}]),
                    json!([{"kind": "country", "pools": ["eu"]}]),
                    json!({"kind": "country"}),
                    json!("rules"),
                ],
            ),
            ("/fallback", vec![json!("nope"), json!(5), json!(["eu"])]),
            (
                "/steering",
                vec![json!(""), json!("sideways"), json!("OFF "), json!(1)],
            ),
            ("/locate_by", vec![json!("gps"), json!(""), json!([])]),
            ("/affinity", vec![json!("cookie"), json!(""), json!({})]),
            ("/enabled", vec![json!("true"), json!(1)]),
        ]
    };
    let z = ZONE;
    vec![
        JsonRoute {
            method: "POST",
            path: "/api/v1/zones".into(),
            // The zone exists: at best a conflict.
            base: json!({
                "name": ZONE,
                "default_ttl": 300,
                "soa": {"mname": "ns1.abuse.test.", "rname": "hostmaster.abuse.test.",
                        "refresh": 3600, "retry": 600, "expire": 86400, "minimum": 300},
                "ns": ["ns1.abuse.test."]
            }),
            fields: vec![
                // Any valid name would be a new zone.
                (
                    "/name",
                    bad_names()
                        .into_iter()
                        .filter(|n| n != "www.other.example.")
                        .collect(),
                ),
                ("/default_ttl", bad_u32()),
                ("/soa", vec![json!("soa"), json!(5), json!([])]),
                ("/soa/refresh", bad_u32()),
                ("/soa/minimum", bad_u32()),
                ("/soa/mname", bad_names()),
                (
                    "/ns",
                    vec![
                        json!("ns1"),
                        json!([5]),
                        json!([""]),
                        json!({}),
                        json!(["a..b"]),
                    ],
                ),
            ],
            required: vec!["name"],
        },
        JsonRoute {
            method: "POST",
            path: format!("/api/v1/zones/{z}/records"),
            // The same record exists: at best a duplicate.
            base: record.clone(),
            fields: record_fields(),
            required: vec!["name", "type", "value"],
        },
        JsonRoute {
            method: "PUT",
            path: format!("/api/v1/zones/{z}/records/{record_id}"),
            base: record,
            fields: record_fields(),
            required: vec!["name", "type", "value"],
        },
        JsonRoute {
            method: "PUT",
            path: format!("/api/v1/zones/{z}/records/{record_id}/steering"),
            base: steering,
            fields: steering_fields,
            required: vec![],
        },
        JsonRoute {
            method: "POST",
            path: "/api/v1/checks/test".into(),
            base: json!({
                "address": "192.0.2.1",
                "name": "www.abuse.test",
                "check": {"kind": "tcp", "port": 9, "timeout": 200}
            }),
            fields: vec![
                ("/address", bad_ips()),
                ("/check", bad_checks()),
                ("/check/kind", vec![json!("gopher"), json!(""), json!(1)]),
                ("/name", vec![json!(5), json!([]), json!({})]),
            ],
            required: vec!["address", "check"],
        },
        JsonRoute {
            method: "POST",
            path: format!("/api/v1/zones/{z}/pools"),
            // The pool exists: at best a conflict.
            base: pool.clone(),
            fields: pool_fields(),
            required: vec!["name"],
        },
        JsonRoute {
            method: "PUT",
            path: format!("/api/v1/zones/{z}/pools/eu"),
            base: pool,
            fields: pool_fields(),
            required: vec!["name"],
        },
        JsonRoute {
            method: "POST",
            path: format!("/api/v1/zones/{z}/load-balancers"),
            // The load balancer exists: at best a conflict.
            base: lb.clone(),
            fields: lb_fields(),
            required: vec!["name"],
        },
        JsonRoute {
            method: "PUT",
            path: format!("/api/v1/zones/{z}/load-balancers/lb"),
            base: lb,
            fields: lb_fields(),
            required: vec!["name"],
        },
        JsonRoute {
            method: "POST",
            path: "/api/v1/users".into(),
            // admin exists: at best a conflict.
            base: json!({"name": "admin", "password": "correct horse battery", "role": "viewer"}),
            fields: vec![
                (
                    "/name",
                    vec![
                        json!(""),
                        json!("a b"),
                        json!("ünï"),
                        json!("u".repeat(65)),
                        json!("a/b"),
                        json!("a\u{0}"),
                        json!(null),
                        json!(5),
                    ],
                ),
                (
                    "/password",
                    vec![json!(""), json!("1234567"), json!(null), json!(12345678)],
                ),
                (
                    "/role",
                    vec![
                        json!("root"),
                        json!(""),
                        json!("Viewer"),
                        json!(2),
                        json!(null),
                    ],
                ),
            ],
            required: vec!["name", "password", "role"],
        },
        JsonRoute {
            method: "POST",
            path: "/api/v1/tokens".into(),
            // No such user: at best a 422.
            base: json!({"name": "abuse", "user": "nobody-here"}),
            fields: vec![
                (
                    "/name",
                    vec![json!(""), json!("   "), json!(null), json!(5)],
                ),
                (
                    "/user",
                    vec![json!(""), json!(5), json!([]), json!("x".repeat(5000))],
                ),
            ],
            required: vec!["name"],
        },
        JsonRoute {
            method: "POST",
            path: "/api/v1/session".into(),
            // A wrong password: at best a 401 (or 429 once the limiter steps in).
            base: json!({"name": "admin", "password": "definitely wrong"}),
            fields: vec![
                ("/name", vec![json!(""), json!(null), json!("nobody")]),
                (
                    "/password",
                    vec![json!(""), json!(5), json!("p".repeat(10_000))],
                ),
                ("/cookie", vec![json!("yes"), json!(1), json!(true)]),
            ],
            required: vec!["name", "password"],
        },
        JsonRoute {
            method: "PUT",
            path: "/api/v1/settings/geoip".into(),
            base: json!({"url": "https://example.invalid/db-{year}-{month}.mmdb.gz", "auto_update": false}),
            fields: vec![
                (
                    "/url",
                    vec![
                        json!(""),
                        json!("ftp://example.invalid/x"),
                        json!("not a url"),
                        json!("http://"),
                        json!("http:///path"),
                        json!("javascript:alert(1)"),
                        json!(format!("https://example.invalid/{}", "x".repeat(3000))),
                        json!("https://exa mple.invalid/"),
                        json!(5),
                        json!([]),
                    ],
                ),
                ("/auto_update", vec![json!("yes"), json!(1), json!([])]),
            ],
            required: vec![],
        },
    ]
}

/// Serializes, then splices in the raw values.
fn to_text(value: &Value) -> String {
    let mut text = serde_json::to_string(value).expect("serialize");
    let marker = "\"\\u0001RAW:";
    while let Some(start) = text.find(marker) {
        let rest = &text[start + marker.len()..];
        // Raw values hold no quotes or backslashes.
        let end = rest.find('"').expect("end of raw value");
        let inner = rest[..end].to_string();
        text.replace_range(start..start + marker.len() + end + 1, &inner);
    }
    text
}

/// Sets the value at a JSON pointer, creating the parent objects on the way.
fn set_pointer(body: &mut Value, pointer: &str, value: Value) {
    if pointer.is_empty() {
        *body = value;
        return;
    }
    let (parent, key) = pointer.rsplit_once('/').expect("pointer");
    if body.pointer(parent).is_none() {
        set_pointer(body, parent, json!({}));
    }
    match body.pointer_mut(parent) {
        Some(Value::Object(map)) => {
            map.insert(key.to_string(), value);
        }
        Some(Value::Array(items)) => {
            let idx: usize = key.parse().expect("index");
            if idx < items.len() {
                items[idx] = value;
            } else {
                items.push(value);
            }
        }
        Some(other) => *other = json!({ key: value }),
        None => unreachable!("parent made above"),
    }
}

/// Neutral changes: unknown fields, which serde ignores; they never make a body valid.
fn decorate(rng: &mut Rng, body: &mut Value) {
    if let Value::Object(map) = body {
        let junk = [
            json!(null),
            json!("x"),
            json!({"deep": [1, 2, {"x": null}]}),
            json!(-1),
            json!("\u{202e}\u{0}\u{1b}[31m"),
        ];
        let key = *rng.pick(&["zzz", "id", "__proto__", "💥", "name2", ""]);
        map.insert(key.to_string(), rng.pick(&junk).clone());
    }
}

/// A body that is not the JSON the route wants at all.
fn garbage_body(rng: &mut Rng, base: &Value) -> (String, Vec<u8>) {
    let text = to_text(base);
    // The first field the route reads (an unknown one would be skipped unread).
    let key = base
        .as_object()
        .and_then(|map| map.keys().next())
        .cloned()
        .unwrap_or_default();
    match rng.below(12) {
        0 => {
            let cut = 1 + rng.below(text.len().max(2) - 1);
            ("truncated".into(), text.as_bytes()[..cut].to_vec())
        }
        1 => ("empty".into(), Vec::new()),
        2 => ("null".into(), b"null".to_vec()),
        3 => ("array".into(), format!("[{text}]").into_bytes()),
        4 => ("number".into(), b"12345".to_vec()),
        5 => ("string".into(), serde_json::to_vec(&text).expect("json")),
        6 => {
            let depth = 1 + rng.below(20_000);
            let mut s = "[".repeat(depth);
            s.push_str(&"]".repeat(depth));
            (format!("nesting {depth}"), s.into_bytes())
        }
        7 => {
            let len = 1 + rng.below(300);
            let bytes: Vec<u8> = (0..len).map(|_| rng.next_u64() as u8).collect();
            ("random bytes".into(), bytes)
        }
        8 => {
            // Invalid UTF-8 inside a string, as the value of a field the route reads.
            let mut bytes = format!("{{\"{key}\":\"").into_bytes();
            bytes.extend_from_slice(&[0xff, 0xfe, 0xc3]);
            bytes.extend_from_slice(b"\"}");
            ("invalid utf-8".into(), bytes)
        }
        9 => (
            "trailing data".into(),
            format!("{text} {text}").into_bytes(),
        ),
        10 => (
            "trailing comma".into(),
            format!("{}, }}", &text[..text.len() - 1]).into_bytes(),
        ),
        _ => {
            // A lone surrogate escape.
            (
                "lone surrogate".into(),
                format!("{{\"{key}\":\"\\ud800\"}}").into_bytes(),
            )
        }
    }
}

// ---- paths ------------------------------------------------------------------------------

/// Zone path segments for writes whose bodies are invalid anyway.
fn zone_segments(rng: &mut Rng) -> String {
    let long = "a".repeat(300);
    let label = format!("{}.test", "b".repeat(64));
    let options = [
        ZONE,
        ZONE,
        ZONE,
        "abuse.test.",
        "Abuse.TEST",
        "nope.test",
        "a..b",
        "..",
        "%2e%2e",
        "%2E%2E%2Fetc",
        "%FF",
        "%00",
        "%",
        "%zz",
        "a%2Fb",
        "*.test",
        ".",
        "%20",
        "%F0%9F%92%A5.test",
        &long,
        &label,
    ];
    rng.pick(&options).to_string()
}

/// Zone segments that are never the real zone (for deletes and imports).
fn other_zone_segments(rng: &mut Rng) -> String {
    loop {
        let segment = zone_segments(rng);
        let decoded = segment.replace("%2e", ".").to_ascii_lowercase();
        if decoded.trim_end_matches('.') != ZONE {
            return segment;
        }
    }
}

/// Record id segments that are never a record.
fn bad_ids(rng: &mut Rng) -> String {
    let options = [
        "0",
        "-1",
        "999999",
        "99999999999999999999",
        "-99999999999999999999",
        "abc",
        "1.5",
        "1e3",
        "0x10",
        "%FF",
        "%00",
        "%20",
        "..",
        "%2e%2e",
        "",
        "9223372036854775807",
        "-9223372036854775808",
    ];
    rng.pick(&options).to_string()
}

fn percent_encode(text: &str) -> String {
    text.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

// ---- the generator ----------------------------------------------------------------------

struct World {
    record_ids: Vec<i64>,
    /// The record the PUT routes edit (`www A 192.0.2.10`).
    record_id: i64,
    pool_id: i64,
    routes: Vec<JsonRoute>,
}

/// Every route and the methods it serves, with a real target filled in.
fn route_table(world: &World) -> Vec<(String, &'static [&'static str])> {
    let z = ZONE;
    let id = world.record_id;
    vec![
        ("/healthz".into(), &["GET"][..]),
        ("/metrics".into(), &["GET"]),
        ("/api/v1/openapi.json".into(), &["GET"]),
        ("/api/v1/session".into(), &["GET", "POST", "DELETE"]),
        ("/api/v1/zones".into(), &["GET", "POST"]),
        (format!("/api/v1/zones/{z}"), &["GET", "DELETE"]),
        (
            format!("/api/v1/zones/{z}/records"),
            &["GET", "POST", "DELETE"],
        ),
        (
            format!("/api/v1/zones/{z}/records/{id}"),
            &["PUT", "DELETE"],
        ),
        (
            format!("/api/v1/zones/{z}/records/{id}/steering"),
            &["PUT", "DELETE"],
        ),
        ("/api/v1/explain".into(), &["GET"]),
        ("/api/v1/checks/test".into(), &["POST"]),
        (
            format!("/api/v1/zones/{z}/records/{id}/health-events"),
            &["GET"],
        ),
        (format!("/api/v1/zones/{z}/import"), &["POST"]),
        (format!("/api/v1/zones/{z}/export"), &["GET"]),
        ("/api/v1/users".into(), &["GET", "POST"]),
        ("/api/v1/users/admin".into(), &["DELETE"]),
        ("/api/v1/tokens".into(), &["GET", "POST"]),
        ("/api/v1/tokens/1".into(), &["DELETE"]),
        ("/api/v1/settings/geoip".into(), &["GET", "PUT"]),
        ("/api/v1/settings/geoip/download".into(), &["POST"]),
        ("/api/v1/geoip/lookup".into(), &["GET"]),
        (format!("/api/v1/zones/{z}/pools"), &["GET", "POST"]),
        (
            format!("/api/v1/zones/{z}/pools/eu"),
            &["GET", "PUT", "DELETE"],
        ),
        (format!("/api/v1/zones/{z}/pools/eu/check"), &["POST"]),
        (
            format!("/api/v1/zones/{z}/load-balancers"),
            &["GET", "POST"],
        ),
        (
            format!("/api/v1/zones/{z}/load-balancers/lb"),
            &["GET", "PUT", "DELETE"],
        ),
        ("/api/v1/topology".into(), &["GET"]),
    ]
}

fn json_request(method: &str, path: String, body: String, what: String) -> Request {
    Request {
        method: method.into(),
        path,
        content_type: Some("application/json".into()),
        auth: None,
        body: body.into_bytes(),
        what,
    }
}

/// A valid body for a route with one field made invalid (and maybe unknown fields added).
fn mutated_body(rng: &mut Rng, route: &JsonRoute) -> (String, String) {
    let mut body = route.base.clone();
    let what;
    if !route.required.is_empty() && rng.chance(10) {
        let field = *rng.pick(&route.required);
        if let Value::Object(map) = &mut body {
            map.remove(field);
        }
        what = format!("without {field}");
    } else {
        let (pointer, values) = rng.pick(&route.fields);
        let value = rng.pick(values).clone();
        let shown = to_text(&value);
        let shown: String = shown.chars().take(60).collect();
        what = format!("{pointer} = {shown}");
        set_pointer(&mut body, pointer, value);
    }
    if rng.chance(20) {
        decorate(rng, &mut body);
    }
    let mut text = to_text(&body);
    // A duplicated key (serde refuses it for these structs): the first field again.
    if rng.chance(5)
        && text.starts_with("{\"")
        && let Some(key_end) = text[2..].find('"')
    {
        let key = text[2..2 + key_end].to_string();
        text.insert_str(1, &format!("\"{key}\":\"dup\","));
        return (text, format!("{what}, {key} twice"));
    }
    (text, what)
}

fn bad_zone_file(rng: &mut Rng) -> (String, Vec<u8>) {
    let bad_lines = [
        "www IN A 999.0.0.1",
        "$ORIGIN",
        "$TTL -5",
        "@ IN SOA",
        "a..b IN A 192.0.2.1",
        "x IN BOGUS foo",
        "( ",
        "y IN TXT \"unterminated",
        "$INCLUDE /etc/passwd",
        "www 99999999999 IN A 192.0.2.1",
        "z IN A 192.0.2.1 extra",
        "mx IN MX mail",
        "@ IN CNAME elsewhere.",
        "cname IN CNAME a\ncname IN A 192.0.2.1",
        "\u{0}\u{1}\u{2}",
        "ünïcode IN A 192.0.2.1",
        "$GENERATE 1-100000 h$ A 192.0.2.1",
        "w IN A 192.0.2.1 ; ok\nw IN AAAA 192.0.2.1",
    ];
    let mut text = String::new();
    if rng.chance(50) {
        text.push_str(ZONE_FILE);
    }
    let bad = rng.pick(&bad_lines);
    let long_label = format!("{} IN A 192.0.2.1", "l".repeat(64));
    let long_name = format!("{}x IN A 192.0.2.1", "abcdefg.".repeat(32));
    let line = match rng.below(10) {
        0 => long_label,
        1 => long_name,
        _ => bad.to_string(),
    };
    text.push_str(&line);
    text.push('\n');
    if rng.chance(10) {
        let mut bytes = text.into_bytes();
        bytes.extend_from_slice(&[0xff, 0xfe, b'\n']);
        return (format!("zone file + invalid utf-8 after {line:?}"), bytes);
    }
    (format!("zone file with {line:?}"), text.into_bytes())
}

fn generate(rng: &mut Rng, world: &World) -> Request {
    let roll = rng.below(100);
    if roll < 50 {
        let route = rng.pick(&world.routes);
        let (body, what) = mutated_body(rng, route);
        let mut path = route.path.clone();
        // Sometimes a bad zone in the path too (the body is invalid anyway).
        if path.contains(ZONE) && rng.chance(15) {
            path = path.replacen(ZONE, &zone_segments(rng), 1);
        }
        let what = format!("{} {path}: {what}", route.method);
        return json_request(route.method, path, body, what);
    }
    if roll < 58 {
        let route = rng.pick(&world.routes);
        let (what, body) = garbage_body(rng, &route.base);
        return Request {
            method: route.method.into(),
            path: route.path.clone(),
            content_type: Some("application/json".into()),
            auth: None,
            body,
            what: format!("{} {}: {what}", route.method, route.path),
        };
    }
    if roll < 63 {
        // A valid body, but not declared as JSON: refused before it is read.
        let route = rng.pick(&world.routes);
        let content_type = rng
            .pick(&[
                Some("text/plain"),
                None,
                Some("application/x-www-form-urlencoded"),
                Some("application/jsonx"),
                Some("multipart/form-data; boundary=x"),
                Some("application/json; charset=ebcdic"),
            ])
            .map(str::to_string);
        let (body, what) = mutated_body(rng, route);
        return Request {
            method: route.method.into(),
            path: route.path.clone(),
            content_type: content_type.clone(),
            auth: None,
            body: body.into_bytes(),
            what: format!(
                "{} {} as {content_type:?}: {what}",
                route.method, route.path
            ),
        };
    }
    if roll < 71 {
        let (what, body) = bad_zone_file(rng);
        let zone = if rng.chance(80) {
            ZONE.to_string()
        } else {
            other_zone_segments(rng)
        };
        let path = format!("/api/v1/zones/{zone}/import");
        return Request {
            method: "POST".into(),
            path: path.clone(),
            content_type: Some(
                rng.pick(&["text/plain", "text/dns", "application/json"])
                    .to_string(),
            ),
            auth: None,
            body,
            what: format!("POST {path}: {what}"),
        };
    }
    if roll < 80 {
        return bad_path_request(rng, world);
    }
    if roll < 86 {
        let table = route_table(world);
        let (path, allowed) = rng.pick(&table);
        let method = loop {
            let method = *rng.pick(&["GET", "POST", "PUT", "DELETE", "PATCH", "OPTIONS", "FOO"]);
            if !allowed.contains(&method) {
                break method;
            }
        };
        return Request {
            method: method.into(),
            path: path.clone(),
            content_type: Some("application/json".into()),
            auth: None,
            body: b"{}".to_vec(),
            what: format!("{method} {path}: wrong method"),
        };
    }
    if roll < 93 {
        return query_request(rng);
    }
    if roll < 97 {
        // Bad credentials on any route: 401 before anything runs.
        let table = route_table(world);
        let (path, allowed) = rng.pick(&table);
        let method = *rng.pick(allowed);
        let auth = rng
            .pick(&[
                "",
                "Bearer ",
                "Bearer dnz_wrong",
                "Basic YWRtaW46YWRtaW4=",
                "bearer x",
                "Bearer dnz_\u{e9}",
            ])
            .to_string();
        return Request {
            method: method.into(),
            path: path.clone(),
            content_type: Some("application/json".into()),
            auth: Some(auth.clone()),
            body: b"{}".to_vec(),
            what: format!("{method} {path}: auth {auth:?}"),
        };
    }
    huge_request(rng, world)
}

/// Reads and writes with path segments that name nothing (or a conflict).
fn bad_path_request(rng: &mut Rng, world: &World) -> Request {
    let z = zone_segments(rng);
    let other = other_zone_segments(rng);
    let id = bad_ids(rng);
    let real = world.record_ids[rng.below(world.record_ids.len())];
    let pool = rng
        .pick(&[
            "eu".to_string(),
            world.pool_id.to_string(),
            "nope".into(),
            "%FF".into(),
            "0".into(),
            "-1".into(),
            "99999999999999999999".into(),
            "a%2Fb".into(),
            "p".repeat(500),
        ])
        .clone();
    let lb = rng
        .pick(&[
            "nope".to_string(),
            "0".into(),
            "999999".into(),
            "-5".into(),
            "%FF".into(),
            "a..b".into(),
            "lb2".into(),
            "%2e%2e".into(),
            "lb.other.example.".into(),
            "n".repeat(300),
        ])
        .clone();
    let user = rng
        .pick(&[
            "admin".to_string(),
            "nobody".into(),
            "%FF".into(),
            "%00".into(),
            "".into(),
            "u".repeat(1000),
        ])
        .clone();
    let token = bad_ids(rng);
    let candidates: Vec<(&str, String)> = vec![
        ("GET", format!("/api/v1/zones/{z}")),
        ("GET", format!("/api/v1/zones/{z}/records")),
        ("GET", format!("/api/v1/zones/{z}/export")),
        ("GET", format!("/api/v1/zones/{z}/pools")),
        ("GET", format!("/api/v1/zones/{z}/pools/{pool}")),
        ("GET", format!("/api/v1/zones/{z}/load-balancers/{lb}")),
        (
            "GET",
            format!("/api/v1/zones/{z}/records/{id}/health-events"),
        ),
        (
            "GET",
            format!("/api/v1/zones/{z}/records/{real}/health-events"),
        ),
        ("DELETE", format!("/api/v1/zones/{other}")),
        ("DELETE", format!("/api/v1/zones/{z}/records/{id}")),
        ("DELETE", format!("/api/v1/zones/{other}/records/{real}")),
        ("DELETE", format!("/api/v1/zones/{z}/records/{id}/steering")),
        (
            "DELETE",
            format!("/api/v1/zones/{other}/records/{real}/steering"),
        ),
        ("DELETE", format!("/api/v1/zones/{z}/pools/{pool}")),
        ("DELETE", format!("/api/v1/zones/{z}/load-balancers/{lb}")),
        ("DELETE", format!("/api/v1/users/{user}")),
        ("DELETE", format!("/api/v1/tokens/{token}")),
        ("POST", format!("/api/v1/zones/{z}/pools/{pool}/check")),
        ("GET", format!("/api/v1/zones/{z}/../../users")),
        ("GET", "/api/v1/zones/%2e%2e/%2e%2e/users".to_string()),
        ("GET", format!("/api/v1//zones/{z}")),
        ("GET", format!("/api/v1/zones/{z}/records/")),
        ("GET", "/api/v1/".to_string()),
        ("GET", "/api/v2/zones".to_string()),
        ("GET", format!("/api/v1/zones/{}", "x".repeat(20_000))),
        (
            "GET",
            format!("/api/v1/zones/{}", percent_encode("ü\u{0}.test")),
        ),
        (
            "DELETE",
            format!("/api/v1/zones/{}", percent_encode("bücher.test")),
        ),
    ];
    let (method, path) = rng.pick(&candidates).clone();
    let body = if method == "POST" {
        b"{}".to_vec()
    } else {
        Vec::new()
    };
    Request {
        method: method.into(),
        path: path.clone(),
        content_type: (method == "POST").then(|| "application/json".into()),
        auth: None,
        body,
        what: format!("{method} {path}: bad path"),
    }
}

/// Query strings: explain, GeoIP lookup, and deletes by match that match nothing.
fn query_request(rng: &mut Rng) -> Request {
    let junk = [
        "",
        "x",
        "%FF",
        "%zz",
        "%00",
        "a..b",
        "999.0.0.1",
        "%F0%9F%92%A5",
        "1.2.3.4%2F33",
    ];
    let j = |rng: &mut Rng| rng.pick(&junk).to_string();
    let (method, path) = match rng.below(5) {
        0 => {
            let name = rng
                .pick(&[
                    "www.abuse.test",
                    "lb.abuse.test",
                    "a..b",
                    "",
                    "%FF",
                    "x.other.",
                ])
                .to_string();
            let t = rng
                .pick(&["A", "AAAA", "BOGUS", "", "TYPE70000", "%00"])
                .to_string();
            let client = rng
                .pick(&["192.0.2.1", "2001:db8::1", "x", "", "999.0.0.1", "%FF"])
                .to_string();
            let ecs = rng
                .pick(&[
                    "",
                    "&ecs=24",
                    "&ecs=999",
                    "&ecs=-1",
                    "&ecs=x/y",
                    "&ecs=1.2.3.4/33",
                    "&ecs=%FF",
                ])
                .to_string();
            (
                "GET",
                format!("/api/v1/explain?name={name}&type={t}&client={client}{ecs}"),
            )
        }
        1 => ("GET", format!("/api/v1/explain?{}", j(rng))),
        2 => ("GET", format!("/api/v1/geoip/lookup?ip={}", j(rng))),
        _ => {
            // Never a name and type that exist with a value that matches.
            let (name, t, value) = match rng.below(4) {
                0 => ("nothere".to_string(), "A".to_string(), String::new()),
                1 => ("www".into(), j(rng), String::new()),
                2 => (j(rng), "A".into(), String::new()),
                _ => (
                    "www".into(),
                    "A".into(),
                    format!(
                        "&value={}",
                        rng.pick(&["999.0.0.1", "192.0.2.99", "%FF", "x"])
                    ),
                ),
            };
            let q = match rng.below(4) {
                0 => format!("name={name}&type={t}{value}"),
                1 => format!("type={t}"),
                2 => format!("name={name}"),
                _ => format!("name={name}&name=www&type={t}&type=A{value}"),
            };
            // A name and type that exist, with no value, would delete: never sent.
            let q = q.replace("name=www&type=A&", "name=www&type=A&value=192.0.2.99&");
            ("DELETE", format!("/api/v1/zones/{ZONE}/records?{q}"))
        }
    };
    Request {
        method: method.into(),
        path: path.clone(),
        content_type: None,
        auth: None,
        body: Vec::new(),
        what: format!("{method} {path}: bad query"),
    }
}

/// A few megabytes: a giant name, a giant array, a giant zone file.
fn huge_request(rng: &mut Rng, world: &World) -> Request {
    let size = (2 + rng.below(3)) << 20;
    match rng.below(5) {
        4 => {
            let pools: Vec<String> = (0..size / 10).map(|i| format!("p{i}")).collect();
            let body = json!({"name": "lb", "pools": pools});
            json_request(
                "PUT",
                format!("/api/v1/zones/{ZONE}/load-balancers/lb"),
                to_text(&body),
                format!("load balancer with {} pools", size / 10),
            )
        }
        0 => {
            // A required field of megabytes: never valid.
            let route = loop {
                let route = rng.pick(&world.routes);
                if !route.required.is_empty() {
                    break route;
                }
            };
            let mut body = route.base.clone();
            let key = route.required[0];
            set_pointer(&mut body, &format!("/{key}"), json!("n".repeat(size)));
            json_request(
                route.method,
                route.path.clone(),
                to_text(&body),
                format!("{} {}: {size}-byte {key}", route.method, route.path),
            )
        }
        1 => {
            let body = format!("[{}0]", "0,".repeat(size / 2));
            json_request(
                "POST",
                format!("/api/v1/zones/{ZONE}/records"),
                body,
                format!("{size}-byte array"),
            )
        }
        2 => {
            let mut text = String::from(ZONE_FILE);
            let mut i = 0;
            while text.len() < size {
                text.push_str(&format!("h{i} IN A 192.0.2.{}\n", i % 256));
                i += 1;
            }
            text.push_str("bad IN A 999.0.0.1\n");
            Request {
                method: "POST".into(),
                path: format!("/api/v1/zones/{ZONE}/import"),
                content_type: Some("text/plain".into()),
                auth: None,
                body: text.into_bytes(),
                what: format!("{size}-byte zone file with one bad line at the end"),
            }
        }
        _ => {
            let origins: Vec<Value> = (0..size / 30)
                .map(|i| json!({"address": format!("10.{}.{}.{}", i >> 16 & 255, i >> 8 & 255, i & 255)}))
                .collect();
            let body = json!({"name": "big", "origins": origins});
            json_request(
                "POST",
                format!("/api/v1/zones/{ZONE}/pools"),
                to_text(&body),
                format!("pool with {} origins", size / 30),
            )
        }
    }
}

/// Writes that succeed without changing anything.
fn harmless_write(request: &Request) -> bool {
    let path = request.path.split('?').next().unwrap_or("");
    (request.method == "DELETE" && path == "/api/v1/session")
        || (request.method == "POST" && path.ends_with("/check") && path.contains("/pools/"))
        || request.method == "HEAD"
}

fn check_response(request: &Request, response: &Response) -> Result<(), String> {
    let text = String::from_utf8_lossy(&response.body);
    let shown: String = text.chars().take(300).collect();
    if response.status >= 500 {
        return Err(format!("{} -> {}: {shown}", request.what, response.status));
    }
    let api = request.path.starts_with("/api");
    if (400..500).contains(&response.status) && api {
        if !response.content_type.starts_with("application/json") {
            return Err(format!(
                "{} -> {} with content type {:?}, not a JSON error: {shown:?}",
                request.what, response.status, response.content_type
            ));
        }
        let body: api::ErrorBody = serde_json::from_slice(&response.body).map_err(|e| {
            format!(
                "{} -> {}: not an error body ({e}): {shown}",
                request.what, response.status
            )
        })?;
        if body.error.trim().is_empty() {
            return Err(format!(
                "{} -> {}: an error without a message: {shown}",
                request.what, response.status
            ));
        }
    }
    Ok(())
}

#[test]
fn bad_api_calls_get_clear_errors_and_change_nothing() {
    let seed: u64 = std::env::var("DNZ_ABUSE_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x5EED_DA7A_2024);
    let count: usize = std::env::var("DNZ_ABUSE_COUNT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1500);
    eprintln!("api_abuse: seed {seed}, {count} requests (DNZ_ABUSE_SEED, DNZ_ABUSE_COUNT)");
    let mut server = DnzServer::start(&[]);

    // The set-up: an imported zone, steered records, a pool and a load balancer.
    server.api_ok(
        "POST",
        &format!("/api/v1/zones/{ZONE}/import"),
        Some(ZONE_FILE),
    );
    let records = format!("/api/v1/zones/{ZONE}/records");
    let www: api::Record = serde_json::from_str(&server.api_ok(
        "POST",
        &records,
        Some(
            r#"{"name":"www","type":"A","value":"192.0.2.10","ttl":300,
                "steering":{"continents":["EU"],"weight":5}}"#,
        ),
    ))
    .expect("record");
    server.api_ok(
        "POST",
        &records,
        Some(r#"{"name":"www","type":"A","value":"192.0.2.11","steering":{"weight":0}}"#),
    );
    let pool: api::Pool = serde_json::from_str(&server.api_ok(
        "POST",
        &format!("/api/v1/zones/{ZONE}/pools"),
        Some(r#"{"name":"eu","location":{"latitude":50.1,"longitude":8.7},"origins":[{"address":"192.0.2.1"},{"address":"2001:db8::1"}]}"#),
    ))
    .expect("pool");
    server.api_ok(
        "POST",
        &format!("/api/v1/zones/{ZONE}/load-balancers"),
        Some(r#"{"name":"lb","pools":["eu"],"ttl":60}"#),
    );
    let all: Vec<api::Record> =
        serde_json::from_str(&server.api_ok("GET", &records, None)).expect("records");
    let world = World {
        record_ids: all.iter().map(|r| r.id).collect(),
        record_id: www.id,
        pool_id: pool.id,
        routes: json_routes(www.id),
    };

    let before = snapshot(&server);
    assert!(
        diff(&before, &snapshot(&server)).is_empty(),
        "the snapshot is not stable without any call"
    );
    let serial_before = soa_serial(&server);
    assert!(
        before
            .iter()
            .any(|(label, text)| label.starts_with("dns lb.") && text.contains("192.0.2.1")),
        "the load balancer answers: {before:?}"
    );

    let started = Instant::now();
    let mut rng = Rng(seed.max(1));
    let mut failures = Vec::new();
    let mut accepted = Vec::new();
    let mut statuses = std::collections::BTreeMap::<u16, usize>::new();
    let mut since_check = Vec::new();
    for n in 0..count {
        let request = generate(&mut rng, &world);
        let sent = Instant::now();
        match send(&server, &request) {
            Ok(response) => {
                *statuses.entry(response.status).or_default() += 1;
                if let Err(e) = check_response(&request, &response) {
                    failures.push(e);
                }
                let write = !matches!(request.method.as_str(), "GET" | "HEAD");
                if write && (200..300).contains(&response.status) && !harmless_write(&request) {
                    accepted.push(format!(
                        "{} -> {}: {}",
                        request.what,
                        response.status,
                        String::from_utf8_lossy(&response.body)
                            .chars()
                            .take(200)
                            .collect::<String>()
                    ));
                }
            }
            Err(e) => failures.push(format!("{}: {e}", request.what)),
        }
        // Reported, not asserted: a hang is caught by the socket's read timeout instead.
        let took = sent.elapsed();
        if took > Duration::from_secs(1) {
            eprintln!("slow: {} took {took:?}", request.what);
        }
        since_check.push(request.what);
        if let Ok(Some(status)) = server.child.try_wait() {
            panic!(
                "the server exited ({status}) after request {n}: {}",
                since_check.last().map(String::as_str).unwrap_or("")
            );
        }
        if (n + 1) % 250 == 0 || n + 1 == count {
            let changed = diff(&before, &snapshot(&server));
            assert!(
                changed.is_empty(),
                "state changed during requests {}..={n}:\n{}\n\nrequests:\n{}\n\naccepted writes:\n{}",
                n + 1 - since_check.len(),
                changed.join("\n"),
                since_check.join("\n"),
                accepted.join("\n")
            );
            since_check.clear();
        }
    }
    eprintln!(
        "api_abuse: {count} requests in {:?}, statuses {statuses:?}",
        started.elapsed()
    );
    assert!(
        failures.is_empty(),
        "{} of {count} calls broke the promise:\n{}",
        failures.len(),
        failures.join("\n")
    );
    assert!(
        accepted.is_empty(),
        "writes the generator meant to be invalid were accepted:\n{}",
        accepted.join("\n")
    );
    assert_eq!(soa_serial(&server), serial_before, "the SOA serial moved");

    // Still serving both sides, and stopping cleanly.
    let www = query(
        server.dns,
        "www.abuse.test",
        Rtype::A,
        &QueryOptions::default(),
    );
    assert_eq!(www.rcode, "NOERROR", "{www:?}");
    assert!(!www.answer.is_empty(), "{www:?}");
    server.api_ok("GET", "/api/v1/zones", None);
    assert!(server.stop().success(), "dnz serve did not stop cleanly");
}

/// The cases the storm found, one by one: refusals made by the framework (a wrong method, a
/// path parameter that does not parse, a body that is not UTF-8) are JSON errors too; a pool
/// or load balancer of megabytes is refused at once (its checks were quadratic, under the zone's
/// lock); a name ending in a lone backslash is refused (it escaped the dot appended to it).
#[test]
fn framework_refusals_are_json_and_oversized_or_odd_bodies_are_refused() {
    let server = DnzServer::start(&[]);
    server.api_ok(
        "POST",
        &format!("/api/v1/zones/{ZONE}/import"),
        Some(ZONE_FILE),
    );
    server.api_ok(
        "POST",
        &format!("/api/v1/zones/{ZONE}/pools"),
        Some(r#"{"name":"eu","origins":[{"address":"192.0.2.1"}]}"#),
    );
    server.api_ok(
        "POST",
        &format!("/api/v1/zones/{ZONE}/load-balancers"),
        Some(r#"{"name":"lb","pools":["eu"]}"#),
    );
    let before = snapshot(&server);
    let call = |method: &str, path: &str, content_type: Option<&str>, body: Vec<u8>| {
        let request = Request {
            method: method.into(),
            path: path.into(),
            content_type: content_type.map(str::to_string),
            auth: None,
            body,
            what: format!("{method} {path}"),
        };
        let response = send(&server, &request).unwrap_or_else(|e| panic!("{path}: {e}"));
        check_response(&request, &response).unwrap_or_else(|e| panic!("{e}"));
        let error: api::ErrorBody = serde_json::from_slice(&response.body).expect("error body");
        (response.status, error)
    };

    let (status, error) = call("PATCH", "/api/v1/openapi.json", None, Vec::new());
    assert_eq!(status, 405);
    assert!(error.error.contains("PATCH is not allowed"), "{error:?}");
    let (status, error) = call(
        "PUT",
        &format!("/api/v1/zones/{ZONE}/records/abc"),
        Some("application/json"),
        b"{}".to_vec(),
    );
    assert_eq!(status, 400);
    assert!(error.error.contains("`abc`"), "{error:?}");
    let (status, error) = call("DELETE", "/api/v1/zones/%FF", None, Vec::new());
    assert_eq!(
        (status, error.field.as_deref()),
        (400, Some("zone")),
        "{error:?}"
    );
    let mut zone_file = ZONE_FILE.as_bytes().to_vec();
    zone_file.extend_from_slice(&[0xff, b'\n']);
    let (status, error) = call(
        "POST",
        &format!("/api/v1/zones/{ZONE}/import"),
        Some("text/plain"),
        zone_file,
    );
    assert_eq!(status, 400);
    assert!(error.error.contains("UTF-8"), "{error:?}");

    let origins: Vec<Value> = (0..150_000u32)
        .map(|i| json!({"address": std::net::Ipv4Addr::from(0x0a00_0000 + i).to_string()}))
        .collect();
    let (status, error) = call(
        "POST",
        &format!("/api/v1/zones/{ZONE}/pools"),
        Some("application/json"),
        to_text(&json!({"name": "big", "origins": origins})).into_bytes(),
    );
    assert_eq!(status, 422);
    assert!(error.error.contains("at most 20 origins"), "{error:?}");
    let pools: Vec<String> = (0..150_000).map(|i| format!("p{i}")).collect();
    let (status, error) = call(
        "PUT",
        &format!("/api/v1/zones/{ZONE}/load-balancers/lb"),
        Some("application/json"),
        to_text(&json!({"name": "lb", "pools": pools})).into_bytes(),
    );
    assert_eq!(status, 422);
    assert!(
        error.error.contains("at most 200 pool entries"),
        "{error:?}"
    );

    for (path, body) in [
        ("/api/v1/zones".to_string(), r#"{"name":"a\\"}"#),
        (
            format!("/api/v1/zones/{ZONE}/records"),
            r#"{"name":"www\\","type":"A","value":"192.0.2.1"}"#,
        ),
    ] {
        let (status, error) = call("POST", &path, Some("application/json"), body.into());
        assert_eq!(status, 422, "{body}: {error:?}");
        assert!(error.error.contains("lone backslash"), "{error:?}");
    }
    assert!(
        diff(&before, &snapshot(&server)).is_empty(),
        "a refused call changed the state"
    );
    assert!(server.stop().success());
}
