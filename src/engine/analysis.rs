//! The stateless half: raw message and envelope to [`Analysis`]. [`read`]
//! is the part that parses the sender's bytes (MIME, charsets, HTML, CSS,
//! normalization) and runs in a worker process; [`fingerprint`] is the
//! keyed part (shingle hashes, simhash, MinHash) and runs in the daemon,
//! which holds the key. [`analyze`] is the two in one process.

use sha2::{Digest, Sha256};

use super::envelope::Envelope;
use super::mime::normalize::{normalize, Normalized};
use super::mime::{extract_to, Depth, MimeOutcome};
use super::minhash::{min_sketch, seeds};
use super::shingle::features;
use super::simhash::{exact_hash, simhash, Fingerprint, VERSION};
use crate::config::Config;

/// The stateless part of the work on one message.
#[derive(Debug, Clone, PartialEq)]
pub struct Analysis {
    /// `None` when the message could not be parsed.
    pub fingerprint: Option<Fingerprint>,
    pub normalized: Normalized,
    pub features: usize,
    pub attachments: usize,
    /// What a message too short to compare by its words is compared by
    /// instead, exactly: attachments, image sources and, with enough
    /// words beside them, links (see [`fingerprint`]). 0: nothing; such a message
    /// is skipped as too short.
    pub anchors: usize,
    pub message_id: Option<String>,
    /// The Message-IDs it answers (`mime::BodyText::answers`).
    pub answers: Vec<String>,
    pub subject: Option<String>,
    /// Domain of the header From address.
    pub from_domain: Option<String>,
    /// List-Id, List-Post, List-Unsubscribe or `Precedence: list|bulk`
    /// (`mime::list_marks`).
    pub list: bool,
    /// A List-Id field (`mime::BodyText::list_id`).
    pub list_id: bool,
    /// A reply or a forward (`mime::BodyText::reply`).
    pub reply: bool,
    pub truncated: bool,
    /// A reader stopped at the message's work budget: it was read partly
    /// (`mime::BodyText::partial`).
    pub partial: bool,
    /// A message too short to compare by its words that is compared near
    /// by its pictures: its simhash is made from their perceptual hashes
    /// (see [`fingerprint`]).
    pub pictured: bool,
}

/// What reading a message gives: everything of it the fingerprint is made
/// from, before any keyed hash. [`read`] makes it from the raw bytes (the
/// part that parses hostile input and runs in a contained worker process,
/// `crate::worker`); [`fingerprint`] makes the [`Analysis`] from it with
/// the configured key (the part that holds the key, in the daemon).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reading {
    /// False when the message could not be parsed (no fingerprint then).
    pub parsed: bool,
    pub normalized: Normalized,
    /// A hash of each attachment, in MIME order (`mime::BodyText`).
    pub attachments: Vec<[u8; 32]>,
    /// The perceptual hash of each attached picture that has one, in MIME
    /// order.
    pub pictures: Vec<u64>,
    /// Image anchors (host and path of each image source, digits folded):
    /// sorted, distinct.
    pub images: Vec<String>,
    /// The body has a link (an HTML link target, `://` or `www.`).
    pub has_link: bool,
    pub message_id: Option<String>,
    pub answers: Vec<String>,
    pub subject: Option<String>,
    pub from_domain: Option<String>,
    pub list: bool,
    pub list_id: bool,
    pub reply: bool,
    pub truncated: bool,
    pub partial: bool,
    /// Set by the daemon, not sent by a worker: the deep reading failed
    /// (its cause, a `worker::Failure` label) after the shallow one came,
    /// which stands.
    pub deep_failure: Option<&'static str>,
}

/// Parses and normalizes one message: MIME, HTML, CSS, charsets, the
/// normalizer. Pure and without keys: the daemon runs it in a contained
/// worker process (`crate::worker`). Never fails: an unparseable message
/// gives a `Reading` with `parsed` false.
pub fn read(raw: &[u8], rcpts: &[String], cfg: &ReadConfig) -> Reading {
    read_to(raw, rcpts, cfg, Depth::Deep).0
}

/// [`read`] to `depth` ([`Depth`]), and whether a shallow reading left
/// something to the deep one (a PDF or a picture): when it did not, the
/// shallow reading is the whole reading.
pub fn read_to(raw: &[u8], rcpts: &[String], cfg: &ReadConfig, depth: Depth) -> (Reading, bool) {
    let body = match extract_to(raw, &cfg.scan, depth) {
        MimeOutcome::Parsed(b) => b,
        MimeOutcome::Unparsed => return (Reading::default(), false),
    };
    let deferred = body.deferred;
    let normalized = normalize(&body, rcpts, &cfg.normalize);
    let has_link = !body.urls.is_empty()
        || memchr::memmem::find(body.text.as_bytes(), b"://").is_some()
        || memchr::memmem::find(body.text.as_bytes(), b"www.").is_some();
    let r = Reading {
        parsed: true,
        normalized,
        images: image_anchors(&body.images),
        attachments: body.attachments,
        pictures: body.pictures,
        has_link,
        message_id: body.message_id,
        answers: body.answers,
        subject: body.subject,
        from_domain: body.from_domain,
        list: body.list,
        list_id: body.list_id,
        reply: body.reply,
        truncated: body.truncated,
        partial: body.partial,
        deep_failure: None,
    };
    (r, deferred)
}

/// The settings [`read`] uses: none of them secret (the worker process
/// that reads hostile mail is given these and nothing else).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadConfig {
    pub scan: crate::config::ScanConfig,
    pub normalize: crate::config::NormalizeConfig,
}

impl ReadConfig {
    /// The reading part of `cfg`.
    pub fn of(cfg: &Config) -> ReadConfig {
        ReadConfig {
            scan: cfg.scan.clone(),
            normalize: cfg.normalize.clone(),
        }
    }
}

/// Parses, normalizes and fingerprints one message in this process:
/// [`read`], then [`fingerprint`]. Never fails: an unparseable message
/// gives an `Analysis` without fingerprint.
pub fn analyze(raw: &[u8], env: &Envelope, cfg: &Config) -> Analysis {
    fingerprint(read(raw, &env.rcpts, &ReadConfig::of(cfg)), cfg)
}

/// Shingles, hashes and sketches a [`Reading`] with the configured key.
pub fn fingerprint(r: Reading, cfg: &Config) -> Analysis {
    if !r.parsed {
        return Analysis {
            fingerprint: None,
            normalized: Normalized::default(),
            features: 0,
            attachments: 0,
            anchors: 0,
            message_id: None,
            answers: Vec::new(),
            subject: None,
            from_domain: None,
            list: false,
            list_id: false,
            reply: false,
            truncated: false,
            partial: false,
            pictured: false,
        };
    }
    let normalized = r.normalized;
    let f = features(&normalized, &cfg.fingerprint);
    let sh = f.shingles;
    let short = sh.len() < cfg.fingerprint.min_features;
    let mut exact_parts = r.attachments.clone();
    exact_parts.extend(
        r.images
            .iter()
            .map(|i| <[u8; 32]>::from(Sha256::digest(i.as_bytes()))),
    );
    if short {
        // A short message is compared exactly and by nothing else: its
        // subject counts too, or every item of a feed ("url <host> date
        // not supplied", the title in the subject) would be one text.
        exact_parts.push(Sha256::digest(normalized.subject.as_bytes()).into());
    }
    let pictured = short && !r.pictures.is_empty();
    let fingerprint = Fingerprint {
        simhash: if pictured {
            picture_simhash(&r.pictures, &normalized, &r.attachments, &r.images)
        } else {
            simhash(&sh)
        },
        min: min_sketch(&f.words, &seeds(cfg.fingerprint.hash_key)),
        exact: exact_hash(&normalized.text, &exact_parts),
        features: u32::try_from(sh.len()).unwrap_or(u32::MAX),
        version: VERSION,
    };
    let fixed = r.attachments.len() + r.images.len();
    Analysis {
        fingerprint: Some(fingerprint),
        features: sh.len(),
        attachments: r.attachments.len(),
        // Anchors decide only for messages too short for near matching;
        // a long message is not searched for links. A bare link is not
        // enough: the same short line with a link to a common host ("see
        // docs.example.com") is written by many people.
        anchors: if short {
            fixed + usize::from(r.has_link && normalized.tokens >= MIN_LINKED_TOKENS)
        } else {
            fixed
        },
        normalized,
        message_id: r.message_id,
        answers: r.answers,
        subject: r.subject,
        from_domain: r.from_domain,
        list: r.list,
        list_id: r.list_id,
        reply: r.reply,
        truncated: r.truncated,
        partial: r.partial,
        pictured,
    }
}

/// Pictures whose perceptual hashes make a short message's simhash.
const MAX_SIMHASH_PICTURES: usize = 4;

/// The simhash of a short message with pictures: their perceptual hashes
/// (`mime::picture`), each rotated by its place, XORed together and with a
/// mask made from everything else the message is compared by exactly (its
/// text, subject, other attachments and image sources). Copies with the
/// same text and pictures a few pixels apart are then a few bits apart, and
/// in the near index they join as any near copies do; a message with other
/// text or other attachments differs by about half of the 64 bits, as an
/// unrelated text does. So a picture never links two messages by itself:
/// a legitimate short mail with a common picture (a logo) is compared as
/// exactly as before but for the picture's noise.
fn picture_simhash(
    pictures: &[u64],
    normalized: &Normalized,
    attachments: &[[u8; 32]],
    images: &[String],
) -> u64 {
    let mut mask = Sha256::new();
    mask.update(b"bulkwatch picture mask 1\0");
    mask.update(normalized.text.as_bytes());
    mask.update(b"\0");
    mask.update(normalized.subject.as_bytes());
    // The other attachments: those whose exact anchor is not a picture's
    // (a picture's anchor is the hash of its perceptual hash, which the
    // noise may move).
    for a in attachments {
        if !pictures
            .iter()
            .any(|p| crate::engine::mime::picture_anchor(*p) == *a)
        {
            mask.update(a);
        }
    }
    for i in images {
        mask.update(b"\0");
        mask.update(i.as_bytes());
    }
    let m: [u8; 32] = mask.finalize().into();
    let [b0, b1, b2, b3, b4, b5, b6, b7, ..] = m;
    let mut bits = u64::from_le_bytes([b0, b1, b2, b3, b4, b5, b6, b7]);
    for (i, p) in pictures.iter().take(MAX_SIMHASH_PICTURES).enumerate() {
        bits ^= p.rotate_left(17 * i as u32);
    }
    bits
}

/// Most image sources that count in the exact hash.
const MAX_IMAGE_ANCHORS: usize = 16;
/// Fewest normalized tokens (the link's host among them) for a short
/// message with a link and nothing else to be compared.
const MIN_LINKED_TOKENS: usize = 3;

/// The image sources of a message as anchors of its exact hash: host and
/// path, lower-cased, without query or fragment, digit runs folded to `#`
/// (per-recipient tracking numbers), sorted and distinct, at most
/// [`MAX_IMAGE_ANCHORS`]. Inline images (`cid:`) and data URLs are the
/// attachments' business and are left out.
fn image_anchors(images: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for src in images {
        let src = src.trim();
        let Some(host) = crate::engine::mime::normalize::url_host(src) else {
            continue;
        };
        let after_host = src
            .find("://")
            .and_then(|i| src.get(i + 3..))
            .and_then(|r| r.find('/').and_then(|j| r.get(j..)))
            .unwrap_or("");
        let path = after_host.split(['?', '#']).next().unwrap_or("");
        let mut anchor = String::with_capacity(host.len() + path.len());
        let mut digits = false;
        for c in host.chars().chain(path.chars()).take(512) {
            if c.is_ascii_digit() {
                if !digits {
                    anchor.push('#');
                }
                digits = true;
                continue;
            }
            digits = false;
            anchor.extend(c.to_lowercase());
        }
        out.push(anchor);
    }
    out.sort_unstable();
    out.dedup();
    out.truncate(MAX_IMAGE_ANCHORS);
    out
}
