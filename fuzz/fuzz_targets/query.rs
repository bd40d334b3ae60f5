//! libFuzzer target: every input is answered over UDP and TCP from a fixed snapshot, and the
//! response must be empty (a drop) or a well-formed message of 12..=65535 bytes.

#![no_main]

use std::sync::LazyLock;

use libfuzzer_sys::fuzz_target;
use model::Snapshot;

static SNAPSHOT: LazyLock<Snapshot> = LazyLock::new(|| {
    let snapshot = dnz_fuzz::snapshot();
    dnz_fuzz::self_test(&snapshot);
    snapshot
});

fuzz_target!(|data: &[u8]| {
    let mut out = Vec::with_capacity(65535);
    dnz_fuzz::check(&SNAPSHOT, data, &mut out);
});
