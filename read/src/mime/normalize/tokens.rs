//! Token and sentence steps: the recipient's own words and addresses,
//! URLs to their host, digit runs, random-looking tokens, stop words, and
//! sentence boundaries.

use std::collections::HashSet;

use super::super::BodyText;
use super::*;
use crate::config::NormalizeConfig;

/// The recipient's address and name words, lower-cased. Sets, not lists:
/// every word of the body is looked up, and a To header can hold tens of
/// thousands of name words (std's hasher is keyed per process, so they
/// cannot be chosen to collide).
pub(super) struct Personal {
    addresses: HashSet<String>,
    words: HashSet<String>,
    /// A 256-bit filter over the name words' (length, first byte, last
    /// byte): most body words miss it and skip the hash lookup (by
    /// length alone, a quarter of the words of the SpamAssassin easy-ham
    /// set were looked up).
    filter: [u64; 4],
}

impl Personal {
    pub(super) fn new(body: &BodyText, rcpts: &[String], cfg: &NormalizeConfig) -> Personal {
        let mut p = Personal {
            addresses: HashSet::new(),
            words: HashSet::new(),
            filter: [0; 4],
        };
        if !cfg.strip_recipient {
            return p;
        }
        for r in body.recipients.iter().chain(rcpts).take(64) {
            let r = r
                .trim()
                .trim_matches(|c| c == '<' || c == '>')
                .to_lowercase();
            if let Some((local, _)) = r.split_once('@') {
                for w in local.split(|c: char| !c.is_alphanumeric()) {
                    if w.chars().count() >= 3 {
                        p.words.insert(w.to_owned());
                    }
                }
                p.addresses.insert(r);
            } else {
                for w in r.split(|c: char| !c.is_alphanumeric()) {
                    if w.chars().count() >= 2 {
                        p.words.insert(w.to_owned());
                    }
                }
            }
        }
        for w in &p.words {
            let bit = Personal::filter_bit(w);
            if let Some(m) = p.filter.get_mut(bit / 64) {
                *m |= 1 << (bit % 64);
            }
        }
        p
    }

    fn is_address(&self, a: &str) -> bool {
        self.addresses.contains(a)
    }

    fn is_name(&self, w: &str) -> bool {
        let bit = Personal::filter_bit(w);
        let hit = self
            .filter
            .get(bit / 64)
            .is_some_and(|m| m >> (bit % 64) & 1 == 1);
        hit && self.words.contains(w)
    }

    /// The bit of word `w` in `filter` (0..256).
    fn filter_bit(w: &str) -> usize {
        let b = w.as_bytes();
        let (first, last) = (b.first().copied(), b.last().copied());
        let h = (w.len() as u32)
            .wrapping_mul(0x9E37_79B9)
            .wrapping_add(u32::from(first.unwrap_or(0)).wrapping_mul(0x85EB_CA6B))
            .wrapping_add(u32::from(last.unwrap_or(0)).wrapping_mul(0xC2B2_AE35));
        (h >> 24) as usize
    }
}

pub(super) fn end_sentence(out: &mut String, open: &mut bool) {
    if *open {
        out.push('\n');
        *open = false;
    }
}

pub(super) fn push_token(tok: &str, out: &mut Normalized, open: &mut bool) {
    if tok.is_empty() {
        return;
    }
    if *open {
        out.text.push(' ');
    }
    out.text.push_str(tok);
    out.tokens += 1;
    *open = true;
}

/// Handles an ASCII line: the same as `split_whitespace` and
/// [`emit_chunk`] on each chunk, in fewer passes over the bytes.
///
/// A line that holds no `:`, `@` or `www.` (most do not) has no chunk that
/// can be a URL or an address: its words are runs of alphanumeric bytes,
/// found in one loop over the whole line that also counts their digits
/// (whitespace ends a word and no sentence, as a chunk's end does).
/// Cutting such lines into chunks first took as long as the rest of the
/// line's work. Other lines go to [`emit_ascii_chunks`].
pub(super) fn emit_ascii_line(
    line: &str,
    word: &mut String,
    personal: &Personal,
    cfg: &NormalizeConfig,
    out: &mut Normalized,
    open: &mut bool,
) {
    // Built once: `memmem::find` builds a searcher at every call.
    static WWW: std::sync::LazyLock<memchr::memmem::Finder<'static>> =
        std::sync::LazyLock::new(|| memchr::memmem::Finder::new(b"www."));
    let bytes = line.as_bytes();
    let maybe_special = memchr::memchr2(b':', b'@', bytes).is_some();
    if maybe_special || WWW.find(bytes).is_some() {
        emit_ascii_chunks(line, maybe_special, word, personal, cfg, out, open);
    } else if bytes.iter().all(|b| is_space(*b)) {
        end_sentence(&mut out.text, open);
    } else {
        emit_words(line, personal, cfg, out, open);
    }
}

/// [`emit_ascii_line`] chunk by chunk: a chunk that holds no `:` or `@`
/// (none does unless `maybe_special`) and does not start with `www.` is
/// cut into words in one loop, the others go to [`emit_chunk`].
pub(super) fn emit_ascii_chunks(
    line: &str,
    maybe_special: bool,
    word: &mut String,
    personal: &Personal,
    cfg: &NormalizeConfig,
    out: &mut Normalized,
    open: &mut bool,
) {
    let bytes = line.as_bytes();
    let mut any = false;
    for piece in bytes.split(|b| is_space(*b)).filter(|p| !p.is_empty()) {
        any = true;
        // Where the piece starts in the line: address arithmetic, no
        // pointer dereferenced.
        let start = (piece.as_ptr() as usize).wrapping_sub(bytes.as_ptr() as usize);
        let chunk = line.get(start..start + piece.len()).unwrap_or("");
        let special = maybe_special && memchr::memchr2(b':', b'@', piece).is_some();
        if special || may_be_www(chunk) {
            emit_chunk(chunk, word, personal, cfg, out, open);
        } else {
            emit_words(chunk, personal, cfg, out, open);
        }
    }
    if !any {
        end_sentence(&mut out.text, open);
    }
}

/// Does the chunk start with `www.` once the characters [`emit_chunk`]
/// trims are skipped? (The trim at the end cannot reach those four bytes.)
pub(super) fn may_be_www(chunk: &str) -> bool {
    let start = chunk
        .bytes()
        .position(|b| !is_chunk_edge(b))
        .unwrap_or(chunk.len());
    chunk.get(start..).is_some_and(|t| t.starts_with("www."))
}

/// The words of an ASCII chunk that is neither a URL nor an address:
/// runs of alphanumeric bytes, each emitted with its count of digits; `.`,
/// `!`, `?` and `;` end the sentence.
pub(super) fn emit_words(
    chunk: &str,
    personal: &Personal,
    cfg: &NormalizeConfig,
    out: &mut Normalized,
    open: &mut bool,
) {
    let mut start = 0;
    let mut digits = 0;
    for (i, &b) in chunk.as_bytes().iter().enumerate() {
        if b.is_ascii_alphanumeric() {
            digits += usize::from(b.is_ascii_digit());
        } else {
            if i > start {
                let w = chunk.get(start..i).unwrap_or("");
                emit_word(w, digits, personal, cfg, out, open);
            }
            digits = 0;
            if matches!(b, b'.' | b'!' | b'?' | b';') {
                end_sentence(&mut out.text, open);
            }
            start = i + 1;
        }
    }
    let w = chunk.get(start..).unwrap_or("");
    emit_word(w, digits, personal, cfg, out, open);
}

/// Handles one whitespace-separated chunk of a line.
pub(super) fn emit_chunk(
    chunk: &str,
    word: &mut String,
    personal: &Personal,
    cfg: &NormalizeConfig,
    out: &mut Normalized,
    open: &mut bool,
) {
    // The trimmed characters are ASCII, so a byte trim is the same as a
    // char trim and needs no decoding.
    let bytes = chunk.as_bytes();
    let start = bytes.iter().position(|b| !is_chunk_edge(*b));
    let end = bytes.iter().rposition(|b| !is_chunk_edge(*b));
    let trimmed = match (start, end) {
        (Some(a), Some(b)) => chunk.get(a..=b).unwrap_or(""),
        _ => "",
    };
    // Cheap byte tests first, in one pass: most chunks are plain words.
    let (colon, at) = trimmed
        .bytes()
        .fold((false, false), |(c, a), b| (c || b == b':', a || b == b'@'));
    let maybe_url = colon || trimmed.starts_with("www.");
    let maybe_mail = !maybe_url && at;
    if let Some(host) = maybe_url.then(|| url_host(trimmed)).flatten() {
        if cfg.urls_to_host {
            for label in host.split('.').filter(|l| !l.is_empty()) {
                push_token(label, out, open);
            }
            return;
        }
    } else if let Some((local, domain)) = maybe_mail.then(|| trimmed.split_once('@')).flatten() {
        if !local.is_empty() && domain.contains('.') && !domain.contains('@') {
            if personal.is_address(trimmed) {
                return;
            }
            if cfg.urls_to_host {
                for label in domain.split('.').filter(|l| !l.is_empty()) {
                    push_token(label, out, open);
                }
                return;
            }
        }
    }
    if chunk.is_ascii() {
        // Words are runs of alphanumeric bytes, taken as slices of the
        // chunk: no char decoding, no copy, no CJK test.
        emit_words(chunk, personal, cfg, out, open);
        return;
    }
    word.clear();
    for c in chunk.chars() {
        if is_cjk(c) {
            emit_word(word, ascii_digits(word), personal, cfg, out, open);
            word.clear();
            let mut buf = [0u8; 4];
            push_token(c.encode_utf8(&mut buf), out, open);
        } else if c.is_alphanumeric() {
            word.push(c);
        } else {
            emit_word(word, ascii_digits(word), personal, cfg, out, open);
            word.clear();
            if matches!(c, '.' | '!' | '?' | ';' | '。' | '！' | '？') {
                end_sentence(&mut out.text, open);
            }
        }
    }
    emit_word(word, ascii_digits(word), personal, cfg, out, open);
}

/// Characters trimmed from both ends of a chunk before the URL and
/// address tests.
pub(super) fn is_chunk_edge(b: u8) -> bool {
    matches!(
        b,
        b'<' | b'>' | b'(' | b')' | b'[' | b']' | b'{' | b'}' | b'"' | b'\'' | b',' | b';' | b':'
    )
}

/// `char::is_whitespace` for ASCII bytes (vertical tab included, unlike
/// `u8::is_ascii_whitespace`).
pub(super) fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0B | 0x0C | b'\r')
}

/// [`looks_random`] of an ASCII word of 5 to 24 bytes: letters and digits
/// mixed (8 bytes or more), or no digit and no vowel, six consonants in a
/// row or fewer than one vowel in six letters (12 bytes or more). A
/// consonant is any byte that is neither a digit nor a lower-case vowel
/// (a e i o u y): text is folded first.
///
/// Implementation note: the word becomes two bit masks (digits, vowels),
/// built without a branch per byte (vowel or not is as good as random to
/// the branch predictor) and without a chain from byte to byte; a run of
/// six consonants is six consecutive bits. Counting the run byte by byte
/// was a chain of dependent operations on every byte.
pub(super) fn ascii_looks_random(w: &[u8]) -> bool {
    // Bit i set: the letter `a` + i is a vowel.
    const VOWELS: u32 = 1 | 1 << 4 | 1 << 8 | 1 << 14 | 1 << 20 | 1 << 24;
    const MAX: usize = 24;
    let (mut digit_m, mut vowel_m) = (0u32, 0u32);
    for (i, &b) in w.iter().take(MAX).enumerate() {
        let letter = u32::from(b.wrapping_sub(b'a'));
        digit_m |= u32::from(b.is_ascii_digit()) << i;
        vowel_m |= u32::from(letter < 26 && VOWELS >> (letter & 31) & 1 == 1) << i;
    }
    let len = w.len().min(MAX);
    let digits = digit_m.count_ones() as usize;
    if digits > 0 {
        return digits < len && len >= 8;
    }
    let vowels = vowel_m.count_ones() as usize;
    let consonants = !vowel_m & ((1 << len) - 1);
    let run_of_six = consonants
        & consonants >> 1
        & consonants >> 2
        & consonants >> 3
        & consonants >> 4
        & consonants >> 5
        != 0;
    vowels == 0 || run_of_six || (len >= 12 && vowels * 6 < len)
}

/// Number of ASCII digits in `w`.
pub(super) fn ascii_digits(w: &str) -> usize {
    w.bytes().filter(u8::is_ascii_digit).count()
}

/// Emits one word (a run of alphanumeric characters, `digits` of them
/// ASCII digits), unless a token step drops it; digit runs folded.
pub(super) fn emit_word(
    w: &str,
    digits: usize,
    personal: &Personal,
    cfg: &NormalizeConfig,
    out: &mut Normalized,
    open: &mut bool,
) {
    if w.is_empty() {
        return;
    }
    let dropped = (cfg.drop_random_tokens && looks_random(w))
        || (cfg.strip_recipient && personal.is_name(w))
        || (cfg.stop_words && STOP_WORDS.binary_search(&w).is_ok());
    let keep = !dropped;
    if keep {
        if cfg.fold_digits && digits > 0 {
            // A token that is only a number carries nothing that survives
            // personalization (amounts, ids, dates), and the same number can
            // be written as one token or several ("1234", "12-34").
            if digits < w.len() {
                if *open {
                    out.text.push(' ');
                }
                let mut in_digits = false;
                for c in w.chars() {
                    if c.is_ascii_digit() {
                        if !in_digits {
                            out.text.push('#');
                        }
                        in_digits = true;
                    } else {
                        out.text.push(c);
                        in_digits = false;
                    }
                }
                out.tokens += 1;
                *open = true;
            }
        } else {
            push_token(w, out, open);
        }
    }
}

/// The host of an `http(s)://`, `ftp://` or `www.` URL, lower-cased, without
/// user info, port and a leading `www.`.
pub fn url_host(s: &str) -> Option<&str> {
    let rest = if let Some(i) = s.find("://") {
        let scheme = s.get(..i)?;
        if scheme.is_empty() || !scheme.bytes().all(|b| b.is_ascii_alphabetic()) {
            return None;
        }
        s.get(i + 3..)?
    } else if s.starts_with("www.") {
        s
    } else {
        return None;
    };
    let authority = rest.split(['/', '?', '#']).next()?;
    let host = authority.rsplit('@').next()?;
    let host = host.split(':').next()?;
    let host = host.strip_prefix("www.").unwrap_or(host);
    let host = host.trim_end_matches('.');
    if host.is_empty() {
        None
    } else {
        Some(host)
    }
}

pub(super) fn is_cjk(c: char) -> bool {
    matches!(c as u32,
        0x3040..=0x30FF | 0x3400..=0x4DBF | 0x4E00..=0x9FFF | 0xAC00..=0xD7AF | 0xF900..=0xFAFF | 0x20000..=0x2FFFF)
}

/// Hash-buster tokens: long hex or base64-like strings, letter/digit mixes,
/// very long words, and ASCII letter strings no language would write.
pub(super) fn looks_random(w: &str) -> bool {
    if !w.is_ascii() {
        return w.chars().count() >= 25;
    }
    // Decided by length alone, without the stats, for most words.
    match w.len() {
        25.. => true,
        0..5 => false,
        _ => ascii_looks_random(w.as_bytes()),
    }
}

/// English stop words, sorted for binary search.
pub(super) const STOP_WORDS: [&str; 40] = [
    "a", "about", "all", "an", "and", "are", "as", "at", "be", "but", "by", "for", "from", "has",
    "have", "i", "if", "in", "is", "it", "its", "me", "my", "not", "of", "on", "or", "our", "so",
    "that", "the", "this", "to", "was", "we", "will", "with", "you", "your", "yours",
];
