//! bulkwatch: catch bulk, near-identical mail campaigns as they stream in.
//!
//! Layout (dependencies point one way: `cli` -> `milter` -> engine modules;
//! everything reads `config`):
//! - [`engine`]: the pure pipeline facade, `analyze` (bytes -> fingerprint)
//!   and `Engine::decide` (lookup, campaigns, verdict). No I/O, no clock.
//! - [`mime`]: bytes -> text (the only mail-parser user) and normalization.
//! - [`shingle`], [`simhash`], [`minhash`]: features and fingerprints.
//! - [`index`]: the sliding window with permuted block and MinHash band tables.
//! - [`exact`]: rotating Bloom filters of exact hashes plus an LRU.
//! - [`campaign`], [`verdict`]: grouping and levels.
//! - [`mbox`]: an mbox file -> its messages (mail-parser's format, read in
//!   blocks; [`fuzzing`] checks it against mail-parser's own iterator).
//! - [`replay`]: mbox replay with simulated time (CLI, tune and tests).
//! - [`config`]: TOML, raw then validated.
//! - [`store`]: where the state lives besides memory: Redis, shared by
//!   several MX hosts (the `Store` trait is in [`engine`]).
//! - [`milter`], [`snapshot`], [`cli`]: the adapters.
#![forbid(unsafe_code)]
#![warn(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
pub mod campaign;
pub mod cli;
pub mod codec;
pub mod config;
pub mod engine;
pub mod exact;
pub mod fuzzing;
pub mod index;
pub mod mbox;
pub mod milter;
pub mod mime;
pub mod minhash;
pub mod replay;
pub mod shingle;
pub mod simhash;
pub mod snapshot;
pub mod store;
pub mod verdict;
