//! Fuzz target: see `bulkwatch::fuzzing::config`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bulkwatch::fuzzing::config(data));
