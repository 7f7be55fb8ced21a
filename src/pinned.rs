//! The formats other builds read, pinned by their bytes (tests only).
//!
//! Three formats outlive the process that writes them: the worker
//! protocol (a worker of another build may answer a running daemon), the
//! Redis log's entries (every host of a site reads every other's) and the
//! snapshot file (read by the next start, perhaps of a newer build). Each
//! carries a version, and each version's bytes are kept in
//! `tests/formats/` as written by the build that introduced it.
//!
//! For the version this build writes, its kept bytes must decode and
//! encode again to the same bytes: a change to an encoder or a decoder
//! that does not bump the version fails here, with what to do. Kept bytes
//! of older versions must still decode where this build reads them (log
//! entries, snapshots) and be refused, saying why, where it does not (the
//! worker protocol, which is spoken by one build at a time).
//!
//! After bumping a version, `BULKWATCH_BLESS=1 cargo test --lib pinned`
//! writes the new version's files; it never overwrites a kept file.

use std::path::{Path, PathBuf};

use crate::config::Config;
use crate::engine::campaign::CampaignId;
use crate::engine::mime::normalize::{KeptCut, Normalized};
use crate::engine::party::Parties;
use crate::engine::shingle::Sentences;
use crate::engine::{Correction, Engine, Observation, ReadConfig, Reading, UnixSecs};
use crate::store::{entry, snapshot, stream};
use crate::worker::wire::{self, Hello, Hooks, Ready, Reply, Request, HEAD};
use bulkwatch_read::config::{NormalizeConfig, ScanConfig};

fn dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/formats")
}

fn hex(bytes: &[u8]) -> String {
    let mut s = String::with_capacity(bytes.len() * 2 + bytes.len() / 32 + 1);
    for line in bytes.chunks(32) {
        for b in line {
            s.push_str(&format!("{b:02x}"));
        }
        s.push('\n');
    }
    s
}

fn unhex(text: &str) -> Vec<u8> {
    let digits: Vec<u8> = text.bytes().filter(u8::is_ascii_hexdigit).collect();
    digits
        .chunks(2)
        .map(|p| u8::from_str_radix(std::str::from_utf8(p).unwrap(), 16).unwrap())
        .collect()
}

/// The kept bytes of `name` (`tests/formats/NAME.hex`). When there are
/// none and `BULKWATCH_BLESS` is set, keeps `fresh` and answers it; else
/// fails saying how to keep them.
fn kept(name: &str, fresh: &[u8]) -> Vec<u8> {
    let path = dir().join(format!("{name}.hex"));
    match std::fs::read_to_string(&path) {
        Ok(text) => unhex(&text),
        Err(_) if std::env::var_os("BULKWATCH_BLESS").is_some() => {
            std::fs::create_dir_all(dir()).unwrap();
            std::fs::write(&path, hex(fresh)).unwrap();
            fresh.to_vec()
        }
        Err(e) => panic!(
            "{}: {e}. A format's version was bumped (or is new): keep its bytes with \
             BULKWATCH_BLESS=1 cargo test --lib pinned, and commit the file",
            path.display()
        ),
    }
}

/// The kept files whose names start with `prefix`, each with the version
/// its name gives after the prefix (`PREFIX<version>[-…].hex`).
fn all_kept(prefix: &str) -> Vec<(u32, String, Vec<u8>)> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir()).unwrap() {
        let name = e.unwrap().file_name().to_string_lossy().into_owned();
        let Some(rest) = name.strip_prefix(prefix) else {
            continue;
        };
        let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
        let version = digits.parse().unwrap();
        let text = std::fs::read_to_string(dir().join(&name)).unwrap();
        out.push((version, name, unhex(&text)));
    }
    out.sort();
    out
}

/// Fails, saying what to do, where `again` (the kept bytes decoded and
/// encoded by this build) differs from `kept`.
fn same(what: &str, version: &str, kept: &[u8], again: &[u8]) {
    assert!(
        kept == again,
        "{what}: this build no longer writes the bytes kept for {version}, or reads them \
         otherwise. If the format changed, bump {version}'s constant and keep the new \
         version's bytes (BULKWATCH_BLESS=1 cargo test --lib pinned); if it did not, the \
         change is a bug.\nkept:\n{}\nnow:\n{}",
        hex(kept),
        hex(again)
    );
}

fn body(frame: &[u8]) -> &[u8] {
    &frame[HEAD..]
}

fn reading_settings() -> ReadConfig {
    ReadConfig {
        scan: ScanConfig {
            max_scan_bytes: 256 * 1024,
            max_parse_bytes: 8 * 1024 * 1024,
            // The pinned readings do not depend on what is installed.
            ocr: None,
            ocr_elsewhere: false,
        },
        normalize: NormalizeConfig {
            stop_words: true,
            ..NormalizeConfig::default()
        },
    }
}

fn reading() -> Reading {
    Reading {
        parsed: true,
        normalized: Normalized {
            text: "claim your prize\nbefore friday".into(),
            subject: "you won".into(),
            tokens: 5,
            kept_cut: Some(KeptCut {
                own_words: 3,
                words: 40,
            }),
        },
        attachments: vec![[0xa5; 32]],
        pictures: vec![0x0123_4567_89ab_cdef],
        images: vec!["img.example/#.png".into()],
        has_link: true,
        message_id: Some("m1@deals.example".into()),
        answers: vec!["m0@deals.example".into()],
        subject: Some("You won".into()),
        from_domain: Some("deals.example".into()),
        // Neighbouring flags differ, so that swapping two shows.
        list: true,
        list_id: false,
        reply: true,
        truncated: false,
        partial: true,
        wants_ocr: false,
        ocr_stopped: false,
        deep_failure: None,
    }
}

/// Each frame of the worker protocol, as this build writes it.
fn worker_frames() -> Vec<(&'static str, Vec<u8>)> {
    let mut request = Vec::new();
    Request {
        rcpts: vec!["ann@example.net", "bob@example.net"],
        raw: b"Subject: You won\r\n\r\nclaim your prize\r\n",
    }
    .frame_into(&mut request);
    let mut frames = vec![
        (
            "hello",
            Hello {
                read: reading_settings(),
                hooks: Hooks::default(),
            }
            .frame(),
        ),
        (
            "ready",
            Ready {
                sandbox: "seccomp, no network".into(),
            }
            .frame(),
        ),
        ("request", request),
    ];
    for (name, reply) in [
        ("reply-read", Reply::Read(Box::new(reading()))),
        ("reply-early", Reply::Early(Box::default())),
        (
            "reply-panicked",
            Reply::Panicked {
                message: "index out of bounds".into(),
            },
        ),
    ] {
        let mut out = Vec::new();
        reply.frame_into(&mut out);
        frames.push((name, out));
    }
    frames
}

/// Decodes a worker frame of kind `name` and encodes it again.
fn worker_again(name: &str, frame: &[u8]) -> Result<Vec<u8>, String> {
    let cfg = reading_settings();
    let b = body(frame);
    let e = |e: crate::store::codec::CodecError| e.to_string();
    Ok(match name {
        "hello" => Hello::decode(b).map_err(e)?.frame(),
        "ready" => Ready::decode(b).map_err(e)?.frame(),
        "request" => {
            let mut out = Vec::new();
            Request::decode(b).map_err(e)?.frame_into(&mut out);
            out
        }
        _ => {
            let mut out = Vec::new();
            Reply::decode(b, &cfg).map_err(e)?.frame_into(&mut out);
            out
        }
    })
}

#[test]
fn the_worker_protocol_is_pinned() {
    let v = wire::VERSION;
    for (name, fresh) in worker_frames() {
        let kept = kept(&format!("worker-v{v}-{name}"), &fresh);
        let again = worker_again(name, &kept).unwrap_or_else(|e| {
            panic!("worker {name}: the bytes kept for version {v} no longer decode: {e}")
        });
        same(&format!("worker {name}"), "wire::VERSION", &kept, &again);
        same(&format!("worker {name}"), "wire::VERSION", &kept, &fresh);
    }
    // Another version's frames are refused at the hello, saying so.
    for (version, name, bytes) in all_kept("worker-v") {
        if version != v && name.contains("-hello") {
            let e = Hello::decode(body(&bytes)).unwrap_err().to_string();
            assert!(e.contains("worker protocol version"), "{name}: {e}");
        }
    }
}

fn observation() -> Observation {
    Observation {
        exact: [0x5a; 32],
        simhash: 0x0f1e_2d3c_4b5a_6978,
        sketch: 0x1234_5678,
        deeper: [0x2345_6789, 0x3456_789a],
        bands: vec![11, 22, 33, 44],
        smallest: (0..4).map(|i| [i, i + 1000, u32::MAX - i]).collect(),
        sentences: Sentences {
            anchors: vec![0x0123_4567 << 32, 0x0765_4321 << 32],
            lookups: vec![0x0123_4567 << 32, 0x0765_4321 << 32, 0x89ab_cdef << 32],
        },
        near: true,
        parties: Parties {
            origin: crate::engine::party::Origin::Own,
            sender: Some(0x0001),
            rcpts: vec![0x0002, 0x0003],
            anonymous: 1,
            message: Some(0x0004),
            answers: vec![0x0005],
        },
        sender: 0x3eef,
        sender_name: Some("deals.example".into()),
        subject: Some("Ünïcode offer".into()),
        features: 77,
        thresholds: Config::default().thresholds,
        list: false,
        list_post: true,
        kept_cut: None,
        partial: false,
        reply: true,
    }
}

const AT: UnixSecs = UnixSecs(1_795_000_000);

#[test]
fn the_log_entry_is_pinned() {
    let v = entry::FORMAT;
    let fresh = stream::encode(&observation(), AT);
    let entry = kept(&format!("log-v{v}-entry"), &fresh);
    let (obs, at) = stream::decode(&entry).unwrap_or_else(|e| {
        panic!("log entry: the bytes kept for format {v} no longer decode: {e}")
    });
    same(
        "log entry",
        "entry::FORMAT",
        &entry,
        &stream::encode(&obs, at),
    );
    same("log entry", "entry::FORMAT", &entry, &fresh);

    let allow = Correction::Allow {
        id: CampaignId(0x0123_4567_89ab),
        until: 1_795_003_600,
    };
    let fresh = stream::encode_correction(allow, AT);
    let correction = kept(&format!("log-v{v}-correction"), &fresh);
    let (c, at) = entry::decode_correction(&correction).unwrap();
    same(
        "log correction",
        "entry::FORMAT",
        &correction,
        &stream::encode_correction(c, at),
    );
    same("log correction", "entry::FORMAT", &correction, &fresh);

    // Every host of a site reads what older builds of it wrote.
    for (version, name, bytes) in all_kept("log-v") {
        let read = if name.contains("-correction") {
            entry::decode_correction(&bytes)
                .map(|_| ())
                .map_err(|e| e.to_string())
        } else {
            stream::decode(&bytes)
                .map(|_| ())
                .map_err(|e| e.to_string())
        };
        assert!(read.is_ok(), "{name} (format {version}): {read:?}");
    }
}

/// A small engine with a campaign of three messages (one person took
/// part in each), and two messages alone, list posts: every section of the
/// snapshot written. (Corrections are not in the snapshot: `control.json`
/// keeps them.)
fn engine(cfg: &Config) -> Engine {
    let mut e = Engine::new(cfg);
    let mut obs = observation();
    obs.list_post = false;
    for n in 0..3u32 {
        obs.parties.rcpts = vec![0x10 + n, 0x20];
        e.decide_observed(&obs, UnixSecs(AT.0 + u64::from(n)));
    }
    // Far apart from the campaign and from each other: no bit, sketch,
    // band or probe in common.
    let others: [(u8, u64, u64, u32); 2] = [
        (0x11, 0x00ff_00ff_00ff_00ff, 0x0bad_cafe_0000, 500),
        (0x22, 0xff00_ff00_ff00_ff00, 0x7777_0000_1234, 900),
    ];
    for (n, (exact, simhash, sketch, base)) in others.into_iter().enumerate() {
        let mut alone = observation();
        alone.exact = [exact; 32];
        alone.simhash = simhash;
        alone.sketch = sketch;
        alone.deeper = [sketch + 1, sketch + 2];
        alone.bands = (0..4).map(|b| u64::from(base) + b).collect();
        alone.smallest = (0..4)
            .map(|i| [base + i, base + 100 + i, base + 200 + i])
            .collect();
        e.decide_observed(&alone, UnixSecs(AT.0 + 10 + n as u64));
    }
    e
}

fn small() -> Config {
    let mut cfg = Config::default();
    cfg.window.max_entries = 64;
    cfg.exact.bloom_items = 64;
    cfg.exact.lru_capacity = 16;
    cfg
}

#[test]
fn the_snapshot_is_pinned() {
    let cfg = small();
    let (v, fp) = (snapshot::FORMAT_VERSION, crate::engine::simhash::VERSION);
    let fresh = snapshot::encode(&engine(&cfg), AT.0);
    let file = kept(&format!("snapshot-v{v}-fp{fp}"), &fresh);
    let (back, loaded) = snapshot::decode(&file, &cfg).unwrap_or_else(|e| {
        panic!("snapshot: the bytes kept for format {v} no longer decode: {e}")
    });
    assert_eq!(loaded.saved_at, AT.0);
    let mut listed: Vec<(u32, bool)> = back
        .campaigns()
        .map(|c| (c.messages, c.list_post))
        .collect();
    listed.sort_unstable();
    assert_eq!(listed, [(1, true), (1, true), (3, false)], "the kept state");
    same(
        "snapshot",
        "snapshot::FORMAT_VERSION",
        &file,
        &snapshot::encode(&back, AT.0),
    );
    same("snapshot", "snapshot::FORMAT_VERSION", &file, &fresh);
    for (version, name, bytes) in all_kept("snapshot-v") {
        if name.ends_with(&format!("-fp{fp}.hex")) {
            let read = snapshot::decode(&bytes, &cfg).map(|_| ());
            assert!(read.is_ok(), "{name} (format {version}): {read:?}");
        }
    }
}
