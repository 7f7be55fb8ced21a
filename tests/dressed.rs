//! The dressed-campaign suite: a campaign must not be able to hide by how it
//! dresses its text.
//!
//! A spammer controls every byte of a message. For each base text and each
//! class of dress (tests/dressed/dress.rs), the suite sends 3 plain copies
//! and then 4 dressed copies of the text, each to its own recipient (own
//! To, Message-ID, greeting name and tracking number), through a fresh
//! engine at bulk threshold 5. A case passes when every dressed copy ends
//! in the plain copies' campaign (final ids, after merges) and messages 5,
//! 6 and 7 are bulk. Each class must pass at least [`MIN_RATE`] of its
//! cases, but the open ones ([`OPEN`]), which must not fall under their
//! floor.
//!
//! Base texts: the suite's own (tests/dressed/texts.rs) and, when
//! `BULKWATCH_CORPUS` names the corpus directory, about [`CORPUS_SAMPLE`]
//! spam texts of `sa-spam.mbox`, read in place.
//!
//! With `--nocapture` the test prints a table per class before it asserts.
//! Knobs for working on the engine: `DRESSED_CLASS=a,b` runs only classes
//! whose name contains one of the parts; `DRESSED_VERBOSE=1` lists every
//! failed case; `DRESSED_DUMP=dir` writes the 7 messages of each failed
//! case (of every case with `DRESSED_DUMP_ALL=1`) to `dir/<class>.mbox`,
//! for `bulkwatch replay` or to look at; `DRESSED_KEY=n` runs under a
//! fingerprint key made from the number `n` instead of the built-in one
//! (an attacker does not know the key: a class counts at its worst key).

#[path = "dressed/dress.rs"]
mod dress;
#[path = "dressed/texts.rs"]
mod texts;

use std::collections::BTreeMap;
use std::fs::File;
use std::io::{BufReader, Write};
use std::path::PathBuf;
use std::time::Instant;

use bulkwatch::config::Config;
use bulkwatch::engine::campaign::CampaignId;
use bulkwatch::engine::verdict::{Level, Verdict};
use bulkwatch::replay::{read_mbox, ReplayOptions, Replayer};
use mail_parser::MessageParser;

/// Each class must pass this share of its cases.
const MIN_RATE: f64 = 0.95;

/// Classes the engine does not catch well enough yet (issue 40,
/// dilution). Reported with the others; held only to a floor a little
/// under what they reach (2026-11-27, built-in key, 54 cases; own texts in
/// brackets): poisoned 22% (21%) before the containment rule, 65% (86%)
/// with it, 67% (93%) with its bound at 0.85; buster_lines 63% (43%), then 78%
/// (64%), then 94% (100%) at 0.85: its first busted copy is offered as a
/// candidate but the sketch's noise put its estimated share of the text
/// under 0.9 (docs/dev/quality.md); with the test of the three smallest
/// values instead of the estimate, poisoned 69% (100%), buster_lines 96%
/// (100%); with the size bounds kept for replies, poisoned 76% (100%), and
/// buster_lines (98%) left the list (81.5% at its worst of six keys, which
/// this suite does not hold); with the band probes (a copy that shares
/// no band with its text found through its second and third smallest
/// values), poisoned 80% (100%), 74% at its worst of six keys, and
/// buster_lines 92.6% at its worst. Most poisoned cases still lost are
/// copies whose sketch differs from their text's in more values than the
/// corroboration bounds allow (past them, ham joined ham: docs/dev/quality.md).
/// With the text's anchors (issue 54: the smallest sentence key of each
/// third of its sentences, which a diluted copy holds whole, found at any
/// sketch difference), poisoned 94.4% at its worst of six keys and at the
/// built-in one; its floor rose from 0.75 to 0.90.
/// attached_pdf left the list with
/// fingerprint version 7 (93% before, 98% since, at every key: a PDF's
/// text comes as one paragraph, which the footer rule had cut when it
/// held two footer phrases; 96% with version 7 for buster_lines). A
/// class leaves this list when it reaches [`MIN_RATE`].
///
/// signs_for_letters (issue 54: "letters written as signs", 66% in the
/// issue's hidden set; our own rendering of it: every a, s, t of half the
/// words as @, $, 7, at the start of a word too, and e, o, i as digits in
/// half of those) read 74% with the spelling rules of issue 40, 93% with
/// their bounds widened (a digit may open a word, one letter in three
/// characters is enough, two substitutes a letter and one more a sign,
/// three digits in a row beside a sign); the copies it still loses are
/// near misses (distance 6 to 8 from the plain copies).
const OPEN: &[(&str, f64)] = &[("poisoned", 0.90), ("signs_for_letters", 0.88)];

/// The share a class must pass.
fn bar(class: &str) -> f64 {
    OPEN.iter()
        .find(|(c, _)| *c == class)
        .map_or(MIN_RATE, |(_, floor)| *floor)
}
/// Plain copies, then dressed copies.
const PLAIN_COPIES: usize = 3;
const DRESSED_COPIES: usize = 4;
/// Corpus texts sampled (every k-th of those of the right length).
const CORPUS_SAMPLE: usize = 40;
const MIN_WORDS: usize = 60;
const MAX_WORDS: usize = 400;

fn threshold5() -> Config {
    let mut cfg = Config::default();
    cfg.thresholds.bulk_threshold = 5.0;
    cfg.thresholds.suspect_threshold = 3.0;
    if let Some(seed) = std::env::var("DRESSED_KEY")
        .ok()
        .and_then(|k| k.parse::<u64>().ok())
    {
        let mut state = seed;
        cfg.fingerprint.hash_key = (testkit::splitmix(&mut state), testkit::splitmix(&mut state));
    }
    cfg
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Origin {
    Own,
    Corpus,
}

struct Base {
    origin: Origin,
    name: String,
    text: String,
}

fn own_texts() -> Vec<Base> {
    texts::OWN
        .iter()
        .map(|(name, paras)| Base {
            origin: Origin::Own,
            name: (*name).to_owned(),
            text: paras.join("\n\n"),
        })
        .collect()
}

/// A corpus text as a base text: LF line ends, no trailing blanks, no
/// control characters, at most one blank line in a row.
fn clean(text: &str) -> String {
    let mut out: Vec<String> = Vec::new();
    for line in text.replace("\r\n", "\n").split('\n') {
        let line: String = line
            .chars()
            .map(|c| if c == '\t' { ' ' } else { c })
            .filter(|c| !c.is_control())
            .collect();
        let line = line.trim_end().to_owned();
        if line.is_empty() && out.last().is_none_or(String::is_empty) {
            continue;
        }
        out.push(line);
    }
    out.join("\n").trim().to_owned()
}

/// About [`CORPUS_SAMPLE`] spam texts of 60 to 400 words, every k-th.
fn corpus_texts() -> Vec<Base> {
    let Some(dir) = std::env::var_os("BULKWATCH_CORPUS") else {
        eprintln!("note: BULKWATCH_CORPUS not set; own texts only");
        return Vec::new();
    };
    let path = PathBuf::from(dir).join("sa-spam.mbox");
    let Ok(f) = File::open(&path) else {
        eprintln!("note: {} missing; own texts only", path.display());
        return Vec::new();
    };
    let parser = MessageParser::default();
    let mut eligible = Vec::new();
    for (i, raw) in read_mbox(BufReader::new(f)).enumerate() {
        let raw = raw.expect("read sa-spam.mbox");
        let Some(msg) = parser.parse(&raw) else {
            continue;
        };
        let Some(text) = msg.body_text(0) else {
            continue;
        };
        let text = clean(&text);
        let words = text.split_whitespace().count();
        if (MIN_WORDS..=MAX_WORDS).contains(&words) {
            eligible.push(Base {
                origin: Origin::Corpus,
                name: format!("sa-spam#{}", i + 1),
                text,
            });
        }
    }
    let k = (eligible.len() / CORPUS_SAMPLE).max(1);
    eligible
        .into_iter()
        .step_by(k)
        .take(CORPUS_SAMPLE)
        .collect()
}

/// What one case gave.
struct Outcome {
    /// The plain copies formed one campaign.
    plain_ok: bool,
    /// Every dressed copy ended in it.
    joined: bool,
    /// Messages 5, 6 and 7 were bulk.
    bulk: bool,
    verdicts: Vec<Verdict>,
    ids: Vec<Option<CampaignId>>,
    raws: Vec<Vec<u8>>,
}

impl Outcome {
    fn passed(&self) -> bool {
        self.joined && self.bulk
    }

    /// One line: final campaign of each message (a, b, ... by first
    /// appearance; - for none) and level letters.
    fn brief(&self) -> String {
        let mut seen: Vec<CampaignId> = Vec::new();
        let ids: String = self
            .ids
            .iter()
            .map(|id| match id {
                None => '-',
                Some(id) => {
                    let k = seen.iter().position(|s| s == id).unwrap_or_else(|| {
                        seen.push(*id);
                        seen.len() - 1
                    });
                    char::from(b'a' + (k as u8).min(25))
                }
            })
            .collect();
        let levels: String = self
            .verdicts
            .iter()
            .map(|v| match v.level {
                Level::Clean => 'c',
                Level::Suspect => 's',
                Level::Bulk => 'B',
                Level::Allowed(_) => 'A',
                Level::Skipped(_) => 'k',
            })
            .collect();
        format!("campaigns {ids} levels {levels}")
    }
}

/// Each message's campaign after the replay (merges followed).
fn final_ids(r: Replayer) -> Vec<Option<CampaignId>> {
    r.into_summary()
        .records
        .iter()
        .map(|r| r.campaign)
        .collect()
}

/// The suite's own texts, then the corpus's when `BULKWATCH_CORPUS` is set.
fn all_bases() -> Vec<Base> {
    let mut bases = own_texts();
    bases.extend(corpus_texts());
    bases
}

fn run_case(cfg: &Config, dress: dress::Dress, text: &str) -> Outcome {
    let mut r = Replayer::new(cfg, ReplayOptions::default());
    let mut verdicts = Vec::new();
    let mut raws = Vec::new();
    for copy in 0..PLAIN_COPIES + DRESSED_COPIES {
        let raw = if copy < PLAIN_COPIES {
            dress::plain(text, copy)
        } else {
            dress(text, copy)
        };
        verdicts.push(r.feed("dressed", copy + 1, &raw));
        raws.push(raw);
    }
    let ids = final_ids(r);
    let plain_id = ids[0];
    let plain_ok = plain_id.is_some() && ids[..PLAIN_COPIES].iter().all(|id| *id == plain_id);
    let joined = plain_ok && ids[PLAIN_COPIES..].iter().all(|id| *id == plain_id);
    let bulk = verdicts[4..].iter().all(|v| v.level == Level::Bulk);
    Outcome {
        plain_ok,
        joined,
        bulk,
        verdicts,
        ids,
        raws,
    }
}

#[derive(Default)]
struct Tally {
    own: (usize, usize),
    corpus: (usize, usize),
    plain_broken: usize,
    not_joined: usize,
    not_bulk: usize,
    failures: Vec<String>,
}

impl Tally {
    fn passed(&self) -> usize {
        self.own.0 + self.corpus.0
    }

    fn total(&self) -> usize {
        self.own.1 + self.corpus.1
    }

    fn rate(&self) -> f64 {
        self.passed() as f64 / self.total().max(1) as f64
    }
}

fn frac((p, t): (usize, usize)) -> String {
    if t == 0 {
        "-".to_owned()
    } else {
        format!("{p}/{t}")
    }
}

/// Appends the messages of a failed case to `dir/<class>.mbox` (mboxrd).
fn dump(dir: &str, class: &str, base: &Base, o: &Outcome) {
    std::fs::create_dir_all(dir).expect("create DRESSED_DUMP");
    let mut f = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(PathBuf::from(dir).join(format!("{class}.mbox")))
        .expect("open dump mbox");
    for raw in &o.raws {
        let mut out = format!("From dressed@{} Mon Nov  3 10:00:00 2025\n", base.name).into_bytes();
        for line in raw.split_inclusive(|b| *b == b'\n') {
            let tail = line.iter().position(|b| *b != b'>').unwrap_or(line.len());
            if line[tail..].starts_with(b"From ") {
                out.push(b'>');
            }
            out.extend_from_slice(line);
        }
        if !out.ends_with(b"\n") {
            out.push(b'\n');
        }
        out.push(b'\n');
        f.write_all(&out).expect("write dump");
    }
}

#[test]
fn a_campaign_cannot_hide_by_how_it_dresses_its_text() {
    let started = Instant::now();
    let cfg = threshold5();
    let mut bases = own_texts();
    let own = bases.len();
    bases.extend(corpus_texts());
    let corpus = bases.len() - own;
    let only: Option<Vec<String>> = std::env::var("DRESSED_CLASS")
        .ok()
        .map(|s| s.split(',').map(str::to_owned).collect());
    let verbose = std::env::var_os("DRESSED_VERBOSE").is_some();
    let dump_dir = std::env::var("DRESSED_DUMP").ok();
    let dump_all = std::env::var_os("DRESSED_DUMP_ALL").is_some();

    let mut table: BTreeMap<usize, (&str, Tally)> = BTreeMap::new();
    for (k, (class, dress)) in dress::CLASSES.iter().enumerate() {
        if only
            .as_ref()
            .is_some_and(|o| !o.iter().any(|p| class.contains(p.as_str())))
        {
            continue;
        }
        let mut t = Tally::default();
        for base in &bases {
            let o = run_case(&cfg, *dress, &base.text);
            let cell = match base.origin {
                Origin::Own => &mut t.own,
                Origin::Corpus => &mut t.corpus,
            };
            cell.1 += 1;
            if let Some(dir) = dump_dir.as_deref().filter(|_| dump_all || !o.passed()) {
                dump(dir, class, base, &o);
            }
            if o.passed() {
                cell.0 += 1;
                continue;
            }
            t.plain_broken += usize::from(!o.plain_ok);
            t.not_joined += usize::from(o.plain_ok && !o.joined);
            t.not_bulk += usize::from(!o.bulk);
            let mut line = format!("{}: {}", base.name, o.brief());
            if verbose {
                for (i, v) in o.verdicts.iter().enumerate() {
                    line.push_str(&format!(
                        "\n        #{} {} features={}",
                        i + 1,
                        v.header_value(),
                        v.features
                    ));
                }
            }
            t.failures.push(line);
        }
        table.insert(k, (class, t));
    }

    eprintln!();
    eprintln!(
        "dressed-campaign suite: {own} own + {corpus} corpus texts; per case {PLAIN_COPIES} plain \
         then {DRESSED_COPIES} dressed copies, bulk threshold 5; pass = all 7 in the plain \
         campaign and messages 5-7 bulk"
    );
    eprintln!(
        "{:<22} {:>7} {:>7} {:>7} {:>7}  {:>6} {:>6} {:>6}",
        "class", "own", "corpus", "all", "rate", "plainX", "split", "!bulk"
    );
    for (class, t) in table.values() {
        let mark = if t.rate() < bar(class) {
            "  << FAIL"
        } else if t.rate() < MIN_RATE {
            "  (open)"
        } else {
            ""
        };
        eprintln!(
            "{:<22} {:>7} {:>7} {:>7} {:>6.1}%  {:>6} {:>6} {:>6}{mark}",
            class,
            frac(t.own),
            frac(t.corpus),
            frac((t.passed(), t.total())),
            100.0 * t.rate(),
            t.plain_broken,
            t.not_joined,
            t.not_bulk,
        );
    }
    eprintln!(
        "(plainX: the plain copies themselves split; split: a dressed copy left the plain \
         campaign; !bulk: one of messages 5-7 not bulk. Campaign letters a, b, ... per message, \
         levels c clean, s suspect, B bulk, k skipped.)"
    );
    for (class, t) in table.values() {
        if t.failures.is_empty() {
            continue;
        }
        let show = if verbose { t.failures.len() } else { 3 };
        eprintln!("{class}: {} failed", t.failures.len());
        for f in t.failures.iter().take(show) {
            eprintln!("    {f}");
        }
    }
    eprintln!(
        "{} cases in {:.1} s",
        table.values().map(|(_, t)| t.total()).sum::<usize>(),
        started.elapsed().as_secs_f64()
    );

    let failing: Vec<String> = table
        .values()
        .filter(|(class, t)| t.rate() < bar(class))
        .map(|(class, t)| {
            format!(
                "{class} {:.0}% (bar {:.0}%)",
                100.0 * t.rate(),
                100.0 * bar(class)
            )
        })
        .collect();
    assert!(
        failing.is_empty(),
        "classes under their bar ({:.0}%, or the floor of an open class): {}",
        100.0 * MIN_RATE,
        failing.join(", ")
    );
}

/// Copies per case of a campaign that dresses every copy alike.
const ALIKE_COPIES: usize = 7;

/// A campaign whose every copy is dressed by `dress` (no plain copies),
/// one case per base text: all copies must be one campaign and messages 5
/// to 7 bulk. Prints the rate under `label` with the first failures, and
/// returns it.
fn alike_rate(
    cfg: &Config,
    bases: &[Base],
    label: &str,
    dress: impl Fn(&str, usize) -> Vec<u8>,
) -> f64 {
    let mut passed = 0;
    let mut failures = Vec::new();
    for base in bases {
        let mut r = Replayer::new(cfg, ReplayOptions::default());
        let verdicts: Vec<Verdict> = (0..ALIKE_COPIES)
            .map(|copy| r.feed("alike", copy + 1, &dress(&base.text, copy)))
            .collect();
        let ids = final_ids(r);
        let one = ids[0].is_some() && ids.iter().all(|id| *id == ids[0]);
        let bulk = verdicts[4..].iter().all(|v| v.level == Level::Bulk);
        if one && bulk {
            passed += 1;
        } else {
            let distinct: std::collections::BTreeSet<_> = ids.iter().collect();
            failures.push(format!(
                "{}: {} campaigns, last verdict {}",
                base.name,
                distinct.len(),
                verdicts
                    .last()
                    .map(Verdict::header_value)
                    .unwrap_or_default()
            ));
        }
    }
    let total = bases.len();
    let rate = passed as f64 / total.max(1) as f64;
    eprintln!("{label}: {passed}/{total} ({:.1}%)", 100.0 * rate);
    for f in failures.iter().take(5) {
        eprintln!("    {f}");
    }
    rate
}

/// Issue 40: the same picture with 40 pixels changed per copy was 0%
/// caught (each copy's SHA-256 its own) while identical pictures were
/// 100%. Pictures are compared by a perceptual hash
/// (`bulkwatch::engine::mime::picture`).
#[test]
fn a_picture_campaign_is_one_campaign_whatever_pixels_it_changes() {
    let cfg = threshold5();
    let bases = all_bases();
    let mut failing = Vec::new();
    for (label, noise) in [("identical pictures", 0), ("40 pixels changed", 40)] {
        let rate = alike_rate(&cfg, &bases, &format!("pictures, {label}"), |t, c| {
            dress::picture_message(t, c, noise)
        });
        if rate < MIN_RATE {
            failing.push(format!("{label} {:.0}%", 100.0 * rate));
        }
    }
    assert!(
        failing.is_empty(),
        "picture campaigns under {:.0}%: {}",
        100.0 * MIN_RATE,
        failing.join(", ")
    );
}

/// QR-code phishing (issue 54, item 2): a short line and a QR code of the
/// campaign's link, each copy's picture its own (another number in the
/// link, another size and place, speckles). The link read from the code
/// is the message's: one campaign.
#[test]
fn a_qr_code_campaign_is_one_campaign() {
    let rate = alike_rate(&threshold5(), &all_bases(), "QR codes", dress::qr_message);
    assert!(rate >= MIN_RATE, "QR-code campaigns {:.0}%", 100.0 * rate);
}

/// A campaign that sends every copy as a PDF under a one-line body (the
/// `attached_pdf` class mixes them with plain copies): one campaign.
#[test]
fn a_pdf_campaign_is_one_campaign() {
    let rate = alike_rate(
        &threshold5(),
        &all_bases(),
        "PDF copies only",
        dress::attached_pdf,
    );
    assert!(rate >= MIN_RATE, "PDF campaigns {:.0}%", 100.0 * rate);
}

/// Of the first `pairs` pairs of neighbouring base texts, how many stay
/// two campaigns when three copies of each, dressed by `dress`, are fed
/// one text after the other.
fn pairs_apart(
    cfg: &Config,
    bases: &[Base],
    pairs: usize,
    dress: fn(&str, usize) -> Vec<u8>,
) -> usize {
    let mut apart = 0;
    for pair in bases.windows(2).take(pairs) {
        let mut r = Replayer::new(cfg, ReplayOptions::default());
        for (i, base) in pair.iter().enumerate() {
            for copy in 0..3 {
                r.feed("pair", i * 3 + copy + 1, &dress(&base.text, copy));
            }
        }
        let ids = final_ids(r);
        if ids[0] != ids[3] {
            apart += 1;
        }
    }
    apart
}

/// What the picture-of-text test must reach: the 90%, under the
/// suite's [`MIN_RATE`]. Own texts 14/14 under each of six keys; with the
/// corpus 51/54 (2026-11-29, built-in key). The three lost are corpus
/// texts whose copies Tesseract splits into other lines and paragraphs
/// (a speckle read as a word on a line of its own), so that the footer
/// rule cuts a list footer from some copies and not from others: the
/// reading is right, the normalization of what it reads differs.
const OCR_RATE: f64 = 0.90;

/// Image spam (issue 54, item 2): every copy the text drawn into a
/// picture, at its own size, width, offset and colours, with speckles,
/// under a one-line body. Tesseract reads the text
/// (`bulkwatch_read::ocr`), which is compared as a body's: one campaign
/// per text. And the other direction: the pictures of two texts are two
/// campaigns, not one (a picture's text is not "some picture").
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
#[test]
fn a_picture_of_text_campaign_is_one_campaign() {
    let cfg = threshold5();
    let bases = all_bases();
    let rate = alike_rate(
        &cfg,
        &bases,
        "pictures of text",
        dress::text_picture_message,
    );
    let pairs = bases.len() - 1;
    let apart = pairs_apart(&cfg, &bases, pairs, dress::text_picture_message);
    eprintln!("pictures of two texts apart: {apart}/{pairs}");
    assert!(
        rate >= OCR_RATE,
        "picture-of-text campaigns {:.0}%",
        100.0 * rate
    );
    assert_eq!(apart, pairs, "pictures of two texts made one campaign");
}

/// A font cipher (issue 65, text drawn by the page's own font): every
/// copy's text written through its own permutation of a font's character
/// map, the font written into the page. The text is read as the font
/// draws it (`bulkwatch_read::mime::drawn`): one campaign per text, and
/// two texts in ciphers stay two campaigns.
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
#[test]
fn a_font_cipher_campaign_is_one_campaign() {
    let cfg = threshold5();
    let bases = all_bases();
    if let Ok(dir) = std::env::var("DRESSED_DUMP") {
        let _ = std::fs::create_dir_all(&dir);
        for base in &bases {
            for copy in 0..ALIKE_COPIES {
                let raw = match copy {
                    0..3 => dress::plain(&base.text, copy),
                    _ => dress::font_cipher_message(&base.text, copy),
                };
                let name = format!("{dir}/font_cipher_{}_{copy}.eml", base.name);
                std::fs::write(name, raw).expect("dump");
            }
        }
    }
    // Plain copies first, then copies in ciphers that must join them.
    let rate = alike_rate(&cfg, &bases, "font cipher", |t, c| {
        if c < 3 {
            dress::plain(t, c)
        } else {
            dress::font_cipher_message(t, c)
        }
    });
    let pairs = 6.min(bases.len() - 1);
    let apart = pairs_apart(&cfg, &bases, pairs, dress::font_cipher_message);
    assert!(
        rate >= OCR_RATE,
        "font-cipher campaigns {:.0}%",
        100.0 * rate
    );
    assert_eq!(apart, pairs, "two texts in ciphers made one campaign");
}

/// A scanned page (issue 65, one picture path): the text drawn as the one
/// picture of a PDF page without text (JPEG or deflated grey samples),
/// attached under a one-line body. The PDF's pictures are read as
/// attached ones are: one campaign per text.
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
#[test]
fn a_scanned_pdf_campaign_is_one_campaign() {
    let cfg = threshold5();
    let bases = all_bases();
    let rate = alike_rate(&cfg, &bases, "scanned PDFs", dress::scanned_pdf_message);
    assert!(
        rate >= OCR_RATE,
        "scanned-PDF campaigns {:.0}%",
        100.0 * rate
    );
}
