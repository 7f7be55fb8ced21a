//! Fuzz target: see `bulkwatch::fuzzing::milter_session`.
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    bulkwatch::fuzzing::milter_session(data);
});
