//! `dnz explain`: runs a query through the same `answer` function the DNS workers use, then
//! describes each steering step of the decision it returned: a steered RRset's, or a load
//! balancer's (SPEC §7: the pool order and why, the pools skipped, the pool and origin).

use std::net::IpAddr;

use answer::lb::{LbDecision, OrderedBy, Stage};
use answer::{Client, Decision, PlaceRule, Transport};
use domain::base::Message;
use domain::base::iana::Rtype;
use domain::base::name::ParsedName;
use domain::rdata::AllRecordData;
use model::lb::{Algorithm, LbSnapshot, PoolSnapshot, RuleMatch};
use model::snapshot::{HealthTable, Pop, Rrset};
use model::{Dname, Snapshot};

/// Why an explain request could not be run; each names its field.
#[derive(Debug)]
pub struct ExplainError {
    pub field: &'static str,
    pub message: String,
}

fn bad(field: &'static str, message: impl Into<String>) -> ExplainError {
    ExplainError {
        field,
        message: message.into(),
    }
}

/// Builds the query packet: EDNS, and an ECS option when `ecs` is given.
fn build_query(
    name: &str,
    rtype: Rtype,
    ecs: Option<(IpAddr, u8)>,
) -> Result<Vec<u8>, ExplainError> {
    let qname: domain::base::Name<Vec<u8>> = name
        .parse()
        .map_err(|e| bad("name", format!("bad name {name:?}: {e}")))?;
    let mut packet = vec![0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1];
    packet.extend_from_slice(qname.as_slice());
    packet.extend_from_slice(&rtype.to_int().to_be_bytes());
    packet.extend_from_slice(&1u16.to_be_bytes());
    let mut options = Vec::new();
    if let Some((address, prefix)) = ecs {
        let (family, bytes): (u16, Vec<u8>) = match address {
            IpAddr::V4(v4) => (1, v4.octets().to_vec()),
            IpAddr::V6(v6) => (2, v6.octets().to_vec()),
        };
        let max = bytes.len() as u8 * 8;
        if prefix > max {
            return Err(bad(
                "ecs",
                format!("prefix /{prefix} is longer than {max} bits"),
            ));
        }
        let mut truncated: Vec<u8> = bytes[..(prefix as usize).div_ceil(8)].to_vec();
        if prefix % 8 != 0
            && let Some(last) = truncated.last_mut()
        {
            *last &= 0xffu8 << (8 - prefix % 8);
        }
        options.extend_from_slice(&8u16.to_be_bytes());
        options.extend_from_slice(&((4 + truncated.len()) as u16).to_be_bytes());
        options.extend_from_slice(&family.to_be_bytes());
        options.extend_from_slice(&[prefix, 0]);
        options.extend_from_slice(&truncated);
    }
    packet.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0]);
    packet.extend_from_slice(&(options.len() as u16).to_be_bytes());
    packet.extend_from_slice(&options);
    Ok(packet)
}

fn section_lines(section: domain::base::message::RecordSection<'_, [u8]>) -> Vec<String> {
    let mut lines = Vec::new();
    for record in section.filter_map(Result::ok) {
        if record.rtype() == Rtype::OPT {
            continue;
        }
        if let Ok(Some(r)) = record.to_record::<AllRecordData<&[u8], ParsedName<&[u8]>>>() {
            lines.push(format!(
                "{}. {} IN {} {}",
                r.owner(),
                r.ttl().as_secs(),
                r.rtype(),
                r.data()
            ));
        }
    }
    lines
}

fn address_text(rrset: &Rrset, idx: usize) -> String {
    let wire = rrset
        .rdatas
        .get(idx)
        .map(|r| r.as_wire())
        .unwrap_or_default();
    match wire.len() {
        4 => IpAddr::from(<[u8; 4]>::try_from(wire).unwrap_or_default()).to_string(),
        16 => IpAddr::from(<[u8; 16]>::try_from(wire).unwrap_or_default()).to_string(),
        _ => format!("record {idx}"),
    }
}

fn listed(rrset: &Rrset, mask: u64) -> String {
    let names: Vec<String> = (0..rrset.rdatas.len().min(64))
        .filter(|i| mask & (1 << i) != 0)
        .map(|i| address_text(rrset, i))
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

/// Describes a place lookup the way `geoip lookup` shows it.
pub fn describe_place(address: IpAddr, located: &geo::Located) -> api::GeoLookup {
    let status = match located.kind {
        geo::PlaceKind::Placed => "placed".to_string(),
        geo::PlaceKind::NotInDatabase => "not in database".to_string(),
        geo::PlaceKind::Special(why) => why.to_string(),
        geo::PlaceKind::NoDatabase => "no database".to_string(),
    };
    let network = (located.kind != geo::PlaceKind::NoDatabase).then(|| {
        let bits = located.prefix_len;
        let masked = match address {
            IpAddr::V4(v4) => IpAddr::from(std::net::Ipv4Addr::from(
                u32::from(v4) & u32::MAX.checked_shl(32 - bits as u32).unwrap_or(0),
            )),
            IpAddr::V6(v6) => IpAddr::from(std::net::Ipv6Addr::from(
                u128::from(v6) & u128::MAX.checked_shl(128 - bits as u32).unwrap_or(0),
            )),
        };
        format!("{masked}/{bits}")
    });
    api::GeoLookup {
        address: address.to_string(),
        country: located.country.map(|c| c.to_string()),
        continent: located.continent.map(|c| c.to_string()),
        network,
        status,
    }
}

fn describe(rrset: &Rrset, decision: &Decision) -> Vec<String> {
    let mut steps = Vec::new();
    let members = rrset
        .steered
        .as_ref()
        .map(|s| &s.members[..])
        .unwrap_or(&[]);
    let records: Vec<String> = members
        .iter()
        .enumerate()
        .map(|(idx, m)| {
            let mut parts = Vec::new();
            if !m.countries.is_empty() {
                parts.push(format!(
                    "countries {}",
                    m.countries
                        .iter()
                        .map(|c| c.to_string())
                        .collect::<Vec<_>>()
                        .join(",")
                ));
            }
            let continents: Vec<&str> = geo::Continent::ALL
                .iter()
                .filter(|c| m.continents & (1 << c.index()) != 0)
                .map(|c| c.code())
                .collect();
            if !continents.is_empty() {
                parts.push(format!("continents {}", continents.join(",")));
            }
            if let Some(w) = m.weight {
                parts.push(format!("weight {w}"));
            }
            if m.backup {
                parts.push("backup".into());
            }
            if m.check.is_some() {
                parts.push("checked".into());
            }
            if parts.is_empty() {
                parts.push("default".into());
            }
            format!("{} ({})", address_text(rrset, idx), parts.join(", "))
        })
        .collect();
    steps.push(format!("records: {}", records.join("; ")));
    if decision.fail_open {
        steps.push(format!(
            "1. health: every record's check is failing ({}); all are answered so the name stays on DNS",
            listed(rrset, decision.failing)
        ));
    } else if decision.failing != 0 {
        steps.push(format!(
            "1. health: left out, check failing: {}",
            listed(rrset, decision.failing)
        ));
    } else {
        steps.push("1. health: no check is failing".into());
    }
    if decision.backups_dropped != 0 {
        steps.push(format!(
            "2. backup: left out while a non-backup record is left: {}",
            listed(rrset, decision.backups_dropped)
        ));
    } else {
        steps.push("2. backup: nothing left out".into());
    }
    match (&decision.client, decision.place_rule) {
        (_, PlaceRule::NotUsed) => {
            steps.push("3. place: no record has a place; not looked up".into())
        }
        (Some((address, located)), rule) => {
            let place = describe_place(*address, located);
            let at = match (&place.country, &place.continent) {
                (Some(country), Some(continent)) => format!("{country} ({continent})"),
                (Some(country), None) => country.clone(),
                _ => format!("no place ({})", place.status),
            };
            let network = place
                .network
                .map(|n| format!(", network {n}"))
                .unwrap_or_default();
            let outcome = match rule {
                PlaceRule::Country(c) => format!("records for country {c}"),
                PlaceRule::Continent(c) => {
                    format!("no record for the country; records for continent {c}")
                }
                PlaceRule::Defaults => {
                    "no record for the country or continent; the defaults".into()
                }
                PlaceRule::All => {
                    "no record for the place and no defaults; every record left".into()
                }
                PlaceRule::NotUsed => String::new(),
            };
            steps.push(format!(
                "3. place: {address} is in {at}{network}: {outcome}: {}",
                listed(rrset, decision.after_place)
            ));
        }
        (None, _) => {}
    }
    match decision.pick {
        Some(idx) => {
            let weight = members
                .get(idx as usize)
                .and_then(|m| m.weight)
                .unwrap_or(1);
            let total: u64 = members
                .iter()
                .enumerate()
                .filter(|(i, _)| decision.after_place & (1 << i) != 0)
                .map(|(_, m)| m.weight.unwrap_or(1) as u64)
                .sum();
            steps.push(format!(
                "4. weight: one record at random by weight: {} (weight {weight} of {total})",
                address_text(rrset, idx as usize)
            ));
        }
        None => steps.push(format!(
            "4. weight: no weights; all answered in rotating order: {}",
            listed(rrset, decision.result.mask)
        )),
    }
    steps
}

// ---- load balancers (SPEC §7) ---------------------------------------------------------------

/// The load balancer that answered: at the query name, at a CNAME target in the answer, or at
/// a wildcard above one of them. With its owner name for the steps.
fn find_lb<'s>(
    snapshot: &'s Snapshot,
    name: &str,
    decided: &answer::Answer<'s>,
) -> Option<(String, &'s LbSnapshot)> {
    let mut candidates: Vec<Dname> = Vec::new();
    if let Ok(qname) = Dname::parse_absolute(name.trim()) {
        candidates.push(qname);
    }
    for rr in &decided.answer {
        if rr.rrset.rtype == model::Rtype::CNAME {
            for rdata in &rr.rrset.rdatas {
                if let Some(target) = Dname::from_wire(rdata.as_wire()) {
                    candidates.push(target);
                }
            }
        }
    }
    // The last name of the chain is the one the load balancer answered for.
    for candidate in candidates.iter().rev() {
        let candidate = candidate.to_lowercase();
        let Some(zone) = snapshot
            .zones()
            .filter(|z| candidate.is_within(&z.apex))
            .max_by_key(|z| z.apex.label_count())
        else {
            continue;
        };
        if let Some(lb) = zone.node(candidate.as_wire()).and_then(|n| n.lb()) {
            return Some((candidate.to_string(), lb));
        }
        // A wildcard load balancer: `*.` and each ancestor within the zone.
        let mut parent = candidate.parent();
        while let Some(above) = parent {
            if !above.is_within(&zone.apex) {
                break;
            }
            let wildcard = [b"\x01*".as_slice(), above.as_wire()].concat();
            if let Some(lb) = zone.node(&wildcard).and_then(|n| n.lb()) {
                return Some((Dname::from_wire_unchecked(&wildcard).to_string(), lb));
            }
            parent = above.parent();
        }
    }
    None
}

fn pool_name(lb: &LbSnapshot, idx: u8) -> String {
    lb.pools
        .get(idx as usize)
        .map(|p| p.name.to_string())
        .unwrap_or_else(|| format!("pool {idx}"))
}

fn pool_names(lb: &LbSnapshot, pools: &[u8]) -> String {
    if pools.is_empty() {
        return "none".into();
    }
    pools
        .iter()
        .map(|&p| pool_name(lb, p))
        .collect::<Vec<_>>()
        .join(", ")
}

fn family(v6: bool) -> &'static str {
    if v6 { "IPv6" } else { "IPv4" }
}

/// Origins of a pool that are enabled and of the query's family, and of those the ones whose
/// check is failing: as the answer path counts them.
fn origin_masks(pool: &PoolSnapshot, v6: bool, health: &HealthTable) -> (u32, u32) {
    let mut of_type = 0u32;
    let mut failing = 0u32;
    for (idx, origin) in pool.origins.iter().enumerate().take(32) {
        if origin.enabled && origin.is_v6() == v6 {
            of_type |= 1 << idx;
            if origin.check.is_some_and(|key| health.is_failing(key)) {
                failing |= 1 << idx;
            }
        }
    }
    (of_type, failing)
}

fn origin_list(pool: &PoolSnapshot, mask: u32) -> String {
    let listed: Vec<String> = pool
        .origins
        .iter()
        .enumerate()
        .filter(|(idx, _)| *idx < 32 && mask & (1 << idx) != 0)
        .map(|(_, o)| o.address.to_string())
        .collect();
    if listed.is_empty() {
        "none".into()
    } else {
        listed.join(", ")
    }
}

/// Why a pool cannot answer, or None when it can.
fn cannot_answer(pool: &PoolSnapshot, v6: bool, health: &HealthTable) -> Option<String> {
    if !pool.enabled {
        return Some("disabled".into());
    }
    let (of_type, failing) = origin_masks(pool, v6, health);
    if of_type == 0 {
        return Some(format!("no enabled {} origin", family(v6)));
    }
    if of_type & !failing == 0 {
        return Some(format!(
            "no healthy {} origin: check failing on {}",
            family(v6),
            origin_list(pool, failing)
        ));
    }
    None
}

/// Where the rules looked for the client: the resolver's place, or the PoP's.
fn where_placed(decision: &LbDecision, pop: &Pop) -> String {
    let placed = decision
        .client
        .filter(|(_, f)| f.country.is_some() || f.continent.is_some());
    if let Some((address, found)) = placed {
        let continent = found
            .continent
            .or(found.country.and_then(|c| c.continent()));
        return match (found.country, continent) {
            (Some(country), Some(continent)) => {
                format!("client {address} is in {country} ({continent})")
            }
            (Some(country), None) => format!("client {address} is in {country}"),
            (None, Some(continent)) => format!("client {address} is in {continent}"),
            (None, None) => format!("client {address} has no place"),
        };
    }
    let mut text = match decision.client {
        Some((address, found)) => {
            format!(
                "client {address} has no place ({}), so the PoP counts: ",
                describe_place(address, &found).status
            )
        }
        None => String::new(),
    };
    let continent = pop.continent.or(pop.country.and_then(|c| c.continent()));
    let pop_name = pop
        .name
        .as_deref()
        .map(|n| format!("PoP {n}"))
        .unwrap_or_else(|| "the PoP".into());
    text.push_str(&match (pop.country, continent) {
        (Some(country), Some(continent)) => format!("{pop_name} is in {country} ({continent})"),
        (Some(country), None) => format!("{pop_name} is in {country}"),
        (None, Some(continent)) => format!("{pop_name} is in {continent}"),
        (None, None) => format!("{pop_name} has no country or continent"),
    });
    text
}

fn rule_text(lb: &LbSnapshot, idx: u8) -> String {
    match lb.rules.get(idx as usize) {
        Some(rule) => format!(
            "{}:{}={}",
            rule.matches.kind(),
            rule.matches.key(),
            rule.pools
                .iter()
                .map(|&p| pool_name(lb, p))
                .collect::<Vec<_>>()
                .join(",")
        ),
        None => format!("rule {idx}"),
    }
}

/// How the chosen pool picked its origin.
fn describe_pick(
    decision: &LbDecision,
    pool: &PoolSnapshot,
    v6: bool,
    health: &HealthTable,
) -> String {
    let Some(origin) = decision.origin.and_then(|o| pool.origins.get(o as usize)) else {
        return "no origin picked".into();
    };
    let (of_type, failing) = origin_masks(pool, v6, health);
    let healthy = of_type & !failing;
    let mut candidates = origin_list(pool, healthy);
    if failing != 0 {
        candidates.push_str(&format!(
            " (left out, check failing: {})",
            origin_list(pool, failing)
        ));
    }
    if let Some(subnet) = decision.affinity {
        let (_, prefix) = answer::lb::affinity_subnet(subnet);
        return format!(
            "affinity client-ip: subnet {subnet}/{prefix} is kept on {} (rendezvous hashing, by weight, over the healthy origins {candidates})",
            origin.address
        );
    }
    match pool.algorithm {
        Algorithm::Weighted => {
            let total: u64 = pool
                .origins
                .iter()
                .enumerate()
                .filter(|(idx, _)| *idx < 32 && healthy & (1 << idx) != 0)
                .map(|(_, o)| o.weight.max(1) as u64)
                .sum();
            format!(
                "weighted: {} at random by weight (weight {} of {total}) among the healthy origins {candidates}",
                origin.address,
                origin.weight.max(1)
            )
        }
        Algorithm::Failover => format!(
            "failover: {} has the lowest priority number ({}) among the healthy origins {candidates}",
            origin.address, origin.priority
        ),
    }
}

/// The steps of a load balancer's decision.
fn describe_lb(
    owner: &str,
    lb: &LbSnapshot,
    decision: &LbDecision,
    v6: bool,
    health: &HealthTable,
    pop: &Pop,
) -> Vec<String> {
    let mut steps = Vec::new();
    steps.push(format!(
        "load balancer {owner}: steering {}, locate by {}, affinity {}, TTL {}; pools: {}{}",
        lb.steering.as_str(),
        lb.locate_by.as_str(),
        lb.affinity.as_str(),
        lb.ttl,
        pool_names(lb, &lb.defaults),
        lb.fallback
            .map(|f| format!("; fallback {}", pool_name(lb, f)))
            .unwrap_or_default()
    ));
    if decision.stage == Stage::Disabled {
        steps.push(format!(
            "the load balancer is disabled: no {} answer",
            if v6 { "AAAA" } else { "A" }
        ));
        return steps;
    }
    let order = pool_names(lb, &decision.order);
    steps.push(match decision.ordered_by {
        OrderedBy::Listed => format!("1. order: as listed (steering off): {order}"),
        OrderedBy::Shuffled => {
            let by = if decision.affinity.is_some() {
                "shuffled by the client's subnet (random steering, affinity)"
            } else {
                "shuffled (random steering)"
            };
            format!("1. order: {by}: {order}")
        }
        OrderedBy::Rule(idx) => {
            let rule = rule_text(lb, idx);
            let matched = match lb.rules.get(idx as usize).map(|r| &r.matches) {
                Some(RuleMatch::Pop(name)) => format!("the answering PoP is {name}"),
                _ => where_placed(decision, pop),
            };
            format!("1. order: {matched}: rule {rule} matched: {order}")
        }
        OrderedBy::Defaults => format!(
            "1. order: {}: no rule matched; the default pools: {order}",
            where_placed(decision, pop)
        ),
        OrderedBy::Distance(from) => {
            let client_place = decision
                .client
                .and_then(|(address, f)| Some((address, f.coordinates?)))
                .filter(|(_, (lat, lon))| *lat == from.latitude && *lon == from.longitude);
            let source = match client_place {
                Some((address, _)) => format!("client {address}"),
                None => "the PoP".into(),
            };
            let distances: Vec<String> = decision
                .order
                .iter()
                .map(|&idx| {
                    let name = pool_name(lb, idx);
                    match lb.pools.get(idx as usize).and_then(|p| p.location) {
                        Some(at) => format!("{name} {:.0} km", from.distance_km(at)),
                        None => format!("{name} (no location, last)"),
                    }
                })
                .collect();
            format!(
                "1. order: nearest first from {source} at {:.2},{:.2}: {}",
                from.latitude,
                from.longitude,
                distances.join(", ")
            )
        }
        OrderedBy::NoPlace => format!(
            "1. order: proximity, but neither the client nor the PoP has a location: as listed: {order}"
        ),
    });
    let skipped: Vec<String> = decision
        .order
        .iter()
        .filter(|&&idx| idx < 64 && decision.skipped & (1u64 << idx) != 0)
        .filter_map(|&idx| {
            let pool = lb.pools.get(idx as usize)?;
            let why = cannot_answer(pool, v6, health).unwrap_or_else(|| "no healthy origin".into());
            Some(format!("{} ({why})", pool.name))
        })
        .collect();
    if skipped.is_empty() {
        steps.push("2. skip: no pool skipped".into());
    } else {
        steps.push(format!("2. skip: {}", skipped.join("; ")));
    }
    let pool = decision.pool.and_then(|p| lb.pools.get(p as usize));
    match (decision.stage, pool) {
        (Stage::Pool, Some(pool)) => steps.push(format!(
            "3. pool {} ({}) answers: {}",
            pool.name,
            pool.algorithm.as_str(),
            describe_pick(decision, pool, v6, health)
        )),
        (Stage::Fallback, Some(pool)) => steps.push(format!(
            "3. no pool of the order can answer; the fallback pool {} ({}) answers: {}",
            pool.name,
            pool.algorithm.as_str(),
            describe_pick(decision, pool, v6, health)
        )),
        (Stage::LastResort | Stage::NoOrigin, _) => {
            let fallback = match lb.fallback.and_then(|f| lb.pools.get(f as usize)) {
                Some(fallback) => format!(
                    "the fallback pool {} cannot either ({})",
                    fallback.name,
                    cannot_answer(fallback, v6, health)
                        .unwrap_or_else(|| "no healthy origin".into())
                ),
                None => "there is no fallback pool".into(),
            };
            steps.push(format!("3. no pool of the order can answer; {fallback}"));
            let origin = decision.chosen(lb);
            match (pool, origin) {
                (Some(pool), Some(origin)) => steps.push(format!(
                    "4. last resort: one enabled {} origin is answered anyway, at random: {} (pool {})",
                    family(v6),
                    origin.address,
                    pool.name
                )),
                _ => steps.push(format!(
                    "4. no enabled {} origin in any pool: no answer",
                    family(v6)
                )),
            }
        }
        _ => steps.push("3. no origin picked".into()),
    }
    if let Some(origin) = decision.chosen(lb) {
        steps.push(format!("answer: {} with TTL {}", origin.address, lb.ttl));
    }
    steps
}

/// Explains `name type` as asked by `client` (and the ECS option, when given).
pub fn explain(
    snapshot: &Snapshot,
    name: &str,
    rtype: &str,
    client: IpAddr,
    ecs: Option<(IpAddr, u8)>,
    random: u64,
) -> Result<api::Explain, ExplainError> {
    let qtype = model::rdata::parse_rtype(rtype).map_err(|e| bad("type", e.to_string()))?;
    let packet = build_query(name, qtype, ecs)?;
    let query =
        answer::query::parse(&packet).map_err(|_| bad("name", "the query could not be built"))?;
    let client_info = Client {
        source: client,
        random,
    };
    // TCP so that explain is never cut short by a UDP size.
    let decided = answer::answer(snapshot, &query, Transport::Tcp, &client_info);
    let mut wire = Vec::new();
    answer::encode::encode(&query, &decided, Transport::Tcp, &mut wire);
    let message = Message::from_slice(&wire).map_err(|e| bad("name", e.to_string()))?;
    let steered = decided.answer.iter().find(|r| r.rrset.steered.is_some());
    let lb = decided
        .lb
        .as_ref()
        .and_then(|decision| Some((find_lb(snapshot, name, &decided)?, decision)));
    let steps = match (steered, &decided.steering, lb) {
        (Some(rr), Some(decision), _) => describe(rr.rrset, decision),
        (_, _, Some(((owner, lb), decision))) => describe_lb(
            &owner,
            lb,
            decision,
            qtype == model::Rtype::AAAA,
            &snapshot.health,
            &snapshot.pop,
        ),
        _ => vec!["no steering: the records are answered as they are".into()],
    };
    let placed = decided
        .steering
        .as_ref()
        .and_then(|d| d.client)
        .or_else(|| decided.lb.as_ref().and_then(|d| d.client));
    Ok(api::Explain {
        query: format!("{name} {qtype}"),
        rcode: message.opt_rcode().to_string(),
        answer: message.answer().map(section_lines).unwrap_or_default(),
        authority: message.authority().map(section_lines).unwrap_or_default(),
        client: placed.map(|(address, located)| describe_place(address, &located)),
        ecs_scope: if ecs.is_some() {
            decided.ecs_scope.min(ecs.map_or(0, |e| e.1))
        } else {
            0
        },
        steps,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::lb::{Affinity, LbConfig, LocateBy, OriginConfig, PoolConfig, SteeringPolicy};
    use model::steering::Validate as _;

    fn pool(name: &str, origins: Vec<OriginConfig>) -> PoolConfig {
        PoolConfig {
            id: 0,
            name: name.into(),
            enabled: true,
            algorithm: Algorithm::Weighted,
            location: None,
            origins,
        }
    }

    fn origin(address: &str, checked: bool) -> OriginConfig {
        let check = api::CheckSpec {
            kind: "tcp".into(),
            port: Some(80),
            ..Default::default()
        };
        OriginConfig {
            id: 0,
            address: address.parse().unwrap(),
            enabled: true,
            weight: 1,
            priority: 0,
            check: checked.then(|| check.validate("").unwrap()),
        }
    }

    #[test]
    fn lb_steps_name_failing_checks_the_fallback_and_the_last_resort() {
        let main = pool("main", vec![origin("192.0.2.1", true)]);
        let spare = pool("spare", vec![origin("192.0.2.2", true)]);
        let config = LbConfig {
            id: 1,
            name: Dname::parse_absolute("www.example.com").unwrap(),
            enabled: true,
            ttl: 30,
            pools: vec!["main".into()],
            rules: Vec::new(),
            fallback: Some("spare".into()),
            steering: SteeringPolicy::Off,
            locate_by: LocateBy::Pop,
            affinity: Affinity::None,
        };
        let lb = LbSnapshot::compile(&config, &[main.clone(), spare.clone()]);
        let client = Client {
            source: "198.51.100.7".parse().unwrap(),
            random: 7,
        };
        let pop = Pop::default();
        let steps = |health: &HealthTable| {
            let decision = answer::lb::decide(&lb, false, health, &geo::NoGeo, &pop, &client, None);
            describe_lb("www.example.com.", &lb, &decision, false, health, &pop).join("\n")
        };
        let mut health = HealthTable::default();
        health.failing.insert(main.origins[0].check_key().unwrap());
        let text = steps(&health);
        for part in [
            "1. order: as listed (steering off): main",
            "2. skip: main (no healthy IPv4 origin: check failing on 192.0.2.1)",
            "the fallback pool spare (weighted) answers",
            "answer: 192.0.2.2 with TTL 30",
        ] {
            assert!(text.contains(part), "lacks {part:?}:\n{text}");
        }
        health.failing.insert(spare.origins[0].check_key().unwrap());
        let text = steps(&health);
        for part in [
            "the fallback pool spare cannot either (no healthy IPv4 origin: check failing on 192.0.2.2)",
            "4. last resort: one enabled IPv4 origin is answered anyway",
        ] {
            assert!(text.contains(part), "lacks {part:?}:\n{text}");
        }
    }
}
