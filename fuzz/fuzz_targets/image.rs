//! libFuzzer target: every input, followed by its CRC-32, is read as a zone image; a zone that
//! reads answers a fixed set of queries under its own apex over UDP and TCP, and each response
//! must pass the query target's check.

#![no_main]

use std::sync::Once;

use libfuzzer_sys::fuzz_target;

static SELF_TEST: Once = Once::new();

fuzz_target!(|data: &[u8]| {
    SELF_TEST.call_once(dnz_fuzz::image_self_test);
    let mut out = Vec::with_capacity(65535);
    dnz_fuzz::check_image(data, &mut out);
});
