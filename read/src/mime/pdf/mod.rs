//! The text of an attached PDF, read as a body is when the message's own
//! body is too short to be the message (`mime::collect`): a campaign must
//! not hide its text in a PDF under a one-line body.
//!
//! Parsing is lopdf's (hardened for hostile files: nesting and
//! decompression bounds of its own), run where the rest of reading runs (a
//! worker process, the daemon's `worker`), with bounds set here first: the file's
//! size, the number of streams it may hold (each may decompress to at most
//! [`MAX_STREAM_BYTES`], so together they bound the work), the pages read
//! and the text kept. A file past a bound, an encrypted one, one lopdf
//! cannot read (or panics on) gives no text, and the attachment is hashed
//! as any other.

mod pictures;

use lopdf::{Document, LoadOptions};

use self::pictures::pictures;

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

/// What reading the PDFs of one message may parse, in bytes of page
/// content and font maps (each counted as often as the parser reads it):
/// the work budget of PDF text. lopdf builds an object per token, at about
/// 0.3 s of CPU a MiB of the cheapest tokens (`[[]]`) on this project's
/// machines, so this bounds a message's PDF reading to about 0.15 s
/// whatever its files hold; the text of ordinary documents' first pages
/// takes a few KiB to tens of KiB.
pub const WORK_BYTES: usize = 512 << 10;

/// What reading one PDF gave: its text, if any, and whether the work
/// budget stopped it before its last page; when it has no text (a scanned
/// page, a page that is one picture of text), the pictures its first
/// pages draw, as picture files for the picture path (`mime::picture`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PdfText {
    pub text: Option<String>,
    pub cut: bool,
    pub pictures: Vec<Vec<u8>>,
}

/// Most pictures taken from a PDF without text (the picture path's own
/// bounds then apply: pixels, OCR, per message).
pub const MAX_PICTURES: usize = 4;

/// The text of the first pages of the PDF in `bytes`, at most `limit`
/// bytes of it, within `budget` (bytes of content and font maps the
/// message may still parse, [`WORK_BYTES`], drawn down here): pages whose
/// content was read for an earlier page (a content stream shared by every
/// page) are read once, and reading stops at the first page the budget
/// cannot pay for. No text when the file has none or is past a bound (see
/// the module documentation).
pub fn text(bytes: &[u8], limit: usize, budget: &mut usize) -> PdfText {
    if !is_pdf(bytes) || bytes.len() > MAX_BYTES {
        return PdfText::default();
    }
    // (`endstream` holds `stream` too: not counted.)
    let streams = memchr::memmem::find_iter(bytes, b"stream")
        .filter(|&i| bytes.get(i.saturating_sub(3)..i) != Some(&b"end"[..]))
        .take(MAX_STREAMS + 1)
        .count();
    if streams > MAX_STREAMS {
        return PdfText::default();
    }
    // A panic in the parser must not cost the message its verdict: the
    // file is then hashed as any attachment.
    let mut left = *budget;
    let read = std::panic::catch_unwind(move || {
        let options = LoadOptions {
            max_decompressed_size: Some(MAX_STREAM_BYTES),
            ..LoadOptions::default()
        };
        let doc = Document::load_mem_with_options(bytes, options).ok()?;
        if doc.is_encrypted() {
            return None;
        }
        let (pages, cut) = pages_within(&doc, &mut left);
        let text = if pages.is_empty() {
            None
        } else {
            doc.extract_text_with_limit(&pages, MAX_STREAM_BYTES).ok()
        };
        let blank = text
            .as_deref()
            .is_none_or(|t| t.split_whitespace().next().is_none());
        let pictures = if blank { pictures(&doc) } else { Vec::new() };
        Some((text, cut, left, pictures))
    });
    let Ok(Some((text, cut, left, pictures))) = read else {
        return PdfText::default();
    };
    *budget = left;
    let text = text.map(|mut t| {
        if t.len() > limit {
            let mut end = limit;
            while !t.is_char_boundary(end) {
                end -= 1;
            }
            t.truncate(end);
        }
        t
    });
    PdfText {
        text: text.filter(|t| t.split_whitespace().next().is_some()),
        cut,
        pictures,
    }
}

/// The first [`MAX_PAGES`] pages the budget pays for, by number, and
/// whether it stopped before the last. A page costs the decompressed size
/// of its content streams that no earlier page read (the parser reads a
/// page's content once for that page), and of its fonts' `ToUnicode`
/// maps (which it reads again for every page). A page whose content was
/// all read before is skipped: it shows what that page showed.
fn pages_within(doc: &Document, budget: &mut usize) -> (Vec<u32>, bool) {
    let mut seen: std::collections::HashSet<lopdf::ObjectId> = std::collections::HashSet::new();
    let mut out = Vec::new();
    for (number, id) in doc.get_pages().into_iter().take(MAX_PAGES) {
        let contents = doc.get_page_contents(id);
        if !contents.is_empty() && contents.iter().all(|c| seen.contains(c)) {
            continue;
        }
        let mut cost = 0usize;
        for c in &contents {
            if seen.insert(*c) {
                cost = cost.saturating_add(stream_size(doc, *c));
            }
        }
        if let Ok(fonts) = doc.get_page_fonts(id) {
            for font in fonts.values() {
                if let Ok(lopdf::Object::Reference(r)) = font.get(b"ToUnicode") {
                    cost = cost.saturating_add(stream_size(doc, *r));
                }
            }
        }
        if cost > *budget {
            return (out, true);
        }
        *budget -= cost;
        out.push(number);
    }
    (out, false)
}

/// Decompressed bytes of the stream object `id` (at most the bound a
/// stream may decompress to; one that inflates past it costs the bound).
fn stream_size(doc: &Document, id: lopdf::ObjectId) -> usize {
    match doc.get_object(id) {
        Ok(lopdf::Object::Stream(s)) => s
            .decompressed_content_with_limit(MAX_STREAM_BYTES)
            .map_or(MAX_STREAM_BYTES, |c| c.len()),
        _ => 0,
    }
}

/// Samples of `data` written with PNG's predictors: rows of `row` bytes,
/// each after its filter byte (none, sub, up, average, Paeth), `bpp`
/// bytes a pixel. `None` when a row is short or its filter unknown.
fn unpredicted(data: &[u8], row: usize, bpp: usize) -> Option<Vec<u8>> {
    let mut out: Vec<u8> = Vec::with_capacity(data.len());
    let mut prev = vec![0u8; row];
    for line in data.chunks(row + 1) {
        let (&filter, line) = line.split_first()?;
        if line.len() != row {
            return None;
        }
        let mut cur = vec![0u8; row];
        for (x, &v) in line.iter().enumerate() {
            let a = x
                .checked_sub(bpp)
                .and_then(|i| cur.get(i))
                .copied()
                .unwrap_or(0);
            let b = prev.get(x).copied().unwrap_or(0);
            let c = x
                .checked_sub(bpp)
                .and_then(|i| prev.get(i))
                .copied()
                .unwrap_or(0);
            let add = match filter {
                0 => 0,
                1 => a,
                2 => b,
                3 => ((u16::from(a) + u16::from(b)) / 2) as u8,
                4 => {
                    let p = i16::from(a) + i16::from(b) - i16::from(c);
                    let (pa, pb, pc) = (
                        (p - i16::from(a)).abs(),
                        (p - i16::from(b)).abs(),
                        (p - i16::from(c)).abs(),
                    );
                    if pa <= pb && pa <= pc {
                        a
                    } else if pb <= pc {
                        b
                    } else {
                        c
                    }
                }
                _ => return None,
            };
            if let Some(slot) = cur.get_mut(x) {
                *slot = v.wrapping_add(add);
            }
        }
        out.extend_from_slice(&cur);
        prev = cur;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    /// PNG's predictors undone: sub, up, average and Paeth rows; a short
    /// row or an unknown filter gives nothing.
    #[test]
    fn png_predictors_are_undone() {
        let data = [1, 10, 5, 5, 2, 1, 1, 1, 3, 0, 2, 2, 4, 1, 0, 0];
        assert_eq!(
            unpredicted(&data, 3, 1),
            Some(vec![10, 15, 20, 11, 16, 21, 5, 12, 18, 6, 12, 18])
        );
        assert_eq!(unpredicted(&[1, 2], 3, 1), None);
        assert_eq!(unpredicted(&[9, 1, 2, 3], 3, 1), None);
    }
    use super::*;
    use testkit::pdf;

    #[test]
    fn the_text_of_a_pdf_is_read() {
        let t = text(
            &pdf(&["Verify your account", "at secure-bank.example"], ""),
            1 << 20,
            &mut WORK_BYTES.clone(),
        )
        .text
        .expect("text");
        assert!(t.contains("Verify your account"), "{t:?}");
        assert!(t.contains("secure-bank.example"), "{t:?}");
        // Cut at the limit.
        let t = text(
            &pdf(&["Verify your account"], ""),
            6,
            &mut WORK_BYTES.clone(),
        )
        .text
        .expect("text");
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
        let crate::mime::MimeOutcome::Parsed(body) =
            crate::mime::extract(raw.as_bytes(), &crate::config::ScanConfig::default())
        else {
            panic!("parsed");
        };
        assert!(body.text.contains("document alpha") && body.text.contains("document bravo"));
        assert!(!body.text.contains("charlie"), "{}", body.text);
        assert_eq!(body.attachments.len(), 1, "the third is hashed");
    }

    /// The text of `bytes` within a fresh budget.
    fn read(bytes: &[u8], limit: usize) -> Option<String> {
        text(bytes, limit, &mut WORK_BYTES.clone()).text
    }

    #[test]
    fn hostile_files_give_no_text_or_their_text_bounded() {
        // Not a PDF, garbage after the magic, truncated, too large.
        assert_eq!(read(b"hello", 100), None);
        assert_eq!(read(b"%PDF-1.4\n garbage", 100), None);
        let whole = pdf(&["Verify your account"], "");
        assert_eq!(read(&whole[..whole.len() / 3], 100), None);
        let mut big = whole.clone();
        big.resize(MAX_BYTES + 1, b' ');
        assert_eq!(read(&big, 100), None);
        // Nesting 100,000 deep in a dictionary: read without recursing
        // that deep (the test's thread has a small stack).
        let deep = format!("/X {}{} ", "[".repeat(100_000), "]".repeat(100_000));
        let _ = read(&pdf(&["Verify your account"], &deep), 100);
        let deep = format!("/X {}{} ", "<< /A ".repeat(50_000), ">>".repeat(50_000));
        let _ = read(&pdf(&["Verify your account"], &deep), 100);
        // More streams than the bound.
        let many = "stream\nx\nendstream\n".repeat(MAX_STREAMS + 1);
        let mut f = whole.clone();
        f.extend_from_slice(many.as_bytes());
        assert_eq!(read(&f, 100), None);
        // A stream that inflates past its bound (a page of 60,000 lines).
        let lines: Vec<String> = (0..60_000).map(|i| format!("word{i}")).collect();
        let lines: Vec<&str> = lines.iter().map(String::as_str).collect();
        let huge = pdf(&lines, "");
        assert!(read(&huge, usize::MAX).is_none_or(|t| t.len() <= MAX_STREAM_BYTES));
    }

    /// The file: 16 pages that share one content stream of 512 KiB
    /// of `[[]]`. Each page once read it again (2.2 s for two such files);
    /// now the stream is paid for once, and the second file finds the
    /// budget spent and stops, saying so. What a page shows is read once
    /// however many pages show it.
    #[test]
    fn pages_sharing_a_stream_are_read_once_within_the_budget() {
        let junk = "[[]]".repeat(128 * 1024);
        let file = testkit::pdf_shared_pages(16, junk.as_bytes());
        assert!(file.len() < 8 * 1024, "{} bytes", file.len());
        let mut budget = WORK_BYTES;
        let first = text(&file, 1 << 20, &mut budget);
        assert!(!first.cut, "one read of the stream fits");
        assert_eq!(budget, WORK_BYTES - junk.len());
        let second = text(&file, 1 << 20, &mut budget);
        assert!(second.cut && second.text.is_none(), "{second:?}");
        assert_eq!(budget, WORK_BYTES - junk.len());
        // Real text on shared pages: read once, not sixteen times.
        let shown = b"BT /F1 11 Tf 50 780 Td (Verify your account) Tj ET\n";
        let file = testkit::pdf_shared_pages(16, shown);
        let t = read(&file, 1 << 20).expect("text");
        assert_eq!(t.matches("Verify your account").count(), 1, "{t:?}");
    }
}
