//! Developer tasks, run from the repository root:
//!
//! ```sh
//! cargo xtask gen-fixtures [DIR]   # the synthetic fixtures (default: fixtures)
//! cargo xtask fuzz-seeds [DIR]     # seed corpora for cargo fuzz (default: fuzz/corpus)
//! cargo xtask man [DIR]            # the man pages (default: man)
//! cargo xtask shape [DIR]          # the source's shape (CI): function length, circles, layers
//! ```
//!
//! Not part of the daemon: its own package in the workspace, so that
//! `examples/` holds only what a user would run.

mod fuzz_seeds;
mod gen_fixtures;
mod man;
mod shape;

use std::path::{Path, PathBuf};
use std::process::ExitCode;

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let task = args.next().unwrap_or_default();
    let dir = args.next().map(PathBuf::from);
    match task.as_str() {
        "gen-fixtures" => {
            gen_fixtures::run(&dir.unwrap_or_else(|| "fixtures".into()));
            ExitCode::SUCCESS
        }
        "fuzz-seeds" => match fuzz_seeds::run(&dir.unwrap_or_else(|| "fuzz/corpus".into())) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("xtask fuzz-seeds: {e}");
                ExitCode::FAILURE
            }
        },
        "man" => {
            let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("..");
            match man::run(&root, &dir.unwrap_or_else(|| root.join("man"))) {
                Ok(()) => ExitCode::SUCCESS,
                Err(e) => {
                    eprintln!("xtask man: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        "shape" => {
            let root = dir.unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join(".."));
            match shape::run(&root) {
                Ok(true) => ExitCode::SUCCESS,
                Ok(false) => ExitCode::FAILURE,
                Err(e) => {
                    eprintln!("xtask shape: {e}");
                    ExitCode::FAILURE
                }
            }
        }
        _ => {
            eprintln!(
                "usage: cargo xtask gen-fixtures [DIR] | cargo xtask fuzz-seeds [DIR] | cargo xtask man [DIR] | cargo xtask shape [DIR]"
            );
            ExitCode::from(2)
        }
    }
}
