//! The milter adapter.
pub mod serve;
