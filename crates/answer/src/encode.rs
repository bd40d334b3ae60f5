//! Writing a response in wire format (RFC 1035 §4.1) with name compression (§4.1.4), the OPT
//! record (RFC 6891) and truncation to the client's size.
//!
//! Rdata comes pre-encoded from the snapshot; only the names inside NS, CNAME, PTR, MX and SOA
//! rdata are compressed (RFC 3597 §4 forbids it for other types).

use arrayvec::ArrayVec;
use domain::base::iana::Rtype;
use model::Rdata;

use crate::OUR_UDP_SIZE;
use crate::lookup::{Answer, Owner, RrRef};
use crate::query::{Ecs, ErrorHeader, NameBuf, Query, Transport};

const HEADER_LEN: usize = 12;
const TYPE_OPT: u16 = 41;

/// Offsets of names already written that later names may point to.
struct Compressor {
    offsets: ArrayVec<u16, 96>,
}

impl Compressor {
    fn new() -> Compressor {
        Compressor {
            offsets: ArrayVec::new(),
        }
    }

    fn find(&self, msg: &[u8], suffix: &[u8]) -> Option<u16> {
        self.offsets
            .iter()
            .copied()
            .find(|&off| name_eq_at(msg, off as usize, suffix))
    }

    fn remember(&mut self, offset: usize) {
        if offset < 0x3fff {
            let _ = self.offsets.try_push(offset as u16);
        }
    }
}

/// Compares the (possibly compressed) name at `msg[off..]` with an uncompressed name,
/// ignoring ASCII case.
fn name_eq_at(msg: &[u8], mut off: usize, name: &[u8]) -> bool {
    let mut pos = 0usize;
    let mut hops = 0;
    loop {
        let Some(&len) = msg.get(off) else {
            return false;
        };
        if len & 0xc0 == 0xc0 {
            let Some(&low) = msg.get(off + 1) else {
                return false;
            };
            off = (((len & 0x3f) as usize) << 8) | low as usize;
            hops += 1;
            if hops > 32 {
                return false;
            }
            continue;
        }
        if name.get(pos) != Some(&len) {
            return false;
        }
        if len == 0 {
            return true;
        }
        let len = len as usize;
        let (Some(a), Some(b)) = (
            msg.get(off + 1..off + 1 + len),
            name.get(pos + 1..pos + 1 + len),
        ) else {
            return false;
        };
        if !a.eq_ignore_ascii_case(b) {
            return false;
        }
        off += 1 + len;
        pos += 1 + len;
    }
}

/// Writes `name` (uncompressed wire), pointing at an earlier copy of its longest known suffix.
fn write_name(out: &mut Vec<u8>, name: &[u8], comp: &mut Compressor) {
    let mut pos = 0usize;
    while pos < name.len() && name[pos] != 0 {
        if let Some(target) = comp.find(out, &name[pos..]) {
            out.extend_from_slice(&(0xc000 | target).to_be_bytes());
            return;
        }
        let len = name[pos] as usize;
        comp.remember(out.len());
        out.extend_from_slice(&name[pos..pos + 1 + len]);
        pos += 1 + len;
    }
    out.push(0);
}

fn write_rdata(out: &mut Vec<u8>, rtype: Rtype, rdata: &Rdata, comp: &mut Compressor) {
    let wire = rdata.as_wire();
    match rtype {
        Rtype::NS | Rtype::CNAME | Rtype::PTR => write_name(out, wire, comp),
        Rtype::MX if wire.len() > 2 => {
            out.extend_from_slice(&wire[..2]);
            write_name(out, &wire[2..], comp);
        }
        Rtype::SOA => {
            let mname_len = model::name::wire_name_len(wire).unwrap_or(wire.len());
            let rest = &wire[mname_len..];
            let rname_len = model::name::wire_name_len(rest).unwrap_or(rest.len());
            write_name(out, &wire[..mname_len], comp);
            write_name(out, &rest[..rname_len], comp);
            out.extend_from_slice(&rest[rname_len..]);
        }
        _ => out.extend_from_slice(wire),
    }
}

/// Writes every record of an RRset; false (and nothing written) when it would pass `limit`.
/// Every record is written in the query's class: only IN is served from zones, and CH only for
/// the server's own TXT answers.
fn write_rrset(
    out: &mut Vec<u8>,
    rr: &RrRef<'_>,
    class: u16,
    comp: &mut Compressor,
    limit: usize,
) -> Option<u16> {
    let mark = out.len();
    let comp_mark = comp.offsets.len();
    let rtype = rr.rrset.rtype;
    let rdatas = &rr.rrset.rdatas;
    let mut written = 0u16;
    // The picked records, starting at the rotation point and wrapping around.
    let picked = || {
        (0..rdatas.len().min(64))
            .filter(|&i| rr.pick.mask & (1u64 << i) != 0)
            .chain(64..rdatas.len())
    };
    let n_picked = picked().count();
    let rotate = if n_picked > 0 {
        rr.pick.rotate as usize % n_picked
    } else {
        0
    };
    for idx in picked().skip(rotate).chain(picked().take(rotate)) {
        let rdata = &rdatas[idx];
        written += 1;
        match rr.owner {
            // The qname sits right after the header.
            Owner::Qname => out.extend_from_slice(&[0xc0, HEADER_LEN as u8]),
            Owner::Name(name) => write_name(out, name, comp),
        }
        out.extend_from_slice(&rtype.to_int().to_be_bytes());
        out.extend_from_slice(&class.to_be_bytes());
        out.extend_from_slice(&rr.rrset.ttl.to_be_bytes());
        let len_at = out.len();
        out.extend_from_slice(&[0, 0]);
        write_rdata(out, rtype, rdata, comp);
        let rdlen = (out.len() - len_at - 2) as u16;
        out[len_at..len_at + 2].copy_from_slice(&rdlen.to_be_bytes());
        // Checked per record: a huge RRset stops at the limit, so neither the buffer nor the
        // count grows with it (a record takes at least 11 bytes, the limit is under 64 KiB).
        if out.len() > limit {
            out.truncate(mark);
            comp.offsets.truncate(comp_mark);
            return None;
        }
    }
    Some(written)
}

/// The header with TC clear (set afterwards, once truncation is known) and zero counts.
fn write_header(out: &mut Vec<u8>, id: u16, opcode: u8, aa: bool, rd: bool, cd: bool, rcode: u16) {
    out.extend_from_slice(&id.to_be_bytes());
    let flags1 = 0x80 | ((opcode & 0x0f) << 3) | (u8::from(aa) << 2) | u8::from(rd);
    let flags2 = (u8::from(cd) << 4) | (rcode & 0x0f) as u8;
    out.extend_from_slice(&[flags1, flags2]);
    out.extend_from_slice(&[0; 8]);
}

fn set_counts(out: &mut [u8], qd: u16, an: u16, ns: u16, ar: u16) {
    out[4..6].copy_from_slice(&qd.to_be_bytes());
    out[6..8].copy_from_slice(&an.to_be_bytes());
    out[8..10].copy_from_slice(&ns.to_be_bytes());
    out[10..12].copy_from_slice(&ar.to_be_bytes());
}

fn write_question(
    out: &mut Vec<u8>,
    qname: &NameBuf,
    qtype: u16,
    qclass: u16,
    comp: &mut Compressor,
) {
    for i in 0..qname.n_labels as usize {
        comp.remember(out.len() + qname.starts[i] as usize);
    }
    out.extend_from_slice(qname.as_wire());
    out.extend_from_slice(&qtype.to_be_bytes());
    out.extend_from_slice(&qclass.to_be_bytes());
}

fn opt_len(ecs: Option<&Ecs>) -> usize {
    11 + ecs.map_or(0, |e| 4 + 4 + (e.source_prefix as usize).div_ceil(8))
}

/// The OPT record: our payload size, the extended rcode, DO copied (RFC 3225 §3).
fn write_opt(out: &mut Vec<u8>, rcode: u16, dnssec_ok: bool, ecs: Option<&Ecs>, scope_prefix: u8) {
    out.push(0);
    out.extend_from_slice(&TYPE_OPT.to_be_bytes());
    out.extend_from_slice(&OUR_UDP_SIZE.to_be_bytes());
    out.extend_from_slice(&[(rcode >> 4) as u8, 0, if dnssec_ok { 0x80 } else { 0 }, 0]);
    match ecs {
        None => out.extend_from_slice(&[0, 0]),
        Some(ecs) => {
            let address_len = (ecs.source_prefix as usize).div_ceil(8);
            let option_len = 4 + address_len;
            out.extend_from_slice(&((4 + option_len) as u16).to_be_bytes());
            out.extend_from_slice(&8u16.to_be_bytes());
            out.extend_from_slice(&(option_len as u16).to_be_bytes());
            out.extend_from_slice(&ecs.family.to_be_bytes());
            // RFC 7871 §7.2.1: the scope never exceeds the source prefix.
            out.extend_from_slice(&[ecs.source_prefix, scope_prefix.min(ecs.source_prefix)]);
            out.extend_from_slice(&ecs.address[..address_len]);
        }
    }
}

/// The most a response may hold: the client's UDP size (capped at ours), 512 without EDNS
/// (RFC 1035 §4.2.1), 65535 over TCP.
fn size_limit(query: &Query, transport: Transport) -> usize {
    match (transport, query.edns) {
        (Transport::Tcp, _) => 65535,
        (Transport::Udp, None) => 512,
        (Transport::Udp, Some(edns)) => edns.udp_size.clamp(512, OUR_UDP_SIZE) as usize,
    }
}

/// Encodes `answer` into `out`; returns whether the response was truncated.
pub fn encode(query: &Query, answer: &Answer<'_>, transport: Transport, out: &mut Vec<u8>) -> bool {
    let limit = size_limit(query, transport);
    let ecs = query.edns.and_then(|e| e.ecs);
    let opt_space = if query.edns.is_some() {
        opt_len(ecs.as_ref())
    } else {
        0
    };
    let body_limit = limit - opt_space;
    let mut comp = Compressor::new();
    write_header(
        out,
        query.id,
        query.opcode,
        answer.aa,
        query.rd,
        query.cd,
        answer.rcode,
    );
    write_question(
        out,
        &query.qname,
        query.qtype.to_int(),
        query.qclass,
        &mut comp,
    );
    let question_end = out.len();
    let mut truncated = answer.tc;
    let (mut an, mut ns, mut ar) = (0u16, 0u16, 0u16);
    if !truncated {
        'sections: for (section, count) in [
            (&answer.answer[..], &mut an),
            (&answer.authority[..], &mut ns),
        ] {
            for rr in section {
                match write_rrset(out, rr, query.qclass, &mut comp, body_limit) {
                    Some(n) => *count += n,
                    None => {
                        truncated = true;
                        break 'sections;
                    }
                }
            }
        }
    }
    if truncated {
        // RFC 2181 §9: a truncated answer carries no partial RRsets; the client retries over TCP.
        out.truncate(question_end);
        an = 0;
        ns = 0;
    } else {
        // Additional data is optional: what does not fit is left out without TC.
        for rr in &answer.additional {
            match write_rrset(out, rr, query.qclass, &mut comp, body_limit) {
                Some(n) => ar += n,
                None => break,
            }
        }
    }
    if let Some(edns) = query.edns {
        write_opt(
            out,
            answer.rcode,
            edns.dnssec_ok,
            ecs.as_ref(),
            answer.ecs_scope,
        );
        ar += 1;
    }
    if truncated {
        out[2] |= 0x02;
    }
    set_counts(out, 1, an, ns, ar);
    truncated
}

/// A response with only a header, the question when it could be read, and OPT when the query
/// had one.
pub fn error_response(header: &ErrorHeader, qname: &NameBuf, rcode: u16, out: &mut Vec<u8>) {
    let mut comp = Compressor::new();
    write_header(
        out,
        header.id,
        header.opcode,
        false,
        header.rd,
        header.cd,
        rcode,
    );
    let mut qd = 0;
    if let Some((qtype, qclass)) = header.question {
        write_question(out, qname, qtype, qclass, &mut comp);
        qd = 1;
    }
    let mut ar = 0;
    if header.edns {
        write_opt(out, rcode, false, None, 0);
        ar = 1;
    }
    set_counts(out, qd, 0, 0, ar);
}
