//! Files read and written the careful way: every state and configuration
//! file of bulkwatch goes through here.
//!
//! - **Reading** ([`read_regular`]): only a regular file is read. The path
//!   is looked at before it is opened (opening a FIFO blocks, opening a
//!   device may act), opened without blocking, looked at again through
//!   the open descriptor (the path may have been replaced meanwhile), and
//!   read up to a bound given by the caller: a file larger than that, or
//!   one that grows while it is read, is refused. Under [`Links::Refuse`]
//!   (files inside the state directory) a symbolic link is refused too,
//!   whatever it points to (`O_NOFOLLOW`); the configuration file may be a
//!   link ([`Links::Follow`]) to a regular file.
//! - **Writing** ([`write_atomic`], [`create_new`]): a new file is created
//!   exclusively (`O_CREAT|O_EXCL|O_NOFOLLOW`), so a link or a file planted
//!   at its name is never written through; a replaced file is written as a
//!   new temporary file, synced and renamed over the old one.

use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

/// What went wrong with a file.
#[derive(Debug, thiserror::Error)]
pub enum FileError {
    #[error("cannot {op} {path}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{path} is {kind}, not a regular file")]
    NotRegular { path: PathBuf, kind: &'static str },
    #[error("{path} has {size} bytes, more than the {max} it may have")]
    TooLarge { path: PathBuf, size: u64, max: u64 },
    #[error("{path} grew while it was read")]
    Grew { path: PathBuf },
}

impl FileError {
    /// The file was not there.
    pub fn is_not_found(&self) -> bool {
        matches!(self, FileError::Io { source, .. } if source.kind() == io::ErrorKind::NotFound)
    }
}

/// Whether a symbolic link may stand for the file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Links {
    /// A link is refused (files in the state directory).
    Refuse,
    /// A link to a regular file is read (the configuration file).
    Follow,
}

/// What a file that is not regular is, in words.
pub fn kind(t: fs::FileType) -> &'static str {
    if t.is_symlink() {
        "a symbolic link"
    } else if t.is_dir() {
        "a directory"
    } else if t.is_fifo() {
        "a FIFO"
    } else if t.is_socket() {
        "a socket"
    } else if t.is_char_device() {
        "a character device"
    } else if t.is_block_device() {
        "a block device"
    } else {
        "not a regular file"
    }
}

/// Reads the regular file at `path`, at most `max` bytes (module
/// documentation).
///
/// # Errors
/// `NotRegular` for anything but a regular file (a symbolic link under
/// [`Links::Refuse`]), `TooLarge` above `max`, `Grew` for a file that grew
/// while read, `Io` when it cannot be looked at, opened or read.
pub fn read_regular(path: &Path, max: u64, links: Links) -> Result<Vec<u8>, FileError> {
    let io = |op: &'static str| {
        move |source| FileError::Io {
            op,
            path: path.to_owned(),
            source,
        }
    };
    let not_regular = |kind| FileError::NotRegular {
        path: path.to_owned(),
        kind,
    };
    let before = match links {
        Links::Refuse => fs::symlink_metadata(path),
        Links::Follow => fs::metadata(path),
    }
    .map_err(io("stat"))?;
    if !before.file_type().is_file() {
        return Err(not_regular(kind(before.file_type())));
    }
    // O_NONBLOCK: a FIFO put there since cannot block the open; O_NOCTTY:
    // a terminal cannot become ours.
    let mut flags = libc::O_NONBLOCK | libc::O_NOCTTY;
    if links == Links::Refuse {
        flags |= libc::O_NOFOLLOW;
    }
    let f = fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)
        .map_err(|e| match e.raw_os_error() {
            Some(libc::ELOOP) if links == Links::Refuse => not_regular("a symbolic link"),
            _ => io("open")(e),
        })?;
    let meta = f.metadata().map_err(io("stat"))?;
    if !meta.file_type().is_file() {
        return Err(not_regular(kind(meta.file_type())));
    }
    if meta.len() > max {
        return Err(FileError::TooLarge {
            path: path.to_owned(),
            size: meta.len(),
            max,
        });
    }
    let mut bytes = Vec::with_capacity(usize::try_from(meta.len()).unwrap_or(0));
    // One byte more than its size: a file that grows while read is refused.
    (&f).take(meta.len().saturating_add(1))
        .read_to_end(&mut bytes)
        .map_err(io("read"))?;
    if bytes.len() as u64 > meta.len() {
        return Err(FileError::Grew {
            path: path.to_owned(),
        });
    }
    Ok(bytes)
}

/// Creates `path` with `bytes` and `mode`; never opens an existing file or
/// follows a link at `path`.
///
/// # Errors
/// `Io`: the file exists (anything at that name), or cannot be written.
pub fn create_new(path: &Path, bytes: &[u8], mode: u32) -> Result<(), FileError> {
    let io = |op: &'static str| {
        move |source| FileError::Io {
            op,
            path: path.to_owned(),
            source,
        }
    };
    let mut f = fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode)
        .custom_flags(libc::O_NOFOLLOW)
        .open(path)
        .map_err(io("create"))?;
    f.write_all(bytes).map_err(io("write"))?;
    f.sync_all().map_err(io("fsync"))
}

/// Writes `bytes` to `dir/name` atomically: a new temporary file in `dir`
/// (created exclusively, `mode`), fsync, rename over `name`, fsync `dir`.
/// On error the temporary file is removed and the previous file is
/// untouched. Temporary names start `.<name>.tmp-`.
///
/// # Errors
/// `Io` naming the step and path that failed.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8], mode: u32) -> Result<PathBuf, FileError> {
    let target = dir.join(name);
    // Unique per write: two writes in flight must not share a temporary
    // file, and a name taken already (something planted there) is passed
    // over for the next one.
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let mut attempt = 0;
    let (tmp, created) = loop {
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let tmp = dir.join(format!(".{name}.tmp-{}-{n}-{nanos}", std::process::id()));
        let created = create_new(&tmp, bytes, mode);
        let taken = matches!(&created, Err(FileError::Io { source, .. })
            if source.kind() == io::ErrorKind::AlreadyExists);
        attempt += 1;
        if !taken || attempt >= 16 {
            break (tmp, created);
        }
    };
    let result = created.and_then(|()| {
        fs::rename(&tmp, &target).map_err(|source| FileError::Io {
            op: "rename into place",
            path: target.clone(),
            source,
        })?;
        File::open(dir)
            .and_then(|d| d.sync_all())
            .map_err(|source| FileError::Io {
                op: "fsync directory",
                path: dir.to_owned(),
                source,
            })
    });
    if let Err(e) = &result {
        // Never remove what someone else put at the name.
        let ours = !matches!(e, FileError::Io { source, .. }
            if source.kind() == io::ErrorKind::AlreadyExists);
        if ours {
            let _ = fs::remove_file(&tmp);
        }
    }
    result.map(|()| target)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_regular_files_within_the_bound_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        fs::write(&file, b"hello").unwrap();
        assert_eq!(read_regular(&file, 5, Links::Refuse).unwrap(), b"hello");
        assert!(matches!(
            read_regular(&file, 4, Links::Refuse),
            Err(FileError::TooLarge { size: 5, .. })
        ));
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&file, &link).unwrap();
        assert!(matches!(
            read_regular(&link, 5, Links::Refuse),
            Err(FileError::NotRegular {
                kind: "a symbolic link",
                ..
            })
        ));
        assert_eq!(read_regular(&link, 5, Links::Follow).unwrap(), b"hello");
        let zero = dir.path().join("zero");
        std::os::unix::fs::symlink("/dev/zero", &zero).unwrap();
        for links in [Links::Refuse, Links::Follow] {
            assert!(matches!(
                read_regular(&zero, 1 << 20, links),
                Err(FileError::NotRegular { .. })
            ));
        }
        assert!(matches!(
            read_regular(dir.path(), 5, Links::Follow),
            Err(FileError::NotRegular {
                kind: "a directory",
                ..
            })
        ));
        assert!(read_regular(&dir.path().join("none"), 5, Links::Follow)
            .unwrap_err()
            .is_not_found());
    }

    #[test]
    fn writes_never_go_through_a_planted_link() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        fs::write(&victim, b"keep").unwrap();
        let planted = dir.path().join("new");
        std::os::unix::fs::symlink(&victim, &planted).unwrap();
        assert!(create_new(&planted, b"evil", 0o600).is_err());
        assert_eq!(fs::read(&victim).unwrap(), b"keep");
        // A planted temporary name cannot catch an atomic write either:
        // its name is new each time, and the rename replaces the link.
        let target = write_atomic(dir.path(), "new", b"data", 0o600).unwrap();
        assert_eq!(fs::read(&target).unwrap(), b"data");
        assert!(!fs::symlink_metadata(&target).unwrap().is_symlink());
        assert_eq!(fs::read(&victim).unwrap(), b"keep");
    }
}
