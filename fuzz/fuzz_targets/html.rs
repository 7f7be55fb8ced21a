//! Fuzz target: see `bulkwatch::fuzzing::html`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bulkwatch::fuzzing::html(data));
