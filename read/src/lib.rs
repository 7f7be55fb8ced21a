//! Reading mail: raw message bytes in, what a reader of it sees out.
//!
//! This crate parses the sender's bytes (MIME, charsets, HTML and CSS,
//! attached PDFs and pictures) and normalizes the text ([`read`]), with
//! no hash key, no I/O and no runtime: bulkwatch runs it in a contained
//! worker process, and fingerprints and judges what it returns in the
//! daemon. Every reader draws on the message's work budget and returns
//! what it read when the budget runs out ([`Reading::partial`]).
//!
//! The readers are in [`mime`]: its table of parts is where a new kind of
//! document is added.
#![forbid(unsafe_code)]
#![warn(clippy::unwrap_used, clippy::expect_used, clippy::indexing_slicing)]

pub mod config;
pub mod mime;
pub mod ocr;

use mime::normalize::{normalize, Normalized};
use mime::{extract_to, Depth, MimeOutcome};

/// Most image sources that count in the exact hash.
const MAX_IMAGE_ANCHORS: usize = 16;

/// What reading a message gives: everything of it the fingerprint is made
/// from, before any keyed hash. [`read`] makes it from the raw bytes (the
/// part that parses hostile input and runs in a contained worker process,
/// the daemon's `worker`); the daemon's `fingerprint` makes its `Analysis`
/// from it with the configured key (the part that holds the key).
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
    /// A picture under a short text was not read for its text, which
    /// another process does (`ScanConfig::ocr_elsewhere`).
    pub wants_ocr: bool,
    /// The recognizer stopped at its deadline on a picture of this message
    /// ([`ocr::DEADLINE_MS`]): its text was not read.
    pub ocr_stopped: bool,
    /// Set by the daemon, not sent by a worker: the deep reading failed
    /// (its cause, a `worker::Failure` label) after the shallow one came,
    /// which stands.
    pub deep_failure: Option<&'static str>,
}

/// Parses and normalizes one message: MIME, HTML, CSS, charsets, the
/// normalizer. Pure and without keys: the daemon runs it in a contained
/// worker process (the daemon's `worker`). Never fails: an unparseable message
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
        wants_ocr: body.wants_ocr,
        ocr_stopped: body.ocr_stopped,
        deep_failure: None,
    };
    (r, deferred)
}

/// The settings [`read`] uses: none of them secret (the worker process
/// that reads hostile mail is given these and nothing else).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReadConfig {
    pub scan: config::ScanConfig,
    pub normalize: config::NormalizeConfig,
}

/// The image sources of a message as anchors of its exact hash: host and
/// path, lower-cased, without query or fragment, digit runs folded to `#`
/// (per-recipient tracking numbers), sorted and distinct, at most
/// [`MAX_IMAGE_ANCHORS`]. Inline images (`cid:`) and data URLs are the
/// attachments' business and are left out.
fn image_anchors(images: &[String]) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    for src in images {
        let src = src.trim();
        let Some(host) = mime::normalize::url_host(src) else {
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
