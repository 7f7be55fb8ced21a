//! `[fingerprint]`: how features and fingerprints are computed, and the hash key.

use super::section::*;
use super::{in_range, to_usize, ConfigError};

/// The default 128-bit key of the shingle hash, as 32 hex digits: the ASCII
/// bytes of `bulkwatch-fp-v1!`. Every host of a site must use the same key,
/// or their fingerprints will not match.
pub const DEFAULT_HASH_KEY: &str = "62756c6b77617463682d66702d763121";

section! {
    /// How features and fingerprints are computed. Changing any of these
    /// changes every fingerprint: all hosts of a site must agree.
    pub struct FingerprintConfig in RawFingerprint as "fingerprint" {
        shingle_words: usize = 2,
            file shingle_words: u32,
            read |k, v| to_usize(k, v.into(), 1, 8),
            write to_u32,
            restart FINGERPRINTS;
        /// Key of the fingerprint hashes (k0, k1), little-endian halves of the
        /// 16 key bytes: tokens are hashed with XXH3 seeded by `k0 ^ mix(k1)`
        /// (`shingle::token_seed`), MinHash seeds come from both halves.
        hash_key: (u64, u64) = parse_hash_key(DEFAULT_HASH_KEY).unwrap_or((0, 0)),
            file hash_key: String,
            read |k, v| parse_hash_key(&v)
                .ok_or_else(|| ConfigError::invalid(k, "must be exactly 32 hex digits")),
            write |v| Some(format_hash_key(*v)),
            restart FINGERPRINTS;
        /// Keep only shingle hashes that are 0 mod m (1 keeps all).
        sample_modulus: u64 = 1,
            file sample_modulus: u32,
            read |k, v| Ok(in_range(k, v, 1, 64)?.into()),
            write |v| Some(u32::try_from(*v).unwrap_or(u32::MAX)),
            restart FINGERPRINTS;
        /// Fewer shingles than this: the message takes no part in near matching.
        min_features: usize = 8,
            file min_features: u32,
            read |k, v| to_usize(k, v.into(), 1, 10_000),
            write to_u32,
            restart FINGERPRINTS;
        include_subject: bool = false,
            file include_subject: bool,
            restart FINGERPRINTS;
    }
}

impl FingerprintConfig {
    /// The key is [`DEFAULT_HASH_KEY`], which anyone can read.
    pub fn uses_built_in_key(&self) -> bool {
        parse_hash_key(DEFAULT_HASH_KEY) == Some(self.hash_key)
    }
}

/// The two key halves as the 32 hex digits of the file (the inverse of
/// the parser).
pub fn format_hash_key((k0, k1): (u64, u64)) -> String {
    k0.to_le_bytes()
        .iter()
        .chain(k1.to_le_bytes().iter())
        .map(|b| format!("{b:02x}"))
        .collect()
}

/// Parses 32 hex digits into the two key halves.
fn parse_hash_key(s: &str) -> Option<(u64, u64)> {
    let s = s.trim();
    if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut bytes = [0u8; 16];
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    let (a, b) = bytes.split_at(8);
    Some((
        u64::from_le_bytes(a.try_into().ok()?),
        u64::from_le_bytes(b.try_into().ok()?),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::refusal;
    use crate::config::Config;

    #[test]
    fn default_hash_key_parses() {
        assert!(parse_hash_key(DEFAULT_HASH_KEY).is_some());
        assert_eq!(
            parse_hash_key(DEFAULT_HASH_KEY)
                .map(format_hash_key)
                .as_deref(),
            Some(DEFAULT_HASH_KEY)
        );
        assert_ne!(Config::default().fingerprint.hash_key, (0, 0));
    }

    fn raw(set: fn(&mut RawFingerprint)) -> RawFingerprint {
        let mut r = RawFingerprint::default();
        set(&mut r);
        r
    }

    #[test]
    fn empty_section_gives_defaults() {
        assert_eq!(
            FingerprintConfig::try_from(RawFingerprint::default()).unwrap(),
            FingerprintConfig::default()
        );
    }

    #[test]
    fn hash_key_is_read_as_little_endian_halves() {
        let c = FingerprintConfig::try_from(RawFingerprint {
            hash_key: Some(" 0100000000000000ff00000000000000 ".to_owned()),
            ..RawFingerprint::default()
        })
        .unwrap();
        assert_eq!(c.hash_key, (1, 0xff));
    }

    #[test]
    fn bad_values_are_refused_naming_their_key() {
        let bad_key = "must be exactly 32 hex digits";
        for (raw, key, message) in [
            (
                raw(|r| r.shingle_words = Some(0)),
                "fingerprint.shingle_words",
                "0 is outside 1..=8",
            ),
            (
                raw(|r| r.shingle_words = Some(9)),
                "fingerprint.shingle_words",
                "9 is outside 1..=8",
            ),
            (
                raw(|r| r.hash_key = Some("62756c6b77617463682d66702d7631".to_owned())),
                "fingerprint.hash_key",
                bad_key,
            ),
            (
                raw(|r| r.hash_key = Some("x2756c6b77617463682d66702d763121".to_owned())),
                "fingerprint.hash_key",
                bad_key,
            ),
            (
                raw(|r| r.hash_key = Some("+2756c6b77617463682d66702d763121".to_owned())),
                "fingerprint.hash_key",
                bad_key,
            ),
            (
                raw(|r| r.sample_modulus = Some(0)),
                "fingerprint.sample_modulus",
                "0 is outside 1..=64",
            ),
            (
                raw(|r| r.sample_modulus = Some(65)),
                "fingerprint.sample_modulus",
                "65 is outside 1..=64",
            ),
            (
                raw(|r| r.min_features = Some(0)),
                "fingerprint.min_features",
                "0 is outside 1..=10000",
            ),
            (
                raw(|r| r.min_features = Some(10_001)),
                "fingerprint.min_features",
                "10001 is outside 1..=10000",
            ),
        ] {
            assert_eq!(
                refusal(FingerprintConfig::try_from(raw)),
                (key.to_owned(), message.to_owned())
            );
        }
    }
}
