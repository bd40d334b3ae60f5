//! Memory per record: a zone of `RECORDS` A records (one name each, as `bench/scale` makes it)
//! parsed from a zone file, validated and compiled into the answer snapshot, with the live heap
//! bytes counted by a wrapping global allocator after each step. The scale target is about
//! the whole server's RSS; this shows which structure holds what.
//!
//! `cargo bench -p answer --bench memory` (`RECORDS=1000000` for the full size).

// `GlobalAlloc` can only be implemented with `unsafe impl`; the counter forwards every call to
// `System` unchanged.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicI64, Ordering};
use std::time::Instant;

use model::Dname;
use model::snapshot::ZoneSnapshot;

struct Counting;

static LIVE: AtomicI64 = AtomicI64::new(0);
static BLOCKS: AtomicI64 = AtomicI64::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        BLOCKS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: the caller's contract is passed on unchanged.
        unsafe { System.alloc(layout) }
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        LIVE.fetch_add(layout.size() as i64, Ordering::Relaxed);
        BLOCKS.fetch_add(1, Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.alloc_zeroed(layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        LIVE.fetch_add(new_size as i64 - layout.size() as i64, Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Ordering::Relaxed);
        BLOCKS.fetch_sub(1, Ordering::Relaxed);
        // SAFETY: as for `alloc`.
        unsafe { System.dealloc(ptr, layout) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

fn live() -> (i64, i64) {
    (LIVE.load(Ordering::Relaxed), BLOCKS.load(Ordering::Relaxed))
}

fn main() {
    let records: usize = std::env::var("RECORDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let mut text = String::with_capacity(records * 32 + 200);
    text.push_str("$ORIGIN scale.test.\n$TTL 3600\n@ SOA ns1 hostmaster 1 7200 3600 1209600 3600\n@ NS ns1\nns1 A 192.0.2.1\n");
    for i in 0..records {
        use std::fmt::Write;
        let _ = writeln!(
            text,
            "h{i} A 10.{}.{}.{}",
            (i >> 16) & 255,
            (i >> 8) & 255,
            i & 255
        );
    }
    let apex = Dname::parse_absolute("scale.test.").expect("apex");
    let report = |what: &str, before: (i64, i64), after: (i64, i64), took: f64| {
        let bytes = after.0 - before.0;
        let blocks = after.1 - before.1;
        println!(
            "{what:<34} {:>9.1} MiB  {:>6.1} B/record  {:>5.2} blocks/record  {took:>6.2} s",
            bytes as f64 / 1048576.0,
            bytes as f64 / records as f64,
            blocks as f64 / records as f64,
        );
    };
    println!("{records} A records, one name each");
    println!(
        "sizes: RecordConfig {} B, NodeData {} B, Rrset {} B, Rdata {} B, Dname {} B",
        size_of::<model::zone::RecordConfig>(),
        size_of::<model::snapshot::NodeData>(),
        size_of::<model::snapshot::Rrset>(),
        size_of::<model::Rdata>(),
        size_of::<Dname>(),
    );
    let base = live();
    let start = Instant::now();
    let parsed = model::zonefile::parse(&text, &apex, 3600).expect("zone file");
    let config = parsed.into_zone(apex.clone()).expect("SOA");
    drop(text);
    let after_config = live();
    report(
        "ZoneConfig (records as parsed)",
        base,
        after_config,
        start.elapsed().as_secs_f64(),
    );
    let start = Instant::now();
    let problems = config.validate(&|i| format!("records[{i}]"));
    assert!(problems.is_empty(), "{problems:?}");
    println!("validate: {:.2} s", start.elapsed().as_secs_f64());
    let start = Instant::now();
    let snapshot = ZoneSnapshot::compile(&config);
    let after_snapshot = live();
    report(
        "ZoneSnapshot (answer path)",
        after_config,
        after_snapshot,
        start.elapsed().as_secs_f64(),
    );
    report(
        "both (while a change holds the records)",
        base,
        after_snapshot,
        0.0,
    );
    std::hint::black_box(&snapshot);
    drop(config);
}
