//! `bulkwatch keygen`: a new random fingerprint key, to replace the
//! built-in one, which is public (it is in the source).
//!
//! The key seeds the token hash and MinHash: with the built-in key anyone
//! can compute bulkwatch's fingerprints offline and try dresses until a
//! copy no longer matches; with a secret key they cannot. Every host of a
//! site must use the same key, and changing it starts the window afresh
//! (restart).

use std::io::Read;

use clap::Args;

use super::{print_stdout, CliError, Exit};
use crate::config::format_hash_key;

#[derive(Debug, Args)]
pub struct KeygenArgs {}

/// Where the key's bytes come from: the kernel's random generator.
const RANDOM: &str = "/dev/urandom";

/// Prints `hash_key = "…"` (32 hex digits) for the `[fingerprint]` table.
///
/// # Errors
/// The random source cannot be read, or standard output written.
pub fn run(_args: KeygenArgs) -> Result<Exit, CliError> {
    let mut bytes = [0u8; 16];
    std::fs::File::open(RANDOM)
        .and_then(|mut f| f.read_exact(&mut bytes))
        .map_err(|source| CliError::Read {
            path: RANDOM.into(),
            source,
        })?;
    let (low, high) = bytes.split_at(8);
    let half = |b: &[u8]| u64::from_le_bytes(b.try_into().unwrap_or_default());
    let key = format_hash_key((half(low), half(high)));
    print_stdout(&format!(
        "# A new fingerprint key: put it in the [fingerprint] table of every\n\
         # host of the site (the same key on all), then restart each.\n\
         hash_key = \"{key}\"\n"
    ))?;
    Ok(Exit::Ok)
}

/// The warning for a configuration that uses the built-in key, if it does.
pub fn public_key_warning(cfg: &crate::config::Config) -> Option<&'static str> {
    cfg.fingerprint.uses_built_in_key().then_some(
        "fingerprint.hash_key is the built-in key, which is public: a sender can compute \
         bulkwatch's fingerprints offline and test dresses against them, and with Redis \
         the seals on the shared state (log entries, the head of corrections and domain \
         allowances, alert claims) keep out nobody who can write to it. Run `bulkwatch \
         keygen` and set the key it prints on every host",
    )
}
