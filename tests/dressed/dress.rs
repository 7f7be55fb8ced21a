//! Messages of the dressed-campaign suite: the plain copy of a base text for
//! one recipient, and the dresses, each a way of writing the same text that
//! a mail client would not show, or would show as the same text.
//!
//! Every function takes the base text (paragraphs separated by blank lines,
//! `{ID}` where a per-recipient number goes) and the copy number (the
//! recipient) and returns the whole RFC 5322 message. What varies per copy
//! (which words are dressed, junk words, boundaries) comes from a small
//! PRNG seeded by the text, the copy and the dress: the suite is
//! deterministic.

use testkit::{base64, base64_lines as b64_lines};

/// A dress: base text and copy number to raw message bytes.
pub type Dress = fn(&str, usize) -> Vec<u8>;

/// Every dress, by class name. `plain` is the control: its "dressed" copies
/// are plain copies too.
pub const CLASSES: &[(&str, Dress)] = &[
    ("plain", plain),
    ("quote_all", quote_all),
    ("attribution", attribution),
    ("original_message", original_message),
    ("forwarded", forwarded),
    ("signature_top", signature_top),
    ("rule_unsubscribe", rule_unsubscribe),
    ("disclaimer", disclaimer),
    ("extra_greetings", extra_greetings),
    ("html_basic", html_basic),
    ("html_stray_quote", html_stray_quote),
    ("html_bom", html_bom),
    ("inline_spans", inline_spans),
    ("entities_in_words", entities_in_words),
    ("comments_in_words", comments_in_words),
    ("wbr_and_letter_split", wbr_and_letter_split),
    ("anchor_wrap", anchor_wrap),
    ("outlook_html", outlook_html),
    ("head_junk", head_junk),
    ("hidden_junk", hidden_junk),
    ("offscreen_junk", offscreen_junk),
    ("sheet_hidden_junk", sheet_hidden_junk),
    ("restored_text", restored_text),
    ("html_only_alternative", html_only_alternative),
    ("confusables", confusables),
    ("zero_width", zero_width),
    ("bidi_and_variation", bidi_and_variation),
    ("fullwidth_or_math", fullwidth_or_math),
    ("odd_spaces", odd_spaces),
    ("digits_for_letters", digits_for_letters),
    ("dotted_letters", dotted_letters),
    ("spaced_capitals", spaced_capitals),
    ("reversed_in_override", reversed_in_override),
    ("link_on_every_word", link_on_every_word),
    ("poisoned", poisoned),
    ("buster_lines", buster_lines),
    ("base64", base64_plain),
    ("quoted_printable", quoted_printable),
    ("windows_1252", windows_1252),
    ("utf16", utf16),
    ("flowed_rewrap", flowed_rewrap),
    ("split_parts", split_parts),
    ("nested_rfc822", nested_rfc822),
    ("attached_page", attached_page),
    ("attached_pdf", attached_pdf),
    // Issue 54's dresses.
    ("zipped_page", zipped_page),
    ("svg_text", svg_text),
    ("calendar_invite", calendar_invite),
    ("word_document", word_document),
    ("rtl_override_css", rtl_override_css),
    // Classes of our own (issue 54, item 6), each a document or page a
    // client or desktop opens from current campaigns.
    ("excel_sheet", excel_sheet),
    ("slides", slides),
    ("opendocument", opendocument),
    ("rtf_as_word", rtf_as_word),
    ("mhtml_page", mhtml_page),
    ("gzipped_page", gzipped_page),
    ("zip_in_zip", zip_in_zip),
    ("eml_as_octets", eml_as_octets),
    ("contact_card", contact_card),
    ("html_smuggling", html_smuggling),
    ("alt_text_pictures", alt_text_pictures),
    ("css_generated_text", css_generated_text),
    ("signs_for_letters", signs_for_letters),
    ("flex_order_shuffle", flex_order_shuffle),
    ("form_fields", form_fields),
    // Issue 65: an archive encrypted with the password its body states.
    ("encrypted_zip", encrypted_zip),
    // Issue 65: SVG text read where it is drawn, not in source order.
    ("svg_shuffled", svg_shuffled),
    // Issue 65: junk hidden by selectors as a browser reads them.
    ("selector_hidden_junk", selector_hidden_junk),
];

// ---------------------------------------------------------------- randomness

pub use testkit::Rng;

/// FNV-1a.
fn fnv(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |h, b| {
        (h ^ u64::from(*b)).wrapping_mul(0x0100_0000_01b3)
    })
}

/// The PRNG of one dress of one copy of one text.
fn rng(text: &str, copy: usize, salt: &str) -> Rng {
    let h = fnv(text.as_bytes()) ^ fnv(salt.as_bytes()).rotate_left(17);
    Rng::new(h ^ (copy as u64).wrapping_mul(0x2545_f491_4f6c_dd1d))
}

/// Common words for hash-buster junk.
const VOCAB: &[&str] = &[
    "river", "window", "garden", "pencil", "orange", "winter", "silver", "bridge", "candle",
    "forest", "harbor", "island", "jacket", "kettle", "ladder", "meadow", "needle", "pepper",
    "rabbit", "saddle", "tunnel", "velvet", "walnut", "yellow", "anchor", "basket", "cactus",
    "dinner", "engine", "feather", "glacier", "hammer", "insect", "jungle", "lemon", "marble",
    "nickel", "oyster", "parrot", "quiet", "ribbon", "spoon", "tiger", "umbrella", "violin",
    "wagon", "zebra", "almond", "blanket", "copper", "desert", "elbow", "fabric", "gravel",
    "hollow", "ivory", "jelly", "kitten", "lantern", "mirror", "noodle", "office", "pillow",
    "quartz", "rocket", "shadow", "timber", "uncle", "valley", "whistle", "yogurt", "arrow",
    "button", "cotton", "donkey", "empire", "finger", "ginger", "helmet", "iron", "journey",
    "kingdom", "lizard", "monkey", "nephew", "onion", "puzzle", "rhythm", "salmon", "tomato",
    "useful", "vessel", "weather", "always", "before", "carry", "during", "either", "follow",
    "gather", "happen", "inside", "listen", "minute", "nearly", "option", "people", "reason",
    "second", "travel", "unless", "visit", "wonder", "across", "behind", "choose", "decide",
    "enough", "figure", "growth", "health", "little", "market", "nature", "object", "public",
    "record", "simple", "toward", "number", "member", "letter", "summer", "cheese", "planet",
];

fn junk_words(rng: &mut Rng, n: usize) -> String {
    (0..n)
        .map(|_| *rng.pick(VOCAB))
        .collect::<Vec<_>>()
        .join(" ")
}

// ------------------------------------------------------------- the recipient

const FIRST: &[&str] = &[
    "Alice", "Bruno", "Chiara", "Dmitri", "Elena", "Farid", "Greta", "Hiroshi",
];
const LAST: &[&str] = &[
    "Martin",
    "Keller",
    "Rossi",
    "Volkov",
    "Garcia",
    "Haddad",
    "Lindqvist",
    "Tanaka",
];
const DOMAINS: &[&str] = &["example.org", "example.net", "example.com"];

fn first(copy: usize) -> &'static str {
    FIRST[copy % FIRST.len()]
}

fn last(copy: usize) -> &'static str {
    LAST[copy % LAST.len()]
}

fn address(copy: usize) -> String {
    format!(
        "{}.{}@{}",
        first(copy).to_lowercase(),
        last(copy).to_lowercase(),
        DOMAINS[copy % DOMAINS.len()]
    )
}

/// The per-recipient number that replaces `{ID}`.
fn tracking(text: &str, copy: usize) -> String {
    let mut r = rng(text, copy, "tracking");
    format!("{}", 1_000_000 + r.below(9_000_000))
}

/// Wraps lines longer than 76 characters at 72.
fn wrap(text: &str, width: usize) -> String {
    let mut out = Vec::new();
    for line in text.split('\n') {
        if line.chars().count() <= width + 4 {
            out.push(line.to_owned());
            continue;
        }
        let mut cur = String::new();
        for w in line.split_whitespace() {
            if !cur.is_empty() && cur.chars().count() + 1 + w.chars().count() > width {
                out.push(std::mem::take(&mut cur));
            }
            if !cur.is_empty() {
                cur.push(' ');
            }
            cur.push_str(w);
        }
        out.push(cur);
    }
    out.join("\n")
}

/// What the recipient reads: greeting with their name, the text with
/// their number, lines wrapped at 72.
pub fn body(text: &str, copy: usize) -> String {
    let t = text.replace("{ID}", &tracking(text, copy));
    format!("Dear {},\n\n{}\n", first(copy), wrap(&t, 72))
}

/// The first URL host of the text, to make the sender's address from.
fn host(text: &str) -> String {
    text.split_whitespace()
        .find_map(|w| w.split_once("://"))
        .map(|(_, rest)| {
            rest.split(['/', '?', '#'])
                .next()
                .unwrap_or_default()
                .trim_end_matches(['.', ',', ')'])
                .to_owned()
        })
        .filter(|h| !h.is_empty() && h.is_ascii())
        .unwrap_or_else(|| "mailer.example".to_owned())
}

/// The subject: the first words of the text, the same for every copy.
fn subject(text: &str) -> String {
    let s: String = text
        .split_whitespace()
        .filter(|w| !w.contains("{ID}"))
        .take(7)
        .collect::<Vec<_>>()
        .join(" ")
        .chars()
        .filter(|c| !c.is_control())
        .collect();
    let s = s.trim_end_matches([',', '.', ':', ';']).to_owned();
    if s.is_ascii() {
        s
    } else {
        format!("=?utf-8?B?{}?=", base64(s.as_bytes()))
    }
}

/// The message: headers for this copy, `content` (the Content-* header
/// lines) and the body as given.
fn message(text: &str, copy: usize, content: &str, body: &[u8]) -> Vec<u8> {
    let h = fnv(text.as_bytes());
    let host = host(text);
    let mut out = format!(
        "From: \"Customer Service\" <info@{host}>\n\
         To: \"{} {}\" <{}>\n\
         Subject: {}\n\
         Date: Mon, 3 Nov 2025 10:{:02}:{:02} +0000\n\
         Message-ID: <{h:016x}.{copy}.{}@{host}>\n\
         MIME-Version: 1.0\n\
         {content}\n\n",
        first(copy),
        last(copy),
        address(copy),
        subject(text),
        copy % 60,
        (h % 60) as usize,
        fnv(content.as_bytes()) % 100_000,
    )
    .into_bytes();
    out.extend_from_slice(body);
    out
}

const PLAIN: &str = "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit";
const HTML: &str = "Content-Type: text/html; charset=utf-8\nContent-Transfer-Encoding: 8bit";

fn plain_message(text: &str, copy: usize, body: &str) -> Vec<u8> {
    message(text, copy, PLAIN, body.as_bytes())
}

fn html_message(text: &str, copy: usize, html: &str) -> Vec<u8> {
    message(text, copy, HTML, html.as_bytes())
}

fn crlf(s: &str) -> String {
    s.replace('\n', "\r\n")
}

/// A multipart body of `parts` (their header lines and body).
fn multipart(boundary: &str, parts: &[(String, String)]) -> String {
    let mut out = String::from("This is a multi-part message in MIME format.\n\n");
    for (headers, body) in parts {
        out.push_str(&format!("--{boundary}\n{headers}\n\n{body}\n"));
    }
    out.push_str(&format!("--{boundary}--\n"));
    out
}

// ------------------------------------------------------------------- words

fn is_url(w: &str) -> bool {
    w.contains("://") || w.starts_with("www.")
}

/// A word worth dressing: not a link or an address, three letters or more.
fn dressable(w: &str) -> bool {
    !is_url(w) && !w.contains('@') && w.chars().filter(|c| c.is_alphabetic()).count() >= 3
}

/// `s` with some words (dressable ones, each with probability `p`)
/// replaced by `f` of them; spaces and line breaks kept.
fn dress_words(
    s: &str,
    rng: &mut Rng,
    p: f64,
    mut f: impl FnMut(&str, &mut Rng) -> String,
) -> String {
    let mut out = String::with_capacity(s.len() * 2);
    for (i, line) in s.split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        for (j, w) in line.split(' ').enumerate() {
            if j > 0 {
                out.push(' ');
            }
            if dressable(w) && rng.chance(p) {
                out.push_str(&f(w, rng));
            } else {
                out.push_str(w);
            }
        }
    }
    out
}

fn esc(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        esc_char(c, &mut out);
    }
    out
}

fn esc_char(c: char, out: &mut String) {
    match c {
        '&' => out.push_str("&amp;"),
        '<' => out.push_str("&lt;"),
        '>' => out.push_str("&gt;"),
        '"' => out.push_str("&quot;"),
        c => out.push(c),
    }
}

/// A link shown as itself; trailing punctuation stays outside it.
fn link(w: &str) -> String {
    let url = w.trim_end_matches(['.', ',', ')', ';', ':']);
    let rest = &w[url.len()..];
    let href = if url.starts_with("www.") {
        format!("http://{url}")
    } else {
        url.to_owned()
    };
    format!("<a href=\"{}\">{}</a>{}", esc(&href), esc(url), esc(rest))
}

/// The body as HTML paragraphs, each a list of lines: links as `<a>`,
/// some words (dressable, probability `p`) rendered by `f` (which
/// escapes), all else escaped.
fn html_paragraphs(
    body: &str,
    rng: &mut Rng,
    p: f64,
    mut f: impl FnMut(&str, &mut Rng) -> String,
) -> Vec<Vec<String>> {
    body.split("\n\n")
        .map(str::trim)
        .filter(|para| !para.is_empty())
        .map(|para| {
            para.split('\n')
                .map(|line| {
                    line.split(' ')
                        .map(|w| {
                            if is_url(w) {
                                link(w)
                            } else if dressable(w) && rng.chance(p) {
                                f(w, rng)
                            } else {
                                esc(w)
                            }
                        })
                        .collect::<Vec<_>>()
                        .join(" ")
                })
                .collect()
        })
        .collect()
}

/// Paragraphs as `<p>` elements, lines separated by `<br>`.
fn p_elements(paras: &[Vec<String>]) -> String {
    paras
        .iter()
        .map(|lines| format!("<p>{}</p>\n", lines.join("<br>\n")))
        .collect()
}

fn html_doc(inner: &str) -> String {
    format!(
        "<html>\n<head><meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\"></head>\n\
         <body>\n{inner}</body>\n</html>\n"
    )
}

/// The characters of `w` split at `cuts` random places (1 to len-1).
fn split_chars(w: &str, rng: &mut Rng, cuts: usize) -> Vec<String> {
    let chars: Vec<char> = w.chars().collect();
    let mut at: Vec<usize> = (0..cuts).map(|_| rng.range(1, chars.len() - 1)).collect();
    at.sort_unstable();
    at.dedup();
    let mut out = Vec::new();
    let mut start = 0;
    for a in at.into_iter().chain([chars.len()]) {
        out.push(chars[start..a].iter().collect());
        start = a;
    }
    out
}

// -------------------------------------------------------------- plain text

/// The plain copy (and the control class).
pub fn plain(text: &str, copy: usize) -> Vec<u8> {
    plain_message(text, copy, &body(text, copy))
}

fn quote(body: &str) -> String {
    body.trim_end()
        .split('\n')
        .map(|l| {
            if l.is_empty() {
                ">\n".to_owned()
            } else {
                format!("> {l}\n")
            }
        })
        .collect()
}

fn quote_all(text: &str, copy: usize) -> Vec<u8> {
    plain_message(text, copy, &quote(&body(text, copy)))
}

const QUOTED_PEOPLE: &[(&str, &str)] = &[
    ("Jane Roe", "jane@example.net"),
    ("Paul Smith", "p.smith@example.com"),
    ("Support", "support@example.org"),
    ("Mark Evans", "mark.evans@example.net"),
];

fn attribution(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "attribution");
    let (name, addr) = r.pick(QUOTED_PEOPLE);
    let blank = if r.chance(0.5) { "\n" } else { "" };
    let b = format!(
        "On Mon, 3 Nov 2025 at 10:{:02}, {name} <{addr}> wrote:\n{blank}{}",
        r.below(60),
        quote(&body(text, copy))
    );
    plain_message(text, copy, &b)
}

const SHORT_LINES: &[&str] = &[
    "Please see below.",
    "FYI",
    "See the message below.",
    "Forwarding this to you.",
    "Please read.",
];

fn original_message(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "original");
    let (name, addr) = r.pick(QUOTED_PEOPLE);
    let b = format!(
        "{}\n\n-----Original Message-----\nFrom: {name} <{addr}>\nSent: Monday, November 3, 2025 \
         9:{:02} AM\nTo: {} {}\nSubject: {}\n\n{}",
        r.pick(SHORT_LINES),
        r.below(60),
        first(copy),
        last(copy),
        subject(text),
        body(text, copy)
    );
    plain_message(text, copy, &b)
}

fn forwarded(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "forwarded");
    let (name, addr) = r.pick(QUOTED_PEOPLE);
    let top = if r.chance(0.5) {
        format!("{}\n\n", r.pick(SHORT_LINES))
    } else {
        String::new()
    };
    let b = format!(
        "{top}---------- Forwarded message ---------\nFrom: {name} <{addr}>\nDate: Mon, 3 Nov 2025 \
         at 09:{:02}\nSubject: {}\nTo: <{}>\n\n\n{}",
        r.below(60),
        subject(text),
        address(copy),
        body(text, copy)
    );
    plain_message(text, copy, &b)
}

fn signature_top(text: &str, copy: usize) -> Vec<u8> {
    plain_message(text, copy, &format!("-- \n{}", body(text, copy)))
}

fn rule_unsubscribe(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "unsubscribe");
    let rule = "________________________________";
    let unsub = format!(
        "If you no longer wish to receive these emails, unsubscribe here: \
         https://lists.{}/u?x={}",
        host(text),
        r.below(1_000_000)
    );
    let b = body(text, copy);
    let out = if copy.is_multiple_of(2) {
        format!("{unsub}\n{rule}\n\n{b}")
    } else {
        let (greeting, rest) = b.split_once('\n').unwrap_or((&b, ""));
        format!("{greeting}\n{rule}\n{unsub}\n{rule}\n{rest}")
    };
    plain_message(text, copy, &out)
}

const DISCLAIMERS: &[&str] = &[
    "CONFIDENTIALITY NOTICE: This e-mail is confidential and intended only for the use of the \
     individual or entity to whom it is addressed. It may contain information that is privileged \
     or exempt from disclosure under applicable law. If you are not the intended recipient, any \
     use, copying or distribution of this e-mail is prohibited. If you have received this email \
     in error please notify the sender immediately and delete it from your system.",
    "This e-mail is confidential and intended only for the person or organisation to which it is \
     addressed. If you have received this email in error please notify the sender by return \
     e-mail and destroy all copies. Any views expressed are those of the author and not \
     necessarily those of the company.",
    "Disclaimer: this message and any attachments are confidential and intended only for the \
     addressee. If you have received this email in error please notify the sender and delete \
     it. E-mail cannot be guaranteed to be secure or free of errors or viruses.",
];

fn disclaimer(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "disclaimer");
    let d = wrap(DISCLAIMERS[r.below(DISCLAIMERS.len())], 72);
    let b = body(text, copy);
    let mut paras: Vec<&str> = b.trim_end().split("\n\n").collect();
    let at = if copy.is_multiple_of(2) {
        0
    } else {
        r.range(1, paras.len().saturating_sub(1).max(1))
    };
    paras.insert(at, &d);
    plain_message(text, copy, &(paras.join("\n\n") + "\n"))
}

fn extra_greetings(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "greetings");
    let hello = r.pick(&["Hi", "Hello", "Good morning"]);
    let b = format!(
        "{hello} {},\n\n{} {}, this message is for you.\n\n{}",
        first(copy),
        first(copy),
        last(copy),
        body(text, copy)
    );
    plain_message(text, copy, &b)
}

const CONFUSABLE: &[(char, char)] = &[
    ('a', '\u{430}'),
    ('e', '\u{435}'),
    ('o', '\u{43e}'),
    ('p', '\u{440}'),
    ('c', '\u{441}'),
    ('x', '\u{445}'),
    ('A', '\u{410}'),
    ('E', '\u{415}'),
    ('O', '\u{41e}'),
    ('P', '\u{420}'),
    ('C', '\u{421}'),
    ('X', '\u{425}'),
];

fn confusables(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "confusables");
    let b = dress_words(&body(text, copy), &mut r, 0.5, |w, _| {
        w.chars()
            .map(|c| {
                CONFUSABLE
                    .iter()
                    .find(|(l, _)| *l == c)
                    .map_or(c, |(_, k)| *k)
            })
            .collect()
    });
    plain_message(text, copy, &b)
}

/// `w` with `n` characters from `pool` inserted inside it.
fn insert_inside(w: &str, rng: &mut Rng, n: usize, pool: &[char]) -> String {
    let pieces = split_chars(w, rng, n);
    let mut out = String::new();
    for (i, p) in pieces.iter().enumerate() {
        if i > 0 {
            out.push(*rng.pick(pool));
        }
        out.push_str(p);
    }
    out
}

fn zero_width(text: &str, copy: usize) -> Vec<u8> {
    const INVISIBLE: &[char] = &[
        '\u{200b}', '\u{200c}', '\u{200d}', '\u{2060}', '\u{feff}', '\u{ad}',
    ];
    let mut r = rng(text, copy, "zero_width");
    let b = dress_words(&body(text, copy), &mut r, 0.4, |w, r| {
        let n = r.range(1, 2);
        insert_inside(w, r, n, INVISIBLE)
    });
    plain_message(text, copy, &b)
}

fn bidi_and_variation(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "bidi");
    let b = dress_words(&body(text, copy), &mut r, 0.4, |w, r| {
        let chars: Vec<char> = w.chars().collect();
        let i = r.range(1, chars.len() - 1);
        let mut out: String = chars[..i].iter().collect();
        match r.below(3) {
            // An embedding or override around one letter: shown as is.
            0 => {
                out.push(*r.pick(&['\u{202a}', '\u{202b}', '\u{202d}', '\u{202e}']));
                out.push(chars[i]);
                out.push('\u{202c}');
            }
            // An isolate around one letter.
            1 => {
                out.push(*r.pick(&['\u{2066}', '\u{2067}', '\u{2068}']));
                out.push(chars[i]);
                out.push('\u{2069}');
            }
            // A variation selector after a letter.
            _ => {
                out.push(chars[i]);
                out.push(char::from_u32(0xfe00 + r.below(16) as u32).unwrap());
            }
        }
        out.extend(&chars[i + 1..]);
        out
    });
    plain_message(text, copy, &b)
}

fn fullwidth_or_math(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "fullwidth");
    let b = dress_words(&body(text, copy), &mut r, 0.35, |w, r| {
        // Fullwidth, mathematical bold, mathematical sans-serif bold: no
        // holes in their A-Z and a-z ranges.
        let (upper, lower) = *r.pick(&[(0xff21, 0xff41), (0x1d400, 0x1d41a), (0x1d5d4, 0x1d5ee)]);
        w.chars()
            .map(|c| {
                let cp = match c {
                    'A'..='Z' => upper + (c as u32 - 'A' as u32),
                    'a'..='z' => lower + (c as u32 - 'a' as u32),
                    _ => return c,
                };
                char::from_u32(cp).unwrap()
            })
            .collect()
    });
    plain_message(text, copy, &b)
}

fn odd_spaces(text: &str, copy: usize) -> Vec<u8> {
    const SPACES: &[&str] = &[
        "\u{a0}", "\u{2002}", "\u{2003}", "\u{2004}", "\u{2005}", "\u{2009}", "\u{202f}", "  ",
    ];
    let mut r = rng(text, copy, "spaces");
    let b: String = body(text, copy)
        .split(' ')
        .enumerate()
        .map(|(i, w)| {
            if i == 0 {
                w.to_owned()
            } else if r.chance(0.4) {
                format!("{}{w}", r.pick(SPACES))
            } else {
                format!(" {w}")
            }
        })
        .collect();
    plain_message(text, copy, &b)
}

// ------------------------------------------------ spellings a reader reads

/// `w` split into its letters and what follows them (`account,` is
/// `account` and `,`): the dresses below change the letters only.
fn letters_and_rest(w: &str) -> (&str, &str) {
    let end = w
        .char_indices()
        .rev()
        .find(|(_, c)| c.is_alphanumeric())
        .map_or(0, |(i, c)| i + c.len_utf8());
    w.split_at(end)
}

/// Digits and signs for letters: in a third of the words, one letter
/// (one or two in words of six letters or more) written as a digit or a sign a
/// reader still reads (`acc0unt`, `p@yment`, `$ecure`). A digit never
/// opens a word (`4th`, `10am`: a number with a unit is not a word).
fn digits_for_letters(text: &str, copy: usize) -> Vec<u8> {
    const LEET: &[(char, &[char])] = &[
        ('a', &['4', '@']),
        ('b', &['8']),
        ('e', &['3']),
        ('g', &['9']),
        ('i', &['1', '!']),
        ('l', &['1', '|']),
        ('o', &['0']),
        ('s', &['5', '$']),
        ('t', &['7']),
    ];
    let mut r = rng(text, copy, "leet");
    let b = dress_words(&body(text, copy), &mut r, 0.33, |w, r| {
        let (word, rest) = letters_and_rest(w);
        let mut chars: Vec<char> = word.chars().collect();
        let letters = chars.iter().filter(|c| c.is_ascii_alphabetic()).count();
        let mut spots: Vec<(usize, &[char])> = chars
            .iter()
            .enumerate()
            .filter_map(|(i, c)| {
                let subs = LEET.iter().find(|(l, _)| *l == c.to_ascii_lowercase())?.1;
                // At the start only a sign (`$ecure`), never a digit.
                let subs: &[char] = if i == 0 { &subs[1..] } else { subs };
                (!subs.is_empty()).then_some((i, subs))
            })
            .collect();
        for _ in 0..if letters >= 6 { r.range(1, 2) } else { 1 } {
            if spots.is_empty() {
                break;
            }
            let (i, subs) = spots.swap_remove(r.below(spots.len()));
            chars[i] = *r.pick(subs);
        }
        let mut out: String = chars.into_iter().collect();
        out.push_str(rest);
        out
    });
    plain_message(text, copy, &b)
}

/// Signs for letters, harder than [`digits_for_letters`]: in half of the
/// words every `a`, `s` and `t` written as `@`, `$` and `7` (at the start
/// of a word too: `7he`, `@ccount`, `$ecure`), and in half of those every
/// `e`, `o` and `i` as `3`, `0` and `1`.
fn signs_for_letters(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "signs");
    let b = dress_words(&body(text, copy), &mut r, 0.5, |w, r| {
        let (word, rest) = letters_and_rest(w);
        if !word.chars().all(|c| c.is_ascii_alphabetic()) {
            return w.to_owned();
        }
        let digits = r.chance(0.5);
        let mut out: String = word
            .chars()
            .map(|c| match (c, digits) {
                ('a' | 'A', _) => '@',
                ('s' | 'S', _) => '$',
                ('t' | 'T', _) => '7',
                ('e' | 'E', true) => '3',
                ('o' | 'O', true) => '0',
                ('i' | 'I', true) => '1',
                (c, _) => c,
            })
            .collect();
        out.push_str(rest);
        out
    });
    plain_message(text, copy, &b)
}

/// The letters of a third of the words separated by a sign
/// (`s.e.c.u.r.i.t.y`, `u-p-d-a-t-e`), one sign per word.
fn dotted_letters(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "dotted");
    let b = dress_words(&body(text, copy), &mut r, 0.33, |w, r| {
        let (word, rest) = letters_and_rest(w);
        if !word.chars().all(char::is_alphabetic) {
            return w.to_owned();
        }
        let sep = r.pick(&[".", "-", "_", "*"]).to_string();
        let letters: Vec<String> = word.chars().map(String::from).collect();
        format!("{}{rest}", letters.join(&sep))
    });
    plain_message(text, copy, &b)
}

/// A fifth of the words spelled out in spaced capitals (`U P D A T E`);
/// a word next to a spelled-out one stays as it is, so that a reader can
/// still tell the words apart.
fn spaced_capitals(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "spaced");
    let mut out = String::new();
    for (i, line) in body(text, copy).split('\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut last = false;
        for (j, w) in line.split(' ').enumerate() {
            if j > 0 {
                out.push(' ');
            }
            let (word, rest) = letters_and_rest(w);
            let spell =
                !last && dressable(w) && word.chars().all(char::is_alphabetic) && r.chance(0.2);
            if spell {
                let letters: Vec<String> = word
                    .chars()
                    .flat_map(char::to_uppercase)
                    .map(String::from)
                    .collect();
                out.push_str(&format!("{}{rest}", letters.join(" ")));
            } else {
                out.push_str(w);
            }
            last = spell;
        }
    }
    plain_message(text, copy, &out)
}

/// A third of the words written backwards between a right-to-left
/// override (U+202E) and its pop (U+202C): every client shows them the
/// right way round.
fn reversed_in_override(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "reversed");
    let b = dress_words(&body(text, copy), &mut r, 0.33, |w, _| {
        let (word, rest) = letters_and_rest(w);
        let backwards: String = word.chars().rev().collect();
        format!("\u{202e}{backwards}\u{202c}{rest}")
    });
    plain_message(text, copy, &b)
}

/// Every word a link (`<a href="http://t123.example/c?...">word</a>`),
/// to one random host per copy with a random query per word: the links
/// outnumber the words of the text.
fn link_on_every_word(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "every_word");
    let host = format!("t{}.example", r.below(1000));
    let paras = html_paragraphs(&body(text, copy), &mut r, 1.0, |w, r| {
        format!(
            "<a href=\"http://{host}/c?u={}&amp;w={}\">{}</a>",
            r.below(1_000_000),
            r.below(1_000_000),
            esc(w)
        )
    });
    html_message(text, copy, &html_doc(&p_elements(&paras)))
}

/// Sentences of ordinary mail, the poison of [`poisoned`] (written for
/// this suite).
const PROSE: &[&str] = &[
    "The meeting on Thursday moved to the small room on the second floor.",
    "My sister says the train was late again because of the leaves on the line.",
    "We finally planted the apple tree by the fence, and the dog approved.",
    "Could you bring the folding chairs when you come over on Saturday?",
    "The library will close early next week while they repaint the reading room.",
    "I found your scarf in the car, the blue one with the little stars.",
    "Dinner was lovely, thank you again for the recipe with the lentils.",
    "The plumber thinks the noise in the pipes comes from the old boiler.",
    "Our team won the quiz night by two points thanks to a question about rivers.",
    "Please remember that the school trip needs the signed form by Monday.",
    "The weather turned cold so we lit the stove for the first time this year.",
    "He is reading a long novel about a family of clockmakers in the mountains.",
    "The bakery on the corner now sells bread with walnuts on Fridays.",
    "I will send the photos from the wedding once I have sorted them.",
    "The garden committee wants volunteers to clear the paths in spring.",
    "Grandmother's birthday lunch is at noon, and she asked for no presents.",
    "The new bus timetable starts in March and the early service is gone.",
    "We saw a heron standing perfectly still in the shallow part of the lake.",
    "The printer in the hallway jams whenever someone uses the thick paper.",
    "Let me know if the invoice from last month reached the right department.",
    "The children built a fort out of cushions and refused to come to dinner.",
    "My neighbour lent me a ladder so I could fix the gutter before the storm.",
    "The museum has an exhibition of old maps that I think you would enjoy.",
    "Tomorrow I am working from home because the office heating is broken.",
];

/// Bayesian poison: a third again as many words of ordinary mail between
/// the paragraphs (split at sentences where the text has few), different
/// sentences in each copy. A reader skips them; the copy still holds the
/// whole text.
fn poisoned(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "poisoned");
    let body = body(text, copy);
    let words = body.split_whitespace().count();
    // Paragraphs, or pieces of about 40 words ending at a sentence.
    let mut pieces: Vec<String> = Vec::new();
    for para in body.split("\n\n").filter(|p| !p.trim().is_empty()) {
        let mut cur = String::new();
        for w in para.split_whitespace() {
            if !cur.is_empty() {
                cur.push(' ');
            }
            cur.push_str(w);
            if cur.split_whitespace().count() >= 40 && w.ends_with('.') {
                pieces.push(std::mem::take(&mut cur));
            }
        }
        if !cur.is_empty() {
            pieces.push(cur);
        }
    }
    let mut poison: Vec<&str> = Vec::new();
    let mut added = 0;
    while added * 3 < words {
        let s = *r.pick(PROSE);
        added += s.split_whitespace().count();
        poison.push(s);
    }
    // The poison in as many paragraphs as there are gaps after pieces.
    let gaps = pieces.len().max(1);
    let mut out = String::new();
    for (i, p) in pieces.iter().enumerate() {
        out.push_str(&wrap(p, 72));
        out.push_str("\n\n");
        let share: Vec<&str> = poison
            .iter()
            .enumerate()
            .filter(|(j, _)| j % gaps == i)
            .map(|(_, s)| *s)
            .collect();
        if !share.is_empty() {
            out.push_str(&wrap(&share.join(" "), 72));
            out.push_str("\n\n");
        }
    }
    plain_message(text, copy, &out)
}

/// Hash-buster lines: twelve random common words above the text and
/// twelve below, in plain sight.
fn buster_lines(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "buster_lines");
    let above = junk_words(&mut r, 12);
    let below = junk_words(&mut r, 12);
    plain_message(
        text,
        copy,
        &format!("{above}\n\n{}\n{below}\n", body(text, copy)),
    )
}

fn base64_plain(text: &str, copy: usize) -> Vec<u8> {
    let b = b64_lines(crlf(&body(text, copy)).as_bytes());
    message(
        text,
        copy,
        "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: base64",
        b.as_bytes(),
    )
}

/// Quoted-printable with ordinary letters escaped at random and soft line
/// breaks inside words.
fn qp(s: &str, rng: &mut Rng) -> String {
    let mut out = String::new();
    for line in s.split('\n') {
        let bytes = line.as_bytes();
        let mut len = 0;
        for (i, &b) in bytes.iter().enumerate() {
            let last = i + 1 == bytes.len();
            let escape = b == b'='
                || b >= 0x80
                || (b < 0x20 && b != b'\t')
                || ((b == b' ' || b == b'\t') && last)
                || (b.is_ascii_alphabetic() && rng.chance(0.2));
            let tok = if escape {
                format!("={b:02X}")
            } else {
                char::from(b).to_string()
            };
            if len + tok.len() > 72 || (len > 16 && b.is_ascii_alphabetic() && rng.chance(0.05)) {
                out.push_str("=\n");
                len = 0;
            }
            out.push_str(&tok);
            len += tok.len();
        }
        out.push('\n');
    }
    out
}

fn quoted_printable(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "qp");
    let b = qp(&body(text, copy), &mut r);
    message(
        text,
        copy,
        "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: quoted-printable",
        b.as_bytes(),
    )
}

/// Windows-1252; a character it lacks becomes `?`.
fn cp1252(s: &str) -> Vec<u8> {
    const HIGH: &[(char, u8)] = &[
        ('€', 0x80),
        ('‚', 0x82),
        ('ƒ', 0x83),
        ('„', 0x84),
        ('…', 0x85),
        ('†', 0x86),
        ('‡', 0x87),
        ('ˆ', 0x88),
        ('‰', 0x89),
        ('Š', 0x8a),
        ('‹', 0x8b),
        ('Œ', 0x8c),
        ('Ž', 0x8e),
        ('‘', 0x91),
        ('’', 0x92),
        ('“', 0x93),
        ('”', 0x94),
        ('•', 0x95),
        ('–', 0x96),
        ('—', 0x97),
        ('˜', 0x98),
        ('™', 0x99),
        ('š', 0x9a),
        ('›', 0x9b),
        ('œ', 0x9c),
        ('ž', 0x9e),
        ('Ÿ', 0x9f),
    ];
    s.chars()
        .map(|c| match u32::from(c) {
            n if n < 0x80 || (0xa0..=0xff).contains(&n) => n as u8,
            _ => HIGH.iter().find(|(h, _)| *h == c).map_or(b'?', |(_, b)| *b),
        })
        .collect()
}

fn windows_1252(text: &str, copy: usize) -> Vec<u8> {
    message(
        text,
        copy,
        "Content-Type: text/plain; charset=windows-1252\nContent-Transfer-Encoding: 8bit",
        &cp1252(&body(text, copy)),
    )
}

fn utf16(text: &str, copy: usize) -> Vec<u8> {
    let mut bytes = vec![0xff, 0xfe];
    for u in crlf(&body(text, copy)).encode_utf16() {
        bytes.extend_from_slice(&u.to_le_bytes());
    }
    message(
        text,
        copy,
        "Content-Type: text/plain; charset=utf-16\nContent-Transfer-Encoding: base64",
        b64_lines(&bytes).as_bytes(),
    )
}

/// format=flowed, paragraphs re-wrapped at a width that differs per copy.
fn flowed_rewrap(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "flowed");
    let width = r.range(36, 70);
    let mut out = String::new();
    for para in body(text, copy).trim_end().split("\n\n") {
        for line in para.split('\n') {
            let words: Vec<&str> = line.split(' ').filter(|w| !w.is_empty()).collect();
            let mut cur = String::new();
            for (i, w) in words.iter().enumerate() {
                cur.push_str(w);
                let end = i + 1 == words.len();
                if end {
                    break;
                }
                cur.push(' ');
                if cur.chars().count() + words[i + 1].chars().count() > width {
                    // A soft break: the line ends in a space.
                    out.push_str(&stuff(&cur));
                    out.push('\n');
                    cur.clear();
                }
            }
            out.push_str(&stuff(&cur));
            out.push('\n');
        }
        out.push('\n');
    }
    message(
        text,
        copy,
        "Content-Type: text/plain; charset=utf-8; format=flowed; delsp=no\n\
         Content-Transfer-Encoding: 8bit",
        out.as_bytes(),
    )
}

/// RFC 3676 space-stuffing.
fn stuff(line: &str) -> String {
    if line.starts_with([' ', '>']) || line.starts_with("From ") {
        format!(" {line}")
    } else {
        line.to_owned()
    }
}

fn boundary(text: &str, copy: usize, kind: &str) -> String {
    format!(
        "----=_Part_{}_{:08x}",
        copy,
        rng(text, copy, kind).next_u64() as u32
    )
}

fn split_parts(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "split");
    let b = body(text, copy);
    let b = b.trim_end();
    let paras: Vec<&str> = b.split("\n\n").collect();
    let n = r.range(2, 3);
    // Split at paragraph boundaries when there are enough, else at lines.
    let (units, sep): (Vec<&str>, &str) = if paras.len() >= n {
        (paras, "\n\n")
    } else {
        (b.split('\n').collect(), "\n")
    };
    let mut cuts: Vec<usize> = (1..units.len()).collect();
    while cuts.len() > n - 1 {
        cuts.remove(r.below(cuts.len()));
    }
    let mut parts = Vec::new();
    let mut start = 0;
    for c in cuts.into_iter().chain([units.len()]) {
        let headers = if r.chance(0.5) {
            "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit\n\
             Content-Disposition: inline"
        } else {
            "Content-Type: text/plain; charset=utf-8\nContent-Transfer-Encoding: 8bit"
        };
        parts.push((headers.to_owned(), units[start..c].join(sep)));
        start = c;
    }
    let bd = boundary(text, copy, "split");
    message(
        text,
        copy,
        &format!("Content-Type: multipart/mixed; boundary=\"{bd}\""),
        multipart(&bd, &parts).as_bytes(),
    )
}

fn nested_rfc822(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "nested");
    let inner = String::from_utf8(plain(text, copy)).unwrap();
    let cover = r.pick(&[
        "Forwarding the message below as an attachment.",
        "See the attached message.",
        "FYI, the original is attached.",
    ]);
    let parts = [
        (PLAIN.to_owned(), format!("{cover}\n")),
        (
            "Content-Type: message/rfc822\nContent-Disposition: inline".to_owned(),
            inner,
        ),
    ];
    let bd = boundary(text, copy, "nested");
    message(
        text,
        copy,
        &format!("Content-Type: multipart/mixed; boundary=\"{bd}\""),
        multipart(&bd, &parts).as_bytes(),
    )
}

/// A one-line `cover` body and one attachment of type `ctype` named
/// `name`, in Base64: the form of the dresses that hide the text outside
/// the body (`kind` seeds the MIME boundary).
fn under_cover(
    text: &str,
    copy: usize,
    kind: &str,
    cover: &str,
    ctype: &str,
    name: &str,
    bytes: &[u8],
) -> Vec<u8> {
    let parts = [
        (PLAIN.to_owned(), format!("{cover}\n")),
        (
            format!(
                "Content-Type: {ctype}; name=\"{name}\"\n\
                 Content-Transfer-Encoding: base64\n\
                 Content-Disposition: attachment; filename=\"{name}\""
            ),
            b64_lines(bytes),
        ),
    ];
    let bd = boundary(text, copy, kind);
    message(
        text,
        copy,
        &format!("Content-Type: multipart/mixed; boundary=\"{bd}\""),
        multipart(&bd, &parts).as_bytes(),
    )
}

/// The text as an attachment under a one-line body: an HTML page
/// ("invoice.html", the usual phishing form) or a text file, base64, named
/// per recipient.
fn attached_page(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "attached");
    let cover = r.pick(&[
        "Please see the attached document.",
        "Your statement is attached.",
        "Open the attachment for details.",
    ]);
    let attachment = if r.chance(0.5) {
        let mut pr = rng(text, copy, "attached_html");
        let paras = html_paragraphs(&body(text, copy), &mut pr, 0.0, |w, _| esc(w));
        (
            "text/html; charset=utf-8",
            "html",
            html_doc(&p_elements(&paras)),
        )
    } else {
        ("text/plain; charset=utf-8", "txt", body(text, copy))
    };
    let (ctype, ext, content) = attachment;
    under_cover(
        text,
        copy,
        "attached",
        cover,
        ctype,
        &format!("notice_{copy}.{ext}"),
        content.as_bytes(),
    )
}

/// The text (named and numbered for the recipient) in an attached PDF,
/// one line of the page per line of the wrapped text, under a one-line
/// body.
pub fn attached_pdf(text: &str, copy: usize) -> Vec<u8> {
    let cover = *rng(text, copy, "attached_pdf").pick(&[
        "Please see the attached document.",
        "Your statement is attached.",
        "Open the attachment for details.",
    ]);
    let page = body(text, copy);
    let lines: Vec<&str> = page.lines().collect();
    under_cover(
        text,
        copy,
        "attached_pdf",
        cover,
        "application/pdf",
        &format!("statement_{copy}.pdf"),
        &testkit::pdf(&lines, ""),
    )
}

// -------------------------------------------------------------------- HTML

fn html_basic(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "html_basic");
    let paras = html_paragraphs(&body(text, copy), &mut r, 0.0, |w, _| esc(w));
    html_message(text, copy, &html_doc(&p_elements(&paras)))
}

fn html_stray_quote(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "stray_quote");
    let paras = html_paragraphs(&body(text, copy), &mut r, 0.0, |w, _| esc(w));
    let mut out = String::from("<table width=\"100%\"\">\n");
    for lines in &paras {
        out.push_str(&format!("<tr><td>{}</td></tr>\n", lines.join("<br>\n")));
    }
    out.push_str("</table>\n");
    html_message(text, copy, &out)
}

/// A byte-order mark, then a malformed first tag. In `<p class=">...">`
/// the stray quote opens an attribute value that runs to the next quote:
/// a browser shows none of what is inside it (here per-copy junk, which a
/// scanner that ends tags at the first `>` takes for text), so the quote is
/// closed before the text starts. `<div style="color:#000"">`: a stray
/// quote after a value, which hides nothing.
fn html_bom(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "bom");
    let paras = html_paragraphs(&body(text, copy), &mut r, 0.0, |w, _| esc(w));
    let inner: Vec<String> = paras.iter().map(|l| l.join("<br>\n")).collect();
    let inner = inner.join("<br><br>\n");
    let out = if copy.is_multiple_of(2) {
        let n = r.range(3, 8);
        let junk = junk_words(&mut r, n);
        format!("\u{feff}<p class=\">{junk}\">\n{inner}\n</p>\n")
    } else {
        format!("\u{feff}<div style=\"color:#000\"\">\n{inner}\n</div>\n")
    };
    html_message(text, copy, &out)
}

fn inline_spans(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "spans");
    let paras = html_paragraphs(&body(text, copy), &mut r, 0.35, |w, r| {
        let cuts = r.range(1, 3);
        let mut out = String::new();
        for piece in split_chars(w, r, cuts) {
            if r.chance(0.7) {
                let open = r.pick(&[
                    "<span>",
                    "<span class=\"t\">",
                    "<span style=\"color:inherit\">",
                ]);
                out.push_str(&format!("{open}{}</span>", esc(&piece)));
            } else {
                out.push_str(&esc(&piece));
            }
        }
        out
    });
    html_message(text, copy, &html_doc(&p_elements(&paras)))
}

fn entities_in_words(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "entities");
    let paras = html_paragraphs(&body(text, copy), &mut r, 0.35, |w, r| {
        let chars: Vec<char> = w.chars().collect();
        let n = r.range(1, 3);
        let at: Vec<usize> = (0..n).map(|_| r.below(chars.len())).collect();
        let mut out = String::new();
        for (i, c) in chars.iter().enumerate() {
            if at.contains(&i) && c.is_alphanumeric() {
                let cp = u32::from(*c);
                out.push_str(&match r.below(3) {
                    0 => format!("&#{cp};"),
                    1 => format!("&#x{cp:x};"),
                    _ => format!("&#X{cp:X};"),
                });
            } else {
                esc_char(*c, &mut out);
            }
        }
        out
    });
    html_message(text, copy, &html_doc(&p_elements(&paras)))
}

fn comments_in_words(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "comments");
    let paras = html_paragraphs(&body(text, copy), &mut r, 0.35, |w, r| {
        let pieces = split_chars(w, r, 1);
        let comment = if r.chance(0.3) {
            "<!---->".to_owned()
        } else {
            let n = r.range(1, 3);
            format!("<!-- {} -->", junk_words(r, n))
        };
        pieces
            .iter()
            .map(|p| esc(p))
            .collect::<Vec<_>>()
            .join(&comment)
    });
    html_message(text, copy, &html_doc(&p_elements(&paras)))
}

fn wbr_and_letter_split(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "wbr");
    let paras = html_paragraphs(&body(text, copy), &mut r, 0.35, |w, r| {
        if r.chance(0.5) {
            let cuts = r.range(1, 2);
            split_chars(w, r, cuts)
                .iter()
                .map(|p| esc(p))
                .collect::<Vec<_>>()
                .join("<wbr>")
        } else {
            let tag = *r.pick(&["font", "b", "i", "span"]);
            w.chars()
                .map(|c| {
                    let mut s = format!("<{tag}>");
                    esc_char(c, &mut s);
                    s.push_str(&format!("</{tag}>"));
                    s
                })
                .collect()
        }
    });
    html_message(text, copy, &html_doc(&p_elements(&paras)))
}

fn anchor_wrap(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "anchor");
    let b = body(text, copy);
    // Inside one link, links cannot nest: URLs stay text.
    let inner: Vec<String> = b
        .trim()
        .split("\n\n")
        .map(|p| esc(p).replace('\n', "<br>\n"))
        .collect();
    let out = html_doc(&format!(
        "<a href=\"https://{}/c/{}\" style=\"color:#000000;text-decoration:none\">\n{}\n</a>\n",
        host(text),
        r.below(1_000_000),
        inner.join("<br><br>\n")
    ));
    html_message(text, copy, &out)
}

fn outlook_html(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "outlook");
    let paras = html_paragraphs(&body(text, copy), &mut r, 0.0, |w, _| esc(w));
    let mut out = String::from(
        "<html xmlns:v=\"urn:schemas-microsoft-com:vml\" \
         xmlns:o=\"urn:schemas-microsoft-com:office:office\" \
         xmlns:w=\"urn:schemas-microsoft-com:office:word\" \
         xmlns:m=\"http://schemas.microsoft.com/office/2004/12/omml\" \
         xmlns=\"http://www.w3.org/TR/REC-html40\">\n<head>\n\
         <meta http-equiv=\"Content-Type\" content=\"text/html; charset=utf-8\">\n\
         <meta name=\"Generator\" content=\"Microsoft Word 15 (filtered medium)\">\n\
         <style><!--\n/* Font Definitions */\n@font-face\n\t{font-family:\"Cambria Math\";\n\
         \tpanose-1:2 4 5 3 5 4 6 3 2 4;}\n@font-face\n\t{font-family:Calibri;\n\
         \tpanose-1:2 15 5 2 2 2 4 3 2 4;}\n/* Style Definitions */\n\
         p.MsoNormal, li.MsoNormal, div.MsoNormal\n\t{margin:0cm;\n\tfont-size:11.0pt;\n\
         \tfont-family:\"Calibri\",sans-serif;\n\tmso-fareast-language:EN-US;}\n\
         a:link, span.MsoHyperlink\n\t{mso-style-priority:99;\n\tcolor:#0563C1;\n\
         \ttext-decoration:underline;}\nspan.EmailStyle17\n\t{mso-style-type:personal-compose;\n\
         \tfont-family:\"Calibri\",sans-serif;\n\tcolor:windowtext;}\n.MsoChpDefault\n\
         \t{mso-style-type:export-only;\n\tfont-family:\"Calibri\",sans-serif;}\n\
         @page WordSection1\n\t{size:612.0pt 792.0pt;\n\tmargin:72.0pt 72.0pt 72.0pt 72.0pt;}\n\
         div.WordSection1\n\t{page:WordSection1;}\n--></style>\
         <!--[if gte mso 9]><xml>\n<o:shapedefaults v:ext=\"edit\" spidmax=\"1026\" />\n\
         </xml><![endif]-->\n</head>\n\
         <body lang=\"EN-GB\" link=\"#0563C1\" vlink=\"#954F72\" style=\"word-wrap:break-word\">\n\
         <div class=\"WordSection1\">\n",
    );
    for (i, lines) in paras.iter().enumerate() {
        if i > 0 {
            out.push_str("<p class=\"MsoNormal\"><o:p>&nbsp;</o:p></p>\n");
        }
        for line in lines {
            out.push_str(&format!("<p class=\"MsoNormal\">{line}<o:p></o:p></p>\n"));
        }
    }
    out.push_str("</div>\n</body>\n</html>\n");
    html_message(text, copy, &out)
}

/// Per-copy junk where a client does not show it: the title, a style sheet
/// comment, meta keywords, comments between paragraphs.
fn head_junk(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "head_junk");
    let n = body(text, copy).split_whitespace().count();
    let paras = html_paragraphs(&body(text, copy), &mut r, 0.0, |w, _| esc(w));
    let mut out = format!(
        "<html>\n<head>\n<title>{}</title>\n<meta name=\"keywords\" content=\"{}\">\n\
         <style type=\"text/css\">\n/* {} */\nbody {{ font-family: Arial, sans-serif; }}\n\
         .{} {{ color: #333333; }}\n</style>\n</head>\n<body>\n",
        junk_words(&mut r, 6),
        junk_words(&mut r, n / 4),
        junk_words(&mut r, n / 4),
        junk_words(&mut r, 1),
    );
    for lines in &paras {
        let k = r.range(3, 12);
        out.push_str(&format!(
            "<!-- {} -->\n<p>{}</p>\n",
            junk_words(&mut r, k),
            lines.join("<br>\n")
        ));
    }
    out.push_str("</body>\n</html>\n");
    html_message(text, copy, &out)
}

/// An inline element the recipient does not see, holding `words`.
fn hidden(rng: &mut Rng, words: &str) -> String {
    match rng.below(6) {
        0 => format!("<span style=\"display:none\">{words}</span>"),
        1 => format!("<span style=\"font-size:0\">{words}</span>"),
        2 => format!("<span style=\"font-size:0px;line-height:0\">{words}</span>"),
        3 => format!("<font color=\"#ffffff\">{words}</font>"),
        4 => format!("<span style=\"color:#ffffff\">{words}</span>"),
        _ => format!("<span style=\"visibility:hidden\">{words}</span>"),
    }
}

/// Hash-buster words hidden after some words and between paragraphs, about
/// as many as the text has.
fn hidden_junk(text: &str, copy: usize) -> Vec<u8> {
    let inner = junk_between(text, copy, "hidden", hidden, |r, words| match r.below(3) {
        0 => format!("<div style=\"display:none\">{words}</div>\n"),
        1 => format!("<p style=\"font-size:0;color:#ffffff\">{words}</p>\n"),
        _ => format!("<div style=\"visibility:hidden;height:0\">{words}</div>\n"),
    });
    let out = format!(
        "<html>\n<body bgcolor=\"#ffffff\" style=\"background-color:#ffffff\">\n{inner}</body>\n</html>\n"
    );
    html_message(text, copy, &out)
}

/// The paragraphs of the text as HTML with junk words after about half of
/// the words (hidden by `after_word`, given the junk with a leading space)
/// and a block of junk after each paragraph (by `after_para`).
fn junk_between(
    text: &str,
    copy: usize,
    salt: &str,
    after_word: fn(&mut Rng, &str) -> String,
    after_para: fn(&mut Rng, &str) -> String,
) -> String {
    let mut r = rng(text, copy, salt);
    let paras = html_paragraphs(&body(text, copy), &mut r, 0.5, |w, r| {
        let n = r.range(1, 3);
        let words = junk_words(r, n);
        format!("{}{}", esc(w), after_word(r, &format!(" {words}")))
    });
    let mut inner = String::new();
    for lines in &paras {
        inner.push_str(&format!("<p>{}</p>\n", lines.join("<br>\n")));
        let n = r.range(4, 10);
        let words = junk_words(&mut r, n);
        inner.push_str(&after_para(&mut r, &words));
    }
    inner
}

/// Junk hidden by the other ways a page hides text: transparent or
/// zero-alpha colour, off-screen positions and indents, empty clips, zero
/// scale, a percent font size.
fn offscreen(rng: &mut Rng, words: &str) -> String {
    let style = *rng.pick(&[
        "color:transparent",
        "color:rgba(255,255,255,0)",
        "-webkit-text-fill-color:transparent",
        "position:absolute;left:-9999px",
        "position:fixed;top:-5000px",
        "display:inline-block;text-indent:-10000px;overflow:hidden",
        "display:inline-block;margin-left:-9999px",
        "position:absolute;clip:rect(0 0 0 0)",
        "position:absolute;clip:rect(1px, 1px, 1px, 1px)",
        "clip-path:inset(50%)",
        "display:inline-block;transform:scale(0)",
        "font-size:1%",
        "filter:opacity(0)",
    ]);
    format!("<span style=\"{style}\">{words}</span>")
}

/// [`hidden_junk`] with the techniques of [`offscreen`].
fn offscreen_junk(text: &str, copy: usize) -> Vec<u8> {
    let inner = junk_between(text, copy, "offscreen", offscreen, |r, words| {
        format!("<div>{}</div>\n", offscreen(r, words))
    });
    html_message(text, copy, &html_doc(&inner))
}

/// Junk hidden by the page's style sheet, as most hidden text in spam is:
/// random class names per copy, rules by class, id, element and
/// descendant.
fn sheet_hidden_junk(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "sheet");
    let class = format!("c{:06x}", r.next_u64() as u32 & 0xff_ffff);
    let box_class = format!("b{:06x}", r.next_u64() as u32 & 0xff_ffff);
    let id = format!("i{:06x}", r.next_u64() as u32 & 0xff_ffff);
    let hide = *r.pick(&[
        "display:none",
        "font-size:0",
        "visibility:hidden",
        "color:#ffffff",
    ]);
    let sheet = format!(
        "<style type=\"text/css\">\nbody {{ background:#ffffff; font-family: Arial }}\n\
         .{class} {{ {hide} }}\n#{id} {{ display: none }}\n.{box_class} em {{ display:none }}\n\
         p {{ margin: 0 0 1em }}\n</style>"
    );
    let paras = html_paragraphs(&body(text, copy), &mut r, 0.5, |w, r| {
        let n = r.range(1, 3);
        let words = junk_words(r, n);
        let junk = match r.below(3) {
            0 => format!("<span class=\"x {class}\"> {words}</span>"),
            1 => format!("<span class=\"{box_class}\"><em> {words}</em></span>"),
            _ => format!("<font class=\"{class}\"> {words}</font>"),
        };
        format!("{}{junk}", esc(w))
    });
    let mut inner = String::new();
    for (i, lines) in paras.iter().enumerate() {
        inner.push_str(&format!("<p>{}</p>\n", lines.join("<br>\n")));
        let n = r.range(4, 10);
        let words = junk_words(&mut r, n);
        inner.push_str(&if i == 0 {
            format!("<div id=\"{id}\">{words}</div>\n")
        } else {
            format!("<div class=\"{class}\">{words}</div>\n")
        });
    }
    let out = format!("<html>\n<head>{sheet}</head>\n<body>\n{inner}</body>\n</html>\n");
    html_message(text, copy, &out)
}

/// Junk hidden by the page's style sheet through selectors of every
/// kind a browser reads: long chains, child and sibling combinators,
/// attributes, places among siblings (from the end too), `:empty`,
/// `:not()` and `:is()`, names written with escapes; the names, the hiding property and the selector's form
/// drawn per copy.
fn selector_hidden_junk(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "selector");
    let name = |r: &mut Rng, c: char| format!("{c}{:06x}", r.next_u64() as u32 & 0xff_ffff);
    let (wrap, col, junk, block) = (
        name(&mut r, 'w'),
        name(&mut r, 'c'),
        name(&mut r, 'k'),
        name(&mut r, 'j'),
    );
    let hide = *r.pick(&[
        "display:none",
        "font-size:0",
        "visibility:hidden",
        "color:#ffffff",
        "opacity:0",
    ]);
    // `.\6b 1a2b3c`: the class's first letter as a CSS escape.
    let escaped = |n: &str| {
        let first = n.bytes().next().map_or(0, u32::from);
        format!("\\{first:x} {}", n.get(1..).unwrap_or(""))
    };
    let inline_rule = match r.below(7) {
        0 => format!("#{wrap} .{col} p span.{junk}"),
        1 => format!("div > div.{col} > p > span[data-n^=\"x\"]"),
        2 => format!("body div .{col} p b + span"),
        3 => format!("#{wrap} p i ~ span.{junk}"),
        4 => format!(".{col} p :is(em, span).{junk}:not(.v)"),
        5 => format!("#{wrap} p i:empty + b + span"),
        _ => format!("#{wrap} .{} p span.{}", escaped(&col), escaped(&junk)),
    };
    let block_rule = match r.below(5) {
        0 => format!("#{wrap} > div > div.{block}:not(.keep)"),
        1 => format!(
            "#{wrap} p ~ div[class*=\"{}\"]",
            block.get(1..5).unwrap_or("")
        ),
        2 => format!("#{wrap} > :nth-child(n+1 of x), #{wrap} div.{col} > div.{block}"),
        3 => format!("#{wrap} .{col} > :nth-last-child(odd)"),
        _ => format!("html body #{wrap} div.{block}"),
    };
    let sheet = format!(
        "<style type=\"text/css\">\nbody {{ background:#ffffff; font-family: Arial }}\n\
         {inline_rule} {{ {hide} }}\n{block_rule} {{ display:none }}\n\
         p {{ margin: 0 0 1em }} a:hover {{ color: red }}\n</style>"
    );
    let paras = html_paragraphs(&body(text, copy), &mut r, 0.5, |w, r| {
        let n = r.range(1, 3);
        let words = junk_words(r, n);
        let tag = *r.pick(&["span", "em"]);
        let tag = if inline_rule.contains(":is(") {
            tag
        } else {
            "span"
        };
        let serial = r.below(1_000_000);
        format!(
            "{}<i></i><b></b><{tag} class=\"{junk}\" data-n=\"x{serial}\"> {words}</{tag}>",
            esc(w)
        )
    });
    let mut inner = String::new();
    for lines in &paras {
        inner.push_str(&format!("<p>{}</p>\n", lines.join("<br>\n")));
        let n = r.range(4, 10);
        let words = junk_words(&mut r, n);
        inner.push_str(&format!("<div class=\"{block}\">{words}</div>\n"));
    }
    let out = format!(
        "<html>\n<head>{sheet}</head>\n<body>\n<div id=\"{wrap}\"><div class=\"{col}\">\n\
         {inner}</div></div></body>\n</html>\n"
    );
    html_message(text, copy, &out)
}

/// The whole page hidden (`visibility:hidden` or `font-size:0`, as mail
/// layouts set on containers) and each line of the text shown again by
/// its own style, junk words left hidden between them.
fn restored_text(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "restored");
    let (outer, inner) = *r.pick(&[
        ("visibility:hidden", "visibility:visible"),
        ("font-size:0", "font-size:15px"),
        (
            "font-size:0px;line-height:0",
            "font-size:11pt;line-height:1.4",
        ),
    ]);
    let paras = html_paragraphs(&body(text, copy), &mut r, 0.0, |w, _| esc(w));
    let mut inner_html = String::new();
    for lines in &paras {
        inner_html.push_str("<p>");
        for line in lines {
            let n = r.range(2, 5);
            let words = junk_words(&mut r, n);
            inner_html.push_str(&format!(
                "<span style=\"{inner}\">{line}</span> {words}<br>\n"
            ));
        }
        inner_html.push_str("</p>\n");
    }
    html_message(
        text,
        copy,
        &html_doc(&format!("<div style=\"{outer}\">\n{inner_html}</div>\n")),
    )
}

fn html_only_alternative(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "alternative");
    let decoy = r.pick(&[
        "To view this message, please use an HTML-capable email client.",
        "Having trouble reading this email? View it in your browser.",
        "The weather tomorrow will be cloudy with a chance of rain.",
        "This newsletter is best viewed in HTML.",
    ]);
    let paras = html_paragraphs(&body(text, copy), &mut r, 0.0, |w, _| esc(w));
    let parts = [
        (PLAIN.to_owned(), format!("{decoy}\n")),
        (HTML.to_owned(), html_doc(&p_elements(&paras))),
    ];
    let bd = boundary(text, copy, "alternative");
    message(
        text,
        copy,
        &format!("Content-Type: multipart/alternative; boundary=\"{bd}\""),
        multipart(&bd, &parts).as_bytes(),
    )
}

// ---------------------------------------------------------------- pictures

/// The text as a picture: a banner, then each word a bar as long as the
/// word, in lines as a page would wrap them, in colours made from the
/// text. What a campaign that hides its text in a picture sends.
fn picture_of(text: &str) -> image::RgbImage {
    use image::{Rgb, RgbImage};
    let mut r = rng(text, 0, "picture");
    let mut colour = |lo: usize, span: usize| {
        Rgb([
            (lo + r.below(span)) as u8,
            (lo + r.below(span)) as u8,
            (lo + r.below(span)) as u8,
        ])
    };
    let (ground, ink, banner) = (colour(200, 56), colour(0, 90), colour(0, 256));
    let (w, h) = (480u32, 320u32);
    let mut img = RgbImage::from_pixel(w, h, ground);
    for y in 0..48 {
        for x in 0..w {
            img.put_pixel(x, y, banner);
        }
    }
    let (mut x, mut y) = (12u32, 60u32);
    for word in text.split_whitespace() {
        let len = (word.chars().count() as u32).clamp(1, 20) * 6;
        if x + len > w - 12 {
            x = 12;
            y += 14;
        }
        if y + 9 > h - 8 {
            break;
        }
        for yy in y..y + 9 {
            for xx in x..x + len {
                img.put_pixel(xx, yy, ink);
            }
        }
        x += len + 6;
    }
    img
}

/// The picture of copy `copy` with `noise` pixels set to random colours
/// (every copy then has its own bytes), encoded as PNG, JPEG or GIF (one
/// format per text), and its MIME type and file extension.
pub fn picture(text: &str, copy: usize, noise: usize) -> (Vec<u8>, &'static str, &'static str) {
    use image::{ImageFormat, Rgb};
    let mut img = picture_of(text);
    let mut r = rng(text, copy, "picture_noise");
    for _ in 0..noise {
        let (x, y) = (
            r.below(img.width() as usize),
            r.below(img.height() as usize),
        );
        let c = r.next_u64().to_le_bytes();
        img.put_pixel(x as u32, y as u32, Rgb([c[0], c[1], c[2]]));
    }
    let (format, mime, ext) = match fnv(text.as_bytes()) % 3 {
        0 => (ImageFormat::Png, "image/png", "png"),
        1 => (ImageFormat::Jpeg, "image/jpeg", "jpg"),
        _ => (ImageFormat::Gif, "image/gif", "gif"),
    };
    let mut out = Vec::new();
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut std::io::Cursor::new(&mut out), format)
        .expect("a picture encodes");
    (out, mime, ext)
}

/// The text in an attached picture (with `noise` pixels changed) under a
/// one-line body, the same line in every copy.
pub fn picture_message(text: &str, copy: usize, noise: usize) -> Vec<u8> {
    let cover = *rng(text, 0, "picture_cover").pick(&[
        "Please see the picture below.",
        "Our offer is in the attached image.",
        "Open the picture for details.",
    ]);
    let (bytes, mime, ext) = picture(text, copy, noise);
    under_cover(
        text,
        copy,
        "picture",
        cover,
        mime,
        &format!("offer_{copy}.{ext}"),
        &bytes,
    )
}

/// QR-code phishing: a line of text and a picture of a QR code that holds
/// the campaign's link with the recipient's number in it, drawn at its
/// own size and place in each copy, with speckles: no two copies share a
/// picture, and the line is too short to be a campaign's text.
pub fn qr_message(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "qr");
    let cover = *rng(text, 0, "qr_cover").pick(&[
        "Scan the code below to keep your mailbox.",
        "Your document is waiting: scan to open it.",
        "Scan with your phone camera to confirm.",
    ]);
    let url = format!("https://{}/verify?id={}", host(text), tracking(text, copy));
    let code = qrcode::QrCode::new(url.as_bytes()).expect("encodes");
    let modules = code.width() as u32;
    let colors = code.to_colors();
    let scale = 4 + r.below(5) as u32;
    // The quiet zone of four modules a QR code is drawn with, and more.
    let (dx, dy) = (
        4 * scale + r.below(60) as u32,
        4 * scale + r.below(60) as u32,
    );
    let (w, h) = (
        modules * scale + 8 * scale + 60,
        modules * scale + 8 * scale + 80,
    );
    let mut img = image::GrayImage::from_pixel(w, h, image::Luma([240 + r.below(16) as u8]));
    for y in 0..modules * scale {
        for x in 0..modules * scale {
            let i = ((y / scale) * modules + x / scale) as usize;
            if colors[i] == qrcode::Color::Dark {
                img.put_pixel(x + dx, y + dy, image::Luma([r.below(40) as u8]));
            }
        }
    }
    for _ in 0..60 {
        let (x, y) = (r.below(w as usize) as u32, r.below(h as usize) as u32);
        img.put_pixel(x, y, image::Luma([128]));
    }
    let mut png = Vec::new();
    image::DynamicImage::ImageLuma8(img)
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .expect("encodes");
    under_cover(text, copy, "qr", cover, "image/png", "code.png", &png)
}

/// Where the suite's font is (Debian's fonts-dejavu-core).
pub const FONT: &str = "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf";

/// Image spam: the text the recipient reads ([`body`], with its per-copy
/// greeting and number) drawn into a picture, each copy at its own size
/// (15 to 24 pixels), width, offset and colours (dark on light, or light
/// on dark), with speckles, so that no two copies share a pixel grid or a
/// perceptual hash; under a one-line body, as an inline picture
/// (multipart/related) or an attachment. Needs [`FONT`].
pub fn text_picture_message(text: &str, copy: usize) -> Vec<u8> {
    let (img, mut r) = text_picture_image(text, copy);
    let mut png = Vec::new();
    image::DynamicImage::ImageRgb8(img)
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .expect("encodes");
    let cover = *rng(text, 0, "text_picture_cover").pick(&[
        "Please see the picture below.",
        "If you cannot see this offer, turn on pictures.",
        "Details inside.",
    ]);
    if r.below(2) == 0 {
        return under_cover(
            text,
            copy,
            "text_picture",
            cover,
            "image/png",
            &format!("offer{copy}.png"),
            &png,
        );
    }
    // Inline, as a page shows it.
    let bd = boundary(text, copy, "related");
    let cid = format!("img{}@{}", tracking(text, copy), host(text));
    let parts = [
        (
            "Content-Type: text/html; charset=utf-8".to_owned(),
            format!("<html><body><p>{cover}</p><img src=\"cid:{cid}\"></body></html>\n"),
        ),
        (
            format!(
                "Content-Type: image/png\n\
                 Content-Transfer-Encoding: base64\n\
                 Content-ID: <{cid}>\n\
                 Content-Disposition: inline"
            ),
            b64_lines(&png),
        ),
    ];
    message(
        text,
        copy,
        &format!("Content-Type: multipart/related; boundary=\"{bd}\""),
        multipart(&bd, &parts).as_bytes(),
    )
}

/// The text drawn as a scanned page: the picture of
/// [`text_picture_message`] as the one picture of a PDF page without text
/// (a JPEG in even copies, deflated grey samples in odd ones), attached
/// under a one-line body.
pub fn scanned_pdf_message(text: &str, copy: usize) -> Vec<u8> {
    let (img, _) = text_picture_image(text, copy);
    let (w, h) = img.dimensions();
    let pdf = if copy.is_multiple_of(2) {
        let mut jpeg = Vec::new();
        image::codecs::jpeg::JpegEncoder::new_with_quality(&mut jpeg, 85)
            .encode_image(&img)
            .expect("encodes");
        testkit::pdf_of_picture(w, h, "DCTDecode", "DeviceRGB", &jpeg)
    } else {
        use std::io::Write as _;
        let grey = image::DynamicImage::ImageRgb8(img).to_luma8();
        let mut z = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::default());
        z.write_all(grey.as_raw()).expect("deflates");
        testkit::pdf_of_picture(
            w,
            h,
            "FlateDecode",
            "DeviceGray",
            &z.finish().expect("deflates"),
        )
    };
    attached_document(text, copy, "scan", "application/pdf", "pdf", &pdf)
}

/// A font cipher (issue 65): the text written through a font of the page
/// whose character map each copy permutes (its own key: the code points of
/// no two copies agree), so that the page shows the text and its code
/// points hold none of it. The font (DejaVu Sans or Serif with a rewritten
/// `cmap`) is written into the page as a `data:` address, TrueType, WOFF or
/// WOFF2,
/// and set by the body's style, a class of the sheet, `<font face>`, the
/// `font` shorthand or after a family no client has. Needs [`FONT`].
pub fn font_cipher_message(text: &str, copy: usize) -> Vec<u8> {
    static FONTS: std::sync::OnceLock<[Vec<u8>; 2]> = std::sync::OnceLock::new();
    let fonts = FONTS.get_or_init(|| {
        [
            std::fs::read(FONT).expect("the DejaVu font"),
            std::fs::read(FONT.replace("DejaVuSans.ttf", "DejaVuSerif.ttf"))
                .expect("the DejaVu font"),
        ]
    });
    let mut r = rng(text, copy, "font_cipher");
    let key = testkit::fonts::cipher_key(r.next_u64());
    let serif = r.below(2);
    let font = testkit::fonts::cipher_font(&fonts[serif], &key);
    let (mime, bytes) = match r.below(3) {
        0 => ("font/ttf", font),
        // WOFF2 of the smaller font (Sans is past the reader's bound).
        1 if serif == 1 => ("font/woff2", testkit::fonts::woff2(&font)),
        _ => ("application/font-woff", testkit::fonts::woff(&font)),
    };
    let family = format!("F{}", r.below(1_000_000));
    let face = format!(
        "@font-face {{ font-family: '{family}'; src: url(data:{mime};base64,{}) format('truetype'); }}\n",
        base64(&bytes)
    );
    let paras: Vec<Vec<String>> = paragraphs(text, copy)
        .iter()
        .map(|lines| {
            lines
                .iter()
                .map(|l| esc(&testkit::fonts::encode(l, &key)))
                .collect()
        })
        .collect();
    let inner = p_elements(&paras);
    let (rule, body) = match r.below(5) {
        0 => (
            String::new(),
            format!("<body style=\"font-family: '{family}', Arial\">{inner}</body>"),
        ),
        1 => (
            format!(".t {{ font-family: \"{family}\", sans-serif; }}"),
            format!("<body><div class=\"t\">{inner}</div></body>"),
        ),
        2 => (
            String::new(),
            format!("<body><font face=\"{family}\">{inner}</font></body>"),
        ),
        3 => (
            format!("p {{ font: 16px/1.4 {family}, serif; }}"),
            format!("<body>{inner}</body>"),
        ),
        _ => (
            format!(
                "body {{ font-family: NoSuchFont{}, {family}; }}",
                r.below(1000)
            ),
            format!("<body>{inner}</body>"),
        ),
    };
    html_message(
        text,
        copy,
        &format!("<html><head><style>\n{face}{rule}\n</style></head>{body}</html>"),
    )
}

/// The picture of [`text_picture_message`] as a PNG file
/// (`tests/ocr_flood.rs`).
#[allow(dead_code)]
pub fn text_picture_png(text: &str, copy: usize) -> Vec<u8> {
    let mut png = Vec::new();
    image::DynamicImage::ImageRgb8(text_picture_image(text, copy).0)
        .write_to(&mut std::io::Cursor::new(&mut png), image::ImageFormat::Png)
        .expect("encodes");
    png
}

/// The text drawn into a picture, each copy at its own size, width,
/// offset and colours, with speckles; and the copy's generator after it.
fn text_picture_image(text: &str, copy: usize) -> (image::RgbImage, Rng) {
    use ab_glyph::{Font, FontRef, PxScale, ScaleFont};
    use image::Rgb;
    static FONT_BYTES: std::sync::OnceLock<Vec<u8>> = std::sync::OnceLock::new();
    let bytes = FONT_BYTES.get_or_init(|| std::fs::read(FONT).expect("the DejaVu font"));
    let font = FontRef::try_from_slice(bytes).expect("a font");
    let mut r = rng(text, copy, "text_picture");
    let size = 15.0 + r.below(10) as f32;
    let font = font.as_scaled(PxScale::from(size));
    let width = 520 + r.below(240) as u32;
    let (left, top) = (6.0 + r.below(40) as f32, 6.0 + r.below(40) as f32);
    let line_h = font.height() + font.line_gap() + r.below(6) as f32;
    // Lines as a page would wrap them at the picture's width.
    let mut lines: Vec<String> = Vec::new();
    for para in body(text, copy).split("\n\n") {
        let mut line = String::new();
        for w in para.split_whitespace() {
            let candidate = if line.is_empty() {
                w.to_owned()
            } else {
                format!("{line} {w}")
            };
            let advance: f32 = candidate
                .chars()
                .map(|c| font.h_advance(font.glyph_id(c)))
                .sum();
            if advance > (width as f32 - 2.0 * left) && !line.is_empty() {
                lines.push(std::mem::replace(&mut line, w.to_owned()));
            } else {
                line = candidate;
            }
        }
        lines.push(line);
        lines.push(String::new());
    }
    let height = (top * 2.0 + line_h * lines.len() as f32) as u32;
    let light = |r: &mut Rng| 200 + r.below(56) as u8;
    let dark = |r: &mut Rng| r.below(90) as u8;
    let inverted = r.below(4) == 0;
    let (ground, ink) = if inverted {
        (
            [dark(&mut r), dark(&mut r), dark(&mut r)],
            [light(&mut r), light(&mut r), light(&mut r)],
        )
    } else {
        (
            [light(&mut r), light(&mut r), light(&mut r)],
            [dark(&mut r), dark(&mut r), dark(&mut r)],
        )
    };
    let mut img = image::RgbImage::from_pixel(width, height.max(16), Rgb(ground));
    for (i, line) in lines.iter().enumerate() {
        let mut x = left;
        let baseline = top + font.ascent() + line_h * i as f32;
        for c in line.chars() {
            let id = font.glyph_id(c);
            let glyph =
                id.with_scale_and_position(PxScale::from(size), ab_glyph::point(x, baseline));
            x += font.h_advance(id);
            let Some(outline) = font.outline_glyph(glyph) else {
                continue;
            };
            let b = outline.px_bounds();
            outline.draw(|gx, gy, cover| {
                let (px, py) = (
                    b.min.x as i64 + i64::from(gx),
                    b.min.y as i64 + i64::from(gy),
                );
                let Some(p) = img.get_pixel_mut_checked(px as u32, py as u32) else {
                    return;
                };
                for k in 0..3 {
                    let v = f32::from(ground[k]) * (1.0 - cover) + f32::from(ink[k]) * cover;
                    p.0[k] = v.round() as u8;
                }
            });
        }
    }
    // Speckles: about one pixel in 400 of a random colour.
    for _ in 0..(width * height / 400) {
        let (x, y) = (
            r.below(width as usize) as u32,
            r.below(height as usize) as u32,
        );
        let c = r.next_u64().to_le_bytes();
        if let Some(p) = img.get_pixel_mut_checked(x, y) {
            *p = Rgb([c[0], c[1], c[2]]);
        }
    }
    (img, r)
}

// --------------------------------------------------------------- documents

/// The paragraphs of what the recipient reads ([`body`]), each a list of
/// lines.
fn paragraphs(text: &str, copy: usize) -> Vec<Vec<String>> {
    body(text, copy)
        .split("\n\n")
        .map(|p| p.lines().map(str::to_owned).collect::<Vec<_>>())
        .filter(|p| !p.is_empty())
        .collect()
}

/// One of the one-line bodies a document travels under.
fn cover_line(text: &str, copy: usize, kind: &str) -> &'static str {
    const COVERS: [&str; 4] = [
        "Please see the attached document.",
        "Your statement is attached.",
        "Open the attachment for details.",
        "Kindly review the attached file and revert.",
    ];
    COVERS[rng(text, copy, kind).below(COVERS.len())]
}

/// A document under a one-line body, named for the recipient.
fn attached_document(
    text: &str,
    copy: usize,
    kind: &str,
    ctype: &str,
    ext: &str,
    bytes: &[u8],
) -> Vec<u8> {
    let name = format!("{kind}_{}{copy}.{ext}", tracking(text, copy).len());
    under_cover(
        text,
        copy,
        kind,
        cover_line(text, copy, kind),
        ctype,
        &name,
        bytes,
    )
}

/// The text's paragraphs written by `write` (a desktop format) and
/// attached under a one-line body ([`attached_document`]).
fn written_as(
    text: &str,
    copy: usize,
    write: fn(&[Vec<String>]) -> Vec<u8>,
    kind: &str,
    ctype: &str,
    ext: &str,
) -> Vec<u8> {
    attached_document(
        text,
        copy,
        kind,
        ctype,
        ext,
        &write(&paragraphs(text, copy)),
    )
}

/// The page of [`attached_page`] as `invoice.html` in a zip archive (what
/// mail filters that block .html attachments let through).
fn zipped_page(text: &str, copy: usize) -> Vec<u8> {
    let mut pr = rng(text, copy, "zipped_html");
    let paras = html_paragraphs(&body(text, copy), &mut pr, 0.0, |w, _| esc(w));
    let page = html_doc(&p_elements(&paras));
    let zip = testkit::documents::zip(&[(&format!("invoice_{copy}.html"), page.as_bytes())]);
    attached_document(text, copy, "zipped", "application/zip", "zip", &zip)
}

/// The page of [`zipped_page`] in an archive encrypted (ZipCrypto or
/// AES, by copy) with a password of its own per copy, stated in the
/// one-line body as such campaigns state it.
fn encrypted_zip(text: &str, copy: usize) -> Vec<u8> {
    const COVERS: [&str; 5] = [
        "Invoice attached. Password: {pw}",
        "The archive password is {pw}.",
        "Please find the statement attached (password {pw}).",
        "Passwort für das Dokument: {pw}",
        "Your documents are attached, use PIN {pw} to open them.",
    ];
    let mut pr = rng(text, copy, "encrypted_zip");
    let paras = html_paragraphs(&body(text, copy), &mut pr, 0.0, |w, _| esc(w));
    let page = html_doc(&p_elements(&paras));
    let password = format!("{}", 1000 + pr.below(9000));
    let zip = testkit::documents::encrypted_zip(
        &[(&format!("invoice_{copy}.html"), page.as_bytes())],
        &password,
        copy % 2 == 1,
    );
    let cover = COVERS[pr.below(COVERS.len())].replace("{pw}", &password);
    let name = format!("documents_{copy}.zip");
    under_cover(
        text,
        copy,
        "encrypted",
        &cover,
        "application/zip",
        &name,
        &zip,
    )
}

/// The text as `<text>` lines of an SVG picture (attached SVGs are shown
/// as pictures, and run scripts when opened in a browser).
fn svg_text(text: &str, copy: usize) -> Vec<u8> {
    let svg = testkit::documents::svg(&paragraphs(text, copy));
    attached_document(text, copy, "svg", "image/svg+xml", "svg", &svg)
}

/// The text's lines drawn in an SVG picture, written in a shuffled order:
/// each line placed by its `y`, some in translated groups, some split
/// into words each placed by its `x` (a viewer shows them in order).
fn svg_shuffled(text: &str, copy: usize) -> Vec<u8> {
    use testkit::documents::xml_escape;
    let mut r = rng(text, copy, "svg_shuffled");
    let mut items: Vec<String> = Vec::new();
    let mut y = 30;
    for lines in paragraphs(text, copy) {
        for line in lines {
            items.push(match r.below(3) {
                0 => format!(
                    "<text x=\"20\" y=\"{y}\" font-size=\"14\">{}</text>",
                    xml_escape(&line)
                ),
                1 => format!(
                    "<g transform=\"translate(20 {y})\"><text font-size=\"14\">{}</text></g>",
                    xml_escape(&line)
                ),
                _ => {
                    let mut x = 20.0f32;
                    let mut spans = String::new();
                    for w in line.split_whitespace() {
                        spans.push_str(&format!("<tspan x=\"{x}\">{}</tspan>", xml_escape(w)));
                        x += w.chars().count() as f32 * 8.5 + 5.0;
                    }
                    format!("<text y=\"{y}\" font-size=\"14\">{spans}</text>")
                }
            });
            y += 18;
        }
        y += 18;
    }
    for i in (1..items.len()).rev() {
        items.swap(i, r.below(i + 1));
    }
    let svg = format!(
        "<?xml version=\"1.0\"?>\n<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"640\" \
         height=\"{y}\">\n{}\n</svg>\n",
        items.join("\n")
    );
    attached_document(
        text,
        copy,
        "svgshuffled",
        "image/svg+xml",
        "svg",
        svg.as_bytes(),
    )
}

/// The text as the DESCRIPTION of a meeting invitation: a one-line body
/// and a `text/calendar; method=REQUEST` part, as calendar phishing sends
/// it (the calendar puts the meeting in the recipient's agenda).
fn calendar_invite(text: &str, copy: usize) -> Vec<u8> {
    let description = body(text, copy);
    let ics = testkit::documents::ics(
        &subject(text),
        &description,
        &format!("info@{}", host(text)),
        &format!("{:016x}-{copy}", rng(text, copy, "uid").next_u64()),
    );
    let bd = boundary(text, copy, "calendar");
    let parts = [
        (
            PLAIN.to_owned(),
            "You have been invited to a meeting.\n".to_owned(),
        ),
        (
            "Content-Type: text/calendar; charset=utf-8; method=REQUEST\n\
             Content-Transfer-Encoding: base64\n\
             Content-Disposition: attachment; filename=\"invite.ics\""
                .to_owned(),
            b64_lines(&ics),
        ),
    ];
    message(
        text,
        copy,
        &format!("Content-Type: multipart/mixed; boundary=\"{bd}\""),
        multipart(&bd, &parts).as_bytes(),
    )
}

/// The text in a Word document (.docx).
fn word_document(text: &str, copy: usize) -> Vec<u8> {
    written_as(
        text,
        copy,
        testkit::documents::docx,
        "docx",
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
        "docx",
    )
}

/// Every line written backwards in the source and shown forwards by CSS
/// (`direction: rtl; unicode-bidi: bidi-override`), inline or from the
/// page's style sheet by class; some copies use `<bdo dir="rtl">`.
fn rtl_override_css(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "rtl_css");
    let way = r.below(3);
    let class = format!("r{}", r.below(1000));
    let mut out = String::new();
    if way == 1 {
        out.push_str(&format!(
            "<style>.{class} {{ direction: rtl; unicode-bidi: bidi-override; text-align: left; }}</style>\n"
        ));
    }
    for lines in paragraphs(text, copy) {
        out.push_str("<p>");
        for (i, line) in lines.iter().enumerate() {
            if i > 0 {
                out.push_str("<br>\n");
            }
            let backwards: String = line.chars().rev().collect();
            let backwards = esc(&backwards);
            out.push_str(&match way {
                0 => format!(
                    "<span style=\"direction:rtl; unicode-bidi:bidi-override; display:inline-block\">{backwards}</span>"
                ),
                1 => format!("<span class=\"{class}\">{backwards}</span>"),
                _ => format!("<bdo dir=\"rtl\">{backwards}</bdo>"),
            });
        }
        out.push_str("</p>\n");
    }
    html_message(text, copy, &html_doc(&out))
}

/// The text in an Excel workbook, a cell a line.
fn excel_sheet(text: &str, copy: usize) -> Vec<u8> {
    written_as(
        text,
        copy,
        testkit::documents::xlsx,
        "xlsx",
        "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",
        "xlsx",
    )
}

/// The text on PowerPoint slides, a slide a paragraph.
fn slides(text: &str, copy: usize) -> Vec<u8> {
    written_as(
        text,
        copy,
        testkit::documents::pptx,
        "pptx",
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
        "pptx",
    )
}

/// The text in an OpenDocument text (.odt).
fn opendocument(text: &str, copy: usize) -> Vec<u8> {
    written_as(
        text,
        copy,
        testkit::documents::odt,
        "odt",
        "application/vnd.oasis.opendocument.text",
        "odt",
    )
}

/// The text in an RTF file named and declared as a Word document (`.doc`,
/// `application/msword`), which Word opens by its bytes.
fn rtf_as_word(text: &str, copy: usize) -> Vec<u8> {
    written_as(
        text,
        copy,
        testkit::documents::rtf,
        "rtf",
        "application/msword",
        "doc",
    )
}

/// The page saved as a web archive (.mht: a multipart/related message of
/// the page, quoted-printable), declared as `application/octet-stream`.
fn mhtml_page(text: &str, copy: usize) -> Vec<u8> {
    let mut pr = rng(text, copy, "mhtml");
    let paras = html_paragraphs(&body(text, copy), &mut pr, 0.0, |w, _| esc(w));
    let page = html_doc(&p_elements(&paras));
    let bd = format!("----=_NextPart_{:08x}", pr.next_u64() as u32);
    let mht = crlf(&format!(
        "From: <Saved by Blink>\nSnapshot-Content-Location: https://{}/view\nSubject: Statement\nMIME-Version: 1.0\nContent-Type: multipart/related; type=\"text/html\"; boundary=\"{bd}\"\n\n--{bd}\nContent-Type: text/html\nContent-Transfer-Encoding: base64\nContent-Location: https://{}/view\n\n{}\n--{bd}--\n",
        host(text),
        host(text),
        b64_lines(page.as_bytes())
    ));
    attached_document(
        text,
        copy,
        "mhtml",
        "application/octet-stream",
        "mht",
        mht.as_bytes(),
    )
}

/// The page gzip-compressed (`statement.html.gz`).
fn gzipped_page(text: &str, copy: usize) -> Vec<u8> {
    let mut pr = rng(text, copy, "gzipped");
    let paras = html_paragraphs(&body(text, copy), &mut pr, 0.0, |w, _| esc(w));
    let gz = testkit::documents::gzip(html_doc(&p_elements(&paras)).as_bytes());
    attached_document(text, copy, "gzip", "application/gzip", "html.gz", &gz)
}

/// A Word document in a zip in a zip (archives nested to get past
/// filters that open one level).
fn zip_in_zip(text: &str, copy: usize) -> Vec<u8> {
    let doc = testkit::documents::docx(&paragraphs(text, copy));
    let inner = testkit::documents::zip(&[(&format!("Statement_{copy}.docx"), &doc)]);
    let outer = testkit::documents::zip(&[
        ("Statement.zip", &inner),
        ("readme.txt", b"Password: none\n"),
    ]);
    attached_document(
        text,
        copy,
        "zipzip",
        "application/x-zip-compressed",
        "zip",
        &outer,
    )
}

/// The plain message as an attached `.eml` declared
/// `application/octet-stream` (not message/rfc822: a mail client opens it
/// by its name).
fn eml_as_octets(text: &str, copy: usize) -> Vec<u8> {
    let inner = crlf(&String::from_utf8(plain(text, copy)).unwrap());
    attached_document(
        text,
        copy,
        "eml",
        "application/octet-stream",
        "eml",
        inner.as_bytes(),
    )
}

/// HTML smuggling: an attached page whose source holds the page only
/// encoded, written out by script when it is opened (`atob` of Base64 cut
/// in pieces joined by `+`, or `unescape` of percent escapes), each copy
/// cut in other places.
fn html_smuggling(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "smuggling");
    let paras = html_paragraphs(&body(text, copy), &mut r, 0.0, |w, _| esc(w));
    let page = html_doc(&p_elements(&paras));
    let script = if r.chance(0.5) {
        let b64 = base64(page.as_bytes());
        let mut pieces = Vec::new();
        let mut rest = b64.as_str();
        while !rest.is_empty() {
            let n = (40 + r.below(80)).min(rest.len());
            let (a, b) = rest.split_at(n);
            pieces.push(format!("\"{a}\""));
            rest = b;
        }
        format!(
            "var d = atob({});\ndocument.open(); document.write(d); document.close();",
            pieces.join(" +\n  ")
        )
    } else {
        let pct: String = page.bytes().map(|b| format!("%{b:02x}")).collect();
        format!("document.write(unescape('{pct}'));")
    };
    let shell = format!(
        "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>Document</title></head>\n<body>\n<script>\n{script}\n</script>\n</body></html>\n"
    );
    attached_document(
        text,
        copy,
        "smuggled",
        "text/html",
        "html",
        shell.as_bytes(),
    )
}

/// A message that is a column of remote pictures (an image-only
/// newsletter), the text only in their `alt` attributes: what a client
/// that blocks remote pictures shows, a line a picture.
fn alt_text_pictures(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "alt_text");
    let cdn = format!("https://cdn{}.example", r.below(1000));
    let mut out = String::from("<table width=\"600\" cellpadding=\"0\" cellspacing=\"0\">\n");
    for (p, lines) in paragraphs(text, copy).iter().enumerate() {
        for (l, line) in lines.iter().enumerate() {
            out.push_str(&format!(
                "<tr><td><img src=\"{cdn}/i/{p}_{l}_{}.png\" width=\"600\" height=\"24\" alt=\"{}\" style=\"display:block\"></td></tr>\n",
                r.below(1_000_000),
                esc(line)
            ));
        }
    }
    out.push_str("</table>\n");
    html_message(text, copy, &html_doc(&out))
}

/// Every line of the text written by the style sheet (`::before` or
/// `::after { content: "..." }` of an empty element, a class of its own
/// per line and copy): the page's source holds no word of it.
fn css_generated_text(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "generated");
    let mut sheet = String::from("<style>\n");
    let mut page = String::new();
    for (p, lines) in paragraphs(text, copy).iter().enumerate() {
        page.push_str("<div>");
        for (l, line) in lines.iter().enumerate() {
            let class = format!("g{}{p}x{l}", r.below(100_000));
            let pseudo = if r.chance(0.5) { "::before" } else { ":after" };
            let quoted = line.replace('\\', "\\\\").replace('"', "\\\"");
            sheet.push_str(&format!(".{class}{pseudo} {{ content: \"{quoted}\"; }}\n"));
            page.push_str(&format!("<span class=\"{class}\"></span><br>\n"));
        }
        page.push_str("</div><br>\n");
    }
    sheet.push_str("</style>\n");
    html_message(
        text,
        copy,
        &format!("<html><head>{sheet}</head><body>{page}</body></html>"),
    )
}

/// The words of every line shuffled in the source, each a flex item
/// whose `order` (inline, or from a class of the sheet) puts it back in
/// its place: every copy's source holds the words in another order.
fn flex_order_shuffle(text: &str, copy: usize) -> Vec<u8> {
    let mut r = rng(text, copy, "flex_order");
    let by_class = r.chance(0.5);
    let mut sheet = String::from("<style>.l{display:flex;flex-wrap:wrap;column-gap:0.3em}");
    let mut page = String::new();
    let mut classes = 0;
    for lines in paragraphs(text, copy) {
        page.push_str("<div>\n");
        for line in lines {
            let mut items: Vec<String> = line
                .split_whitespace()
                .enumerate()
                .map(|(i, word)| {
                    if by_class {
                        classes = classes.max(i + 1);
                        format!("<span class=\"o{i}\">{} </span>", esc(word))
                    } else {
                        format!("<span style=\"order:{i}\">{} </span>", esc(word))
                    }
                })
                .collect();
            for i in (1..items.len()).rev() {
                items.swap(i, r.below(i + 1));
            }
            page.push_str(&format!("<div class=\"l\">{}</div>\n", items.join("")));
        }
        page.push_str("</div><br>\n");
    }
    for i in 0..classes {
        sheet.push_str(&format!(".o{i}{{order:{i}}}"));
    }
    sheet.push_str("</style>");
    html_message(
        text,
        copy,
        &format!("<html><head>{sheet}</head><body>{page}</body></html>"),
    )
}

/// Every line of the text the value of a read-only, borderless form field
/// (the page shows the text; its source holds it only in attributes).
fn form_fields(text: &str, copy: usize) -> Vec<u8> {
    let mut page = String::from("<form>\n");
    for lines in paragraphs(text, copy) {
        for line in lines {
            page.push_str(&format!(
                "<input type=\"text\" readonly value=\"{}\" style=\"border:0;width:640px\"><br>\n",
                esc(&line)
            ));
        }
        page.push_str("<br>\n");
    }
    page.push_str("</form>\n");
    html_message(text, copy, &html_doc(&page))
}

/// The text as the NOTE of an attached contact card (.vcf).
fn contact_card(text: &str, copy: usize) -> Vec<u8> {
    let card = testkit::documents::vcard("Customer Service", &body(text, copy));
    attached_document(text, copy, "vcard", "text/vcard", "vcf", &card)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn decoded(raw: &[u8]) -> String {
        let msg = mail_parser::MessageParser::default().parse(raw).unwrap();
        msg.body_text(0).unwrap().replace("\r\n", "\n")
    }

    #[test]
    fn qp_decodes_to_the_body() {
        let text = "Héllo = wörld, a line long enough to need a soft break or two before \
                    it ends, and then some more words to be sure.\n\nSecond {ID} paragraph.";
        let raw = quoted_printable(text, 3);
        assert_eq!(decoded(&raw).trim_end(), body(text, 3).trim_end());
    }

    /// The transfer encodings and charsets hide nothing: a parser gets the
    /// plain copy's text back (the dress is faithful).
    #[test]
    fn encodings_decode_to_the_plain_body() {
        for (name, paras) in crate::texts::OWN {
            let text = paras.join("\n\n");
            for copy in 3..7 {
                let want = body(&text, copy);
                let want = want.trim_end();
                for (class, dress) in [
                    ("base64", base64_plain as Dress),
                    ("quoted_printable", quoted_printable),
                    ("windows_1252", windows_1252),
                    ("utf16", utf16),
                ] {
                    let got = decoded(&dress(&text, copy));
                    assert_eq!(got.trim_end(), want, "{class} {name} {copy}");
                }
            }
        }
    }
}
