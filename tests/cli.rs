//! The built binary on the fixtures: exit codes, the jsonl contract, scan and
//! check-config output.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// The binary, pointed away from the host's /etc/bulkwatch (issue 41: a
/// host with the package installed made these tests read its file).
fn bin() -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_bulkwatch"));
    c.env("BULKWATCH_CONFIG", "/nonexistent/bulkwatch/bulkwatch.toml");
    c
}

fn root(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join(p)
}

fn run(cmd: &mut Command) -> Output {
    cmd.output().expect("run bulkwatch")
}

#[test]
fn replay_jsonl_follows_the_contract() {
    let out = run(bin()
        .args(["replay", "--format", "jsonl", "--bulk-threshold", "5"])
        .arg(root("fixtures/mbox/campaigns.mbox"))
        .arg(root("fixtures/mbox/malformed.mbox")));
    assert_eq!(
        out.status.code(),
        Some(1),
        "bulk found -> exit 1; stderr: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let mut n = 0;
    let mut bulk = 0;
    let mut corroborated = 0;
    let mut near = 0;
    for line in text.lines() {
        n += 1;
        let v: serde_json::Value = serde_json::from_str(line).expect("one JSON object per line");
        assert_eq!(
            v["n"].as_u64(),
            Some(n),
            "n is the 1-based index in input order"
        );
        assert!(v["message_id"].is_string() || v["message_id"].is_null());
        let level = v["level"].as_str().expect("level");
        assert!(["clean", "suspect", "bulk", "allowed", "skipped"].contains(&level));
        bulk += usize::from(level == "bulk");
        assert!(v["campaign"].is_string() || v["campaign"].is_null());
        assert!(v["campaign_size"].is_u64());
        assert!(v["exact"].is_boolean());
        assert!(v["time"].is_u64(), "time: Unix seconds");
        assert!(v["distance"].is_u64() || v["distance"].is_null());
        assert!(
            v["resemblance"].is_f64() || v["resemblance"].is_null() || v["resemblance"].is_u64()
        );
        assert!(v["list"].is_boolean(), "{line}");
        let corroborating = v["corroborating"].as_u64().expect("corroborating");
        if corroborating > 0 {
            // Joined on weak evidence: at least 2 texts (the default), and
            // the closest of them described.
            assert!(corroborating >= 2 && v["distance"].is_u64(), "{line}");
            corroborated += 1;
        }
        // A near miss: a campaign matched but not joined, with its match.
        if v["near_campaign"].is_string() {
            assert!(v["near_distance"].is_u64(), "{line}");
            let r = v["near_resemblance"].as_f64().expect("near_resemblance");
            assert!((0.0..=1.0).contains(&r), "{line}");
            near += 1;
        } else {
            assert!(
                v["near_campaign"].is_null() && v["near_distance"].is_null(),
                "{line}"
            );
        }
    }
    assert!(n >= 900, "{n} records");
    assert!(bulk > 500, "{bulk} bulk");
    // Heavily busted copies that match no other copy (4 under the
    // default key, fingerprint version 3).
    assert!(corroborated > 0);
    assert!(near > 0, "near misses are shown");
}

#[test]
fn replay_table_ends_with_a_campaign_summary() {
    let out = run(bin().args(["replay"]).arg(root("fixtures/mbox/ham.mbox")));
    assert_eq!(out.status.code(), Some(0), "no bulk -> exit 0");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("messages: 153"), "{text}");
    assert!(text.contains("bulk: 0"));
    assert!(text.contains("campaigns of 2 or more messages:"));
}

/// The ham fixtures hold list posts (List-Id, List-Unsubscribe): jsonl
/// marks them `list`, and only messages whose headers say so.
#[test]
fn replay_jsonl_marks_list_mail() {
    let path = root("fixtures/mbox/ham.mbox");
    let out = run(bin().args(["replay", "--format", "jsonl"]).arg(&path));
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let listed = text
        .lines()
        .map(|l| serde_json::from_str::<serde_json::Value>(l).expect("json"))
        .filter(|v| v["list"] == serde_json::Value::Bool(true))
        .count();
    let mbox = std::fs::read_to_string(&path).unwrap();
    let with_headers = mbox
        .split("\nFrom ")
        .filter(|m| {
            let head = m.split("\n\n").next().unwrap_or("");
            head.lines().any(|l| {
                let l = l.to_ascii_lowercase();
                l.starts_with("list-id:")
                    || l.starts_with("list-post:")
                    || l.starts_with("list-unsubscribe:")
                    || l.starts_with("precedence: list")
                    || l.starts_with("precedence: bulk")
            })
        })
        .count();
    assert!(listed > 0, "{text}");
    assert!(
        listed <= with_headers,
        "{listed} listed, {with_headers} with list headers"
    );
}

#[test]
fn replay_on_the_arrival_clock_judges_in_time_order() {
    let out = run(bin()
        .args(["replay", "--format", "jsonl", "--clock", "arrival"])
        .arg(root("fixtures/mbox/ham.mbox"))
        .arg(root("fixtures/mbox/malformed.mbox")));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).expect("utf-8");
    let recs: Vec<serde_json::Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).expect("json"))
        .collect();
    assert_eq!(recs.len(), 153 + 16);
    // Each message of the ham fixture at its own Date header: judged in
    // that order, whatever the file's.
    let f = std::fs::File::open(root("fixtures/mbox/ham.mbox")).expect("open");
    let own: Vec<Option<u64>> = bulkwatch::replay::read_mbox(f)
        .map(|m| bulkwatch::replay::arrival_time(&m.expect("read")))
        .collect();
    for v in recs.iter().filter(|v| v["mbox"] == "ham.mbox") {
        let i = v["index"].as_u64().expect("index") as usize;
        assert_eq!(v["time"].as_u64(), own[i - 1], "{v}");
    }
    // The first at Thu, 12 Dec 2024 12:00:00 -0500, not at the simulated
    // clock's start.
    assert_eq!(own[0], Some(1_734_022_800));
    let out = run(bin()
        .args(["replay", "--clock", "sundial"])
        .arg(root("fixtures/mbox/ham.mbox")));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("sundial"));
}

#[test]
fn replay_of_a_missing_file_exits_2_with_the_path() {
    let out = run(bin().args(["replay", "/nonexistent/x.mbox"]));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("/nonexistent/x.mbox"));
}

#[test]
fn scan_explains_one_message() {
    let raw = "From: a@example.com\nSubject: Hello\n\nThis is a short note about the meeting tomorrow morning in the big room upstairs.\n";
    let mut child = bin()
        .args(["scan", "-"])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    use std::io::Write;
    child
        .stdin
        .take()
        .expect("stdin")
        .write_all(raw.as_bytes())
        .expect("write");
    let out = child.wait_with_output().expect("wait");
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("simhash:") && text.contains("sha256:") && text.contains("features:"),
        "{text}"
    );
    assert!(text.contains("short note about the meeting"), "{text}");
}

#[test]
fn check_config_accepts_the_shipped_file_and_names_a_bad_key() {
    let ok = run(bin()
        .args(["check-config"])
        .arg(root("config/bulkwatch.toml")));
    assert_eq!(ok.status.code(), Some(0));
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[window]\nmax_distance = 99\n").expect("write");
    let out = run(bin().args(["check-config"]).arg(&bad));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("window.max_distance") && err.contains("bad.toml"),
        "{err}"
    );
}

#[test]
fn tune_prints_a_table_a_proposal_and_writes_a_plot() {
    let dir = tempfile::tempdir().expect("tempdir");
    let svg = dir.path().join("t.svg");
    let out = run(bin()
        .current_dir(dir.path())
        .args(["tune", "--radius", "3", "--thresholds", "5,20", "--truth"])
        .arg(root("fixtures/labels.tsv"))
        .arg(root("fixtures/mbox/campaigns.mbox"))
        .arg(root("fixtures/mbox/ham.mbox")));
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout);
    // radius bands corr threshold campaign_recall message_recall ham split
    let rows: Vec<Vec<&str>> = text
        .lines()
        .filter(|l| l.trim_start().starts_with("3 "))
        .map(|l| l.split_whitespace().collect())
        .collect();
    // Bands 0 and 4, corroboration 0 and 3 and the running 2, two
    // thresholds.
    assert_eq!(rows.len(), 12, "{text}");
    // At threshold 5, under the defaults, every fixture campaign is caught
    // and no ham is flagged.
    let default5 = rows
        .iter()
        .find(|c| c[1] == "4" && c[2] == "3" && c[3] == "5")
        .unwrap_or_else(|| panic!("{text}"));
    assert_eq!(default5[4], "1.000", "{text}");
    assert_eq!(default5[6], "0", "{text}");
    // 153 labelled ham are too few to propose a threshold below 20.
    assert!(
        text.contains("from 153 labelled ham messages") && text.contains("bulk_threshold = 20.0"),
        "{text}"
    );
    // Every fixture campaign is caught at the running values, and those
    // are proposed (issue 41: it proposed 50, which caught 56%).
    assert!(
        text.contains("corroborating_matches = 2\n[thresholds]\nbulk_threshold = 20.0"),
        "{text}"
    );
    // No plot unless asked, and never into the working directory unasked.
    assert!(!text.contains("plot written"), "{text}");
    assert_eq!(std::fs::read_dir(dir.path()).expect("dir").count(), 0);

    let out = run(bin()
        .args([
            "tune",
            "--radius",
            "3",
            "--bands",
            "4",
            "--corroborating",
            "3",
        ])
        .args(["--thresholds", "5,20", "--truth"])
        .arg(root("fixtures/labels.tsv"))
        .arg("--plot")
        .arg(&svg)
        .arg(root("fixtures/mbox/campaigns.mbox"))
        .arg(root("fixtures/mbox/ham.mbox")));
    assert_eq!(out.status.code(), Some(0));
    let plot = std::fs::read_to_string(&svg).expect("svg written");
    assert!(plot.starts_with("<svg") && plot.contains("polyline"));
    assert!(plot.contains("bulk threshold") && plot.contains("k=3 bands=4 corr=3"));
}

/// Too few labelled campaigns: tune shows its table and proposes nothing,
/// saying how many are needed.
#[test]
fn tune_proposes_nothing_from_too_few_campaigns() {
    let out = run(bin()
        .args(["tune", "--radius", "3", "--thresholds", "20", "--truth"])
        .arg(root("fixtures/labels.tsv"))
        .arg(root("fixtures/mbox/campaigns.mbox")));
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        !text.contains("nothing proposed"),
        "16 campaigns are enough: {text}"
    );
    let dir = tempfile::tempdir().expect("tempdir");
    let labels = dir.path().join("labels.tsv");
    // The same mailbox, three of its campaigns labelled.
    let all = std::fs::read_to_string(root("fixtures/labels.tsv")).expect("labels");
    let mut kept: Vec<&str> = Vec::new();
    let mut names: Vec<&str> = Vec::new();
    for line in all.lines() {
        let label = line.split('\t').nth(3).unwrap_or("");
        if line.starts_with("mbox\t") {
            kept.push(line);
        } else if label != "ham" && (names.contains(&label) || names.len() < 3) {
            if !names.contains(&label) {
                names.push(label);
            }
            kept.push(line);
        }
    }
    std::fs::write(&labels, kept.join("\n")).expect("write labels");
    let out = run(bin()
        .args(["tune", "--radius", "3", "--thresholds", "20", "--truth"])
        .arg(&labels)
        .arg(root("fixtures/mbox/campaigns.mbox")));
    assert_eq!(out.status.code(), Some(0));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("nothing proposed: 3 labelled campaigns, and at least 10"),
        "{text}"
    );
    assert!(!text.contains("[thresholds]"), "{text}");
}

/// Eight issues of one newsletter, a day apart by their Received headers,
/// labelled as one campaign: tune catches it on the simulated clock (one
/// second apart) and not on the arrival clock.
#[test]
fn tune_follows_the_clock() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut mbox = String::new();
    let mut labels = String::new();
    for i in 0..8u32 {
        mbox.push_str(&format!(
            "From news@daily.example Mon Jan  1 00:00:00 2024\n\
             Received: from out.daily.example (out.daily.example [198.51.100.9]) by mx.example.org;\n\
             \t{:02} Mar 2024 06:00:00 +0000\n\
             Message-ID: <issue{i}@daily.example>\nFrom: The Daily <news@daily.example>\nSubject: The Daily {i}\n\n\
             Good morning. Today in the Daily: the harbour bridge reopens after two years of repairs,\n\
             the council votes on the new bus lanes, and our critic reviews the first opera of the season.\n\
             Weather: sunny spells, light winds from the west. Manage your subscription in your account.\n\n",
            i + 1
        ));
        labels.push_str(&format!("issue{i}@daily.example\tdaily\n"));
    }
    std::fs::write(dir.path().join("daily.mbox"), mbox).expect("mbox");
    std::fs::write(dir.path().join("labels.tsv"), labels).expect("labels");
    let recall = |clock: &str| {
        let out = run(bin()
            .args([
                "tune",
                "--radius",
                "3",
                "--bands",
                "4",
                "--corroborating",
                "3",
                "--thresholds",
                "5",
                "--clock",
                clock,
            ])
            .arg("--truth")
            .arg(dir.path().join("labels.tsv"))
            .arg(dir.path().join("daily.mbox")));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let row = text
            .lines()
            .find(|l| l.trim_start().starts_with("3 "))
            .unwrap_or_else(|| panic!("{text}"))
            .to_owned();
        row.split_whitespace()
            .nth(4)
            .expect("campaign recall")
            .to_owned()
    };
    assert_eq!(recall("simulated"), "1.000");
    assert_eq!(recall("arrival"), "0.000");
}

#[test]
fn scan_with_state_judges_against_a_snapshot() {
    use bulkwatch::config::Config;
    use bulkwatch::engine::{Engine, Envelope, UnixSecs};
    use bulkwatch::replay::read_mbox;

    // 30 messages of one fixture campaign into an engine, saved as a daemon would.
    let labels = std::fs::read_to_string(root("fixtures/labels.tsv")).expect("labels");
    let c11: Vec<usize> = labels
        .lines()
        .filter_map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (f.first() == Some(&"campaigns.mbox") && f.get(3) == Some(&"c11"))
                .then(|| f[1].parse::<usize>().expect("index"))
        })
        .collect();
    let file = std::fs::File::open(root("fixtures/mbox/campaigns.mbox")).expect("mbox");
    let msgs: Vec<Vec<u8>> = read_mbox(std::io::BufReader::new(file))
        .map(|m| m.expect("read"))
        .collect();
    let cfg = Config::default();
    let mut engine = Engine::new(&cfg);
    for (t, i) in c11.iter().take(30).enumerate() {
        engine.process(
            &msgs[i - 1],
            &Envelope::default(),
            UnixSecs(1_700_000_000 + t as u64),
        );
    }
    let dir = tempfile::tempdir().expect("tempdir");
    let path = bulkwatch::store::snapshot::save(&engine, dir.path()).expect("save");

    let another = dir.path().join("m.eml");
    std::fs::write(&another, &msgs[c11[40] - 1]).expect("write");
    let out = run(bin().args(["scan", "--state"]).arg(&path).arg(&another));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(1),
        "bulk -> exit 1\n{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("verdict:     bulk; campaign="), "{text}");

    // A corrupt snapshot is an error (exit 2), not a crash.
    std::fs::write(&path, b"not a snapshot").expect("write");
    let out = run(bin().args(["scan", "--state"]).arg(&path).arg(&another));
    assert_eq!(out.status.code(), Some(2));
}

/// A reader that closes the pipe early (`bulkwatch scan msg | head -1`):
/// the commands end quietly instead of panicking in `println!`. The read
/// end is closed before the command starts, so its first write fails.
#[test]
fn a_closed_stdout_ends_each_command_quietly() {
    let msg = root("fixtures/mbox/campaigns.mbox");
    let cfg = root("config/bulkwatch.toml");
    let cases: Vec<Vec<&std::ffi::OsStr>> = vec![
        vec!["scan".as_ref(), msg.as_os_str()],
        vec!["check-config".as_ref(), cfg.as_os_str()],
        vec!["replay".as_ref(), msg.as_os_str()],
    ];
    for args in cases {
        let (reader, writer) = std::io::pipe().expect("pipe");
        drop(reader);
        let out = bin()
            .args(&args)
            .stdout(writer)
            .output()
            .expect("run bulkwatch");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(
            out.status.code() == Some(0) || out.status.code() == Some(1),
            "{args:?}: {:?} {stderr}",
            out.status
        );
        assert!(!stderr.contains("error"), "{args:?}: {stderr}");
    }
}

#[test]
fn keygen_prints_a_fresh_key_that_silences_the_public_key_warning() {
    let key = |out: &Output| -> String {
        let text = String::from_utf8_lossy(&out.stdout).into_owned();
        let line = text
            .lines()
            .find(|l| l.starts_with("hash_key = "))
            .unwrap_or_else(|| panic!("no key line in {text}"))
            .to_owned();
        line
    };
    let a = run(bin().arg("keygen"));
    let b = run(bin().arg("keygen"));
    assert_eq!(a.status.code(), Some(0));
    let (ka, kb) = (key(&a), key(&b));
    assert_ne!(ka, kb, "two keys alike");
    let hex = ka.trim_start_matches("hash_key = \"").trim_end_matches('"');
    assert_eq!(hex.len(), 32);
    assert!(hex.bytes().all(|c| c.is_ascii_hexdigit()), "{hex}");

    let dir = tempfile::tempdir().expect("tempdir");
    let public = dir.path().join("public.toml");
    std::fs::write(&public, "").expect("write");
    let out = run(bin().arg("check-config").arg(&public));
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("warning: fingerprint.hash_key is the built-in key"),
        "{err}"
    );

    let keyed = dir.path().join("keyed.toml");
    std::fs::write(&keyed, format!("[fingerprint]\n{ka}\n")).expect("write");
    let out = run(bin().arg("check-config").arg(&keyed));
    assert_eq!(out.status.code(), Some(0));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("warning"), "{err}");
    // The key is a secret: masked unless asked for.
    let shown = String::from_utf8_lossy(&out.stdout);
    assert!(!shown.contains(hex), "{shown}");
    assert!(shown.contains("hash_key = \"<set, not shown"), "{shown}");
    let out = run(bin().args(["check-config", "--show-secrets"]).arg(&keyed));
    assert!(String::from_utf8_lossy(&out.stdout).contains(hex));
}

#[test]
fn check_config_quiet_prints_nothing_for_a_valid_file_and_still_fails_a_bad_one() {
    let dir = tempfile::tempdir().expect("tempdir");
    let good = dir.path().join("good.toml");
    std::fs::write(&good, "[thresholds]\nbulk_threshold = 30.0\n").expect("write");
    let out = run(bin().args(["check-config", "--quiet"]).arg(&good));
    assert_eq!(out.status.code(), Some(0));
    assert!(
        out.stdout.is_empty(),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let bad = dir.path().join("bad.toml");
    std::fs::write(&bad, "[thresholds]\nbulk_threshold = -1.0\n").expect("write");
    let out = run(bin().args(["check-config", "--quiet"]).arg(&bad));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("thresholds.bulk_threshold"));
}

#[test]
fn replay_of_a_file_that_holds_no_message_is_an_error_with_the_reason() {
    let dir = tempfile::tempdir().expect("tempdir");
    let empty = dir.path().join("empty.mbox");
    std::fs::write(&empty, "").expect("write");
    let notmail = dir.path().join("notes.txt");
    std::fs::write(&notmail, "shopping list\nmilk\n").expect("write");
    for f in [&empty, &notmail] {
        let out = run(bin()
            .arg("replay")
            .arg(root("fixtures/mbox/ham.mbox"))
            .arg(f));
        assert_eq!(out.status.code(), Some(2), "{}", f.display());
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&f.display().to_string()) && err.contains("holds no message"),
            "{err}"
        );
    }
}

/// The jsonl lines of a replay without the fields that name the input.
fn verdicts(out: &Output) -> Vec<String> {
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .map(|l| {
            let mut v: serde_json::Value = serde_json::from_str(l).expect("json");
            let o = v.as_object_mut().expect("object");
            o.remove("mbox");
            v.to_string()
        })
        .collect()
}

#[test]
fn replay_reads_a_maildir_and_standard_input_as_it_reads_the_mbox() {
    let mbox = root("fixtures/mbox/campaigns.mbox");
    let args = ["replay", "--format", "jsonl", "--bulk-threshold", "5"];
    let want = run(bin().args(args).arg(&mbox));
    assert_eq!(want.status.code(), Some(1));
    let want = verdicts(&want);
    assert!(want.len() > 100);

    // A Maildir of the same messages, one file each in new/ and cur/, named
    // so that their order is the mbox's, each with the Return-Path a
    // delivery agent writes (the envelope sender of its From line).
    let dir = tempfile::tempdir().expect("tempdir");
    let md = dir.path().join("Maildir");
    for sub in ["cur", "new", "tmp"] {
        std::fs::create_dir_all(md.join(sub)).expect("mkdir");
    }
    let file = std::fs::File::open(&mbox).expect("open");
    let mut messages = bulkwatch::replay::read_mbox(file);
    let mut i = 0;
    while let Some(m) = messages.next() {
        let sub = if i % 2 == 0 { "new" } else { "cur" };
        let mut bytes = match messages.sender() {
            Some(s) => format!("Return-Path: <{s}>\n").into_bytes(),
            None => Vec::new(),
        };
        bytes.extend(m.expect("message"));
        std::fs::write(md.join(sub).join(format!("{:06}.m{i}", i)), bytes).expect("write");
        i += 1;
    }
    let got = run(bin().args(args).arg(&md));
    assert_eq!(
        got.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&got.stderr)
    );
    assert_eq!(verdicts(&got), want);

    let stdin = std::fs::File::open(&mbox).expect("open");
    let got = run(bin().args(args).arg("-").stdin(stdin));
    assert_eq!(got.status.code(), Some(1));
    assert_eq!(verdicts(&got), want);

    // A directory that is no Maildir is refused before anything is read.
    let out = run(bin().arg("replay").arg(dir.path().join("Maildir/new")));
    assert_eq!(out.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no Maildir"));
}

#[test]
fn check_config_prints_toml_that_reads_back_as_the_same_settings() {
    // (With --show-secrets: masked, the key reads back as no key.)
    let dir = tempfile::tempdir().expect("tempdir");
    let file = dir.path().join("site.toml");
    std::fs::write(
        &file,
        "[milter]\nsocket = \"unix:/run/bulkwatch/milter.sock\"\nsocket_mode = \"0640\"\n\
         [window]\nwindow_secs = 7200\n[policy]\nbulk = \"reject\"\n",
    )
    .expect("write");
    let first = run(bin().args(["check-config", "--show-secrets"]).arg(&file));
    assert_eq!(first.status.code(), Some(0));
    let printed = String::from_utf8_lossy(&first.stdout).into_owned();
    assert!(printed.contains("socket_mode = \"0640\""), "{printed}");
    assert!(printed.contains("window_secs = 7200"), "{printed}");
    assert!(printed.contains("bulk = \"reject\""), "{printed}");
    // Pasted back into a file, it is the same configuration.
    let again = dir.path().join("again.toml");
    std::fs::write(&again, &printed).expect("write");
    let second = run(bin().args(["check-config", "--show-secrets"]).arg(&again));
    assert_eq!(second.status.code(), Some(0));
    let body = |s: &str| s.lines().skip(2).collect::<Vec<_>>().join("\n");
    assert_eq!(
        body(&String::from_utf8_lossy(&second.stdout)),
        body(&printed)
    );
}

#[test]
fn check_config_names_the_line_of_a_bad_value_and_warns_of_suspicious_ones() {
    let dir = tempfile::tempdir().expect("tempdir");
    let bad = dir.path().join("bad.toml");
    std::fs::write(
        &bad,
        "# site settings\n[thresholds]\nbulk_threshold = 10.0\nsuspect_threshold = 12.0\n",
    )
    .expect("write");
    let out = run(bin().args(["check-config"]).arg(&bad));
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.contains("bad.toml: line 4: invalid value for `thresholds.suspect_threshold`"),
        "{err}"
    );

    let odd = dir.path().join("odd.toml");
    std::fs::write(
        &odd,
        "[window]\nwindow_secs = 120\n\n[thresholds]\nbulk_threshold = 2.0\nsuspect_threshold = 1.0\n",
    )
    .expect("write");
    let out = run(bin().args(["check-config", "--quiet"]).arg(&odd));
    assert_eq!(
        out.status.code(),
        Some(0),
        "a warning does not fail the file"
    );
    let err = String::from_utf8_lossy(&out.stderr);
    for w in [
        "bulkwatch: warning: line 2: window.window_secs: 120 s is under an hour",
        "bulkwatch: warning: line 5: thresholds.bulk_threshold: 2 makes one message to 2 recipients bulk",
    ] {
        assert!(err.contains(w), "no {w:?} in {err}");
    }
}

#[test]
fn commands_without_config_name_the_system_file_they_read() {
    for cmd in ["serve", "replay", "scan", "tune", "check-config"] {
        let out = run(bin().args([cmd, "--help"]));
        assert_eq!(out.status.code(), Some(0));
        let help = String::from_utf8_lossy(&out.stdout).replace("\n", " ");
        assert!(
            help.contains("/etc/bulkwatch/bulkwatch.toml"),
            "{cmd}: {help}"
        );
    }
}

/// `check-config --postfix` reads Postfix's settings with the real
/// postconf (from a configuration directory of the test's own): a Debian
/// master.cf with the unix socket is a problem (exit 2, said on stdout),
/// so is an inet socket nothing listens on; the inet socket passes once
/// something answers there.
#[cfg_attr(
    not(bulkwatch_postfix),
    ignore = "needs postconf (apt-get install postfix)"
)]
#[test]
fn check_config_postfix_finds_a_socket_postfix_cannot_reach() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pf = dir.path().join("postfix");
    std::fs::create_dir(&pf).expect("mkdir");
    std::fs::write(
        pf.join("master.cf"),
        "smtp      inet  n       -       y       -       -       smtpd\n\
         pickup    unix  n       -       y       60      1       pickup\n\
         cleanup   unix  n       -       y       -       0       cleanup\n",
    )
    .expect("master.cf");
    let check = |socket: &str| {
        std::fs::write(
            pf.join("main.cf"),
            format!(
                "compatibility_level = 3.6\nsmtpd_milters = {socket}\n\
                 non_smtpd_milters = $smtpd_milters\nmilter_default_action = accept\n"
            ),
        )
        .expect("main.cf");
        let conf = dir.path().join("bulkwatch.toml");
        std::fs::write(&conf, format!("[milter]\nsocket = \"{socket}\"\n")).expect("toml");
        run(bin()
            .args(["check-config", "--quiet", "--postfix", "--postfix-config"])
            .arg(&pf)
            .arg(&conf))
    };
    let out = check("unix:/run/bulkwatch/bulkwatch.sock");
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(
        text.contains("problem: smtp (smtpd), cleanup (cleanup) run chrooted"),
        "{text}"
    );
    // The inet socket Postfix can reach, but nothing listens there yet: a
    // problem, said as one between Postfix and bulkwatch, not as postconf's.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let socket = format!("inet:{}", listener.local_addr().expect("addr"));
    drop(listener);
    let out = check(&socket);
    let text = String::from_utf8_lossy(&out.stdout);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{text}{err}");
    assert!(
        text.contains(&format!("problem: nothing answers on {socket}"))
            && !text.contains("# postfix: OK"),
        "{text}"
    );
    assert!(
        err.contains("between Postfix and bulkwatch") && err.contains("postconf itself ran fine"),
        "{err}"
    );
    // Something listens: OK.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let socket = format!("inet:{}", listener.local_addr().expect("addr"));
    let out = check(&socket);
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        text.contains("# postfix: OK") && text.contains("bulkwatch answers on it"),
        "{text}"
    );
}

/// BULKWATCH_CONFIG names the file a command reads without --config, in
/// place of /etc/bulkwatch/bulkwatch.toml.
#[test]
fn bulkwatch_config_names_the_default_file() {
    let dir = tempfile::tempdir().expect("tempdir");
    let conf = dir.path().join("site.toml");
    std::fs::write(&conf, "[thresholds]\nbulk_threshold = 33.0\n").expect("write");
    let out = run(bin().arg("check-config").env("BULKWATCH_CONFIG", &conf));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert!(
        text.contains("site.toml: OK") && text.contains("bulk_threshold = 33.0"),
        "{text}"
    );
    // A name that does not exist: the built-in defaults, as for /etc.
    let out = run(bin()
        .args(["replay", "--format", "jsonl"])
        .arg(root("fixtures/mbox/ham.mbox")));
    assert!(out.status.code() == Some(0) || out.status.code() == Some(1));
}

/// A post delivered to 25 mailboxes is one message with 25 recipients, as
/// the daemon saw it in one transaction (issue 50): given as a spool of
/// Maildirs or as the 25 Maildirs, the replay judges it once (clean: one
/// delivery), counts the other copies, and judges the message beside it
/// as it would alone.
#[test]
fn a_post_delivered_to_many_mailboxes_is_one_message() {
    let dir = tempfile::tempdir().expect("tempdir");
    let spool = dir.path().join("spool").join("example.org");
    let post = "Return-Path: <news@club.example>\nFrom: Club <news@club.example>\n\
        Subject: Spring planting day\nMessage-ID: <planting-2026@club.example>\n\n\
        The spring planting day is on saturday at the north allotments. Bring gloves, a \
        trowel and seedlings to swap; the club provides compost, tea and cake for everyone \
        who helps out during the morning.\n";
    let mut maildirs = Vec::new();
    for u in 0..25 {
        let md = spool.join(format!("user{u:02}")).join("Maildir");
        for sub in ["cur", "new", "tmp"] {
            std::fs::create_dir_all(md.join(sub)).expect("mkdir");
        }
        std::fs::write(md.join("new").join(format!("1700000000.{u}.host")), post).expect("write");
        maildirs.push(md);
    }
    std::fs::write(
        maildirs[3].join("cur").join("1700000100.x.host:2,S"),
        "From: friend@mail.example\nSubject: lunch\nMessage-ID: <lunch@mail.example>\n\n\
         Shall we have lunch on thursday near the station, at the usual place at noon?\n",
    )
    .expect("write");
    let args = ["replay", "--format", "jsonl", "--bulk-threshold", "5"];
    for inputs in [vec![dir.path().join("spool")], maildirs.clone()] {
        let out = run(bin().args(args).args(&inputs));
        assert_eq!(
            out.status.code(),
            Some(0),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let lines: Vec<serde_json::Value> = String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| serde_json::from_str(l).expect("json"))
            .collect();
        assert_eq!(lines.len(), 2, "{lines:?}");
        let post = lines
            .iter()
            .find(|l| l["message_id"] == "planting-2026@club.example")
            .expect("the post");
        assert_eq!(post["level"], "clean", "{post}");
        assert_eq!(post["campaign_size"], 25, "{post}");
    }
    // The table says what became of the other copies.
    let out = run(bin().arg("replay").arg(dir.path().join("spool")));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("copies in other mailboxes"), "{text}");
    assert!(text.contains("): 24"), "{text}");
    // One Maildir alone: its copy is one message to one mailbox.
    let out = run(bin().args(args).arg(&maildirs[0]));
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(text.contains("\"campaign_size\":1"), "{text}");
}

/// The mbox `From ` line is the envelope sender: a list's post (List-Id)
/// from one sender domain, in six mailboxes' copies in one mbox, is one
/// delivery of one post (clean at a bulk threshold of 5), as the daemon
/// judges it; the same copies under `From -` lines (no sender) are six
/// deliveries (bulk).
#[test]
fn the_mbox_from_line_is_the_envelope_sender() {
    let dir = tempfile::tempdir().expect("tempdir");
    let copy = |i: usize, from: &str| {
        format!(
            "From {from} Mon Jan  6 10:0{i}:00 2025\nFrom: Club <news@club.example>\n\
             To: member{i}@example.org\nSubject: Spring planting day\n\
             Message-ID: <p{i}@club.example>\nList-Id: Club news <news.club.example>\n\n\
             The spring planting day is on saturday at the north allotments. Bring gloves, a \
             trowel and seedlings to swap; the club provides compost, tea and cake for \
             everyone who helps out during the morning.\n\n"
        )
    };
    let levels = |from: &str| -> Vec<String> {
        let mbox = dir.path().join("list.mbox");
        let text: String = (0..6).map(|i| copy(i, from)).collect();
        std::fs::write(&mbox, text).expect("write");
        let out = run(bin()
            .args(["replay", "--format", "jsonl", "--bulk-threshold", "5"])
            .arg(&mbox));
        String::from_utf8_lossy(&out.stdout)
            .lines()
            .map(|l| {
                let v: serde_json::Value = serde_json::from_str(l).expect("json");
                v["level"].as_str().unwrap_or("?").to_owned()
            })
            .collect()
    };
    assert_eq!(levels("news-bounces@club.example"), ["clean"; 6]);
    assert_eq!(levels("-").last().map(String::as_str), Some("bulk"));
}

/// `check-config` prints a Redis address without its password, and says
/// an empty secret is empty rather than "set, not shown" (issues 51, 52).
#[test]
fn check_config_shows_no_redis_password() {
    let dir = tempfile::tempdir().expect("tempdir");
    let cfg = dir.path().join("b.toml");
    std::fs::write(
        &cfg,
        "[store]\nbackend = \"redis\"\n[store.redis]\n\
         urls = [\"redis://bw:s3cret-pw@127.0.0.1:6379/0\", \"redis://:other-pw@10.0.0.2:6379/0\"]\n\
         [metrics]\ncontrol_token = \"\"\n",
    )
    .expect("write");
    let out = run(bin().arg("check-config").arg(&cfg));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        !text.contains("s3cret-pw") && !text.contains("other-pw"),
        "{text}"
    );
    assert!(text.contains("redis://bw:***@127.0.0.1:6379/0"), "{text}");
    assert!(text.contains("control_token = \"\""), "{text}");
    let out = run(bin().args(["check-config", "--show-secrets"]).arg(&cfg));
    assert!(String::from_utf8_lossy(&out.stdout).contains("s3cret-pw"));
}

/// With `allow.authserv_ids` set, `check-config --postfix` asks Postfix
/// (`postmap -q`) whether its header_checks drop an Authentication-Results
/// header of each trusted id arriving from outside: none is a problem,
/// naming the line to add; with that very line in a regexp table, no
/// problem.
#[cfg_attr(
    not(bulkwatch_postfix),
    ignore = "needs postconf and postmap (apt-get install postfix)"
)]
#[test]
fn check_config_postfix_asks_that_forged_authentication_results_be_dropped() {
    let dir = tempfile::tempdir().expect("tempdir");
    let pf = dir.path().join("postfix");
    std::fs::create_dir(&pf).expect("mkdir");
    std::fs::write(pf.join("master.cf"), "smtp inet n - n - - smtpd\n").expect("master.cf");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let socket = format!("inet:{}", listener.local_addr().expect("addr"));
    let conf = dir.path().join("bulkwatch.toml");
    std::fs::write(
        &conf,
        format!("[milter]\nsocket = \"{socket}\"\n[allow]\nauthserv_ids = [\"mx.example.org\"]\n"),
    )
    .expect("toml");
    let check = |header_checks: &str| {
        std::fs::write(
            pf.join("main.cf"),
            format!(
                "compatibility_level = 3.6\nsmtpd_milters = {socket}\n\
                 non_smtpd_milters = $smtpd_milters\nmilter_default_action = accept\n\
                 header_checks = {header_checks}\n"
            ),
        )
        .expect("main.cf");
        run(bin()
            .args(["check-config", "--quiet", "--postfix", "--postfix-config"])
            .arg(&pf)
            .arg(&conf))
    };
    let out = check("");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(2), "{text}");
    let line = text
        .lines()
        .find(|l| l.contains("allow.authserv_ids trusts mx.example.org"))
        .unwrap_or_else(|| panic!("{text}"));
    let rule = line
        .split("header_checks table: ")
        .nth(1)
        .expect("the line to add")
        .trim();
    assert_eq!(
        rule,
        "/^Authentication-Results:.*mx\\.example\\.org/ IGNORE"
    );
    // The line of builds before 2026-12-07 lets a comment, a quote or a
    // fold before the id through: still a problem.
    let table = dir.path().join("header_checks");
    std::fs::write(
        &table,
        "/^Authentication-Results:[[:space:]]*mx\\.example\\.org([[:space:];]|$)/ IGNORE\n",
    )
    .expect("table");
    let out = check(&format!("regexp:{}", table.display()));
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    assert_eq!(out.status.code(), Some(2), "{text}");
    assert!(text.contains("legal forms pass"), "{text}");
    // A table that drops another id's headers only: still a problem.
    let table = dir.path().join("header_checks");
    std::fs::write(
        &table,
        "/^Authentication-Results:[[:space:]]*other\\.example/ IGNORE\n",
    )
    .expect("table");
    let out = check(&format!("regexp:{}", table.display()));
    assert_eq!(
        out.status.code(),
        Some(2),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    // The line it asked for: no problem.
    std::fs::write(&table, format!("{rule}\n")).expect("table");
    let out = check(&format!("regexp:{}", table.display()));
    let text = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{text}{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(text.contains("# postfix: OK"), "{text}");
    drop(listener);
}

/// `campaigns allow-domain` refuses what is no domain name before it
/// talks to any daemon, saying why.
#[test]
fn allow_domain_refuses_what_is_no_domain() {
    for bad in ["com", "a..example", "*.example"] {
        let out = run(bin().args(["campaigns", "allow-domain", bad]));
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{bad}: {err}");
        assert!(err.contains("is not a domain name"), "{bad}: {err}");
    }
}
