//! How long a periodic snapshot holds the engine's lock, which every
//! message's decision also takes (issue 51, "no runtime thread blocks"):
//! an engine of N windowed messages (synthetic observations, each with a
//! sender and a recipient), then the time to encode it under the lock (what
//! the daemon did) and to copy it under the lock (what it does: the copy
//! is encoded outside). Prints the medians of 5 turns.
//!
//!   cargo run --release --example snapshot_stall -- [N]   # default 1000000

use std::time::Instant;

use bulkwatch::config::Config;
use bulkwatch::engine::party::{Origin, Parties, Recipients};
use bulkwatch::engine::{Engine, Observation, UnixSecs};
use bulkwatch::store::Store;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(1_000_000);
    let mut cfg = Config::default();
    cfg.window.max_entries = usize::try_from(n).unwrap_or(usize::MAX);
    cfg.exact.bloom_items = cfg.window.max_entries;
    let mut engine = Engine::new(&cfg);
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    let key = cfg.fingerprint.hash_key;
    let start = 1_800_000_000u64;
    for i in 0..n {
        let mut exact = [0u8; 32];
        for chunk in exact.chunks_mut(8) {
            chunk.copy_from_slice(&next().to_le_bytes());
        }
        let from = format!("s{}@sender{}.example", i % 977, i % 13);
        let to = [format!("u{i}@example.net")];
        let obs = Observation {
            exact,
            simhash: next(),
            sketch: next(),
            bands: (0..cfg.window.minhash_bands).map(|_| next()).collect(),
            smallest: Vec::new(),
            sentences: Default::default(),
            near: true,
            parties: Parties::of(
                Origin::Inbound,
                Some(&from),
                Recipients {
                    addrs: &to,
                    hashes: &[],
                    more: 0,
                },
                None,
                &[] as &[String],
                key,
            ),
            sender: next() as u16 & 0x7FFF,
            sender_name: Some(format!("sender{}.example", i % 13)),
            subject: Some(format!("offer {i}")),
            features: 40,
            list: false,
            list_post: false,
            deeper: [0; 2],
            reply: false,
            kept_cut: None,
            partial: false,
            thresholds: cfg.thresholds.clone(),
        };
        let now = UnixSecs(start + i * cfg.window.window.as_secs() / n.max(1) / 2);
        let _ = Store::record(&mut engine, &obs, now);
    }
    let median = |mut v: Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    let mut encode = Vec::new();
    let mut copy = Vec::new();
    let mut bytes = 0;
    for _ in 0..5 {
        let t = Instant::now();
        let b = bulkwatch::store::snapshot::encode(&engine, start);
        encode.push(t.elapsed().as_secs_f64());
        bytes = b.len();
        let t = Instant::now();
        let c = engine.clone();
        copy.push(t.elapsed().as_secs_f64());
        drop(c);
    }
    println!(
        "{} windowed messages, snapshot {} MB: under the lock, encoding {:.3} s, copying {:.3} s (medians of 5)",
        engine.stats().window_entries,
        bytes / 1_000_000,
        median(encode),
        median(copy)
    );
}
