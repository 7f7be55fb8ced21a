//! `bulkwatch serve` under attack on its socket and its state directory:
//! a second instance cannot take a live socket, a first instance does not
//! remove a socket it did not create, two instances cannot share a state
//! directory, a FIFO or a link to /dev/zero as `state.bin` or
//! `control.json` cannot stall or exhaust startup, nor as the configuration
//! file a reload, a link planted where `control.json` is written is not
//! written through, an unwritable state directory stops the start, and a
//! snapshot at shutdown that fails makes the exit status non-zero.
//!
//! Each daemon is a child process; the tests wait for what it reports (a
//! log line, its exit) with generous bounds that only turn a hang into a
//! failure, and never depend on how fast it is.

mod common;

use std::fs;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::{open_unix, spam, transact, NAMES};
use indymilter_test::Status;

/// A bound on waits that only turns a hang into a failure.
const BOUND: Duration = Duration::from_secs(30);
/// Far more than this daemon needs at startup: more means it reads
/// something without bound.
const MAX_RSS_KB: u64 = 1 << 20;

fn config(dir: &Path, name: &str, socket: &str, state: &Path) -> PathBuf {
    let path = dir.join(format!("{name}.toml"));
    fs::write(
        &path,
        format!(
            "[milter]\nsocket = \"{socket}\"\n\n[state]\nstate_dir = \"{}\"\nsnapshot_interval_secs = 3600\n\n\
             [metrics]\nlisten = \"\"\n\n[window]\nmax_entries = 10000\n\n[exact]\nbloom_items = 10000\n",
            state.display()
        ),
    )
    .unwrap();
    path
}

fn unix(path: &Path) -> String {
    format!("unix:{}", path.display())
}

/// How a start ended.
#[derive(Debug)]
enum Start {
    Serving,
    Exited(ExitStatus),
}

struct Serve {
    child: Child,
    log: PathBuf,
}

impl Serve {
    fn spawn(config: &Path, log: &Path) -> Serve {
        Serve::spawn_as(config, log, None)
    }

    /// Started as `uid` (and the same gid) when given: std drops the
    /// supplementary groups too when root changes user.
    fn spawn_as(config: &Path, log: &Path, uid: Option<u32>) -> Serve {
        Serve::spawn_program(Path::new(env!("CARGO_BIN_EXE_bulkwatch")), config, log, uid)
    }

    /// [`Serve::spawn_as`] with another copy of the program.
    fn spawn_program(program: &Path, config: &Path, log: &Path, uid: Option<u32>) -> Serve {
        let out = fs::File::create(log).unwrap();
        let mut cmd = Command::new(program);
        cmd.args(["serve", "--config"])
            .arg(config)
            .env("RUST_LOG", "info")
            .env_remove("NOTIFY_SOCKET")
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(out);
        if let Some(id) = uid {
            use std::os::unix::process::CommandExt;
            cmd.uid(id).gid(id);
        }
        Serve {
            child: cmd.spawn().unwrap(),
            log: log.to_owned(),
        }
    }

    fn log_text(&self) -> String {
        fs::read_to_string(&self.log).unwrap_or_default()
    }

    fn rss_kb(&self) -> u64 {
        fs::read_to_string(format!("/proc/{}/status", self.child.id()))
            .ok()
            .and_then(|s| {
                s.lines()
                    .find_map(|l| l.strip_prefix("VmRSS:"))
                    .and_then(|v| v.split_whitespace().next()?.parse().ok())
            })
            .unwrap_or(0)
    }

    /// Waits until the daemon serves or exits (bounded; a daemon that
    /// reads without bound fails at once instead of exhausting memory).
    fn start(&mut self) -> Start {
        let deadline = Instant::now() + BOUND;
        loop {
            if self.log_text().contains("bulkwatch serving") {
                return Start::Serving;
            }
            if let Some(st) = self.child.try_wait().unwrap() {
                return Start::Exited(st);
            }
            let rss = self.rss_kb();
            if rss > MAX_RSS_KB {
                let _ = self.child.kill();
                panic!("{rss} kB resident while starting:\n{}", self.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "neither serving nor exited after {BOUND:?}:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }

    fn serving(&mut self) {
        match self.start() {
            Start::Serving => {}
            Start::Exited(st) => panic!("exited ({st}) instead of serving:\n{}", self.log_text()),
        }
    }

    /// The start must fail: the exit status, with the log.
    fn refused(&mut self) -> (ExitStatus, String) {
        match self.start() {
            Start::Exited(st) => (st, self.log_text()),
            Start::Serving => panic!("started serving:\n{}", self.log_text()),
        }
    }

    fn stop(mut self) -> (ExitStatus, String) {
        let st = Command::new("kill")
            .args(["-TERM", &self.child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
        let deadline = Instant::now() + BOUND;
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return (st, self.log_text());
            }
            assert!(
                Instant::now() < deadline,
                "did not stop:\n{}",
                self.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
}

impl Drop for Serve {
    fn drop(&mut self) {
        if let Ok(None) = self.child.try_wait() {
            let _ = self.child.kill();
            let _ = self.child.wait();
        }
    }
}

async fn deliver(socket: &Path, i: usize) -> Status {
    let mut conn = open_unix(socket).await;
    let (_, st) = transact(&mut conn, &spam(&common::name(i), 9000 + i as u32)).await;
    conn.close().await.unwrap();
    st
}

fn inode(p: &Path) -> (u64, u64) {
    let m = fs::symlink_metadata(p).unwrap();
    (m.dev(), m.ino())
}

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    v.sort();
    v
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_instance_on_a_live_socket_refuses_and_leaves_it() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("milter.sock");
    let a_cfg = config(dir.path(), "a", &unix(&socket), &dir.path().join("a"));
    let b_cfg = config(dir.path(), "b", &unix(&socket), &dir.path().join("b"));
    let mut a = Serve::spawn(&a_cfg, &dir.path().join("a.log"));
    a.serving();
    let before = inode(&socket);

    let (st, log) = Serve::spawn(&b_cfg, &dir.path().join("b.log")).refused();
    assert!(!st.success(), "{st}");
    assert!(
        log.contains(&format!(
            "another process is listening on unix:{}; refusing to take its socket",
            socket.display()
        )),
        "{log}"
    );
    assert_eq!(
        inode(&socket),
        before,
        "the first instance's socket is left"
    );
    assert_eq!(deliver(&socket, 0).await, Status::Accept, "still reachable");

    let (st, _) = a.stop();
    assert!(st.success(), "{st}");
    assert!(!socket.exists(), "its own socket removed at shutdown");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_leaves_a_socket_it_did_not_create() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("milter.sock");
    let a_cfg = config(dir.path(), "a", &unix(&socket), &dir.path().join("a"));
    let b_cfg = config(dir.path(), "b", &unix(&socket), &dir.path().join("b"));
    let mut a = Serve::spawn(&a_cfg, &dir.path().join("a.log"));
    a.serving();
    // The path is taken from under the first instance (removed and bound
    // anew by a second one): the first must not unlink it on its way out.
    fs::remove_file(&socket).unwrap();
    let mut b = Serve::spawn(&b_cfg, &dir.path().join("b.log"));
    b.serving();
    let theirs = inode(&socket);

    let (st, log) = a.stop();
    assert!(st.success(), "{st}\n{log}");
    assert_eq!(
        inode(&socket),
        theirs,
        "the second instance's socket is left"
    );
    assert_eq!(
        deliver(&socket, 1).await,
        Status::Accept,
        "survivor reachable"
    );
    let (st, _) = b.stop();
    assert!(st.success(), "{st}");
    assert!(!socket.exists());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn second_instance_on_a_locked_state_dir_exits_naming_the_holder() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let a_sock = dir.path().join("a.sock");
    let b_sock = dir.path().join("b.sock");
    let a_cfg = config(dir.path(), "a", &unix(&a_sock), &state);
    let b_cfg = config(dir.path(), "b", &unix(&b_sock), &state);
    let mut a = Serve::spawn(&a_cfg, &dir.path().join("a.log"));
    a.serving();
    let files = names(&state);

    let (st, log) = Serve::spawn(&b_cfg, &dir.path().join("b.log")).refused();
    assert!(!st.success(), "{st}");
    assert!(
        log.contains(&format!("pid {}", a.child.id()))
            && log.contains(&state.display().to_string()),
        "the error names the directory and the holder's pid:\n{log}"
    );
    assert!(!b_sock.exists(), "no socket bound");
    assert_eq!(names(&state), files, "no file touched");

    assert_eq!(deliver(&a_sock, 2).await, Status::Accept);
    let (st, _) = a.stop();
    assert!(st.success(), "{st}");
    assert!(state.join("state.bin").exists());
}

/// `state.bin` replaced by something that is no regular file: startup
/// completes (bounded), the thing is moved aside as it is, the daemon
/// starts empty and serves.
async fn hostile_state_bin(make: impl FnOnce(&Path), check_aside: impl FnOnce(&Path)) {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    fs::create_dir_all(&state).unwrap();
    make(&state.join("state.bin"));
    let socket = dir.path().join("milter.sock");
    let cfg = config(dir.path(), "a", &unix(&socket), &state);
    let mut d = Serve::spawn(&cfg, &dir.path().join("a.log"));
    d.serving();
    let log = d.log_text();
    assert!(
        log.contains("moved aside") && log.contains("not a regular file"),
        "{log}"
    );
    let aside: Vec<String> = names(&state)
        .into_iter()
        .filter(|n| n.starts_with("state.bin.corrupt-"))
        .collect();
    assert_eq!(aside.len(), 1, "{:?}", names(&state));
    check_aside(&state.join(&aside[0]));
    assert_eq!(deliver(&socket, 3).await, Status::Accept);
    let (st, log) = d.stop();
    assert!(st.success(), "{st}\n{log}");
    assert!(fs::symlink_metadata(state.join("state.bin"))
        .unwrap()
        .file_type()
        .is_file());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifo_as_state_bin_cannot_hang_startup() {
    use std::os::unix::fs::FileTypeExt;
    hostile_state_bin(
        |p| {
            let st = Command::new("mkfifo").arg(p).status().unwrap();
            assert!(st.success());
        },
        |aside| {
            let t = fs::symlink_metadata(aside).unwrap().file_type();
            assert!(t.is_fifo(), "the FIFO itself moved aside");
        },
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn symlink_to_dev_zero_as_state_bin_is_not_read() {
    use std::os::unix::fs::FileTypeExt;
    hostile_state_bin(
        |p| std::os::unix::fs::symlink("/dev/zero", p).unwrap(),
        |aside| {
            assert_eq!(
                fs::read_link(aside).unwrap(),
                Path::new("/dev/zero"),
                "the link itself moved aside"
            );
            let zero = fs::metadata("/dev/zero").unwrap().file_type();
            assert!(zero.is_char_device(), "its target untouched");
        },
    )
    .await;
}

/// A state directory the daemon cannot write into. Tests run as root here,
/// and root ignores directory permissions, so as root the daemon runs as
/// the unprivileged uid/gid 65534 ("nobody") and the directory is root's,
/// mode 0755; as any other user the directory is mode 0555. (A state_dir
/// under a regular file would not do: creating it fails, so even the old
/// code refused to start.) Twice: without a lock file (its creation
/// fails), and with a lock file the daemon may write (the write probe
/// catches it). The unprivileged user runs a copy of the program in the
/// test's own directory: the build's may sit in a directory only root may
/// enter (a clone under /root, mode 0700).
#[test]
fn unwritable_state_dir_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    let me = fs::metadata(dir.path()).unwrap().uid();
    let uid = (me == 0).then_some(65534);
    let program = dir.path().join("bulkwatch");
    fs::copy(env!("CARGO_BIN_EXE_bulkwatch"), &program).unwrap();
    fs::set_permissions(&program, fs::Permissions::from_mode(0o755)).unwrap();
    for with_lock in [false, true] {
        let state = dir.path().join(format!("state-{with_lock}"));
        fs::create_dir(&state).unwrap();
        if with_lock {
            let lock = state.join("bulkwatch.lock");
            fs::write(&lock, b"").unwrap();
            std::os::unix::fs::chown(&lock, uid, uid).unwrap();
        }
        let mode = if uid.is_some() { 0o755 } else { 0o555 };
        fs::set_permissions(&state, fs::Permissions::from_mode(mode)).unwrap();
        let cfg = config(
            dir.path(),
            &format!("a-{with_lock}"),
            &format!("inet:127.0.0.1:{}", free_port()),
            &state,
        );
        fs::set_permissions(&cfg, fs::Permissions::from_mode(0o644)).unwrap();
        let log = dir.path().join(format!("a-{with_lock}.log"));
        let (st, text) = Serve::spawn_program(&program, &cfg, &log, uid).refused();
        assert!(!st.success(), "{st}");
        assert!(
            text.contains(&format!(
                "state directory {} is not writable",
                state.display()
            )),
            "lock file present: {with_lock}\n{text}"
        );
        fs::set_permissions(&state, fs::Permissions::from_mode(0o755)).unwrap();
    }
}

/// The state directory turns into a regular file while the daemon runs
/// (works for root too: nothing can be created under a file), so the
/// snapshot at shutdown fails: logged, and the exit status says so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn failed_snapshot_at_shutdown_exits_non_zero() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    let socket = dir.path().join("milter.sock");
    let cfg = config(dir.path(), "a", &unix(&socket), &state);
    let mut d = Serve::spawn(&cfg, &dir.path().join("a.log"));
    d.serving();
    assert_eq!(deliver(&socket, 4).await, Status::Accept);
    fs::rename(&state, dir.path().join("state.gone")).unwrap();
    fs::write(&state, b"not a directory").unwrap();
    let (st, log) = d.stop();
    assert!(log.contains("snapshot at shutdown failed"), "{log}");
    assert_eq!(st.code(), Some(2), "{st}\n{log}");
    assert!(!socket.exists(), "the socket is still removed");
}

/// `control.json` (the corrections file) replaced by a FIFO or a link to
/// /dev/zero. Before, a FIFO hung the start forever (SIGTERM ignored) and
/// the link grew memory at 280 MB/s. Now it is refused as not a regular
/// file: the daemon starts (bounded, memory bounded), serves and stops.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn fifo_or_dev_zero_as_control_json_cannot_stall_startup() {
    for kind in ["fifo", "zero"] {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        fs::create_dir_all(&state).unwrap();
        let control = state.join("control.json");
        match kind {
            "fifo" => assert!(Command::new("mkfifo")
                .arg(&control)
                .status()
                .unwrap()
                .success()),
            _ => std::os::unix::fs::symlink("/dev/zero", &control).unwrap(),
        }
        let socket = dir.path().join("milter.sock");
        let cfg = config(dir.path(), "a", &unix(&socket), &state);
        let mut d = Serve::spawn(&cfg, &dir.path().join("a.log"));
        d.serving();
        let log = d.log_text();
        assert!(
            log.contains("control file unreadable") && log.contains("not a regular file"),
            "{kind}: {log}"
        );
        assert_eq!(deliver(&socket, 5).await, Status::Accept);
        let (st, log) = d.stop();
        assert!(st.success(), "{kind}: {st}\n{log}");
    }
}

/// A link planted where the corrections file's temporary copy used to be
/// written (`control.json.tmp`, and names of the form this build uses):
/// an `allow` writes `control.json` without writing through any.
/// Before, the `allow` overwrote the link's target.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_allow_never_writes_through_a_planted_link() {
    let dir = tempfile::tempdir().unwrap();
    let state = dir.path().join("state");
    fs::create_dir_all(&state).unwrap();
    let victim = dir.path().join("victim");
    fs::write(&victim, b"precious").unwrap();
    std::os::unix::fs::symlink(&victim, state.join("control.json.tmp")).unwrap();
    let socket = dir.path().join("milter.sock");
    let cfg = config(dir.path(), "a", &unix(&socket), &state);
    let mut text = fs::read_to_string(&cfg).unwrap();
    text.push_str("\n[thresholds]\nbulk_threshold = 2.0\nsuspect_threshold = 2.0\n");
    fs::write(&cfg, text).unwrap();
    let mut d = Serve::spawn(&cfg, &dir.path().join("a.log"));
    d.serving();
    let pid = d.child.id();
    for n in 0..4 {
        let _ =
            std::os::unix::fs::symlink(&victim, state.join(format!(".control.json.tmp-{pid}-{n}")));
    }
    // A campaign to allow: two copies of one text.
    let mut id = None;
    for (i, name) in NAMES.iter().enumerate().take(2) {
        let mut conn = open_unix(&socket).await;
        let (actions, _) = transact(&mut conn, &spam(name, 100 + i as u32)).await;
        conn.close().await.unwrap();
        id = common::daemon::header(&actions)
            .and_then(|h| h.split("campaign=").nth(1).map(|s| s[..12].to_owned()))
            .or(id);
    }
    let id = id.expect("a campaign id in the header");
    let (ok, out, err) = common::daemon::campaigns(&cfg, &["allow", &id]);
    assert!(ok, "{out}{err}");
    assert_eq!(fs::read(&victim).unwrap(), b"precious");
    let control = state.join("control.json");
    let meta = fs::symlink_metadata(&control).unwrap();
    assert!(meta.file_type().is_file(), "control.json written as a file");
    assert!(fs::read_to_string(&control).unwrap().contains(&id));
    let (st, log) = d.stop();
    assert!(st.success(), "{st}\n{log}");
}

/// A SIGHUP while the configuration file is a FIFO or a link to /dev/zero.
/// Before, a FIFO wedged the whole daemon (milter, metrics, SIGTERM) and
/// the link grew memory at 1.2 GB/s. Now the reload is refused, and the
/// milter serves on with the running configuration.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_from_a_fifo_or_dev_zero_never_stops_the_milter() {
    for kind in ["fifo", "zero"] {
        let dir = tempfile::tempdir().unwrap();
        let state = dir.path().join("state");
        let socket = dir.path().join("milter.sock");
        let cfg = config(dir.path(), "a", &unix(&socket), &state);
        let mut d = Serve::spawn(&cfg, &dir.path().join("a.log"));
        d.serving();
        fs::remove_file(&cfg).unwrap();
        match kind {
            "fifo" => assert!(Command::new("mkfifo").arg(&cfg).status().unwrap().success()),
            _ => std::os::unix::fs::symlink("/dev/zero", &cfg).unwrap(),
        }
        let st = Command::new("kill")
            .args(["-HUP", &d.child.id().to_string()])
            .status()
            .unwrap();
        assert!(st.success());
        let deadline = Instant::now() + BOUND;
        while !d.log_text().contains("reload refused") {
            assert!(Instant::now() < deadline, "{kind}: {}", d.log_text());
            assert!(d.rss_kb() < MAX_RSS_KB, "{kind}: reading without bound");
            std::thread::sleep(Duration::from_millis(50));
        }
        assert!(
            d.log_text().contains("not a regular file"),
            "{}",
            d.log_text()
        );
        assert_eq!(deliver(&socket, 6).await, Status::Accept);
        let (st, log) = d.stop();
        assert!(st.success(), "{kind}: {st}\n{log}");
    }
}
