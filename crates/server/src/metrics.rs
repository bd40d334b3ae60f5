//! Prometheus metrics. Per-query counters are created once at start and indexed by array, so
//! counting a query is one atomic add with no lookup or lock.

use answer::Reason;
use prometheus_client::encoding::EncodeLabelSet;
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::Histogram;
use prometheus_client::registry::Registry;

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct RcodeLabels {
    rcode: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct ReasonLabels {
    reason: &'static str,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct TransportLabels {
    transport: &'static str,
}

const RCODES: [(u16, &str); 8] = [
    (0, "NOERROR"),
    (1, "FORMERR"),
    (2, "SERVFAIL"),
    (3, "NXDOMAIN"),
    (4, "NOTIMP"),
    (5, "REFUSED"),
    (16, "BADVERS"),
    (u16::MAX, "OTHER"),
];

const REASONS: [Reason; 11] = [
    Reason::Answer,
    Reason::Cname,
    Reason::NoData,
    Reason::NxDomain,
    Reason::Referral,
    Reason::NotOurs,
    Reason::Refused,
    Reason::AnyOverUdp,
    Reason::Malformed,
    Reason::NotImplemented,
    Reason::BadVersion,
];

pub struct Metrics {
    pub registry: Registry,
    by_rcode: Vec<Counter>,
    by_reason: Vec<Counter>,
    pub udp_queries: Counter,
    pub tcp_queries: Counter,
    /// UDP queries taken by an XDP socket rather than the kernel's UDP sockets.
    pub xdp_queries: Counter,
    pub dropped: Counter,
    pub truncated: Counter,
    pub tcp_refused: Counter,
    pub tcp_open: Gauge,
    pub snapshot_swaps: Counter,
    pub zones: Gauge,
    /// Zones the last start read from their saved images instead of compiling them.
    pub zones_from_images: Gauge,
    /// When the GeoIP database in use was built (its metadata), so its age can be alerted on.
    pub geoip_build_epoch: Gauge,
    pub health_checks: Counter,
    pub health_latency: Histogram,
    health_failures: Family<ReasonLabels, Counter>,
    health_flips: Family<StateLabels, Counter>,
}

#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
struct StateLabels {
    state: &'static str,
}

impl Metrics {
    pub fn new() -> Metrics {
        let mut registry = Registry::with_prefix("dnz");
        let rcode_family = Family::<RcodeLabels, Counter>::default();
        let by_rcode = RCODES
            .iter()
            .map(|(_, name)| {
                rcode_family
                    .get_or_create(&RcodeLabels { rcode: name })
                    .clone()
            })
            .collect();
        registry.register(
            "queries_by_rcode",
            "DNS responses by response code",
            rcode_family,
        );
        let reason_family = Family::<ReasonLabels, Counter>::default();
        let by_reason = REASONS
            .iter()
            .map(|reason| {
                reason_family
                    .get_or_create(&ReasonLabels {
                        reason: reason.as_str(),
                    })
                    .clone()
            })
            .collect();
        registry.register(
            "queries_by_reason",
            "DNS responses by why they are what they are",
            reason_family,
        );
        let transport_family = Family::<TransportLabels, Counter>::default();
        let udp_queries = transport_family
            .get_or_create(&TransportLabels { transport: "udp" })
            .clone();
        let tcp_queries = transport_family
            .get_or_create(&TransportLabels { transport: "tcp" })
            .clone();
        let xdp_queries = transport_family
            .get_or_create(&TransportLabels { transport: "xdp" })
            .clone();
        registry.register("queries", "DNS queries received", transport_family);
        let dropped = Counter::default();
        registry.register(
            "queries_dropped",
            "Packets dropped unanswered (no readable header, or a response)",
            dropped.clone(),
        );
        let truncated = Counter::default();
        registry.register(
            "responses_truncated",
            "UDP responses sent with TC=1",
            truncated.clone(),
        );
        let tcp_refused = Counter::default();
        registry.register(
            "tcp_connections_refused",
            "TCP connections closed at once: the cap was reached",
            tcp_refused.clone(),
        );
        let tcp_open = Gauge::default();
        registry.register(
            "tcp_connections_open",
            "DNS TCP connections open now",
            tcp_open.clone(),
        );
        let snapshot_swaps = Counter::default();
        registry.register(
            "snapshot_swaps",
            "Answer snapshots swapped in after a change",
            snapshot_swaps.clone(),
        );
        let zones = Gauge::default();
        registry.register("zones", "Zones served", zones.clone());
        let zones_from_images = Gauge::default();
        registry.register(
            "zones_from_images",
            "Zones the last start read from saved images instead of compiling them",
            zones_from_images.clone(),
        );
        let health_checks = Counter::default();
        registry.register("health_checks", "Health checks run", health_checks.clone());
        let health_latency = Histogram::new([
            0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
        ]);
        registry.register(
            "health_check_latency_seconds",
            "Health check latency",
            health_latency.clone(),
        );
        let health_failures = Family::<ReasonLabels, Counter>::default();
        registry.register(
            "health_check_failures",
            "Failed health checks by reason",
            health_failures.clone(),
        );
        let health_flips = Family::<StateLabels, Counter>::default();
        registry.register(
            "health_state_changes",
            "Health state changes by the new state",
            health_flips.clone(),
        );
        let geoip_build_epoch = Gauge::default();
        registry.register(
            "geoip_build_epoch_seconds",
            "Build time of the GeoIP database in use, Unix seconds (0: none)",
            geoip_build_epoch.clone(),
        );
        Metrics {
            geoip_build_epoch,
            health_checks,
            health_latency,
            health_failures,
            health_flips,
            registry,
            by_rcode,
            by_reason,
            udp_queries,
            tcp_queries,
            xdp_queries,
            dropped,
            truncated,
            tcp_refused,
            tcp_open,
            snapshot_swaps,
            zones,
            zones_from_images,
        }
    }

    /// Counts one answered query.
    pub fn count(&self, outcome: answer::Outcome) {
        match outcome {
            answer::Outcome::Drop => {
                self.dropped.inc();
            }
            answer::Outcome::Respond {
                rcode,
                reason,
                truncated,
            } => {
                let rcode_idx = RCODES
                    .iter()
                    .position(|(code, _)| *code == rcode)
                    .unwrap_or(RCODES.len() - 1);
                self.by_rcode[rcode_idx].inc();
                if let Some(idx) = REASONS.iter().position(|r| *r == reason) {
                    self.by_reason[idx].inc();
                }
                if truncated {
                    self.truncated.inc();
                }
            }
        }
    }

    pub fn health_failure(&self, class: &'static str) {
        self.health_failures
            .get_or_create(&ReasonLabels { reason: class })
            .inc();
    }

    pub fn health_flip(&self, state: &'static str) {
        self.health_flips
            .get_or_create(&StateLabels { state })
            .inc();
    }

    pub fn render(&self) -> String {
        let mut out = String::new();
        if prometheus_client::encoding::text::encode(&mut out, &self.registry).is_err() {
            out.clear();
        }
        out
    }
}

impl Default for Metrics {
    fn default() -> Self {
        Metrics::new()
    }
}
