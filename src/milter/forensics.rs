//! Messages whose reading failed (the worker died, panicked or ran out of
//! time) are kept for whoever looks into it: `state_dir/failed/`, one file
//! each, named `<unix time>-<queue id>.eml`, mode 0600 in a 0700
//! directory. At most [`MAX_KEPT`] files are kept (the oldest go first),
//! each at most the message the milter buffered (`max_message_bytes`), so
//! a sender who sends nothing but such messages fills a few megabytes, not
//! the disk.

use std::fs;
use std::os::unix::fs::{DirBuilderExt, MetadataExt};
use std::path::{Path, PathBuf};

use crate::file::create_new;

/// Most messages kept.
pub const MAX_KEPT: usize = 16;

/// The directory name under `state_dir`.
pub const DIR: &str = "failed";

/// Where failed messages go.
#[derive(Debug, Clone)]
pub struct Forensics {
    dir: PathBuf,
}

impl Forensics {
    /// Keeps failed messages in `state_dir/failed`.
    pub fn new(state_dir: &Path) -> Forensics {
        Forensics {
            dir: state_dir.join(DIR),
        }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Keeps `raw` (on the blocking pool; a failure to keep it is logged,
    /// never the message's business).
    pub async fn keep(&self, queue_id: Option<&str>, raw: Vec<u8>) {
        let dir = self.dir.clone();
        let queue_id = queue_id.unwrap_or("").to_owned();
        let now = crate::milter::unix_now();
        let kept = tokio::task::spawn_blocking(move || keep(&dir, &queue_id, &raw, now)).await;
        match kept {
            Ok(Ok(path)) => {
                tracing::info!(path = %path.display(), "message kept for forensics");
            }
            Ok(Err(e)) => {
                tracing::warn!(dir = %self.dir.display(), error = %e, "cannot keep the message for forensics");
            }
            Err(_) => {}
        }
    }
}

/// A queue id as a file name part: letters and digits only.
fn safe(queue_id: &str) -> String {
    let s: String = queue_id
        .chars()
        .filter(char::is_ascii_alphanumeric)
        .take(32)
        .collect();
    if s.is_empty() {
        "noqueue".into()
    } else {
        s
    }
}

fn keep(dir: &Path, queue_id: &str, raw: &[u8], now: u64) -> std::io::Result<PathBuf> {
    match fs::DirBuilder::new().mode(0o700).create(dir) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => return Err(e),
    }
    // Never through a link planted at the directory's name, nor into a
    // directory of another user than the state directory's.
    let meta = fs::symlink_metadata(dir)?;
    let owner = dir
        .parent()
        .and_then(|p| fs::metadata(p).ok())
        .map(|m| m.uid());
    if !meta.is_dir() || Some(meta.uid()) != owner {
        return Err(std::io::Error::other(format!(
            "{} is not a directory owned as the state directory is",
            dir.display()
        )));
    }
    let mut kept: Vec<(String, PathBuf)> = fs::read_dir(dir)?
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            name.ends_with(".eml").then(|| (name, e.path()))
        })
        .collect();
    // Names start with the time: the oldest sort first.
    kept.sort();
    let excess = (kept.len() + 1).saturating_sub(MAX_KEPT);
    for (_, p) in kept.iter().take(excess) {
        let _ = fs::remove_file(p);
    }
    let base = format!("{now:010}-{}", safe(queue_id));
    for n in 0..100u32 {
        let name = if n == 0 {
            format!("{base}.eml")
        } else {
            format!("{base}-{n}.eml")
        };
        let path = dir.join(name);
        match create_new(&path, raw, 0o600) {
            Ok(()) => return Ok(path),
            Err(crate::file::FileError::Io { source, .. })
                if source.kind() == std::io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(std::io::Error::other(e)),
        }
    }
    Err(std::io::Error::other("no free name"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn at_most_max_kept_messages_are_kept_the_newest() {
        let state = tempfile::tempdir().unwrap();
        let dir = state.path().join(DIR);
        for t in 0..(MAX_KEPT as u64 + 5) {
            keep(
                &dir,
                "4Xz9/..\n",
                format!("message {t}").as_bytes(),
                1000 + t,
            )
            .unwrap();
        }
        let mut names: Vec<String> = fs::read_dir(&dir)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        assert_eq!(names.len(), MAX_KEPT);
        assert_eq!(names[0], "0000001005-4Xz9.eml");
        let mode = fs::metadata(dir.join(&names[0])).unwrap().mode() & 0o777;
        assert_eq!(mode, 0o600);
        assert_eq!(fs::metadata(&dir).unwrap().mode() & 0o777, 0o700);
        // The same second and queue id: another name.
        let dir = state.path().join("other");
        keep(&dir, "", b"a", 5).unwrap();
        keep(&dir, "", b"b", 5).unwrap();
        assert_eq!(fs::read(dir.join("0000000005-noqueue.eml")).unwrap(), b"a");
        assert_eq!(
            fs::read(dir.join("0000000005-noqueue-1.eml")).unwrap(),
            b"b"
        );
    }

    #[test]
    fn a_link_planted_at_the_directory_is_refused() {
        let state = tempfile::tempdir().unwrap();
        let elsewhere = tempfile::tempdir().unwrap();
        std::os::unix::fs::symlink(elsewhere.path(), state.path().join(DIR)).unwrap();
        assert!(keep(&state.path().join(DIR), "q", b"x", 1).is_err());
        assert_eq!(fs::read_dir(elsewhere.path()).unwrap().count(), 0);
    }
}
