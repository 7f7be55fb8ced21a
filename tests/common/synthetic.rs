//! Distinct synthetic observations, for the store tests and the store
//! benchmark (`benches/store.rs` includes this file by path).

use bulkwatch::config::Config;
use bulkwatch::engine::Observation;

/// A random-looking observation (SplitMix64 from `i`): distinct
/// fingerprints, none near another, as a window of unrelated mail.
pub fn synthetic(i: u64, cfg: &Config) -> Observation {
    let mut s = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0x1234_5678;
    let mut next = || {
        s = s.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = s;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    };
    let mut exact = [0u8; 32];
    for c in exact.chunks_mut(8) {
        c.copy_from_slice(&next().to_le_bytes());
    }
    Observation {
        exact,
        simhash: next(),
        sketch: next(),
        bands: (0..cfg.window.minhash_bands).map(|_| next()).collect(),
        near: true,
        recipients: 1,
        sender: (next() & 0xFFFF) as u16,
        sender_name: Some("sender.example".into()),
        subject: Some("A subject of ordinary length for a message".into()),
        features: 50,
        thresholds: cfg.thresholds.clone(),
    }
}
