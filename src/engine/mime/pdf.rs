//! The text of an attached PDF, read as a body is when the message's own
//! body is too short to be the message (`mime::collect`): a campaign must
//! not hide its text in a PDF under a one-line body.
//!
//! Parsing is lopdf's (hardened for hostile files: nesting and
//! decompression bounds of its own), run where the rest of reading runs (a
//! worker process, `crate::worker`), with bounds set here first: the file's
//! size, the number of streams it may hold (each may decompress to at most
//! [`MAX_STREAM_BYTES`], so together they bound the work), the pages read
//! and the text kept. A file past a bound, an encrypted one, one lopdf
//! cannot read (or panics on) gives no text, and the attachment is hashed
//! as any other.

use lopdf::{Document, LoadOptions};

/// Largest file read.
pub const MAX_BYTES: usize = 2 << 20;
/// Most streams a file read may hold (counted by their `stream` keyword,
/// which a file cannot write any other way).
pub const MAX_STREAMS: usize = 128;
/// Most bytes one stream may decompress to.
pub const MAX_STREAM_BYTES: usize = 512 << 10;
/// Pages read, the first ones.
pub const MAX_PAGES: usize = 16;

/// Whether `bytes` are a PDF file: `%PDF-` within the first 1,024 bytes,
/// where readers look for it.
pub fn is_pdf(bytes: &[u8]) -> bool {
    memchr::memmem::find(bytes.get(..1024).unwrap_or(bytes), b"%PDF-").is_some()
}

/// The text of the first pages of the PDF in `bytes`, at most `limit`
/// bytes of it; `None` when it has none or is past a bound (see the
/// module documentation).
pub fn text(bytes: &[u8], limit: usize) -> Option<String> {
    if !is_pdf(bytes) || bytes.len() > MAX_BYTES {
        return None;
    }
    // (`endstream` holds `stream` too: not counted.)
    let streams = memchr::memmem::find_iter(bytes, b"stream")
        .filter(|&i| bytes.get(i.saturating_sub(3)..i) != Some(&b"end"[..]))
        .take(MAX_STREAMS + 1)
        .count();
    if streams > MAX_STREAMS {
        return None;
    }
    // A panic in the parser must not cost the message its verdict: the
    // file is then hashed as any attachment.
    let read = std::panic::catch_unwind(|| {
        let options = LoadOptions {
            max_decompressed_size: Some(MAX_STREAM_BYTES),
            ..LoadOptions::default()
        };
        let doc = Document::load_mem_with_options(bytes, options).ok()?;
        if doc.is_encrypted() {
            return None;
        }
        let pages: Vec<u32> = doc.get_pages().keys().copied().take(MAX_PAGES).collect();
        doc.extract_text_with_limit(&pages, MAX_STREAM_BYTES).ok()
    });
    let mut text = read.ok().flatten()?;
    if text.len() > limit {
        let mut end = limit;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text.split_whitespace().next().is_some().then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use testkit::pdf;

    #[test]
    fn the_text_of_a_pdf_is_read() {
        let t = text(
            &pdf(&["Verify your account", "at secure-bank.example"], ""),
            1 << 20,
        )
        .expect("text");
        assert!(t.contains("Verify your account"), "{t:?}");
        assert!(t.contains("secure-bank.example"), "{t:?}");
        // Cut at the limit.
        let t = text(&pdf(&["Verify your account"], ""), 6).expect("text");
        assert!(t.len() <= 6);
    }

    /// Three PDFs under a short body: the first two are read, the third
    /// is hashed (`mime::MAX_PDFS`).
    #[test]
    fn a_message_reads_at_most_two_pdfs() {
        use base64::Engine as _;
        let mut raw = String::from(
            "From: a@shop.example\nSubject: docs\nMIME-Version: 1.0\n\
             Content-Type: multipart/mixed; boundary=B\n\n--B\nContent-Type: text/plain\n\nSee.\n",
        );
        for word in ["alpha", "bravo", "charlie"] {
            let b64 = base64::engine::general_purpose::STANDARD
                .encode(pdf(&[&format!("document {word}")], ""));
            raw.push_str(&format!(
                "--B\nContent-Type: application/pdf\nContent-Transfer-Encoding: base64\n\n{b64}\n"
            ));
        }
        raw.push_str("--B--\n");
        let crate::engine::mime::MimeOutcome::Parsed(body) =
            crate::engine::mime::extract(raw.as_bytes(), &crate::config::ScanConfig::default())
        else {
            panic!("parsed");
        };
        assert!(body.text.contains("document alpha") && body.text.contains("document bravo"));
        assert!(!body.text.contains("charlie"), "{}", body.text);
        assert_eq!(body.attachments.len(), 1, "the third is hashed");
    }

    #[test]
    fn hostile_files_give_no_text_or_their_text_bounded() {
        // Not a PDF, garbage after the magic, truncated, too large.
        assert_eq!(text(b"hello", 100), None);
        assert_eq!(text(b"%PDF-1.4\n garbage", 100), None);
        let whole = pdf(&["Verify your account"], "");
        assert_eq!(text(&whole[..whole.len() / 3], 100), None);
        let mut big = whole.clone();
        big.resize(MAX_BYTES + 1, b' ');
        assert_eq!(text(&big, 100), None);
        // Nesting 100,000 deep in a dictionary: read without recursing
        // that deep (the test's thread has a small stack).
        let deep = format!("/X {}{} ", "[".repeat(100_000), "]".repeat(100_000));
        let _ = text(&pdf(&["Verify your account"], &deep), 100);
        let deep = format!("/X {}{} ", "<< /A ".repeat(50_000), ">>".repeat(50_000));
        let _ = text(&pdf(&["Verify your account"], &deep), 100);
        // More streams than the bound.
        let many = "stream\nx\nendstream\n".repeat(MAX_STREAMS + 1);
        let mut f = whole.clone();
        f.extend_from_slice(many.as_bytes());
        assert_eq!(text(&f, 100), None);
        // A stream that inflates past its bound (a page of 60,000 lines).
        let lines: Vec<String> = (0..60_000).map(|i| format!("word{i}")).collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let huge = pdf(&lines, "");
        assert!(text(&huge, usize::MAX).is_none_or(|t| t.len() <= MAX_STREAM_BYTES));
    }
}
