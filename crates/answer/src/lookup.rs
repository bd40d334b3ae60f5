//! Deciding the answer to a query: zone, name, wildcard, delegation, CNAME chain (RFC 1034
//! §4.3.2, RFC 4592, RFC 6604), negative answers (RFC 2308) and minimal ANY (RFC 8482).

use arrayvec::ArrayVec;
use domain::base::iana::Rtype;
use model::Snapshot;
use model::snapshot::{Node, Rrset, ZoneSnapshot};

use crate::query::{NameBuf, Query, Transport};
use crate::rcode;
use crate::steer::{self, Client, Decision, Pick};

/// CNAME links followed before giving up (loops stop earlier, at the first repeat).
const MAX_CHAIN: usize = 12;

/// The owner of a record in the response.
#[derive(Clone, Copy, Debug)]
pub enum Owner<'a> {
    /// The qname as the client wrote it.
    Qname,
    /// A name in wire form (from the snapshot).
    Name(&'a [u8]),
}

/// One RRset to put in a section.
#[derive(Clone, Copy, Debug)]
pub struct RrRef<'a> {
    pub owner: Owner<'a>,
    pub rrset: &'a Rrset,
    /// The records of the RRset to answer (all but for steered RRsets).
    pub pick: Pick,
}

impl<'a> RrRef<'a> {
    fn all(owner: Owner<'a>, rrset: &'a Rrset) -> RrRef<'a> {
        RrRef {
            owner,
            rrset,
            pick: Pick::ALL,
        }
    }
}

/// Why the answer is what it is; counted in metrics.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Answer,
    Cname,
    NoData,
    NxDomain,
    Referral,
    /// A name in no zone of ours, or a class we do not serve.
    NotOurs,
    /// Zone transfers and other types not answered here.
    Refused,
    /// ANY over UDP, answered with one RRset (RFC 8482 §4.1); counted apart because it is
    /// the usual query of reflection attacks.
    AnyOverUdp,
    Malformed,
    NotImplemented,
    BadVersion,
}

impl Reason {
    pub fn as_str(self) -> &'static str {
        match self {
            Reason::Answer => "answer",
            Reason::Cname => "cname",
            Reason::NoData => "nodata",
            Reason::NxDomain => "nxdomain",
            Reason::Referral => "referral",
            Reason::NotOurs => "not_ours",
            Reason::Refused => "refused",
            Reason::AnyOverUdp => "any_over_udp",
            Reason::Malformed => "malformed",
            Reason::NotImplemented => "not_implemented",
            Reason::BadVersion => "bad_version",
        }
    }
}

/// The decided response, before encoding.
#[derive(Debug)]
pub struct Answer<'a> {
    pub rcode: u16,
    pub aa: bool,
    /// Set when the response must send the client to TCP whatever its size.
    pub tc: bool,
    pub answer: ArrayVec<RrRef<'a>, 32>,
    pub authority: ArrayVec<RrRef<'a>, 2>,
    pub additional: ArrayVec<RrRef<'a>, 32>,
    pub reason: Reason,
    /// ECS scope prefix length (RFC 7871 §7.2.1): the GeoIP network that decided, or 0 when
    /// the answer does not depend on where the client is.
    pub ecs_scope: u8,
    /// The steering of the answered RRset, when it is steered.
    pub steering: Option<Decision>,
    /// The decision of the load balancer that owns the name, when one answered A/AAAA.
    pub lb: Option<crate::lb::LbDecision>,
}

impl<'a> Answer<'a> {
    pub fn new(rcode: u16, reason: Reason) -> Answer<'a> {
        Answer {
            rcode,
            aa: false,
            tc: false,
            answer: ArrayVec::new(),
            authority: ArrayVec::new(),
            additional: ArrayVec::new(),
            reason,
            ecs_scope: 0,
            steering: None,
            lb: None,
        }
    }

    /// Back to an empty answer with this outcome; the section arrays are only emptied.
    pub fn reset(&mut self, rcode: u16, reason: Reason) {
        self.rcode = rcode;
        self.aa = false;
        self.tc = false;
        self.answer.clear();
        self.authority.clear();
        self.additional.clear();
        self.reason = reason;
        self.ecs_scope = 0;
        self.steering = None;
        self.lb = None;
    }

    fn push_additional(&mut self, node: Node<'a>, rtype: Rtype) {
        for extra in node.additional(rtype) {
            let _ = self
                .additional
                .try_push(RrRef::all(Owner::Name(extra.owner.as_wire()), &extra.rrset));
        }
    }
}

/// What a name is in a zone.
enum Found<'a> {
    /// The node; `true` when it was reached through a wildcard.
    Node(Node<'a>, bool),
    /// Below a zone cut: the cut's node.
    Referral(Node<'a>),
    NxDomain,
}

/// Finds `name` (lower case) in `zone`.
fn find<'a>(zone: &'a ZoneSnapshot, name: &NameBuf, qtype: Rtype) -> Found<'a> {
    let apex_labels = zone.apex_labels as usize;
    let below_apex = (name.n_labels as usize).saturating_sub(apex_labels);
    if let Some(node) = zone.node(name.as_wire()) {
        if zone.has_cuts && (node.below_cut() || (node.is_cut() && qtype != Rtype::DS)) {
            return topmost_cut(zone, name, below_apex).unwrap_or(Found::Node(node, false));
        }
        return Found::Node(node, false);
    }
    // The closest encloser (RFC 4592 §3.3.1): the longest existing ancestor.
    for skip in 1..=below_apex {
        let Some(encloser) = zone.node(name.suffix(skip)) else {
            continue;
        };
        if zone.has_cuts && (encloser.is_cut() || encloser.below_cut()) {
            return topmost_cut(zone, name, below_apex).unwrap_or(Found::NxDomain);
        }
        let suffix = name.suffix(skip);
        let mut wildcard = [0u8; 257];
        wildcard[0] = 1;
        wildcard[1] = b'*';
        wildcard[2..2 + suffix.len()].copy_from_slice(suffix);
        return match zone.node(&wildcard[..2 + suffix.len()]) {
            Some(node) => Found::Node(node, true),
            None => Found::NxDomain,
        };
    }
    Found::NxDomain
}

/// The highest delegation at or above `name` (RFC 1034 §4.3.2 step 3b).
fn topmost_cut<'a>(zone: &'a ZoneSnapshot, name: &NameBuf, below_apex: usize) -> Option<Found<'a>> {
    for skip in (0..below_apex).rev() {
        let node = zone.node(name.suffix(skip))?;
        if node.is_cut() {
            return Some(Found::Referral(node));
        }
    }
    None
}

fn find_zone<'a>(snapshot: &'a Snapshot, name: &NameBuf) -> Option<&'a ZoneSnapshot> {
    snapshot.find_zone_by_labels(name.as_wire(), &name.starts[..name.n_labels as usize])
}

/// CH TXT about the server, when configured; REFUSED otherwise, as for any name not ours.
fn chaos<'a>(out: &mut Answer<'a>, snapshot: &'a Snapshot, query: &Query) {
    match snapshot.chaos.find(query.lower.as_wire()) {
        Some(rrset) if query.qtype == Rtype::TXT || query.qtype == Rtype::ANY => {
            out.aa = true;
            out.answer.push(RrRef::all(Owner::Qname, rrset));
        }
        _ => out.reset(rcode::REFUSED, Reason::NotOurs),
    }
}

/// Decides the response to `query`.
pub fn answer<'a>(
    snapshot: &'a Snapshot,
    query: &Query,
    transport: Transport,
    client: &Client,
) -> Answer<'a> {
    let mut out = Answer::new(rcode::NOERROR, Reason::Answer);
    answer_into(&mut out, snapshot, query, transport, client);
    out
}

/// Decides the response to `query` into `out`, which the caller keeps: an `Answer` is a few
/// kilobytes of section arrays, and returning it by value copied them for every query.
pub fn answer_into<'a>(
    out: &mut Answer<'a>,
    snapshot: &'a Snapshot,
    query: &Query,
    transport: Transport,
    client: &Client,
) {
    const CLASS_IN: u16 = 1;
    const CLASS_CH: u16 = 3;
    out.reset(rcode::NOERROR, Reason::Answer);
    if query.qclass == CLASS_CH {
        return chaos(out, snapshot, query);
    }
    if query.qclass != CLASS_IN {
        return out.reset(rcode::REFUSED, Reason::NotOurs);
    }
    // The qname, or the target of the last CNAME followed (copied only then).
    let mut chained: Option<NameBuf> = None;
    let Some(mut zone) = find_zone(snapshot, &query.lower) else {
        return out.reset(rcode::REFUSED, Reason::NotOurs);
    };
    let qtype = query.qtype;
    if matches!(qtype, Rtype::AXFR | Rtype::IXFR) {
        return out.reset(rcode::REFUSED, Reason::Refused);
    }
    out.aa = true;
    let mut owner = Owner::Qname;
    for hop in 0..MAX_CHAIN {
        let name = chained.as_ref().unwrap_or(&query.lower);
        match find(zone, name, qtype) {
            Found::Referral(cut) => {
                if hop == 0 {
                    out.aa = false;
                    out.reason = Reason::Referral;
                }
                if let Some(ns) = cut.rrset(Rtype::NS) {
                    let _ = out
                        .authority
                        .try_push(RrRef::all(Owner::Name(cut.name()), ns));
                    out.push_additional(cut, Rtype::NS);
                }
                return;
            }
            Found::NxDomain => {
                out.rcode = rcode::NXDOMAIN;
                out.reason = Reason::NxDomain;
                out.authority.push(RrRef::all(
                    Owner::Name(zone.apex.as_wire()),
                    &zone.negative_soa,
                ));
                return;
            }
            Found::Node(node, wildcard) => {
                if qtype == Rtype::ANY {
                    if node.rrsets().is_empty() {
                        out.reason = Reason::NoData;
                        out.authority.push(RrRef::all(
                            Owner::Name(zone.apex.as_wire()),
                            &zone.negative_soa,
                        ));
                        return;
                    }
                    // RFC 8482 §4.1: one RRset, the lowest type (as Knot DNS), with its
                    // additional data; §4.4 lets TCP get the same minimal answer.
                    let rrset = &node.rrsets()[0];
                    let _ = out.answer.try_push(RrRef::all(owner, rrset));
                    if !wildcard {
                        out.push_additional(node, rrset.rtype);
                    }
                    if transport == Transport::Udp {
                        out.reason = Reason::AnyOverUdp;
                    }
                    return;
                }
                // SPEC §7: a load balancer owns A and AAAA at its name.
                if matches!(qtype, Rtype::A | Rtype::AAAA)
                    && let Some(lb) = node.lb()
                {
                    let decision = crate::lb::decide(
                        lb,
                        qtype == Rtype::AAAA,
                        &snapshot.health,
                        snapshot.geo.as_ref(),
                        &snapshot.pop,
                        client,
                        query.edns.as_ref().and_then(|e| e.ecs.as_ref()),
                    );
                    out.ecs_scope = decision.ecs_scope;
                    match decision.chosen(lb) {
                        Some(origin) => {
                            let _ = out.answer.try_push(RrRef::all(owner, &origin.rrset));
                        }
                        None => {
                            if hop == 0 {
                                out.reason = Reason::NoData;
                            }
                            out.authority.push(RrRef::all(
                                Owner::Name(zone.apex.as_wire()),
                                &zone.negative_soa,
                            ));
                        }
                    }
                    out.lb = Some(decision);
                    return;
                }
                if let Some(rrset) = node.rrset(qtype) {
                    let mut pick = Pick::ALL;
                    if let Some(steered) = &rrset.steered {
                        let decision = steer::decide(
                            steered,
                            &snapshot.health,
                            snapshot.geo.as_ref(),
                            client,
                            query.edns.as_ref().and_then(|e| e.ecs.as_ref()),
                        );
                        if let Some((_, located)) = &decision.client {
                            out.ecs_scope = located.prefix_len;
                        }
                        pick = decision.result;
                        out.steering = Some(decision);
                    }
                    let _ = out.answer.try_push(RrRef { owner, rrset, pick });
                    if !wildcard {
                        out.push_additional(node, qtype);
                    }
                    return;
                }
                if qtype != Rtype::CNAME
                    && let Some(cname) = node.rrset(Rtype::CNAME)
                {
                    // A repeat means a loop: every link is already in the answer.
                    if out.answer.iter().any(|r| std::ptr::eq(r.rrset, cname)) {
                        return;
                    }
                    if out.answer.try_push(RrRef::all(owner, cname)).is_err() {
                        return;
                    }
                    out.reason = Reason::Cname;
                    let Some(target) = cname.rdatas.first().map(|r| r.as_wire()) else {
                        return;
                    };
                    let next = NameBuf::from_wire(target, true);
                    match find_zone(snapshot, &next) {
                        Some(next_zone) => zone = next_zone,
                        // Out of our zones: the resolver follows it (RFC 1034 §4.3.2 step 3a).
                        None => return,
                    }
                    chained = Some(next);
                    owner = Owner::Name(target);
                    continue;
                }
                if hop == 0 {
                    out.reason = Reason::NoData;
                }
                out.authority.push(RrRef::all(
                    Owner::Name(zone.apex.as_wire()),
                    &zone.negative_soa,
                ));
                return;
            }
        }
    }
}
