//! `dnz explain`: runs a query through the same `answer` function the DNS workers use, then
//! describes each steering step of the decision it returned.

use std::net::IpAddr;

use answer::{Client, Decision, PlaceRule, Transport};
use domain::base::Message;
use domain::base::iana::Rtype;
use domain::base::name::ParsedName;
use domain::rdata::AllRecordData;
use model::Snapshot;
use model::snapshot::Rrset;

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
    let steps = match (steered, &decided.steering) {
        (Some(rr), Some(decision)) => describe(rr.rrset, decision),
        _ => vec!["no steering: the records are answered as they are".into()],
    };
    let placed = decided.steering.as_ref().and_then(|d| d.client);
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
