//! `dnz pool …`, `dnz lb …` and `dnz explain` on a load balancer's name, against a real
//! server (SPEC §7, §10): answers over DNS, updates that change only what is given, the
//! server's messages on conflicts and limits (exit 1), usage errors (exit 2), `pool check`
//! with real loopback TCP listeners, and the explain steps of a load balancer's answer.

use std::net::TcpListener;
use std::time::{Duration, Instant};

use domain::base::iana::Rtype;
use test_support::{DnzServer, QueryOptions, query};

fn cli_ok(server: &DnzServer, args: &[&str]) -> String {
    let output = server.cli(args);
    assert!(
        output.status.success(),
        "dnz {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout).unwrap()
}

/// Runs a command that must fail with `code`; returns its stderr.
fn cli_fails(server: &DnzServer, args: &[&str], code: i32) -> String {
    let output = server.cli(args);
    let stderr = String::from_utf8_lossy(&output.stderr).into_owned();
    assert_eq!(
        output.status.code(),
        Some(code),
        "dnz {args:?}: stdout {} stderr {stderr}",
        String::from_utf8_lossy(&output.stdout)
    );
    stderr
}

fn answers(server: &DnzServer, name: &str) -> Vec<String> {
    query(server.dns, name, Rtype::A, &QueryOptions::default()).answer
}

#[test]
fn pools_and_load_balancers_through_the_cli() {
    let server = DnzServer::start(&[]);
    cli_ok(&server, &["zone", "create", "lbcli.test"]);
    let created = cli_ok(
        &server,
        &[
            "pool",
            "create",
            "lbcli.test",
            "eu",
            "--location",
            "50.1,8.7",
        ],
    );
    assert!(created.contains("created pool eu (weighted)"), "{created}");
    cli_ok(
        &server,
        &[
            "pool",
            "create",
            "lbcli.test",
            "us",
            "--algorithm",
            "failover",
        ],
    );
    cli_ok(
        &server,
        &[
            "pool",
            "add-origin",
            "lbcli.test",
            "eu",
            "192.0.2.1",
            "--weight",
            "2",
        ],
    );
    for (address, priority) in [("192.0.2.10", "1"), ("192.0.2.11", "2")] {
        let added = cli_ok(
            &server,
            &[
                "pool",
                "add-origin",
                "lbcli.test",
                "us",
                address,
                "--priority",
                priority,
            ],
        );
        assert!(
            added.contains(&format!("added origin {address} in pool us")),
            "{added}"
        );
    }
    // add-origin on an origin the pool has changes only the options given.
    cli_ok(
        &server,
        &[
            "pool",
            "add-origin",
            "lbcli.test",
            "us",
            "192.0.2.11",
            "--weight",
            "5",
        ],
    );
    let us: api::Pool = serde_json::from_str(&cli_ok(
        &server,
        &["--json", "pool", "show", "lbcli.test", "us"],
    ))
    .unwrap();
    assert_eq!(us.algorithm, "failover");
    assert_eq!(
        us.origins
            .iter()
            .map(|o| (o.address.as_str(), o.priority, o.weight))
            .collect::<Vec<_>>(),
        [("192.0.2.10", 1, 1), ("192.0.2.11", 2, 5)]
    );

    let created = cli_ok(
        &server,
        &[
            "lb",
            "create",
            "lbcli.test",
            "www",
            "--pools",
            "eu,us",
            "--ttl",
            "60",
        ],
    );
    assert!(created.contains("www.lbcli.test."), "{created}");
    let a = answers(&server, "www.lbcli.test");
    assert!(
        a.len() == 1 && a[0].contains(" 60 ") && a[0].ends_with("192.0.2.1"),
        "{a:?}"
    );

    // Only --pools changes; the TTL stays.
    cli_ok(
        &server,
        &["lb", "update", "lbcli.test", "www", "--pools", "us"],
    );
    let lb: api::LoadBalancer = serde_json::from_str(&cli_ok(
        &server,
        &["--json", "lb", "show", "lbcli.test", "www"],
    ))
    .unwrap();
    assert_eq!(lb.spec.pools, ["us"]);
    assert_eq!(
        (lb.spec.ttl, lb.spec.enabled, lb.spec.steering.as_deref()),
        (Some(60), Some(true), Some("off"))
    );
    let a = answers(&server, "www.lbcli.test");
    assert!(
        a.len() == 1 && a[0].contains(" 60 ") && a[0].ends_with("192.0.2.10"),
        "failover answers priority 1: {a:?}"
    );
    // Rules, steering and a fallback; the listing shows them.
    cli_ok(
        &server,
        &[
            "lb",
            "update",
            "lbcli.test",
            "www",
            "--steering",
            "geographic",
            "--rule",
            "country:de=eu",
            "--rule",
            "continent:EU=eu,us",
            "--fallback",
            "eu",
        ],
    );
    let listed = cli_ok(&server, &["lb", "list", "lbcli.test"]);
    assert!(
        listed.contains("country:DE=eu continent:EU=eu,us") && listed.contains("geographic"),
        "{listed}"
    );
    let lb: api::LoadBalancer = serde_json::from_str(&cli_ok(
        &server,
        &["--json", "lb", "show", "lbcli.test", "www.lbcli.test."],
    ))
    .unwrap();
    assert_eq!(
        (lb.spec.pools.clone(), lb.spec.ttl, lb.spec.fallback.clone()),
        (vec!["us".to_string()], Some(60), Some("eu".to_string()))
    );

    // Pool update: only --enabled changes.
    cli_ok(
        &server,
        &["pool", "update", "lbcli.test", "eu", "--enabled", "off"],
    );
    let eu: api::Pool = serde_json::from_str(&cli_ok(
        &server,
        &["--json", "pool", "show", "lbcli.test", "eu"],
    ))
    .unwrap();
    assert!(!eu.enabled);
    assert_eq!(eu.algorithm, "weighted");
    assert_eq!(
        eu.location.map(|l| (l.latitude, l.longitude)),
        Some((50.1, 8.7))
    );
    assert_eq!(eu.origins.len(), 1);
    assert_eq!(eu.origins[0].weight, 2);
    cli_ok(
        &server,
        &["pool", "update", "lbcli.test", "eu", "--enabled", "on"],
    );
    // Origins show their health.
    let table = cli_ok(&server, &["pool", "list", "lbcli.test"]);
    assert!(
        table.contains("192.0.2.1 (healthy)") && table.contains("192.0.2.10 (healthy)"),
        "{table}"
    );
    let shown = cli_ok(&server, &["pool", "show", "lbcli.test", "us"]);
    assert!(
        shown.contains("HEALTH") && shown.contains("healthy"),
        "{shown}"
    );

    // Ownership, both ways: the server's message, exit 1.
    cli_ok(
        &server,
        &["record", "add", "lbcli.test", "old", "A", "192.0.2.9"],
    );
    let stderr = cli_fails(
        &server,
        &["lb", "create", "lbcli.test", "old", "--pools", "eu"],
        1,
    );
    assert!(stderr.contains("owns A, AAAA and CNAME"), "{stderr}");
    let stderr = cli_fails(
        &server,
        &["record", "add", "lbcli.test", "www", "A", "192.0.2.7"],
        1,
    );
    assert!(stderr.contains("load balancer"), "{stderr}");
    // A pool in use cannot be deleted.
    let stderr = cli_fails(&server, &["pool", "delete", "lbcli.test", "us"], 1);
    assert!(stderr.contains("used by the load balancer"), "{stderr}");
    // A bad value: the server's message and field.
    let stderr = cli_fails(
        &server,
        &["lb", "update", "lbcli.test", "www", "--ttl", "4"],
        1,
    );
    assert!(
        stderr.contains("TTL 4 is out of range: 5 to 3600") && stderr.contains("ttl"),
        "{stderr}"
    );

    // The per-pool limit: 20 origins, then the 21st is refused with the server's message.
    for i in 2..=20 {
        cli_ok(
            &server,
            &[
                "pool",
                "add-origin",
                "lbcli.test",
                "eu",
                &format!("192.0.2.{i}"),
            ],
        );
    }
    let stderr = cli_fails(
        &server,
        &["pool", "add-origin", "lbcli.test", "eu", "192.0.2.21"],
        1,
    );
    assert!(
        stderr.contains("a pool holds at most 20 origins; this one has 21"),
        "{stderr}"
    );

    // Usage errors exit 2 and send nothing.
    for args in [
        &[
            "lb",
            "create",
            "lbcli.test",
            "x",
            "--pools",
            "eu",
            "--rule",
            "bogus",
        ][..],
        &["lb", "create", "lbcli.test", "x"][..],
        &["pool", "create", "lbcli.test", "p", "--location", "north"][..],
        &["pool", "add-origin", "lbcli.test", "eu", "not-an-ip"][..],
        &["pool", "update", "lbcli.test", "eu", "--enabled", "maybe"][..],
        &[
            "pool",
            "add-origin",
            "lbcli.test",
            "eu",
            "192.0.2.1",
            "--port",
            "80",
        ][..],
    ] {
        cli_fails(&server, args, 2);
    }
    cli_fails(
        &server,
        &["pool", "remove-origin", "lbcli.test", "eu", "192.0.2.99"],
        1,
    );

    // Remove an origin, delete the LB, then the pools.
    let removed = cli_ok(
        &server,
        &["pool", "remove-origin", "lbcli.test", "eu", "192.0.2.20"],
    );
    assert!(
        removed.contains("removed origin 192.0.2.20 from pool eu"),
        "{removed}"
    );
    let deleted = cli_ok(&server, &["lb", "delete", "lbcli.test", "www"]);
    assert!(deleted.contains("deleted load balancer www"), "{deleted}");
    cli_ok(&server, &["pool", "delete", "lbcli.test", "us"]);
    let pools: Vec<api::Pool> =
        serde_json::from_str(&cli_ok(&server, &["--json", "pool", "list", "lbcli.test"])).unwrap();
    assert_eq!(
        pools.iter().map(|p| p.name.as_str()).collect::<Vec<_>>(),
        ["eu"]
    );
    assert_eq!(pools[0].origins.len(), 19);
    let listed: Vec<api::LoadBalancer> =
        serde_json::from_str(&cli_ok(&server, &["--json", "lb", "list", "lbcli.test"])).unwrap();
    assert!(listed.is_empty());
}

#[test]
fn pool_check_runs_each_origins_check_now() {
    let up = TcpListener::bind("127.0.0.1:0").unwrap();
    let up_port = up.local_addr().unwrap().port().to_string();
    // A port that was free a moment ago: nothing listens there.
    let down_port = {
        let gone = TcpListener::bind("127.0.0.2:0").unwrap();
        gone.local_addr().unwrap().port().to_string()
    };
    let server = DnzServer::start(&[]);
    cli_ok(&server, &["zone", "create", "hc.test"]);
    cli_ok(&server, &["pool", "create", "hc.test", "web"]);
    for (address, port) in [("127.0.0.1", &up_port), ("127.0.0.2", &down_port)] {
        cli_ok(
            &server,
            &[
                "pool",
                "add-origin",
                "hc.test",
                "web",
                address,
                "--check",
                "tcp",
                "--port",
                port,
                "--timeout",
                "500",
                "--interval",
                "1",
                "--down-after",
                "1",
                "--up-after",
                "1",
            ],
        );
    }
    let table = cli_ok(&server, &["pool", "check", "hc.test", "web"]);
    let line = |address: &str| {
        table
            .lines()
            .find(|l| l.starts_with(address))
            .unwrap_or_else(|| panic!("no line for {address}:\n{table}"))
            .to_string()
    };
    assert!(table.starts_with("ADDRESS"), "{table}");
    assert!(line("127.0.0.1").contains(" healthy"), "{table}");
    assert!(line("127.0.0.2").contains("unhealthy"), "{table}");
    let checks: Vec<api::OriginCheck> = serde_json::from_str(&cli_ok(
        &server,
        &["--json", "pool", "check", "hc.test", "web"],
    ))
    .unwrap();
    let verdicts: Vec<(&str, bool)> = checks
        .iter()
        .map(|c| (c.address.as_str(), c.result.healthy))
        .collect();
    assert_eq!(verdicts, [("127.0.0.1", true), ("127.0.0.2", false)]);
    assert!(
        checks[1].result.reason.is_some(),
        "a failed check says why: {checks:?}"
    );
    // The background checks reach the same verdicts; pool show and list say so.
    let start = Instant::now();
    loop {
        let pool: api::Pool = serde_json::from_str(&cli_ok(
            &server,
            &["--json", "pool", "show", "hc.test", "web"],
        ))
        .unwrap();
        let health: Vec<&str> = pool.origins.iter().map(|o| o.health.as_str()).collect();
        if health == ["healthy", "unhealthy"] {
            break;
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "health never settled: {health:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    let listed = cli_ok(&server, &["pool", "list", "hc.test"]);
    assert!(
        listed.contains("127.0.0.1 (healthy), 127.0.0.2 (unhealthy)"),
        "{listed}"
    );
    let shown = cli_ok(&server, &["pool", "show", "hc.test", "web"]);
    assert!(shown.contains("tcp:"), "{shown}");
    // A pool without checks says so.
    cli_ok(&server, &["pool", "create", "hc.test", "plain"]);
    cli_ok(
        &server,
        &["pool", "add-origin", "hc.test", "plain", "192.0.2.1"],
    );
    let none = cli_ok(&server, &["pool", "check", "hc.test", "plain"]);
    assert!(
        none.contains("no origin of pool plain has a check"),
        "{none}"
    );
    drop(up);
}

#[test]
fn explain_shows_the_pool_order_the_skips_and_the_origin() {
    // The demo GeoIP database: 198.51.100.0/24 is DE (EU), 192.0.2.0/25 is ID (AS).
    let server = DnzServer::start(&["--demo"]);
    cli_ok(&server, &["zone", "create", "geo.test"]);
    cli_ok(&server, &["pool", "create", "geo.test", "eu"]);
    cli_ok(
        &server,
        &["pool", "add-origin", "geo.test", "eu", "192.0.2.1"],
    );
    cli_ok(
        &server,
        &[
            "pool",
            "create",
            "geo.test",
            "asia",
            "--algorithm",
            "failover",
        ],
    );
    for (address, priority) in [("192.0.2.2", "1"), ("192.0.2.3", "2")] {
        cli_ok(
            &server,
            &[
                "pool",
                "add-origin",
                "geo.test",
                "asia",
                address,
                "--priority",
                priority,
            ],
        );
    }
    cli_ok(&server, &["pool", "create", "geo.test", "spare"]);
    cli_ok(
        &server,
        &["pool", "add-origin", "geo.test", "spare", "192.0.2.4"],
    );
    cli_ok(
        &server,
        &[
            "lb",
            "create",
            "geo.test",
            "app",
            "--pools",
            "asia",
            "--steering",
            "geographic",
            "--locate-by",
            "resolver",
            "--rule",
            "continent:EU=eu,asia",
            "--fallback",
            "spare",
        ],
    );
    let explain = |client: &str| {
        cli_ok(
            &server,
            &["explain", "app.geo.test", "A", "--client", client],
        )
    };
    let expect = |text: &str, parts: &[&str]| {
        for part in parts {
            assert!(text.contains(part), "explain lacks {part:?}:\n{text}");
        }
    };
    // A European client: the rule's pools, eu answers.
    let text = explain("198.51.100.7");
    expect(
        &text,
        &[
            "load balancer app.geo.test.: steering geographic, locate by resolver",
            "client 198.51.100.7 is in DE (EU): rule continent:EU=eu,asia matched: eu, asia",
            "2. skip: no pool skipped",
            "3. pool eu (weighted) answers",
            "192.0.2.1 at random by weight",
            "answer  app.geo.test. 30 IN A 192.0.2.1",
        ],
    );
    // The eu pool disabled: skipped, and the failover pool's priority 1 answers.
    cli_ok(
        &server,
        &["pool", "update", "geo.test", "eu", "--enabled", "off"],
    );
    let text = explain("198.51.100.7");
    expect(
        &text,
        &[
            "2. skip: eu (disabled)",
            "3. pool asia (failover) answers: failover: 192.0.2.2 has the lowest priority number (1)",
            "answer  app.geo.test. 30 IN A 192.0.2.2",
        ],
    );
    // An Asian client: no rule matches, the defaults.
    let text = explain("192.0.2.77");
    expect(
        &text,
        &[
            "client 192.0.2.77 is in ID (AS): no rule matched; the default pools: asia",
            "3. pool asia (failover) answers",
        ],
    );
    // Both rule pools down: the fallback answers.
    cli_ok(
        &server,
        &["pool", "update", "geo.test", "asia", "--enabled", "off"],
    );
    let text = explain("198.51.100.7");
    expect(
        &text,
        &[
            "2. skip: eu (disabled); asia (disabled)",
            "the fallback pool spare (weighted) answers",
            "answer  app.geo.test. 30 IN A 192.0.2.4",
        ],
    );
    // The fallback down too: one enabled origin anyway.
    cli_ok(
        &server,
        &["pool", "update", "geo.test", "spare", "--enabled", "off"],
    );
    let text = explain("198.51.100.7");
    expect(
        &text,
        &[
            "the fallback pool spare cannot either (disabled)",
            "4. last resort: one enabled IPv4 origin is answered anyway",
        ],
    );
    // Affinity and proximity.
    for pool in ["eu", "asia", "spare"] {
        cli_ok(
            &server,
            &["pool", "update", "geo.test", pool, "--enabled", "on"],
        );
    }
    cli_ok(
        &server,
        &[
            "lb",
            "update",
            "geo.test",
            "app",
            "--steering",
            "off",
            "--affinity",
            "client-ip",
        ],
    );
    let text = explain("198.51.100.7");
    expect(
        &text,
        &[
            "1. order: as listed (steering off): asia",
            "affinity client-ip: subnet 198.51.100.0/24 is kept on 192.0.2.",
        ],
    );
    // A disabled load balancer.
    cli_ok(&server, &["lb", "update", "geo.test", "app", "--disabled"]);
    let text = explain("198.51.100.7");
    expect(&text, &["the load balancer is disabled: no A answer"]);
}
