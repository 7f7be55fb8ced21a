//! The fuzz targets' bodies (`bulkwatch::fuzzing`) over the fixtures and
//! over the committed corpus of crashers and interesting inputs in
//! `fixtures/fuzz/<target>/`, so that what a fuzzer once found stays
//! fixed without a fuzzer. Each function panics on a bug; every test
//! asserts that it ran over a real number of inputs.

use std::path::{Path, PathBuf};

#[path = "../fuzz/checks.rs"]
#[allow(dead_code)]
mod fuzzing;

use bulkwatch::replay::read_mbox;
use fuzzing::{milter_script, seal_snapshot, snapshot_seed};

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// The committed corpus of one target: every file, sorted by name.
fn corpus(target: &str) -> Vec<(PathBuf, Vec<u8>)> {
    let dir = root().join("fixtures/fuzz").join(target);
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("{}: {e}", dir.display()))
        .map(|e| e.expect("dir entry").path())
        .filter(|p| p.is_file())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|p| {
            let data = std::fs::read(&p).expect("read corpus file");
            (p, data)
        })
        .collect()
}

/// Every message of the fixture mailboxes.
fn fixture_messages() -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    for mbox in ["campaigns.mbox", "ham.mbox", "malformed.mbox"] {
        let f = std::fs::File::open(root().join("fixtures/mbox").join(mbox)).expect("mbox");
        out.extend(read_mbox(std::io::BufReader::new(f)).map(|m| m.expect("read")));
    }
    out
}

/// Runs `f` over the committed corpus of `target`, naming the file that
/// fails; returns how many files there were.
fn over_corpus(target: &str, f: impl Fn(&[u8])) -> usize {
    let files = corpus(target);
    for (path, data) in &files {
        eprintln!("{target}: {}", path.display());
        f(data);
    }
    files.len()
}

#[test]
fn message_target_passes_fixtures_and_corpus() {
    let msgs = fixture_messages();
    // Every malformed message and every fifth of the others: the
    // campaigns repeat one template per campaign, and this keeps the
    // debug-build test quick.
    let mut n = 0;
    for (i, m) in msgs.iter().enumerate() {
        if i % 5 == 0 || i >= msgs.len() - 16 {
            fuzzing::message(m);
            n += 1;
        }
    }
    assert!(n > 200, "{n} fixture messages");
    assert!(over_corpus("message", fuzzing::message) >= 5);
}

#[test]
fn milter_target_passes_fixture_deliveries_and_corpus() {
    let msgs = fixture_messages();
    let mut judged = 0;
    for m in msgs.iter().step_by(7) {
        judged += fuzzing::milter_session(&milter_script(m));
    }
    assert!(judged > 100, "{judged} fixture messages judged");
    // Several messages over one connection, as Postfix delivers them.
    let mut script = Vec::new();
    for m in msgs.iter().take(6) {
        script.extend(milter_script(m));
    }
    assert_eq!(fuzzing::milter_session(&script), 4, "the first four judged");
    assert!(
        over_corpus("milter_session", |d| {
            fuzzing::milter_session(d);
        }) >= 3
    );
}

#[test]
fn config_target_passes_shipped_config_and_corpus() {
    let shipped = std::fs::read(root().join("config/bulkwatch.toml")).expect("config");
    fuzzing::config(&shipped);
    assert!(over_corpus("config", fuzzing::config) >= 3);
}

#[test]
fn snapshot_target_passes_engine_snapshots_and_corpus() {
    let msgs = fixture_messages();
    let mut n = 0;
    for group in msgs.chunks(40).step_by(3) {
        let body = snapshot_seed(group.iter().map(Vec::as_slice));
        // As a body (sealed by the target) and as a whole file.
        fuzzing::snapshot(&body);
        fuzzing::snapshot(&seal_snapshot(&body));
        n += 1;
    }
    assert!(n >= 5);
    // Damaged copies of one snapshot: every truncation of its first bytes,
    // and byte flips all along it.
    let body = snapshot_seed(msgs.iter().take(30).map(Vec::as_slice));
    for cut in (0..body.len()).step_by(61) {
        fuzzing::snapshot(body.get(..cut).expect("prefix"));
    }
    for pos in (0..body.len()).step_by(37) {
        let mut bad = body.clone();
        if let Some(b) = bad.get_mut(pos) {
            *b ^= 0xA5;
        }
        fuzzing::snapshot(&bad);
    }
    assert!(over_corpus("snapshot", fuzzing::snapshot) >= 2);
}

#[test]
fn mbox_target_passes_fixture_mailboxes_and_corpus() {
    let mut n = 0;
    for (mbox, blocks) in [
        ("ham.mbox", &[0u8, 4, 63][..]),
        ("malformed.mbox", &[63][..]),
    ] {
        let bytes = std::fs::read(root().join("fixtures/mbox").join(mbox)).expect("mbox");
        for &b in blocks {
            let mut data = vec![b];
            data.extend(&bytes);
            fuzzing::mbox(&data);
            n += 1;
        }
    }
    assert_eq!(n, 4);
    assert!(over_corpus("mbox", fuzzing::mbox) >= 3);
}

#[test]
fn arrival_target_passes_fixture_messages_and_corpus() {
    let msgs = fixture_messages();
    for m in &msgs {
        fuzzing::arrival(m);
    }
    let n = over_corpus("arrival", fuzzing::arrival);
    assert!(
        msgs.len() > 1000 && n >= 4,
        "{} messages, {n} corpus files",
        msgs.len()
    );
}

/// The HTML target over its committed seeds and over every fixture
/// message read as a document (most are not HTML: the renderer must take
/// anything), at several text bounds.
#[test]
fn html_target_passes_fixture_messages_and_corpus() {
    let msgs = fixture_messages();
    for (i, m) in msgs.iter().enumerate().step_by(3) {
        let mut data = vec![(i % 256) as u8];
        data.extend_from_slice(m);
        fuzzing::html(&data);
    }
    let n = over_corpus("html", fuzzing::html);
    assert!(
        msgs.len() > 1000 && n >= 5,
        "{} messages, {n} seeds",
        msgs.len()
    );
}

/// The document target (issue 54) over documents of every format the
/// reader opens, whole, cut short and with bytes flipped, and over some
/// fixture messages read as documents.
#[test]
fn document_target_passes_documents_cut_and_flipped() {
    use testkit::documents as d;
    let paras = vec![
        vec![
            "Your mailbox is full & <locked>".to_owned(),
            "Sign in".to_owned(),
        ],
        vec!["Caf\u{e9} \u{20ac}100 {braces} \\slash".to_owned()],
    ];
    let docs = [
        d::docx(&paras),
        d::xlsx(&paras),
        d::pptx(&paras),
        d::odt(&paras),
        d::svg(&paras),
        d::rtf(&paras),
        d::ics(
            "Summary",
            "Line one\nline two, three; four",
            "a@b.example",
            "uid-1",
        ),
        d::vcard("Name", "A note"),
        d::gzip(&d::docx(&paras)),
        d::zip(&[("in.zip", &d::zip(&[("page.html", b"<p>inner page</p>")]))]),
    ];
    let mut runs = 0;
    for (i, doc) in docs.iter().enumerate() {
        let mut state = i as u64 + 1;
        for cut in [doc.len(), doc.len() * 3 / 4, doc.len() / 2, 40, 3] {
            let mut data = vec![i as u8];
            data.extend_from_slice(doc.get(..cut).unwrap_or(doc));
            fuzzing::document(&data);
            runs += 1;
            for _ in 0..8 {
                let mut flipped = data.clone();
                let r = testkit::splitmix(&mut state);
                let at = 1 + (r as usize) % (flipped.len() - 1).max(1);
                if let Some(b) = flipped.get_mut(at) {
                    *b ^= (r >> 32) as u8 | 1;
                }
                fuzzing::document(&flipped);
                runs += 1;
            }
        }
    }
    for (i, m) in fixture_messages().iter().enumerate().step_by(11) {
        let mut data = vec![(i % 256) as u8];
        data.extend_from_slice(m);
        fuzzing::document(&data);
        runs += 1;
    }
    assert!(runs > 500, "{runs} runs");
}
