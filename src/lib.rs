//! bulkwatch: catch bulk, near-identical mail campaigns as they stream in.
//!
//! Layers, from the bottom up (each imports only the ones below it; all
//! read [`config`]):
//! - [`engine`]: the pure pipeline, no I/O and no clock of its own:
//!   `analyze` (bytes -> fingerprint: `mime`, `shingle`, `simhash`,
//!   `minhash`) and `Engine::decide` (lookup in `index` and `exact`,
//!   grouping in `campaign`, levels in `verdict`).
//! - [`store`]: where the state lives besides memory, and the one place
//!   that decides where a verdict comes from ([`store::judge::Judge`]): the local
//!   engine, or Redis first with the local engine as its fallback. The
//!   snapshot file and its codec are here too.
//! - [`worker`]: the contained half of the engine: worker processes,
//!   sandboxed, that parse and normalize the mail (`engine::read`), so
//!   that a parser that dies costs one verdict, never the daemon.
//! - [`replay`]: mbox files judged on a simulated or an arrival clock
//!   (`replay`, `scan`, `tune` and the quality benchmarks).
//! - [`milter`]: the milter protocol in front of the judge (tokio,
//!   indymilter): sessions, replies, metrics, alerts, the guarded listener.
//! - [`http`]: the HTTP listener in front of the milter's state: metrics,
//!   the campaign list, the dashboard and its corrections.
//! - [`cli`]: the commands, `bulkwatch serve` among them.
#![forbid(unsafe_code)]
#![warn(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]
pub mod cli;
pub mod config;
pub mod engine;
pub mod escape;
pub mod file;
pub mod http;
pub mod milter;
pub mod postfix;
pub mod replay;
pub mod store;
pub mod worker;

#[cfg(test)]
mod pinned;
