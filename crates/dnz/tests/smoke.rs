//! The server starts, answers a query from the demo zone over UDP and TCP, and stops cleanly
//! on SIGTERM.

use domain::base::iana::Rtype;
use test_support::{DnzServer, QueryOptions, query};

#[test]
fn demo_zone_answers_over_udp_and_tcp_and_stops_on_sigterm() {
    let server = DnzServer::start(&["--demo"]);
    let udp = query(
        server.dns,
        "www.example.com",
        Rtype::A,
        &QueryOptions::default(),
    );
    assert_eq!(udp.rcode, "NOERROR");
    assert!(udp.aa);
    assert_eq!(udp.answer, ["www.example.com. 300 IN A 192.0.2.30"]);
    let tcp = query(
        server.dns,
        "WWW.Example.COM",
        Rtype::AAAA,
        &QueryOptions {
            tcp: true,
            ..Default::default()
        },
    );
    assert_eq!(tcp.question, ["WWW.Example.COM. AAAA"]);
    assert_eq!(tcp.answer, ["WWW.Example.COM. 300 IN AAAA 2001:db8::30"]);
    let status = server.stop();
    assert!(status.success(), "exit status {status:?}");
}

/// CH TXT `version.bind` and `id.server` answer only when configured; otherwise REFUSED.
#[test]
fn chaos_txt_answers_only_when_configured() {
    let chaos_query = |name: &str| {
        let name: domain::base::Name<Vec<u8>> = name.parse().unwrap();
        let mut packet = vec![0xab, 0xcd, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0];
        packet.extend_from_slice(name.as_slice());
        packet.extend_from_slice(&[0, 16, 0, 3]); // TXT, class CH
        packet
    };
    let quiet = DnzServer::start(&[]);
    let raw = test_support::query_raw(quiet.dns, &chaos_query("version.bind"), false).unwrap();
    let response = test_support::dns::parse_response(&raw).unwrap();
    assert_eq!(
        (response.rcode.as_str(), response.answer.len()),
        ("REFUSED", 0)
    );

    let server = DnzServer::start(&["--version-bind", "dnz test build", "--server-id", "pop-1"]);
    for (name, text) in [
        ("version.bind", "dnz test build"),
        ("id.server", "pop-1"),
        ("hostname.bind", "pop-1"),
    ] {
        let raw = test_support::query_raw(server.dns, &chaos_query(name), false).unwrap();
        let response = test_support::dns::parse_response(&raw).unwrap();
        assert_eq!(response.rcode, "NOERROR", "{name}");
        assert!(response.aa, "{name}");
        assert_eq!(
            response.answer,
            [format!("{name}. 0 CH TXT \"{text}\"")],
            "{name}"
        );
    }
}
