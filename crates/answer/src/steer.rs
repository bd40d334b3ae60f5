//! Steering an A or AAAA RRset (SPEC §4): health, backup, place, weight — in that order, as
//! bit masks over the RRset's records, with no allocation.
//!
//! The result is a [`Decision`]: the hot path uses only its final mask and rotation, `dnz
//! explain` prints every step of it. There is one implementation for both.

use std::net::IpAddr;

use geo::{Continent, Country, Located};
use model::snapshot::{HealthTable, Steered};

use crate::query::Ecs;

/// Which records of an RRset go into the answer, and where the rotation starts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pick {
    pub mask: u64,
    pub rotate: u8,
}

impl Pick {
    pub const ALL: Pick = Pick {
        mask: u64::MAX,
        rotate: 0,
    };
}

/// Which place rule chose the records (step 3).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PlaceRule {
    /// The RRset has no place rules: place was not looked at.
    NotUsed,
    Country(Country),
    Continent(Continent),
    /// No record for the client's country or continent: the records without a place.
    Defaults,
    /// No defaults either: every record left.
    All,
}

/// Every step of one steering decision, as masks over the RRset's records.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Decision {
    pub n_records: u8,
    /// Records whose check is failing.
    pub failing: u64,
    /// Every record failed its check, so all are answered (fail-open).
    pub fail_open: bool,
    pub after_health: u64,
    /// Backup records left out because a non-backup record is left.
    pub backups_dropped: u64,
    pub after_backup: u64,
    /// The address that was placed (ECS address or the packet's source), and where it is.
    pub client: Option<(IpAddr, Located)>,
    pub place_rule: PlaceRule,
    pub after_place: u64,
    /// A weighted pick happened: `pick` is the record chosen.
    pub weighted: bool,
    pub pick: Option<u8>,
    pub result: Pick,
}

/// The client as steering sees it.
#[derive(Clone, Copy, Debug)]
pub struct Client {
    /// The packet's source address.
    pub source: IpAddr,
    /// A fresh random number for this query (the caller's generator: tests fix the seed).
    pub random: u64,
}

/// The address that decides: the ECS address when the query has one (RFC 7871 §7.1.1).
pub fn deciding_address(client: &Client, ecs: Option<&Ecs>) -> IpAddr {
    match ecs {
        Some(ecs) if ecs.family == 1 => {
            IpAddr::from(<[u8; 4]>::try_from(&ecs.address[..4]).unwrap_or_default())
        }
        Some(ecs) if ecs.family == 2 => IpAddr::from(ecs.address),
        _ => client.source,
    }
}

fn mask_of(n: usize) -> u64 {
    if n >= 64 { u64::MAX } else { (1u64 << n) - 1 }
}

/// Runs the four steps over `steered`'s members.
pub fn decide(
    steered: &Steered,
    health: &HealthTable,
    locate: &dyn geo::Locate,
    client: &Client,
    ecs: Option<&Ecs>,
) -> Decision {
    let members = &steered.members[..steered.members.len().min(64)];
    let all = mask_of(members.len());
    // 1. Health: leave out failing records, unless that leaves nothing.
    let mut failing = 0u64;
    for (idx, member) in members.iter().enumerate() {
        if member.check.is_some_and(|key| health.is_failing(key)) {
            failing |= 1 << idx;
        }
    }
    let fail_open = failing == all;
    let after_health = if fail_open { all } else { all & !failing };
    // 2. Backup: only while no non-backup record is left.
    let mut backups = 0u64;
    for (idx, member) in members.iter().enumerate() {
        if member.backup {
            backups |= 1 << idx;
        }
    }
    let has_primary = after_health & !backups != 0;
    let backups_dropped = if has_primary {
        after_health & backups
    } else {
        0
    };
    let after_backup = after_health & !backups_dropped;
    // 3. Place: country, else continent, else defaults, else all.
    let mut client_place = None;
    let (place_rule, after_place) = if steered.has_place {
        let address = deciding_address(client, ecs);
        let located = locate.locate(address);
        client_place = Some((address, located));
        let select = |pred: &dyn Fn(&model::snapshot::SteeredMember) -> bool| -> u64 {
            members
                .iter()
                .enumerate()
                .filter(|(idx, m)| after_backup & (1 << idx) != 0 && pred(m))
                .fold(0, |m, (i, _)| m | 1 << i)
        };
        let by_country = located
            .country
            .map_or(0, |c| select(&|m| m.countries.contains(&c)));
        let by_continent = located
            .continent
            .map_or(0, |c| select(&|m| m.continents & (1 << c.index()) != 0));
        let defaults = select(&|m| !m.has_place());
        if let (true, Some(country)) = (by_country != 0, located.country) {
            (PlaceRule::Country(country), by_country)
        } else if let (true, Some(continent)) = (by_continent != 0, located.continent) {
            (PlaceRule::Continent(continent), by_continent)
        } else if defaults != 0 {
            (PlaceRule::Defaults, defaults)
        } else {
            (PlaceRule::All, after_backup)
        }
    } else {
        (PlaceRule::NotUsed, after_backup)
    };
    // 4. Weight: one record at random in proportion to weight, or all in rotating order.
    let candidates = || {
        members
            .iter()
            .enumerate()
            .filter(|(idx, _)| after_place & (1 << idx) != 0)
    };
    let n_candidates = after_place.count_ones() as u64;
    let weighted = steered.has_weight && candidates().any(|(_, m)| m.weight.is_some());
    let (pick, result) = if weighted && n_candidates > 0 {
        let weight_of = |m: &model::snapshot::SteeredMember| m.weight.unwrap_or(1) as u64;
        let total: u64 = candidates().map(|(_, m)| weight_of(m)).sum();
        let chosen = if total == 0 {
            // All zero: any of them, evenly.
            candidates()
                .nth((client.random % n_candidates) as usize)
                .map(|(i, _)| i)
        } else {
            let mut point = client.random % total;
            candidates()
                .find(|(_, m)| {
                    let w = weight_of(m);
                    if point < w {
                        true
                    } else {
                        point -= w;
                        false
                    }
                })
                .map(|(i, _)| i)
        };
        let idx = chosen.unwrap_or(0);
        (
            Some(idx as u8),
            Pick {
                mask: 1 << idx,
                rotate: 0,
            },
        )
    } else {
        let rotate = if n_candidates > 1 {
            (client.random % n_candidates) as u8
        } else {
            0
        };
        (
            None,
            Pick {
                mask: after_place,
                rotate,
            },
        )
    };
    Decision {
        n_records: members.len() as u8,
        failing,
        fail_open,
        after_health,
        backups_dropped,
        after_backup,
        client: client_place,
        place_rule,
        after_place,
        weighted,
        pick,
        result,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use model::snapshot::SteeredMember;

    fn weighted(weights: &[Option<u32>]) -> Steered {
        Steered {
            members: weights
                .iter()
                .map(|w| SteeredMember {
                    weight: *w,
                    ..Default::default()
                })
                .collect(),
            has_place: false,
            has_weight: true,
        }
    }

    /// Counts the picks of `n` decisions with a fixed-seed xorshift.
    fn picks(steered: &Steered, n: usize) -> Vec<usize> {
        let mut counts = vec![0; steered.members.len()];
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for _ in 0..n {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            let client = Client {
                source: IpAddr::from([192, 0, 2, 1]),
                random: state,
            };
            let decision = decide(steered, &HealthTable::default(), &geo::NoGeo, &client, None);
            counts[decision.pick.expect("a weighted pick") as usize] += 1;
        }
        counts
    }

    #[test]
    fn canary_nine_to_one_lands_within_two_percent() {
        let counts = picks(&weighted(&[Some(9), Some(1)]), 10_000);
        let share = counts[0] as f64 / 10_000.0;
        assert!((share - 0.9).abs() <= 0.02, "9:1 gave {counts:?}");
    }

    #[test]
    fn three_weights_and_absent_weight_counts_as_one() {
        let counts = picks(&weighted(&[Some(5), Some(3), None, Some(0)]), 10_000);
        for (idx, want) in [(0, 5.0 / 9.0), (1, 3.0 / 9.0), (2, 1.0 / 9.0)] {
            let share = counts[idx] as f64 / 10_000.0;
            assert!(
                (share - want).abs() <= 0.02,
                "record {idx}: {share} vs {want} in {counts:?}"
            );
        }
        assert_eq!(
            counts[3], 0,
            "weight 0 never answers while others have weight"
        );
    }

    #[test]
    fn rotation_starts_everywhere() {
        let steered = Steered {
            members: vec![
                SteeredMember::default(),
                SteeredMember::default(),
                SteeredMember::default(),
            ],
            has_place: false,
            has_weight: false,
        };
        let mut seen = [0; 3];
        for random in 0..30u64 {
            let client = Client {
                source: IpAddr::from([192, 0, 2, 1]),
                random,
            };
            let decision = decide(
                &steered,
                &HealthTable::default(),
                &geo::NoGeo,
                &client,
                None,
            );
            assert_eq!(decision.result.mask, 0b111);
            seen[decision.result.rotate as usize] += 1;
        }
        assert_eq!(seen, [10, 10, 10]);
    }
}
