//! Seals: what proves that an entry of the site's Redis state was written
//! by a host holding the site's key (`fingerprint.hash_key`), and the key
//! itself. HMAC-SHA256 over `sha2`, compared without an early exit.

use sha2::{Digest, Sha256};

use crate::config::Config;

/// Bytes of the tag that ends every entry in the log: HMAC-SHA256 of the
/// entry under the site's log key ([`log_key`]), cut to 128 bits.
pub(crate) const TAG_LEN: usize = 16;

/// The key that seals the site's log: made from `fingerprint.hash_key`,
/// which every host of a site shares already (their fingerprints must
/// agree) and which nothing but bulkwatch needs. Whoever may write to the
/// site's Redis without it (another application, an account of the
/// server) cannot add an entry any host applies: no observation that
/// makes a campaign of ham, no correction that allows a spam campaign.
/// With the built-in key (public) the seal keeps out nobody: `keygen`.
pub fn log_key(cfg: &Config) -> [u8; 32] {
    let (k0, k1) = cfg.fingerprint.hash_key;
    Sha256::new()
        .chain_update(b"bulkwatch log key 1\0")
        .chain_update(k0.to_le_bytes())
        .chain_update(k1.to_le_bytes())
        .finalize()
        .into()
}

/// HMAC-SHA256 (RFC 2104) of `msg` under `key`, cut to [`TAG_LEN`].
/// (Eleven lines over `sha2`, which the project has, instead of the
/// `hmac` crate for one construction.)
pub(crate) fn tag(key: &[u8; 32], msg: &[u8]) -> [u8; TAG_LEN] {
    let pad = |b: u8| {
        let mut p = [b; 64];
        p.iter_mut().zip(key).for_each(|(p, k)| *p ^= k);
        p
    };
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(msg)
        .finalize();
    let outer = Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize();
    let mut t = [0u8; TAG_LEN];
    t.iter_mut().zip(outer).for_each(|(t, o)| *t = o);
    t
}

/// `entry` with its tag after it: what the log holds.
pub fn seal(key: &[u8; 32], entry: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entry.len() + TAG_LEN);
    out.extend_from_slice(entry);
    out.extend_from_slice(&tag(key, entry));
    out
}

/// The entry in `sealed` (its tag cut off) when the tag is right; empty,
/// which no reader decodes, when it is not: the entry is skipped and
/// counted as a bad one. Compared without an early exit.
pub fn open(key: &[u8; 32], mut sealed: Vec<u8>) -> Vec<u8> {
    let Some(at) = sealed.len().checked_sub(TAG_LEN) else {
        return Vec::new();
    };
    let (entry, t) = sealed.split_at(at);
    if !same(t, &tag(key, entry)) {
        return Vec::new();
    }
    sealed.truncate(at);
    sealed
}

/// Whether `a` and `b` are the same bytes, compared without an early exit
/// (a tag's bytes are not told one at a time by how long a test takes).
pub(crate) fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// The hex of the tag of `msg` under `key`: a sealed value in a Redis
/// string.
pub(crate) fn hex_tag(key: &[u8; 32], msg: &str) -> String {
    crate::engine::simhash::hex(&tag(key, msg.as_bytes()))
}
