//! Fuzz target: see `bulkwatch::fuzzing::snapshot`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bulkwatch::fuzzing::snapshot(data));
