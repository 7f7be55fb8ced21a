//! Fuzz target: the HTML renderer on documents built by a structure-aware
//! generator (`shapes::html`: many attributes, deep nesting, long runs,
//! large style sheets), up to 1 MiB, on a 2 MiB thread stack (the
//! smallest stack bulkwatch ever read mail on). A stack overflow aborts
//! the fuzzer: a finding.
#![no_main]

#[path = "shapes/mod.rs"]
mod shapes;

use bulkwatch::engine::mime::html::{to_text, Targets};

libfuzzer_sys::fuzz_target!(|data: &[u8]| {
    let doc = shapes::html(&mut shapes::Program::new(data), 1 << 20);
    let out = std::thread::Builder::new()
        .stack_size(2 << 20)
        .spawn(move || {
            let mut out = String::new();
            let mut targets = Targets::default();
            to_text(&doc, &mut out, &mut targets, 256 * 1024);
            out
        })
        .expect("thread")
        .join()
        .expect("no panic");
    assert!(out.len() <= 256 * 1024);
});
