//! Answering DNS queries from a [`Snapshot`]: parse the query, decide the answer, encode it.
//!
//! The three steps are separate so that an answer is plain data ([`Answer`]) that tests and
//! `dnz explain` can look at, and encoding is a pure function of it. Nothing here allocates on
//! the heap per query, takes a lock, reads the clock or does I/O; every outcome is a response
//! (or a deliberate drop) plus a [`Reason`] that the server counts.

pub mod encode;
pub mod lb;
pub mod lookup;
pub mod query;
pub mod steer;
#[cfg(test)]
mod tests;

pub use lookup::{Answer, Owner, Reason, RrRef, answer};
pub use query::{Edns, Query, QueryError, Transport};
pub use steer::{Client, Decision, Pick, PlaceRule};

use model::Snapshot;

/// Our advertised EDNS UDP payload size (DNS flag day 2020).
pub const OUR_UDP_SIZE: u16 = 1232;

/// Extended response codes used here (RFC 1035 §4.1.1, RFC 6891 §9).
pub mod rcode {
    pub const NOERROR: u16 = 0;
    pub const FORMERR: u16 = 1;
    pub const SERVFAIL: u16 = 2;
    pub const NXDOMAIN: u16 = 3;
    pub const NOTIMP: u16 = 4;
    pub const REFUSED: u16 = 5;
    pub const BADVERS: u16 = 16;
}

/// What happened to one packet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// A response is in the output buffer.
    Respond {
        rcode: u16,
        reason: Reason,
        truncated: bool,
    },
    /// No response: the packet was not a query or its header could not be read.
    Drop,
}

/// Answers one packet into `out` (cleared first) for a client with no address and a fixed
/// random number: for benches, fuzzing and tests of unsteered answers.
pub fn respond(
    snapshot: &Snapshot,
    packet: &[u8],
    transport: Transport,
    out: &mut Vec<u8>,
) -> Outcome {
    let client = Client {
        source: std::net::IpAddr::from([0u8, 0, 0, 0]),
        random: 0,
    };
    respond_to(snapshot, packet, transport, &client, out)
}

/// Answers one packet from `client` into `out` (cleared first).
pub fn respond_to(
    snapshot: &Snapshot,
    packet: &[u8],
    transport: Transport,
    client: &Client,
    out: &mut Vec<u8>,
) -> Outcome {
    out.clear();
    let mut query = Query::EMPTY;
    match query::parse_into(packet, &mut query) {
        Err(QueryError::Drop) => Outcome::Drop,
        Err(QueryError::Reject {
            header,
            rcode,
            reason,
        }) => {
            encode::error_response(&header, &query.qname, rcode, out);
            Outcome::Respond {
                rcode,
                reason,
                truncated: false,
            }
        }
        Ok(()) => {
            let mut answer = lookup::Answer::new(rcode::NOERROR, lookup::Reason::Answer);
            lookup::answer_into(&mut answer, snapshot, &query, transport, client);
            let truncated = encode::encode(&query, &answer, transport, out);
            Outcome::Respond {
                rcode: answer.rcode,
                reason: answer.reason,
                truncated,
            }
        }
    }
}
