#![forbid(unsafe_code)]
pub mod config;
pub mod mime;
pub mod index;
pub mod shingle;
pub mod simhash;
pub mod campaign;
pub mod exact;
pub mod engine;
pub mod verdict;
pub mod replay;
pub mod cli;
pub mod milter;
pub mod snapshot;
pub mod minhash;
