//! How much the MinHash sketch's verdict on dressed copies moves with the
//! key, for the shipped 32 two-bit values against 64 (issue 40, "robust to
//! the key"): reads the dressed suite's cases (`DRESSED_DUMP=dir
//! DRESSED_DUMP_ALL=1 cargo test --release --test dressed`: per class an
//! mbox of cases of 3 plain then 4 dressed copies) and, under each of
//! `--keys` keys, counts the dressed copies whose sketch is within the
//! difference that estimates resemblance 2/3 (8 of 32 values, 16 of 64:
//! `window.max_sketch_diff`) of one of their plain copies. Only the
//! sketch step: candidates (bands, simhash) and the linking rule are not
//! simulated, so these are not the suite's rates.
//!
//! Usage: cargo run --release --example sketch_spread -- [--keys N] DIR

use std::fs::File;

use bulkwatch::config::Config;
use bulkwatch::engine::minhash::{fmix32, min_sketch, mix, seeds, sketch_diff};
use bulkwatch::engine::shingle::features;
use bulkwatch::replay::analyze_unenveloped;
use bulkwatch::replay::mbox::read_mbox;

#[path = "common/keys.rs"]
mod keys;

const PLAIN: usize = 3;
const CASE: usize = 7;

/// 64 two-bit minimums: the shipped 32 seeds, then 32 more from the same
/// SplitMix64 stream.
fn sketch64(words: &[u64], key: (u64, u64)) -> [u8; 64] {
    let mut s = [0u32; 64];
    let mut state = key.0 ^ key.1.rotate_left(32);
    for x in s.iter_mut() {
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        *x = (mix(state) >> 32) as u32;
    }
    let mut mins = [u32::MAX; 64];
    for &h in words {
        let x = (h ^ (h >> 32)) as u32;
        for (m, seed) in mins.iter_mut().zip(&s) {
            *m = (*m).min(fmix32(x ^ seed));
        }
    }
    mins.map(|m| (m & 3) as u8)
}

fn diff64(a: &[u8; 64], b: &[u8; 64]) -> u32 {
    a.iter().zip(b).filter(|(x, y)| x != y).count() as u32
}

/// Mean, lowest and highest of `v`.
fn spread(v: &[f64]) -> (f64, f64, f64) {
    let mean = v.iter().sum::<f64>() / v.len().max(1) as f64;
    let lo = v.iter().copied().fold(f64::INFINITY, f64::min);
    let hi = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    (mean, lo, hi)
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (keys, args) = keys::keys_and_args(12)?;
    let dir = args.first().ok_or("usage: sketch_spread [--keys N] DIR")?;
    let mut classes: Vec<_> = std::fs::read_dir(dir)?
        .filter_map(Result::ok)
        .map(|e| e.path())
        .filter(|p| p.extension().is_some_and(|x| x == "mbox"))
        .collect();
    classes.sort();
    println!(
        "{:<22} {:>5} | {:>24} | {:>24}",
        "class", "cases", "32 values: mean (lo-hi)", "64 values: mean (lo-hi)"
    );
    let (mut width32, mut width64) = (Vec::new(), Vec::new());
    for path in classes {
        let class = path
            .file_stem()
            .unwrap_or_default()
            .to_string_lossy()
            .into_owned();
        let cfg = Config::default();
        let texts: Vec<_> = read_mbox(File::open(&path)?)
            .filter_map(Result::ok)
            .map(|raw| analyze_unenveloped(&raw, &cfg).normalized)
            .collect();
        let cases = texts.len() / CASE;
        let (mut rate32, mut rate64) = (Vec::new(), Vec::new());
        for k in 0..keys {
            let mut cfg = Config::default();
            let key = (
                (k + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15),
                (k + 1001).wrapping_mul(0xD1B5_4A32_D192_ED03),
            );
            cfg.fingerprint.hash_key = key;
            let seeds32 = seeds(key);
            let (mut near32, mut near64, mut total) = (0u32, 0u32, 0u32);
            for case in texts.chunks_exact(CASE) {
                let words: Vec<Vec<u64>> = case
                    .iter()
                    .map(|n| features(n, &cfg.fingerprint).words)
                    .collect();
                let s32: Vec<u64> = words
                    .iter()
                    .map(|w| min_sketch(w, &seeds32).sketch)
                    .collect();
                let s64: Vec<[u8; 64]> = words.iter().map(|w| sketch64(w, key)).collect();
                for d in PLAIN..CASE {
                    total += 1;
                    near32 += u32::from((0..PLAIN).any(|p| sketch_diff(s32[d], s32[p]) <= 8));
                    near64 += u32::from((0..PLAIN).any(|p| diff64(&s64[d], &s64[p]) <= 16));
                }
            }
            rate32.push(f64::from(near32) / f64::from(total.max(1)));
            rate64.push(f64::from(near64) / f64::from(total.max(1)));
        }
        let (m32, lo32, hi32) = spread(&rate32);
        let (m64, lo64, hi64) = spread(&rate64);
        width32.push(hi32 - lo32);
        width64.push(hi64 - lo64);
        println!(
            "{class:<22} {cases:>5} | {:>8.1}% ({:>5.1}-{:>5.1}) | {:>8.1}% ({:>5.1}-{:>5.1})",
            m32 * 100.0,
            lo32 * 100.0,
            hi32 * 100.0,
            m64 * 100.0,
            lo64 * 100.0,
            hi64 * 100.0
        );
    }
    let (w32, _, max32) = spread(&width32);
    let (w64, _, max64) = spread(&width64);
    println!(
        "spread between keys (points): 32 values mean {:.1}, widest {:.1}; 64 values mean {:.1}, widest {:.1}",
        w32 * 100.0,
        max32 * 100.0,
        w64 * 100.0,
        max64 * 100.0
    );
    Ok(())
}
