//! Fuzz target: see `bulkwatch::fuzzing::arrival`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| bulkwatch::fuzzing::arrival(data));
