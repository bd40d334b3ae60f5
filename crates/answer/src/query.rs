//! Reading a query: header, the one question, and the OPT record (RFC 1035 §4.1, RFC 6891).

use domain::base::iana::Rtype;

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
    pub const EMPTY: NameBuf = NameBuf {
        bytes: [0; 255],
        len: 1,
        starts: [0; 128],
        n_labels: 0,
    };

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

/// A parsed query. [`parse_into`] fills one in place, so the path that answers packets reuses
/// it instead of zeroing and moving its name buffers per query.
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

impl Query {
    pub const EMPTY: Query = Query {
        id: 0,
        opcode: 0,
        rd: false,
        cd: false,
        qname: NameBuf::EMPTY,
        lower: NameBuf::EMPTY,
        qtype: Rtype::A,
        qclass: 1,
        edns: None,
    };
}

/// The header fields an error response echoes.
#[derive(Clone, Copy, Debug)]
pub struct ErrorHeader {
    pub id: u16,
    pub opcode: u8,
    pub rd: bool,
    pub cd: bool,
    /// Type and class of the question, if it could be read, to echo it with the query's
    /// `qname`.
    pub question: Option<(u16, u16)>,
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
pub fn parse(packet: &[u8]) -> Result<Query, QueryError> {
    let mut query = Query::EMPTY;
    parse_into(packet, &mut query)?;
    Ok(query)
}

/// Parses a query packet into `query`. On a `Reject` with a question, `query.qname` holds it.
pub fn parse_into(packet: &[u8], query: &mut Query) -> Result<(), QueryError> {
    let Some(header) = packet.get(..12) else {
        return Err(QueryError::Drop);
    };
    let word = |at: usize| u16::from_be_bytes([header[at], header[at + 1]]);
    let (id, flags) = (word(0), word(2));
    if flags & 0x8000 != 0 {
        return Err(QueryError::Drop);
    }
    let opcode = (flags >> 11 & 0xf) as u8;
    let (rd, cd) = (flags & 0x0100 != 0, flags & 0x0010 != 0);
    let mut error_header = ErrorHeader {
        id,
        opcode,
        rd,
        cd,
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
    if word(4) != 1 {
        return reject(error_header, rcode::FORMERR, Reason::Malformed);
    }
    let Some(end) = read_qname(packet, query) else {
        return reject(error_header, rcode::FORMERR, Reason::Malformed);
    };
    let Some(&[t0, t1, c0, c1]) = packet.get(end..end + 4) else {
        return reject(error_header, rcode::FORMERR, Reason::Malformed);
    };
    let qtype = Rtype::from_int(u16::from_be_bytes([t0, t1]));
    let qclass = u16::from_be_bytes([c0, c1]);
    error_header.question = Some((qtype.to_int(), qclass));
    if opcode != 0 {
        return reject(error_header, rcode::NOTIMP, Reason::NotImplemented);
    }
    // Answer and authority records (none in a normal query) are skipped; then the additional
    // section. RFC 6891 §6.1.1: one OPT at most, owned by the root.
    let mut edns = None;
    let mut pos = end + 4;
    let before_additional = word(6) as usize + word(8) as usize;
    for index in 0..before_additional + word(10) as usize {
        let Some(record) = read_record(packet, pos) else {
            return reject(error_header, rcode::FORMERR, Reason::Malformed);
        };
        pos = record.end;
        if index < before_additional || record.rtype != Rtype::OPT.to_int() {
            continue;
        }
        if edns.is_some() || !record.owner_is_root {
            return reject(error_header, rcode::FORMERR, Reason::Malformed);
        }
        error_header.edns = true;
        let ecs = match parse_options(record.data) {
            Ok(ecs) => ecs,
            Err(()) => return reject(error_header, rcode::FORMERR, Reason::Malformed),
        };
        // The OPT TTL holds extended rcode, version and flags (RFC 6891 §6.1.3).
        let ttl = record.ttl.to_be_bytes();
        edns = Some(Edns {
            udp_size: record.class.max(512),
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
    query.id = id;
    query.opcode = 0;
    query.rd = rd;
    query.cd = cd;
    query.qtype = qtype;
    query.qclass = qclass;
    query.edns = edns;
    Ok(())
}

/// One resource record as a query's sections hold it.
struct RawRecord<'a> {
    owner_is_root: bool,
    rtype: u16,
    class: u16,
    ttl: u32,
    data: &'a [u8],
    /// Where the next record starts.
    end: usize,
}

/// Reads the record at `pos`: its owner is skipped (labels up to a root label or a
/// compression pointer; a pointer is followed only to see whether it names the root).
fn read_record(packet: &[u8], mut pos: usize) -> Option<RawRecord<'_>> {
    let owner_is_root = match *packet.get(pos)? {
        0 => true,
        first if first & 0xc0 == 0xc0 => {
            let target = (usize::from(first & 0x3f) << 8) | usize::from(*packet.get(pos + 1)?);
            *packet.get(target)? == 0
        }
        _ => false,
    };
    loop {
        let len = *packet.get(pos)?;
        match len {
            0 => {
                pos += 1;
                break;
            }
            _ if len & 0xc0 == 0xc0 => {
                pos += 2;
                break;
            }
            _ if len > 63 => return None,
            _ => pos += 1 + usize::from(len),
        }
    }
    let fixed = packet.get(pos..pos + 10)?;
    let word = |at: usize| u16::from_be_bytes([fixed[at], fixed[at + 1]]);
    let rdlen = usize::from(word(8));
    let data = packet.get(pos + 10..pos + 10 + rdlen)?;
    Some(RawRecord {
        owner_is_root,
        rtype: word(0),
        class: word(2),
        ttl: u32::from_be_bytes([fixed[4], fixed[5], fixed[6], fixed[7]]),
        data,
        end: pos + 10 + rdlen,
    })
}

/// Reads the question's name (at offset 12) into `query.qname` and, lower-cased,
/// `query.lower`, in one pass; returns where the name ends. A compression pointer can only
/// point back into the header here, so it is refused like any other malformed name.
fn read_qname(packet: &[u8], query: &mut Query) -> Option<usize> {
    const START: usize = 12;
    let mut pos = 0usize;
    let mut labels = 0usize;
    loop {
        let len = *packet.get(START + pos)? as usize;
        // At most 255 bytes, so at most 127 labels before the root.
        if len > 63 || pos + 1 + len > 255 {
            return None;
        }
        query.qname.starts[labels] = pos as u8;
        query.qname.bytes[pos] = len as u8;
        query.lower.bytes[pos] = len as u8;
        if len == 0 {
            break;
        }
        let label = packet.get(START + pos + 1..START + pos + 1 + len)?;
        for (i, &b) in label.iter().enumerate() {
            query.qname.bytes[pos + 1 + i] = b;
            query.lower.bytes[pos + 1 + i] = b.to_ascii_lowercase();
        }
        labels += 1;
        pos += 1 + len;
    }
    query.qname.len = (pos + 1) as u8;
    query.qname.n_labels = labels as u8;
    query.lower.len = query.qname.len;
    query.lower.n_labels = query.qname.n_labels;
    query.lower.starts[..=labels].copy_from_slice(&query.qname.starts[..=labels]);
    Some(START + pos + 1)
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

#[cfg(test)]
mod tests {
    use super::*;

    fn packet(qname: &[u8], tail: &[u8]) -> Vec<u8> {
        let mut p = vec![0x12, 0x34, 0x01, 0x00, 0, 1, 0, 0, 0, 0, 0, 0];
        p.extend_from_slice(qname);
        p.extend_from_slice(tail);
        p
    }

    fn rejected(p: &[u8]) -> Option<(u16, bool)> {
        match parse(p) {
            Err(QueryError::Reject { rcode, header, .. }) => {
                Some((rcode, header.question.is_some()))
            }
            _ => None,
        }
    }

    #[test]
    fn the_name_is_read_as_sent_and_in_lower_case() {
        let q = parse(&packet(b"\x03WwW\x07Example\x03COM\x00", &[0, 28, 0, 1])).unwrap();
        assert_eq!(q.qname.as_wire(), b"\x03WwW\x07Example\x03COM\x00");
        assert_eq!(q.lower.as_wire(), b"\x03www\x07example\x03com\x00");
        assert_eq!(q.lower.suffix(1), b"\x07example\x03com\x00");
        assert_eq!(q.lower.suffix(3), b"\x00");
        assert_eq!(
            (q.qtype, q.qclass, q.id, q.rd),
            (Rtype::AAAA, 1, 0x1234, true)
        );
    }

    #[test]
    fn a_name_of_255_bytes_is_read_and_one_more_is_refused() {
        let longest: Vec<u8> = (0..127).flat_map(|_| [1u8, b'a']).chain([0]).collect();
        assert_eq!(longest.len(), 255);
        let q = parse(&packet(&longest, &[0, 1, 0, 1])).unwrap();
        assert_eq!(q.qname.n_labels, 127);
        assert_eq!(q.lower.suffix(126), b"\x01a\x00");
        let too_long: Vec<u8> = [2u8, b'a', b'a']
            .into_iter()
            .chain(longest[2..].iter().copied())
            .collect();
        assert_eq!(
            rejected(&packet(&too_long, &[0, 1, 0, 1])),
            Some((rcode::FORMERR, false))
        );
    }

    #[test]
    fn pointers_bad_labels_and_cut_packets_are_malformed() {
        for (name, tail) in [
            (&b"\xc0\x0c"[..], &[0u8, 1, 0, 1][..]),
            (b"\x40aaaa\x00", &[0, 1, 0, 1]),
            (b"\x05abc", &[]),
            (b"\x03abc", &[]),
        ] {
            assert_eq!(
                rejected(&packet(name, tail)),
                Some((rcode::FORMERR, false)),
                "{name:?}"
            );
        }
        // The name is whole but the type and class are cut off.
        assert_eq!(
            rejected(&packet(b"\x03abc\x00", &[0, 1])),
            Some((rcode::FORMERR, false))
        );
        assert!(matches!(parse(&[0u8; 11]), Err(QueryError::Drop)));
    }

    /// A query for `abc.` A with the given counts after the question and `tail` after it.
    fn with_sections(an: u8, ar: u8, tail: &[u8]) -> Vec<u8> {
        let mut p = packet(b"\x03abc\x00", &[0, 1, 0, 1]);
        p[7] = an;
        p[11] = ar;
        p.extend_from_slice(tail);
        p
    }

    const OPT_DO_1232: [u8; 11] = [0, 0, 41, 0x04, 0xd0, 0, 0, 0x80, 0, 0, 0];

    #[test]
    fn the_opt_record_is_read_and_checked() {
        let q = parse(&with_sections(0, 1, &OPT_DO_1232)).unwrap();
        let edns = q.edns.unwrap();
        assert_eq!(
            (edns.udp_size, edns.version, edns.dnssec_ok, edns.ecs),
            (1232, 0, true, None)
        );
        // ECS 198.51.100.0/24.
        let ecs = [0, 8, 0, 7, 0, 1, 24, 0, 198, 51, 100];
        let mut opt = vec![0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0, 0, ecs.len() as u8];
        opt.extend_from_slice(&ecs);
        let ecs = parse(&with_sections(0, 1, &opt))
            .unwrap()
            .edns
            .unwrap()
            .ecs
            .unwrap();
        assert_eq!(
            (ecs.family, ecs.source_prefix, &ecs.address[..3]),
            (1, 24, &[198, 51, 100][..])
        );
        // A small advertised size counts as 512; an owner that points at a root label is root.
        // (Offset 16 is the root label that ends the question's name.)
        let small_via_pointer = [0xc0, 16, 0, 41, 0, 100, 0, 0, 0, 0, 0, 0];
        let p = with_sections(0, 1, &small_via_pointer);
        assert_eq!(parse(&p).unwrap().edns.unwrap().udp_size, 512);
        // An answer record before it is skipped.
        let answer = [0xc0, 12, 0, 1, 0, 1, 0, 0, 0, 60, 0, 4, 192, 0, 2, 1];
        let tail: Vec<u8> = answer.iter().chain(&OPT_DO_1232).copied().collect();
        assert!(parse(&with_sections(1, 1, &tail)).unwrap().edns.is_some());
    }

    #[test]
    fn bad_opt_records_are_refused() {
        let two: Vec<u8> = OPT_DO_1232.iter().chain(&OPT_DO_1232).copied().collect();
        let mut not_root = vec![1, b'x', 0];
        not_root.extend_from_slice(&OPT_DO_1232[1..]);
        let mut version_1 = OPT_DO_1232;
        version_1[6] = 1;
        for (ar, tail, rcode) in [
            (2, &two[..], rcode::FORMERR),
            (1, &not_root[..], rcode::FORMERR),
            (1, &OPT_DO_1232[..9], rcode::FORMERR),
            (2, &OPT_DO_1232[..], rcode::FORMERR),
            (1, &version_1[..], rcode::BADVERS),
        ] {
            assert_eq!(
                rejected(&with_sections(0, ar, tail)),
                Some((rcode, true)),
                "{tail:?}"
            );
        }
    }

    #[test]
    fn a_rejected_query_keeps_its_question_for_the_echo() {
        let mut p = packet(b"\x03abc\x00", &[0, 1, 0, 1]);
        p[2] = 0x10; // opcode 2 (STATUS)
        let mut query = Query::EMPTY;
        let err = parse_into(&p, &mut query).unwrap_err();
        assert!(matches!(
            err,
            QueryError::Reject {
                rcode: rcode::NOTIMP,
                header: ErrorHeader {
                    question: Some((1, 1)),
                    ..
                },
                ..
            }
        ));
        assert_eq!(query.qname.as_wire(), b"\x03abc\x00");
    }
}
