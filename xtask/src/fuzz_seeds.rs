//! Seed corpora for the fuzz targets, written outside the repository's
//! committed files (cargo fuzz's default is `fuzz/corpus/<target>/`, which
//! git ignores):
//!
//! ```sh
//! cargo xtask fuzz-seeds fuzz/corpus
//! BULKWATCH_CORPUS=/path/to/corpus cargo xtask fuzz-seeds fuzz/corpus
//! ```
//!
//! From every message of `fixtures/mbox/*.mbox`, and of the `*.mbox` files
//! in `$BULKWATCH_CORPUS` when it is set: the message itself (`message`),
//! its delivery as a milter script (`milter_session`, see
//! `milter_script` of fuzz/checks.rs) and, per group of eight messages, a
//! snapshot body of an engine that saw them (`snapshot`). Plus
//! `config/bulkwatch.toml` (`config`). Real mail stays out of the
//! repository: it is read in place and only these generated files hold it.

use std::fs;
use std::io::BufReader;
use std::path::{Path, PathBuf};

#[path = "../../fuzz/checks.rs"]
#[allow(dead_code)]
mod checks;

use bulkwatch::replay::read_mbox;
use checks::{milter_script, snapshot_seed};
use sha2::{Digest, Sha256};

/// Writes `data` under `dir`, named by its hash (as libFuzzer names inputs).
fn put(dir: &Path, data: &[u8]) -> std::io::Result<()> {
    let name: String = Sha256::digest(data)
        .iter()
        .take(10)
        .map(|b| format!("{b:02x}"))
        .collect();
    fs::write(dir.join(name), data)
}

fn mboxes(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .map(|d| {
            d.filter_map(|e| e.ok().map(|e| e.path()))
                .filter(|p| p.extension().is_some_and(|x| x == "mbox"))
                .collect()
        })
        .unwrap_or_default();
    v.sort();
    v
}

/// Writes the seeds under `out`, from the fixtures of the repository.
pub fn run(out: &Path) -> std::io::Result<()> {
    let out = out.to_path_buf();
    let root = Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .unwrap_or(Path::new(".."));
    let dirs = ["message", "milter_session", "snapshot", "config"].map(|t| out.join(t));
    for d in &dirs {
        fs::create_dir_all(d)?;
    }
    let [message, milter, snapshot, config] = &dirs;
    put(config, &fs::read(root.join("config/bulkwatch.toml"))?)?;

    let mut sources = mboxes(&root.join("fixtures/mbox"));
    if let Ok(corpus) = std::env::var("BULKWATCH_CORPUS") {
        sources.extend(mboxes(Path::new(&corpus)));
    }
    let mut n = 0;
    for path in sources {
        let reader = BufReader::new(fs::File::open(&path)?);
        let msgs: Vec<Vec<u8>> = read_mbox(reader).filter_map(Result::ok).collect();
        for m in &msgs {
            put(message, m)?;
            put(milter, &milter_script(m))?;
        }
        for group in msgs.chunks(8) {
            put(snapshot, &snapshot_seed(group.iter().map(Vec::as_slice)))?;
        }
        n += msgs.len();
        eprintln!("{}: {} messages", path.display(), msgs.len());
    }
    eprintln!("{n} messages; seeds under {}", out.display());
    Ok(())
}
