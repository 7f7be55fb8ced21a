//! Prints each message's fingerprints, one JSON object per line, in input
//! order: `n` (as in `replay --format jsonl`), `simhash` and `sketch` (hex),
//! `features`. For studying how the two measures relate to a text measure
//! (benches/quality.py --fingerprints).
//!
//! Usage: cargo run --release --example fingerprints -- [--config F] MBOX...

use std::fs::File;

use bulkwatch::config::Config;
use bulkwatch::replay::analyze_unenveloped;
use bulkwatch::replay::mbox::read_mbox;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let mut args: Vec<String> = std::env::args().skip(1).collect();
    let cfg = if args.first().map(String::as_str) == Some("--config") {
        let path = args.get(1).ok_or("--config needs a file")?.clone();
        args.drain(..2);
        Config::from_toml_str(&std::fs::read_to_string(path)?)?
    } else {
        Config::default()
    };
    let mut n = 0u64;
    for path in &args {
        for raw in read_mbox(File::open(path)?) {
            let raw = raw?;
            n += 1;
            let a = analyze_unenveloped(&raw, &cfg);
            match a.fingerprint {
                Some(fp) => {
                    let bands: Vec<String> = fp
                        .min
                        .bands
                        .iter()
                        .map(|b| format!("\"{b:016x}\""))
                        .collect();
                    let exact: String = fp.exact[..8].iter().map(|b| format!("{b:02x}")).collect();
                    println!(
                        "{{\"n\":{n},\"simhash\":\"{:016x}\",\"sketch\":\"{:016x}\",\"features\":{},\"exact\":\"{exact}\",\"bands\":[{}]}}",
                        fp.simhash,
                        fp.min.sketch,
                        a.features,
                        bands.join(",")
                    )
                }
                None => println!("{{\"n\":{n},\"simhash\":null,\"sketch\":null,\"features\":0}}"),
            }
        }
    }
    Ok(())
}
