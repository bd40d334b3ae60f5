//! The rise/fall state machine of one checked target (SPEC §5): `unknown` until the first
//! result, `down` after `down_after` failures in a row, `up` after `up_after` passes in a row.
//! Pure: results in, state changes out.

use std::fmt;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum State {
    /// No result yet; counts as healthy.
    Unknown,
    Up,
    Down,
}

impl State {
    pub fn as_str(self) -> &'static str {
        match self {
            State::Unknown => "unknown",
            State::Up => "up",
            State::Down => "down",
        }
    }

    pub fn parse(text: &str) -> Option<State> {
        match text {
            "unknown" => Some(State::Unknown),
            "up" => Some(State::Up),
            "down" => Some(State::Down),
            _ => None,
        }
    }
}

impl fmt::Display for State {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Consecutive results of one target.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tracker {
    pub state: State,
    passes: u8,
    failures: u8,
}

impl Tracker {
    pub fn new(state: State) -> Tracker {
        Tracker {
            state,
            passes: 0,
            failures: 0,
        }
    }

    /// Takes one result; returns `(old, new)` when the state changes.
    ///
    /// From `unknown` one pass is enough to be `up` (the target was already counted as
    /// healthy); going `down` always takes `down_after` failures in a row, so one lost probe at
    /// start cannot pull a name out of DNS.
    pub fn observe(
        &mut self,
        healthy: bool,
        down_after: u8,
        up_after: u8,
    ) -> Option<(State, State)> {
        if healthy {
            self.passes = self.passes.saturating_add(1);
            self.failures = 0;
        } else {
            self.failures = self.failures.saturating_add(1);
            self.passes = 0;
        }
        let next = match self.state {
            State::Unknown if healthy => State::Up,
            State::Unknown | State::Up if self.failures >= down_after.max(1) => State::Down,
            State::Down if self.passes >= up_after.max(1) => State::Up,
            current => current,
        };
        if next == self.state {
            return None;
        }
        let old = self.state;
        self.state = next;
        Some((old, next))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(start: State, results: &str, down_after: u8, up_after: u8) -> Vec<String> {
        let mut tracker = Tracker::new(start);
        results
            .chars()
            .enumerate()
            .filter_map(|(i, c)| {
                tracker
                    .observe(c == '+', down_after, up_after)
                    .map(|(a, b)| format!("{i}:{a}->{b}"))
            })
            .collect()
    }

    #[test]
    fn down_after_three_failures_up_after_two_passes() {
        assert_eq!(
            run(State::Unknown, "+--+---++", 3, 2),
            ["0:unknown->up", "6:up->down", "8:down->up"]
        );
        // A single failure between passes never flips.
        assert!(run(State::Up, "+-+-+-+-", 3, 2).is_empty());
        // From unknown, failures need the full count too.
        assert_eq!(run(State::Unknown, "--", 3, 2), Vec::<String>::new());
        assert_eq!(run(State::Unknown, "---", 3, 2), ["2:unknown->down"]);
        // A persisted down state needs up_after passes.
        assert_eq!(run(State::Down, "+-++", 3, 2), ["3:down->up"]);
    }

    #[test]
    fn thresholds_of_one() {
        assert_eq!(run(State::Up, "-+", 1, 1), ["0:up->down", "1:down->up"]);
    }
}
