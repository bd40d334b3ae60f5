//! Golden answer scenarios: each file in `tests/scenarios/` holds a GeoIP table, a zone with
//! steered records, health overrides, a random seed, and queries with the answers expected.
//! One file is one named case; the run ends with `N passed, N failed`.
//!
//! ```text
//! geo 192.0.2.0/25 ID              # network and country (continent from the country table)
//! zone example.com                 # records until `end`: NAME TYPE VALUE [steering]
//! www A 203.0.113.10 countries=ID  # steering: countries= continents= weight= backup check=
//! end
//! down www A 192.0.2.1             # that record's check is failing
//! seed 7
//! query src=192.0.2.9 [ecs=198.51.100.0/24] [tcp] www.example.com A
//! www.example.com. 300 IN A 203.0.113.10   # expected answer lines (any order)
//! scope 24                         # expected ECS scope (required when ecs= is given)
//! rcode NXDOMAIN                   # expected rcode (default NOERROR)
//! ```
//!
//! Load balancers (SPEC §7) add, in any order after the zone:
//!
//! ```text
//! geo 198.51.100.0/24 DE 50.1,8.7  # a network with coordinates (for proximity)
//! pop fra country=DE continent=EU location=50.1,8.7   # this server's PoP
//! pool eu algorithm=failover location=50.1,8.7 [disabled]
//! origin eu 192.0.2.1 weight=2 priority=1 [check=tcp] [disabled]
//! down-origin eu 192.0.2.1         # that origin's check is failing
//! lb www pools=eu,us fallback=fb steering=geographic locate-by=resolver rule=country:DE=eu
//!        affinity=client-ip ttl=30 [disabled]      (all on one line)
//! ```

use std::collections::BTreeMap;
use std::net::IpAddr;
use std::path::Path;
use std::sync::Arc;

use answer::{Client, Transport};
use domain::base::Message;
use domain::base::iana::Rtype;
use domain::base::name::ParsedName;
use domain::rdata::AllRecordData;
use model::steering::{CheckSpec, SteeringSpec, Validate as _};
use model::{Dname, Rdata, RecordConfig, Snapshot, Soa, ZoneConfig, ZoneSnapshot};

struct Query {
    line: usize,
    source: IpAddr,
    ecs: Option<(IpAddr, u8)>,
    tcp: bool,
    name: String,
    rtype: Rtype,
    expect_answer: Vec<String>,
    expect_scope: Option<u8>,
    expect_rcode: String,
}

struct Scenario {
    geo: Vec<(String, String)>,
    /// Coordinates of `geo` networks, by network.
    geo_locations: BTreeMap<String, (f64, f64)>,
    pools: Vec<model::lb::PoolConfig>,
    lbs: Vec<model::lb::LoadBalancerSpec>,
    down_origins: Vec<(String, String)>,
    pop: model::snapshot::Pop,
    zone: Option<ZoneConfig>,
    down: Vec<(String, String, String)>,
    seed: u64,
    queries: Vec<Query>,
}

fn steering_of(options: &[&str]) -> Result<Option<model::steering::Steering>, String> {
    if options.is_empty() {
        return Ok(None);
    }
    let mut spec = SteeringSpec::default();
    for option in options {
        let (key, value) = option.split_once('=').unwrap_or((option, ""));
        let list = || value.split(',').map(str::to_string).collect::<Vec<_>>();
        match key {
            "countries" => spec.countries = list(),
            "continents" => spec.continents = list(),
            "weight" => {
                spec.weight = Some(value.parse().map_err(|_| format!("bad weight {value}"))?)
            }
            "backup" => spec.backup = true,
            "check" => {
                spec.check = Some(CheckSpec {
                    kind: value.to_string(),
                    ..Default::default()
                })
            }
            other => return Err(format!("unknown steering option {other}")),
        }
    }
    spec.validate("").map(Some).map_err(|e| format!("{e:?}"))
}

fn parse(text: &str) -> Result<Scenario, String> {
    let mut scenario = Scenario {
        geo: Vec::new(),
        geo_locations: BTreeMap::new(),
        pools: Vec::new(),
        lbs: Vec::new(),
        down_origins: Vec::new(),
        pop: model::snapshot::Pop::default(),
        zone: None,
        down: Vec::new(),
        seed: 1,
        queries: Vec::new(),
    };
    let mut lines = text.lines().enumerate().peekable();
    while let Some((idx, raw)) = lines.next() {
        let line = raw.split(" #").next().unwrap_or("").trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |msg: String| format!("line {}: {msg}", idx + 1);
        let words: Vec<&str> = line.split_whitespace().collect();
        match words[0] {
            "geo" => {
                if let Some(at_place) = words.get(3) {
                    let place = model::lb::Coordinates::parse(at_place)
                        .ok_or_else(|| at(format!("bad coordinates {at_place}")))?;
                    scenario
                        .geo_locations
                        .insert(words[1].to_string(), (place.latitude, place.longitude));
                }
                scenario
                    .geo
                    .push((words[1].to_string(), words[2].to_string()))
            }
            "pop" | "pool" | "origin" | "lb" | "down-origin" => {
                lb_directive(&mut scenario, &words).map_err(at)?
            }
            "seed" => scenario.seed = words[1].parse().map_err(|_| at("bad seed".into()))?,
            "down" => scenario
                .down
                .push((words[1].into(), words[2].into(), words[3].into())),
            "zone" => {
                let origin = Dname::parse_absolute(words[1]).map_err(|e| at(e.to_string()))?;
                let mut records = vec![RecordConfig {
                    id: 0,
                    name: origin.clone(),
                    rtype: Rtype::NS,
                    ttl: 300,
                    rdata: Rdata::parse(Rtype::NS, "ns1", &origin)
                        .map_err(|e| at(e.to_string()))?,
                    steering: None,
                }];
                for (idx, raw) in lines.by_ref() {
                    let line = raw.trim();
                    if line == "end" {
                        break;
                    }
                    let at = |msg: String| format!("line {}: {msg}", idx + 1);
                    let words: Vec<&str> = line.split_whitespace().collect();
                    let (options, value): (Vec<&str>, Vec<&str>) = words[2..]
                        .iter()
                        .partition(|w| w.contains('=') || **w == "backup");
                    let rtype =
                        model::rdata::parse_rtype(words[1]).map_err(|e| at(e.to_string()))?;
                    records.push(RecordConfig {
                        id: records.len() as i64,
                        name: Dname::parse(words[0], &origin).map_err(|e| at(e.to_string()))?,
                        rtype,
                        ttl: 300,
                        rdata: Rdata::parse(rtype, &value.join(" "), &origin)
                            .map_err(|e| at(e.to_string()))?,
                        steering: steering_of(&options).map_err(at)?.map(Box::new),
                    });
                }
                let zone = ZoneConfig {
                    id: 1,
                    soa: Soa::default_for(&origin, 1),
                    name: origin,
                    default_ttl: 300,
                    records,
                    pools: Vec::new(),
                    load_balancers: Vec::new(),
                };
                let errors = zone.validate(&|_| String::new());
                if !errors.is_empty() {
                    return Err(format!("zone does not validate: {errors:?}"));
                }
                scenario.zone = Some(zone);
            }
            "query" => {
                let mut query = Query {
                    line: idx + 1,
                    source: "0.0.0.0".parse().unwrap(),
                    ecs: None,
                    tcp: false,
                    name: String::new(),
                    rtype: Rtype::A,
                    expect_answer: Vec::new(),
                    expect_scope: None,
                    expect_rcode: "NOERROR".into(),
                };
                let mut rest = Vec::new();
                for word in &words[1..] {
                    if let Some(src) = word.strip_prefix("src=") {
                        query.source = src.parse().map_err(|_| at(format!("bad src {src}")))?;
                    } else if let Some(ecs) = word.strip_prefix("ecs=") {
                        let (addr, prefix) = ecs
                            .split_once('/')
                            .ok_or_else(|| at("ecs needs /prefix".into()))?;
                        query.ecs = Some((
                            addr.parse().map_err(|_| at("bad ecs".into()))?,
                            prefix.parse().map_err(|_| at("bad ecs".into()))?,
                        ));
                    } else if *word == "tcp" {
                        query.tcp = true;
                    } else {
                        rest.push(*word);
                    }
                }
                query.name = rest
                    .first()
                    .ok_or_else(|| at("query needs a name".into()))?
                    .to_string();
                query.rtype = rest
                    .get(1)
                    .map_or(Ok(Rtype::A), |t| model::rdata::parse_rtype(t))
                    .map_err(|e| at(e.to_string()))?;
                while let Some((_, next)) = lines.peek() {
                    let next = next.trim();
                    if next.is_empty() || next.starts_with("query") || next.starts_with('#') {
                        break;
                    }
                    let (_, next) = lines.next().unwrap_or_default();
                    let next = next.trim();
                    if let Some(scope) = next.strip_prefix("scope ") {
                        query.expect_scope =
                            Some(scope.parse().map_err(|_| at("bad scope".into()))?);
                    } else if let Some(rcode) = next.strip_prefix("rcode ") {
                        query.expect_rcode = rcode.to_string();
                    } else {
                        query
                            .expect_answer
                            .push(next.split_whitespace().collect::<Vec<_>>().join(" "));
                    }
                }
                if query.ecs.is_some() && query.expect_scope.is_none() {
                    return Err(at("a query with ecs= needs a `scope N` line".into()));
                }
                scenario.queries.push(query);
            }
            other => return Err(at(format!("unknown directive {other}"))),
        }
    }
    Ok(scenario)
}

/// The load balancer directives: `pop`, `pool`, `origin`, `down-origin`, `lb`.
fn lb_directive(scenario: &mut Scenario, words: &[&str]) -> Result<(), String> {
    use model::lb::{Coordinates, LbRuleSpec, LoadBalancerSpec, OriginSpec};
    let name = words.get(1).ok_or("a name is needed")?.to_string();
    let options = |from: usize| -> Vec<(&str, &str)> {
        words[from.min(words.len())..]
            .iter()
            .map(|w| w.split_once('=').unwrap_or((w, "")))
            .collect()
    };
    let place = |text: &str| Coordinates::parse(text).ok_or(format!("bad location {text}"));
    match words[0] {
        "pop" => {
            scenario.pop.name = Some(name.into_boxed_str());
            for (key, value) in options(2) {
                match key {
                    "country" => scenario.pop.country = geo::Country::parse(value),
                    "continent" => scenario.pop.continent = geo::Continent::parse(value),
                    "location" => scenario.pop.location = Some(place(value)?),
                    other => return Err(format!("unknown pop option {other}")),
                }
            }
        }
        "pool" => {
            let mut spec = model::lb::PoolSpec {
                name,
                ..Default::default()
            };
            for (key, value) in options(2) {
                match key {
                    "algorithm" => spec.algorithm = Some(value.into()),
                    "location" => spec.location = Some(place(value)?.to_api()),
                    "disabled" => spec.enabled = Some(false),
                    other => return Err(format!("unknown pool option {other}")),
                }
            }
            scenario
                .pools
                .push(spec.validate("").map_err(|e| format!("{e:?}"))?);
        }
        "origin" => {
            let address = words.get(2).ok_or("origin POOL ADDRESS")?.to_string();
            let mut spec = OriginSpec {
                address,
                ..Default::default()
            };
            for (key, value) in options(3) {
                let number = || value.parse::<i64>().map_err(|_| format!("bad {key}"));
                match key {
                    "weight" => spec.weight = Some(number()?),
                    "priority" => spec.priority = Some(number()?),
                    "disabled" => spec.enabled = Some(false),
                    "check" => {
                        spec.check = steering_of(&[&format!("check={value}")])?
                            .and_then(|s| s.check)
                            .map(|c| c.to_spec())
                    }
                    other => return Err(format!("unknown origin option {other}")),
                }
            }
            let origin = spec.validate("").map_err(|e| format!("{e:?}"))?;
            let pool = scenario
                .pools
                .iter_mut()
                .find(|p| p.name == name)
                .ok_or(format!("no pool {name}"))?;
            pool.origins.push(origin);
        }
        "down-origin" => {
            let address = words.get(2).ok_or("down-origin POOL ADDRESS")?;
            scenario.down_origins.push((name, address.to_string()));
        }
        _ => {
            let mut spec = LoadBalancerSpec {
                name,
                ..Default::default()
            };
            let list = |value: &str| value.split(',').map(str::to_string).collect::<Vec<_>>();
            for (key, value) in options(2) {
                match key {
                    "pools" => spec.pools = list(value),
                    "fallback" => spec.fallback = Some(value.into()),
                    "steering" => spec.steering = Some(value.into()),
                    "locate-by" => spec.locate_by = Some(value.into()),
                    "affinity" => spec.affinity = Some(value.into()),
                    "ttl" => spec.ttl = Some(value.parse().map_err(|_| "bad ttl")?),
                    "disabled" => spec.enabled = Some(false),
                    "rule" => {
                        // rule=country:DE=eu,us
                        let (matcher, pools) =
                            value.split_once('=').ok_or("rule=KIND:KEY=POOLS")?;
                        let (kind, key) = matcher.split_once(':').ok_or("rule=KIND:KEY=POOLS")?;
                        spec.rules.push(LbRuleSpec {
                            kind: kind.into(),
                            key: key.into(),
                            pools: list(pools),
                        });
                    }
                    other => return Err(format!("unknown lb option {other}")),
                }
            }
            scenario.lbs.push(spec);
        }
    }
    Ok(())
}

fn geo_database(
    places: &[(String, String)],
    locations: &BTreeMap<String, (f64, f64)>,
) -> Result<Arc<dyn geo::Locate>, String> {
    if places.is_empty() {
        return Ok(Arc::new(geo::NoGeo));
    }
    use mmdb_writer::{Value, Writer};
    let mut writer = Writer::builder("Scenario-Country")
        .description(&[("en", "scenario fixture")])
        .build();
    for (network, country) in places {
        let continent = geo::Country::parse(country)
            .and_then(|c| c.continent())
            .ok_or(format!("unknown country {country}"))?;
        let mut record = BTreeMap::from([
            (
                "country".to_string(),
                Value::map([("iso_code", Value::from(country.as_str()))]),
            ),
            (
                "continent".to_string(),
                Value::map([("code", Value::from(continent.code()))]),
            ),
        ]);
        if let Some((latitude, longitude)) = locations.get(network) {
            record.insert(
                "location".to_string(),
                Value::map([
                    ("latitude", Value::Double(*latitude)),
                    ("longitude", Value::Double(*longitude)),
                ]),
            );
        }
        let record = Value::Map(record);
        writer
            .insert_value(
                network
                    .parse::<mmdb_writer::ipnet::IpNet>()
                    .map_err(|e| e.to_string())?,
                record,
            )
            .map_err(|e| e.to_string())?;
    }
    let db = geo::GeoDb::from_bytes(writer.to_bytes().map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    Ok(Arc::new(db))
}

fn build_packet(query: &Query) -> Vec<u8> {
    let name: domain::base::Name<Vec<u8>> = query.name.parse().expect("query name");
    let mut packet = vec![0x12, 0x34, 0, 0, 0, 1, 0, 0, 0, 0, 0, 1];
    packet.extend_from_slice(name.as_slice());
    packet.extend_from_slice(&query.rtype.to_int().to_be_bytes());
    packet.extend_from_slice(&[0, 1]);
    let mut options = Vec::new();
    if let Some((address, prefix)) = query.ecs {
        let (family, bytes) = match address {
            IpAddr::V4(a) => (1u16, a.octets().to_vec()),
            IpAddr::V6(a) => (2u16, a.octets().to_vec()),
        };
        let n = (prefix as usize).div_ceil(8);
        options.extend_from_slice(&8u16.to_be_bytes());
        options.extend_from_slice(&((4 + n) as u16).to_be_bytes());
        options.extend_from_slice(&family.to_be_bytes());
        options.extend_from_slice(&[prefix, 0]);
        options.extend_from_slice(&bytes[..n]);
    }
    packet.extend_from_slice(&[0, 0, 41, 0x04, 0xd0, 0, 0, 0, 0]);
    packet.extend_from_slice(&(options.len() as u16).to_be_bytes());
    packet.extend_from_slice(&options);
    packet
}

/// Reads the answer section and the ECS scope from a response.
fn read_response(wire: &[u8]) -> (String, Vec<String>, Option<u8>) {
    let message = Message::from_slice(wire).expect("response parses");
    let mut answer = Vec::new();
    for record in message.answer().expect("answer section").flatten() {
        if let Ok(Some(r)) = record.to_record::<AllRecordData<&[u8], ParsedName<&[u8]>>>() {
            answer.push(format!(
                "{}. {} IN {} {}",
                r.owner(),
                r.ttl().as_secs(),
                r.rtype(),
                r.data()
            ));
        }
    }
    let mut scope = None;
    for record in message.additional().expect("additional section").flatten() {
        if record.rtype() != Rtype::OPT {
            continue;
        }
        let Ok(Some(opt)) = record.to_record::<domain::base::rdata::UnknownRecordData<&[u8]>>()
        else {
            continue;
        };
        // Option 8 (ECS): family(2) source(1) scope(1) address.
        let mut rest: &[u8] = opt.data().data();
        while rest.len() >= 4 {
            let code = u16::from_be_bytes([rest[0], rest[1]]);
            let len = u16::from_be_bytes([rest[2], rest[3]]) as usize;
            if code == 8 && len >= 4 {
                scope = Some(rest[7]);
            }
            rest = rest.get(4 + len..).unwrap_or_default();
        }
    }
    (message.opt_rcode().to_string(), answer, scope)
}

fn xorshift(state: &mut u64) -> u64 {
    *state ^= *state << 13;
    *state ^= *state >> 7;
    *state ^= *state << 17;
    *state
}

fn run(path: &Path) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let scenario = parse(&text)?;
    let zone = scenario.zone.as_ref().ok_or("no zone")?;
    let mut health = model::snapshot::HealthTable::default();
    for (name, rtype, value) in &scenario.down {
        let owner = Dname::parse(name, &zone.name).map_err(|e| e.to_string())?;
        let record = zone
            .records
            .iter()
            .find(|r| {
                r.name == owner
                    && r.rtype.to_string() == *rtype
                    && r.rdata.to_text(r.rtype) == *value
            })
            .ok_or(format!("down: no record {name} {rtype} {value}"))?;
        let check = record
            .steering
            .as_ref()
            .and_then(|s| s.check.as_ref())
            .ok_or(format!("down: {name} {value} has no check"))?;
        health
            .failing
            .insert(check.key(&record.name, &record.rdata));
    }
    let mut zone = zone.clone();
    zone.pools = scenario.pools.clone();
    for spec in &scenario.lbs {
        let lb = model::lb::validate_lb(spec, &zone.name).map_err(|e| format!("{e:?}"))?;
        zone.load_balancers.push(lb);
    }
    let problems = model::lb::check_zone(&zone);
    if !problems.is_empty() {
        return Err(format!("load balancers do not validate: {problems:?}"));
    }
    for (pool_name, address) in &scenario.down_origins {
        let key = zone
            .pools
            .iter()
            .filter(|p| p.name == *pool_name)
            .flat_map(|p| &p.origins)
            .find(|o| o.address.to_string() == *address)
            .and_then(|o| o.check_key())
            .ok_or(format!(
                "down-origin: {pool_name} has no checked origin {address}"
            ))?;
        health.failing.insert(key);
    }
    let snapshot = Snapshot::empty()
        .with_zone(Arc::new(ZoneSnapshot::compile(&zone)))
        .with_geo(geo_database(&scenario.geo, &scenario.geo_locations)?)
        .with_health(Arc::new(health))
        .with_pop(Arc::new(scenario.pop.clone()));
    let mut random = scenario.seed.max(1);
    let mut out = Vec::new();
    let mut failures = Vec::new();
    for query in &scenario.queries {
        let client = Client {
            source: query.source,
            random: xorshift(&mut random),
        };
        let transport = if query.tcp {
            Transport::Tcp
        } else {
            Transport::Udp
        };
        answer::respond_to(
            &snapshot,
            &build_packet(query),
            transport,
            &client,
            &mut out,
        );
        let (rcode, mut got, scope) = read_response(&out);
        got.sort();
        let mut want = query.expect_answer.clone();
        want.sort();
        if rcode != query.expect_rcode
            || got != want
            || (query.expect_scope.is_some() && scope != query.expect_scope)
        {
            failures.push(format!(
                "  line {}: query {} {}\n    want rcode {} scope {:?} answer {want:?}\n    got  rcode {rcode} scope {scope:?} answer {got:?}",
                query.line, query.name, query.rtype, query.expect_rcode, query.expect_scope
            ));
        }
    }
    if failures.is_empty() {
        Ok(())
    } else {
        Err(failures.join("\n"))
    }
}

fn main() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scenarios");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("tests/scenarios")
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|e| e == "scenario"))
        .collect();
    files.sort();
    let filter = std::env::args().skip(1).find(|a| !a.starts_with('-'));
    let (mut passed, mut failed) = (0, 0);
    for file in files {
        let name = file
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .to_string();
        if filter.as_ref().is_some_and(|f| !name.contains(f.as_str())) {
            continue;
        }
        match run(&file) {
            Ok(()) => {
                passed += 1;
                println!("scenario {name} ... ok");
            }
            Err(why) => {
                failed += 1;
                println!("scenario {name} ... FAILED\n{why}");
            }
        }
    }
    println!("{passed} passed, {failed} failed");
    if failed > 0 || passed == 0 {
        std::process::exit(1);
    }
}
