//! Where diluted copies are lost (issue 40): reads the dressed suite's
//! cases (`DRESSED_DUMP=dir DRESSED_DUMP_ALL=1 DRESSED_CLASS=poisoned,
//! buster_lines cargo test --release --test dressed`: per class an mbox of
//! cases of 3 plain then 4 dressed copies) and, under each of `--keys`
//! keys (those of `DRESSED_KEY=1..`), follows every dressed copy's first
//! hop to its plain copy: whether it shares a MinHash band, whether it is
//! within the candidate bounds, whether the containment rule takes it
//! (`link::Rule::contains`) and, when not, which bound refused it; and the
//! same with the band probes (`minhash::probe_keys`): a text found by a
//! probe alone is a containing entry, held to `link::MAX_PROBED_MISSES`
//! and `link::MIN_PROBED`.
//!
//! Then four ceilings per class, at the worst key, of the cases whose four
//! dressed copies all join the plain copy directly: with the engine's
//! rule; with a perfect containment test (the copy holds 90% of the text's
//! words, counted exactly, and any candidate) under the rule's size bounds
//! for the copy (`link::size_bounds`; a dressed copy is no reply); under a
//! reply's; and without any. A strong match (the
//! index's radius, or a band within `max_sketch_diff` and
//! `max_minhash_distance`, then `strong_distance` or
//! `strong_sketch_diff`) joins in all three. The suite itself can do better
//! than the first ceiling: a later copy also joins on two dressed texts
//! (corroboration).
//!
//! Usage: cargo run --release --example dilution_probe -- [--keys N] MBOX...

use std::collections::HashSet;
use std::fs::File;

use bulkwatch::config::Config;
use bulkwatch::engine::index::window::{class_size, size_class};
use bulkwatch::engine::index::{CampaignRef, Match, MatchKind, MIN_PROBED_BANDS};
use bulkwatch::engine::link::{size_bounds, Rule};
use bulkwatch::engine::minhash::{probe_keys, sketch_diff};
use bulkwatch::engine::shingle::features;
use bulkwatch::engine::simhash::hamming;
use bulkwatch::replay::analyze_unenveloped;
use bulkwatch::replay::mbox::read_mbox;

#[path = "common/keys.rs"]
mod keys;

const PLAIN: usize = 3;
const CASE: usize = 7;

/// The key of `DRESSED_KEY=n` (tests/dressed.rs): two SplitMix64 outputs.
fn key(n: u64) -> (u64, u64) {
    let mut state = n;
    (testkit::splitmix(&mut state), testkit::splitmix(&mut state))
}

fn pct(n: u32, of: u32) -> f64 {
    f64::from(n) * 100.0 / f64::from(of.max(1))
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let (keys, args) = keys::keys_and_args(12)?;
    for path in &args {
        let raws: Vec<Vec<u8>> = read_mbox(File::open(path)?)
            .filter_map(Result::ok)
            .collect();
        let (mut copies, mut band, mut bounds, mut contained) = (0u32, 0u32, 0u32, 0u32);
        let (mut ext_band, mut ext_contained) = (0u32, 0u32);
        let (mut small, mut growth, mut misses) = (0u32, 0u32, 0u32);
        let mut resemblance = 0.0;
        // Per key: cases, and cases within each ceiling.
        let mut ceilings = vec![[0u32; 5]; keys as usize];
        for (k, ceiling) in ceilings.iter_mut().enumerate() {
            let mut cfg = Config::default();
            cfg.fingerprint.hash_key = key(k as u64 + 1);
            let w = &cfg.window;
            for case in raws.chunks_exact(CASE) {
                let an: Vec<_> = case.iter().map(|r| analyze_unenveloped(r, &cfg)).collect();
                let words = |i: usize| -> HashSet<u64> {
                    features(&an[i].normalized, &cfg.fingerprint)
                        .words
                        .into_iter()
                        .collect()
                };
                let Some(plain) = an[0].fingerprint else {
                    continue;
                };
                let plain_words = words(0);
                let text = an[0].features;
                let mut ok = [true; 4];
                for (i, a) in an.iter().enumerate().skip(PLAIN) {
                    let Some(fp) = a.fingerprint else {
                        ok = [false; 4];
                        continue;
                    };
                    copies += 1;
                    let own = words(i);
                    let shared = plain_words.intersection(&own).count() as f64;
                    resemblance += shared / plain_words.union(&own).count().max(1) as f64;
                    let held = shared / plain_words.len().max(1) as f64;
                    let banded = plain.min.bands[..w.minhash_bands]
                        .iter()
                        .zip(&fp.min.bands)
                        .any(|(x, y)| x == y);
                    let diff = sketch_diff(plain.min.sketch, fp.min.sketch);
                    let distance = hamming(plain.simhash, fp.simhash);
                    // The band probes (`minhash::probe_keys`): whether the
                    // plain copy's key is among the copy's own and probe
                    // keys in enough tables (`index::MIN_PROBED_BANDS`).
                    let tables = (0..w.minhash_bands)
                        .filter(|&j| {
                            fp.min.bands[j] == plain.min.bands[j]
                                || probe_keys(&fp.min.smallest, j).any(|k| k == plain.min.bands[j])
                        })
                        .count();
                    let ext = tables >= MIN_PROBED_BANDS as usize;
                    let ext_candidate = (banded || ext)
                        && diff <= w.corroborating_sketch_diff
                        && distance <= w.corroborating_distance;
                    let candidate = banded
                        && diff <= w.corroborating_sketch_diff
                        && distance <= w.corroborating_distance;
                    let rule = Rule {
                        strong_distance: cfg.thresholds.strong_distance,
                        strong_sketch_diff: cfg.thresholds.strong_sketch_diff,
                        corroboration: w.corroborating_matches,
                        features: a.features,
                        sketch: fp.min.sketch,
                        deeper: fp.min.deeper,
                        reply: a.reply,
                    };
                    let m = Match {
                        seq: 0,
                        distance,
                        sketch_diff: diff,
                        campaign: CampaignRef::Slot(0),
                        sketch: plain.min.sketch,
                        kind: MatchKind::Near,
                        size: size_class(text),
                    };
                    let takes = rule.contains(&m);
                    // Found by a probe alone: a containing entry.
                    let ext_takes = rule.contains(&Match {
                        kind: if banded {
                            MatchKind::Near
                        } else {
                            MatchKind::Containing
                        },
                        ..m
                    });
                    ext_band += u32::from(banded || ext);
                    ext_contained += u32::from(ext_candidate && ext_takes);
                    band += u32::from(banded);
                    bounds += u32::from(candidate);
                    contained += u32::from(candidate && takes);
                    let size = class_size(size_class(text));
                    let bounds = |reply: bool| size_bounds(reply, size);
                    let (least, smallest) = bounds(a.reply);
                    if candidate && !takes {
                        if size < least {
                            small += 1;
                        } else if (a.features as f64) < smallest {
                            growth += 1;
                        } else {
                            misses += 1;
                        }
                    }
                    let matched = distance <= w.max_distance
                        || (banded
                            && diff <= w.max_sketch_diff
                            && distance <= w.max_minhash_distance);
                    let strong = matched
                        && (distance <= rule.strong_distance || diff <= rule.strong_sketch_diff);
                    let sized = |(least, smallest): (f64, f64)| {
                        size >= least && a.features as f64 >= smallest
                    };
                    ok[0] &= strong || (ext_candidate && ext_takes);
                    ok[1] &= strong || (held >= 0.9 && sized(bounds(a.reply)));
                    ok[2] &= strong || (held >= 0.9 && sized(bounds(true)));
                    ok[3] &= strong || (held >= 0.9 && a.features > text);
                }
                ceiling[0] += 1;
                for (c, o) in ceiling[1..].iter_mut().zip(ok) {
                    *c += u32::from(o);
                }
            }
        }
        println!(
            "{path}: {copies} dressed copies over {keys} keys, mean word resemblance {:.2}",
            resemblance / f64::from(copies.max(1))
        );
        println!(
            "  without the band probes: share a band {:.1}%, candidates (band and corroboration bounds) {:.1}%, contained {:.1}%",
            pct(band, copies),
            pct(bounds, copies),
            pct(contained, copies)
        );
        println!(
            "  candidates refused: text too small {:.1}%, message too small {:.1}%, misses {:.1}%",
            pct(small, copies),
            pct(growth, copies),
            pct(misses, copies)
        );
        println!(
            "  with the band probes (the rule): share a band or a probe {:.1}%, contained {:.1}%",
            pct(ext_band, copies),
            pct(ext_contained, copies)
        );
        let worst = |i: usize| {
            ceilings
                .iter()
                .map(|c| pct(c[i], c[0]))
                .fold(100.0, f64::min)
        };
        println!(
            "  first-hop case ceilings at the worst key: the rule {:.1}%, perfect containment with the copy's size bounds {:.1}%, with a reply's {:.1}%, without any {:.1}%",
            worst(1),
            worst(2),
            worst(3),
            worst(4)
        );
    }
    Ok(())
}
