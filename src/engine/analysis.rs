//! The stateless half: raw message and envelope to [`Analysis`]. [`read`]
//! (the `bulkwatch-read` crate) is the part that parses the sender's bytes
//! (MIME, charsets, HTML, CSS, PDFs, pictures, normalization) and runs in
//! a worker process; [`fingerprint`] is the keyed part (shingle hashes,
//! simhash, MinHash) and runs in the daemon, which holds the key.
//! [`analyze`] is the two in one process.

use bulkwatch_read::mime::normalize::Normalized;
pub use bulkwatch_read::{read, read_to, ReadConfig, Reading};
use sha2::{Digest, Sha256};

use super::envelope::Envelope;
use super::minhash::{min_sketch, seeds};
use super::shingle::{features, Sentences};
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
    /// Its sentence keys and anchors ([`Sentences`]).
    pub sentences: Sentences,
}

/// The reading part of `cfg`: what a worker is given, nothing secret.
pub fn read_config(cfg: &Config) -> ReadConfig {
    let (s, n) = (&cfg.scan, &cfg.normalize);
    ReadConfig {
        scan: bulkwatch_read::config::ScanConfig {
            max_scan_bytes: s.max_scan_bytes,
            max_parse_bytes: s.max_parse_bytes,
            ocr: (s.ocr != "off").then(|| bulkwatch_read::config::OcrConfig {
                data: (s.ocr != "auto").then(|| std::path::PathBuf::from(&s.ocr)),
                languages: s.ocr_languages.clone(),
            }),
            // The daemon's pool sets it for its readers (worker::Pool).
            ocr_elsewhere: false,
        },
        normalize: bulkwatch_read::config::NormalizeConfig {
            nfkc: n.nfkc,
            case_fold: n.case_fold,
            strip_markup: n.strip_markup,
            read_spellings: n.read_spellings,
            urls_to_host: n.urls_to_host,
            fold_digits: n.fold_digits,
            drop_random_tokens: n.drop_random_tokens,
            strip_greetings: n.strip_greetings,
            strip_recipient: n.strip_recipient,
            strip_quotes: n.strip_quotes,
            strip_signatures: n.strip_signatures,
            stop_words: n.stop_words,
        },
    }
}

/// Parses, normalizes and fingerprints one message in this process:
/// [`read`], then [`fingerprint`]. Never fails: an unparseable message
/// gives an `Analysis` without fingerprint.
pub fn analyze(raw: &[u8], env: &Envelope, cfg: &Config) -> Analysis {
    fingerprint(read(raw, &env.rcpts, &read_config(cfg)), cfg)
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
            sentences: Sentences::default(),
        };
    }
    let normalized = r.normalized;
    let f = features(&normalized, &cfg.fingerprint);
    let sh = &f.shingles;
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
            simhash(sh)
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
        sentences: f.sentences,
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

/// Fewest normalized tokens (the link's host among them) for a short
/// message with a link and nothing else to be compared.
const MIN_LINKED_TOKENS: usize = 3;

#[cfg(test)]
mod tests {
    use std::io::Cursor;

    use image::{DynamicImage, ImageFormat, Rgb, RgbImage};

    use super::*;

    /// A picture with shapes and gradients, as a PNG (as the reading
    /// crate's tests draw it).
    fn encoded(w: u32, h: u32, seed: u32, format: ImageFormat) -> Vec<u8> {
        let img = RgbImage::from_fn(w, h, |x, y| {
            let band = (x / 37 + y / 23 + seed) % 3;
            Rgb([
                (x * 255 / w) as u8,
                (y * 255 / h) as u8,
                [30, 140, 230][band as usize],
            ])
        });
        let mut out = Vec::new();
        DynamicImage::ImageRgb8(img)
            .write_to(&mut Cursor::new(&mut out), format)
            .expect("encodes");
        out
    }

    /// `encoded` with `noise` pixels changed (seeded by `seed`), as a PNG.
    fn noisy(seed: u64, noise: usize) -> Vec<u8> {
        let png = encoded(300, 200, 1, ImageFormat::Png);
        let mut img = image::load_from_memory(&png).expect("decodes").into_rgb8();
        let mut st = seed;
        for _ in 0..noise {
            let r = testkit_like(&mut st);
            let (x, y) = ((r % 300) as u32, ((r >> 16) % 200) as u32);
            img.put_pixel(
                x,
                y,
                Rgb([(r >> 32) as u8, (r >> 40) as u8, (r >> 48) as u8]),
            );
        }
        let mut out = Vec::new();
        DynamicImage::ImageRgb8(img)
            .write_to(&mut Cursor::new(&mut out), ImageFormat::Png)
            .expect("encodes");
        out
    }

    fn testkit_like(state: &mut u64) -> u64 {
        *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = *state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn analysed(text: &str, picture: &[u8]) -> Analysis {
        use base64::Engine as _;
        let b64 = base64::engine::general_purpose::STANDARD.encode(picture);
        let raw = format!(
            "From: a@shop.example\nSubject: Your offer\nMIME-Version: 1.0\n\
             Content-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/plain\n\n\
             {text}\n--B\nContent-Type: image/png\nContent-Transfer-Encoding: base64\n\n\
             {b64}\n--B--\n"
        );
        analyze(raw.as_bytes(), &Envelope::default(), &Config::default())
    }

    #[test]
    fn a_picture_links_short_messages_only_with_the_same_text() {
        let a = analysed("See the picture.", &noisy(1, 40));
        let b = analysed("See the picture.", &noisy(2, 40));
        let other = analysed("Look at this one.", &noisy(2, 40));
        let (fa, fb, fo) = (
            a.fingerprint.expect("parsed"),
            b.fingerprint.expect("parsed"),
            other.fingerprint.expect("parsed"),
        );
        assert!(a.pictured && b.pictured && other.pictured);
        assert_ne!(fa.exact, fb.exact, "each copy its own bytes");
        assert!((fa.simhash ^ fb.simhash).count_ones() <= 3);
        assert!((fa.simhash ^ fo.simhash).count_ones() >= 12);
        // A message long enough to compare by its words is compared by
        // them, whatever it carries.
        let long = analysed(
            &"word after word of a long enough letter ".repeat(20),
            &noisy(1, 40),
        );
        assert!(!long.pictured);
    }

    /// The reading settings the daemon's defaults give are the reading
    /// crate's own defaults.
    #[test]
    fn the_default_configuration_reads_as_the_reader_s_defaults() {
        assert_eq!(read_config(&Config::default()), ReadConfig::default());
    }
}
