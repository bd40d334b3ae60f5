//! DNS over TCP (RFC 7766): several queries on one connection, pipelined; idle connections
//! closed after the idle timeout; connections over the cap closed at once.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use domain::base::iana::Rtype;
use test_support::DnzServer;
use test_support::dns::{QueryOptions, build_query, parse_response};

fn framed(name: &str, id: u16) -> Vec<u8> {
    let packet = build_query(
        name,
        Rtype::A,
        &QueryOptions {
            id,
            ..Default::default()
        },
    );
    let mut out = (packet.len() as u16).to_be_bytes().to_vec();
    out.extend_from_slice(&packet);
    out
}

fn read_response(stream: &mut TcpStream) -> test_support::DnsResponse {
    let mut len = [0u8; 2];
    stream.read_exact(&mut len).expect("length prefix");
    let mut body = vec![0u8; u16::from_be_bytes(len) as usize];
    stream.read_exact(&mut body).expect("response");
    parse_response(&body).expect("parses")
}

#[test]
fn pipelined_queries_on_one_connection() {
    let server = DnzServer::start(&["--demo"]);
    let mut stream = TcpStream::connect(server.dns).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    // Three queries in one write, answered in order on the same connection.
    let mut batch = framed("www.example.com", 1);
    batch.extend(framed("mail.example.com", 2));
    batch.extend(framed("nope.example.com", 3));
    stream.write_all(&batch).unwrap();
    let answers: Vec<(u16, String)> = (0..3)
        .map(|_| read_response(&mut stream))
        .map(|r| (r.id, r.rcode))
        .collect();
    assert_eq!(
        answers,
        [
            (1, "NOERROR".into()),
            (2, "NOERROR".into()),
            (3, "NXDOMAIN".into())
        ]
    );
    // And the connection still serves later queries.
    stream.write_all(&framed("www.example.com", 4)).unwrap();
    assert_eq!(read_response(&mut stream).id, 4);
}

#[test]
fn idle_connections_close_and_the_cap_holds() {
    let server = DnzServer::start(&[
        "--demo",
        "--tcp-idle-timeout",
        "1",
        "--tcp-max-connections",
        "2",
    ]);
    let mut first = TcpStream::connect(server.dns).unwrap();
    first
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    let mut second = TcpStream::connect(server.dns).unwrap();
    second
        .set_read_timeout(Some(Duration::from_secs(5)))
        .unwrap();
    first.write_all(&framed("www.example.com", 1)).unwrap();
    assert_eq!(read_response(&mut first).id, 1);
    second.write_all(&framed("www.example.com", 2)).unwrap();
    assert_eq!(read_response(&mut second).id, 2);

    // A third connection over the cap of 2 is closed without an answer.
    let mut third = TcpStream::connect(server.dns).unwrap();
    third
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    let _ = third.write_all(&framed("www.example.com", 3));
    let mut buf = [0u8; 2];
    assert!(
        matches!(third.read(&mut buf), Ok(0) | Err(_)),
        "a connection over the cap was served"
    );

    // An idle connection is closed after the 1 s idle timeout.
    let start = Instant::now();
    let mut buf = [0u8; 2];
    let read = first.read(&mut buf);
    assert!(
        matches!(read, Ok(0) | Err(_)),
        "idle connection still open: {read:?}"
    );
    let waited = start.elapsed();
    assert!(
        waited < Duration::from_secs(4),
        "closed only after {waited:?}"
    );

    // Once the idle ones are gone, new connections are served again.
    drop(second);
    std::thread::sleep(Duration::from_millis(1500));
    let mut fresh = TcpStream::connect(server.dns).unwrap();
    fresh
        .set_read_timeout(Some(Duration::from_secs(3)))
        .unwrap();
    fresh.write_all(&framed("www.example.com", 9)).unwrap();
    assert_eq!(read_response(&mut fresh).id, 9);
}

/// `--dns 0.0.0.0:P --dns [::]:P`, as an operator listens on every address: both bind (the
/// IPv6 listeners are IPv6-only), and each family is answered over UDP and TCP.
#[test]
fn wildcard_listeners_on_both_families_share_a_port() {
    let port = test_support::free_port();
    let listen = format!("0.0.0.0:{port},[::]:{port}");
    let server = DnzServer::start(&["--demo", "--dns", &listen]);
    for addr in [format!("127.0.0.1:{port}"), format!("[::1]:{port}")] {
        let addr: std::net::SocketAddr = addr.parse().unwrap();
        for tcp in [false, true] {
            let opts = QueryOptions {
                tcp,
                ..Default::default()
            };
            let response = test_support::query(addr, "mail.example.com", Rtype::A, &opts);
            assert_eq!(
                response.answer,
                ["mail.example.com. 300 IN A 192.0.2.25"],
                "{addr} tcp={tcp}"
            );
        }
    }
    drop(server);
}
