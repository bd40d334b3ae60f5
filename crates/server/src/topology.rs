//! `GET /api/v1/topology`: the steering of every zone as a graph for the dashboard's map.
//! Places (countries, continents, PoPs, everywhere) lead to names (steered A/AAAA RRsets and
//! load balancers), which lead to origins (addresses, each once, with its health).
//!
//! Built from the Manager's desired state and the health the runner last reported, so it shows
//! what the snapshot answers from; it is never read by the query path.

use std::collections::{BTreeMap, BTreeSet};
use std::net::IpAddr;

use api::{Role, Topology, TopologyEdge, TopologyName, TopologyOrigin, TopologyPlace};
use axum::extract::State;
use axum::routing::get;
use axum::{Json, Router};
use model::lb::RuleMatch;
use model::{Dname, RecordConfig, Rtype, ZoneConfig};

use crate::auth::Principal;
use crate::http::{ApiResult, AppState};
use crate::manage::{Manager, ip_of};

pub fn routes() -> Router<AppState> {
    Router::new().route("/api/v1/topology", get(topology))
}

async fn topology(State(state): State<AppState>, who: Principal) -> ApiResult<Json<Topology>> {
    who.require(Role::Viewer)?;
    Ok(Json(state.manager.topology().await))
}

/// A place node; the order of the variants is the order places are listed in.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Place {
    Country(String),
    Continent(String),
    Pop(String),
    Everywhere,
}

impl Place {
    fn id(&self) -> String {
        match self {
            Place::Country(code) => format!("country:{code}"),
            Place::Continent(code) => format!("continent:{code}"),
            Place::Pop(name) => format!("pop:{name}"),
            Place::Everywhere => "everywhere".into(),
        }
    }

    fn node(&self) -> TopologyPlace {
        let (label, kind) = match self {
            Place::Country(code) => (code.clone(), "country"),
            Place::Continent(code) => (code.clone(), "continent"),
            Place::Pop(name) => (name.clone(), "pop"),
            Place::Everywhere => ("Everywhere".into(), "everywhere"),
        };
        TopologyPlace {
            id: self.id(),
            label,
            kind: kind.into(),
        }
    }
}

/// What the checks of one address said: `down` wins over `up`, `up` over `unknown`.
#[derive(Default)]
struct SeenHealth {
    up: bool,
    down: bool,
}

impl SeenHealth {
    fn add(&mut self, state: &str) {
        match state {
            "up" => self.up = true,
            "down" => self.down = true,
            _ => {}
        }
    }

    fn as_str(&self) -> &'static str {
        if self.down {
            "down"
        } else if self.up {
            "up"
        } else {
            "unknown"
        }
    }
}

#[derive(Default)]
struct Graph {
    places: BTreeSet<Place>,
    /// Keyed by (zone, kind order, label) so names sort by zone, then records before load
    /// balancers, then by name.
    names: BTreeMap<(String, u8, String), TopologyName>,
    origins: BTreeMap<IpAddr, SeenHealth>,
    edges: BTreeSet<TopologyEdge>,
}

impl Graph {
    fn place_edge(&mut self, place: Place, to: &str, label: String) {
        self.edges.insert(TopologyEdge {
            from: place.id(),
            to: to.to_string(),
            label,
        });
        self.places.insert(place);
    }

    /// An edge to the address's origin node; `state` is its check's state, when it has one.
    fn origin_edge(&mut self, from: &str, address: IpAddr, state: Option<&str>, label: String) {
        let seen = self.origins.entry(address).or_default();
        if let Some(state) = state {
            seen.add(state);
        }
        self.edges.insert(TopologyEdge {
            from: from.to_string(),
            to: origin_id(address),
            label,
        });
    }

    fn finish(self) -> Topology {
        Topology {
            places: self.places.iter().map(Place::node).collect(),
            names: self.names.into_values().collect(),
            origins: self
                .origins
                .iter()
                .map(|(address, seen)| TopologyOrigin {
                    id: origin_id(*address),
                    address: address.to_string(),
                    health: seen.as_str().into(),
                })
                .collect(),
            edges: self.edges.into_iter().collect(),
        }
    }
}

fn origin_id(address: IpAddr) -> String {
    format!("origin:{address}")
}

/// A name as people read it: no trailing dot (except the root).
fn plain(name: &Dname) -> String {
    let text = name.to_string();
    match text.strip_suffix('.') {
        Some(stripped) if !stripped.is_empty() => stripped.to_string(),
        _ => text,
    }
}

impl Manager {
    /// The current steering of every zone as a graph of places, names and origins.
    pub async fn topology(&self) -> Topology {
        let zones = self.zones.lock().await;
        let health = self.health.read().ok();
        let state_of = |key: u64| -> &'static str {
            let info = health.as_ref().and_then(|h| h.get(&key));
            match info.map(|info| info.state.as_str()) {
                Some("up") => "up",
                Some("down") => "down",
                _ => "unknown",
            }
        };
        let mut graph = Graph::default();
        for zone in zones.values() {
            add_records(&mut graph, &zone.config, &zone.steered, &state_of);
            add_load_balancers(&mut graph, &zone.config, &state_of);
        }
        graph.finish()
    }
}

/// One name node per A/AAAA RRset in which at least one record is steered.
fn add_records(
    graph: &mut Graph,
    zone: &ZoneConfig,
    records: &[RecordConfig],
    state_of: &impl Fn(u64) -> &'static str,
) {
    let mut rrsets: BTreeMap<(Dname, u16), Vec<&RecordConfig>> = BTreeMap::new();
    for record in records {
        if record.rtype == Rtype::A || record.rtype == Rtype::AAAA {
            rrsets
                .entry((record.name.to_lowercase(), record.rtype.to_int()))
                .or_default()
                .push(record);
        }
    }
    let zone_label = plain(&zone.name);
    for ((owner, _), records) in rrsets {
        if records.iter().all(|r| r.steering.is_none()) {
            continue;
        }
        let rtype = records[0].rtype;
        let id = format!("record:{owner}/{rtype}");
        let label = format!("{} {rtype}", plain(&owner));
        graph.names.insert(
            (zone_label.clone(), 0, label.clone()),
            TopologyName {
                id: id.clone(),
                label,
                kind: "record".into(),
                zone: zone_label.clone(),
            },
        );
        for record in records {
            let Some(address) = ip_of(&record.rdata) else {
                continue;
            };
            let steering = record.steering.as_ref();
            let check = steering.and_then(|s| s.check.as_ref());
            let state = check.map(|c| state_of(c.key(&record.name, &record.rdata)));
            let label = match steering {
                None => "not steered".to_string(),
                Some(s) if s.backup => "backup".to_string(),
                Some(s) => format!("weight {}", s.weight.unwrap_or(1)),
            };
            graph.origin_edge(&id, address, state, label);
            match steering.filter(|s| s.has_place()) {
                Some(s) => {
                    for country in &s.countries {
                        graph.place_edge(Place::Country(country.to_string()), &id, String::new());
                    }
                    for continent in &s.continents {
                        graph.place_edge(
                            Place::Continent(continent.to_string()),
                            &id,
                            String::new(),
                        );
                    }
                }
                // SPEC §4: a record without a place answers wherever no placed record does.
                None => graph.place_edge(Place::Everywhere, &id, String::new()),
            }
        }
    }
}

/// One name node per load balancer: its rules' places, everywhere for its default pools, and
/// the origins of every pool it names (the edge says which pool).
fn add_load_balancers(
    graph: &mut Graph,
    zone: &ZoneConfig,
    state_of: &impl Fn(u64) -> &'static str,
) {
    let zone_label = plain(&zone.name);
    for lb in &zone.load_balancers {
        let owner = lb.name.to_lowercase();
        let id = format!("lb:{owner}");
        let label = plain(&owner);
        graph.names.insert(
            (zone_label.clone(), 1, label.clone()),
            TopologyName {
                id: id.clone(),
                label,
                kind: "lb".into(),
                zone: zone_label.clone(),
            },
        );
        for rule in &lb.rules {
            let place = match &rule.matches {
                RuleMatch::Pop(name) => Place::Pop(name.clone()),
                RuleMatch::Country(country) => Place::Country(country.to_string()),
                RuleMatch::Continent(continent) => Place::Continent(continent.to_string()),
            };
            graph.place_edge(place, &id, rule.pools.join(", "));
        }
        if !lb.pools.is_empty() {
            graph.place_edge(Place::Everywhere, &id, lb.pools.join(", "));
        }
        let mut pool_names: Vec<&str> = lb.pool_refs().into_iter().map(|(_, p)| p).collect();
        pool_names.sort_unstable();
        pool_names.dedup();
        for pool in zone
            .pools
            .iter()
            .filter(|p| pool_names.contains(&p.name.as_str()))
        {
            for origin in &pool.origins {
                let state = origin.check_key().map(state_of);
                graph.origin_edge(&id, origin.address, state, pool.name.clone());
            }
        }
    }
}
