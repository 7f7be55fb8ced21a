//! Campaigns at runtime (`bulkwatch campaigns`, `milter::control`): show,
//! allow and forget through the control handler of a milter fed through
//! the milter protocol, then through a daemon's socket with the CLI, and
//! across a restart.

mod common;

use std::fs;
use std::path::Path;

use bulkwatch::engine::Engine;
use bulkwatch::milter::control::{file_path, socket_path, Control};
use bulkwatch::milter::{unix_now, State};
use common::daemon::{campaigns, Daemon};
use common::{open_unix, send, spam, start_state, transact, NAMES};

fn handle(state: &State, line: &str) -> serde_json::Value {
    state.control.handle(state, line, unix_now())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn show_allow_and_forget_through_the_control_handler() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = common::config();
    let mut engine = Engine::new(&cfg);
    let control = Control::open(file_path(dir.path()), &mut engine);
    let m = start_state(State::new(engine).with_control(control)).await;
    for (i, name) in NAMES.iter().take(5).enumerate() {
        send(m.addr, &spam(name, i as u32)).await;
    }
    let id = m
        .state
        .with_view(|e| e.campaigns().next().map(|c| c.id.to_string()))
        .unwrap();

    // show: the campaign and its members, newest first, with queue ids.
    let a = handle(&m.state, &format!("show {id}"));
    assert_eq!(a["campaign"]["id"], id.as_str(), "{a}");
    assert_eq!(a["campaign"]["level"], "bulk");
    let queue_ids: Vec<&str> = a["members"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|m| m["queue_id"].as_str())
        .collect();
    assert_eq!(queue_ids, ["Q4", "Q3", "Q2", "Q1", "Q0"]);
    assert_eq!(a["members"][0]["subject"], "Your offer 4");

    // allow: the next copy is allowed, and the allowance is saved.
    assert_eq!(handle(&m.state, &format!("allow {id}"))["ok"], true);
    send(m.addr, &spam("frank", 5)).await;
    let a = handle(&m.state, &format!("show {id}"));
    assert_eq!(a["members"][0]["queue_id"], "Q5");
    assert_eq!(a["members"][0]["level"], "allowed", "{a}");
    assert!(a["allowed"].is_object());
    let saved = fs::read_to_string(file_path(dir.path())).unwrap();
    assert!(saved.contains(&id), "{saved}");
    // A restart: the snapshot keeps the campaign but not its allowance;
    // control.json brings that back.
    let (mut restored, _) =
        bulkwatch::store::snapshot::decode(&m.state.snapshot_bytes(), &cfg).unwrap();
    assert_eq!(restored.allowances().count(), 0, "not in the snapshot");
    let control = Control::open(file_path(dir.path()), &mut restored);
    let reopened = State::new(restored).with_control(control);
    let list = handle(&reopened, "list");
    assert_eq!(list["allowed"][0], id.as_str(), "kept across a restart");

    // disallow: the allowance is withdrawn (issue 41: there was no way
    // back), the next copy is judged again, and control.json drops it.
    assert_eq!(handle(&m.state, &format!("disallow {id}"))["ok"], true);
    send(m.addr, &spam("grace", 7)).await;
    let a = handle(&m.state, &format!("show {id}"));
    assert_eq!(a["members"][0]["queue_id"], "Q7", "{a}");
    assert_eq!(a["members"][0]["level"], "bulk", "{a}");
    assert!(!a["allowed"].is_object(), "{a}");
    assert_eq!(handle(&m.state, "list")["allowed"], serde_json::json!([]));
    let saved = fs::read_to_string(file_path(dir.path())).unwrap();
    assert!(!saved.contains(&id), "{saved}");

    // forget: the campaign leaves the lists and its text starts again.
    assert_eq!(handle(&m.state, &format!("forget {id}"))["ok"], true);
    // show says it was forgotten, not that it left the window (issue 41).
    let a = handle(&m.state, &format!("show {id}"));
    assert_eq!(a["forgotten"], true, "{a}");
    assert!(a["campaign"].is_null(), "{a}");
    assert_eq!(
        handle(&m.state, &format!("forget {id}"))["ok"],
        false,
        "gone"
    );
    send(m.addr, &spam("alice", 6)).await;
    let (ids, sizes): (Vec<String>, Vec<u32>) = m.state.with_view(|e| {
        e.campaigns()
            .map(|c| (c.id.to_string(), c.messages))
            .unzip()
    });
    assert!(!ids.contains(&id), "{ids:?}");
    assert_eq!(sizes, [1], "a new campaign, from zero");
    let text = bulkwatch::milter::metrics::render(&m.state, unix_now());
    assert!(text.contains("bulkwatch_campaign_allows_total 1"), "{text}");
    assert!(
        text.contains("bulkwatch_campaign_forgets_total 1"),
        "{text}"
    );

    // Bad requests get a reason, never a change.
    for bad in [
        "",
        "frobnicate",
        "allow",
        "allow zz",
        "show 12345",
        &format!("allow {id} 0"),
        &format!("allow {id} soon"),
        "disallow",
        "disallow 000000000000",
    ] {
        let a = handle(&m.state, bad);
        assert_eq!(a["ok"], false, "{bad:?}: {a}");
        assert!(a["error"].is_string());
    }
    m.stop().await;
}

fn config_text(socket: &Path, state: &Path) -> String {
    format!(
        "[milter]\nsocket = \"unix:{}\"\n\n[state]\nstate_dir = \"{}\"\nsnapshot_interval_secs = 3600\n\n\
         [metrics]\nlisten = \"\"\n\n[thresholds]\nbulk_threshold = 3.0\nsuspect_threshold = 2.0\n\n\
         [window]\nmax_entries = 10000\n\n[exact]\nbloom_items = 10000\n",
        socket.display(),
        state.display()
    )
}

/// Relative paths in a configuration file are relative to the file's
/// directory: the daemon keeps its state beside the file wherever it was
/// started, and `campaigns list --config FILE` finds it from any working
/// directory (it looked for `state/control.sock` under its own).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn relative_paths_are_the_config_files_and_the_cli_finds_the_daemon_from_anywhere() {
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("bulkwatch.toml");
    let socket = dir.path().join("milter.sock");
    fs::write(&config, config_text(&socket, Path::new("state"))).unwrap();
    let mut d = Daemon::start(&config, &dir.path().join("daemon.log"), &socket);
    d.wait_log("control socket listening");
    assert!(socket_path(&dir.path().join("state")).exists());
    let mut conn = open_unix(&socket).await;
    transact(&mut conn, &spam(NAMES[0], 1)).await;
    conn.close().await.unwrap();
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_bulkwatch"))
        .args(["campaigns", "list", "--config"])
        .arg(&config)
        .current_dir("/")
        .output()
        .unwrap();
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr),
    );
    assert!(out.status.success(), "{stdout}{stderr}");
    assert!(stdout.starts_with("1 active campaigns\n"), "{stdout}");
    assert!(d.stop().success());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_cli_allows_a_running_daemons_campaign_and_a_restart_keeps_it() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("milter.sock");
    let state_dir = dir.path().join("state");
    let config = dir.path().join("bulkwatch.toml");
    fs::write(&config, config_text(&socket, &state_dir)).unwrap();
    let log = dir.path().join("daemon.log");
    let mut d = Daemon::start(&config, &log, &socket);
    d.wait_log("control socket listening");
    // The socket is for the daemon's user only.
    use std::os::unix::fs::PermissionsExt;
    let mode = fs::metadata(socket_path(&state_dir))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o777, 0o600);
    for (i, name) in NAMES.iter().take(3).enumerate() {
        let mut conn = open_unix(&socket).await;
        transact(&mut conn, &spam(name, i as u32)).await;
        conn.close().await.unwrap();
    }
    let (ok, out, err) = campaigns(&config, &["list"]);
    assert!(ok, "{err}");
    assert!(out.starts_with("1 active campaigns\n"), "{out}");
    let id = out
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    assert!(out.contains("bulk") && out.contains("Your offer"), "{out}");
    let (ok, out, err) = campaigns(&config, &["show", &id]);
    assert!(
        ok && out.contains("Q2") && out.contains("+0000"),
        "{out}{err}"
    );
    let (ok, out, _) = campaigns(&config, &["allow", &id, "--for", "3600"]);
    assert!(ok && out.contains("allowed until"), "{out}");
    // The list says so (it said `bulk`, with no marker).
    let (ok, out, _) = campaigns(&config, &["list"]);
    assert!(ok && out.contains(&format!("{id}  allowed ")), "{out}");
    let (ok, _, err) = campaigns(&config, &["forget", "000000000000"]);
    assert!(!ok && err.contains("no live campaign"), "{err}");
    assert!(d.stop().success());

    let mut d = Daemon::start(&config, &log, &socket);
    d.wait_log("control socket listening");
    let (ok, out, err) = campaigns(&config, &["list", "--json"]);
    assert!(ok, "{err}");
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["allowed"][0], id.as_str(), "{out}");
    assert_eq!(
        v["campaigns"][0]["id"],
        id.as_str(),
        "the snapshot kept the campaign"
    );
    assert!(d.stop().success());
    assert!(!socket_path(&state_dir).exists(), "removed at a clean stop");
    // No daemon: a clear error naming the socket.
    let (ok, _, err) = campaigns(&config, &["list"]);
    assert!(!ok && err.contains("control.sock"), "{err}");
}

/// Clients that connect to the control socket and say nothing. Before,
/// the socket served one client at a time, each for up to its 5 s read
/// timeout: behind three silent ones, `bulkwatch campaigns list` waited
/// past its own 10 s timeout and failed. Now each client is served on its
/// own (up to 8 at once).
#[test]
fn silent_control_clients_do_not_hold_up_the_others() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("milter.sock");
    let state_dir = dir.path().join("state");
    let config = dir.path().join("bulkwatch.toml");
    fs::write(&config, config_text(&socket, &state_dir)).unwrap();
    let mut d = Daemon::start(&config, &dir.path().join("daemon.log"), &socket);
    d.wait_log("control socket listening");
    let silent: Vec<std::os::unix::net::UnixStream> = (0..3)
        .map(|_| std::os::unix::net::UnixStream::connect(socket_path(&state_dir)).unwrap())
        .collect();
    let (ok, out, err) = campaigns(&config, &["list"]);
    assert!(ok, "{out}{err}");
    drop(silent);
    assert!(d.stop().success());
}

/// `bulkwatch scan` asks the running daemon what a message would be,
/// recording nothing: a reply-all is in the campaign of the message it
/// quotes, adds nobody (its recipients are parties), and the campaign is a
/// conversation; the quote was read as the text, and scan says why. With
/// the daemon stopped, scan falls back to its snapshot and says how old
/// it is; a message fingerprinted with another key is refused by name.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn scan_explains_a_reply_through_the_running_daemon() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("milter.sock");
    let state_dir = dir.path().join("state");
    let config = dir.path().join("bulkwatch.toml");
    fs::write(&config, config_text(&socket, &state_dir)).unwrap();
    let log = dir.path().join("daemon.log");
    let mut d = Daemon::start(&config, &log, &socket);
    d.wait_log("control socket listening");
    let team: Vec<String> = (0..12).map(|i| format!("staff{i}@example.org")).collect();
    let body = "Hello all,\r\n\r\nplease find below the confirmation of your order for the \
        third quarter. We will deliver forty units of the model R7 controller and twelve spare \
        power supplies to your warehouse in Verona on the fourteenth. Invoices follow the usual \
        terms of sixty days.\r\n\r\nBest regards,\r\nMarco\r\n";
    let first = common::Mail {
        headers: vec![
            ("From".into(), "Marco <marco@supplier.example>".into()),
            ("Subject".into(), "Order confirmation".into()),
            ("Message-ID".into(), "<order@supplier.example>".into()),
        ],
        body: body.into(),
        rcpt: String::new(),
        queue_id: "Q1".into(),
    };
    let mut conn = open_unix(&socket).await;
    let (a, _) =
        common::transact_envelope(&mut conn, &first, "<marco@supplier.example>", &team).await;
    conn.close().await.unwrap();
    assert_eq!(common::daemon::header(&a), None, "clean, untagged");

    let quoted: String = body.lines().map(|l| format!("> {l}\n")).collect();
    let reply = format!(
        "From: staff0@example.org\nTo: marco@supplier.example\nSubject: Re: Order confirmation\n\
         In-Reply-To: <order@supplier.example>\nMessage-ID: <r1@example.org>\n\n\
         Thanks Marco, all correct.\n\nOn Monday, Marco wrote:\n{quoted}"
    );
    let file = dir.path().join("reply.eml");
    fs::write(&file, &reply).unwrap();
    let mut args: Vec<String> = vec![
        "scan".into(),
        "--config".into(),
        config.display().to_string(),
        "--from".into(),
        "staff0@example.org".into(),
        "--to".into(),
        "marco@supplier.example".into(),
    ];
    for t in &team[1..] {
        args.push("--to".into());
        args.push(t.clone());
    }
    args.push(file.display().to_string());
    let scan = |args: &[String]| {
        let out = std::process::Command::new(env!("CARGO_BIN_EXE_bulkwatch"))
            .args(args)
            .output()
            .unwrap();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (code, text, err) = scan(&args);
    assert_eq!(code, Some(0), "{text}{err}");
    assert!(text.contains("judged by:   the running daemon"), "{text}");
    assert!(text.contains("verdict:     clean; campaign="), "{text}");
    assert!(text.contains("conversation=yes"), "{text}");
    // Marco sent the first message: he was no recipient of it here, so
    // the answer reaches him new, a reply (one new person beside all the
    // team); whoever sends it changes nothing.
    assert!(
        text.contains("this move:   reply (adds 1 recipients"),
        "{text}"
    );
    assert!(text.contains("the site's own mail: no"), "{text}");
    assert!(text.contains("quote:       read as the text"), "{text}");
    assert!(text.contains("13 distinct recipients"), "{text}");
    // Nothing was recorded: the daemon still holds one message.
    let (ok, out, _) = campaigns(&config, &["list", "--json"]);
    assert!(ok);
    let list: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(list["campaigns"][0]["messages"], 1, "{list}");

    // Another key: the daemon says so instead of comparing unrelated
    // fingerprints.
    let other = dir.path().join("other.toml");
    fs::write(
        &other,
        format!(
            "{}\n[fingerprint]\nhash_key = \"0123456789abcdef0123456789abcdef\"\n",
            config_text(&socket, &state_dir)
        ),
    )
    .unwrap();
    let mut with_other = args.clone();
    with_other[2] = other.display().to_string();
    let (code, _, err) = scan(&with_other);
    assert_eq!(code, Some(2));
    assert!(err.contains("another fingerprint.hash_key"), "{err}");

    // Stopped: the snapshot it wrote answers, and scan says so.
    assert!(d.stop().success());
    let (code, text, err) = scan(&args);
    assert_eq!(code, Some(0), "{text}{err}");
    assert!(
        text.contains("judged by:   the daemon did not answer: the snapshot"),
        "{text}"
    );
    assert!(text.contains(" ago"), "{text}");
    assert!(text.contains("conversation=yes"), "{text}");
}

/// Terminal escapes and bidirectional controls in a subject, a sender or
/// a Message-ID reach neither `campaigns list` and `show` nor the log
/// raw: they are written out (issue 51).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn escapes_in_mail_reach_no_terminal() {
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("milter.sock");
    let state_dir = dir.path().join("state");
    let config = dir.path().join("bulkwatch.toml");
    fs::write(&config, config_text(&socket, &state_dir)).unwrap();
    let log = dir.path().join("daemon.log");
    let mut d = Daemon::start(&config, &log, &socket);
    d.wait_log("control socket listening");
    for (i, name) in NAMES.iter().take(4).enumerate() {
        let mut m = spam(name, 40 + i as u32);
        for (k, v) in m.headers.iter_mut() {
            if k == "Subject" {
                *v = "\u{1b}]0;owned\u{7}Offer \u{1b}[31mred\u{202e}txt.exe".into();
            }
        }
        m.headers
            .push(("Message-ID".into(), format!("<id{i}\u{1b}[2J@x.example>")));
        let mut conn = open_unix(&socket).await;
        common::transact_envelope(
            &mut conn,
            &m,
            "<bad\u{1b}[5m@deals.example>",
            &[format!("<{name}@example.net>")],
        )
        .await;
        conn.close().await.unwrap();
    }
    let (ok, list, err) = campaigns(&config, &["list"]);
    assert!(ok, "{err}");
    assert!(list.contains("Offer"), "{list}");
    assert!(
        !list.contains('\u{1b}') && !list.contains('\u{7}') && !list.contains('\u{202e}'),
        "{list:?}"
    );
    assert!(list.contains("\\u{001B}]0;owned\\u{0007}"), "{list}");
    let id = list
        .lines()
        .nth(1)
        .unwrap()
        .split_whitespace()
        .next()
        .unwrap()
        .to_owned();
    let (ok, show, _) = campaigns(&config, &["show", &id]);
    assert!(ok);
    assert!(!show.contains('\u{1b}'), "{show:?}");
    assert!(d.stop().success());
    let text = fs::read_to_string(&log).unwrap();
    assert!(text.contains("message judged"), "{text}");
    assert!(!text.contains('\u{1b}'), "{text:?}");
}
