//! Reading a query: header, the one question, and the OPT record (RFC 1035 §4.1, RFC 6891).

use domain::base::iana::{Opcode, Rtype};
use domain::base::rdata::UnknownRecordData;
use domain::base::{Message, ParsedName};

use crate::lookup::Reason;
use crate::rcode;

/// How the query arrived; it bounds the response size.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Udp,
    Tcp,
}

/// A name in wire form in a fixed buffer, with its label offsets.
#[derive(Clone)]
pub struct NameBuf {
    pub bytes: [u8; 255],
    pub len: u8,
    /// Offset of each label; index 0 is the whole name.
    pub starts: [u8; 128],
    pub n_labels: u8,
}

impl NameBuf {
    /// Copies a valid uncompressed wire name, optionally in lower case.
    pub fn from_wire(wire: &[u8], lower: bool) -> NameBuf {
        let mut buf = NameBuf {
            bytes: [0; 255],
            len: 0,
            starts: [0; 128],
            n_labels: 0,
        };
        let mut pos = 0usize;
        while pos < wire.len() && pos < 255 {
            let label_len = wire[pos] as usize;
            if label_len == 0 || pos + 1 + label_len >= 255 || buf.n_labels as usize >= 127 {
                break;
            }
            buf.starts[buf.n_labels as usize] = pos as u8;
            buf.n_labels += 1;
            buf.bytes[pos] = label_len as u8;
            for i in 0..label_len {
                let b = wire[pos + 1 + i];
                buf.bytes[pos + 1 + i] = if lower { b.to_ascii_lowercase() } else { b };
            }
            pos += 1 + label_len;
        }
        buf.bytes[pos] = 0;
        buf.starts[buf.n_labels as usize] = pos as u8;
        buf.len = (pos + 1) as u8;
        buf
    }

    pub fn as_wire(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// The name without its first `n` labels.
    pub fn suffix(&self, n: usize) -> &[u8] {
        &self.bytes[self.starts[n] as usize..self.len as usize]
    }
}

/// EDNS Client Subnet option from the query (RFC 7871 §6).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Ecs {
    pub family: u16,
    pub source_prefix: u8,
    /// The address, zero-padded.
    pub address: [u8; 16],
}

/// The query's OPT record (RFC 6891 §6.1.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edns {
    pub udp_size: u16,
    pub version: u8,
    pub dnssec_ok: bool,
    pub ecs: Option<Ecs>,
}

/// A parsed query.
#[derive(Clone)]
pub struct Query {
    pub id: u16,
    pub opcode: u8,
    pub rd: bool,
    pub cd: bool,
    /// The qname as sent, for the echo (case kept).
    pub qname: NameBuf,
    /// The qname in lower case, for lookups.
    pub lower: NameBuf,
    pub qtype: Rtype,
    pub qclass: u16,
    pub edns: Option<Edns>,
}

/// The header fields an error response echoes.
#[derive(Clone, Copy, Debug)]
pub struct ErrorHeader {
    pub id: u16,
    pub opcode: u8,
    pub rd: bool,
    pub cd: bool,
    /// The question, if it could be read, to echo it.
    pub question: Option<(NameBuf, u16, u16)>,
    /// Whether to add an OPT record (the query had a readable one).
    pub edns: bool,
}

impl std::fmt::Debug for NameBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "NameBuf({:?})", self.as_wire())
    }
}

impl Copy for NameBuf {}

/// Why a packet got no normal answer.
// Boxing the header would allocate per malformed query; the Ok side (`Query`) is larger anyway.
#[allow(clippy::large_enum_variant)]
#[derive(Clone, Copy, Debug)]
pub enum QueryError {
    /// Not answered at all: too short for a header, or a response.
    Drop,
    /// Answered with only a header (and the question when readable).
    Reject {
        header: ErrorHeader,
        rcode: u16,
        reason: Reason,
    },
}

const OPT_ECS: u16 = 8;

/// Parses a query packet.
// `Query` is larger than the error, so boxing the error would not make the result smaller.
#[allow(clippy::result_large_err)]
pub fn parse(packet: &[u8]) -> Result<Query, QueryError> {
    let Ok(message) = Message::from_slice(packet) else {
        return Err(QueryError::Drop);
    };
    let header = message.header();
    if header.qr() {
        return Err(QueryError::Drop);
    }
    let mut error_header = ErrorHeader {
        id: header.id(),
        opcode: header.opcode().to_int(),
        rd: header.rd(),
        cd: header.cd(),
        question: None,
        edns: false,
    };
    let reject = |header: ErrorHeader, rcode: u16, reason: Reason| {
        Err(QueryError::Reject {
            header,
            rcode,
            reason,
        })
    };
    let counts = message.header_counts();
    if counts.qdcount() != 1 {
        return reject(error_header, rcode::FORMERR, Reason::Malformed);
    }
    let Some(Ok(question)) = message.question().next() else {
        return reject(error_header, rcode::FORMERR, Reason::Malformed);
    };
    let qname_parsed: ParsedName<&[u8]> = question.into_qname();
    let mut wire = [0u8; 255];
    let mut len = 0usize;
    for label in qname_parsed.iter() {
        let bytes = label.as_slice();
        wire[len] = bytes.len() as u8;
        wire[len + 1..len + 1 + bytes.len()].copy_from_slice(bytes);
        len += 1 + bytes.len();
    }
    // The iterator yields the root label too, so `wire` ends in a zero byte.
    let qname = NameBuf::from_wire(&wire[..len], false);
    let lower = NameBuf::from_wire(&wire[..len], true);
    let qtype = question.qtype();
    let qclass = question.qclass().to_int();
    error_header.question = Some((qname, qtype.to_int(), qclass));
    if header.opcode() != Opcode::QUERY {
        return reject(error_header, rcode::NOTIMP, Reason::NotImplemented);
    }
    // RFC 6891 §6.1.1: one OPT at most, owned by the root.
    let mut edns = None;
    let Ok(additional) = message.additional() else {
        return reject(error_header, rcode::FORMERR, Reason::Malformed);
    };
    for record in additional {
        let Ok(record) = record else {
            return reject(error_header, rcode::FORMERR, Reason::Malformed);
        };
        if record.rtype() != Rtype::OPT {
            continue;
        }
        if edns.is_some() || !record.owner().is_root() {
            return reject(error_header, rcode::FORMERR, Reason::Malformed);
        }
        let Ok(Some(opt_record)) = record.to_record::<UnknownRecordData<&[u8]>>() else {
            return reject(error_header, rcode::FORMERR, Reason::Malformed);
        };
        error_header.edns = true;
        let ecs = match parse_options(opt_record.data().data()) {
            Ok(ecs) => ecs,
            Err(()) => return reject(error_header, rcode::FORMERR, Reason::Malformed),
        };
        // The OPT TTL holds extended rcode, version and flags (RFC 6891 §6.1.3).
        let ttl = record.ttl().as_secs().to_be_bytes();
        edns = Some(Edns {
            udp_size: record.class().to_int().max(512),
            version: ttl[1],
            dnssec_ok: ttl[2] & 0x80 != 0,
            ecs,
        });
    }
    if let Some(e) = edns
        && e.version > 0
    {
        return reject(error_header, rcode::BADVERS, Reason::BadVersion);
    }
    Ok(Query {
        id: header.id(),
        opcode: 0,
        rd: header.rd(),
        cd: header.cd(),
        qname,
        lower,
        qtype,
        qclass,
        edns,
    })
}

/// Walks the option TLVs; returns a well-formed ECS option, ignores unknown options.
fn parse_options(mut data: &[u8]) -> Result<Option<Ecs>, ()> {
    let mut ecs = None;
    while !data.is_empty() {
        if data.len() < 4 {
            return Err(());
        }
        let code = u16::from_be_bytes([data[0], data[1]]);
        let len = u16::from_be_bytes([data[2], data[3]]) as usize;
        let body = data.get(4..4 + len).ok_or(())?;
        if code == OPT_ECS {
            if ecs.is_some() {
                return Err(());
            }
            ecs = Some(parse_ecs(body)?);
        }
        data = &data[4 + len..];
    }
    Ok(ecs)
}

/// RFC 7871 §6 and §7.1: a malformed option is a FORMERR.
fn parse_ecs(body: &[u8]) -> Result<Ecs, ()> {
    if body.len() < 4 {
        return Err(());
    }
    let family = u16::from_be_bytes([body[0], body[1]]);
    let source_prefix = body[2];
    let scope_prefix = body[3];
    let max_prefix = match family {
        1 => 32,
        2 => 128,
        _ => return Err(()),
    };
    if source_prefix > max_prefix || scope_prefix != 0 {
        return Err(());
    }
    let address_bytes = &body[4..];
    if address_bytes.len() != (source_prefix as usize).div_ceil(8) {
        return Err(());
    }
    // Bits past the source prefix must be zero.
    if let Some(&last) = address_bytes.last() {
        let used_bits = source_prefix % 8;
        if used_bits != 0 && last & (0xff >> used_bits) != 0 {
            return Err(());
        }
    }
    let mut address = [0u8; 16];
    address[..address_bytes.len()].copy_from_slice(address_bytes);
    Ok(Ecs {
        family,
        source_prefix,
        address,
    })
}
