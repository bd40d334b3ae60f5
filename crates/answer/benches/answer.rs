//! The query path on its own: parse + answer + encode through [`answer::respond`] for a few
//! kinds of query against the benchmark zone (`bench/zones/bench.test.zone`), timed with
//! criterion, plus heap allocations per query counted by a wrapping global allocator.
//!
//! `cargo bench -p answer --bench answer` (criterion's filters work: `-- nxdomain`).
//! The data plane promises no heap allocation per query (ARCHITECTURE.md); the first lines
//! printed are that check, `allocs/query` per case, which should all be 0.

// `GlobalAlloc` can only be implemented with `unsafe impl`; the counter below only counts and
// forwards every call to `System` unchanged, so the workspace's `unsafe_code = "deny"` is
// lifted for this benchmark file alone.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::hint::black_box;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use answer::{Outcome, Transport, rcode, respond};
use criterion::{Criterion, Throughput};
use model::snapshot::ZoneSnapshot;
use model::{Dname, Snapshot};

/// Counts every allocation (and reallocation) made through it, then hands it to `System`.
struct CountingAllocator;

static ALLOCATIONS: AtomicU64 = AtomicU64::new(0);
/// The size of the latest allocation, to say what allocated when the count is not 0.
static LAST_SIZE: AtomicU64 = AtomicU64::new(0);

fn counted(layout: Layout) {
    ALLOCATIONS.fetch_add(1, Ordering::Relaxed);
    LAST_SIZE.store(layout.size() as u64, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        counted(layout);
        // SAFETY: the caller's contract for `alloc` is passed on unchanged.
        unsafe { System.alloc(layout) }
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        counted(layout);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: `new_size` with `layout`'s alignment is the layout being asked for; the
        // caller guarantees it is valid.
        counted(unsafe { Layout::from_size_align_unchecked(new_size, layout.align()) });
        // SAFETY: the caller's contract for `realloc` is passed on unchanged.
        unsafe { System.realloc(ptr, layout, new_size) }
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract for `dealloc` is passed on unchanged.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static GLOBAL: CountingAllocator = CountingAllocator;

/// The zone the load test serves, so both benchmarks answer from the same data.
const ZONE: &str = include_str!("../../../bench/zones/bench.test.zone");

/// EDNS Client Subnet (option 8) for 198.51.100.0/24: family 1, source 24, scope 0, 3 bytes.
const ECS: [u8; 11] = [0, 8, 0, 7, 0, 1, 24, 0, 198, 51, 100];

fn snapshot() -> Snapshot {
    let origin = Dname::parse_absolute("bench.test").expect("origin");
    let parsed = model::zonefile::parse(ZONE, &origin, 3600).expect("the bench zone parses");
    let mut zone = parsed.into_zone(origin).expect("the bench zone has an SOA");
    zone.records.extend(steered_records(&zone.name));
    let errors = zone.validate(&|_| String::new());
    assert!(errors.is_empty(), "the bench zone is invalid: {errors:?}");
    // The demo GeoIP database places 198.51.100.0/24 in DE (EU): steered answers do a real
    // .mmdb lookup.
    let geo = geo::GeoDb::from_bytes(geo::demo::database()).expect("the demo database opens");
    Snapshot::empty()
        .with_zone(Arc::new(ZoneSnapshot::compile(&zone)))
        .with_geo(Arc::new(geo))
}

/// `geo` steered by country, continent and default; `canary` by weight 9:1 (as bench/steered).
fn steered_records(origin: &Dname) -> Vec<model::RecordConfig> {
    use model::steering::{SteeringSpec, Validate as _};
    let record = |name: &str, address: &str, spec: SteeringSpec| model::RecordConfig {
        id: 0,
        name: Dname::parse(name, origin).expect("name"),
        rtype: model::Rtype::A,
        ttl: 300,
        rdata: model::Rdata::parse(model::Rtype::A, address, origin).expect("address"),
        steering: Some(Box::new(spec.validate("").expect("steering"))),
    };
    let countries = |c: &str| SteeringSpec {
        countries: vec![c.into()],
        ..Default::default()
    };
    let continents = |c: &str| SteeringSpec {
        continents: vec![c.into()],
        ..Default::default()
    };
    let weight = |w: i64| SteeringSpec {
        weight: Some(w),
        ..Default::default()
    };
    vec![
        record("geo", "203.0.113.10", countries("ID")),
        record("geo", "198.51.100.20", continents("EU")),
        record("geo", "192.0.2.30", SteeringSpec::default()),
        record("canary", "192.0.2.1", weight(9)),
        record("canary", "192.0.2.2", weight(1)),
    ]
}

/// A query as a stub sends it: RD set, one question, optionally an OPT (size 1232) with options.
fn query(name: &str, qtype: u16, edns: Option<&[u8]>) -> Vec<u8> {
    let mut p = vec![
        0x12,
        0x34,
        0x01,
        0x00,
        0,
        1,
        0,
        0,
        0,
        0,
        0,
        u8::from(edns.is_some()),
    ];
    p.extend_from_slice(Dname::parse_absolute(name).expect("name").as_wire());
    p.extend_from_slice(&qtype.to_be_bytes());
    p.extend_from_slice(&1u16.to_be_bytes());
    if let Some(options) = edns {
        p.extend_from_slice(&[0, 0, 41]); // root owner, type OPT
        p.extend_from_slice(&1232u16.to_be_bytes()); // requestor's UDP payload size
        p.extend_from_slice(&[0, 0, 0, 0]); // extended rcode, version 0, no DO
        p.extend_from_slice(&(options.len() as u16).to_be_bytes());
        p.extend_from_slice(options);
    }
    p
}

struct Case {
    name: &'static str,
    packet: Vec<u8>,
    rcode: u16,
}

const A: u16 = 1;

fn cases() -> Vec<Case> {
    vec![
        Case {
            name: "static_a",
            packet: query("www.bench.test", A, None),
            rcode: rcode::NOERROR,
        },
        Case {
            name: "nxdomain",
            packet: query("nope.bench.test", A, None),
            rcode: rcode::NXDOMAIN,
        },
        Case {
            name: "cname_chain",
            packet: query("alias.bench.test", A, None),
            rcode: rcode::NOERROR,
        },
        Case {
            name: "edns",
            packet: query("www.bench.test", A, Some(&[])),
            rcode: rcode::NOERROR,
        },
        Case {
            name: "edns_ecs",
            packet: query("www.bench.test", A, Some(&ECS)),
            rcode: rcode::NOERROR,
        },
        Case {
            name: "steered_geo_ecs",
            packet: query("geo.bench.test", A, Some(&ECS)),
            rcode: rcode::NOERROR,
        },
        Case {
            name: "steered_geo_no_place",
            packet: query("geo.bench.test", A, None),
            rcode: rcode::NOERROR,
        },
        Case {
            name: "steered_weighted",
            packet: query("canary.bench.test", A, None),
            rcode: rcode::NOERROR,
        },
    ]
}

/// Answers every case once and checks the outcome, so the benchmark measures real answers.
fn check(snapshot: &Snapshot, cases: &[Case], out: &mut Vec<u8>) {
    for case in cases {
        match respond(snapshot, &case.packet, Transport::Udp, out) {
            Outcome::Respond {
                rcode, truncated, ..
            } => {
                assert_eq!(rcode, case.rcode, "{}: unexpected rcode", case.name);
                assert!(!truncated, "{}: truncated", case.name);
                assert!(out.len() > case.packet.len(), "{}: short answer", case.name);
            }
            Outcome::Drop => panic!("{}: dropped", case.name),
        }
    }
}

/// Allocations per query for each case, after a warm-up, with the output buffer reused the way
/// a UDP worker reuses it.
fn count_allocations(snapshot: &Snapshot, cases: &[Case], out: &mut Vec<u8>) -> bool {
    const WARM_UP: u64 = 1_000;
    const QUERIES: u64 = 100_000;
    // The counter must see allocations at all, or every 0 below would mean nothing.
    let before = ALLOCATIONS.load(Ordering::Relaxed);
    drop(black_box(Box::new(0u64)));
    assert!(
        ALLOCATIONS.load(Ordering::Relaxed) > before,
        "the counting allocator is not in use"
    );
    let mut all_zero = true;
    println!("heap allocations per query ({QUERIES} queries per case after {WARM_UP} warm-up):");
    for case in cases {
        for _ in 0..WARM_UP {
            black_box(respond(
                snapshot,
                black_box(&case.packet),
                Transport::Udp,
                out,
            ));
        }
        let before = ALLOCATIONS.load(Ordering::Relaxed);
        for _ in 0..QUERIES {
            black_box(respond(
                snapshot,
                black_box(&case.packet),
                Transport::Udp,
                out,
            ));
        }
        let allocations = ALLOCATIONS.load(Ordering::Relaxed) - before;
        let per_query = allocations as f64 / QUERIES as f64;
        if allocations == 0 {
            println!("  {:<12} allocs/query {per_query}", case.name);
        } else {
            all_zero = false;
            println!(
                "  {:<12} allocs/query {per_query} NOT ZERO ({allocations} in all; the last was {} bytes)",
                case.name,
                LAST_SIZE.load(Ordering::Relaxed)
            );
        }
    }
    all_zero
}

fn main() {
    let snapshot = snapshot();
    let cases = cases();
    // A UDP worker's response buffer: allocated once, reused for every packet.
    let mut out = Vec::with_capacity(65535);
    check(&snapshot, &cases, &mut out);
    if !count_allocations(&snapshot, &cases, &mut out) {
        println!("the query path allocated: see the cases marked NOT ZERO");
    }

    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("respond");
    group.throughput(Throughput::Elements(1));
    for case in &cases {
        group.bench_function(case.name, |b| {
            b.iter(|| respond(&snapshot, black_box(&case.packet), Transport::Udp, &mut out))
        });
    }
    group.finish();
    criterion.final_summary();
}
