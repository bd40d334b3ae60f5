//! libFuzzer target: every input, as (lossy) UTF-8 text, is parsed as a zone file for
//! example.com.; each record parsed must print and parse back to the same data, and a zone that
//! validates answers a fixed set of queries over UDP and TCP through the query target's check.

#![no_main]

use std::sync::Once;

use libfuzzer_sys::fuzz_target;

static SELF_TEST: Once = Once::new();

fuzz_target!(|data: &[u8]| {
    SELF_TEST.call_once(dnz_fuzz::zonefile_self_test);
    let mut out = Vec::with_capacity(65535);
    dnz_fuzz::check_zonefile(data, &mut out);
});
