//! Distinct synthetic observations, for the store tests and the store
//! benchmark (`benches/store.rs` includes this file by path).

use bulkwatch::config::Config;
use bulkwatch::engine::minhash::band_keys;
use bulkwatch::engine::Observation;

/// A random-looking observation (SplitMix64 from `i`): distinct
/// fingerprints, none near another, as a window of unrelated mail.
pub fn synthetic(i: u64, cfg: &Config) -> Observation {
    let mut s = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x1234_5678;
    let mut next = || splitmix(&mut s);
    let mut exact = [0u8; 32];
    for c in exact.chunks_mut(8) {
        c.copy_from_slice(&next().to_le_bytes());
    }
    let (simhash, sketch) = (next(), next());
    // Random values, and the band keys they give (as a message's own):
    // probes that read buckets and find nothing.
    let smallest: Vec<[u32; 3]> = (0..2 * cfg.window.minhash_bands)
        .map(|_| [next() as u32, next() as u32, next() as u32])
        .collect();
    Observation {
        exact,
        simhash,
        sketch,
        bands: band_keys(&smallest).collect(),
        smallest,
        sentences: Default::default(),
        near: true,
        parties: bulkwatch::engine::party::Parties::anonymous(1),
        sender: (next() & 0xFFFF) as u16,
        sender_name: Some("sender.example".into()),
        subject: Some("A subject of ordinary length for a message".into()),
        features: 50,
        thresholds: cfg.thresholds.clone(),
        list: false,
        list_post: false,
        kept_cut: None,
        partial: false,
        deeper: [0; 2],
        reply: false,
    }
}

/// SplitMix64, for reproducible fingerprints.
pub use testkit::splitmix;

/// A message seen by its fingerprints only: simhash `simhash`, and an
/// exact hash, sketch and band keys of its own (nothing but the simhash
/// can match).
pub fn observation(cfg: &Config, simhash: u64, st: &mut u64) -> Observation {
    let mut exact = [0u8; 32];
    for part in exact.chunks_mut(8) {
        part.copy_from_slice(&splitmix(st).to_le_bytes());
    }
    Observation {
        exact,
        simhash,
        sketch: splitmix(st),
        bands: (0..cfg.window.minhash_bands)
            .map(|_| splitmix(st))
            .collect(),
        sentences: Default::default(),
        smallest: (0..2 * cfg.window.minhash_bands)
            .map(|_| {
                [
                    splitmix(st) as u32,
                    splitmix(st) as u32,
                    splitmix(st) as u32,
                ]
            })
            .collect(),
        near: true,
        parties: bulkwatch::engine::party::Parties::anonymous(1),
        sender: 7,
        sender_name: Some("chain.example".into()),
        subject: None,
        features: 100,
        thresholds: cfg.thresholds.clone(),
        list: false,
        list_post: false,
        kept_cut: None,
        partial: false,
        deeper: [0; 2],
        reply: false,
    }
}

/// `n` random bits of the 64 (distinct).
pub fn random_bits(n: u32, st: &mut u64) -> u64 {
    let mut m = 0u64;
    while m.count_ones() < n {
        m |= 1 << (splitmix(st) % 64);
    }
    m
}
