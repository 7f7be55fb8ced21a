//! Structure-aware generators for the fuzz targets `html_shapes` and
//! `mime_shapes`: the fuzz input is read as a program whose steps build
//! the shapes a hostile sender builds and a byte-level fuzzer rarely
//! reaches — a tag with tens of thousands of attributes, nesting
//! hundreds of thousands deep, runs of one character, thousands of
//! parts or headers — up to the configured message size.
//!
//! Each step is a byte choosing what to write and, for the repeating
//! steps, two bytes of count scaled up to the size bound, so one input of
//! a few dozen bytes stands for a message of megabytes.

/// Reads the fuzz input as a program.
pub struct Program<'a> {
    data: &'a [u8],
}

impl<'a> Program<'a> {
    pub fn new(data: &'a [u8]) -> Program<'a> {
        Program { data }
    }

    pub fn byte(&mut self) -> Option<u8> {
        let (b, rest) = self.data.split_first()?;
        self.data = rest;
        Some(*b)
    }

    /// A count from two bytes: small ones as they are, large ones scaled
    /// up to about `max`.
    pub fn count(&mut self, max: usize) -> usize {
        let hi = usize::from(self.byte().unwrap_or(0));
        let lo = usize::from(self.byte().unwrap_or(0));
        let n = (hi << 8) | lo;
        if n < 1024 {
            n
        } else {
            (n - 1024) * (max / 64_512).max(1)
        }
    }

    /// A short word from the input (letters only).
    pub fn word(&mut self) -> String {
        let n = usize::from(self.byte().unwrap_or(3) % 12) + 1;
        (0..n)
            .map(|_| char::from(b'a' + self.byte().unwrap_or(0) % 26))
            .collect()
    }
}

const TAGS: [&str; 16] = [
    "div", "p", "span", "a", "table", "tr", "td", "font", "b", "style", "script", "title", "img",
    "br", "li", "pre",
];
const ATTRS: [&str; 8] = [
    "style", "class", "id", "href", "src", "color", "bgcolor", "hidden",
];
const VALUES: [&str; 8] = [
    "display:none",
    "color:#fff;background:#fff",
    "font-size:0",
    "x",
    "http://t.example/c?u=1",
    "&amp;&#82;&eacute",
    "a\"b",
    "",
];

/// An HTML document of at most `max` bytes from `p`.
pub fn html(p: &mut Program<'_>, max: usize) -> String {
    let mut out = String::new();
    while out.len() < max {
        let Some(op) = p.byte() else { break };
        let room = max - out.len();
        match op % 12 {
            // A start tag with many attributes, quoted each way.
            0 => {
                let tag = TAGS[usize::from(p.byte().unwrap_or(0)) % TAGS.len()];
                let n = p.count(room / 8);
                let quote = ["\"", "'", ""][usize::from(p.byte().unwrap_or(0)) % 3];
                let v = VALUES[usize::from(p.byte().unwrap_or(0)) % VALUES.len()];
                out.push('<');
                out.push_str(tag);
                for i in 0..n {
                    if out.len() >= max {
                        break;
                    }
                    let a = ATTRS[i % ATTRS.len()];
                    out.push_str(&format!(" {a}{i}={quote}{v}{quote}"));
                }
                out.push('>');
            }
            // Nesting: n start tags, text, and (maybe) n end tags.
            1 => {
                let tag = TAGS[usize::from(p.byte().unwrap_or(0)) % TAGS.len()];
                let n = p.count(room / (2 * tag.len() + 6));
                let close = p.byte().unwrap_or(0) % 2 == 0;
                for _ in 0..n {
                    out.push_str(&format!("<{tag}>"));
                }
                out.push_str("deep text");
                if close {
                    for _ in 0..n {
                        out.push_str(&format!("</{tag}>"));
                    }
                }
            }
            // A run of one character.
            2 => {
                let c = ['<', '>', '&', '"', '\'', '=', '/', '!', '-', ' ', '\n', 'x', '\u{202e}']
                    [usize::from(p.byte().unwrap_or(0)) % 13];
                let n = p.count(room / c.len_utf8());
                out.extend(std::iter::repeat_n(c, n));
            }
            // Words.
            3 => {
                for _ in 0..usize::from(p.byte().unwrap_or(0)) {
                    out.push_str(&p.word());
                    out.push(' ');
                }
            }
            // A style sheet of many rules or long selectors.
            4 => {
                let n = p.count(room / 24);
                out.push_str("<style>");
                for i in 0..n {
                    out.push_str(&format!(".c{i} > p, #i{i} {{display:none}}"));
                }
                out.push_str("</style>");
            }
            // A long selector.
            5 => {
                let n = p.count(room / 4);
                out.push_str("<style>");
                for _ in 0..n {
                    out.push_str("a b ");
                }
                out.push_str("{visibility:hidden}</style>");
            }
            // Character references, complete and not.
            6 => {
                let n = p.count(room / 8);
                for i in 0..n {
                    out.push_str(["&amp;", "&#x52;", "&#99999999;", "&eacute", "&", "&#"][i % 6]);
                }
            }
            // Comments, closed or not.
            7 => {
                let n = p.count(room / 8);
                for _ in 0..n {
                    out.push_str("<!-- c ");
                }
                if p.byte().unwrap_or(0) % 2 == 0 {
                    out.push_str("-->");
                }
            }
            // A closing tag.
            8 => {
                let tag = TAGS[usize::from(p.byte().unwrap_or(0)) % TAGS.len()];
                out.push_str(&format!("</{tag}>"));
            }
            // A long attribute value.
            9 => {
                let n = p.count(room);
                out.push_str("<a href=\"");
                out.extend(std::iter::repeat_n('x', n));
                out.push_str("\">link</a>");
            }
            // Inline style runs.
            10 => {
                let n = p.count(room / 16);
                out.push_str("<span style=\"");
                for _ in 0..n {
                    out.push_str("color:red;x:y;");
                }
                out.push_str("\">styled</span>");
            }
            // Raw bytes of the input.
            _ => {
                let n = usize::from(p.byte().unwrap_or(0));
                for _ in 0..n {
                    out.push(char::from(p.byte().unwrap_or(b' ')));
                }
            }
        }
    }
    out.truncate(floor_boundary(&out, max));
    out
}

fn floor_boundary(s: &str, mut i: usize) -> usize {
    if i >= s.len() {
        return s.len();
    }
    while !s.is_char_boundary(i) {
        i -= 1;
    }
    i
}

/// A message of at most about `max` bytes from `p`: headers, then MIME
/// structure (nested multiparts, nested messages, many parts, encodings),
/// with HTML parts from [`html`].
pub fn message(p: &mut Program<'_>, max: usize) -> Vec<u8> {
    let mut out = Vec::new();
    out.extend_from_slice(b"From: Deals <offers@deals.example>\r\nTo: ann@example.net\r\nSubject: ");
    let words = usize::from(p.byte().unwrap_or(0));
    for _ in 0..words {
        out.extend_from_slice(p.word().as_bytes());
        out.push(b' ');
    }
    out.extend_from_slice(b"\r\nMIME-Version: 1.0\r\n");
    body(p, max, &mut out, 0);
    out.truncate(max);
    out
}

fn body(p: &mut Program<'_>, max: usize, out: &mut Vec<u8>, depth: usize) {
    // The generator's own recursion is bounded: the nesting it writes
    // is not recursion (a loop writes it).
    let op = p.byte();
    if out.len() >= max || depth > 32 || op.is_none() {
        out.extend_from_slice(b"Content-Type: text/plain\r\n\r\nthe end\r\n");
        return;
    }
    let room = max - out.len();
    match op.unwrap_or(0) % 8 {
        // Many headers.
        0 => {
            let n = p.count(room / 16);
            for i in 0..n {
                out.extend_from_slice(format!("X-H{i}: value\r\n").as_bytes());
            }
            body(p, max, out, depth + 1);
        }
        // Nested multiparts, n deep, each with its own boundary.
        1 => {
            let n = p.count(room / 80);
            for i in 0..n {
                out.extend_from_slice(
                    format!("Content-Type: multipart/mixed; boundary=\"b{i}\"\r\n\r\n--b{i}\r\n")
                        .as_bytes(),
                );
            }
            body(p, max, out, depth + 1);
            for i in (0..n).rev() {
                out.extend_from_slice(format!("\r\n--b{i}--\r\n").as_bytes());
            }
        }
        // Nested messages.
        2 => {
            let n = p.count(room / 64);
            for i in 0..n {
                out.extend_from_slice(
                    format!("Content-Type: message/rfc822\r\n\r\nSubject: inner {i}\r\n").as_bytes(),
                );
            }
            body(p, max, out, depth + 1);
        }
        // Many parts of one multipart.
        3 if depth < 4 => {
            let n = p.count(room / 64).min(100_000);
            out.extend_from_slice(b"Content-Type: multipart/alternative; boundary=z\r\n\r\n");
            for _ in 0..n {
                out.extend_from_slice(b"--z\r\n");
                body(p, max.min(out.len() + room / n.max(1) + 64), out, depth + 1);
                if out.len() >= max {
                    break;
                }
            }
            out.extend_from_slice(b"--z--\r\n");
        }
        // HTML.
        4 => {
            out.extend_from_slice(b"Content-Type: text/html; charset=utf-8\r\n\r\n");
            out.extend_from_slice(html(p, room).as_bytes());
        }
        // Base64 or quoted-printable, well formed or not.
        5 => {
            let enc = ["base64", "quoted-printable", "x-uuencode", "7bit"]
                [usize::from(p.byte().unwrap_or(0)) % 4];
            out.extend_from_slice(
                format!("Content-Type: text/plain\r\nContent-Transfer-Encoding: {enc}\r\n\r\n")
                    .as_bytes(),
            );
            let n = p.count(room);
            let unit: &[u8] = [&b"SGVsbG8g"[..], b"=3D=20=\r\n", b"=Z", b"===="]
                [usize::from(p.byte().unwrap_or(0)) % 4];
            for _ in 0..n / unit.len() {
                out.extend_from_slice(unit);
            }
        }
        // A charset, known or not, on 8-bit text.
        6 => {
            let cs = ["iso-2022-jp", "utf-7", "gb18030", "x-unknown", "utf-16"]
                [usize::from(p.byte().unwrap_or(0)) % 5];
            out.extend_from_slice(format!("Content-Type: text/plain; charset={cs}\r\n\r\n").as_bytes());
            let n = p.count(room);
            for i in 0..n {
                out.push(p.byte().unwrap_or(i as u8));
            }
        }
        // Plain words.
        _ => {
            out.extend_from_slice(b"Content-Type: text/plain\r\n\r\n");
            for _ in 0..usize::from(p.byte().unwrap_or(0)) {
                out.extend_from_slice(p.word().as_bytes());
                out.push(b' ');
            }
        }
    }
}
