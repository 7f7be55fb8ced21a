//! Replays the committed fixtures (written by `cargo xtask gen-fixtures`) and
//! checks what must hold: every synthetic campaign is caught as one campaign,
//! no ham is flagged, malformed mail gets a verdict, fingerprints are pinned
//! by golden vectors and do not depend on line endings.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::{Path, PathBuf};

use bulkwatch::config::Config;
use bulkwatch::engine::simhash::hex;
use bulkwatch::engine::verdict::{Level, LevelKind, SkipReason};
use bulkwatch::engine::{analyze, Envelope};
use bulkwatch::replay::{read_mbox, replay_files, Record, ReplayOptions};

fn fixture(p: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fixtures")
        .join(p)
}

/// (mbox, index) -> label, from fixtures/labels.tsv.
fn labels() -> HashMap<(String, usize), String> {
    let text = std::fs::read_to_string(fixture("labels.tsv")).expect("labels.tsv");
    text.lines()
        .skip(1)
        .map(|l| {
            let f: Vec<&str> = l.split('\t').collect();
            (
                (f[0].to_owned(), f[1].parse().expect("index")),
                f[3].to_owned(),
            )
        })
        .collect()
}

fn messages(mbox: &str) -> Vec<Vec<u8>> {
    let f = std::fs::File::open(fixture(mbox)).expect("mbox");
    read_mbox(std::io::BufReader::new(f))
        .map(|m| m.expect("read"))
        .collect()
}

/// The three fixture mailboxes, in replay order.
fn mboxes() -> Vec<PathBuf> {
    [
        "mbox/campaigns.mbox",
        "mbox/ham.mbox",
        "mbox/malformed.mbox",
    ]
    .iter()
    .map(|p| fixture(p))
    .collect()
}

fn replay(cfg: &Config) -> Vec<(Record, String)> {
    let paths = mboxes();
    let s = replay_files(&paths, cfg, ReplayOptions::default(), |_| {}).expect("replay");
    let labels = labels();
    assert_eq!(
        s.records.len(),
        labels.len(),
        "every labelled message gets a record"
    );
    s.records
        .into_iter()
        .map(|r| {
            let l = labels[&(r.mbox.clone(), r.index)].clone();
            (r, l)
        })
        .collect()
}

fn threshold5() -> Config {
    let mut cfg = Config::default();
    cfg.thresholds.bulk_threshold = 5.0;
    cfg.thresholds.suspect_threshold = 3.0;
    cfg
}

/// Every fixture campaign is caught, as one campaign, under the default
/// fingerprint key and four others drawn at random: the hash functions
/// change with the key, and a result that holds for one key only is luck.
/// (With `window.corroborating_matches = 0` the last key fails: 1.42 ids
/// per campaign.)
///
/// The bars hold over the five keys (message recall at least 0.97, at
/// most 1.2 ids per campaign, every campaign's recall at least 0.8), and
/// each key has a floor (0.95, 1.3, 0.75): any change to the fingerprint
/// moves each key's figures as a new key would, and busted campaigns sit
/// near the bars under some keys (under ten random keys the fingerprint
/// version 4 had up to 1.31 ids per campaign, `quality.py --keys 10`).
///
/// Measured at threshold 5, fingerprint version 5: every campaign flagged;
/// message recall 0.969 to 0.999 (0.988 over the keys), 1.00 to 1.25 ids
/// per campaign (1.14), the worst campaign 0.77 to 0.97 under one key.
#[test]
fn every_campaign_is_caught_as_one_campaign_at_threshold_5() {
    let keys = [
        None,
        Some("cd613e30d8f16adf91b7584a2265b1f5"),
        Some("d95bafc8f2a4d27bdcf4bb99f4bea973"),
        Some("216363698b529b4a97b750923ceb3ffd"),
        // Without corroboration this key split the heavily busted
        // campaigns (1.50 ids per campaign in `quality.py --keys 12`).
        Some("cd447e35b8b6d8fe442e3d437204e52d"),
    ];
    let (mut recall_sum, mut ids_sum) = (0.0, 0.0);
    let mut per_campaign: BTreeMap<String, f64> = BTreeMap::new();
    for key in keys {
        let mut cfg = threshold5();
        if let Some(k) = key {
            let toml = format!("[fingerprint]\nhash_key = \"{k}\"\n");
            cfg.fingerprint.hash_key = Config::from_toml_str(&toml)
                .expect("key")
                .fingerprint
                .hash_key;
        }
        let recs = replay(&cfg);
        let mut per: BTreeMap<String, Vec<&Record>> = BTreeMap::new();
        for (r, l) in &recs {
            if l.starts_with('c') {
                per.entry(l.clone()).or_default().push(r);
            }
        }
        assert!(per.len() >= 10, "fixture campaigns: {}", per.len());
        let (mut ids_total, mut past_total, mut flagged_total) = (0, 0, 0);
        for (label, rs) in &per {
            let past: Vec<&&Record> = rs.iter().skip(5).collect();
            let flagged = past.iter().filter(|r| r.level == Level::Bulk).count();
            let recall = flagged as f64 / past.len() as f64;
            assert!(
                recall >= 0.75,
                "key {key:?}: {label}: {flagged} of {} messages past the threshold flagged",
                past.len()
            );
            *per_campaign.entry(label.clone()).or_default() += recall / keys.len() as f64;
            past_total += past.len();
            flagged_total += flagged;
            let ids: HashSet<_> = rs.iter().filter_map(|r| r.campaign).collect();
            ids_total += ids.len();
        }
        let recall = flagged_total as f64 / past_total as f64;
        assert!(recall >= 0.95, "key {key:?}: message recall {recall}");
        let ids_per = ids_total as f64 / per.len() as f64;
        assert!(ids_per <= 1.3, "key {key:?}: ids per campaign {ids_per}");
        recall_sum += recall;
        ids_sum += ids_per;
    }
    let n = keys.len() as f64;
    assert!(
        recall_sum / n >= 0.97,
        "message recall over the keys {}",
        recall_sum / n
    );
    assert!(
        ids_sum / n <= 1.2,
        "ids per campaign over the keys {}",
        ids_sum / n
    );
    for (label, recall) in per_campaign {
        assert!(recall >= 0.8, "{label}: recall over the keys {recall}");
    }
}

#[test]
fn no_ham_is_flagged_even_at_threshold_5() {
    for (r, l) in replay(&threshold5()) {
        if l == "ham" {
            assert_ne!(
                r.level,
                Level::Bulk,
                "ham #{} {:?} flagged",
                r.index,
                r.message_id
            );
            assert_ne!(
                r.level,
                Level::Suspect,
                "ham #{} {:?} suspect",
                r.index,
                r.message_id
            );
        }
    }
}

/// The replay analyzes messages on several threads and decides them in
/// file order: any number of threads gives the records one thread gives.
/// (Batches hold at most 128 messages: the campaigns mbox spans many, so
/// each thread handles several and results are taken back in turn.)
#[test]
fn a_parallel_replay_equals_a_serial_one() {
    let paths = mboxes();
    let cfg = threshold5();
    let run = |jobs| {
        let mut progress = 0;
        let opts = ReplayOptions {
            jobs,
            ..ReplayOptions::default()
        };
        let s = replay_files(&paths, &cfg, opts, |n| progress += n).expect("replay");
        assert_eq!(progress, s.records.len() as u64 + s.read_errors as u64);
        s
    };
    let serial = run(1);
    assert!(serial.records.len() > 3 * 128, "several batches per thread");
    assert!(serial.count(LevelKind::Bulk) > 0);
    for jobs in [2, 3, 7] {
        let parallel = run(jobs);
        assert_eq!(parallel.records, serial.records, "jobs = {jobs}");
        assert_eq!(parallel.by_level, serial.by_level);
        assert_eq!(parallel.read_errors, serial.read_errors);
    }
}

/// Broken MIME, bad encodings, NUL bytes, a 1 MiB header line, no headers:
/// each is read (none is left unparsed), the ones with text are judged on
/// it, and none of them joins another message's campaign, so a parser's
/// failure mode cannot make unrelated mail look alike.
#[test]
fn malformed_mail_is_read_and_judged_on_its_own() {
    let recs = replay(&Config::default());
    let malformed: Vec<&Record> = recs
        .iter()
        .filter(|(_, l)| l == "malformed")
        .map(|(r, _)| r)
        .collect();
    assert_eq!(malformed.len(), 16);
    let mut judged = 0;
    for r in &malformed {
        assert_ne!(r.level, Level::Skipped(SkipReason::Unparsed), "{r:?}");
        assert!(r.campaign_size <= 1, "joined a campaign: {r:?}");
        assert_eq!(r.nearest, None, "matched another message: {r:?}");
        if r.level == Level::Clean {
            judged += 1;
        }
    }
    // 11 of the 16 carry enough text to be judged; the rest are too short.
    assert!(judged >= 10, "{judged} of 16 judged");
}

#[test]
fn crlf_and_lf_messages_share_fingerprints() {
    let cfg = Config::default();
    let env = Envelope::default();
    let mut checked = 0;
    for mbox in ["mbox/campaigns.mbox", "mbox/ham.mbox"] {
        for raw in messages(mbox).iter().step_by(7) {
            let crlf: Vec<u8> = String::from_utf8_lossy(raw)
                .replace('\n', "\r\n")
                .into_bytes();
            let lf: Vec<u8> = String::from_utf8_lossy(raw).into_owned().into_bytes();
            let a = analyze(&lf, &env, &cfg).fingerprint;
            let b = analyze(&crlf, &env, &cfg).fingerprint;
            assert_eq!(a, b, "{mbox}");
            checked += 1;
        }
    }
    assert!(checked > 100);
}

/// Golden vectors: fixtures/vectors/fingerprint-v<VERSION>.tsv pins the
/// fingerprint algorithm. A change here means a VERSION bump. Run with
/// UPDATE_FIXTURES=1 to rewrite after a deliberate change.
#[test]
fn golden_fingerprint_vectors() {
    let cfg = Config::default();
    let env = Envelope::default();
    let mut out = String::from("mbox\tindex\tfeatures\tsimhash\tsketch\tsha256\n");
    for mbox in ["campaigns.mbox", "ham.mbox"] {
        for (i, raw) in messages(&format!("mbox/{mbox}"))
            .iter()
            .enumerate()
            .step_by(15)
        {
            let a = analyze(raw, &env, &cfg);
            let fp = a.fingerprint.expect("parsed");
            out.push_str(&format!(
                "{mbox}\t{}\t{}\t{:016x}\t{:016x}\t{}\n",
                i + 1,
                a.features,
                fp.simhash,
                fp.min.sketch,
                hex(&fp.exact)
            ));
        }
    }
    let path = fixture(&format!(
        "vectors/fingerprint-v{}.tsv",
        bulkwatch::engine::simhash::VERSION
    ));
    if std::env::var_os("UPDATE_FIXTURES").is_some() {
        std::fs::write(&path, &out).expect("write vectors");
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_default();
    if expected != out {
        let actual = path.with_extension("actual");
        std::fs::write(&actual, &out).expect("write actual");
        panic!(
            "fingerprints changed: compare {} with {}",
            path.display(),
            actual.display()
        );
    }
    assert!(out.lines().count() > 60);
}
