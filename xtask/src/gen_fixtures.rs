//! Deterministic synthetic mbox fixtures for bulkwatch.
//!
//! Writes, under the output directory given as the only argument (default `fixtures`):
//!
//! * `mbox/campaigns.mbox` - 16 invented bulk campaigns (fake pharmacy, bank phishing,
//!   crypto, lottery, invoice, parcel, job offer, romance, SEO, loan, software license,
//!   charity, and a family of four look-alike phishing kits; 1,030 messages in all). Every message carries per-recipient hash-busters at
//!   the campaign's intensity (light / medium / heavy): personalised greeting, tracking
//!   URLs, ids and amounts, random tokens and dictionary words, hidden HTML text and
//!   comments inside words, varied MIME structure, transfer encoding, charset and line
//!   wrapping; heavy campaigns also drop or swap sentences. Messages of all campaigns are
//!   interleaved in time order.
//! * `mbox/ham.mbox` - mail that must not be flagged: quoted discussion threads
//!   (`> ` quoting and Outlook "-----Original Message-----" replies), mailing-list posts
//!   with a shared footer, company mail with a shared legal disclaimer, templated
//!   automated notifications, and very short or empty bodies.
//! * `mbox/malformed.mbox` - malformed messages a parser must survive (broken MIME
//!   boundaries, bad base64 / quoted-printable, unknown charsets, NUL bytes, a 1 MiB
//!   header line, 100 levels of multipart nesting, no body, no headers, binary declared
//!   as text, ...).
//! * `labels.tsv` - `mbox`, 1-based `index`, `message_id` (no angle brackets, `-` if
//!   none) and `label` (`c01`..`c16`, `ham`, `malformed`) for every message, in file order.
//! * `campaigns.tsv` - `label`, `messages`, `intensity`, `description`.
//!
//! The mbox files are mboxrd: LF line endings, a `From ` separator line per message, an
//! empty line after each message, and body lines matching `^>*From ` quoted with one
//! extra `>`.
//!
//! All text is invented for this program; addresses and URLs use example.com,
//! example.net, example.org, `*.test` and `*.example` only. The program uses std only and
//! a seeded splitmix64 PRNG, so its output is byte-for-byte identical on every run.
//!
//! Regenerate with `cargo xtask gen-fixtures fixtures` (from the repository
//! root).

// Style lints only: changing these lines would change the committed fixtures.
#![allow(
    clippy::wrong_self_convention,
    clippy::manual_is_multiple_of,
    clippy::manual_pattern_char_comparison
)]

use std::fs;
use std::path::Path;

use testkit::{base64, base64_lines as base64_body};

// ---------------------------------------------------------------------------
// PRNG (splitmix64, from testkit) with the helpers the fixtures use
// ---------------------------------------------------------------------------

struct Rng(testkit::Rng);

const HEX: &[u8] = b"0123456789abcdef";
const B64: &[u8] = testkit::BASE64_ALPHABET;
const B64URL: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
const CODE: &[u8] = b"ABCDEFGHJKLMNPQRSTUVWXYZ23456789";

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(testkit::Rng::new(seed))
    }

    fn next_u64(&mut self) -> u64 {
        self.0.next_u64()
    }

    /// Uniform in `0..n`.
    fn below(&mut self, n: usize) -> usize {
        self.0.below(n)
    }

    /// Uniform in `lo..=hi`.
    fn range(&mut self, lo: usize, hi: usize) -> usize {
        self.0.range(lo, hi)
    }

    fn chance(&mut self, pct: u64) -> bool {
        self.0.percent(pct)
    }

    fn pick<T: Copy>(&mut self, items: &[T]) -> T {
        *self.0.pick(items)
    }

    fn from_alphabet(&mut self, alphabet: &[u8], lo: usize, hi: usize) -> String {
        let n = self.range(lo, hi);
        (0..n)
            .map(|_| alphabet[self.below(alphabet.len())] as char)
            .collect()
    }

    fn hex(&mut self, lo: usize, hi: usize) -> String {
        self.from_alphabet(HEX, lo, hi)
    }

    fn b64tok(&mut self, lo: usize, hi: usize) -> String {
        self.from_alphabet(B64, lo, hi)
    }

    fn urltok(&mut self, lo: usize, hi: usize) -> String {
        self.from_alphabet(B64URL, lo, hi)
    }

    fn code(&mut self, n: usize) -> String {
        self.from_alphabet(CODE, n, n)
    }
}

// ---------------------------------------------------------------------------
// Time formatting
// ---------------------------------------------------------------------------

const DAY: i64 = 86_400;
const WDAY: [&str; 7] = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"];
const WDAY_LONG: [&str; 7] = [
    "Sunday",
    "Monday",
    "Tuesday",
    "Wednesday",
    "Thursday",
    "Friday",
    "Saturday",
];
const MON: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];
const MON_LONG: [&str; 12] = [
    "January",
    "February",
    "March",
    "April",
    "May",
    "June",
    "July",
    "August",
    "September",
    "October",
    "November",
    "December",
];

fn days_from_civil(y: i64, m: i64, d: i64) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = if y >= 0 { y } else { y - 399 } / 400;
    let yoe = y - era * 400;
    let mp = (m + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

fn civil_from_days(z: i64) -> (i64, i64, i64) {
    let z = z + 719_468;
    let era = if z >= 0 { z } else { z - 146_096 } / 146_097;
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    (if m <= 2 { y + 1 } else { y }, m, d)
}

struct Tm {
    y: i64,
    mo: usize,
    d: i64,
    h: i64,
    mi: i64,
    s: i64,
    wd: usize,
}

fn tm(t: i64) -> Tm {
    let days = t.div_euclid(DAY);
    let secs = t.rem_euclid(DAY);
    let (y, m, d) = civil_from_days(days);
    Tm {
        y,
        mo: m as usize,
        d,
        h: secs / 3600,
        mi: secs % 3600 / 60,
        s: secs % 60,
        wd: (days + 4).rem_euclid(7) as usize,
    }
}

/// `Mon Jan  6 10:00:00 2025` (mbox separator line).
fn asctime(t: i64) -> String {
    let x = tm(t);
    format!(
        "{} {} {:>2} {:02}:{:02}:{:02} {}",
        WDAY[x.wd],
        MON[x.mo - 1],
        x.d,
        x.h,
        x.mi,
        x.s,
        x.y
    )
}

/// `Mon, 06 Jan 2025 10:00:00 +0000` in the given UTC offset (minutes).
fn rfc2822(t: i64, off_min: i64) -> String {
    let x = tm(t + off_min * 60);
    let sign = if off_min < 0 { '-' } else { '+' };
    let a = off_min.abs();
    format!(
        "{}, {:02} {} {} {:02}:{:02}:{:02} {}{:02}{:02}",
        WDAY[x.wd],
        x.d,
        MON[x.mo - 1],
        x.y,
        x.h,
        x.mi,
        x.s,
        sign,
        a / 60,
        a % 60
    )
}

fn twelve_hour(h: i64) -> (i64, &'static str) {
    let ampm = if h < 12 { "AM" } else { "PM" };
    let h12 = if h % 12 == 0 { 12 } else { h % 12 };
    (h12, ampm)
}

/// `March 14, 2025`
fn long_date(t: i64) -> String {
    let x = tm(t);
    format!("{} {}, {}", MON_LONG[x.mo - 1], x.d, x.y)
}

/// `Monday, January 6, 2025 10:00 AM` (Outlook "Sent:" line).
fn outlook_date(t: i64) -> String {
    let x = tm(t);
    let (h12, ampm) = twelve_hour(x.h);
    format!(
        "{}, {} {}, {} {}:{:02} {}",
        WDAY_LONG[x.wd],
        MON_LONG[x.mo - 1],
        x.d,
        x.y,
        h12,
        x.mi,
        ampm
    )
}

/// `Mon, Jan 6, 2025 at 10:12 AM`
fn reply_date(t: i64) -> String {
    let x = tm(t);
    let (h12, ampm) = twelve_hour(x.h);
    format!(
        "{}, {} {}, {} at {}:{:02} {}",
        WDAY[x.wd],
        MON[x.mo - 1],
        x.d,
        x.y,
        h12,
        x.mi,
        ampm
    )
}

/// `06/01/2025 10:12`
fn numeric_date(t: i64) -> String {
    let x = tm(t);
    format!("{:02}/{:02}/{} {:02}:{:02}", x.d, x.mo, x.y, x.h, x.mi)
}

// ---------------------------------------------------------------------------
// Encoders and text helpers
// ---------------------------------------------------------------------------

fn base64url_nopad(data: &[u8]) -> String {
    base64(data)
        .trim_end_matches('=')
        .replace('+', "-")
        .replace('/', "_")
}

/// Quoted-printable (RFC 2045): hard line breaks kept as LF, soft breaks `=\n`,
/// encoded lines at most 76 characters, trailing whitespace encoded.
fn qp(data: &[u8]) -> String {
    let mut out = String::with_capacity(data.len() * 11 / 10 + 8);
    for (i, line) in data.split(|&b| b == b'\n').enumerate() {
        if i > 0 {
            out.push('\n');
        }
        let mut col = 0usize;
        for (j, &b) in line.iter().enumerate() {
            let last = j + 1 == line.len();
            let literal =
                ((b == b' ' || b == b'\t') && !last) || ((33..=126).contains(&b) && b != b'=');
            let tok = if literal {
                (b as char).to_string()
            } else {
                format!("={:02X}", b)
            };
            let limit = if last { 76 } else { 75 };
            if col + tok.len() > limit {
                out.push_str("=\n");
                col = 0;
            }
            out.push_str(&tok);
            col += tok.len();
        }
    }
    out
}

/// Encode text in UTF-8 or ISO-8859-1 (characters above U+00FF become `?`).
fn encode_charset(s: &str, latin1: bool) -> Vec<u8> {
    if latin1 {
        s.chars()
            .map(|c| {
                if (c as u32) < 256 {
                    c as u32 as u8
                } else {
                    b'?'
                }
            })
            .collect()
    } else {
        s.as_bytes().to_vec()
    }
}

/// RFC 2047 `B` encoded words, folded onto continuation lines.
fn rfc2047(s: &str, latin1: bool) -> String {
    let cs = if latin1 { "ISO-8859-1" } else { "UTF-8" };
    let mut words = Vec::new();
    let mut cur: Vec<u8> = Vec::new();
    for ch in s.chars() {
        let mut buf = [0u8; 4];
        let enc = encode_charset(ch.encode_utf8(&mut buf), latin1);
        if cur.len() + enc.len() > 39 {
            words.push(format!("=?{}?B?{}?=", cs, base64(&cur)));
            cur.clear();
        }
        cur.extend_from_slice(&enc);
    }
    if !cur.is_empty() {
        words.push(format!("=?{}?B?{}?=", cs, base64(&cur)));
    }
    words.join("\n ")
}

/// Greedy word wrap of a single line; `width == 0` means no wrapping.
fn wrap(text: &str, width: usize) -> String {
    if width == 0 {
        return text.to_string();
    }
    let mut out = String::with_capacity(text.len() + 16);
    let mut col = 0usize;
    for word in text.split(' ').filter(|w| !w.is_empty()) {
        let wl = word.chars().count();
        if col > 0 && col + 1 + wl > width {
            out.push('\n');
            col = 0;
        }
        if col > 0 {
            out.push(' ');
            col += 1;
        }
        out.push_str(word);
        col += wl;
    }
    out
}

fn html_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            _ => out.push(c),
        }
    }
    out
}

fn commas(n: usize) -> String {
    let s = n.to_string();
    let mut out = String::new();
    for (i, ch) in s.chars().enumerate() {
        if i > 0 && (s.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(ch);
    }
    out
}

fn subst(s: &str, vars: &[(&str, String)]) -> String {
    let mut out = s.to_string();
    for (k, v) in vars {
        out = out.replace(&format!("{{{}}}", k), v);
    }
    out
}

fn hdr(m: &mut Vec<u8>, name: &str, value: &str) {
    m.extend_from_slice(name.as_bytes());
    m.extend_from_slice(b": ");
    m.extend_from_slice(value.as_bytes());
    m.push(b'\n');
}

/// `Name <addr>`, quoting or RFC 2047-encoding the display name where needed.
fn fmt_addr(name: &str, addr: &str) -> String {
    if !name.is_ascii() {
        format!("{} <{}>", rfc2047(name, false), addr)
    } else if name.contains(|c: char| c == '.' || c == ',' || c == '&') {
        format!("\"{}\" <{}>", name, addr)
    } else {
        format!("{} <{}>", name, addr)
    }
}

fn domain_of(addr: &str) -> &str {
    addr.rsplit('@').next().unwrap_or(addr)
}

// ---------------------------------------------------------------------------
// mboxrd writer
// ---------------------------------------------------------------------------

struct Mbox {
    name: &'static str,
    data: Vec<u8>,
    rows: Vec<(String, String)>,
}

impl Mbox {
    fn new(name: &'static str) -> Mbox {
        Mbox {
            name,
            data: Vec::new(),
            rows: Vec::new(),
        }
    }

    fn add(&mut self, env_from: &str, t: i64, msg: &[u8], msgid: Option<&str>, label: &str) {
        self.data
            .extend_from_slice(format!("From {} {}\n", env_from, asctime(t)).as_bytes());
        let content = msg.strip_suffix(b"\n").unwrap_or(msg);
        for line in content.split(|&b| b == b'\n') {
            let n = line.iter().take_while(|&&b| b == b'>').count();
            if line[n..].starts_with(b"From ") {
                self.data.push(b'>');
            }
            self.data.extend_from_slice(line);
            self.data.push(b'\n');
        }
        self.data.push(b'\n');
        self.rows
            .push((msgid.unwrap_or("-").to_string(), label.to_string()));
    }
}

// ---------------------------------------------------------------------------
// Shared word lists
// ---------------------------------------------------------------------------

const FIRST_NAMES: &[&str] = &[
    "James",
    "Mary",
    "John",
    "Patricia",
    "Robert",
    "Jennifer",
    "Michael",
    "Linda",
    "David",
    "Elizabeth",
    "William",
    "Barbara",
    "Richard",
    "Susan",
    "Joseph",
    "Jessica",
    "Thomas",
    "Sarah",
    "Carlos",
    "Maria",
    "Ahmed",
    "Fatima",
    "Wei",
    "Mei",
    "Raj",
    "Anita",
    "Olga",
    "Ivan",
    "Kenji",
    "Aiko",
    "Lars",
    "Ingrid",
    "Pedro",
    "Lucia",
    "Samuel",
    "Grace",
    "Noah",
    "Emma",
    "Liam",
    "Chloe",
    "Jane",
    "Omar",
];

const LAST_NAMES: &[&str] = &[
    "Smith",
    "Johnson",
    "Williams",
    "Brown",
    "Jones",
    "Garcia",
    "Miller",
    "Davis",
    "Rodriguez",
    "Martinez",
    "Hernandez",
    "Lopez",
    "Wilson",
    "Anderson",
    "Thomas",
    "Taylor",
    "Moore",
    "Jackson",
    "Martin",
    "Lee",
    "Perez",
    "Thompson",
    "White",
    "Harris",
    "Clark",
    "Lewis",
    "Walker",
    "Hall",
    "Young",
    "King",
    "Nakamura",
    "Schmidt",
    "Novak",
    "Kowalski",
    "Okafor",
    "Singh",
    "Chen",
    "Ivanova",
    "Rossi",
    "Doe",
];

const RCPT_DOMAINS: &[&str] = &[
    "example.com",
    "example.net",
    "example.org",
    "mail.example.com",
    "inbox.example.net",
    "users.example.org",
    "corp.test",
    "webmail.test",
    "home.example",
    "isp.test",
];

/// Dictionary words used as hash-busters.
const WORDS: &[&str] = &[
    "harbor", "violet", "pencil", "meadow", "quartz", "lantern", "ribbon", "saddle", "copper",
    "walnut", "thistle", "bramble", "cobalt", "fable", "glacier", "hinge", "ivory", "juniper",
    "kettle", "lagoon", "marble", "nectar", "orchid", "pebble", "quiver", "raven", "saffron",
    "tundra", "umber", "velvet", "willow", "yonder", "zephyr", "anchor", "biscuit", "canyon",
    "dapple", "ember", "falcon", "garnet", "hollow", "inkwell", "jasper", "kindle", "lilac",
    "mosaic", "nutmeg", "oxbow", "parsley", "quill", "russet", "sparrow", "timber", "upland",
    "vessel", "wander", "yarrow", "acorn", "burrow", "cinder", "drift", "estuary", "fennel",
    "gravel", "heron", "island", "jigsaw", "kestrel", "ledger", "mantle", "nimbus", "ostrich",
    "prairie", "quarry", "ripple", "shingle", "trellis", "uplift", "valley", "whisker", "almond",
    "basalt", "crimson", "dune", "elm", "fjord", "gossamer", "hazel", "indigo", "jetty", "knoll",
    "loom", "mirth", "nook", "opal", "pivot", "quince", "rustic", "sable", "tinsel", "urchin",
    "vellum", "wicker", "zinnia",
];

const URL_SEGMENTS: &[&str] = &["c", "r", "t", "go", "l", "click", "track"];

const UNSUB_PHRASES: &[&str] = &[
    "To unsubscribe visit",
    "Unsubscribe:",
    "Opt out here:",
    "Manage your email preferences at",
    "No longer want these messages? Go to",
];

const MAILERS: &[&str] = &[
    "PHPMailer 5.2.9",
    "Microsoft Outlook Express 6.00.2900.5512",
    "MailBlaster Pro 3.1",
    "Apple Mail (2.3608)",
    "SendBulk v7",
];

// ---------------------------------------------------------------------------
// Campaigns
// ---------------------------------------------------------------------------

struct Campaign {
    label: &'static str,
    count: usize,
    /// 0 = light, 1 = medium, 2 = heavy.
    intensity: u8,
    description: &'static str,
    subjects: &'static [&'static str],
    sender_domains: &'static [&'static str],
    from_names: &'static [&'static str],
    from_locals: &'static [&'static str],
    track_host: &'static str,
    id_prefix: &'static str,
    currency: &'static str,
    amount: (usize, usize),
    paras: &'static [&'static [&'static str]],
    sig: &'static [&'static str],
}

// A family of four phishing kits of one brand (c13 to c16): each kit is
// four paragraphs of a sliding window over seven, so neighbouring kits
// share three paragraphs (word 4-shingle Jaccard about 0.6), kits two
// apart share two (about 0.33) and the first and last share one. Each kit
// is its own campaign: a detector that links on single weak edges chains
// them all into one (docs/dev/quality.md, "Linking").
const NB: [&[&str]; 7] = [
    &[
        "Northgate Bank has placed a temporary hold on the debit card ending in your account number {id} after a routine review of recent payments.",
        "The hold protects you while our fraud team checks a small number of transactions that did not match your usual spending pattern.",
    ],
    &[
        "Three card payments to an overseas electronics retailer were declined this morning, and a fourth attempt is still pending on your statement.",
        "If you did not make these purchases yourself, somebody may have copied the card details at a terminal or on a website you used recently.",
    ],
    &[
        "To lift the hold you only need to confirm that you are the holder of the card and review the list of payments waiting for approval.",
        "The confirmation takes about two minutes and must be completed from the device you normally use for online banking with us.",
    ],
    &[
        "Please open the secure Northgate review page at {url} and sign in with your usual customer number and passcode to start the check.",
        "You will be asked for the three digit security code printed on the back of the card so that we can match it to our records.",
    ],
    &[
        "Until the review is finished, contactless payments, cash withdrawals and transfers to new payees remain blocked on every linked account.",
        "Standing orders and direct debits already set up before the hold was placed will continue to be paid as normal during this period.",
    ],
    &[
        "If we do not hear from you within forty eight hours the card will be cancelled permanently and a replacement posted to your home address.",
        "A replacement card can take up to ten working days to arrive and an administration charge of {amount} is applied to the account.",
    ],
    &[
        "Northgate Bank will never ask you to move money to a safe account, and our staff will never collect your card in person at your door.",
        "Thank you for helping us keep your money safe, and we apologise for any inconvenience this security measure may cause you today.",
    ],
];

const INTENSITY: [&str; 3] = ["light", "medium", "heavy"];

const CAMPAIGNS: &[Campaign] = &[
    Campaign {
        label: "c01",
        count: 20,
        intensity: 0,
        description: "fake online pharmacy discount (MediSaver)",
        subjects: &[
            "{first}, your MediSaver discount is waiting",
            "Save up to 80% on medications - order {id}",
            "Pharmacy clearance for {first}: code {code}",
        ],
        sender_domains: &["pharmacy-deals.test", "medisaver-rx.example", "rx-outlet.test"],
        from_names: &["MediSaver Online Pharmacy", "MediSaver Deals", "Pharmacy Support"],
        from_locals: &["offers", "deals", "noreply", "support"],
        track_host: "track.pharmacy-deals.test",
        id_prefix: "MS-",
        currency: "$",
        amount: (19, 89),
        paras: &[
            &[
                "Our spring clearance at MediSaver Online Pharmacy has started and your account {id} qualifies for the deepest discount tier.",
                "Brand and generic medications are now available at up to 80 percent below the usual pharmacy counter price.",
                "No prescription is required for most items in our catalogue.",
            ],
            &[
                "Popular choices this week include pain relief tablets, sleep aids, allergy capsules and our bestselling vitality pack.",
                "Every order ships in discreet plain packaging from our licensed partner warehouse.",
                "Delivery usually takes five to nine business days and tracking is included at no extra cost.",
            ],
            &[
                "To claim your reserved price of {amount} for the starter bundle, simply visit {url} before the offer closes.",
                "Your personal coupon code {code} is applied automatically at checkout.",
                "Orders above sixty dollars also receive four free bonus tablets.",
            ],
            &[
                "Thousands of satisfied customers have already switched to MediSaver, {first}.",
                "Do not miss this chance to save on the medicines you need every month.",
            ],
        ],
        sig: &["Kind regards,", "The MediSaver Team"],
    },
    Campaign {
        label: "c02",
        count: 25,
        intensity: 2,
        description: "bank account phishing (unusual sign-in, verify identity)",
        subjects: &[
            "Security alert: unusual sign-in on your account [{id}]",
            "Action required: verify your identity ({id})",
            "{name}, your online banking access is limited",
        ],
        sender_domains: &["bank-alerts.test", "secure-notice.example", "fcsb-online.test"],
        from_names: &["First Continental Savings Bank", "Online Banking Security", "FCSB Alerts"],
        from_locals: &["security", "alerts", "no-reply", "service"],
        track_host: "secure-verify.bank-alerts.test",
        id_prefix: "SEC-",
        currency: "$",
        amount: (500, 4000),
        paras: &[
            &[
                "We detected an unusual sign-in attempt on your online banking profile on {date}.",
                "The attempt originated from a device we do not recognise, and as a precaution several account functions have been temporarily limited.",
                "This is an automated security measure designed to protect your savings.",
            ],
            &[
                "To restore full access, you must confirm your identity within 48 hours.",
                "Please follow the secure verification link below and enter your customer number, card details and the one-time code we send to your phone.",
                "The verification takes less than three minutes.",
            ],
            &["Verify your account now: {url}"],
            &[
                "Your case reference is {id}.",
                "Please keep this number ready if you contact our support team.",
            ],
            &[
                "If the verification is not completed in time, your online access will be suspended and any pending transfers of {amount} will be returned to the sender.",
                "We apologise for any inconvenience and thank you for helping us keep your account safe.",
            ],
        ],
        sig: &["Customer Protection Department", "First Continental Savings Bank"],
    },
    Campaign {
        label: "c03",
        count: 30,
        intensity: 1,
        description: "crypto investment invitation (QuantumYield trading circle)",
        subjects: &[
            "{first}, your QuantumYield invitation #{id}",
            "Turn $250 into {amount} - invitation {id}",
            "Only 300 seats left this month, {first}",
        ],
        sender_domains: &["quantumyield.example", "qy-invest.test"],
        from_names: &["Daniel Hart", "QuantumYield Members", "QuantumYield"],
        from_locals: &["invite", "daniel.hart", "members"],
        track_host: "go.quantumyield.example",
        id_prefix: "QY",
        currency: "$",
        amount: (8_000, 60_000),
        paras: &[
            &[
                "Imagine waking up every morning to see your balance grow while you sleep.",
                "That is exactly what members of the QuantumYield trading circle have been experiencing since January.",
                "Our automated arbitrage engine scans forty exchanges every second and locks in profits the moment a price gap appears.",
            ],
            &[
                "Early members turned a modest deposit of 250 dollars into more than {amount} within six weeks.",
                "There is no experience required and you can withdraw at any time.",
                "The platform does all of the work for you.",
            ],
            &[
                "Because of overwhelming demand we can only accept 300 new members this month, {first}.",
                "A seat has been reserved under invitation number {id}, but it will be released to the waiting list in 24 hours.",
            ],
            &["Activate your invitation here: {url}"],
            &[
                "Past results are not a guarantee of future performance, but our members keep coming back for a reason.",
                "Join them today and take control of your financial future.",
            ],
        ],
        sig: &["To your success,", "Daniel Hart", "Head of Member Relations, QuantumYield"],
    },
    Campaign {
        label: "c04",
        count: 40,
        intensity: 2,
        description: "lottery win notification with advance fee (Spanish accents, UTF-8/ISO-8859-1)",
        subjects: &[
            "¡Enhorabuena {first}! Notificación de premio {id}",
            "Prize notification {id}: you have won {amount}",
            "Lotería Internacional: ticket {id} para {name}",
        ],
        sender_domains: &["loteria-fortuna.example", "premios-int.test", "fortuna-draw.test"],
        from_names: &["Lotería Internacional de la Fortuna", "Departamento de Premios", "Prize Claims"],
        from_locals: &["premios", "claims", "info", "director"],
        track_host: "claims.loteria-fortuna.example",
        id_prefix: "LIF/",
        currency: "EUR ",
        amount: (250_000, 1_500_000),
        paras: &[
            &[
                "We are pleased to inform you that your email address was selected in the third category of the Lotería Internacional de la Fortuna held in Málaga on {date}.",
                "Your address was attached to ticket number {id} and drew the lucky numbers 07, 19, 23, 31, 38 and 42.",
            ],
            &[
                "As a result you have been awarded the lump sum of {amount}, credited to your name in our secure escrow account.",
                "This promotional draw was organised by the Fundación Española de Juegos to celebrate our twentieth anniversary.",
                "Participants were chosen at random from a database of over two million addresses worldwide.",
            ],
            &[
                "To begin the claim process, please contact our fiduciary agent, Señor Andrés Núñez, with your full name, address, telephone number and a copy of your identification.",
                "A small processing fee will be deducted from the winnings before transfer.",
            ],
            &["Claims portal: {url}"],
            &[
                "For security reasons we advise you to keep this award confidential until your claim has been processed, {first}.",
                "¡Enhorabuena otra vez!",
            ],
        ],
        sig: &[
            "From the desk of the Director of Promotions,",
            "Doña María José Peñalver",
            "Lotería Internacional de la Fortuna, Calle Alcalá 120, Madrid",
        ],
    },
    Campaign {
        label: "c05",
        count: 50,
        intensity: 0,
        description: "fake unpaid invoice with document link",
        subjects: &[
            "Invoice {id} due for payment",
            "Outstanding invoice {id} - {amount}",
            "Reminder: invoice {id} for {name}",
        ],
        sender_domains: &["brightline-docs.test", "brightline-office.example"],
        from_names: &["Brightline Accounts", "Accounts Receivable", "Brightline Office Supplies"],
        from_locals: &["accounts", "billing", "invoices"],
        track_host: "billing.brightline-docs.test",
        id_prefix: "INV-2025-",
        currency: "$",
        amount: (180, 2900),
        paras: &[
            &[
                "Please find below the details of invoice {id} for services rendered during the last billing period.",
                "The total amount of {amount} is now due and payable within seven days of this notice.",
            ],
            &[
                "Our records show that this invoice has not yet been settled.",
                "To avoid late payment charges and interruption of service, please review the statement and arrange payment at your earliest convenience.",
            ],
            &[
                "You can view and download the full invoice as a PDF here: {url}",
                "The document is password protected; your access code is {code}.",
            ],
            &[
                "If you believe this invoice was sent to you in error, please contact our accounts receivable team by replying to this message and quoting the invoice number.",
                "Thank you for your continued business.",
            ],
        ],
        sig: &["Accounts Receivable", "Brightline Office Supplies Ltd."],
    },
    Campaign {
        label: "c06",
        count: 60,
        intensity: 1,
        description: "parcel delivery failed, customs fee (SwiftRoute)",
        subjects: &[
            "Delivery attempt failed for parcel {id}",
            "{first}, your parcel {id} is on hold",
            "Action needed: customs fee for parcel {id}",
        ],
        sender_domains: &["swiftroute-parcels.test", "sr-delivery.example", "parcel-notify.test"],
        from_names: &["SwiftRoute Parcel Services", "SwiftRoute Delivery", "Parcel Notification"],
        from_locals: &["delivery", "notify", "tracking", "noreply"],
        track_host: "redelivery.swiftroute-parcels.test",
        id_prefix: "SR",
        currency: "$",
        amount: (1, 4),
        paras: &[
            &[
                "We attempted to deliver your parcel {id} today but nobody was available to sign for it.",
                "The parcel has been returned to our local depot and will be held for a maximum of five working days.",
            ],
            &[
                "An unpaid customs and handling fee of {amount} must be settled before a new delivery can be scheduled.",
                "Once payment is confirmed you can choose a new delivery date or a nearby pickup point.",
            ],
            &["Reschedule your delivery: {url}"],
            &[
                "Please note that parcels not claimed within the holding period will be returned to the sender and the shipping costs will not be refunded.",
                "Have your tracking number ready when contacting customer service.",
            ],
        ],
        sig: &[
            "SwiftRoute Parcel Services",
            "This is an automatically generated message, please do not reply.",
        ],
    },
    Campaign {
        label: "c07",
        count: 80,
        intensity: 2,
        description: "work-from-home job offer (money mule recruitment)",
        subjects: &[
            "Remote position for {first} - reference {id}",
            "Job offer: Payment Processing Assistant ({id})",
            "{name}, work from home and earn {amount}",
        ],
        sender_domains: &["meridian-staffing.example", "msg-careers.test", "hr-meridian.test"],
        from_names: &["Rebecca Lang", "Meridian Staffing Group", "Meridian Careers"],
        from_locals: &["rebecca.lang", "careers", "recruiting", "hr"],
        track_host: "apply.meridian-staffing.example",
        id_prefix: "MSG-",
        currency: "$",
        amount: (3_000, 6_000),
        paras: &[
            &[
                "My name is Rebecca Lang and I am a recruiter with Meridian Staffing Group.",
                "I came across your profile and believe you would be an excellent fit for a remote position as a Payment Processing Assistant with one of our international clients.",
            ],
            &[
                "The role involves receiving customer payments into your personal account, keeping a ten percent commission, and forwarding the balance to our regional partners.",
                "It takes only two to three hours per day and can be done from home with a phone or computer.",
                "Successful assistants earn between {amount} and double that amount each month.",
            ],
            &[
                "No previous experience is needed and full training is provided during the first week.",
                "We are hiring quickly, so please respond within the next 48 hours to secure your place.",
            ],
            &[
                "To apply, complete the short form at {url} and quote reference {id}.",
                "A member of our onboarding team will contact you with the employment agreement.",
            ],
            &["I look forward to working with you, {first}."],
        ],
        sig: &["Best regards,", "Rebecca Lang", "Senior Talent Partner, Meridian Staffing Group"],
    },
    Campaign {
        label: "c08",
        count: 100,
        intensity: 1,
        description: "romance scam introduction (French accents, UTF-8/ISO-8859-1)",
        subjects: &[
            "Hello {first}, it's Élodie",
            "A message for {first}",
            "Élodie wants to meet you ({code})",
        ],
        sender_domains: &["elodie-page.test", "rencontre-mail.example", "lovenote.test"],
        from_names: &["Élodie", "Elodie M.", "Élodie Marchand"],
        from_locals: &["elodie", "elodie.m", "elodie29"],
        track_host: "photos.elodie-page.test",
        id_prefix: "EL",
        currency: "$",
        amount: (1, 9),
        paras: &[
            &[
                "Forgive me for writing to you out of the blue, I found your address through a friend of a friend and something told me I should say hello.",
                "My name is Élodie, I am 29 years old and I live near Lyon, where I work as a nurse in a small clinic.",
            ],
            &[
                "I love long walks by the river, reading novels in a quiet café and cooking for the people I care about.",
                "Lately I have felt très seule, and I am hoping to meet someone kind and honest who wants something real.",
                "Maybe that someone is you, {first}?",
            ],
            &[
                "I have put some of my photos on my private page so you can see who I am: {url}",
                "The page is protected, so use the code {code} to open it.",
            ],
            &[
                "If you write back I promise to tell you everything about myself.",
                "I will wait for your réponse with a smile.",
            ],
        ],
        sig: &["Bisous,", "Élodie"],
    },
    Campaign {
        label: "c09",
        count: 120,
        intensity: 0,
        description: "unsolicited SEO services offer (RankRocket)",
        subjects: &[
            "Your website ranking - free audit {id}",
            "{first}, your site is missing from page one",
            "Free SEO audit for {email}",
        ],
        sender_domains: &["rankrocket.example", "rr-digital.test", "seo-outreach.test", "rankrocket-mail.test"],
        from_names: &["Aaron Mills", "RankRocket Digital", "Aaron from RankRocket"],
        from_locals: &["aaron", "aaron.mills", "outreach", "hello"],
        track_host: "audit.rankrocket.example",
        id_prefix: "RR-",
        currency: "$",
        amount: (300, 900),
        paras: &[
            &[
                "I was looking at your website and noticed that it does not appear on the first page of search results for several important keywords in your industry.",
                "This means potential customers are finding your competitors instead of you every single day.",
            ],
            &[
                "Our team at RankRocket Digital has helped more than 1,200 small businesses reach the top positions on all major search engines.",
                "We offer complete on-page optimisation, high-authority backlinks, local listings and monthly performance reports.",
            ],
            &[
                "For a limited time we are offering a free website audit worth {amount}.",
                "The audit shows exactly what is holding your site back and how quickly we can fix it.",
            ],
            &[
                "Request your free audit here: {url}",
                "Use the reference {id} so we can prioritise your request.",
            ],
            &["If you are not interested, simply reply with REMOVE and we will not contact you again."],
        ],
        sig: &["Thanks and regards,", "Aaron Mills", "Business Development Manager, RankRocket Digital"],
    },
    Campaign {
        label: "c10",
        count: 150,
        intensity: 2,
        description: "pre-approved personal loan with upfront deposit (Evergreen)",
        subjects: &[
            "Pre-approved: {amount} loan for {name}",
            "{first}, your loan code {code} expires soon",
            "Application {id}: funds ready in 24 hours",
        ],
        sender_domains: &["evergreen-lending.test", "ecl-loans.example", "approve-now.test"],
        from_names: &["Evergreen Capital Lending", "Loan Approval Team", "Evergreen Loans"],
        from_locals: &["approvals", "loans", "team", "offers"],
        track_host: "apply.evergreen-lending.test",
        id_prefix: "EC-",
        currency: "$",
        amount: (5_000, 50_000),
        paras: &[
            &[
                "Good news: you have been pre-approved for a personal loan of up to {amount} with a fixed rate of just 2.9 percent APR.",
                "No credit check is required and funds can be in your account within 24 hours.",
            ],
            &[
                "Whether you want to consolidate debts, renovate your home, buy a new car or simply give yourself a little breathing room, our flexible repayment plans adapt to your budget.",
                "Terms range from 12 to 84 months with no early repayment penalties.",
            ],
            &[
                "Your pre-approval code is {code} and your application number is {id}.",
                "This offer is reserved for you and expires at midnight on {date}.",
            ],
            &["Complete your application in minutes: {url}"],
            &[
                "A one-time insurance deposit is required to release the funds, which is fully refunded with your first repayment.",
                "Thousands of customers trust Evergreen Capital Lending every year.",
            ],
        ],
        sig: &["Loan Approval Team", "Evergreen Capital Lending"],
    },
    Campaign {
        label: "c11",
        count: 200,
        intensity: 1,
        description: "fake software license expiry and renewal",
        subjects: &[
            "Your license expires in 3 days - customer {id}",
            "{first}, renew your Office Suite license now",
            "Final notice: license key {code}",
        ],
        sender_domains: &["office-license-center.test", "license-renewals.example", "suite-billing.test"],
        from_names: &["Software Licensing Department", "License Center", "Office Suite Renewals"],
        from_locals: &["licensing", "renewals", "no-reply", "billing"],
        track_host: "renew.office-license-center.test",
        id_prefix: "CUST",
        currency: "$",
        amount: (29, 99),
        paras: &[
            &[
                "Your license for Office Productivity Suite Professional expires in 3 days.",
                "After expiration, you will no longer be able to edit documents, receive security updates or access your cloud storage.",
            ],
            &[
                "As a valued customer, you are eligible for a lifetime license renewal at the special price of {amount} instead of the regular yearly subscription.",
                "The lifetime license covers up to five devices and includes all future updates.",
            ],
            &[
                "Your license key ending in {code} is registered under customer number {id}.",
                "To renew without losing your files and settings, visit the renewal center at {url}",
            ],
            &[
                "This offer is only available through this email and cannot be combined with other promotions.",
                "If you have already renewed, please disregard this message.",
            ],
        ],
        sig: &["Software Licensing Department", "Customer ID: {id}"],
    },
    Campaign {
        label: "c12",
        count: 35,
        intensity: 2,
        description: "charity donation scam for children in Cusco (Spanish accents)",
        subjects: &[
            "{first}, ayuda para los niños de Cusco",
            "A warm meal for a child this winter ({id})",
            "Donación {id}: help before the snow arrives",
        ],
        sender_domains: &["manos-unidas.example", "ninez-fund.test"],
        from_names: &["Fundación Manos Unidas", "Sofía Beltrán", "Manos Unidas para la Niñez"],
        from_locals: &["donaciones", "sofia", "info"],
        track_host: "donate.manos-unidas.example",
        id_prefix: "DON-",
        currency: "$",
        amount: (15, 60),
        paras: &[
            &[
                "Every night in the mountain villages near Cusco, hundreds of niños go to sleep cold and hungry.",
                "The Fundación Manos Unidas para la Niñez has been providing warm meals, blankets and school supplies to these families for over ten years.",
            ],
            &[
                "This winter the need is greater than ever.",
                "A single donation of {amount} can feed a child for an entire month, and a gift of any size helps us reach another village before the snow arrives.",
            ],
            &[
                "Our volunteer coordinator, José Ramírez, writes that the smile on a child's face when she receives her first pair of boots is something he will never forget.",
                "We would be honoured if you, {first}, could help us bring more of those smiles this season.",
            ],
            &[
                "Donate securely here: {url}",
                "Your donor reference is {id}.",
            ],
            &[
                "All donations are used directly for food, clothing and education.",
                "Muchas gracias por su generosidad.",
            ],
        ],
        sig: &["With gratitude,", "Sofía Beltrán", "Fundación Manos Unidas para la Niñez"],
    },
    Campaign {
        label: "c13",
        count: 30,
        intensity: 1,
        description: "bank card hold phishing, kit 1 of a family of four (Northgate, paragraphs 1-4)",
        subjects: &[
            "Your Northgate debit card has been put on hold",
            "Northgate Bank: card hold on account {id}",
            "{first}, please review your Northgate card payments",
        ],
        sender_domains: &["northgate-cards.test", "ngb-secure.example"],
        from_names: &["Northgate Bank", "Northgate Card Services", "Northgate Fraud Team"],
        from_locals: &["cards", "fraud", "no-reply"],
        track_host: "review.northgate-cards.test",
        id_prefix: "NGB-",
        currency: "\u{a3}",
        amount: (15, 45),
        paras: &[NB[0], NB[1], NB[2], NB[3]],
        sig: &["Yours sincerely,", "Card Security Team", "Northgate Bank plc"],
    },
    Campaign {
        label: "c14",
        count: 30,
        intensity: 1,
        description: "bank card hold phishing, kit 2 of the Northgate family (paragraphs 2-5)",
        subjects: &[
            "Declined payments on your Northgate card",
            "Northgate Bank: card hold on account {id}",
            "{first}, please review your Northgate card payments",
        ],
        sender_domains: &["northgate-cards.test", "ngb-secure.example"],
        from_names: &["Northgate Bank", "Northgate Card Services", "Northgate Fraud Team"],
        from_locals: &["cards", "fraud", "no-reply"],
        track_host: "review.northgate-cards.test",
        id_prefix: "NGB-",
        currency: "\u{a3}",
        amount: (15, 45),
        paras: &[NB[1], NB[2], NB[3], NB[4]],
        sig: &["Yours sincerely,", "Card Security Team", "Northgate Bank plc"],
    },
    Campaign {
        label: "c15",
        count: 30,
        intensity: 1,
        description: "bank card hold phishing, kit 3 of the Northgate family (paragraphs 3-6)",
        subjects: &[
            "Action needed: confirm your Northgate card",
            "Northgate Bank: card hold on account {id}",
            "{first}, please review your Northgate card payments",
        ],
        sender_domains: &["northgate-cards.test", "ngb-secure.example"],
        from_names: &["Northgate Bank", "Northgate Card Services", "Northgate Fraud Team"],
        from_locals: &["cards", "fraud", "no-reply"],
        track_host: "review.northgate-cards.test",
        id_prefix: "NGB-",
        currency: "\u{a3}",
        amount: (15, 45),
        paras: &[NB[2], NB[3], NB[4], NB[5]],
        sig: &["Yours sincerely,", "Card Security Team", "Northgate Bank plc"],
    },
    Campaign {
        label: "c16",
        count: 30,
        intensity: 1,
        description: "bank card hold phishing, kit 4 of the Northgate family (paragraphs 4-7)",
        subjects: &[
            "Final notice: Northgate card cancellation",
            "Northgate Bank: card hold on account {id}",
            "{first}, please review your Northgate card payments",
        ],
        sender_domains: &["northgate-cards.test", "ngb-secure.example"],
        from_names: &["Northgate Bank", "Northgate Card Services", "Northgate Fraud Team"],
        from_locals: &["cards", "fraud", "no-reply"],
        track_host: "review.northgate-cards.test",
        id_prefix: "NGB-",
        currency: "\u{a3}",
        amount: (15, 45),
        paras: &[NB[3], NB[4], NB[5], NB[6]],
        sig: &["Yours sincerely,", "Card Security Team", "Northgate Bank plc"],
    },
];

fn insert_word(paras: &mut [Vec<String>], w: &str, rng: &mut Rng) {
    let pi = rng.below(paras.len());
    let si = rng.below(paras[pi].len());
    let mut words: Vec<&str> = paras[pi][si].split(' ').collect();
    let pos = rng.range(1, words.len());
    words.insert(pos, w);
    let joined = words.join(" ");
    paras[pi][si] = joined;
}

/// A hidden HTML hash-buster element.
fn hidden_element(rng: &mut Rng) -> String {
    let content = if rng.chance(55) {
        let n = rng.range(3, 8);
        (0..n)
            .map(|_| rng.pick(WORDS))
            .collect::<Vec<_>>()
            .join(" ")
    } else if rng.chance(50) {
        rng.hex(12, 32)
    } else {
        rng.b64tok(16, 28)
    };
    match rng.below(5) {
        0 => format!("<span style=\"display:none\">{}</span>", content),
        1 => format!("<font color=\"#ffffff\">{}</font>", content),
        2 => format!("<span style=\"font-size:0px\">{}</span>", content),
        3 => format!(
            "<span style=\"display: none !important\">{}</span>",
            content
        ),
        _ => format!(
            "<span style=\"display:none;max-height:0px;overflow:hidden;mso-hide:all\">{}</span>",
            content
        ),
    }
}

fn html_comment(rng: &mut Rng) -> String {
    match rng.below(4) {
        0 => "<!---->".to_string(),
        1 => "<!-- x --->".to_string(),
        2 => "<!-- -->".to_string(),
        _ => format!("<!--{}-->", rng.hex(4, 8)),
    }
}

/// HTML tokens of one block; the flag says whether the token is a plain word that may
/// receive a comment inside it.
fn html_tokens(text: &str) -> Vec<(String, bool)> {
    text.split(' ')
        .filter(|w| !w.is_empty())
        .map(|w| {
            if w.starts_with("https://") {
                let url = w.trim_end_matches(|c: char| c == '.' || c == ',');
                let trail = &w[url.len()..];
                let e = html_escape(url);
                (format!("<a href=\"{}\">{}</a>{}", e, e, trail), false)
            } else {
                let ok = w.chars().count() >= 5 && w.chars().all(|c| c.is_alphabetic());
                (html_escape(w), ok)
            }
        })
        .collect()
}

/// Encode a text part: returns (Content-Transfer-Encoding, encoded body).
fn encode_part(text: &str, latin1: bool, choice: usize) -> (&'static str, Vec<u8>) {
    let bytes = encode_charset(text, latin1);
    let eight = bytes.iter().any(|&b| b >= 0x80);
    let long = bytes.split(|&b| b == b'\n').any(|l| l.len() > 998);
    match choice {
        0 if !long => (if eight { "8bit" } else { "7bit" }, bytes),
        0 | 1 => ("quoted-printable", qp(&bytes).into_bytes()),
        _ => ("base64", base64_body(&bytes).into_bytes()),
    }
}

fn content_type(mime: &str, cs: &str, quoted: bool) -> String {
    if quoted {
        format!("{}; charset=\"{}\"", mime, cs)
    } else {
        format!("{}; charset={}", mime, cs)
    }
}

/// Build one campaign message. Returns (envelope sender, Message-ID, message bytes).
fn build_campaign_msg(c: &Campaign, k: usize, t: i64, rng: &mut Rng) -> (String, String, Vec<u8>) {
    let (first, email, name) = campaign_recipient(rng);
    let (vars, url2) = campaign_vars(c, t, first, &email, &name, rng);
    let w = campaign_words(c, &vars, &url2, (first, &email, &name), rng);
    let plain = render_plain(&w);
    let non_ascii = !plain.is_ascii();
    let latin1 = non_ascii && rng.chance(50);
    let cs = if non_ascii {
        if latin1 {
            rng.pick(&["iso-8859-1", "ISO-8859-1"])
        } else {
            rng.pick(&["utf-8", "UTF-8"])
        }
    } else {
        rng.pick(&["us-ascii", "utf-8", "iso-8859-1"])
    };
    let structure = rng.below(10); // 0-3 plain, 4-5 html, 6-9 alternative
    let need_html = structure >= 4;

    let html = if need_html {
        render_html(c, &w, cs, rng)
    } else {
        String::new()
    };
    let text = Rendered {
        plain: &plain,
        html: &html,
        latin1,
        cs,
        structure,
    };
    campaign_message(c, k, t, &vars, (&name, &email), &text, rng)
}

/// A campaign's recipient: first name, address and whole name.
fn campaign_recipient(rng: &mut Rng) -> (&'static str, String, String) {
    // Recipient.
    let first: &'static str = rng.pick(FIRST_NAMES);
    let last = rng.pick(LAST_NAMES);
    let rdom = rng.pick(RCPT_DOMAINS);
    let lf = first.to_ascii_lowercase();
    let ll = last.to_ascii_lowercase();
    let email = match rng.below(5) {
        0 => format!("{}.{}@{}", lf, ll, rdom),
        1 => format!("{}{}@{}", &lf[..1], ll, rdom),
        2 => format!("{}{}@{}", lf, rng.range(1, 99), rdom),
        3 => format!("{}_{}@{}", lf, ll, rdom),
        _ => format!("{}.{}{}@{}", lf, ll, rng.range(1, 9), rdom),
    };
    let name = format!("{} {}", first, last);

    (first, email, name)
}

/// The per-recipient variables of a campaign's templates, and its
/// unsubscribe link.
fn campaign_vars(
    c: &Campaign,
    t: i64,
    first: &str,
    email: &str,
    name: &str,
    rng: &mut Rng,
) -> (Vec<(&'static str, String)>, String) {
    let id = format!("{}{}", c.id_prefix, rng.range(100_000, 9_999_999));
    let code = rng.code(8);
    let amount = format!(
        "{}{}.{:02}",
        c.currency,
        commas(rng.range(c.amount.0, c.amount.1)),
        rng.below(100)
    );
    let date = long_date(t + rng.range(2, 6) as i64 * DAY);
    let seg = rng.pick(URL_SEGMENTS);
    let h = rng.hex(8, 8);
    let uid = rng.range(10_000, 99_999);
    let r = rng.urltok(8, 14);
    let url = if rng.chance(30) {
        let m = rng.hex(4, 4);
        format!(
            "https://{}/{}/{}?uid={}&r={}&m={}",
            c.track_host, seg, h, uid, r, m
        )
    } else {
        format!("https://{}/{}/{}?uid={}&r={}", c.track_host, seg, h, uid, r)
    };
    let url2 = format!(
        "https://{}/unsub/{}?e={}",
        c.track_host,
        rng.hex(12, 12),
        base64url_nopad(email.as_bytes())
    );
    let vars: Vec<(&str, String)> = vec![
        ("name", name.to_owned()),
        ("first", first.to_string()),
        ("email", email.to_owned()),
        ("id", id),
        ("code", code),
        ("amount", amount),
        ("date", date),
        ("url", url),
    ];

    (vars, url2)
}

/// The words of one campaign message, before rendering.
struct Words {
    greeting: String,
    paras: Vec<String>,
    sig: Vec<String>,
    footer: String,
    tail: Vec<String>,
    width: usize,
}

/// The message's words: greeting, paragraphs with the campaign's dress
/// (sentences dropped or swapped, dictionary words and random tokens),
/// signature, footer and tail.
fn campaign_words(
    c: &Campaign,
    vars: &[(&str, String)],
    url2: &str,
    (first, email, name): (&str, &str, &str),
    rng: &mut Rng,
) -> Words {
    let greeting = match rng.below(6) {
        0 => format!("Dear {},", name),
        1 => format!("Hello {},", email),
        2 => format!("Hi {},", first),
        3 => format!("Dear {},", first),
        4 => format!("Dear valued customer {},", name),
        _ => format!("{},", first),
    };

    let mut paras: Vec<Vec<String>> = c
        .paras
        .iter()
        .map(|p| p.iter().map(|s| subst(s, vars)).collect())
        .collect();

    // Heavy: drop one sentence or swap two adjacent sentences.
    if c.intensity == 2 {
        let cands: Vec<usize> = (0..paras.len()).filter(|&i| paras[i].len() >= 2).collect();
        let pi = cands[rng.below(cands.len())];
        if rng.chance(50) {
            let sc: Vec<usize> = (0..paras[pi].len())
                .filter(|&j| !paras[pi][j].contains("https://"))
                .collect();
            let j = sc[rng.below(sc.len())];
            paras[pi].remove(j);
        } else {
            let j = rng.below(paras[pi].len() - 1);
            paras[pi].swap(j, j + 1);
        }
    }

    // Dictionary-word busters.
    let mut tail: Vec<String> = Vec::new();
    let nwords = match c.intensity {
        0 => 0,
        1 => rng.range(2, 5),
        _ => rng.range(8, 20),
    };
    let words: Vec<&str> = (0..nwords).map(|_| rng.pick(WORDS)).collect();
    if c.intensity == 1 && rng.chance(50) {
        tail.push(words.join(" "));
    } else {
        for w in &words {
            insert_word(&mut paras, w, rng);
        }
    }

    // Random token busters.
    let ntok = match c.intensity {
        0 => 1,
        1 => rng.range(1, 2),
        _ => rng.range(2, 4),
    };
    for i in 0..ntok {
        let tok = if rng.chance(50) {
            rng.hex(8, 32)
        } else {
            rng.b64tok(12, 24)
        };
        if i == 0 {
            let line = match rng.below(4) {
                0 => tok,
                1 => format!("ref: {}", tok),
                2 => format!("[{}]", tok),
                _ => format!("#{}", tok),
            };
            tail.push(line);
        } else {
            insert_word(&mut paras, &tok, rng);
        }
    }

    let para_text: Vec<String> = paras.iter().map(|p| p.join(" ")).collect();
    let sig: Vec<String> = c.sig.iter().map(|s| subst(s, vars)).collect();
    let footer = format!("{} {}", rng.pick(UNSUB_PHRASES), url2);

    let width = rng.pick(&[0usize, 60, 72, 78]);

    Words {
        greeting,
        paras: para_text,
        sig,
        footer,
        tail,
        width,
    }
}

/// The plain-text rendering of `w`.
fn render_plain(w: &Words) -> String {
    // Plain text rendering.
    let mut plain = String::new();
    plain.push_str(&w.greeting);
    plain.push_str("\n\n");
    for p in &w.paras {
        plain.push_str(&wrap(p, w.width));
        plain.push_str("\n\n");
    }
    plain.push_str(&w.sig.join("\n"));
    plain.push_str("\n\n");
    plain.push_str(&wrap(&w.footer, w.width));
    plain.push('\n');
    if !w.tail.is_empty() {
        plain.push('\n');
        for l in &w.tail {
            plain.push_str(&wrap(l, w.width));
            plain.push('\n');
        }
    }

    plain
}

/// The HTML rendering of `w`, dressed as the campaign's intensity says
/// (comments inside words, hidden elements).
fn render_html(c: &Campaign, w: &Words, cs: &str, rng: &mut Rng) -> String {
    // Blocks: (kind, tokens). kind: 'p' paragraph, 's' signature, 't' tail.
    let mut blocks: Vec<(char, Vec<(String, bool)>)> = Vec::new();
    blocks.push(('p', html_tokens(&w.greeting)));
    for p in &w.paras {
        blocks.push(('p', html_tokens(p)));
    }
    let mut stoks: Vec<(String, bool)> = Vec::new();
    for (i, l) in w.sig.iter().enumerate() {
        let mut lt = html_tokens(l);
        if i + 1 < w.sig.len() {
            if let Some(last_tok) = lt.last_mut() {
                last_tok.0.push_str("<br>");
                last_tok.1 = false;
            }
        }
        stoks.extend(lt);
    }
    blocks.push(('s', stoks));
    blocks.push(('p', html_tokens(&w.footer)));
    for l in &w.tail {
        blocks.push(('t', html_tokens(l)));
    }

    let (ncomments, nhidden) = match c.intensity {
        0 => (rng.below(2), rng.below(2)),
        1 => (rng.range(1, 2), rng.range(1, 3)),
        _ => (rng.range(2, 6), rng.range(3, 6)),
    };
    // Comments inside words: va<!---->lued.
    for _ in 0..ncomments {
        let cands: Vec<(usize, usize)> = blocks
            .iter()
            .enumerate()
            .flat_map(|(bi, b)| {
                b.1.iter()
                    .enumerate()
                    .filter(|(_, tk)| tk.1)
                    .map(move |(ti, _)| (bi, ti))
            })
            .collect();
        if cands.is_empty() {
            break;
        }
        let (bi, ti) = cands[rng.below(cands.len())];
        let chars: Vec<char> = blocks[bi].1[ti].0.chars().collect();
        let mid = chars.len() / 2;
        let a: String = chars[..mid].iter().collect();
        let b: String = chars[mid..].iter().collect();
        let cm = html_comment(rng);
        blocks[bi].1[ti] = (format!("{}{}{}", a, cm, b), false);
    }
    // Hidden elements between words of paragraphs.
    for _ in 0..nhidden {
        let pblocks: Vec<usize> = (0..blocks.len()).filter(|&i| blocks[i].0 == 'p').collect();
        let bi = pblocks[rng.below(pblocks.len())];
        let pos = rng.range(0, blocks[bi].1.len());
        let el = hidden_element(rng);
        blocks[bi].1.insert(pos, (el, false));
    }

    let mut body = String::new();
    for (kind, toks) in &blocks {
        let inner = toks
            .iter()
            .map(|t| t.0.as_str())
            .collect::<Vec<_>>()
            .join(" ");
        let line = if *kind == 't' {
            format!("<p style=\"color:#999999;font-size:11px\">{}</p>", inner)
        } else {
            format!("<p>{}</p>", inner)
        };
        body.push_str(&wrap(&line, w.width));
        body.push('\n');
    }
    match rng.below(3) {
        0 => format!(
            "<html>\n<head>\n<meta http-equiv=\"Content-Type\" content=\"text/html; charset={}\">\n<title></title>\n</head>\n<body>\n{}</body>\n</html>\n",
            cs, body
        ),
        1 => format!(
            "<!DOCTYPE html>\n<html><body style=\"font-family:Arial,sans-serif;font-size:14px\">\n{}</body></html>\n",
            body
        ),
        _ => format!("<div>\n{}</div>\n", body),
    }
}

/// The texts of a message and how they are sent.
struct Rendered<'a> {
    plain: &'a str,
    html: &'a str,
    latin1: bool,
    cs: &'a str,
    structure: usize,
}

/// Headers and body of a campaign message: (envelope sender, Message-ID,
/// bytes).
fn campaign_message(
    c: &Campaign,
    k: usize,
    t: i64,
    vars: &[(&str, String)],
    (name, email): (&str, &str),
    text: &Rendered<'_>,
    rng: &mut Rng,
) -> (String, String, Vec<u8>) {
    let (latin1, cs, structure) = (text.latin1, text.cs, text.structure);
    // Headers.
    let domain = rng.pick(c.sender_domains);
    let local = rng.pick(c.from_locals);
    let from_name = rng.pick(c.from_names);
    let env = if rng.chance(40) {
        format!("bounce-{}@{}", rng.hex(6, 10), domain)
    } else {
        format!("{}@{}", local, domain)
    };
    let msgid = format!("{}.{}.{}@{}", c.label, k + 1, rng.hex(4, 4), domain);
    let subj_plain = subst(rng.pick(c.subjects), vars);
    let subject = if !subj_plain.is_ascii() {
        rfc2047(&subj_plain, rng.chance(30))
    } else if rng.chance(12) {
        rfc2047(&subj_plain, false)
    } else {
        subj_plain
    };
    let from_hdr = if from_name.is_ascii() {
        format!("\"{}\" <{}@{}>", from_name, local, domain)
    } else {
        format!("{} <{}@{}>", rfc2047(from_name, latin1), local, domain)
    };
    let to_hdr = if rng.chance(50) {
        format!("\"{}\" <{}>", name, email)
    } else {
        format!("{} <{}>", name, email)
    };
    let off = rng.pick(&[0i64, -300, 60, 120, -480, 330, -180]);

    let mut m = Vec::new();
    hdr(&mut m, "From", &from_hdr);
    hdr(&mut m, "To", &to_hdr);
    hdr(&mut m, "Subject", &subject);
    hdr(&mut m, "Date", &rfc2822(t, off));
    hdr(&mut m, "Message-ID", &format!("<{}>", msgid));
    if rng.chance(30) {
        hdr(&mut m, "X-Mailer", rng.pick(MAILERS));
    }
    if rng.chance(25) {
        hdr(
            &mut m,
            "Reply-To",
            &format!("{}@{}", local, rng.pick(c.sender_domains)),
        );
    }
    hdr(&mut m, "MIME-Version", "1.0");
    let q = rng.chance(50);
    match structure {
        0..=5 => {
            let (mime, text) = if structure <= 3 {
                ("text/plain", text.plain)
            } else {
                ("text/html", text.html)
            };
            let (cte, body) = encode_part(text, latin1, rng.below(3));
            hdr(&mut m, "Content-Type", &content_type(mime, cs, q));
            hdr(&mut m, "Content-Transfer-Encoding", cte);
            m.push(b'\n');
            m.extend_from_slice(&body);
        }
        _ => {
            let boundary = if rng.chance(50) {
                format!("----=_Part_{}_{}", rng.range(1000, 99999), rng.hex(12, 12))
            } else {
                format!("b1_{}", rng.hex(32, 32))
            };
            hdr(
                &mut m,
                "Content-Type",
                &format!("multipart/alternative; boundary=\"{}\"", boundary),
            );
            m.push(b'\n');
            if rng.chance(50) {
                m.extend_from_slice(b"This is a multi-part message in MIME format.\n\n");
            }
            for (mime, text) in [("text/plain", text.plain), ("text/html", text.html)] {
                let (cte, body) = encode_part(text, latin1, rng.below(3));
                m.extend_from_slice(format!("--{}\n", boundary).as_bytes());
                hdr(&mut m, "Content-Type", &content_type(mime, cs, q));
                hdr(&mut m, "Content-Transfer-Encoding", cte);
                m.push(b'\n');
                m.extend_from_slice(&body);
            }
            m.extend_from_slice(format!("--{}--\n", boundary).as_bytes());
        }
    }
    (env, msgid, m)
}

fn base_time() -> i64 {
    days_from_civil(2025, 1, 6) * DAY + 10 * 3600
}

/// Index of the first kit of the Northgate family in `CAMPAIGNS`.
const FAMILY_FIRST: usize = 12;

fn gen_campaigns(mbox: &mut Mbox) {
    let t0 = base_time();
    // (time, campaign index, message index, envelope sender, Message-ID, bytes)
    type Built = (i64, usize, usize, String, String, Vec<u8>);
    let mut all: Vec<Built> = Vec::new();
    for (ci, c) in CAMPAIGNS.iter().enumerate() {
        let mut rng = Rng::new(0xB0_1C_00 + ci as u64 * 0x1_0000_0001);
        // The family's kits (c13 on) run at the same time, as one
        // operation's kits do; the others come five hours apart.
        let start = if ci >= FAMILY_FIRST {
            t0 + FAMILY_FIRST as i64 * 5 * 3600 + (ci - FAMILY_FIRST) as i64 * 300
        } else {
            t0 + ci as i64 * 5 * 3600
        };
        let mut t = start + rng.range(0, 3600) as i64;
        for k in 0..c.count {
            let (env, msgid, bytes) = build_campaign_msg(c, k, t, &mut rng);
            all.push((t, ci, k, env, msgid, bytes));
            t += rng.range(20, 420) as i64;
        }
    }
    all.sort_by_key(|a| (a.0, a.1, a.2));
    for (t, ci, _, env, msgid, bytes) in &all {
        mbox.add(env, *t, bytes, Some(msgid), CAMPAIGNS[*ci].label);
    }
}

// ---------------------------------------------------------------------------
// Ham
// ---------------------------------------------------------------------------

struct Thread {
    subject: &'static str,
    /// List address all messages go to; `None` means "reply to the previous sender".
    list: Option<&'static str>,
    people: &'static [(&'static str, &'static str)],
    /// (author index, style, new text). Style: 'n' first message, 'b' bottom-post with
    /// full quote, 't' top-post with full quote, 'r' trimmed quote of the previous new
    /// text, 'o' Outlook "-----Original Message-----".
    msgs: &'static [(usize, char, &'static str)],
}

const THREADS: &[Thread] = &[
    Thread {
        subject: "Offsite planning for Q2",
        list: Some("design-team@example.com"),
        people: &[
            ("Priya Natarajan", "priya.natarajan@example.com"),
            ("Tom Becker", "tbecker@example.com"),
            ("Lena Vogel", "lena.vogel@example.com"),
            ("Marcus Oduya", "marcus@example.com"),
        ],
        msgs: &[
            (0, 'n', "Hi all,\n\nI'd like to lock in the date for the Q2 offsite before the venue options disappear.\nThe two candidates are April 24-25 at the lake lodge or May 8-9 at the old brewery space downtown.\nPlease reply with your preference and any hard conflicts by Friday.\n\nThanks,\nPriya"),
            (1, 'b', "April works better for me, May 8 is my sister's wedding.\n\nTom"),
            (2, 't', "Either is fine for me. The brewery has better transit access though,\nwhich matters for the folks without a car.\nCan we get a quote for catering from both?\n\nLena"),
            (3, 'o', "I can call both venues tomorrow morning and ask about catering and AV.\nI'll also check whether the lodge has enough rooms for us to stay overnight.\n\nMarcus"),
            (0, 'r', "Great, thanks Marcus. Given Tom's conflict let's go with April unless the lodge quote is outrageous.\nI'll send a calendar hold tonight.\n\nPriya"),
        ],
    },
    Thread {
        subject: "Build server disk full again",
        list: Some("infra@example.net"),
        people: &[
            ("Jonas Eriksen", "jonas.eriksen@example.net"),
            ("Amy Chen", "amy.chen@example.net"),
            ("Rafael Ortiz", "rortiz@example.net"),
        ],
        msgs: &[
            (0, 'n', "The nightly builds failed again because /var/lib/builds on ci-02 hit 100%.\nI cleaned out artifacts older than 30 days by hand but that only freed 40 GB.\nWe need a proper retention policy, this is the third time this month.\n\nJonas"),
            (1, 'b', "I think the culprit is the docker layer cache, not the artifacts.\nLast time I checked it was over 300 GB. Can you run 'docker system df' and post the output?"),
            (0, 'b', "You're right:\n\n  Images          412   118 GB\n  Build Cache     1934  286 GB\n\nI'll prune the build cache now."),
            (2, 'o', "Please don't prune everything, the arm64 images take four hours to rebuild.\nCould we prune only entries unused for more than 7 days? There's a filter flag for that."),
            (1, 'r', "Agreed, --filter until=168h should do it.\nI'll add it as a weekly cron job and an alert at 85% disk usage."),
            (0, 't', "Cron job is in place and the alert fired correctly in a test.\nClosing this out, thanks both."),
        ],
    },
    Thread {
        subject: "Draft of the grant proposal - comments?",
        list: Some("lab@example.org"),
        people: &[
            ("Dr. Helen Marsh", "h.marsh@example.org"),
            ("Kofi Mensah", "kofi.mensah@example.org"),
            ("Sara Lindqvist", "sara.l@example.org"),
            ("Yuki Tanaka", "ytanaka@example.org"),
        ],
        msgs: &[
            (0, 'n', "Dear all,\n\nAttached is the current draft of the proposal for the coastal sediment project.\nThe budget section is still rough, and the aims need tightening.\nComments by Wednesday, please, so I have time to incorporate them before the internal review.\n\nBest,\nHelen"),
            (1, 'b', "Aim 2 reads a bit like a fishing expedition.\nCould we state a concrete hypothesis about the nitrogen flux?\nI can draft two sentences if that helps."),
            (2, 'o', "Budget comment: the sequencing costs are based on last year's price list.\nThe core facility raised prices by about 15 percent in January, so we should update that line."),
            (0, 'r', "Kofi, yes please draft those sentences.\nSara, good catch, can you send me the new price sheet?"),
            (3, 'b', "Small thing: figure 2 still has the old station names.\nI'll regenerate it with the new labels tonight."),
            (1, 't', "Here is my suggestion for Aim 2:\n\"We hypothesize that seasonal hypoxia increases benthic nitrogen release by at least a factor of two.\"\nFeel free to edit."),
            (0, 'b', "Perfect, that's exactly what it needed.\nThanks everyone, I'll circulate a revised version on Thursday."),
        ],
    },
    Thread {
        subject: "Choir rehearsal schedule change",
        list: Some("altos-and-friends@example.net"),
        people: &[
            ("Martha Klein", "martha.klein@example.net"),
            ("Dave Porter", "dave.porter@example.com"),
            ("Inès Moreau", "ines.moreau@example.org"),
            ("Gus Whitfield", "gus@whitfield.example"),
        ],
        msgs: &[
            (0, 'n', "Hello singers,\n\nThe church hall is being repainted, so rehearsals on the 14th and 21st will move to the community centre on Birch Street.\nSame time, 7:30 pm. Parking is behind the building.\n\nMartha"),
            (1, 'b', "Is the community centre accessible?\nMy mother uses a walker and usually comes to listen."),
            (0, 'r', "Yes, there's a ramp at the side entrance and the hall is on the ground floor."),
            (2, 'o', "I'll be away on the 21st for work, sorry.\nCould someone record the new arrangement of the Rutter piece so I can practise?\n\nInès"),
            (3, 'b', "I can record it on my phone.\nThe sound won't be amazing but the parts should be clear enough."),
            (2, 't', "That would be wonderful, thank you Gus!"),
            (1, 'b', "Thanks Martha. We'll see you on the 14th."),
            (0, 't', "One more thing: please bring your folders, the community centre has no spare copies of the music.\nSee you all soon."),
        ],
    },
    Thread {
        subject: "Bug in CSV import when file has BOM",
        list: Some("devel@lists.example.org"),
        people: &[
            ("Nils Bergström", "nils.bergstrom@example.com"),
            ("Chloé Dubois", "chloe.dubois@example.org"),
            ("Arjun Mehta", "arjun@mehta.example"),
        ],
        msgs: &[
            (0, 'n', "Hi,\n\nWhen I import a CSV exported from a spreadsheet program, the first column header comes out as \"\\ufeffid\" instead of \"id\".\nSo lookups by column name fail for the first column only.\nThis is with version 2.3.1 on Linux. Is this a known issue?\n\nNils"),
            (1, 'b', "Yes, the reader doesn't strip the byte order mark.\nThere is an open issue for it but nobody has picked it up yet.\nAs a workaround you can open the file with encoding utf-8-sig."),
            (0, 'b', "The workaround helps, thanks.\nWould a patch that strips the BOM in the reader be welcome?"),
            (2, 'b', "A patch would be great. Please make it conditional so that files without a BOM are not affected,\nand add a test with a tiny fixture file."),
            (0, 't', "Patch is up for review. I added two tests: one with a BOM and one with a BOM followed by an empty file."),
            (1, 'r', "Looks good overall. One nit: the helper function should be private,\nit doesn't need to be part of the public API."),
            (0, 'b', "Done, moved it into the module and made it private."),
            (2, 'o', "Merged. It'll be in 2.3.2 which should go out next week.\nThanks for the contribution, Nils!"),
            (0, 't', "Thanks for the quick reviews."),
        ],
    },
    Thread {
        subject: "Apartment lease renewal",
        list: None,
        people: &[
            ("Ben Arkwright", "ben.arkwright@example.net"),
            ("Karen Holt", "karen.holt@oakview-pm.example"),
            ("Lucy Arkwright", "lucy.arkwright@example.net"),
        ],
        msgs: &[
            (0, 'n', "Hi Karen,\n\nOur lease for unit 4B ends on June 30. We'd like to renew for another year.\nCould you let us know whether the rent will change and what the next steps are?\n\nThanks,\nBen Arkwright"),
            (1, 'o', "Hi Ben,\n\nThanks for reaching out early. The owner is proposing a 3 percent increase,\nwhich would bring the monthly rent to 1,545.\nI can send the renewal paperwork next week.\n\nKaren Holt\nOakview Property Management"),
            (0, 'b', "That's a bit more than we hoped.\nIs there any flexibility if we sign for two years instead of one?"),
            (1, 'o', "I asked the owner. For a two-year term he would keep the increase at 2 percent for both years.\n\nKaren"),
            (2, 'b', "Hi Karen, this is Lucy, Ben's partner. Two years at 2 percent works for us.\nCould you also ask about fixing the bathroom fan? It has been rattling since March."),
            (1, 'o', "Noted. I'll put in a maintenance request for the fan today,\nand the two-year paperwork will come by email.\n\nKaren"),
            (0, 't', "Thank you. We received the documents and will sign this weekend."),
            (1, 'o', "Great. The maintenance technician can come Tuesday between 9 and 12. Does that work?\n\nKaren"),
            (2, 'r', "Tuesday morning is fine, I'll be working from home."),
            (1, 'o', "Perfect, I've confirmed the appointment.\nSigned copies of the lease will be returned to you within a week.\n\nKaren"),
        ],
    },
    Thread {
        subject: "Migrating the wiki to the new host",
        list: Some("ops@example.com"),
        people: &[
            ("Farah Haddad", "farah.haddad@example.com"),
            ("Pete Novak", "pnovak@example.com"),
            ("Grace Liu", "grace.liu@example.com"),
            ("Oscar Lindgren", "oscar.lindgren@example.com"),
        ],
        msgs: &[
            (0, 'n', "Hi team,\n\nThe old wiki server is out of support at the end of the month, so I'd like to migrate to the new VM this weekend.\nPlan: freeze edits Friday 6 pm, dump the database, restore on the new host, switch DNS Saturday morning.\nObjections or things I'm missing?\n\nFarah"),
            (1, 'b', "What about attachments? They live on the filesystem, not in the database."),
            (0, 'b', "Good point. I'll rsync the uploads directory as well, it's about 12 GB."),
            (2, 'o', "Please lower the DNS TTL today so the switch propagates quickly on Saturday.\nIt's currently set to one day.\n\nGrace"),
            (0, 'r', "TTL lowered to five minutes."),
            (3, 'b', "Is the new host behind the single sign-on proxy already?\nOtherwise people will hit a login page they've never seen."),
            (2, 'b', "It is, I configured it last week. Group mappings are the same as before."),
            (1, 't', "I ran a test restore on a scratch VM. It took 25 minutes\nand the search index had to be rebuilt afterwards, another 10 minutes."),
            (0, 'r', "Thanks Pete, that helps with the timing. I'll announce a two-hour window to be safe."),
            (3, 'o', "Announcement looks good. Can we keep the old server read-only for a week as a fallback?\n\nOscar"),
            (0, 'b', "Yes, I'll keep it running read-only until the 15th and then shut it down."),
            (2, 't', "Migration done, DNS has switched and I've checked a dozen pages including attachments.\nNice work everyone."),
        ],
    },
];

const ML_FOOTER: &str = "_______________________________________________
Tinkerers mailing list
tinkerers@lists.example.org
https://lists.example.org/mailman/listinfo/tinkerers
To unsubscribe, send a message to tinkerers-leave@lists.example.org
Archives: https://lists.example.org/pipermail/tinkerers/
";

const ML_AD: &str = "----------------------------------------------------------------------
This list is supported by Sparkfield Components - hobby electronics
shipped the same day. Visit https://shop.sparkfield.example/?ref=list
";

const ML_POSTERS: &[(&str, &str)] = &[
    ("Hannah Brooks", "hannah.b@example.com"),
    ("Viktor Petrov", "vpetrov@example.net"),
    ("Jo Alvarez", "jo.alvarez@example.org"),
    ("Sam Whitaker", "sam@whitaker.example"),
    ("Ruth Adeyemi", "ruth.adeyemi@example.com"),
    ("Tobias Kern", "tobias.kern@example.net"),
    ("Mina Park", "mina.park@example.org"),
    ("Felix Grant", "fgrant@example.com"),
    ("Olu Bankole", "olu@bankole.test"),
    ("Greta Holm", "greta.holm@example.net"),
    ("Paolo Ricci", "paolo.ricci@example.org"),
    ("Dana Kim", "dana.kim@example.com"),
];

const ML_POSTS: &[(&str, &str)] = &[
    ("Zigbee coordinator keeps dropping devices", "Since the last firmware update my Zigbee coordinator loses about a third of the devices every night.\nThey come back after a restart of the bridge. Anyone else seeing this?"),
    ("Re: Zigbee coordinator keeps dropping devices", "Same here. Moving the stick away from the USB 3 port with an extension cable fixed it for me.\nUSB 3 is notorious for 2.4 GHz interference."),
    ("Cheap temperature sensors that actually last?", "Looking for battery-powered temperature sensors that run at least a year on one cell.\nThe ones I bought last winter died after four months.\nBudget is around 15 per sensor."),
    ("Meetup next Thursday", "Reminder: the monthly meetup is next Thursday at 7 pm in the makerspace.\nBring your half-finished projects!\nThere will be pizza; please reply off-list if you have dietary restrictions."),
    ("Garage door opener integration", "I finally wired a relay to my garage door opener and want to share what worked.\n\n- ESP32 board with a 3.3 V relay module\n- reed switch on the door frame for open/closed state\n- powered from the opener's 24 V accessory terminal via a buck converter\n\nThe only tricky part was debouncing the reed switch.\nA 50 ms software debounce was enough.\nHappy to post the config if anyone wants it."),
    ("Re: Garage door opener integration", "Please do post it!\nDid you add any safety interlock so it can't close while the car is under it?"),
    ("Energy monitoring with CT clamps", "Has anyone compared the accuracy of the cheap CT clamp boards against the utility meter?\nMine reads about 4 percent high over a week."),
    ("Re: Energy monitoring with CT clamps", "Calibrate against a known resistive load like a kettle.\nAfter that mine agrees with the meter within 1 percent."),
    ("Voice assistant without the cloud", "Any recommendations for a fully local voice assistant?\nI tried two projects and both needed an internet connection for speech recognition.\nA Raspberry Pi 5 is what I have available."),
    ("Solder fumes", "Slightly off topic: what are people using for fume extraction at home?\nA carbon filter fan or ducting out the window?"),
    ("Re: Solder fumes", "Ducting out the window, with an inline fan. Carbon filters saturate faster than you'd think."),
    ("Thread border router question", "If I have two Thread border routers from different vendors, will they form one network or two?\nThe documentation is vague on this."),
    ("Re: Thread border router question", "Two networks unless you share the credentials between them.\nSome vendors let you export the dataset, others don't."),
    ("Blinds motor recommendations", "We have six windows with roller blinds.\nIs retrofitting motors worth it or should I buy motorised blinds outright?\nThe windows are all standard sizes."),
    ("Flashing custom firmware on smart plugs", "Heads up: the newer revision of the popular smart plugs uses a different chip\nand can no longer be flashed over the air.\nCheck the FCC ID before buying if you want to run your own firmware."),
    ("Re: Flashing custom firmware on smart plugs", "Thanks for the warning, I almost ordered a ten-pack."),
    ("Backup strategy for config", "How do you back up your automation configs?\nI keep mine in git but secrets are a pain."),
    ("Re: Backup strategy for config", "I keep secrets in a separate file that's excluded from git\nand backed up encrypted to a USB drive once a week."),
    ("Door sensor battery report is wrong", "My door sensors report 100 percent battery right up until they die.\nIs there a way to read the actual voltage instead?"),
    ("Workshop slides", "Slides from last week's workshop on MQTT basics are now on the wiki.\nThanks to everyone who came, and to Jo for the projector."),
    ("Humidity-triggered bathroom fan", "Sharing a small automation that made a noticeable difference.\n\nThe bathroom fan now turns on when humidity rises 10 points above the 24-hour average,\nand turns off when it drops back within 3 points of the average.\nUsing a rolling average instead of a fixed threshold means it works in both summer and winter.\n\nBefore this we had mould in the corner above the shower every spring.\nThis year nothing so far.\n\nThe sensor is a cheap one stuck on the mirror cabinet.\nTotal cost was under 10 including the relay."),
    ("Re: Humidity-triggered bathroom fan", "Nice approach. Did you add a maximum runtime in case the sensor gets stuck?"),
    ("Looking for a used oscilloscope", "Does anyone have a working oscilloscope they want to sell?\nTwo channels is enough. I'm in the north of the city and can pick up."),
    ("LED strip flicker at low brightness", "My LED strips flicker below about 10 percent brightness.\nThe controller uses PWM at what I think is 500 Hz.\nIs a higher PWM frequency the fix, or is this a power supply problem?"),
    ("Re: LED strip flicker at low brightness", "Most likely the PWM frequency combined with gamma correction.\nTry 2 kHz or higher and see if it goes away."),
    ("New member introduction", "Hi everyone, I'm Tobias. I just moved into an old house with questionable wiring and lots of ideas.\nMostly lurking for now, but looking forward to learning from you all."),
    ("Re: New member introduction", "Welcome Tobias! Get an electrician to look at the wiring before you start adding gadgets."),
    ("Presence detection with mmWave", "I've been testing one of the 24 GHz mmWave presence sensors in the office.\nIt detects someone sitting still at the desk, which PIR sensors never managed.\nDownside: it also detects the ceiling fan unless you tune the distance gates."),
    ("Re: Presence detection with mmWave", "Which model? Some of them have a Bluetooth app for tuning the gates,\nwhich is much easier than doing it over serial."),
    ("List admin: moving to new server", "The list will move to a new server on Sunday.\nExpect a few hours of delay for messages sent during the move.\nNo action is needed on your part.\n\n-- \nJo (list admin)"),
];

const DISCLAIMER: &str = "CONFIDENTIALITY NOTICE: This email message and any attachments are intended solely for the use of the addressee(s) named above and may contain information that is privileged, confidential, or otherwise protected from disclosure under applicable law. If you are not the intended recipient, you are hereby notified that any review, dissemination, distribution, or copying of this communication is strictly prohibited. If you have received this message in error, please notify the sender immediately by reply email and permanently delete the original message and any copies. Email transmission cannot be guaranteed to be secure or error-free.";

const HF_STAFF: &[(&str, &str)] = &[
    ("Ruth Okafor", "r.okafor@harborfinch.example"),
    ("Simon Reyes", "s.reyes@harborfinch.example"),
    ("Anna Petrovic", "a.petrovic@harborfinch.example"),
    ("Daniel Brooks", "d.brooks@harborfinch.example"),
    ("Marta Kowalski", "accounts@harborfinch.example"),
    ("Harbor & Finch Office", "office@harborfinch.example"),
];

/// (staff index, recipient, subject, body)
const HF_MAIL: &[(usize, &str, &str, &str)] = &[
    (0, "daniel.lee@example.net", "Revised engagement letter", "Hi Daniel,\n\nPlease find attached the revised engagement letter. The only change is the fee cap in section 4.\n\nKind regards,\nRuth Okafor"),
    (1, "k.lindholm@example.com", "Call on Thursday", "Dear Ms. Lindholm,\n\nThis is to confirm our call on Thursday at 2 pm. I will dial in using the number you provided.\n\nBest regards,\nSimon Reyes"),
    (0, "litigation@harborfinch.example", "Carver matter - new filing deadline", "Team,\n\nThe filing deadline for the Carver matter has been moved to the 28th.\nPlease update your calendars and let me know if that creates a conflict.\n\nRuth"),
    (2, "kwame.osei@example.org", "Signed documents received", "Hello Mr. Osei,\n\nWe have received the signed documents, thank you.\nThe originals will be kept in our archive and scanned copies are available on request.\n\nSincerely,\nAnna Petrovic\nParalegal"),
    (5, "all-staff@harborfinch.example", "Second floor printer", "Hi all,\n\nThe printer on the second floor is out of toner. A replacement has been ordered and should arrive tomorrow.\n\nFacilities"),
    (1, "jhuang@example.net", "Lease assignment question", "Dear Ms. Huang,\n\nFollowing up on your question about the lease assignment: the landlord's consent is required under clause 12,\nbut it may not be unreasonably withheld.\nI suggest we send a formal request this week.\n\nBest,\nSimon Reyes"),
    (0, "d.brooks@harborfinch.example", "Shareholder agreement", "Daniel,\n\nCould you send me the final version of the shareholder agreement before noon?\nI want to review the drag-along clause once more.\n\nThanks,\nRuth"),
    (5, "all-staff@harborfinch.example", "Compliance training reminder", "Reminder: the annual compliance training is due by the end of the month.\nIt takes about 40 minutes and can be completed online.\n\nHR Team"),
    (4, "p.fontaine@example.com", "Invoice for March", "Dear Mr. Fontaine,\n\nOur invoice for March is attached. Payment terms are 30 days as usual.\nDo not hesitate to contact me if you have any questions about the line items.\n\nKind regards,\nMarta Kowalski\nAccounts"),
    (2, "s.reyes@harborfinch.example", "Drake witness statement", "Hi Simon,\n\nThe witness statement from Mr. Drake is ready for your review.\nI flagged two passages where his dates differ from the emails.\n\nAnna"),
    (5, "all-staff@harborfinch.example", "Early closing on Friday", "All,\n\nThe office will close at 3 pm on Friday ahead of the holiday weekend.\nPlease make sure any urgent filings are submitted before then.\n\nOffice Management"),
    (0, "dr.ambrose@example.org", "Expert report - follow-up", "Dear Dr. Ambrose,\n\nThank you for your expert report.\nWe have a few follow-up questions on the methodology in section 3, which I'll send separately.\n\nSincerely,\nRuth Okafor"),
    (3, "s.reyes@harborfinch.example", "Extension agreed", "Simon,\n\nOpposing counsel agreed to a two-week extension.\nI'll draft the stipulation and send it over for signature tomorrow.\n\nDaniel"),
    (5, "m.ferreira@example.net", "Parking permit renewed", "Hello,\n\nYour parking permit for the building garage has been renewed until December.\nThe new sticker is at the front desk.\n\nReception"),
    (1, "e.varga@example.com", "Introduction: Anna Petrovic", "Dear Ms. Varga,\n\nI'm writing to introduce my colleague Anna Petrovic,\nwho will be your day-to-day contact while I am on leave in August.\n\nBest regards,\nSimon Reyes"),
    (3, "r.okafor@harborfinch.example", "Mediation room booking", "Ruth,\n\nThe conference room for the mediation is booked for the 9th and 10th.\nCatering is arranged for twelve people.\n\nThanks,\nDaniel Brooks"),
];

const CI_PROJECTS: &[&str] = &[
    "billing-api",
    "web-frontend",
    "mobile-app",
    "data-pipeline",
    "auth-service",
    "search-indexer",
    "docs-site",
    "report-engine",
];
const CI_BRANCHES: &[&str] = &[
    "main",
    "develop",
    "release/2.4",
    "feature/export-csv",
    "fix/login-timeout",
    "feature/dark-mode",
    "hotfix/invoice-rounding",
    "chore/upgrade-deps",
    "feature/sso",
    "release/3.0",
];
const CI_TESTS: &[&str] = &[
    "test_parse_header",
    "test_login_redirect",
    "test_invoice_total",
    "test_export_empty",
    "test_timezone_offset",
    "test_retry_backoff",
    "test_cache_eviction",
    "test_pagination_last_page",
    "test_unicode_filename",
    "test_session_expiry",
    "test_bulk_delete",
    "test_search_ranking",
    "test_pdf_render",
    "test_rate_limit",
    "test_webhook_signature",
    "test_currency_rounding",
    "test_dark_mode_contrast",
    "test_csv_bom",
    "test_db_migration_0042",
    "test_password_reset",
    "test_image_resize",
    "test_locale_fallback",
    "test_audit_log",
    "test_concurrent_update",
];
const CI_AUTHORS: &[&str] = &[
    "alice", "bkumar", "chen.wei", "dmitri", "eva.s", "fjones", "gabriel", "hana",
];
const CI_COMMITS: &[&str] = &[
    "Refactor session handling",
    "Bump dependencies",
    "Add CSV export endpoint",
    "Fix off-by-one in pagination",
    "Handle empty invoices",
    "Switch to async client",
    "Tidy up logging",
    "Add dark mode palette",
    "Speed up index rebuild",
    "Validate webhook timestamps",
    "Round currency half-even",
    "Retry transient DB errors",
];

const TICKETS: &[(&str, &str)] = &[
    ("printer on floor 3 jams", "Replaced the pickup roller. Please try printing again and let us know if it still jams."),
    ("VPN disconnects every hour", "We pushed a new client profile with a longer rekey interval. Please reconnect once to pick it up."),
    ("cannot access shared drive S:", "Your account was missing from the finance group. Access has been granted, log out and back in."),
    ("new laptop for onboarding", "The laptop is imaged and ready for pickup at the IT desk on Monday morning."),
    ("monitor flickers", "We ordered a replacement DisplayPort cable; it should arrive on Wednesday."),
    ("password reset not arriving", "The reset emails were caught by a filter rule. The rule has been fixed and a new link was sent."),
    ("meeting room display offline", "The display was on the wrong input. It is working again and we labelled the remote."),
    ("request: second monitor", "Approved by your manager. A monitor will be delivered to your desk this week."),
    ("Outlook search returns nothing", "The search index was rebuilt overnight. Results should appear again after a restart."),
    ("phone extension not ringing", "Call forwarding was enabled by mistake. We turned it off, please test with a call."),
    ("badge does not open garage door", "Your badge was added to the garage access group. It may take an hour to sync."),
    ("software install: statistics package", "The package was installed remotely. Please reboot to finish the installation."),
];
const TICKET_AGENTS: &[&str] = &["Alice", "Bongani", "Carla", "Deepak", "Erik", "Fiona"];
const TICKET_STATUS: &[&str] = &["Open", "In progress", "Waiting for customer", "Resolved"];

const SHORT_MAIL: &[(&str, &str)] = &[
    ("Re: Quarterly numbers", "Thanks!\n"),
    ("Re: Lunch tomorrow?", "ok\n"),
    ("Re: Proposal: switch standup to 9:45", "+1\n"),
    ("Scanned contract", "See attached.\n"),
    ("Re: Can you review my PR today?", "Will do.\n"),
    ("Re: Moving the 1:1 to Thursday", "Sounds good, thanks.\n"),
    ("Re: [PATCH v2] fix typo in README", "lgtm\n"),
    ("Re: Keys for the storage room", "Got it.\n"),
    ("(no subject)", ""),
    ("Photos from Saturday", ""),
    ("Fwd: parking", ""),
    ("test", ""),
    ("Re: Re: dinner", "\n\n"),
    ("", " \n"),
];

const SHORT_PEOPLE: &[(&str, &str)] = &[
    ("Lisa Grant", "lisa.grant@example.com"),
    ("Mark Osei", "mark.osei@example.net"),
    ("Nora Baptiste", "nora@baptiste.example"),
    ("Igor Sokolov", "igor.sokolov@example.org"),
];

/// Plain-text ham message; `qp_enc` selects quoted-printable transfer encoding.
fn text_msg(headers: &[(&str, String)], body: &str, qp_enc: bool) -> Vec<u8> {
    let mut m = Vec::new();
    for (k, v) in headers {
        hdr(&mut m, k, v);
    }
    hdr(&mut m, "MIME-Version", "1.0");
    let cs = if body.is_ascii() { "us-ascii" } else { "utf-8" };
    hdr(
        &mut m,
        "Content-Type",
        &format!("text/plain; charset=\"{}\"", cs),
    );
    if qp_enc {
        hdr(&mut m, "Content-Transfer-Encoding", "quoted-printable");
        m.push(b'\n');
        m.extend_from_slice(qp(body.as_bytes()).as_bytes());
    } else {
        hdr(
            &mut m,
            "Content-Transfer-Encoding",
            if body.is_ascii() { "7bit" } else { "8bit" },
        );
        m.push(b'\n');
        m.extend_from_slice(body.as_bytes());
    }
    m
}

fn quote(s: &str) -> String {
    s.lines()
        .map(|l| {
            if l.is_empty() {
                ">".to_string()
            } else {
                format!("> {}", l)
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
}

type HamMsg = (i64, usize, String, String, Vec<u8>);

fn gen_threads(rng: &mut Rng, out: &mut Vec<HamMsg>, seq: &mut usize) {
    let t0 = base_time() - 20 * DAY;
    for (ti, th) in THREADS.iter().enumerate() {
        let mut t = t0 + ti as i64 * 3 * DAY + 9 * 3600 + rng.range(0, 3600) as i64;
        let off = rng.pick(&[0i64, 60, -300, -480, 120]);
        // (body, author index, time, to, subject, new text)
        let mut prev: Option<(String, usize, i64, String, String, String)> = None;
        let mut refs: Vec<String> = Vec::new();
        for (mi, &(who, style, text)) in th.msgs.iter().enumerate() {
            let (name, addr) = th.people[who];
            let subject = if mi == 0 {
                th.subject.to_string()
            } else if style == 'o' {
                format!("RE: {}", th.subject)
            } else {
                format!("Re: {}", th.subject)
            };
            let to = match (th.list, &prev) {
                (Some(l), _) => l.to_string(),
                (None, Some(p)) => fmt_addr(th.people[p.1].0, th.people[p.1].1),
                (None, None) => fmt_addr(th.people[1].0, th.people[1].1),
            };
            let body = match &prev {
                None => format!("{}\n", text),
                Some((pbody, pwho, pt, pto, psubj, ptext)) => {
                    let (pname, paddr) = th.people[*pwho];
                    let attribution = if rng.chance(60) {
                        format!(
                            "On {}, {} <{}> wrote:",
                            reply_date(*pt + off * 60),
                            pname,
                            paddr
                        )
                    } else {
                        format!("On {}, {} wrote:", numeric_date(*pt + off * 60), pname)
                    };
                    match style {
                        'b' => format!("{}\n{}\n\n{}\n", attribution, quote(pbody), text),
                        't' => format!("{}\n\n{}\n{}\n", text, attribution, quote(pbody)),
                        'r' => format!("{}\n{}\n\n{}\n", attribution, quote(ptext), text),
                        _ => format!(
                            "{}\n\n-----Original Message-----\nFrom: {} [mailto:{}]\nSent: {}\nTo: {}\nSubject: {}\n\n{}\n",
                            text,
                            pname,
                            paddr,
                            outlook_date(*pt + off * 60),
                            pto,
                            psubj,
                            pbody
                        ),
                    }
                }
            };
            let msgid = format!(
                "t{}.{}.{}@{}",
                ti + 1,
                mi + 1,
                rng.hex(6, 6),
                domain_of(addr)
            );
            let mut headers: Vec<(&str, String)> = vec![
                ("From", fmt_addr(name, addr)),
                ("To", to.clone()),
                ("Subject", subject.clone()),
                ("Date", rfc2822(t, off)),
                ("Message-ID", format!("<{}>", msgid)),
            ];
            if let Some(last) = refs.last() {
                headers.push(("In-Reply-To", format!("<{}>", last)));
                let r = refs
                    .iter()
                    .map(|x| format!("<{}>", x))
                    .collect::<Vec<_>>()
                    .join("\n ");
                headers.push(("References", r));
            }
            if style == 'o' {
                headers.push(("X-Mailer", "Microsoft Outlook 16.0".to_string()));
            } else if rng.chance(50) {
                headers.push(("User-Agent", "Mozilla Thunderbird".to_string()));
            }
            let bytes = text_msg(&headers, &body, style == 'o');
            out.push((t, *seq, addr.to_string(), msgid.clone(), bytes));
            *seq += 1;
            refs.push(msgid);
            prev = Some((
                body.trim_end_matches('\n').to_string(),
                who,
                t,
                to,
                subject,
                text.to_string(),
            ));
            t += rng.range(900, 8 * 3600) as i64;
        }
    }
}

fn gen_mailing_list(rng: &mut Rng, out: &mut Vec<HamMsg>, seq: &mut usize) {
    let mut t = base_time() - 25 * DAY + 7 * 3600;
    for (i, (subj, text)) in ML_POSTS.iter().enumerate() {
        let (name, addr) = rng.pick(ML_POSTERS);
        let mut body = format!("{}\n\n", text);
        if i % 3 == 1 {
            body.push_str(ML_AD);
        }
        body.push_str(ML_FOOTER);
        let msgid = format!("ml.{}.{}@{}", i + 1, rng.hex(8, 8), domain_of(addr));
        let headers: Vec<(&str, String)> = vec![
            ("From", fmt_addr(name, addr)),
            ("To", "tinkerers@lists.example.org".to_string()),
            ("Subject", format!("[Tinkerers] {}", subj)),
            ("Date", rfc2822(t, rng.pick(&[0i64, 60, -300]))),
            ("Message-ID", format!("<{}>", msgid)),
            (
                "List-Id",
                "Home Automation Tinkerers <tinkerers.lists.example.org>".to_string(),
            ),
            (
                "List-Unsubscribe",
                "<https://lists.example.org/mailman/options/tinkerers>, <mailto:tinkerers-leave@lists.example.org>".to_string(),
            ),
            ("List-Post", "<mailto:tinkerers@lists.example.org>".to_string()),
            ("Precedence", "list".to_string()),
            ("Sender", "Tinkerers <tinkerers-bounces@lists.example.org>".to_string()),
        ];
        let bytes = text_msg(&headers, &body, false);
        out.push((
            t,
            *seq,
            "tinkerers-bounces@lists.example.org".to_string(),
            msgid,
            bytes,
        ));
        *seq += 1;
        t += rng.range(3600, 30 * 3600) as i64;
    }
}

fn gen_disclaimer(rng: &mut Rng, out: &mut Vec<HamMsg>, seq: &mut usize) {
    let mut t = base_time() - 22 * DAY + 8 * 3600;
    for (i, &(who, to, subj, text)) in HF_MAIL.iter().enumerate() {
        let (name, addr) = HF_STAFF[who];
        let body = format!("{}\n\n{}\n", text, wrap(DISCLAIMER, 76));
        let msgid = format!("hf.{}.{}@harborfinch.example", i + 1, rng.hex(10, 10));
        let headers: Vec<(&str, String)> = vec![
            ("From", fmt_addr(name, addr)),
            ("To", to.to_string()),
            ("Subject", subj.to_string()),
            ("Date", rfc2822(t, -300)),
            ("Message-ID", format!("<{}>", msgid)),
            ("Organization", "Harbor & Finch LLP".to_string()),
        ];
        let bytes = text_msg(&headers, &body, i % 4 == 3);
        out.push((t, *seq, addr.to_string(), msgid, bytes));
        *seq += 1;
        t += rng.range(2 * 3600, 40 * 3600) as i64;
    }
}

fn gen_notifications(rng: &mut Rng, out: &mut Vec<HamMsg>, seq: &mut usize) {
    let mut t = base_time() - 24 * DAY + 2 * 3600;
    let mut build = 1180 + rng.range(0, 50);
    for i in 0..24 {
        let proj = rng.pick(CI_PROJECTS);
        let branch = rng.pick(CI_BRANCHES);
        let k = rng.range(1, 5);
        let mut pool: Vec<&str> = CI_TESTS.to_vec();
        let mut tests = Vec::new();
        for _ in 0..k {
            let j = rng.below(pool.len());
            tests.push(pool.remove(j));
        }
        let sha = rng.hex(7, 7);
        let author = rng.pick(CI_AUTHORS);
        let commit = rng.pick(CI_COMMITS);
        let dur_m = rng.range(2, 40);
        let dur_s = rng.range(0, 59);
        let body = format!(
            "Build #{} of project {} failed on branch {}: {} {} failed: {}.\n\nCommit: {} by {}: {}\nDuration: {}m {}s\nDetails: https://ci.example.com/{}/builds/{}\n\n-- \nThis message was sent by the CI server at ci.example.com.\n",
            build,
            proj,
            branch,
            k,
            if k == 1 { "test" } else { "tests" },
            tests.join(", "),
            sha,
            author,
            commit,
            dur_m,
            dur_s,
            proj,
            build
        );
        let msgid = format!("ci.{}.{}@ci.example.com", build, i + 1);
        let headers: Vec<(&str, String)> = vec![
            ("From", "CI Server <ci@ci.example.com>".to_string()),
            ("To", "dev-team@example.com".to_string()),
            (
                "Subject",
                format!("[CI] Build #{} of {} failed ({})", build, proj, branch),
            ),
            ("Date", rfc2822(t, 0)),
            ("Message-ID", format!("<{}>", msgid)),
            ("Auto-Submitted", "auto-generated".to_string()),
        ];
        let bytes = text_msg(&headers, &body, false);
        out.push((t, *seq, "ci@ci.example.com".to_string(), msgid, bytes));
        *seq += 1;
        build += rng.range(1, 30);
        t += rng.range(1800, 20 * 3600) as i64;
    }

    let mut t = base_time() - 23 * DAY + 5 * 3600;
    let mut ticket = 5400 + rng.range(0, 100);
    for (i, &(title, comment)) in TICKETS.iter().enumerate() {
        let agent = rng.pick(TICKET_AGENTS);
        let status = rng.pick(TICKET_STATUS);
        let body = format!(
            "Your ticket #{} '{}' was updated by {}:\n\n{}\n\nStatus: {}\nView the ticket: https://helpdesk.example.org/tickets/{}\n\nPlease do not reply to this automated message.\n",
            ticket, title, agent, comment, status, ticket
        );
        let msgid = format!("tk.{}.{}@helpdesk.example.org", ticket, i + 1);
        let requester = rng.pick(SHORT_PEOPLE);
        let headers: Vec<(&str, String)> = vec![
            (
                "From",
                "IT Helpdesk <helpdesk@helpdesk.example.org>".to_string(),
            ),
            ("To", fmt_addr(requester.0, requester.1)),
            ("Subject", format!("[Ticket #{}] {}", ticket, title)),
            ("Date", rfc2822(t, 60)),
            ("Message-ID", format!("<{}>", msgid)),
            ("Auto-Submitted", "auto-generated".to_string()),
        ];
        let bytes = text_msg(&headers, &body, false);
        out.push((
            t,
            *seq,
            "helpdesk@helpdesk.example.org".to_string(),
            msgid,
            bytes,
        ));
        *seq += 1;
        ticket += rng.range(3, 60);
        t += rng.range(3600, 40 * 3600) as i64;
    }
}

fn gen_short(rng: &mut Rng, out: &mut Vec<HamMsg>, seq: &mut usize) {
    let mut t = base_time() - 21 * DAY + 11 * 3600;
    for (i, &(subj, body)) in SHORT_MAIL.iter().enumerate() {
        let (name, addr) = rng.pick(SHORT_PEOPLE);
        let (_, to) = rng.pick(SHORT_PEOPLE);
        let msgid = format!("s.{}.{}@{}", i + 1, rng.hex(8, 8), domain_of(addr));
        let headers: Vec<(&str, String)> = vec![
            ("From", fmt_addr(name, addr)),
            ("To", to.to_string()),
            ("Subject", subj.to_string()),
            ("Date", rfc2822(t, 120)),
            ("Message-ID", format!("<{}>", msgid)),
        ];
        let bytes = text_msg(&headers, body, false);
        out.push((t, *seq, addr.to_string(), msgid, bytes));
        *seq += 1;
        t += rng.range(3600, 50 * 3600) as i64;
    }
}

fn gen_ham(mbox: &mut Mbox) {
    let mut rng = Rng::new(0x4A4D_0000_0001);
    let mut out: Vec<HamMsg> = Vec::new();
    let mut seq = 0usize;
    gen_threads(&mut rng, &mut out, &mut seq);
    gen_mailing_list(&mut rng, &mut out, &mut seq);
    gen_disclaimer(&mut rng, &mut out, &mut seq);
    gen_notifications(&mut rng, &mut out, &mut seq);
    gen_short(&mut rng, &mut out, &mut seq);
    out.sort_by_key(|m| (m.0, m.1));
    for (t, _, env, msgid, bytes) in &out {
        mbox.add(env, *t, bytes, Some(msgid), "ham");
    }
}

// ---------------------------------------------------------------------------
// Malformed
// ---------------------------------------------------------------------------

fn mal_headers(m: &mut Vec<u8>, subject: &str, msgid: &str, t: i64) {
    hdr(m, "From", "\"Broken Mailer\" <noreply@broken.test>");
    hdr(m, "To", "victim@example.com");
    hdr(m, "Subject", subject);
    hdr(m, "Date", &rfc2822(t, 0));
    hdr(m, "Message-ID", &format!("<{}>", msgid));
}

/// The state the malformed messages are made with: the PRNG, the clock
/// and how many have a Message-ID.
struct Mal {
    rng: Rng,
    t: i64,
    n: usize,
}

impl Mal {
    fn next_id(&mut self) -> String {
        self.n += 1;
        format!("mal.{}.{}@broken.test", self.n, self.rng.hex(6, 6))
    }

    /// Adds `m` to `mbox`; the next message comes ten minutes later.
    fn add(&mut self, mbox: &mut Mbox, m: &[u8], id: Option<&str>) {
        mbox.add("MAILER-DAEMON@broken.test", self.t, m, id, "malformed");
        self.t += 600;
    }
}

fn gen_malformed(mbox: &mut Mbox) {
    let mut g = Mal {
        rng: Rng::new(0xBAD_0000_0BAD),
        t: base_time() + 10 * DAY,
        n: 0,
    };
    malformed_mime(&mut g, mbox);
    malformed_shapes(&mut g, mbox);
}

/// Malformed MIME: boundaries, transfer encodings, charsets, NUL bytes.
fn malformed_mime(g: &mut Mal, mbox: &mut Mbox) {
    // 1. Missing closing boundary.
    {
        let id = g.next_id();
        let mut m = Vec::new();
        mal_headers(&mut m, "Missing closing boundary", &id, g.t);
        hdr(&mut m, "MIME-Version", "1.0");
        hdr(
            &mut m,
            "Content-Type",
            "multipart/alternative; boundary=\"=_missing_close_01\"",
        );
        m.extend_from_slice(b"\n--=_missing_close_01\nContent-Type: text/plain; charset=us-ascii\n\nThe plain part is here and the closing boundary never comes.\n--=_missing_close_01\nContent-Type: text/html; charset=us-ascii\n\n<p>The html part is here and the closing boundary never comes.</p>\n");
        g.add(mbox, &m, Some(&id));
    }
    // 2. Boundary declared but never used.
    {
        let id = g.next_id();
        let mut m = Vec::new();
        mal_headers(&mut m, "Boundary declared but never used", &id, g.t);
        hdr(&mut m, "MIME-Version", "1.0");
        hdr(
            &mut m,
            "Content-Type",
            "multipart/mixed; boundary=\"never-used-42\"",
        );
        m.extend_from_slice(b"\nThis body claims to be multipart but contains no boundary lines at all.\nA parser should fall back to treating it as a single text part,\nor at least not crash.\n");
        g.add(mbox, &m, Some(&id));
    }
    // 3. Multipart without a boundary parameter.
    {
        let id = g.next_id();
        let mut m = Vec::new();
        mal_headers(&mut m, "Multipart without boundary parameter", &id, g.t);
        hdr(&mut m, "MIME-Version", "1.0");
        hdr(&mut m, "Content-Type", "multipart/related");
        m.extend_from_slice(b"\n--\nContent-Type: text/plain\n\nThere is no boundary parameter, so these dashes mean nothing.\n----\n");
        g.add(mbox, &m, Some(&id));
    }
    // 4. Bad base64: invalid characters.
    {
        let id = g.next_id();
        let mut m = Vec::new();
        mal_headers(&mut m, "Base64 with invalid characters", &id, g.t);
        hdr(&mut m, "MIME-Version", "1.0");
        hdr(&mut m, "Content-Type", "text/plain; charset=utf-8");
        hdr(&mut m, "Content-Transfer-Encoding", "base64");
        m.extend_from_slice(b"\nVGhpcyBzdGFydHMgYXMgdmFsaWQgYmFzZTY0*&^%$#@!!\nYnV0IHRoZW4gaGFz IHNwYWNlcyBhbmQ???\n\xe2\x82\xac\xc3\xa9 not base64 at all \x01\x02\nQUJD\n");
        g.add(mbox, &m, Some(&id));
    }
    // 5. Bad base64: wrong padding and truncated quanta.
    {
        let id = g.next_id();
        let mut m = Vec::new();
        mal_headers(&mut m, "Base64 with wrong padding", &id, g.t);
        hdr(&mut m, "MIME-Version", "1.0");
        hdr(&mut m, "Content-Type", "multipart/mixed; boundary=\"pad\"");
        m.extend_from_slice(b"\n--pad\nContent-Type: text/plain; charset=us-ascii\nContent-Transfer-Encoding: base64\n\nSGVsbG8gd29ybGQ===\nSGk\nQ=Q=\n====\nV2hvb3BzIQ\n--pad\nContent-Type: text/html; charset=us-ascii\nContent-Transfer-Encoding: base64\n\nPHA+dHJ1bmNhdGVk\nPC9w\n--pad--\n");
        g.add(mbox, &m, Some(&id));
    }
    // 6. Bad quoted-printable.
    {
        let id = g.next_id();
        let mut m = Vec::new();
        mal_headers(&mut m, "Broken quoted-printable", &id, g.t);
        hdr(&mut m, "MIME-Version", "1.0");
        hdr(&mut m, "Content-Type", "text/plain; charset=iso-8859-1");
        hdr(&mut m, "Content-Transfer-Encoding", "quoted-printable");
        m.extend_from_slice(b"\nThis line has a bad escape =ZZ in the middle and =G1 another.\nLowercase hex =e9t=e9 and a truncated escape at line end =4\nA very long line that never uses soft line breaks even though it is far longer than seventy-six characters, which QP forbids.\nTrailing spaces before the hard break   \nThe body ends with a lone equals sign =");
        g.add(mbox, &m, Some(&id));
    }
    // 7. Unknown charset.
    {
        let id = g.next_id();
        let mut m = Vec::new();
        mal_headers(&mut m, "=?x-unknown-42?Q?caf=E9_du_march=E9?=", &id, g.t);
        hdr(&mut m, "MIME-Version", "1.0");
        hdr(
            &mut m,
            "Content-Type",
            "text/plain; charset=\"x-unknown-42\"",
        );
        hdr(&mut m, "Content-Transfer-Encoding", "8bit");
        m.extend_from_slice(b"\nThis part declares a charset nobody knows.\nHigh bytes follow: caf\xe9, na\xefve, \x8f\x90\x9d\xff\xfe.\nA decoder should fall back rather than fail.\n");
        g.add(mbox, &m, Some(&id));
    }
    // 8. NUL bytes in headers and body.
    {
        let id = g.next_id();
        let mut m = Vec::new();
        mal_headers(&mut m, "NUL\0bytes in the subject", &id, g.t);
        hdr(&mut m, "X-Nul-Test", "before\0after\0\0end");
        hdr(&mut m, "Content-Type", "text/plain; charset=us-ascii");
        m.extend_from_slice(b"\nThis body contains NUL bytes: \0 here,\n\0\0\0 at the start of a line,\nand one at the very end.\0\n");
        g.add(mbox, &m, Some(&id));
    }
}

/// Malformed shapes: huge header lines, deep nesting, missing parts.
fn malformed_shapes(g: &mut Mal, mbox: &mut Mbox) {
    // 9. A header line of exactly 1 MiB (1,048,576 bytes, excluding the LF).
    {
        let id = g.next_id();
        let mut m = Vec::new();
        mal_headers(&mut m, "Header line of one mebibyte", &id, g.t);
        let prefix = b"X-Huge-Header: ";
        let mut line = prefix.to_vec();
        let chunk = g.rng.from_alphabet(B64URL, 4096, 4096);
        while line.len() < 1_048_576 {
            let need = (1_048_576 - line.len()).min(chunk.len());
            line.extend_from_slice(&chunk.as_bytes()[..need]);
        }
        m.extend_from_slice(&line);
        m.push(b'\n');
        hdr(&mut m, "Content-Type", "text/plain; charset=us-ascii");
        m.extend_from_slice(b"\nThe header above is a single line of 1,048,576 bytes.\n");
        g.add(mbox, &m, Some(&id));
    }
    // 10. Multipart nested 100 levels deep.
    {
        let id = g.next_id();
        let mut m = Vec::new();
        mal_headers(&mut m, "Multipart nested 100 levels deep", &id, g.t);
        hdr(&mut m, "MIME-Version", "1.0");
        hdr(
            &mut m,
            "Content-Type",
            "multipart/mixed; boundary=\"lvl000\"",
        );
        m.push(b'\n');
        for level in 0..100 {
            m.extend_from_slice(format!("--lvl{:03}\n", level).as_bytes());
            if level < 99 {
                m.extend_from_slice(
                    format!(
                        "Content-Type: multipart/mixed; boundary=\"lvl{:03}\"\n\n",
                        level + 1
                    )
                    .as_bytes(),
                );
            } else {
                m.extend_from_slice(b"Content-Type: text/plain; charset=us-ascii\n\nThe innermost part, one hundred multipart levels down.\n");
            }
        }
        for level in (0..100).rev() {
            m.extend_from_slice(format!("--lvl{:03}--\n", level).as_bytes());
        }
        g.add(mbox, &m, Some(&id));
    }
    // 11. Only headers, no body (not even the blank separator line).
    {
        let id = g.next_id();
        let mut m = Vec::new();
        mal_headers(&mut m, "Headers only, no body", &id, g.t);
        hdr(&mut m, "MIME-Version", "1.0");
        hdr(&mut m, "Content-Type", "text/plain; charset=us-ascii");
        g.add(mbox, &m, Some(&id));
    }
    // 12. No headers at all.
    {
        let m = b"\nThis message has no headers at all: the separator line is followed\ndirectly by the empty line and then this body text.\n".to_vec();
        g.add(mbox, &m, None);
    }
    malformed_syntax(g, mbox);
}

/// Malformed syntax: binary declared as text, broken headers and encoded
/// words, mismatched boundaries, unknown encodings.
fn malformed_syntax(g: &mut Mal, mbox: &mut Mbox) {
    // 13. Binary attachment declared as text.
    {
        let id = g.next_id();
        let mut m = Vec::new();
        mal_headers(&mut m, "Binary data declared as text/plain", &id, g.t);
        hdr(&mut m, "MIME-Version", "1.0");
        hdr(
            &mut m,
            "Content-Type",
            "multipart/mixed; boundary=\"bin-as-text\"",
        );
        m.extend_from_slice(b"\n--bin-as-text\nContent-Type: text/plain; charset=us-ascii\n\nSee the attached report.\n--bin-as-text\nContent-Type: text/plain; charset=us-ascii; name=\"report.txt\"\nContent-Disposition: attachment; filename=\"report.txt\"\nContent-Transfer-Encoding: 8bit\n\n");
        m.extend_from_slice(b"\x89PNG\x1a\n\0\0\0\rIHDR");
        for _ in 0..2048 {
            let b = (g.rng.next_u64() & 0xff) as u8;
            m.push(if b == b'\r' { 0 } else { b });
        }
        m.extend_from_slice(b"\n--bin-as-text--\n");
        g.add(mbox, &m, Some(&id));
    }
    // 14. Broken header syntax and bad encoded words.
    {
        let id = g.next_id();
        let mut m = Vec::new();
        m.extend_from_slice(b" leading continuation line before any header\n");
        hdr(&mut m, "From", "=?UTF-8?B?!!!notbase64?= <odd@broken.test>");
        hdr(
            &mut m,
            "To",
            "victim@example.com, , <>, \"unterminated <x@example.com>",
        );
        hdr(
            &mut m,
            "Subject",
            "=?UTF-8?Q?unterminated_encoded_word and =?bogus?X?abc?=",
        );
        hdr(&mut m, "Date", "Tuesday, sometime last week");
        hdr(&mut m, "Message-ID", &format!("<{}>", id));
        m.extend_from_slice(b"This line has no colon and is not a header\n");
        hdr(&mut m, "Content-Type", "text/plain; charset=us-ascii");
        hdr(&mut m, "Content-Type", "text/html; charset=utf-8");
        hdr(&mut m, "Content-Transfer-Encoding", "7bit");
        m.extend_from_slice(b"\nBody after broken headers.\n");
        g.add(mbox, &m, Some(&id));
    }
    // 15. Mismatched nested boundaries (inner part never closed, outer closes early).
    {
        let id = g.next_id();
        let mut m = Vec::new();
        mal_headers(&mut m, "Mismatched nested boundaries", &id, g.t);
        hdr(&mut m, "MIME-Version", "1.0");
        hdr(
            &mut m,
            "Content-Type",
            "multipart/mixed; boundary=\"outer\"",
        );
        m.extend_from_slice(b"\n--outer\nContent-Type: multipart/alternative; boundary=\"inner\"\n\n--inner\nContent-Type: text/plain\n\ninner plain part\n--inner\nContent-Type: text/html\n\n<p>inner html part, inner boundary never closed</p>\n--outer--\n--inner--\ntrailing text after both terminators\n");
        g.add(mbox, &m, Some(&id));
    }
    // 16. Unknown transfer encoding, truncated content type, empty charset.
    {
        let id = g.next_id();
        let mut m = Vec::new();
        mal_headers(&mut m, "Unknown transfer encoding", &id, g.t);
        hdr(&mut m, "MIME-Version", "1.0");
        hdr(&mut m, "Content-Type", "multipart/mixed; boundary=\"enc\"");
        m.extend_from_slice(b"\n--enc\nContent-Type: text/\nContent-Transfer-Encoding: x-rot13\n\nGuvf obql vf ebg13 rapbqrq.\n--enc\nContent-Type: text/plain; charset=\nContent-Transfer-Encoding: base65\n\nempty charset and a transfer encoding that does not exist\n--enc--\n");
        g.add(mbox, &m, Some(&id));
    }
}

// ---------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------

fn write_file(path: &Path, data: &[u8]) {
    fs::write(path, data).unwrap_or_else(|e| panic!("cannot write {}: {}", path.display(), e));
}

/// Writes every fixture under `out`.
pub fn run(out: &Path) {
    let mbox_dir = out.join("mbox");
    fs::create_dir_all(&mbox_dir)
        .unwrap_or_else(|e| panic!("cannot create {}: {}", mbox_dir.display(), e));

    let mut campaigns = Mbox::new("campaigns.mbox");
    gen_campaigns(&mut campaigns);
    let mut ham = Mbox::new("ham.mbox");
    gen_ham(&mut ham);
    let mut malformed = Mbox::new("malformed.mbox");
    gen_malformed(&mut malformed);

    let mut labels = String::from("mbox\tindex\tmessage_id\tlabel\n");
    for mb in [&campaigns, &ham, &malformed] {
        write_file(&mbox_dir.join(mb.name), &mb.data);
        for (i, (mid, label)) in mb.rows.iter().enumerate() {
            labels.push_str(&format!("{}\t{}\t{}\t{}\n", mb.name, i + 1, mid, label));
        }
        println!(
            "{:<16} {:>5} messages {:>9} bytes",
            mb.name,
            mb.rows.len(),
            mb.data.len()
        );
    }
    write_file(&out.join("labels.tsv"), labels.as_bytes());

    let mut ctsv = String::from("label\tmessages\tintensity\tdescription\n");
    for c in CAMPAIGNS {
        ctsv.push_str(&format!(
            "{}\t{}\t{}\t{}\n",
            c.label, c.count, INTENSITY[c.intensity as usize], c.description
        ));
    }
    write_file(&out.join("campaigns.tsv"), ctsv.as_bytes());
}

#[cfg(test)]
mod tests {
    use super::*;

    fn root() -> &'static Path {
        Path::new(concat!(env!("CARGO_MANIFEST_DIR"), "/.."))
    }

    /// The committed fixtures are what this generator writes: run `cargo
    /// xtask gen-fixtures` after changing it, and commit the result.
    #[test]
    fn committed_fixtures_are_what_the_generator_writes() {
        let out = std::env::temp_dir().join(format!("bulkwatch-fixtures-{}", std::process::id()));
        let _ = fs::remove_dir_all(&out);
        run(&out);
        for name in [
            "mbox/campaigns.mbox",
            "mbox/ham.mbox",
            "mbox/malformed.mbox",
            "labels.tsv",
            "campaigns.tsv",
        ] {
            let made = fs::read(out.join(name)).unwrap();
            let committed = fs::read(root().join("fixtures").join(name)).unwrap();
            assert!(
                made == committed,
                "fixtures/{name} differs from what the generator writes: run `cargo xtask gen-fixtures`"
            );
        }
        let _ = fs::remove_dir_all(&out);
    }

    /// The module documentation counts the campaigns and their messages.
    #[test]
    fn the_documentation_counts_what_is_written() {
        let total: usize = CAMPAIGNS.iter().map(|c| c.count).sum();
        let thousands = |n: usize| {
            if n >= 1000 {
                format!("{},{:03}", n / 1000, n % 1000)
            } else {
                n.to_string()
            }
        };
        let doc: String = include_str!("gen_fixtures.rs")
            .lines()
            .filter_map(|l| l.strip_prefix("//!"))
            .collect::<Vec<_>>()
            .join(" ")
            .split_whitespace()
            .collect::<Vec<_>>()
            .join(" ");
        for claim in [
            format!("{} invented bulk campaigns", CAMPAIGNS.len()),
            format!("{} messages in all", thousands(total)),
            format!("`c01`..`c{:02}`", CAMPAIGNS.len()),
        ] {
            assert!(
                doc.contains(&claim),
                "the module documentation should say {claim:?}"
            );
        }
    }
}
