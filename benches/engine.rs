//! Criterion benchmarks of the engine. Run: `cargo bench --bench engine`.
//!
//! - `throughput/*`: one mbox (`BULKWATCH_BENCH_MBOX` when set, else the
//!   SpamAssassin easy-ham set when `BULKWATCH_CORPUS` names the corpus
//!   directory, else the fixtures) split and judged message by message:
//!   `mail_parser_baseline` is mail-parser's own mbox split
//!   (`MessageIterator`) + parse + text extraction (body_text and body_html
//!   of every part), on one core;
//!   `bulkwatch_engine` is split (bulkwatch's own, `bulkwatch::replay::mbox`) +
//!   analyze + decide on one core, the work of `bulkwatch replay`;
//!   `replay_1_thread` and `replay_all_cores` run
//!   the replay itself on the file (read, analyze, decide, records; no
//!   output) with one analysis thread and with one per core. Criterion's
//!   throughput line is in messages per second. Implementation note: each
//!   iteration builds and drops an engine, and after the first the heap is
//!   full of the last engine's freed buckets, so glibc's realloc of growing
//!   buckets costs more here than in a `replay` process, which starts one
//!   engine on a fresh heap.
//! - `stages/*`: each step alone over the same mbox (mbox split, and the
//!   same split by mail-parser's iterator for comparison, MIME and
//!   HTML to text, normalization, shingles, simhash, MinHash, SHA-256,
//!   decision with a new engine per iteration), each fed what the step
//!   before produced.
//! - `lookup/N`: one query against a window of N entries (random
//!   fingerprints, the default radius and bands; each query from a pool of
//!   2^20, so its buckets come from memory, not cache). Memory per window entry,
//!   and the longest single insertion while the window is built (a table
//!   doubling), are printed.
//! - `inline/<name>`: analysis of each message of the hostile suite
//!   (`fixtures/hostile`) cut to 64 KiB: the worst case per byte of what
//!   a worker reads.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bulkwatch::config::Config;
use bulkwatch::engine::index::window::{Entry, Owner};
use bulkwatch::engine::index::{NearIndex, Query};
use bulkwatch::engine::{analyze, Engine, Envelope, UnixSecs};
use bulkwatch::replay::{read_mbox, replay_files, ReplayOptions};
use criterion::{criterion_group, criterion_main, BenchmarkId, Criterion, Throughput};
use mail_parser::mailbox::mbox::MessageIterator;

fn mbox_path() -> PathBuf {
    if let Some(p) = std::env::var_os("BULKWATCH_BENCH_MBOX") {
        return PathBuf::from(p);
    }
    match std::env::var_os("BULKWATCH_CORPUS") {
        Some(d) => PathBuf::from(d).join("sa-easy-ham.mbox"),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures/mbox/campaigns.mbox"),
    }
}

fn throughput(c: &mut Criterion) {
    let path = mbox_path();
    let bytes = std::fs::read(&path).expect("mbox");
    let count = read_mbox(&bytes[..]).count();
    eprintln!(
        "throughput input: {} ({} messages, {} bytes)",
        path.display(),
        count,
        bytes.len()
    );
    let mut g = c.benchmark_group("throughput");
    g.throughput(Throughput::Elements(count as u64));
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(10));
    g.bench_function("mail_parser_baseline", |b| {
        b.iter(|| {
            let mut n = 0usize;
            for m in MessageIterator::new(&bytes[..]) {
                let raw = m.expect("read").unwrap_contents();
                if let Some(msg) = mail_parser::MessageParser::default().parse(&raw) {
                    for i in 0..msg.text_body.len() {
                        n += msg.body_text(i).map_or(0, |t| t.len());
                    }
                    for i in 0..msg.html_body.len() {
                        n += msg.body_html(i).map_or(0, |t| t.len());
                    }
                }
            }
            black_box(n)
        })
    });
    let cfg = Config::default();
    g.bench_function("bulkwatch_engine", |b| {
        b.iter(|| {
            let mut engine = Engine::new(&cfg);
            let env = Envelope::default();
            for (i, m) in read_mbox(&bytes[..]).enumerate() {
                let raw = m.expect("read");
                let a = analyze(&raw, &env, &cfg);
                black_box(engine.decide(&a, &env, UnixSecs(1_000_000 + i as u64)));
            }
        })
    });
    // What `bulkwatch replay` does, less printing: read the file, analyze,
    // decide, keep a record per message. One analysis thread, then one
    // per core (the replay's default).
    for (name, jobs) in [("replay_1_thread", 1), ("replay_all_cores", 0)] {
        let opts = ReplayOptions {
            jobs,
            ..ReplayOptions::default()
        };
        g.bench_function(name, |b| {
            b.iter(|| {
                let s = replay_files(std::slice::from_ref(&path), &cfg, opts.clone(), |_| {})
                    .expect("replay");
                black_box(s.records.len())
            })
        });
    }
    g.finish();
}

/// Each step of `analyze` and `decide` alone, over the messages of the
/// throughput mbox, each step given what the one before produced: where
/// the engine's time goes.
fn stages(c: &mut Criterion) {
    use bulkwatch::engine::mime::normalize::normalize;
    use bulkwatch::engine::mime::{extract, MimeOutcome};
    use bulkwatch::engine::minhash::{min_sketch, seeds};
    use bulkwatch::engine::shingle::features;
    use bulkwatch::engine::simhash::{exact_hash, simhash};
    let bytes = std::fs::read(mbox_path()).expect("mbox");
    let raws: Vec<Vec<u8>> = read_mbox(&bytes[..]).map(|m| m.expect("read")).collect();
    let cfg = Config::default();
    let read = bulkwatch::engine::read_config(&cfg);
    let env = Envelope::default();
    let bodies: Vec<_> = raws
        .iter()
        .filter_map(|r| match extract(r, &read.scan) {
            MimeOutcome::Parsed(b) => Some(b),
            MimeOutcome::Unparsed => None,
        })
        .collect();
    let norms: Vec<_> = bodies
        .iter()
        .map(|b| normalize(b, &env.rcpts, &read.normalize))
        .collect();
    let feats: Vec<_> = norms
        .iter()
        .map(|n| features(n, &cfg.fingerprint))
        .collect();
    let analyses: Vec<_> = raws.iter().map(|r| analyze(r, &env, &cfg)).collect();
    let seeds = seeds(cfg.fingerprint.hash_key);
    let mut g = c.benchmark_group("stages");
    g.sample_size(10);
    g.measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(raws.len() as u64));
    g.bench_function("mbox_split", |b| {
        b.iter(|| {
            read_mbox(&bytes[..])
                .map(|m| m.map_or(0, |m| m.len()))
                .sum::<usize>()
        })
    });
    // The same split by mail-parser's iterator, which the baseline uses.
    g.bench_function("mbox_split_mail_parser", |b| {
        b.iter(|| {
            MessageIterator::new(&bytes[..])
                .map(|m| m.map_or(0, |m| m.unwrap_contents().len()))
                .sum::<usize>()
        })
    });
    g.bench_function("extract", |b| {
        b.iter(|| {
            raws.iter()
                .for_each(|r| drop(black_box(extract(r, &read.scan))))
        })
    });
    g.throughput(Throughput::Elements(bodies.len() as u64));
    g.bench_function("normalize", |b| {
        b.iter(|| {
            bodies
                .iter()
                .map(|x| normalize(x, &env.rcpts, &read.normalize).tokens)
                .sum::<usize>()
        })
    });
    g.bench_function("shingles", |b| {
        b.iter(|| {
            norms
                .iter()
                .for_each(|n| drop(black_box(features(n, &cfg.fingerprint))))
        })
    });
    g.bench_function("simhash", |b| {
        b.iter(|| feats.iter().fold(0, |h, f| h ^ simhash(&f.shingles)))
    });
    g.bench_function("minhash", |b| {
        b.iter(|| {
            feats
                .iter()
                .fold(0, |h, f| h ^ min_sketch(&f.words, &seeds).sketch)
        })
    });
    g.bench_function("sha256", |b| {
        b.iter(|| {
            norms
                .iter()
                .zip(&bodies)
                .fold(0, |a, (n, x)| a ^ exact_hash(&n.text, &x.attachments)[0])
        })
    });
    g.throughput(Throughput::Elements(raws.len() as u64));
    g.bench_function("decide", |b| {
        b.iter(|| {
            let mut engine = Engine::new(&cfg);
            for (i, a) in analyses.iter().enumerate() {
                black_box(engine.decide(a, &env, UnixSecs(1_000_000 + i as u64)));
            }
        })
    });
    g.finish();
}

#[path = "../fixtures/hostile/messages.rs"]
mod hostile;

/// Bytes of each hostile message the `inline` group analyses.
const CUT: usize = 64 * 1024;

fn inline(c: &mut Criterion) {
    let cfg = Config::default();
    let env = Envelope::default();
    let mut g = c.benchmark_group("inline");
    g.sample_size(20);
    for h in hostile::all() {
        let mut raw = hostile::raw(&h);
        raw.truncate(CUT);
        g.bench_function(h.name, |b| b.iter(|| black_box(analyze(&raw, &env, &cfg))));
    }
    g.finish();
}

use testkit::splitmix;

/// Queries the lookup bench cycles through (see `lookup`).
const QUERY_POOL: usize = 1 << 20;

fn lookup(c: &mut Criterion) {
    let cfg = Config::default();
    let w = &cfg.window;
    let mut g = c.benchmark_group("lookup");
    for n in [10_000usize, 1_000_000, 10_000_000] {
        let mut st = n as u64;
        // As `Engine::new` builds it for the default configuration.
        let mut idx = NearIndex::new(
            w.max_distance,
            n,
            w.minhash_bands,
            w.max_sketch_diff,
            w.max_minhash_distance,
        )
        .with_corroboration(w.corroborating_sketch_diff, w.corroborating_distance)
        .with_containment(w.corroborating_sketch_diff, w.corroborating_distance);
        // The longest single insertion: the one that doubles the tables
        // last (see `bulkwatch::engine::index::tables`, Growth).
        let mut longest = (Duration::ZERO, 0);
        for i in 0..n {
            let h = splitmix(&mut st);
            let bands: Vec<u64> = (0..w.minhash_bands).map(|_| splitmix(&mut st)).collect();
            let e = Entry::new(
                h,
                splitmix(&mut st),
                i as u32,
                Owner::Slot(0),
                1,
                0,
                100,
                true,
            );
            let t = Instant::now();
            idx.insert(e, &bands, &[]);
            longest = longest.max((t.elapsed(), i + 1));
        }
        eprintln!(
            "window of {n}: {:.1} bytes per entry (window and tables, heap); \
             longest insertion {:.1} ms, at entry {}",
            idx.heap_bytes() as f64 / n as f64,
            longest.0.as_secs_f64() * 1e3,
            longest.1
        );
        // Queries cycle through a pool far larger than any cache: each one
        // reads its buckets from memory, as a daemon's lookups do (one per
        // message, with other work in between). A pool of 1,024, as this
        // bench had until 2026-11-24, kept the buckets it reads in the
        // processor's cache and measured 0.64 us at 10^7 where a cold
        // lookup takes about twice that.
        let nb = w.minhash_bands;
        let pool = QUERY_POOL;
        let sims: Vec<(u64, u64)> = (0..pool)
            .map(|_| (splitmix(&mut st), splitmix(&mut st)))
            .collect();
        let bands: Vec<u64> = (0..pool * nb).map(|_| splitmix(&mut st)).collect();
        // The band probes' values: 8 more bucket reads a band.
        let smallest: Vec<[u32; 3]> = (0..pool * 2 * nb)
            .map(|_| std::array::from_fn(|_| splitmix(&mut st) as u32))
            .collect();
        let mut i = 0usize;
        g.bench_with_input(BenchmarkId::from_parameter(n), &n, |b, _| {
            b.iter(|| {
                let (h, s) = sims[i % pool];
                let keys = bands
                    .get((i % pool) * nb..(i % pool + 1) * nb)
                    .unwrap_or(&[]);
                let values = smallest
                    .get((i % pool) * 2 * nb..(i % pool + 1) * 2 * nb)
                    .unwrap_or(&[]);
                i += 1;
                black_box(idx.query(&Query {
                    simhash: h,
                    sketch: s,
                    bands: keys,
                    smallest: values,
                    sentences: &[],
                }))
            })
        });
        drop(idx);
    }
    g.finish();
}

criterion_group!(benches, throughput, stages, lookup, inline);
criterion_main!(benches);
