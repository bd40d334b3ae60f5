//! Malformed and hostile DNS input against a real `dnz serve --demo` (SPEC §3): every packet
//! whose header can be read gets FORMERR (or NOTIMP / BADVERS where those apply), every packet
//! without a readable header or with QR=1 gets no reply, and the server keeps answering
//! `www.example.com A` over UDP and TCP after each class of input and after 5,000 random
//! packets.

use std::collections::HashMap;
use std::io::{ErrorKind, Read, Write};
use std::net::{Shutdown, SocketAddr, TcpStream, UdpSocket};
use std::time::{Duration, Instant};

use domain::base::Message;
use domain::base::iana::Rtype;
use test_support::dns::{build_query, parse_response};
use test_support::{DnzServer, QueryOptions, Rng, query};

const FORMERR: u16 = 1;
const NOTIMP: u16 = 4;
const BADVERS: u16 = 16;

/// How long to wait for a reply that should not come.
const NO_REPLY_WAIT: Duration = Duration::from_millis(300);

fn client_socket(timeout: Duration) -> UdpSocket {
    let socket = UdpSocket::bind("127.0.0.1:0").expect("bind UDP client");
    socket
        .set_read_timeout(Some(timeout))
        .expect("read timeout");
    socket
}

/// Sends one UDP packet and waits up to 300 ms for a reply.
fn udp_exchange(server: SocketAddr, packet: &[u8]) -> Option<Vec<u8>> {
    let socket = client_socket(NO_REPLY_WAIT);
    socket.send_to(packet, server).expect("send UDP");
    let mut buf = vec![0u8; 65535];
    match socket.recv_from(&mut buf) {
        Ok((len, _)) => {
            buf.truncate(len);
            Some(buf)
        }
        Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => None,
        Err(e) => panic!("UDP receive: {e}"),
    }
}

/// The server process's state from `/proc` (`R`, `S`, `Z` for a dead one not yet reaped), for
/// failure messages that tell a crash from a network problem.
fn process_state(server: &DnzServer) -> String {
    let pid = server.child.id();
    match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Ok(stat) => {
            let state = stat.rsplit_once(')').map_or("?", |(_, rest)| rest.trim());
            format!("pid {pid} state {}", &state[..1.min(state.len())])
        }
        Err(e) => format!("pid {pid} not found: {e}"),
    }
}

fn tcp_connect(server: &DnzServer) -> TcpStream {
    let stream =
        TcpStream::connect_timeout(&server.dns, Duration::from_secs(3)).unwrap_or_else(|e| {
            panic!(
                "TCP connect to {}: {e} ({})",
                server.dns,
                process_state(server)
            )
        });
    stream
        .set_read_timeout(Some(Duration::from_secs(2)))
        .expect("read timeout");
    stream
}

/// Reads one length-prefixed message; `None` when the server closed the connection.
fn tcp_read(stream: &mut TcpStream) -> Option<Vec<u8>> {
    let mut len = [0u8; 2];
    match stream.read_exact(&mut len) {
        Ok(()) => {}
        Err(e)
            if matches!(
                e.kind(),
                ErrorKind::UnexpectedEof | ErrorKind::ConnectionReset
            ) =>
        {
            return None;
        }
        Err(e) => panic!("TCP read (the server neither answered nor closed): {e}"),
    }
    let mut response = vec![0u8; u16::from_be_bytes(len) as usize];
    stream.read_exact(&mut response).expect("TCP response body");
    Some(response)
}

fn tcp_write(stream: &mut TcpStream, packet: &[u8]) {
    let mut framed = (packet.len() as u16).to_be_bytes().to_vec();
    framed.extend_from_slice(packet);
    stream.write_all(&framed).expect("TCP write");
}

/// One query on a fresh TCP connection; `None` when the server closes it without a reply.
fn tcp_exchange(server: &DnzServer, packet: &[u8]) -> Option<Vec<u8>> {
    let mut stream = tcp_connect(server);
    tcp_write(&mut stream, packet);
    tcp_read(&mut stream)
}

/// The (extended) rcode of a response, checking it is a well-formed response to `id`.
fn rcode_of(reply: &[u8], id: u16) -> u16 {
    assert!(
        reply.len() >= 12,
        "reply shorter than a header: {reply:02x?}"
    );
    let message = Message::from_slice(reply).expect("reply parses");
    let header = message.header();
    assert!(header.qr(), "reply without QR: {reply:02x?}");
    assert_eq!(header.id(), id, "reply id: {reply:02x?}");
    message.opt_rcode().to_int()
}

/// Sends `packet` over UDP and TCP and asserts both replies carry `rcode`.
fn expect_rcode(server: &DnzServer, what: &str, packet: &[u8], rcode: u16) {
    let id = u16::from_be_bytes([packet[0], packet[1]]);
    for tcp in [false, true] {
        let reply = if tcp {
            tcp_exchange(server, packet)
        } else {
            udp_exchange(server.dns, packet)
        };
        let transport = if tcp { "TCP" } else { "UDP" };
        let reply = reply.unwrap_or_else(|| {
            panic!(
                "{what}: no reply over {transport} ({})",
                process_state(server)
            )
        });
        assert_eq!(
            rcode_of(&reply, id),
            rcode,
            "{what} over {transport}: reply {reply:02x?}"
        );
    }
}

/// Sends `packet` over UDP (and TCP when `tcp_too`) and asserts no reply comes; over TCP the
/// server must close the connection instead of answering.
fn expect_drop(server: &DnzServer, what: &str, packet: &[u8], tcp_too: bool) {
    if let Some(reply) = udp_exchange(server.dns, packet) {
        panic!("{what}: unexpected UDP reply {reply:02x?} to {packet:02x?}");
    }
    if tcp_too && let Some(reply) = tcp_exchange(server, packet) {
        panic!("{what}: unexpected TCP reply {reply:02x?} to {packet:02x?}");
    }
}

/// The server still answers the demo zone correctly over UDP and TCP.
fn assert_healthy(server: &mut DnzServer, after: &str) {
    assert!(
        matches!(server.child.try_wait(), Ok(None)),
        "dnz serve exited after {after}"
    );
    for tcp in [false, true] {
        let opts = QueryOptions {
            tcp,
            ..Default::default()
        };
        let response = query(server.dns, "www.example.com", Rtype::A, &opts);
        assert_eq!(response.rcode, "NOERROR", "after {after} (tcp={tcp})");
        assert!(response.aa, "after {after} (tcp={tcp})");
        assert_eq!(
            response.answer,
            ["www.example.com. 300 IN A 192.0.2.30"],
            "after {after} (tcp={tcp})"
        );
    }
}

/// A 12-byte header: id, flags, and the four counts.
fn header(id: u16, flags: u16, qd: u16, an: u16, ns: u16, ar: u16) -> Vec<u8> {
    let mut h = Vec::with_capacity(12);
    for field in [id, flags, qd, an, ns, ar] {
        h.extend_from_slice(&field.to_be_bytes());
    }
    h
}

/// `www.example.com` in wire form.
fn www_wire() -> Vec<u8> {
    b"\x03www\x07example\x03com\x00".to_vec()
}

/// A query for `www.example.com A IN` with the given header flags and counts; the caller
/// appends any additional records.
fn question_packet(id: u16, flags: u16, ar: u16) -> Vec<u8> {
    let mut p = header(id, flags, 1, 0, 0, ar);
    p.extend_from_slice(&www_wire());
    p.extend_from_slice(&[0, 1, 0, 1]);
    p
}

/// An OPT record: UDP size 1232, the given version, and the given option bytes.
fn opt_record(version: u8, options: &[u8]) -> Vec<u8> {
    let mut r = vec![0, 0, 41, 0x04, 0xd0, 0, version, 0, 0];
    r.extend_from_slice(&(options.len() as u16).to_be_bytes());
    r.extend_from_slice(options);
    r
}

fn ecs_option(family: u16, source: u8, scope: u8, address: &[u8]) -> Vec<u8> {
    let mut o = 8u16.to_be_bytes().to_vec();
    o.extend_from_slice(&((4 + address.len()) as u16).to_be_bytes());
    o.extend_from_slice(&family.to_be_bytes());
    o.extend_from_slice(&[source, scope]);
    o.extend_from_slice(address);
    o
}

/// Random packets: a third pure noise, the rest valid queries (with EDNS, ECS, other names and
/// types) mutated by byte flips, overwrites, truncation, insertion and count changes.
fn random_packet(rng: &mut Rng) -> Vec<u8> {
    if rng.below(3) == 0 {
        let len = rng.below(600);
        return (0..len).map(|_| rng.byte()).collect();
    }
    let names = [
        "www.example.com",
        "example.com",
        "api.example.com",
        "x.dev.example.com",
        "_sip._udp.example.com",
        "nope.example.com",
        "example.org",
    ];
    let types = [
        Rtype::A,
        Rtype::AAAA,
        Rtype::NS,
        Rtype::MX,
        Rtype::SOA,
        Rtype::ANY,
        Rtype::CNAME,
        Rtype::SRV,
        Rtype::TXT,
    ];
    let opts = QueryOptions {
        tcp: false,
        edns: if rng.below(2) == 0 {
            Some(512 + rng.below(4096) as u16)
        } else {
            None
        },
        dnssec_ok: rng.below(2) == 0,
        rd: rng.below(2) == 0,
        id: rng.next_u64() as u16,
    };
    let mut p = build_query(
        names[rng.below(names.len())],
        types[rng.below(types.len())],
        &opts,
    );
    if opts.edns.is_some() && rng.below(2) == 0 {
        // Replace the empty option data with an ECS option, valid or not.
        let source = rng.below(40) as u8;
        let address: Vec<u8> = (0..usize::from(source).div_ceil(8))
            .map(|_| rng.byte())
            .collect();
        let ecs = ecs_option(1 + rng.below(3) as u16, source, 0, &address);
        let rdlen_at = p.len() - 2;
        p[rdlen_at..].copy_from_slice(&(ecs.len() as u16).to_be_bytes());
        p.extend_from_slice(&ecs);
    }
    let mutations = 1 + rng.below(6);
    for _ in 0..mutations {
        match rng.below(6) {
            0 if !p.is_empty() => {
                let i = rng.below(p.len());
                p[i] ^= 1 << rng.below(8);
            }
            1 if !p.is_empty() => {
                let i = rng.below(p.len());
                p[i] = rng.byte();
            }
            2 if !p.is_empty() => {
                let keep = rng.below(p.len());
                p.truncate(keep);
            }
            3 if p.len() < 600 => {
                let i = rng.below(p.len() + 1);
                let n = 1 + rng.below(16);
                for _ in 0..n {
                    p.insert(i, rng.byte());
                }
            }
            4 if p.len() >= 12 => {
                // A count field: qd, an, ns or ar.
                let at = 4 + 2 * rng.below(4);
                p[at] = if rng.below(4) == 0 { rng.byte() } else { 0 };
                p[at + 1] = rng.below(4) as u8;
            }
            5 if p.len() >= 12 => {
                // Clear QR most of the time so that the packet is read, not dropped.
                p[2] &= 0x7f;
            }
            _ => {}
        }
    }
    p.truncate(599);
    p
}

/// Whether the server must answer: a readable header (12 bytes) with QR=0.
fn answerable(packet: &[u8]) -> bool {
    packet.len() >= 12 && packet[2] & 0x80 == 0
}

/// Checks a reply to a random packet: a response to one of the packets sent, that parses.
fn check_random_reply(reply: &[u8], sent: &[u8]) {
    assert!(reply.len() >= 12, "short reply {reply:02x?} to {sent:02x?}");
    assert!(reply[2] & 0x80 != 0, "reply without QR {reply:02x?}");
    assert!(
        reply[2] & 0x78 == sent[2] & 0x78,
        "opcode not echoed: {reply:02x?} to {sent:02x?}"
    );
    if let Err(e) = parse_response(reply) {
        panic!("unparseable reply ({e}) {reply:02x?} to {sent:02x?}");
    }
}

fn random_batch_udp(server: &DnzServer, rng: &mut Rng, count: usize) -> (usize, usize) {
    let socket = client_socket(Duration::from_millis(20));
    let mut buf = vec![0u8; 65535];
    let (mut answered, mut dropped) = (0, 0);
    let mut sent_total = 0;
    while sent_total < count {
        // Per batch, the packets that must be answered, keyed by id.
        let mut expected: HashMap<u16, Vec<Vec<u8>>> = HashMap::new();
        let mut droppable: Vec<Vec<u8>> = Vec::new();
        let mut outstanding = 0usize;
        for _ in 0..25.min(count - sent_total) {
            let packet = random_packet(rng);
            sent_total += 1;
            socket.send_to(&packet, server.dns).expect("send UDP");
            if answerable(&packet) {
                let id = u16::from_be_bytes([packet[0], packet[1]]);
                expected.entry(id).or_default().push(packet);
                outstanding += 1;
            } else {
                droppable.push(packet);
            }
        }
        // Wait for every expected reply, and a little longer for unexpected ones.
        let deadline = Instant::now() + Duration::from_millis(1500);
        let mut quiet_until =
            (outstanding == 0).then(|| Instant::now() + Duration::from_millis(50));
        loop {
            match socket.recv_from(&mut buf) {
                Ok((len, _)) => {
                    let reply = &buf[..len];
                    assert!(len >= 2, "reply of {len} bytes");
                    let id = u16::from_be_bytes([reply[0], reply[1]]);
                    let Some(packets) = expected.get_mut(&id).filter(|p| !p.is_empty()) else {
                        let to_dropped: Vec<_> = droppable
                            .iter()
                            .filter(|p| p.len() >= 2 && p[..2] == reply[..2])
                            .collect();
                        panic!(
                            "reply {reply:02x?} to a packet that must be dropped \
                             (candidates: {to_dropped:02x?})"
                        );
                    };
                    let sent = packets.pop().expect("non-empty");
                    check_random_reply(reply, &sent);
                    outstanding -= 1;
                    answered += 1;
                    if outstanding == 0 {
                        quiet_until = Some(Instant::now() + Duration::from_millis(20));
                    }
                }
                Err(e) if matches!(e.kind(), ErrorKind::WouldBlock | ErrorKind::TimedOut) => {}
                Err(e) => panic!("UDP receive: {e}"),
            }
            if quiet_until.is_some_and(|t| Instant::now() >= t) {
                break;
            }
            if Instant::now() >= deadline {
                let missing: Vec<_> = expected.values().flatten().collect();
                panic!(
                    "no UDP reply to {} packet(s): {missing:02x?}",
                    missing.len()
                );
            }
        }
        dropped += droppable.len();
    }
    (answered, dropped)
}

fn random_batch_tcp(server: &DnzServer, rng: &mut Rng, count: usize) -> (usize, usize) {
    let (mut answered, mut dropped) = (0, 0);
    // Answerable packets are pipelined on one connection; a dropped packet closes it.
    let mut stream = tcp_connect(server);
    for _ in 0..count {
        let packet = random_packet(rng);
        tcp_write(&mut stream, &packet);
        let reply = tcp_read(&mut stream);
        if answerable(&packet) {
            let reply = reply.unwrap_or_else(|| panic!("no TCP reply to {packet:02x?}"));
            assert_eq!(reply[..2], packet[..2], "TCP reply id");
            check_random_reply(&reply, &packet);
            answered += 1;
        } else {
            if let Some(reply) = reply {
                panic!("TCP reply {reply:02x?} to a packet that must be dropped {packet:02x?}");
            }
            dropped += 1;
            stream = tcp_connect(server);
        }
    }
    (answered, dropped)
}

#[test]
fn malformed_queries_get_formerr_or_no_reply_and_never_stop_the_server() {
    let started = Instant::now();
    let mut server = DnzServer::start(&["--demo"]);
    assert_healthy(&mut server, "start");

    // No readable header: dropped.
    expect_drop(&server, "empty packet", &[], false);
    let valid = question_packet(0x0101, 0x0000, 0);
    for len in 1..12 {
        expect_drop(&server, &format!("{len}-byte header"), &valid[..len], true);
    }
    // A zero-length TCP message: nothing to answer, the connection is closed.
    expect_drop(&server, "zero-length TCP message", &[], true);
    assert_healthy(&mut server, "truncated headers");

    // A header that promises a question that is not there.
    expect_rcode(
        &server,
        "qdcount=1 without a question",
        &header(0x0202, 0, 1, 0, 0, 0),
        FORMERR,
    );
    let mut qname_only = header(0x0203, 0, 1, 0, 0, 0);
    qname_only.extend_from_slice(&www_wire());
    expect_rcode(
        &server,
        "question without type and class",
        &qname_only,
        FORMERR,
    );
    let mut half_type = qname_only.clone();
    half_type[1] = 0x04;
    half_type.extend_from_slice(&[0, 1, 0]);
    expect_rcode(
        &server,
        "question with 3 of 4 type/class bytes",
        &half_type,
        FORMERR,
    );
    assert_healthy(&mut server, "missing questions");

    // Bad label lengths.
    let mut past_end = header(0x0301, 0, 1, 0, 0, 0);
    past_end.extend_from_slice(b"\x03www\x3fexample");
    expect_rcode(&server, "label running past the end", &past_end, FORMERR);
    let mut past_end_typed = header(0x0302, 0, 1, 0, 0, 0);
    past_end_typed.extend_from_slice(b"\x03www\x20ex\x00\x00\x01\x00\x01");
    expect_rcode(
        &server,
        "label longer than the rest",
        &past_end_typed,
        FORMERR,
    );
    for label_len in [64u8, 65, 0x7f, 0x80, 0xbf] {
        let mut long = header(0x0303, 0, 1, 0, 0, 0);
        long.push(label_len);
        long.extend(std::iter::repeat_n(b'a', usize::from(label_len)));
        long.extend_from_slice(&[0, 0, 1, 0, 1]);
        expect_rcode(
            &server,
            &format!("label length byte {label_len:#04x}"),
            &long,
            FORMERR,
        );
    }
    // A name of 256 bytes: four 63-byte labels plus one of 3.
    let mut too_long = header(0x0304, 0, 1, 0, 0, 0);
    for _ in 0..4 {
        too_long.push(63);
        too_long.extend(std::iter::repeat_n(b'a', 63));
    }
    too_long.extend_from_slice(b"\x03abc\x00\x00\x01\x00\x01");
    expect_rcode(&server, "name over 255 bytes", &too_long, FORMERR);
    assert_healthy(&mut server, "bad label lengths");

    // Compression pointers in the qname.
    let mut self_loop = header(0x0401, 0, 1, 0, 0, 0);
    self_loop.extend_from_slice(&[0xc0, 12, 0, 1, 0, 1]);
    expect_rcode(&server, "pointer to itself", &self_loop, FORMERR);
    let mut label_then_self = header(0x0402, 0, 1, 0, 0, 0);
    label_then_self.extend_from_slice(&[1, b'a', 0xc0, 12, 0, 1, 0, 1]);
    expect_rcode(
        &server,
        "label then pointer back to it",
        &label_then_self,
        FORMERR,
    );
    let mut mutual = header(0x0403, 0, 1, 0, 0, 0);
    // Offset 12 points to 14, offset 14 points back to 12.
    mutual.extend_from_slice(&[0xc0, 14, 0xc0, 12, 0, 1, 0, 1]);
    expect_rcode(&server, "two pointers to each other", &mutual, FORMERR);
    let mut mutual_labels = header(0x0404, 0, 1, 0, 0, 0);
    // 12: "a" -> 17; 17: "b" -> 12.
    mutual_labels.extend_from_slice(&[1, b'a', 0xc0, 17, 0, 1, b'b', 0xc0, 12, 0, 1, 0, 1]);
    expect_rcode(
        &server,
        "pointer loop through labels",
        &mutual_labels,
        FORMERR,
    );
    let mut forward = header(0x0405, 0, 1, 0, 0, 0);
    forward.extend_from_slice(&[0xc0, 0xff, 0, 1, 0, 1]);
    expect_rcode(&server, "pointer past the end", &forward, FORMERR);
    let mut far = header(0x0406, 0, 1, 0, 0, 0);
    far.extend_from_slice(&[0xff, 0xff, 0, 1, 0, 1]);
    expect_rcode(&server, "pointer to 0x3fff", &far, FORMERR);
    let mut cut_pointer = header(0x0407, 0, 1, 0, 0, 0);
    cut_pointer.extend_from_slice(&[0xc0]);
    expect_rcode(&server, "half a pointer", &cut_pointer, FORMERR);
    assert_healthy(&mut server, "compression pointer loops");

    // Question counts other than one.
    expect_rcode(
        &server,
        "qdcount=0",
        &header(0x0501, 0, 0, 0, 0, 0),
        FORMERR,
    );
    let mut two = header(0x0502, 0, 2, 0, 0, 0);
    for _ in 0..2 {
        two.extend_from_slice(&www_wire());
        two.extend_from_slice(&[0, 1, 0, 1]);
    }
    expect_rcode(&server, "qdcount=2", &two, FORMERR);
    let mut many = question_packet(0x0503, 0, 0);
    many[4..6].copy_from_slice(&0xffffu16.to_be_bytes());
    expect_rcode(&server, "qdcount=65535 with one question", &many, FORMERR);
    let mut lying_an = question_packet(0x0504, 0, 0);
    lying_an[6..8].copy_from_slice(&3u16.to_be_bytes());
    lying_an[10..12].copy_from_slice(&2u16.to_be_bytes());
    // Whatever it decides about sections that are not there, the server must answer.
    let reply = udp_exchange(server.dns, &lying_an).expect("reply to ancount=3 arcount=2");
    assert!(rcode_of(&reply, 0x0504) <= FORMERR, "{reply:02x?}");
    assert_healthy(&mut server, "question counts");

    // Responses are never answered (no reflection loops).
    expect_drop(&server, "QR=1", &question_packet(0x0601, 0x8000, 0), true);
    expect_drop(
        &server,
        "QR=1 with rcode and AA",
        &question_packet(0x0602, 0x8405, 0),
        true,
    );
    assert_healthy(&mut server, "responses");

    // Unknown opcodes: NOTIMP, opcode echoed.
    for opcode in [2u16, 3, 6, 7, 15] {
        let packet = question_packet(0x0700 + opcode, opcode << 11, 0);
        expect_rcode(&server, &format!("opcode {opcode}"), &packet, NOTIMP);
        let reply = udp_exchange(server.dns, &packet).expect("NOTIMP reply");
        assert_eq!(
            (reply[2] >> 3) & 0x0f,
            opcode as u8,
            "opcode echo {reply:02x?}"
        );
    }
    assert_healthy(&mut server, "unknown opcodes");

    // EDNS.
    let mut v1 = question_packet(0x0801, 0, 1);
    v1.extend_from_slice(&opt_record(1, &[]));
    expect_rcode(&server, "OPT version 1", &v1, BADVERS);
    let reply = udp_exchange(server.dns, &v1).expect("BADVERS reply");
    let message = Message::from_slice(&reply[..]).expect("BADVERS parses");
    assert!(message.opt().is_some(), "BADVERS without OPT: {reply:02x?}");
    assert_eq!(message.header().rcode().to_int(), 0, "low bits of BADVERS");
    let mut v255 = question_packet(0x0802, 0, 1);
    v255.extend_from_slice(&opt_record(255, &[]));
    expect_rcode(&server, "OPT version 255", &v255, BADVERS);
    let mut two_opt = question_packet(0x0803, 0, 2);
    two_opt.extend_from_slice(&opt_record(0, &[]));
    two_opt.extend_from_slice(&opt_record(0, &[]));
    expect_rcode(&server, "two OPT records", &two_opt, FORMERR);
    let mut opt_not_root = question_packet(0x0804, 0, 1);
    opt_not_root.extend_from_slice(&[1, b'x', 0]);
    opt_not_root.extend_from_slice(&opt_record(0, &[])[1..]);
    expect_rcode(
        &server,
        "OPT owned by a non-root name",
        &opt_not_root,
        FORMERR,
    );
    let mut opt_short = question_packet(0x0805, 0, 1);
    opt_short.extend_from_slice(&opt_record(0, &[])[..7]);
    expect_rcode(&server, "OPT record cut short", &opt_short, FORMERR);
    let bad_ecs: [(&str, Vec<u8>); 7] = [
        ("ECS family 3", ecs_option(3, 24, 0, &[192, 0, 2])),
        ("ECS family 0", ecs_option(0, 0, 0, &[])),
        (
            "ECS IPv4 source /33",
            ecs_option(1, 33, 0, &[192, 0, 2, 1, 0]),
        ),
        ("ECS IPv6 source /129", ecs_option(2, 129, 0, &[0x20; 17])),
        (
            "ECS address longer than the prefix",
            ecs_option(1, 8, 0, &[192, 0]),
        ),
        (
            "ECS non-zero scope in a query",
            ecs_option(1, 24, 24, &[192, 0, 2]),
        ),
        ("ECS body under 4 bytes", vec![0, 8, 0, 2, 0, 1]),
    ];
    for (what, option) in bad_ecs {
        let mut packet = question_packet(0x0806, 0, 1);
        packet.extend_from_slice(&opt_record(0, &option));
        expect_rcode(&server, what, &packet, FORMERR);
    }
    let mut option_overrun = question_packet(0x0807, 0, 1);
    option_overrun.extend_from_slice(&opt_record(0, &[0, 10, 0, 200, 1, 2]));
    expect_rcode(
        &server,
        "option length past the rdata",
        &option_overrun,
        FORMERR,
    );
    let mut good_ecs = question_packet(0x0808, 0, 1);
    good_ecs.extend_from_slice(&opt_record(0, &ecs_option(1, 24, 0, &[192, 0, 2])));
    expect_rcode(&server, "valid ECS (control)", &good_ecs, 0);
    let mut unknown_option = question_packet(0x0809, 0, 1);
    unknown_option.extend_from_slice(&opt_record(0, &[0xfd, 0xe9, 0, 2, 0xab, 0xcd]));
    expect_rcode(&server, "unknown option (ignored)", &unknown_option, 0);
    assert_healthy(&mut server, "EDNS errors");

    // TCP framing: a length prefix larger than what follows, then close.
    {
        let mut stream = tcp_connect(&server);
        let mut framed = 200u16.to_be_bytes().to_vec();
        framed.extend_from_slice(&valid);
        stream.write_all(&framed).expect("TCP write");
        stream.shutdown(Shutdown::Write).expect("half-close");
        assert_eq!(tcp_read(&mut stream), None, "reply to a short TCP message");
    }
    {
        // Half a length prefix, then close.
        let mut stream = tcp_connect(&server);
        stream.write_all(&[0x01]).expect("TCP write");
        stream.shutdown(Shutdown::Write).expect("half-close");
        assert_eq!(tcp_read(&mut stream), None, "reply to half a length prefix");
    }
    {
        // A length prefix of 65535 with a few bytes, then an abrupt close.
        let mut stream = tcp_connect(&server);
        stream.write_all(&[0xff, 0xff, 1, 2, 3]).expect("TCP write");
        drop(stream);
    }
    {
        // A FORMERR does not end the connection: the next query on it is answered.
        let mut stream = tcp_connect(&server);
        tcp_write(&mut stream, &header(0x0901, 0, 0, 0, 0, 0));
        let reply = tcp_read(&mut stream).expect("FORMERR over TCP");
        assert_eq!(rcode_of(&reply, 0x0901), FORMERR);
        tcp_write(&mut stream, &question_packet(0x0902, 0, 0));
        let reply = tcp_read(&mut stream).expect("answer after FORMERR on one connection");
        assert_eq!(rcode_of(&reply, 0x0902), 0);
        let response = parse_response(&reply).expect("answer parses");
        assert_eq!(response.answer, ["www.example.com. 300 IN A 192.0.2.30"]);
    }
    assert_healthy(&mut server, "TCP framing");

    // Random and mutated packets.
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (udp_answered, udp_dropped) = random_batch_udp(&server, &mut rng, 4_500);
    assert_healthy(&mut server, "random UDP packets");
    let (tcp_answered, tcp_dropped) = random_batch_tcp(&server, &mut rng, 500);
    eprintln!(
        "random packets: UDP {udp_answered} answered, {udp_dropped} dropped; \
         TCP {tcp_answered} answered, {tcp_dropped} dropped"
    );
    // The generator must exercise both paths.
    assert!(udp_answered > 1000 && udp_dropped > 100, "generator mix");
    assert_healthy(&mut server, "random packets");

    assert!(
        matches!(server.child.try_wait(), Ok(None)),
        "dnz serve is not running at the end"
    );
    assert!(
        started.elapsed() < Duration::from_secs(60),
        "took {:?}",
        started.elapsed()
    );
}
