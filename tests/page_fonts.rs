//! Text set in a page's own fonts (issue 65: letters drawn by the page's
//! font are read as drawn, `bulkwatch_read::mime::drawn`): the fonts are
//! found in the forms a sender writes them, drawn within bounds, survive
//! hostile bytes, and (with Tesseract) the text reads as the font draws it,
//! in both directions: a font cipher reads as its plain text, and a page in
//! an honest font of its own reads as it did without one.

mod common;

use bulkwatch_read::mime::drawn;
use testkit::fonts::{cipher_font, cipher_key, encode, woff, woff2};
use testkit::{base64, Rng};

const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

fn dejavu() -> Vec<u8> {
    std::fs::read(FONT).expect("the DejaVu font")
}

fn page(family: &str, mime: &str, font: &[u8], body: &str) -> String {
    format!(
        "<html><head><style>@font-face {{ font-family: \"{family}\"; \
         src: url('data:{mime};base64,{}') format('woff'); }}\n\
         .x {{ color: #222 }}</style></head><body style=\"font-family: {family}, serif\">{body}</body></html>",
        base64(font)
    )
}

fn message(html: &str, n: usize) -> Vec<u8> {
    format!(
        "From: News <news@shop.example>\r\nTo: reader{n}@example.org\r\nSubject: Our week\r\n\
         Message-ID: <f{n}@shop.example>\r\nMIME-Version: 1.0\r\n\
         Content-Type: text/html; charset=utf-8\r\n\r\n{html}\r\n"
    )
    .into_bytes()
}

#[cfg_attr(
    not(bulkwatch_dejavu),
    ignore = "needs a font (apt-get install fonts-dejavu-core)"
)]
#[test]
fn page_fonts_are_found_as_truetype_and_woff() {
    let key = cipher_key(7);
    let sans = cipher_font(&dejavu(), &key);
    // (WOFF2 within its bound: a smaller font.)
    let serif = cipher_font(
        &std::fs::read(FONT.replace("DejaVuSans.ttf", "DejaVuSerif.ttf")).unwrap(),
        &key,
    );
    for (mime, bytes, plain) in [
        ("font/ttf", sans.clone(), &sans),
        ("application/font-woff", woff(&sans), &sans),
        ("font/woff", woff(&serif), &serif),
        ("font/woff2", woff2(&serif), &serif),
    ] {
        let faces = drawn::faces(&page("Brand Sans", mime, &bytes, "<p>x</p>"));
        assert_eq!(faces.len(), 1, "{mime}");
        assert_eq!(faces[0].family, "brandsans");
        // The tables come back as the TrueType file's: the same glyphs.
        use ab_glyph::Font;
        let got = ab_glyph::FontRef::try_from_slice(&faces[0].bytes).unwrap();
        let want = ab_glyph::FontRef::try_from_slice(plain).unwrap();
        for (written, _) in &key {
            assert_eq!(got.glyph_id(*written), want.glyph_id(*written), "{mime}");
        }
    }
    // A WOFF2 font past its bound is not read.
    let big = woff2(&sans);
    assert!(big.len() > drawn::MAX_WOFF2_BYTES);
    assert!(drawn::faces(&page("b", "font/woff2", &big, "")).is_empty());
    // Five fonts: four are read.
    let five: String = (0..5)
        .map(|i| {
            format!(
                "@font-face{{font-family:f{i};src:url(data:font/ttf;base64,{})}}",
                base64(&dejavu())
            )
        })
        .collect();
    assert_eq!(
        drawn::faces(&format!("<style>{five}</style>")).len(),
        drawn::MAX_FONTS
    );
}

#[cfg_attr(
    not(bulkwatch_dejavu),
    ignore = "needs a font (apt-get install fonts-dejavu-core)"
)]
#[test]
fn a_drawing_is_bounded() {
    let bytes = dejavu();
    let font = ab_glyph::FontRef::try_from_slice(&bytes).unwrap();
    let mut curves = drawn::MAX_CURVES;
    let img = drawn::draw(&font, "Hello world", &mut curves).expect("drawn");
    assert!(img.pixels().any(|p| p.0[0] < 64), "no ink");
    assert!(curves < drawn::MAX_CURVES);
    // A long text: as many rows as the bound allows, the width fixed.
    let long = "lorem ipsum dolor sit amet ".repeat(2000);
    let mut curves = drawn::MAX_CURVES;
    let img = drawn::draw(&font, &long, &mut curves).expect("drawn");
    assert!(
        img.height() <= drawn::MAX_LINES * 42 + 32,
        "{}",
        img.height()
    );
    assert_eq!(img.width(), 1200);
    // A spent curve budget draws nothing more.
    let mut none = 0;
    assert!(drawn::draw(&font, "Hello", &mut none).is_none());
    // One word longer than a row is cut into rows; a text of line breaks
    // alone draws nothing.
    let mut curves = drawn::MAX_CURVES;
    assert!(drawn::draw(&font, &"W".repeat(500), &mut curves).is_some());
    assert!(drawn::draw(&font, &"\n".repeat(100_000), &mut curves).is_none());
}

/// A sender's font is hostile bytes: cut, flipped and stretched fonts are
/// refused or drawn within the bounds, never a panic.
#[cfg_attr(
    not(bulkwatch_dejavu),
    ignore = "needs a font (apt-get install fonts-dejavu-core)"
)]
#[test]
fn hostile_fonts_are_refused_or_drawn_within_bounds() {
    let font = dejavu();
    let cipher = cipher_font(&font, &cipher_key(3));
    let wrapped = woff(&cipher);
    let mut rng = Rng::new(65);
    let text = "The quick brown fox jumps over the lazy dog 0123456789";
    for round in 0..120 {
        let base = if round % 2 == 0 { &cipher } else { &wrapped };
        let mut b = base.clone();
        match round % 3 {
            0 => b.truncate(rng.below(b.len())),
            1 => {
                for _ in 0..rng.range(1, 400) {
                    let i = rng.below(b.len());
                    b[i] = rng.next_u64() as u8;
                }
            }
            _ => {
                // The table directory's offsets and lengths scrambled.
                for _ in 0..rng.range(1, 20) {
                    let i = 12 + rng.below(16 * 20);
                    if i < b.len() {
                        b[i] = 0xFF;
                    }
                }
            }
        }
        if let Some(sfnt) = drawn::font_bytes(b) {
            if let Ok(f) = ab_glyph::FontRef::try_from_slice(&sfnt) {
                let mut curves = drawn::MAX_CURVES;
                if let Some(img) = drawn::draw(&f, text, &mut curves) {
                    assert!(u64::from(img.width()) * u64::from(img.height()) <= 1200 * 2000);
                }
            }
        }
    }
    // A font larger than the bound is not read.
    let mut big = font.clone();
    big.resize(drawn::MAX_FONT_BYTES + 1, 0);
    assert!(drawn::font_bytes(big).is_none());
}

/// What the reader makes of `raw` (with OCR where Tesseract is installed).
fn text_of(raw: &[u8]) -> String {
    static OCR: std::sync::Once = std::sync::Once::new();
    let cfg = common::config();
    OCR.call_once(|| bulkwatch::worker::provide_ocr_here(&cfg));
    let rc = bulkwatch::engine::read_config(&cfg);
    let reading = bulkwatch::engine::read(raw, &[], &rc);
    reading.normalized.text
}

const LETTER: [&str; 3] = [
    "Dear customer,",
    "Your mailbox storage is almost full. Verify your account within two days \
     or incoming messages will be returned to their senders.",
    "Thank you for your understanding.",
];

/// The letter's paragraphs, each written by `f`.
fn letter(f: impl Fn(&str) -> String) -> String {
    LETTER.iter().map(|p| format!("<p>{}</p>", f(p))).collect()
}

/// Both directions: the cipher reads as its plain text (it read as
/// nonsense before), and a page in an honest font of its own reads as it
/// does without one.
#[cfg_attr(
    not(all(bulkwatch_tesseract, bulkwatch_dejavu)),
    ignore = "needs Tesseract and a font (apt-get install libtesseract5 tesseract-ocr-eng fonts-dejavu-core)"
)]
#[test]
fn text_in_a_page_font_reads_as_drawn() {
    let font = dejavu();
    let plain_page = letter(str::to_owned);
    let plain = text_of(&message(
        &format!("<html><body>{plain_page}</body></html>"),
        1,
    ));
    assert!(plain.contains("verify your account"), "{plain}");
    let key = cipher_key(11);
    let written = letter(|p| encode(p, &key));
    assert!(!written.contains("account"));
    let ciphered = message(
        &page("Mail Sans", "font/ttf", &cipher_font(&font, &key), &written),
        2,
    );
    let read = text_of(&ciphered);
    assert!(
        read.contains("verify your account within two days"),
        "{read}"
    );
    let honest = message(&page("Mail Sans", "font/ttf", &font, &plain_page), 3);
    assert_eq!(words(&text_of(&honest)), words(&plain));
    // A remote font of the page is not fetched: its text reads as written.
    let remote = message(
        &format!(
            "<html><head><style>@font-face{{font-family:w;src:url(https://fonts.example/w.woff2)}}</style></head>\
             <body style=\"font-family:w\">{plain_page}</body></html>"
        ),
        4,
    );
    assert_eq!(words(&text_of(&remote)), words(&plain));
}

fn words(s: &str) -> Vec<&str> {
    s.split_whitespace().collect()
}
