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
