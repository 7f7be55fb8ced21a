//! The slowest messages for each reader, searched for (issue 51: "find the
//! worst inputs by searching for them, with time as the objective"). Each
//! reader has a generator of hostile mail shaped by a few numbers (a
//! genome: pages that share a stream, tokens of a content stream, font
//! maps; nesting, attributes and style rules of HTML; sides and count of
//! pictures; parts and nesting of MIME; archives, Office XML, SVG, RTF,
//! calendars and smuggled pages; pictures tiled with QR finder patterns;
//! pictures of glyph-like ink for Tesseract; encrypted archives under
//! many stated passwords, SVG of many positioned runs in nested translated
//! groups, PDFs of many pictures and no text);
//! the search times
//! `bulkwatch::engine::read` (what a worker runs) on random genomes, then
//! climbs from the slowest by doubling, halving and redrawing one number
//! at a time, keeping what is slower, within a time budget per reader.
//! Every message is at most `scan.max_parse_bytes` (8 MiB) and would be
//! accepted by Postfix's default `message_size_limit` (10 MB).
//!
//! Prints, per reader, the slowest reading found (the least of three
//! timings, in-process CPU of one core) and writes that message to
//! DIR/slowest-READER.eml, to be read again by any build (`bulkwatch scan
//! --offline FILE`, or an older build's `scan FILE`).
//!
//!   cargo run --release --example slowest -- DIR [SECONDS_PER_READER [READER...]]

use std::fmt::Write as _;
use std::io::Write as _;
use std::time::{Duration, Instant};

use base64::Engine as _;
use bulkwatch::engine::{read, ReadConfig};

/// SplitMix64, as the project's generators use.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A reader's generator: each gene's range, and the message of a genome.
struct Reader {
    name: &'static str,
    genes: &'static [(&'static str, u64, u64)],
    make: fn(&[u64]) -> Vec<u8>,
}

const MAX_MESSAGE: usize = 8 << 20;

fn b64(bytes: &[u8]) -> String {
    let s = base64::engine::general_purpose::STANDARD.encode(bytes);
    let mut out = String::with_capacity(s.len() + s.len() / 76 + 2);
    for chunk in s.as_bytes().chunks(76) {
        out.push_str(std::str::from_utf8(chunk).unwrap_or(""));
        out.push_str("\r\n");
    }
    out
}

/// A message with a short body and `files` attached.
fn with_attachments(files: &[(&str, Vec<u8>)]) -> Vec<u8> {
    let mut m = String::from(
        "From: a@sender.example\r\nTo: b@example.net\r\nSubject: see attached\r\n\
         MIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=BB\r\n\r\n\
         --BB\r\nContent-Type: text/plain\r\n\r\nPlease see the attached file.\r\n",
    );
    for (ctype, bytes) in files {
        let _ = write!(
            m,
            "--BB\r\nContent-Type: {ctype}\r\nContent-Transfer-Encoding: base64\r\n\r\n{}",
            b64(bytes)
        );
    }
    m.push_str("--BB--\r\n");
    m.into_bytes()
}

fn pdf(g: &[u64]) -> Vec<u8> {
    let (pages, shared, kind, kib, fonts, map_kib, files) =
        (g[0], g[1], g[2], g[3], g[4], g[5], g[6]);
    let token: &[u8] = match kind {
        0 => b"[[]]",
        1 => b"q Q ",
        2 => b"(x) Tj ",
        3 => b"1 0 0 1 0 0 cm ",
        4 => b"<< /A [1 2] >> ",
        _ => b"BT /F1 1 Tf ET ",
    };
    let content: Vec<u8> = token.repeat((kib as usize * 1024) / token.len().max(1));
    let map = format!(
        "/CIDInit /ProcSet findresource begin 12 dict begin begincmap\n{}endcmap\n",
        "1 beginbfchar <01> <0041> endbfchar\n".repeat((map_kib as usize * 1024) / 36)
    );
    let mut objects: Vec<Vec<u8>> = Vec::new();
    let page_base = 4 + fonts as usize * 2;
    let kids: Vec<String> = (0..pages as usize)
        .map(|i| format!("{} 0 R", page_base + i * 2))
        .collect();
    objects.push(b"<< /Type /Catalog /Pages 2 0 R >>".to_vec());
    objects.push(
        format!(
            "<< /Type /Pages /Kids [{}] /Count {pages} >>",
            kids.join(" ")
        )
        .into_bytes(),
    );
    objects.push(compressed_stream(&content));
    let mut font_refs = String::new();
    for f in 0..fonts as usize {
        let font = 4 + f * 2;
        let _ = write!(font_refs, "/F{f} {font} 0 R ");
        objects.push(
            format!(
                "<< /Type /Font /Subtype /Type1 /BaseFont /Helvetica /ToUnicode {} 0 R >>",
                font + 1
            )
            .into_bytes(),
        );
        objects.push(compressed_stream(map.as_bytes()));
    }
    for p in 0..pages as usize {
        let contents = if shared == 1 || p == 0 {
            3
        } else {
            page_base + p * 2 + 1
        };
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 612 792] /Contents {contents} 0 R \
                 /Resources << /Font << {font_refs}>> >> >>"
            )
            .into_bytes(),
        );
        objects.push(compressed_stream(&content));
    }
    let file = testkit::pdf_file(&objects);
    let files: Vec<(&str, Vec<u8>)> = (0..files)
        .map(|_| ("application/pdf", file.clone()))
        .collect();
    with_attachments(&files)
}

fn compressed_stream(content: &[u8]) -> Vec<u8> {
    let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
    let _ = z.write_all(content);
    let packed = z.finish().unwrap_or_default();
    let mut o = format!(
        "<< /Length {} /Filter /FlateDecode >>\nstream\n",
        packed.len()
    )
    .into_bytes();
    o.extend_from_slice(&packed);
    o.extend_from_slice(b"\nendstream");
    o
}

fn html(g: &[u64]) -> Vec<u8> {
    let (depth, attrs, repeat, rules, entities, inline) = (g[0], g[1], g[2], g[3], g[4], g[5]);
    let (shape, classes) = (g[6], g[7]);
    let mut h = String::from("<html><head><style>");
    let list = |r: u64| -> String {
        (0..7)
            .map(|j| format!(".c{}", (r + j) % 16))
            .collect::<Vec<_>>()
            .join(",")
    };
    for r in 0..rules {
        // The selector reader's costly shapes: long chains of siblings,
        // heavy `:not()`/`:is()` compounds on keys every element has,
        // selectors that look ahead (the page read twice) and `:has()`.
        let _ = match shape {
            0 => writeln!(
                h,
                ".c{r} p span:not(.x{r}) > b ~ i {{ display: none; color: red }}"
            ),
            1 => writeln!(h, "* b:not({l}):is({l}) {{ display: none }}", l = list(r)),
            2 => writeln!(
                h,
                "b:nth-last-child(2n+{r}) ~ b:has(+ b.c{m}) b:last-of-type {{ display: none }}",
                m = r % 16
            ),
            _ => writeln!(
                h,
                ".c{m}:not({l}) ~ b:is({l}) b:nth-child(2n+{r}) + b:empty {{ display: none }}",
                m = r % 16,
                l = list(r)
            ),
        };
    }
    h.push_str("</style></head><body>");
    for _ in 0..depth {
        h.push_str("<div class=c1><span>");
    }
    let mut tag = String::from("<b class=\"");
    for c in 0..classes {
        let _ = write!(tag, "c{c} ");
    }
    tag.push_str("\" ");
    for a in 0..attrs {
        let _ = write!(tag, "a{a}=\"x\" ");
    }
    tag.push_str(">word</b>");
    for i in 0..repeat {
        h.push_str(&tag);
        for _ in 0..entities {
            h.push_str("&amp;&#x41;&nbsp;");
        }
        for _ in 0..inline {
            h.push_str("<span>w</span>");
        }
        if i % 50 == 0 {
            h.push_str("<p>Text of the offer here.</p>");
        }
        if h.len() > MAX_MESSAGE / 2 {
            break;
        }
    }
    h.push_str("</body></html>");
    let mut m = String::from(
        "From: a@sender.example\r\nTo: b@example.net\r\nSubject: page\r\nMIME-Version: 1.0\r\n\
         Content-Type: text/html\r\n\r\n",
    );
    m.push_str(&h);
    let mut bytes = m.into_bytes();
    bytes.truncate(MAX_MESSAGE);
    bytes
}

fn picture(g: &[u64]) -> Vec<u8> {
    let (side, aspect, format, count) = (g[0], g[1], g[2], g[3]);
    let (w, h) = (side as u32, ((side * aspect) / 8).max(16) as u32);
    let img = image::GrayImage::from_fn(w, h, |x, y| image::Luma([((x * 7 + y * 13) % 251) as u8]));
    let (fmt, ctype) = match format {
        0 => (image::ImageFormat::Png, "image/png"),
        1 => (image::ImageFormat::Gif, "image/gif"),
        _ => (image::ImageFormat::Jpeg, "image/jpeg"),
    };
    pictures_message(img, fmt, ctype, count)
}

/// A message of `count` copies of `img`, encoded as `fmt`.
fn pictures_message(
    img: image::GrayImage,
    fmt: image::ImageFormat,
    ctype: &str,
    count: u64,
) -> Vec<u8> {
    let mut bytes = Vec::new();
    let _ =
        image::DynamicImage::ImageLuma8(img).write_to(&mut std::io::Cursor::new(&mut bytes), fmt);
    let files: Vec<(&str, Vec<u8>)> = (0..count).map(|_| (ctype, bytes.clone())).collect();
    let mut m = with_attachments(&files);
    m.truncate(MAX_MESSAGE);
    m
}

/// Documents (issue 54): zip bombs and archives of many entries nested,
/// Office XML nested deep with many attributes, SVG, RTF groups,
/// calendars of many folded lines, pages of smuggled blobs.
fn document(g: &[u64]) -> Vec<u8> {
    let (kind, entries, kib, nesting, depth, attrs) = (g[0], g[1], g[2], g[3], g[4], g[5]);
    let filler = vec![b'a'; (kib as usize) << 10];
    let xml = |root: &str, open: &str, close: &str| {
        let attributes: String = (0..attrs).map(|i| format!(" a{i}=\"{i}\"")).collect();
        let mut x = format!("<{root}{attributes}>");
        x.push_str(&open.repeat(depth as usize));
        x.push_str("<w:t>text</w:t><text>text</text>");
        x.push_str(&close.repeat(depth as usize));
        x.push_str(&format!("</{root}>"));
        x.into_bytes()
    };
    let (ctype, mut bytes) = match kind {
        0 => {
            let names: Vec<String> = (0..entries.min(20_000))
                .map(|i| format!("f{i}.txt"))
                .collect();
            // (64 MiB decompressed in all: the generator's own time.)
            let per = filler.len().min((64 << 20) / names.len().max(1));
            let files: Vec<(&str, &[u8])> = names
                .iter()
                .map(|n| (n.as_str(), filler.get(..per).unwrap_or_default()))
                .collect();
            ("application/zip", testkit::documents::zip(&files))
        }
        1 => (
            "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
            testkit::documents::zip(&[(
                "word/document.xml",
                &xml("w:document", "<w:p>", "</w:p>"),
            )]),
        ),
        2 => ("image/svg+xml", xml("svg", "<g opacity=\"1\">", "</g>")),
        3 => {
            let mut r = b"{\\rtf1 ".to_vec();
            r.extend("{\\b\\u8364?\\'e9 ".repeat(depth as usize).bytes());
            r.extend(std::iter::repeat_n(b'}', depth as usize));
            ("application/rtf", r)
        }
        4 => {
            let mut c = String::from("BEGIN:VCALENDAR\r\n");
            for i in 0..entries.min(100_000) {
                let _ = write!(c, "DESCRIPTION:line {i}\\, more\r\n \\n folded\r\n");
            }
            ("text/calendar", c.into_bytes())
        }
        _ => {
            let blob = base64::engine::general_purpose::STANDARD.encode(&filler);
            let mut page = String::from("<html><script>");
            for _ in 0..entries.min(10_000) {
                let _ = write!(page, "document.write(atob('{blob}'));");
                if page.len() > MAX_MESSAGE / 2 {
                    break;
                }
            }
            ("text/html", page.into_bytes())
        }
    };
    for n in 0..nesting {
        bytes = testkit::documents::zip(&[(&format!("inner{n}.zip"), &bytes)]);
    }
    bytes.truncate(MAX_MESSAGE * 3 / 4);
    let mut m = with_attachments(&[(ctype, bytes)]);
    m.truncate(MAX_MESSAGE);
    m
}

/// Pictures for the QR-code search (issue 54): tiled with finder patterns
/// of `module` pixels, under a short text.
fn qr(g: &[u64]) -> Vec<u8> {
    let (side, module, count) = (g[0] as u32, g[1].max(1) as u32, g[2]);
    let cell = 8 * module;
    let img = image::GrayImage::from_fn(side, side, |x, y| {
        let (mx, my) = ((x % cell) / module, (y % cell) / module);
        let ring = mx < 7 && my < 7 && (mx == 0 || mx == 6 || my == 0 || my == 6);
        let block = (2..=4).contains(&mx) && (2..=4).contains(&my);
        image::Luma([if ring || block { 0 } else { 255 }])
    });
    pictures_message(img, image::ImageFormat::Png, "image/png", count)
}

/// Pictures for Tesseract (issue 54, item 2): rows of glyph-like blobs
/// (`glyph` pixels tall, words of 1 to 12, lines `leading` apart), speckled
/// with `noise` pixels in 1,000, dark on light or inverted, under a short
/// text: as much text-like ink as the pixels allow.
fn ocr(g: &[u64]) -> Vec<u8> {
    let (side, glyph, leading, noise, count, seed) =
        (g[0] as u32, g[1].max(2) as u32, g[2], g[3], g[4], g[5]);
    let mut r = Rng(seed);
    let (w, h) = (side, (side * 3 / 4).max(16));
    let line = glyph + glyph * leading as u32 / 8 + 1;
    let mut img = image::GrayImage::from_pixel(w, h, image::Luma([250]));
    let mut y = 2;
    while y + glyph < h {
        let mut x = 2;
        while x + glyph < w {
            let letters = 1 + r.below(12) as u32;
            for _ in 0..letters {
                let gw = (glyph / 2).max(1) + r.below(u64::from(glyph / 2 + 1)) as u32;
                let shape = r.next();
                for dy in 0..glyph {
                    for dx in 0..gw {
                        let bit = (dx * 5 + dy * 3) % 16;
                        if (shape >> bit) & 1 == 1 || dx == 0 {
                            if let Some(p) = img.get_pixel_mut_checked(x + dx, y + dy) {
                                p.0[0] = 10;
                            }
                        }
                    }
                }
                x += gw + 1 + glyph / 8;
            }
            x += glyph / 2 + 1;
        }
        y += line;
    }
    for p in img.pixels_mut() {
        if r.below(1000) < noise {
            p.0[0] = r.below(256) as u8;
        }
    }
    pictures_message(img, image::ImageFormat::Png, "image/png", count)
}

fn mime(g: &[u64]) -> Vec<u8> {
    let (parts, nested, size, broken) = (g[0], g[1], g[2], g[3]);
    let mut inner = String::from("Subject: inner\r\n\r\nThe offer text itself, nested.\r\n");
    for n in 0..nested {
        inner = format!(
            "Subject: level {n}\r\nMIME-Version: 1.0\r\nContent-Type: multipart/mixed; boundary=N{n}\r\n\r\n\
             --N{n}\r\nContent-Type: message/rfc822\r\n\r\n{inner}\r\n--N{n}--\r\n"
        );
    }
    let mut m = String::from(
        "From: a@sender.example\r\nTo: b@example.net\r\nSubject: parts\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=PP\r\n\r\n",
    );
    let body = if broken == 1 {
        "%%%%=?==\r\n"
    } else {
        "QUJDREVG\r\n"
    }
    .repeat(size as usize);
    for p in 0..parts {
        if p == 0 {
            let _ = write!(m, "--PP\r\nContent-Type: message/rfc822\r\n\r\n{inner}\r\n");
        }
        let _ = write!(
            m,
            "--PP\r\nContent-Type: application/octet-stream\r\nContent-Transfer-Encoding: base64\r\n\r\n{body}"
        );
        if m.len() > MAX_MESSAGE {
            break;
        }
    }
    m.push_str("--PP--\r\n");
    let mut bytes = m.into_bytes();
    bytes.truncate(MAX_MESSAGE);
    bytes
}

const READERS: &[Reader] = &[
    Reader {
        name: "pdf",
        genes: &[
            ("pages", 1, 64),
            ("shared", 0, 1),
            ("token", 0, 5),
            ("content_kib", 1, 512),
            ("fonts", 0, 6),
            ("font_map_kib", 0, 512),
            ("files", 1, 3),
        ],
        make: pdf,
    },
    Reader {
        name: "html",
        genes: &[
            ("depth", 0, 200_000),
            ("attributes", 0, 40_000),
            ("repeat", 1, 20_000),
            ("style_rules", 0, 20_000),
            ("entities", 0, 50),
            ("inline_spans", 0, 50),
            ("selector_shape", 0, 3),
            ("classes", 0, 16),
        ],
        make: html,
    },
    Reader {
        name: "picture",
        genes: &[
            ("side", 16, 8192),
            ("aspect", 1, 64),
            ("format", 0, 2),
            ("count", 1, 32),
        ],
        make: picture,
    },
    Reader {
        name: "mime",
        genes: &[
            ("parts", 1, 20_000),
            ("nested", 0, 60),
            ("part_lines", 1, 20_000),
            ("broken", 0, 1),
        ],
        make: mime,
    },
    Reader {
        name: "document",
        genes: &[
            ("kind", 0, 5),
            ("entries", 1, 20_000),
            ("entry_kib", 1, 4096),
            ("nesting", 0, 3),
            ("depth", 0, 100_000),
            ("attributes", 0, 20_000),
        ],
        make: document,
    },
    Reader {
        name: "qr",
        genes: &[("side", 16, 4096), ("module", 1, 64), ("count", 1, 8)],
        make: qr,
    },
    Reader {
        name: "ocr",
        genes: &[
            ("side", 64, 4096),
            ("glyph", 2, 96),
            ("leading", 0, 16),
            ("noise", 0, 500),
            ("count", 1, 8),
            ("seed", 0, 1 << 40),
        ],
        make: ocr,
    },
    Reader {
        name: "locked",
        genes: &[
            ("entries", 1, 512),
            ("passwords", 0, 400),
            ("aes", 0, 1),
            ("kib", 0, 2048),
        ],
        make: locked,
    },
    Reader {
        name: "drawn",
        genes: &[
            ("runs", 1, 200_000),
            ("groups", 0, 100_000),
            ("words", 1, 64),
            ("shuffle", 0, 1),
        ],
        make: drawn,
    },
    Reader {
        name: "scan",
        genes: &[
            ("pages", 1, 64),
            ("pictures", 1, 64),
            ("side", 16, 4096),
            ("jpeg", 0, 1),
        ],
        make: scan,
    },
];

/// An encrypted archive (issue 65) of `entries` entries of `kib` KiB,
/// under a body stating `passwords` wrong passwords before the right one:
/// the tries are bounded, and AES's key derivation is the cost.
fn locked(g: &[u64]) -> Vec<u8> {
    let (entries, passwords, aes, kib) = (g[0], g[1], g[2] == 1, g[3]);
    let content = vec![b'x'; (kib as usize) << 10];
    let names: Vec<String> = (0..entries).map(|i| format!("doc{i}.txt")).collect();
    let files: Vec<(&str, &[u8])> = names
        .iter()
        .map(|n| {
            (
                n.as_str(),
                content
                    .get(..content.len().min((32 << 20) / names.len().max(1)))
                    .unwrap_or_default(),
            )
        })
        .collect();
    let zip = testkit::documents::encrypted_zip(&files, "right-one", aes);
    let mut body = String::new();
    for i in 0..passwords {
        let _ = write!(body, "Password: wrong{i} ");
    }
    body.push_str("Password: right-one\n");
    let mut m = format!(
        "From: a@b.example\r\nTo: c@d.example\r\nSubject: s\r\nMIME-Version: 1.0\r\n\
         Content-Type: multipart/mixed; boundary=B\r\n\r\n--B\r\nContent-Type: text/plain\r\n\r\n\
         {body}\r\n--B\r\nContent-Type: application/zip\r\nContent-Transfer-Encoding: base64\r\n\r\n{}\r\n--B--\r\n",
        b64(&zip)
    )
    .into_bytes();
    m.truncate(MAX_MESSAGE);
    m
}

/// An SVG picture (issue 65) of `runs` positioned runs of `words` words,
/// inside `groups` nested translated groups, in shuffled or plain order.
fn drawn(g: &[u64]) -> Vec<u8> {
    let (runs, groups, words, shuffle) = (g[0], g[1], g[2], g[3] == 1);
    let mut svg = String::from("<svg xmlns=\"http://www.w3.org/2000/svg\">");
    svg.push_str(&"<g transform=\"translate(1 1) matrix(1 0 0 1 2 2)\">".repeat(groups as usize));
    let text = "word ".repeat(words as usize);
    let mut rng = Rng(runs ^ groups);
    for i in 0..runs {
        let y = if shuffle { rng.below(100_000) } else { i };
        let _ = write!(
            svg,
            "<text x=\"{}\" y=\"{y}\" font-family=\"Arial\"><tspan dx=\"3\">{text}</tspan></text>",
            rng.below(1000)
        );
        if svg.len() > MAX_MESSAGE / 2 {
            break;
        }
    }
    svg.push_str(&"</g>".repeat(groups as usize));
    svg.push_str("</svg>");
    let mut m = with_attachments(&[("image/svg+xml", svg.into_bytes())]);
    m.truncate(MAX_MESSAGE);
    m
}

/// A PDF without text (issue 65) of `pages` pages, each drawing
/// `pictures` pictures of `side` pixels (JPEG or deflated grey): read
/// through the picture path, at most 4 a PDF.
fn scan(g: &[u64]) -> Vec<u8> {
    let (pages, pictures, side, jpeg) = (g[0], g[1], g[2] as u32, g[3] == 1);
    let img = image::GrayImage::from_fn(side, side, |x, y| image::Luma([((x ^ y) & 0xff) as u8]));
    let data = if jpeg {
        let mut out = Vec::new();
        let _ = image::codecs::jpeg::JpegEncoder::new(&mut out).encode_image(&img);
        out
    } else {
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::fast());
        let _ = z.write_all(img.as_raw());
        z.finish().unwrap_or_default()
    };
    let filter = if jpeg { "DCTDecode" } else { "FlateDecode" };
    // Objects: catalog, pages, then per page a page and its content, and
    // the pictures shared by every page.
    let n_pictures = pictures as usize;
    let first_picture = 3 + 2 * pages as usize;
    let mut objects = vec![
        b"<< /Type /Catalog /Pages 2 0 R >>".to_vec(),
        format!(
            "<< /Type /Pages /Kids [{}] /Count {pages} >>",
            (0..pages)
                .map(|p| format!("{} 0 R", 3 + 2 * p))
                .collect::<Vec<_>>()
                .join(" ")
        )
        .into_bytes(),
    ];
    let xobjects: String = (0..n_pictures)
        .map(|i| format!("/Im{i} {} 0 R ", first_picture + i))
        .collect();
    let content: String = (0..n_pictures)
        .map(|i| format!("q {side} 0 0 {side} 0 0 cm /Im{i} Do Q\n"))
        .collect();
    for p in 0..pages as usize {
        objects.push(
            format!(
                "<< /Type /Page /Parent 2 0 R /MediaBox [0 0 {side} {side}] /Contents {} 0 R \
                 /Resources << /XObject << {xobjects}>> >> >>",
                4 + 2 * p
            )
            .into_bytes(),
        );
        objects.push(
            format!(
                "<< /Length {} >>\nstream\n{content}endstream",
                content.len()
            )
            .into_bytes(),
        );
    }
    for _ in 0..n_pictures {
        let mut o = format!(
            "<< /Type /XObject /Subtype /Image /Width {side} /Height {side} /ColorSpace /DeviceGray \
             /BitsPerComponent 8 /Filter /{filter} /Length {} >>\nstream\n",
            data.len()
        )
        .into_bytes();
        o.extend_from_slice(&data);
        o.extend_from_slice(b"\nendstream");
        objects.push(o);
        if objects.iter().map(Vec::len).sum::<usize>() > MAX_MESSAGE / 2 {
            break;
        }
    }
    let mut m = with_attachments(&[("application/pdf", testkit::pdf_file(&objects))]);
    m.truncate(MAX_MESSAGE);
    m
}

/// The least of three timings of reading `raw`.
fn cost(raw: &[u8], cfg: &ReadConfig) -> Duration {
    (0..3)
        .map(|_| {
            let t = Instant::now();
            let r = read(raw, &["b@example.net".to_owned()], cfg);
            std::hint::black_box(r);
            t.elapsed()
        })
        .min()
        .unwrap_or_default()
}

fn main() {
    let mut args = std::env::args().skip(1);
    let dir = std::path::PathBuf::from(args.next().unwrap_or_else(|| "slowest".into()));
    let budget = Duration::from_secs(args.next().and_then(|a| a.parse().ok()).unwrap_or(60));
    // (Further arguments: the readers to search, by name; all by default.)
    let only: Vec<String> = args.collect();
    let _ = std::fs::create_dir_all(&dir);
    let cfg = ReadConfig::default();
    // Tesseract, when installed, read in this process (as an OCR worker
    // does).
    if let Some(o) = &cfg.scan.ocr {
        bulkwatch::worker::provide_ocr(o);
    }
    let mut rng = Rng(0x5eed);
    for r in READERS
        .iter()
        .filter(|r| only.is_empty() || only.iter().any(|o| o == r.name))
    {
        let draw = |rng: &mut Rng, (_, lo, hi): &(&str, u64, u64)| lo + rng.below(hi - lo + 1);
        let start = Instant::now();
        let mut best: Option<(Duration, Vec<u64>)> = None;
        let mut tried = 0u64;
        while start.elapsed() < budget {
            tried += 1;
            let genome: Vec<u64> = match &best {
                // A third of the time a fresh draw, else one gene of the
                // slowest moved.
                Some((_, g)) if rng.below(3) > 0 => {
                    let mut g = g.clone();
                    let i = rng.below(g.len() as u64) as usize;
                    let (_, lo, hi) = r.genes[i];
                    g[i] = match rng.below(3) {
                        0 => (g[i] * 2).clamp(lo, hi),
                        1 => (g[i] / 2).clamp(lo, hi),
                        _ => draw(&mut rng, &r.genes[i]),
                    };
                    g
                }
                _ => r.genes.iter().map(|gene| draw(&mut rng, gene)).collect(),
            };
            let raw = (r.make)(&genome);
            let c = cost(&raw, &cfg);
            if best.as_ref().is_none_or(|(b, _)| c > *b) {
                best = Some((c, genome));
            }
        }
        if let Some((c, g)) = best {
            let shape: Vec<String> = r
                .genes
                .iter()
                .zip(&g)
                .map(|((n, _, _), v)| format!("{n}={v}"))
                .collect();
            let raw = (r.make)(&g);
            let path = dir.join(format!("slowest-{}.eml", r.name));
            let _ = std::fs::write(&path, &raw);
            println!(
                "{:<8} {:>8.3} s  {} tried  {} KB  {}  -> {}",
                r.name,
                c.as_secs_f64(),
                tried,
                raw.len() / 1024,
                shape.join(" "),
                path.display()
            );
        }
    }
}
