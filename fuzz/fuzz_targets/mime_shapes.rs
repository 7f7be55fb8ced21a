//! Fuzz target: reading whole messages (`bulkwatch::engine::read`: MIME,
//! charsets, HTML, CSS, normalization) built by a structure-aware
//! generator (`shapes::message`: nested multiparts and messages, many
//! parts and headers, broken encodings, hostile HTML), up to the milter's
//! default message size (1 MiB), on a 2 MiB thread stack. A stack
//! overflow or an allocation failure aborts the fuzzer: a finding.
#![no_main]

#[path = "shapes/mod.rs"]
mod shapes;

use bulkwatch::config::Config;
use bulkwatch::engine::{read, read_config};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let raw = shapes::message(&mut shapes::Program::new(data), 1 << 20);
    let cfg = read_config(&Config::default());
    std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || read(&raw, &["ann@example.net".to_owned()], &cfg))
        .expect("thread")
        .join()
        .expect("no panic");
});
