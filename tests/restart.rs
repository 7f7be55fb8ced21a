//! The built binary as a daemon: a campaign counted before SIGTERM keeps
//! counting after a restart (snapshot), and SIGHUP with an invalid file
//! leaves it serving with the old settings while a valid one takes effect;
//! and once it says "stopped" it exits at once, however full its window.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::time::Duration;

use bulkwatch::store::Store;
use common::daemon::{header, Daemon};
use common::{open_unix, spam, transact};
use indymilter_test::Status;

/// A temporary directory and the names a daemon's test uses in it: the
/// milter socket, the state directory, the configuration file and the
/// daemon's log (none of them made yet).
struct Site {
    dir: tempfile::TempDir,
    socket: PathBuf,
    state: PathBuf,
    config: PathBuf,
    log: PathBuf,
}

fn site() -> Site {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path();
    Site {
        socket: p.join("milter.sock"),
        state: p.join("state"),
        config: p.join("bulkwatch.toml"),
        log: p.join("daemon.log"),
        dir,
    }
}

/// A site whose configuration is written, with `policy.bulk =
/// bulk_action`.
fn configured(bulk_action: &str) -> Site {
    let s = site();
    fs::write(&s.config, config_text(&s.socket, &s.state, bulk_action)).unwrap();
    s
}

fn config_text(socket: &Path, state: &Path, bulk_action: &str) -> String {
    format!(
        "[milter]\nsocket = \"unix:{}\"\n\n[state]\nstate_dir = \"{}\"\nsnapshot_interval_secs = 3600\n\n\
         [metrics]\nlisten = \"\"\n\n[thresholds]\nbulk_threshold = 5.0\nsuspect_threshold = 3.0\n\n\
         [window]\nmax_entries = 10000\n\n[exact]\nbloom_items = 10000\n\n[policy]\nbulk = \"{bulk_action}\"\n",
        socket.display(),
        state.display()
    )
}

async fn deliver(socket: &Path, i: usize) -> (indymilter_test::EomActions, Status) {
    let mut conn = open_unix(socket).await;
    let r = transact(&mut conn, &spam(&common::name(i), 5000 + i as u32)).await;
    conn.close().await.unwrap();
    r
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn campaign_survives_restart_and_bad_reload_keeps_serving() {
    let Site {
        dir: _dir,
        socket,
        state,
        config,
        log,
    } = configured("tag");

    // Three copies: suspect, not bulk yet.
    let d = Daemon::start(&config, &log, &socket);
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = fs::metadata(&socket).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o660, "milter.socket_mode default applied");
    }
    for i in 0..3 {
        let (a, s) = deliver(&socket, i).await;
        assert_eq!(s, Status::Accept);
        assert_eq!(header(&a).is_some(), i == 2, "message {i}: {a:?}");
    }
    let st = d.stop();
    assert!(st.success(), "exit status {st}");
    assert!(
        state.join("state.bin").exists(),
        "snapshot written at shutdown"
    );
    assert!(!socket.exists(), "socket removed at shutdown");

    // After the restart the count goes on: copies 4 and 5, the 5th is bulk.
    let mut d = Daemon::start(&config, &log, &socket);
    assert!(d.log_text().contains("snapshot loaded"), "{}", d.log_text());
    let (a, _) = deliver(&socket, 3).await;
    assert!(
        header(&a).is_some_and(|h| h.starts_with("suspect;")),
        "{a:?}"
    );
    let (a, _) = deliver(&socket, 4).await;
    let h = header(&a).unwrap_or_default();
    assert!(h.starts_with("bulk;") && h.contains("size=5"), "{h}");

    // An invalid file is refused; the daemon serves with the old settings.
    fs::write(&config, "[thresholds]\nbulk_threshold = \"many\"\n").unwrap();
    d.signal("-HUP");
    d.wait_log("reload refused");
    let (a, s) = deliver(&socket, 5).await;
    assert_eq!(s, Status::Accept);
    assert!(
        header(&a).is_some_and(|h| h.starts_with("bulk;") && h.contains("size=6")),
        "{a:?}"
    );
    assert!(
        d.log_text().contains("bulk_threshold"),
        "the error names the key"
    );
    // A syntax error is refused on one log line (the parser's own text
    // quotes the line under a caret over several), and no key is made up.
    fs::write(&config, "[thresholds\nbulk_threshold = 5\n").unwrap();
    let before = d.log_text().lines().count();
    d.signal("-HUP");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    while d.log_text().matches("reload refused").count() < 2 {
        assert!(std::time::Instant::now() < deadline, "{}", d.log_text());
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let log = d.log_text();
    let new: Vec<&str> = log.lines().skip(before).collect();
    let refusal: Vec<&&str> = new
        .iter()
        .filter(|l| l.contains("reload refused"))
        .collect();
    assert_eq!(refusal.len(), 1, "{log}");
    assert!(refusal[0].contains("line 1"), "the position is kept: {log}");
    assert!(
        !refusal[0].contains("key="),
        "no key for a syntax error: {log}"
    );
    assert!(
        refusal[0].contains("`[thresholds`") && !refusal[0].contains('^'),
        "the quoted line is kept, the caret dropped: {log}"
    );

    // A valid file takes effect for the next message.
    fs::write(&config, config_text(&socket, &state, "reject")).unwrap();
    d.signal("-HUP");
    d.wait_log("configuration reloaded");
    let (_, s) = deliver(&socket, 6).await;
    assert!(matches!(s, Status::Reject { .. }), "{s:?}");

    let st = d.stop();
    assert!(st.success(), "exit status {st}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupt_snapshot_is_moved_aside() {
    let Site {
        dir,
        socket,
        state,
        config,
        ..
    } = configured("tag");
    fs::create_dir_all(&state).unwrap();
    fs::write(state.join("state.bin"), b"BWSNAP\r\n not really").unwrap();
    let d = Daemon::start(&config, &dir.path().join("daemon.log"), &socket);
    assert!(d.log_text().contains("moved aside"), "{}", d.log_text());
    let (_, s) = deliver(&socket, 0).await;
    assert_eq!(s, Status::Accept);
    assert!(d.stop().success());
    let names: Vec<String> = fs::read_dir(&state)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    assert!(
        names.iter().any(|n| n.starts_with("state.bin.corrupt-")),
        "{names:?}"
    );
    assert!(
        names.iter().any(|n| n == "state.bin"),
        "a fresh snapshot at shutdown: {names:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn kill_9_never_leaves_a_broken_snapshot() {
    let Site {
        dir,
        socket,
        state,
        config,
        ..
    } = site();
    let text = config_text(&socket, &state, "tag").replace(
        "snapshot_interval_secs = 3600",
        "snapshot_interval_secs = 1",
    );
    fs::write(&config, text).unwrap();
    let cfg = bulkwatch::config::Config::load(&config).unwrap();
    let snapshot = state.join("state.bin");
    // Kill at different points of the snapshot cycle; whatever is in place
    // afterwards must load (or be absent before the first snapshot).
    for (round, pause_ms) in [0u64, 350, 900, 1200, 1700].into_iter().enumerate() {
        let mut d = Daemon::start(&config, &dir.path().join("daemon.log"), &socket);
        for i in 0..3 {
            deliver(&socket, round * 3 + i).await;
        }
        tokio::time::sleep(Duration::from_millis(pause_ms)).await;
        d.child.kill().unwrap();
        d.child.wait().unwrap();
        if snapshot.exists() {
            bulkwatch::store::snapshot::load_engine(&snapshot, &cfg)
                .unwrap_or_else(|e| panic!("round {round}: broken snapshot: {e}"));
        }
        let _ = fs::remove_file(&socket);
        let leftovers: Vec<String> = fs::read_dir(&state)
            .map(|rd| {
                rd.flatten()
                    .map(|e| e.file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        assert!(
            leftovers
                .iter()
                .all(|n| n == "state.bin"
                    || n == "bulkwatch.lock"
                    || n == "control.sock"
                    || n == "control.json"
                    || n == "control.json.tmp"
                    || n.starts_with(".state.bin.tmp-")),
            "only the lock file, the snapshot, the control socket (replaced at the next start) and at most an interrupted temporary file: {leftovers:?}"
        );
    }
}

/// The daemon ends promptly once it has logged
/// "stopped", however full its window. It used to free the window, the
/// index and the campaigns allocation by allocation first (over a second
/// at 10^6 entries; about 0.1 s at the 10^5 here), which the kernel does at
/// once at exit.
#[test]
fn the_daemon_exits_promptly_after_stopped_with_a_full_window() {
    use bulkwatch::config::Config;
    use bulkwatch::engine::{Engine, Observation, UnixSecs};
    use std::time::Instant;

    let Site {
        dir: _dir,
        socket,
        state,
        config,
        log,
    } = site();
    fs::create_dir_all(&state).unwrap();
    fs::write(
        &config,
        format!(
            "[milter]\nsocket = \"unix:{}\"\n[state]\nstate_dir = \"{}\"\n\
             snapshot_interval_secs = 3600\n[metrics]\nlisten = \"\"\n",
            socket.display(),
            state.display()
        ),
    )
    .unwrap();

    // 10^5 unrelated messages of the last hour, each its own campaign.
    let cfg = Config::default();
    let mut engine = Engine::new(&cfg);
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs();
    let mut x: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    const N: u64 = 100_000;
    for i in 0..N {
        let mut exact = [0u8; 32];
        for chunk in exact.chunks_mut(8) {
            chunk.copy_from_slice(&next().to_le_bytes());
        }
        let obs = Observation {
            exact,
            simhash: next(),
            sketch: next(),
            bands: (0..cfg.window.minhash_bands).map(|_| next()).collect(),
            smallest: Vec::new(),
            sentences: Default::default(),
            near: true,
            parties: bulkwatch::engine::party::Parties::anonymous(1),
            sender: next() as u16,
            sender_name: None,
            subject: Some(format!("offer {i}")),
            features: 40,
            list: false,
            list_post: false,
            kept_cut: None,
            partial: false,
            deeper: [0; 2],
            reply: false,
            thresholds: cfg.thresholds.clone(),
        };
        Store::record(&mut engine, &obs, UnixSecs(now - 3600 + i * 3600 / N)).unwrap();
    }
    let bytes = bulkwatch::store::snapshot::encode(&engine, now);
    drop(engine);
    bulkwatch::store::snapshot::write_atomic(&state, "state.bin", &bytes).unwrap();

    let mut d = Daemon::start(&config, &log, &socket);
    assert!(
        d.log_text().contains("window_entries=100000"),
        "{}",
        d.log_text()
    );
    d.signal("-TERM");
    let deadline = Instant::now() + Duration::from_secs(60);
    while !d.log_text().contains("stopped") {
        assert!(Instant::now() < deadline, "no stop:\n{}", d.log_text());
        std::thread::sleep(Duration::from_millis(1));
    }
    let stopped = Instant::now();
    let status = loop {
        if let Some(st) = d.child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "no exit:\n{}", d.log_text());
        std::thread::sleep(Duration::from_millis(1));
    };
    let after = stopped.elapsed();
    assert!(status.success(), "{status}");
    // Freeing this window took 80 to 130 ms in a debug build; exiting
    // without it, under 10.
    assert!(
        after < Duration::from_millis(50),
        "exit {after:?} after \"stopped\""
    );
}

/// Suspicious values are logged with their lines, at
/// start and again when a reload brings new ones; they stop nothing.
#[test]
fn serve_logs_suspicious_values_with_their_lines_at_start_and_on_reload() {
    let Site {
        dir: _dir,
        socket,
        state,
        config,
        log,
    } = site();
    let text = |extra: &str| {
        format!(
            "[milter]\nsocket = \"unix:{}\"\n[state]\nstate_dir = \"{}\"\n[metrics]\nlisten = \"\"\n{extra}",
            socket.display(),
            state.display()
        )
    };
    // bulk_threshold on line 8.
    fs::write(
        &config,
        text("[thresholds]\nbulk_threshold = 2.0\nsuspect_threshold = 1.0\n"),
    )
    .unwrap();
    let mut d = Daemon::start(&config, &log, &socket);
    d.wait_log("suspicious value");
    let first = d.log_text();
    assert!(
        first.contains("key=\"thresholds.bulk_threshold\"") && first.contains("line=8"),
        "{first}"
    );
    // window_secs on line 8, on reload.
    fs::write(&config, text("[window]\nwindow_secs = 120\n")).unwrap();
    d.signal("-HUP");
    d.wait_log("key=\"window.window_secs\"");
    assert!(d.log_text().contains("line=8"), "{}", d.log_text());
    assert!(d.stop().success());
}

/// `--log-format syslog` (issue 41 item 10, hosts without systemd's
/// journal): every line is one datagram to the syslog socket, in the form
/// `logger` sends, with the level as the priority and no time of its own;
/// stderr stays quiet. Bounded waits only: the daemon's own lines say
/// when it got there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn syslog_lines_are_one_datagram_each_with_their_priority() {
    let Site {
        dir,
        socket,
        config,
        ..
    } = configured("tag");
    let log_socket = dir.path().join("log.sock");
    let syslog = std::os::unix::net::UnixDatagram::bind(&log_socket).unwrap();
    syslog
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let stderr = dir.path().join("stderr.log");
    let d = Daemon::spawn_with(
        &config,
        &stderr,
        None,
        &[
            "--log-format".as_ref(),
            "syslog".as_ref(),
            "--syslog-socket".as_ref(),
            log_socket.as_os_str(),
        ],
    );
    let mut lines = Vec::new();
    let mut buf = vec![0u8; 16384];
    let recv = |buf: &mut Vec<u8>| {
        let n = syslog.recv(buf).expect("a datagram within the bound");
        String::from_utf8_lossy(&buf[..n]).into_owned()
    };
    while !lines
        .iter()
        .any(|l: &String| l.contains("bulkwatch serving"))
    {
        lines.push(recv(&mut buf));
    }
    // One message: its "message judged" line comes as its own datagram.
    let _ = deliver(&socket, 0).await;
    loop {
        let l = recv(&mut buf);
        let done = l.contains("message judged");
        lines.push(l);
        if done {
            break;
        }
    }
    let st = d.stop();
    assert!(st.success(), "exit status {st}");
    for l in &lines {
        let (pri, rest) = l
            .strip_prefix('<')
            .and_then(|r| r.split_once('>'))
            .unwrap_or_else(|| panic!("no priority: {l:?}"));
        // Facility mail (2): Postfix's, so that the lines sit beside its
        // own in mail.log.
        assert!(["19", "20", "22", "23"].contains(&pri), "{l:?}");
        assert!(rest.starts_with("bulkwatch["), "{l:?}");
        assert!(!l.contains('\n'), "one line a datagram: {l:?}");
        // No time of its own (the syslog daemon stamps it): the level
        // comes first.
        let line = rest.split_once("]: ").map_or("", |(_, m)| m).trim_start();
        assert!(
            ["ERROR", "WARN", "INFO", "DEBUG"]
                .iter()
                .any(|l| line.starts_with(l)),
            "{l:?}"
        );
    }
    let judged = lines.iter().find(|l| l.contains("message judged")).unwrap();
    assert!(judged.starts_with("<22>bulkwatch["), "{judged}");
    assert!(judged.contains("queue_id="), "{judged}");
    assert_eq!(
        fs::read_to_string(&stderr).unwrap(),
        "",
        "stderr stays quiet"
    );
}

/// A syslog daemon that cannot be reached at start: the daemon says so on
/// stderr and logs there (docs/admin/packaging.md), and serves.
#[test]
fn an_unreachable_syslog_means_stderr() {
    let Site { dir, config, .. } = configured("tag");
    let stderr = dir.path().join("stderr.log");
    let missing = dir.path().join("no-syslog.sock");
    let mut d = Daemon::spawn_with(
        &config,
        &stderr,
        None,
        &[
            "--log-format".as_ref(),
            "syslog".as_ref(),
            "--syslog-socket".as_ref(),
            missing.as_os_str(),
        ],
    );
    d.wait_log("bulkwatch serving");
    assert!(
        d.log_text().contains("cannot reach the syslog daemon at"),
        "{}",
        d.log_text()
    );
    let st = d.stop();
    assert!(st.success(), "exit status {st}");
}

/// A daemon that cannot start (here: its milter port is taken) tells a
/// supervisor waiting for READY=1 (systemd, or the init script's
/// `start-stop-daemon --notify-await`) at once, with ERRNO= (the system's
/// error: EADDRINUSE), instead of leaving it to a timeout; and with
/// `--log-format syslog` the reason reaches syslog, where a daemon started
/// in the background has its only log.
#[test]
fn a_daemon_that_cannot_start_says_errno_to_its_supervisor_and_why_to_syslog() {
    let s = site();
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    fs::write(
        &s.config,
        format!(
            "[milter]\nsocket = \"inet:{}\"\n\n[state]\nstate_dir = \"{}\"\n\n\
             [metrics]\nlisten = \"\"\n",
            taken.local_addr().unwrap(),
            s.state.display()
        ),
    )
    .unwrap();
    let notify_path = s.dir.path().join("notify.sock");
    let notify = std::os::unix::net::UnixDatagram::bind(&notify_path).unwrap();
    let log_path = s.dir.path().join("log.sock");
    let syslog = std::os::unix::net::UnixDatagram::bind(&log_path).unwrap();
    for sock in [&notify, &syslog] {
        sock.set_nonblocking(true).unwrap();
    }
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bulkwatch"))
        .args(["serve", "--log-format", "syslog", "--config"])
        .arg(&s.config)
        .arg("--syslog-socket")
        .arg(&log_path)
        .env("NOTIFY_SOCKET", &notify_path)
        .output()
        .unwrap();
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    // The process has exited: whatever it sent is queued on the sockets.
    let drain = |sock: &std::os::unix::net::UnixDatagram| {
        let mut got = Vec::new();
        let mut buf = vec![0u8; 16384];
        while let Ok(n) = sock.recv(&mut buf) {
            got.push(String::from_utf8_lossy(&buf[..n]).into_owned());
        }
        got
    };
    let notes = drain(&notify);
    assert!(
        notes.iter().any(|n| n.contains("ERRNO=98"))
            && !notes.iter().any(|n| n.contains("READY=1")),
        "{notes:?}"
    );
    let lines = drain(&syslog);
    assert!(
        lines
            .iter()
            .any(|l| l.contains("ERROR") && l.contains("cannot go on") && l.contains("in use")),
        "{lines:?}"
    );
    // And on stderr, for whoever started it in the foreground.
    assert!(String::from_utf8_lossy(&out.stderr).contains("bulkwatch: error:"));
    drop(taken);
}
