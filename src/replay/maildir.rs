//! Maildir input for the replay: one message per file in `cur/` and
//! `new/` (not `tmp/`, where deliveries are still being written), in order
//! of file name, which Maildir starts with the delivery time.
//!
//! Only regular files are read (a link, a FIFO or a socket is passed
//! over: a FIFO would block the replay), each up to
//! [`MAX_MESSAGE_BYTES`]; the engine reads at most `scan.max_parse_bytes`
//! of a message anyway.

use std::io::{self, Read};
use std::path::{Path, PathBuf};

/// Most bytes read of one message file.
pub const MAX_MESSAGE_BYTES: u64 = 64 << 20;

/// The directory is a Maildir: it has `cur/` or `new/`.
pub fn is_maildir(dir: &Path) -> bool {
    dir.join("cur").is_dir() || dir.join("new").is_dir()
}

/// The message files of the Maildir `dir`, in order of file name.
///
/// # Errors
/// `dir` is no Maildir, or a folder of it cannot be listed.
pub fn files(dir: &Path) -> io::Result<Vec<PathBuf>> {
    if !is_maildir(dir) {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "a directory that is no Maildir (it has neither cur/ nor new/)",
        ));
    }
    let mut files = Vec::new();
    for sub in ["cur", "new"] {
        let entries = match std::fs::read_dir(dir.join(sub)) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => continue,
            Err(e) => return Err(e),
        };
        for entry in entries {
            let entry = entry?;
            // file_type() does not follow links.
            if entry.file_type()?.is_file() {
                files.push(entry.path());
            }
        }
    }
    files.sort_by(|a, b| a.file_name().cmp(&b.file_name()));
    Ok(files)
}

/// One message file, up to `max` bytes and at most [`MAX_MESSAGE_BYTES`].
///
/// # Errors
/// The file cannot be opened or read.
pub fn read_message(path: &Path, max: usize) -> io::Result<Vec<u8>> {
    let mut bytes = Vec::new();
    std::fs::File::open(path)?
        .take(MAX_MESSAGE_BYTES.min(max as u64))
        .read_to_end(&mut bytes)?;
    Ok(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_cur_and_new_in_name_order_and_only_regular_files() {
        let dir = tempfile::tempdir().unwrap();
        let md = dir.path();
        for sub in ["cur", "new", "tmp"] {
            std::fs::create_dir(md.join(sub)).unwrap();
        }
        std::fs::write(md.join("new/2000.b"), "Subject: b\n\nb\n").unwrap();
        std::fs::write(md.join("cur/1000.a:2,S"), "Subject: a\n\na\n").unwrap();
        std::fs::write(md.join("tmp/0500.x"), "Subject: x\n\nx\n").unwrap();
        std::os::unix::fs::symlink("/dev/zero", md.join("new/1500.link")).unwrap();
        let f = files(md).unwrap();
        let names: Vec<_> = f
            .iter()
            .map(|p| p.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(names, ["1000.a:2,S", "2000.b"]);
        assert_eq!(read_message(&f[0], 1 << 20).unwrap(), b"Subject: a\n\na\n");
        assert_eq!(read_message(&f[0], 4).unwrap(), b"Subj");
    }

    #[test]
    fn a_directory_without_cur_or_new_is_no_maildir() {
        let dir = tempfile::tempdir().unwrap();
        let e = files(dir.path()).unwrap_err();
        assert_eq!(e.kind(), io::ErrorKind::InvalidInput);
    }
}
