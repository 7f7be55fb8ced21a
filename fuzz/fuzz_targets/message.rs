//! Fuzz target: see `bulkwatch::fuzzing::message`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bulkwatch::fuzzing::message(data));
