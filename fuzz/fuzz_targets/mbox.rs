//! Fuzz target: see `bulkwatch::fuzzing::mbox`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bulkwatch::fuzzing::mbox(data));
