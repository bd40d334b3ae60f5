//! Answering A and AAAA for a name that a load balancer owns (SPEC §7): order the pools by the
//! steering policy, skip disabled pools and pools with no healthy origin of the query's type,
//! let the first pool left pick one origin (weighted random, failover, or rendezvous hashing of
//! the client subnet for session affinity), then the fallback pool, then any enabled origin.
//!
//! Masks over pools (`u64`, at most 50) and origins (`u32`, at most 20) and fixed arrays: no
//! heap allocation. `dnz explain` prints the same [`LbDecision`] the hot path uses.

use std::net::IpAddr;

use arrayvec::ArrayVec;
use geo::Located;
use model::lb::{
    Affinity, Algorithm, Coordinates, LbSnapshot, LocateBy, OriginSnapshot, PoolSnapshot,
    RuleMatch, SteeringPolicy,
};
use model::snapshot::{HealthTable, Pop};

use crate::query::Ecs;
use crate::steer::{Client, deciding_address};

/// Pool indexes in the order steering gave them.
pub type PoolOrder = ArrayVec<u8, 64>;

/// How the pools were ordered (step 1).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum OrderedBy {
    /// As listed (`off`).
    Listed,
    /// Shuffled (`random`).
    Shuffled,
    /// The pools of rule `n` (`geographic`).
    Rule(u8),
    /// No rule matched: the defaults (`geographic`).
    Defaults,
    /// Nearest first from these coordinates (`proximity`).
    Distance(Coordinates),
    /// `proximity` without a place for the client: as listed.
    NoPlace,
}

/// Which stage answered (steps 3 and 4).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    /// The load balancer is disabled: no A/AAAA answer.
    Disabled,
    /// A pool of the steering order answered.
    Pool,
    /// No pool of the order could; the fallback pool answered.
    Fallback,
    /// Neither could: one enabled origin of the type anyway.
    LastResort,
    /// No enabled origin of the query's type exists: NODATA.
    NoOrigin,
}

/// Every step of one load balancer decision.
#[derive(Clone, Debug, PartialEq)]
pub struct LbDecision {
    pub order: PoolOrder,
    pub ordered_by: OrderedBy,
    /// The place GeoIP gave the deciding address, when it was asked (locate by resolver).
    pub client: Option<(IpAddr, Located)>,
    /// Pools of the order passed over (disabled, or no healthy origin of the type).
    pub skipped: u64,
    pub stage: Stage,
    pub pool: Option<u8>,
    pub origin: Option<u8>,
    /// The origin was chosen by rendezvous hashing of this client subnet.
    pub affinity: Option<IpAddr>,
    pub ecs_scope: u8,
}

impl LbDecision {
    /// The origin answered, if any.
    pub fn chosen<'a>(&self, lb: &'a LbSnapshot) -> Option<&'a OriginSnapshot> {
        let pool = lb.pools.get(self.pool? as usize)?;
        pool.origins.get(self.origin? as usize)
    }
}

/// SplitMix64's finaliser: a well-mixed 64-bit value from any input.
fn mix(mut z: u64) -> u64 {
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn address_bytes(address: IpAddr) -> ([u8; 16], usize) {
    match address {
        IpAddr::V4(v4) => {
            let mut out = [0u8; 16];
            out[..4].copy_from_slice(&v4.octets());
            (out, 4)
        }
        IpAddr::V6(v6) => (v6.octets(), 16),
    }
}

/// A stable hash of (client subnet, origin address): the same pair scores the same in every
/// process and every snapshot.
fn pair_hash(subnet: IpAddr, origin: IpAddr) -> u64 {
    let mut hash = 0xcbf2_9ce4_8422_2325u64;
    for address in [subnet, origin] {
        let (bytes, len) = address_bytes(address);
        for b in &bytes[..len] {
            hash = (hash ^ *b as u64).wrapping_mul(0x0100_0000_01b3);
        }
        hash = mix(hash);
    }
    hash
}

/// The affinity key of a client: its address cut to /24 (IPv4) or /56 (IPv6), as resolvers
/// send ECS.
pub fn affinity_subnet(address: IpAddr) -> (IpAddr, u8) {
    match address {
        IpAddr::V4(v4) => {
            let o = v4.octets();
            (IpAddr::from([o[0], o[1], o[2], 0]), 24)
        }
        IpAddr::V6(v6) => {
            let mut o = v6.octets();
            o[7..].fill(0);
            (IpAddr::from(o), 56)
        }
    }
}

/// Weighted rendezvous hashing: each candidate scores `-ln(u) / weight` with `u` uniform in
/// (0, 1] from the (subnet, origin) hash; the lowest score wins. A candidate wins with
/// probability weight / total, and removing one moves only the clients it had.
fn rendezvous(pool: &PoolSnapshot, mask: u32, subnet: IpAddr) -> Option<u8> {
    let mut best: Option<(f64, u8)> = None;
    for (idx, origin) in pool.origins.iter().enumerate() {
        if mask & (1 << idx) == 0 {
            continue;
        }
        let u = ((pair_hash(subnet, origin.address) >> 11) + 1) as f64 / (1u64 << 53) as f64;
        let score = -u.ln() / origin.weight.max(1) as f64;
        if best.is_none_or(|(s, _)| score < s) {
            best = Some((score, idx as u8));
        }
    }
    best.map(|(_, idx)| idx)
}

/// One origin of `mask` at random in proportion to weight.
fn weighted_random(pool: &PoolSnapshot, mask: u32, random: u64) -> Option<u8> {
    let members = || {
        pool.origins
            .iter()
            .enumerate()
            .filter(move |(idx, _)| mask & (1 << idx) != 0)
    };
    let total: u64 = members().map(|(_, o)| o.weight.max(1) as u64).sum();
    if total == 0 {
        return None;
    }
    let mut point = random % total;
    for (idx, origin) in members() {
        let weight = origin.weight.max(1) as u64;
        if point < weight {
            return Some(idx as u8);
        }
        point -= weight;
    }
    None
}

/// Origins of a pool that are enabled and of the query's address family.
fn of_type(pool: &PoolSnapshot, v6: bool) -> u32 {
    pool.origins
        .iter()
        .enumerate()
        .filter(|(_, o)| o.enabled && o.is_v6() == v6)
        .fold(0, |mask, (idx, _)| mask | 1 << idx)
}

/// Of those, the ones whose check is not failing (unknown and unchecked count as healthy).
fn healthy(pool: &PoolSnapshot, v6: bool, health: &HealthTable) -> u32 {
    let candidates = of_type(pool, v6);
    pool.origins
        .iter()
        .enumerate()
        .filter(|(idx, o)| {
            candidates & (1 << idx) != 0 && !o.check.is_some_and(|key| health.is_failing(key))
        })
        .fold(0, |mask, (idx, _)| mask | 1 << idx)
}

/// Step 3: the pool picks one of its healthy origins.
fn pick(pool: &PoolSnapshot, mask: u32, random: u64, subnet: Option<IpAddr>) -> Option<u8> {
    if let Some(subnet) = subnet {
        // Affinity spreads clients over every healthy origin, in a failover pool too.
        return rendezvous(pool, mask, subnet);
    }
    match pool.algorithm {
        Algorithm::Weighted => weighted_random(pool, mask, random),
        Algorithm::Failover => {
            let lowest = pool
                .origins
                .iter()
                .enumerate()
                .filter(|(idx, _)| mask & (1 << idx) != 0)
                .map(|(_, o)| o.priority)
                .min()?;
            let ties = pool
                .origins
                .iter()
                .enumerate()
                .filter(|(idx, o)| mask & (1 << idx) != 0 && o.priority == lowest)
                .fold(0u32, |m, (idx, _)| m | 1 << idx);
            weighted_random(pool, ties, random)
        }
    }
}

/// Step 1: the pools in steering order.
fn order(
    lb: &LbSnapshot,
    pop: &Pop,
    locate: &dyn geo::Locate,
    address: IpAddr,
    random: u64,
    decision: &mut LbDecision,
) {
    let mut defaults: PoolOrder = lb.defaults.iter().copied().take(64).collect();
    // Locating by resolver asks GeoIP once; an address it does not place falls back to the PoP.
    let mut located = || {
        if lb.locate_by != LocateBy::Resolver {
            return None;
        }
        let found = locate.locate(address);
        decision.client = Some((address, found));
        decision.ecs_scope = found.prefix_len;
        Some(found)
    };
    match lb.steering {
        SteeringPolicy::Off => {
            decision.ordered_by = OrderedBy::Listed;
        }
        SteeringPolicy::Random => {
            // Fisher–Yates with fresh bits per swap.
            let mut bits = random;
            for idx in (1..defaults.len()).rev() {
                bits = mix(bits);
                defaults.swap(idx, (bits % (idx as u64 + 1)) as usize);
            }
            decision.ordered_by = OrderedBy::Shuffled;
        }
        SteeringPolicy::Geographic => {
            let by_pop = pop.name.as_deref().and_then(|name| {
                lb.rules
                    .iter()
                    .position(|r| matches!(&r.matches, RuleMatch::Pop(p) if p == name))
            });
            let rule = by_pop.or_else(|| {
                // A resolver GeoIP does not place counts as the PoP, as a whole.
                let placed = located().filter(|f| f.country.is_some() || f.continent.is_some());
                let (country, continent) = match placed {
                    Some(f) => (
                        f.country,
                        f.continent.or(f.country.and_then(|c| c.continent())),
                    ),
                    None => (
                        pop.country,
                        pop.continent.or(pop.country.and_then(|c| c.continent())),
                    ),
                };
                country
                    .and_then(|c| {
                        lb.rules
                            .iter()
                            .position(|r| r.matches == RuleMatch::Country(c))
                    })
                    .or_else(|| {
                        continent.and_then(|c| {
                            lb.rules
                                .iter()
                                .position(|r| r.matches == RuleMatch::Continent(c))
                        })
                    })
            });
            match rule {
                Some(idx) => {
                    defaults = lb.rules[idx].pools.iter().copied().take(64).collect();
                    decision.ordered_by = OrderedBy::Rule(idx as u8);
                }
                None => decision.ordered_by = OrderedBy::Defaults,
            }
        }
        SteeringPolicy::Proximity => {
            let from = located().and_then(|f| {
                f.coordinates
                    .and_then(|(lat, lon)| Coordinates::new(lat, lon))
            });
            match from.or(pop.location) {
                Some(from) => {
                    let mut distance = [f64::INFINITY; 64];
                    for (slot, &pool_idx) in defaults.iter().enumerate() {
                        if let Some(at) = lb.pools.get(pool_idx as usize).and_then(|p| p.location) {
                            distance[slot] = from.distance_km(at);
                        }
                    }
                    // Insertion sort, stable: equal distances (and pools without a location,
                    // all infinitely far) keep their listed order.
                    for end in 1..defaults.len() {
                        let mut at = end;
                        while at > 0 && distance[at - 1] > distance[at] {
                            distance.swap(at - 1, at);
                            defaults.swap(at - 1, at);
                            at -= 1;
                        }
                    }
                    decision.ordered_by = OrderedBy::Distance(from);
                }
                None => decision.ordered_by = OrderedBy::NoPlace,
            }
        }
    }
    decision.order = defaults;
}

/// Decides the answer of load balancer `lb` to an A (`v6` false) or AAAA query.
pub fn decide(
    lb: &LbSnapshot,
    v6: bool,
    health: &HealthTable,
    locate: &dyn geo::Locate,
    pop: &Pop,
    client: &Client,
    ecs: Option<&Ecs>,
) -> LbDecision {
    let mut decision = LbDecision {
        order: PoolOrder::new(),
        ordered_by: OrderedBy::Listed,
        client: None,
        skipped: 0,
        stage: Stage::Disabled,
        pool: None,
        origin: None,
        affinity: None,
        ecs_scope: 0,
    };
    if !lb.enabled {
        return decision;
    }
    let address = deciding_address(client, ecs);
    let subnet = (lb.affinity == Affinity::ClientIp).then(|| affinity_subnet(address));
    decision.affinity = subnet.map(|(s, _)| s);
    if let Some((_, prefix)) = subnet
        && ecs.is_some()
    {
        // The origin depends on the client's subnet: resolvers must cache it for that only.
        decision.ecs_scope = decision.ecs_scope.max(prefix);
    }
    // With affinity the same subnet must see the same order too (`random` steering).
    let random = match subnet {
        Some((subnet, _)) => pair_hash(subnet, subnet),
        None => client.random,
    };
    let scope_before = decision.ecs_scope;
    order(lb, pop, locate, address, random, &mut decision);
    decision.ecs_scope = decision.ecs_scope.max(scope_before);
    let pick_random = mix(random ^ 0x5851_f42d_4c95_7f2d);
    // Steps 2 and 3.
    for &pool_idx in &decision.order {
        let Some(pool) = lb.pools.get(pool_idx as usize) else {
            continue;
        };
        let mask = if pool.enabled {
            healthy(pool, v6, health)
        } else {
            0
        };
        if mask == 0 {
            decision.skipped |= 1 << pool_idx;
            continue;
        }
        decision.stage = Stage::Pool;
        decision.pool = Some(pool_idx);
        decision.origin = pick(pool, mask, pick_random, decision.affinity);
        return decision;
    }
    // Step 4: the fallback pool, then any enabled origin of the type.
    if let Some(pool_idx) = lb.fallback
        && let Some(pool) = lb.pools.get(pool_idx as usize)
    {
        let mask = healthy(pool, v6, health);
        if pool.enabled && mask != 0 {
            decision.stage = Stage::Fallback;
            decision.pool = Some(pool_idx);
            decision.origin = pick(pool, mask, pick_random, decision.affinity);
            return decision;
        }
    }
    let n_enabled: u32 = lb.pools.iter().map(|p| of_type(p, v6).count_ones()).sum();
    if n_enabled == 0 {
        decision.stage = Stage::NoOrigin;
        return decision;
    }
    let mut nth = (pick_random % n_enabled as u64) as u32;
    for (pool_idx, pool) in lb.pools.iter().enumerate() {
        let mask = of_type(pool, v6);
        if nth < mask.count_ones() {
            let origin = (0..32).filter(|i| mask & (1 << i) != 0).nth(nth as usize);
            decision.stage = Stage::LastResort;
            decision.pool = Some(pool_idx as u8);
            decision.origin = origin.map(|o| o as u8);
            return decision;
        }
        nth -= mask.count_ones();
    }
    decision.stage = Stage::NoOrigin;
    decision
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::lb::{LbConfig, OriginConfig, PoolConfig};

    fn pool(name: &str, algorithm: Algorithm, origins: &[(&str, u32, u32)]) -> PoolConfig {
        PoolConfig {
            id: 0,
            name: name.into(),
            enabled: true,
            algorithm,
            location: None,
            origins: origins
                .iter()
                .map(|(address, weight, priority)| OriginConfig {
                    id: 0,
                    address: address.parse().unwrap(),
                    enabled: true,
                    weight: *weight,
                    priority: *priority,
                    check: None,
                })
                .collect(),
        }
    }

    fn lb(pools: &[PoolConfig], affinity: Affinity) -> LbSnapshot {
        let config = LbConfig {
            id: 0,
            name: model::Dname::parse_absolute("www.example.com").unwrap(),
            enabled: true,
            ttl: 30,
            pools: pools.iter().map(|p| p.name.clone()).collect(),
            rules: Vec::new(),
            fallback: None,
            steering: SteeringPolicy::Off,
            locate_by: LocateBy::Pop,
            affinity,
        };
        LbSnapshot::compile(&config, pools)
    }

    fn origin_for(lb: &LbSnapshot, source: IpAddr, random: u64, health: &HealthTable) -> IpAddr {
        let client = Client { source, random };
        let decision = decide(
            lb,
            false,
            health,
            &geo::NoGeo,
            &Pop::default(),
            &client,
            None,
        );
        decision.chosen(lb).expect("an origin").address
    }

    fn subnet(n: u32) -> IpAddr {
        // Spread over the whole space, one /24 each.
        let x = mix(n as u64) as u32;
        IpAddr::from((x & 0xffff_ff00).to_be_bytes())
    }

    #[test]
    fn affinity_keeps_one_subnet_on_one_origin() {
        let lb = lb(
            &[pool(
                "web",
                Algorithm::Weighted,
                &[
                    ("192.0.2.1", 1, 0),
                    ("192.0.2.2", 1, 0),
                    ("192.0.2.3", 1, 0),
                ],
            )],
            Affinity::ClientIp,
        );
        let health = HealthTable::default();
        let first = origin_for(&lb, "198.51.100.7".parse().unwrap(), 0, &health);
        for n in 0..1000u64 {
            // Other hosts of the same /24, other random numbers: always the same origin.
            let source = IpAddr::from([198, 51, 100, (n % 256) as u8]);
            assert_eq!(origin_for(&lb, source, mix(n), &health), first);
        }
    }

    #[test]
    fn affinity_shares_follow_weights_within_three_points() {
        let weights = [1u32, 2, 3, 4];
        let lb = lb(
            &[pool(
                "web",
                Algorithm::Weighted,
                &[
                    ("192.0.2.1", 1, 0),
                    ("192.0.2.2", 2, 0),
                    ("192.0.2.3", 3, 0),
                    ("192.0.2.4", 4, 0),
                ],
            )],
            Affinity::ClientIp,
        );
        let health = HealthTable::default();
        let mut counts = [0u32; 4];
        for n in 0..10_000 {
            let IpAddr::V4(v4) = origin_for(&lb, subnet(n), 0, &health) else {
                panic!("v4 expected");
            };
            counts[v4.octets()[3] as usize - 1] += 1;
        }
        for (idx, weight) in weights.iter().enumerate() {
            let share = counts[idx] as f64 / 10_000.0;
            let want = *weight as f64 / 10.0;
            assert!(
                (share - want).abs() <= 0.03,
                "origin {idx}: {share} vs {want} in {counts:?}"
            );
        }
    }

    #[test]
    fn a_failed_origin_moves_only_its_own_clients() {
        let origins: Vec<(String, u32, u32)> =
            (1..=5).map(|i| (format!("192.0.2.{i}"), 1, 0)).collect();
        let refs: Vec<(&str, u32, u32)> = origins
            .iter()
            .map(|(a, w, p)| (a.as_str(), *w, *p))
            .collect();
        let mut web = pool("web", Algorithm::Failover, &refs);
        // Give the third origin a check, then fail it.
        web.origins[2].check = Some(
            model::steering::CheckSpec {
                kind: "tcp".into(),
                port: None,
                host: None,
                path: None,
                method: None,
                status: None,
                body: None,
                payload: None,
                interval: None,
                timeout: None,
                down_after: None,
                up_after: None,
            }
            .validate("")
            .unwrap(),
        );
        let failed_key = web.origins[2].check_key().unwrap();
        let failed: IpAddr = "192.0.2.3".parse().unwrap();
        let lb = lb(&[web], Affinity::ClientIp);
        let up = HealthTable::default();
        let mut down = HealthTable::default();
        down.failing.insert(failed_key);
        let (mut moved, mut on_failed) = (0, 0);
        for n in 0..10_000 {
            let before = origin_for(&lb, subnet(n), 0, &up);
            let after = origin_for(&lb, subnet(n), 0, &down);
            if before == failed {
                on_failed += 1;
            }
            if before != after {
                moved += 1;
                assert_eq!(before, failed, "only clients of the failed origin move");
            }
            assert_ne!(after, failed);
        }
        assert_eq!(moved, on_failed);
        let share = moved as f64 / 10_000.0;
        assert!(
            (share - 0.2).abs() <= 0.03,
            "{share} moved, about 1/5 wanted"
        );
    }

    #[test]
    fn failover_takes_the_lowest_priority_then_weight() {
        let lb = lb(
            &[pool(
                "web",
                Algorithm::Failover,
                &[
                    ("192.0.2.1", 1, 2),
                    ("192.0.2.2", 1, 1),
                    ("192.0.2.3", 100, 3),
                ],
            )],
            Affinity::None,
        );
        let health = HealthTable::default();
        for n in 0..100 {
            assert_eq!(
                origin_for(&lb, "192.0.2.9".parse().unwrap(), mix(n), &health),
                "192.0.2.2".parse::<IpAddr>().unwrap()
            );
        }
    }

    use model::steering::Validate as _;
}
