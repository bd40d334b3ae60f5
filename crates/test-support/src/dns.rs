//! A small DNS client for tests: build a query, send it over UDP or TCP, and turn the response
//! into comparable text (one line per record, as in a zone file).

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream, UdpSocket};
use std::time::Duration;

use domain::base::iana::Rtype;
use domain::base::name::ParsedName;
use domain::base::{Message, Name};
use domain::rdata::AllRecordData;

#[derive(Clone, Debug)]
pub struct QueryOptions {
    pub tcp: bool,
    /// EDNS UDP size; `None` sends no OPT record.
    pub edns: Option<u16>,
    pub dnssec_ok: bool,
    pub rd: bool,
    pub id: u16,
}

impl Default for QueryOptions {
    fn default() -> Self {
        QueryOptions {
            tcp: false,
            edns: Some(1232),
            dnssec_ok: false,
            rd: false,
            id: 0x1234,
        }
    }
}

/// A parsed response.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DnsResponse {
    pub id: u16,
    pub rcode: String,
    pub aa: bool,
    pub tc: bool,
    pub rd: bool,
    pub ra: bool,
    /// The question as echoed, `name type`.
    pub question: Vec<String>,
    pub answer: Vec<String>,
    pub authority: Vec<String>,
    /// Without the OPT record.
    pub additional: Vec<String>,
    /// The OPT record's UDP size, when there is one.
    pub edns_udp_size: Option<u16>,
    pub raw: Vec<u8>,
}

/// Builds a query packet by hand so that tests control every byte.
pub fn build_query(name: &str, rtype: Rtype, opts: &QueryOptions) -> Vec<u8> {
    let name: Name<Vec<u8>> = name.parse().expect("query name");
    let mut packet = Vec::new();
    packet.extend_from_slice(&opts.id.to_be_bytes());
    packet.extend_from_slice(&[if opts.rd { 0x01 } else { 0x00 }, 0x00]);
    packet.extend_from_slice(&[0, 1, 0, 0, 0, 0, 0, u8::from(opts.edns.is_some())]);
    packet.extend_from_slice(name.as_slice());
    packet.extend_from_slice(&rtype.to_int().to_be_bytes());
    packet.extend_from_slice(&1u16.to_be_bytes());
    if let Some(size) = opts.edns {
        packet.push(0);
        packet.extend_from_slice(&41u16.to_be_bytes());
        packet.extend_from_slice(&size.to_be_bytes());
        packet.extend_from_slice(&[0, 0, if opts.dnssec_ok { 0x80 } else { 0 }, 0, 0, 0]);
    }
    packet
}

/// Sends raw bytes and returns the raw response, or `None` on timeout.
pub fn query_raw(server: SocketAddr, packet: &[u8], tcp: bool) -> Option<Vec<u8>> {
    let timeout = Duration::from_secs(3);
    if tcp {
        let mut stream = TcpStream::connect_timeout(&server, timeout).ok()?;
        stream.set_read_timeout(Some(timeout)).ok()?;
        let mut framed = (packet.len() as u16).to_be_bytes().to_vec();
        framed.extend_from_slice(packet);
        stream.write_all(&framed).ok()?;
        let mut len = [0u8; 2];
        stream.read_exact(&mut len).ok()?;
        let mut response = vec![0u8; u16::from_be_bytes(len) as usize];
        stream.read_exact(&mut response).ok()?;
        Some(response)
    } else {
        let bind: SocketAddr = if server.is_ipv6() {
            "[::1]:0".parse().ok()?
        } else {
            "127.0.0.1:0".parse().ok()?
        };
        let socket = UdpSocket::bind(bind).ok()?;
        socket.set_read_timeout(Some(timeout)).ok()?;
        socket.send_to(packet, server).ok()?;
        let mut buf = vec![0u8; 65535];
        let (len, _) = socket.recv_from(&mut buf).ok()?;
        buf.truncate(len);
        Some(buf)
    }
}

/// Sends a query and parses the response; panics on timeout or an unparseable response.
pub fn query(server: SocketAddr, name: &str, rtype: Rtype, opts: &QueryOptions) -> DnsResponse {
    let packet = build_query(name, rtype, opts);
    let raw = query_raw(server, &packet, opts.tcp)
        .unwrap_or_else(|| panic!("no response from {server} to {name} {rtype}"));
    parse_response(&raw).unwrap_or_else(|e| panic!("bad response to {name} {rtype}: {e}"))
}

fn record_lines<'a>(
    section: domain::base::message::RecordSection<'a, [u8]>,
    skip_opt: bool,
    edns: &mut Option<u16>,
) -> Result<Vec<String>, String> {
    let mut lines = Vec::new();
    for record in section {
        let record = record.map_err(|e| e.to_string())?;
        if record.rtype() == Rtype::OPT && skip_opt {
            *edns = Some(record.class().to_int());
            continue;
        }
        let parsed = record
            .to_record::<AllRecordData<&[u8], ParsedName<&[u8]>>>()
            .map_err(|e| e.to_string())?
            .ok_or("record data not parsed")?;
        lines.push(format!(
            "{}. {} {} {} {}",
            parsed.owner(),
            parsed.ttl().as_secs(),
            parsed.class(),
            parsed.rtype(),
            parsed.data()
        ));
    }
    Ok(lines)
}

pub fn parse_response(raw: &[u8]) -> Result<DnsResponse, String> {
    let message = Message::from_slice(raw).map_err(|e| e.to_string())?;
    let header = message.header();
    let mut question = Vec::new();
    for q in message.question() {
        let q = q.map_err(|e| e.to_string())?;
        question.push(format!("{}. {}", q.qname(), q.qtype()));
    }
    let mut edns = None;
    let answer = record_lines(
        message.answer().map_err(|e| e.to_string())?,
        false,
        &mut edns,
    )?;
    let authority = record_lines(
        message.authority().map_err(|e| e.to_string())?,
        false,
        &mut edns,
    )?;
    let additional = record_lines(
        message.additional().map_err(|e| e.to_string())?,
        true,
        &mut edns,
    )?;
    Ok(DnsResponse {
        id: header.id(),
        rcode: message.opt_rcode().to_string(),
        aa: header.aa(),
        tc: header.tc(),
        rd: header.rd(),
        ra: header.ra(),
        question,
        answer,
        authority,
        additional,
        edns_udp_size: edns,
        raw: raw.to_vec(),
    })
}
