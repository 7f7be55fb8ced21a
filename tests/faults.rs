//! Faults in the state directory: the disk fills up, then the directory
//! turns read-only, while the daemon serves. Each failed snapshot is
//! logged, mail keeps flowing, the previous snapshot stays intact (no
//! temporary files left behind), and a restart continues from it.
//!
//! Needs root to mount a small tmpfs as the state directory; ignored,
//! with the reason, otherwise (CI runs as root).

mod common;

use std::fs;
use std::path::Path;
use std::process::Command;

use common::daemon::{header, Daemon};
use common::{open_unix, spam, transact};
use indymilter_test::Status;

struct Mount(std::path::PathBuf);

impl Mount {
    fn tmpfs(at: &Path, size: &str) -> Option<Mount> {
        fs::create_dir_all(at).unwrap();
        let ok = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(at)
            .status()
            .is_ok_and(|s| s.success());
        ok.then(|| Mount(at.to_owned()))
    }

    fn remount(&self, opts: &str) {
        let st = Command::new("mount")
            .args(["-o", &format!("remount,{opts}")])
            .arg(&self.0)
            .status()
            .unwrap();
        assert!(st.success());
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).status();
    }
}

async fn deliver(socket: &Path, i: usize) -> Option<String> {
    let mut conn = open_unix(socket).await;
    let (a, st) = transact(&mut conn, &spam(&common::name(i), 8000 + i as u32)).await;
    assert_eq!(st, Status::Accept, "message {i} accepted");
    conn.close().await.unwrap();
    header(&a)
}

/// Fills the file system at `dir` to the last byte.
fn fill(dir: &Path) {
    use std::io::Write;
    let mut f = fs::File::create(dir.join("filler")).unwrap();
    let block = vec![0u8; 4096];
    while f.write_all(&block).is_ok() {}
    let _ = f.sync_all();
}

fn tmp_files(dir: &Path) -> Vec<String> {
    fs::read_dir(dir)
        .unwrap()
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains(".tmp"))
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
#[cfg_attr(not(bulkwatch_root), ignore = "needs root (mounts a small tmpfs)")]
async fn full_or_read_only_state_dir_keeps_serving_and_the_old_snapshot() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let Some(mount) = Mount::tmpfs(&state, "1m") else {
        panic!("cannot mount a tmpfs, as root: is this a container without CAP_SYS_ADMIN?");
    };
    let socket = dir.path().join("milter.sock");
    let config = dir.path().join("bulkwatch.toml");
    let log = dir.path().join("daemon.log");
    fs::write(
        &config,
        format!(
            "[milter]\nsocket = \"unix:{}\"\n\n[state]\nstate_dir = \"{}\"\nsnapshot_interval_secs = 1\n\n\
             [metrics]\nlisten = \"\"\n\n[thresholds]\nbulk_threshold = 8.0\nsuspect_threshold = 3.0\n\n\
             [window]\nmax_entries = 1000\n\n[exact]\nbloom_items = 1000\n",
            socket.display(),
            state.display()
        ),
    )
    .unwrap();
    let snap = state.join("state.bin");

    let mut d = Daemon::start(&config, &log, &socket);
    for i in 0..3 {
        deliver(&socket, i).await;
    }
    // The periodic snapshot holds the three messages once it differs from
    // an empty engine's; wait for the daemon to have written it.
    common::redis::wait_for(
        || {
            fs::read(&snap).is_ok_and(|b| {
                bulkwatch::store::snapshot::decode(
                    &b,
                    &bulkwatch::config::Config::load(&config).unwrap(),
                )
                .is_ok_and(|(e, _)| e.stats().window_entries == 3)
            })
        },
        "a snapshot with three messages",
    );
    let before = fs::read(&snap).unwrap();

    // Disk full: snapshots fail, mail flows, the old snapshot stays.
    fill(&state);
    for i in 3..5 {
        deliver(&socket, i).await;
    }
    d.wait_log("snapshot failed");
    assert_eq!(fs::read(&snap).unwrap(), before, "previous snapshot intact");
    assert!(tmp_files(&state).is_empty(), "no temporary file left");

    // Read-only: the same.
    fs::remove_file(state.join("filler")).unwrap();
    mount.remount("ro");
    let failures = d.log_text().matches("snapshot failed").count();
    let h = deliver(&socket, 5).await.unwrap_or_default();
    assert!(h.starts_with("suspect;") && h.contains("size=6"), "{h}");
    common::redis::wait_for(
        || d.log_text().matches("snapshot failed").count() > failures,
        "a failed snapshot on the read-only directory",
    );
    assert_eq!(fs::read(&snap).unwrap(), before);
    let st = d.stop();
    assert_eq!(
        st.code(),
        Some(2),
        "the exit status says the last snapshot failed: {st}"
    );
    assert!(d_log(&log).contains("snapshot at shutdown failed"));

    // Writable again: a restart continues from the old snapshot (3
    // messages), so the next copy is the 4th.
    mount.remount("rw");
    let d = Daemon::start(&config, &log, &socket);
    assert!(d.log_text().contains("snapshot loaded"), "{}", d.log_text());
    let h = deliver(&socket, 6).await.unwrap_or_default();
    assert!(h.starts_with("suspect;") && h.contains("size=4"), "{h}");
    assert!(d.stop().success());
}

fn d_log(p: &Path) -> String {
    fs::read_to_string(p).unwrap_or_default()
}
