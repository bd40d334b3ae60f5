//! The health runner: one task per distinct check target (identical checks are shared), each
//! probing at its interval with a jittered phase, under one concurrency bound. State changes
//! swap the answer snapshot at once, are logged, counted and kept as per-record events.
//!
//! It follows the zones: when a record's check is added, changed or removed, the matching
//! task starts or stops right away. Last known states are loaded at start, then every check
//! runs once immediately.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use health::probe::{Outcome, Prober, Target};
use health::state::{State, Tracker};
use model::snapshot::HealthTable;
use tokio::sync::Semaphore;
use tokio::task::JoinHandle;

use crate::manage::{CheckedRecord, Manager, now_secs};
use crate::metrics::Metrics;

/// Events kept per record.
const EVENTS_PER_RECORD: i64 = 200;

struct Entry {
    record_ids: Vec<i64>,
    tracker: Tracker,
    since: Option<i64>,
    task: JoinHandle<()>,
}

pub struct HealthRunner {
    manager: Arc<Manager>,
    prober: Prober,
    metrics: Arc<Metrics>,
    permits: Arc<Semaphore>,
    entries: Mutex<HashMap<u64, Entry>>,
}

/// A coarse class of a failure reason, for metric labels (reasons themselves hold hosts).
fn reason_class(reason: &str) -> &'static str {
    if reason.starts_with("timeout") {
        "timeout"
    } else if reason.starts_with("status") {
        "status"
    } else if reason.starts_with("connection refused") {
        "refused"
    } else if reason.starts_with("TLS") {
        "tls"
    } else if reason.starts_with("body") || reason.starts_with("reply does not match") {
        "body"
    } else if reason.starts_with("no reply") {
        "no_reply"
    } else if reason.starts_with("ICMP") {
        "icmp"
    } else {
        "other"
    }
}

impl HealthRunner {
    pub fn new(
        manager: Arc<Manager>,
        prober: Prober,
        metrics: Arc<Metrics>,
        concurrency: usize,
    ) -> Arc<HealthRunner> {
        Arc::new(HealthRunner {
            manager,
            prober,
            metrics,
            permits: Arc::new(Semaphore::new(concurrency.max(1))),
            entries: Mutex::new(HashMap::new()),
        })
    }

    /// Loads the last known states, starts the checks, and follows zone changes until the
    /// runtime stops.
    pub async fn start(self: &Arc<HealthRunner>) -> anyhow::Result<JoinHandle<()>> {
        let stored = self.manager.store().health_states().await?;
        let known: HashMap<u64, (State, i64, Option<String>)> = stored
            .into_iter()
            .filter_map(|s| State::parse(&s.state).map(|state| (s.key, (state, s.since, s.reason))))
            .collect();
        self.reconcile(&known).await;
        self.publish();
        let runner = self.clone();
        let mut changes = self.manager.subscribe();
        Ok(tokio::spawn(async move {
            while changes.changed().await.is_ok() {
                runner.reconcile(&HashMap::new()).await;
                runner.publish();
            }
        }))
    }

    /// Starts tasks for new targets and stops those no record names any more.
    async fn reconcile(
        self: &Arc<HealthRunner>,
        known: &HashMap<u64, (State, i64, Option<String>)>,
    ) {
        let checked = self.manager.checked_records().await;
        let mut wanted: HashMap<u64, (CheckedRecord, Vec<i64>)> = HashMap::new();
        for record in checked {
            let entry = wanted
                .entry(record.key)
                .or_insert_with(|| (record.clone(), Vec::new()));
            entry.1.push(record.record_id);
        }
        let mut removed = Vec::new();
        {
            let Ok(mut entries) = self.entries.lock() else {
                return;
            };
            entries.retain(|key, entry| {
                let keep = wanted.contains_key(key);
                if !keep {
                    entry.task.abort();
                    removed.push(*key);
                }
                keep
            });
            for (key, (record, record_ids)) in wanted {
                if let Some(entry) = entries.get_mut(&key) {
                    entry.record_ids = record_ids;
                    continue;
                }
                let target = Arc::new(Target {
                    address: record.address,
                    host: record.host,
                    config: record.check,
                });
                let (state, since) = match known.get(&key) {
                    Some((state, since, reason)) => {
                        self.manager.set_health_info(
                            key,
                            Some(api::HealthInfo {
                                state: state.as_str().into(),
                                since: Some(*since),
                                reason: reason.clone(),
                                status: None,
                                latency_ms: None,
                                checked: None,
                            }),
                        );
                        (*state, Some(*since))
                    }
                    None => (State::Unknown, None),
                };
                let task = tokio::spawn(self.clone().run_check(key, target));
                entries.insert(
                    key,
                    Entry {
                        record_ids,
                        tracker: Tracker::new(state),
                        since,
                        task,
                    },
                );
            }
        }
        for key in &removed {
            self.manager.set_health_info(*key, None);
        }
        let keys: Vec<u64> = self
            .entries
            .lock()
            .map(|e| e.keys().copied().collect())
            .unwrap_or_default();
        if !removed.is_empty()
            && let Err(e) = self.manager.store().retain_health_states(&keys).await
        {
            tracing::warn!(error = %e, "forgetting removed health checks failed");
        }
    }

    /// Publishes the failing set into the answer snapshot.
    fn publish(&self) {
        let failing: HashSet<u64, _> = self
            .entries
            .lock()
            .map(|entries| {
                entries
                    .iter()
                    .filter(|(_, e)| e.tracker.state == State::Down)
                    .map(|(k, _)| *k)
                    .collect()
            })
            .unwrap_or_default();
        self.manager.set_health(Arc::new(HealthTable { failing }));
    }

    /// One target's loop: check now, then every interval from a random phase.
    async fn run_check(self: Arc<HealthRunner>, key: u64, target: Arc<Target>) {
        let interval = Duration::from_secs(target.config.interval_secs.max(1) as u64);
        // Once right at start, then on a fixed phase spread over the interval: a fixed
        // schedule keeps the targets spread even after a stall delayed some probes.
        self.check_once(key, &target).await;
        let phase = interval
            .mul_f64(rand::random::<f64>())
            .max(Duration::from_millis(1));
        let mut ticks = tokio::time::interval_at(tokio::time::Instant::now() + phase, interval);
        ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            ticks.tick().await;
            self.check_once(key, &target).await;
        }
    }

    async fn check_once(&self, key: u64, target: &Target) {
        let outcome = {
            let Ok(_permit) = self.permits.acquire().await else {
                return;
            };
            // Boxed: the probe's state (several KiB) then lives only while a probe runs, not in
            // every target's task through its sleep.
            Box::pin(self.prober.probe(target)).await
        };
        self.observe(key, target, outcome).await;
    }

    async fn observe(&self, key: u64, target: &Target, outcome: Outcome) {
        self.metrics.health_checks.inc();
        self.metrics
            .health_latency
            .observe(outcome.latency.as_secs_f64());
        if let Some(reason) = &outcome.reason {
            self.metrics.health_failure(reason_class(reason));
        }
        let now = now_secs();
        let change = {
            let Ok(mut entries) = self.entries.lock() else {
                return;
            };
            // A target removed while its probe was in flight: drop the result.
            let Some(entry) = entries.get_mut(&key) else {
                return;
            };
            let change = entry.tracker.observe(
                outcome.healthy,
                target.config.down_after,
                target.config.up_after,
            );
            if change.is_some() {
                entry.since = Some(now);
            }
            self.manager.set_health_info(
                key,
                Some(api::HealthInfo {
                    state: entry.tracker.state.as_str().into(),
                    since: entry.since,
                    reason: outcome.reason.clone(),
                    status: outcome.status,
                    latency_ms: Some(outcome.latency.as_millis() as u64),
                    checked: Some(now),
                }),
            );
            change.map(|c| (c, entry.record_ids.clone()))
        };
        let Some(((old, new), record_ids)) = change else {
            return;
        };
        self.metrics.health_flip(new.as_str());
        let reason = outcome.reason.as_deref().unwrap_or("");
        match new {
            State::Down => tracing::warn!(
                address = %target.address, host = %target.host, kind = %target.config.kind, reason,
                "health check failing: left out of DNS answers"
            ),
            _ => tracing::info!(
                address = %target.address, host = %target.host, kind = %target.config.kind, from = %old,
                "health check passing: back in DNS answers"
            ),
        }
        if old == State::Down || new == State::Down {
            self.publish();
        }
        let stored = store::HealthChange {
            key,
            record_ids: &record_ids,
            time: now,
            old_state: old.as_str(),
            new_state: new.as_str(),
            reason: outcome.reason.as_deref(),
            status: outcome.status,
            latency_ms: Some(outcome.latency.as_millis() as i64),
        };
        if let Err(e) = self
            .manager
            .store()
            .record_health_change(&stored, EVENTS_PER_RECORD)
            .await
        {
            tracing::error!(error = %e, "storing a health state change failed");
        }
    }
}

/// Runs one check now without saving anything ("Test now").
pub async fn test_check(prober: &Prober, target: Target) -> api::CheckResult {
    let outcome = prober.probe(&target).await;
    api::CheckResult {
        healthy: outcome.healthy,
        status: outcome.status,
        latency_ms: outcome.latency.as_millis() as u64,
        reason: outcome.reason,
    }
}
