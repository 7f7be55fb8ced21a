//! Independent cases for issue 63, written from the description of the
//! behaviour classes alone (not from the authors' own cases) by a helper
//! who had not read `tests/conversations.rs` or
//! `tests/attack_conversations.rs`; two cases were changed after, where the
//! rule decided otherwise and docs/admin/solicited.md says why (`a1_5`
//! grows past one transaction's 100 people; `b6_4` is the hard case of a
//! vendor's acknowledgements).
//!
//! A. Forged conversations must not help a spammer: each attack reaches its
//!    first `bulk` verdict at the same copy index as the same transactions
//!    sent plainly (same recipients per transaction, MAIL FROM the
//!    spammer's own address, no In-Reply-To/References/quotes/extra To/Cc),
//!    within two copies, at thresholds (5, 20) and (3, 5).
//!    A7: past ~1100 distinct recipients, new recipients still count.
//! B. Ordinary mail stays clean at (5, 20) and (3, 5): the site's own mail
//!    (a login, the office network 10/8) untouched or clean, mail from
//!    outside tagged clean.
//!
//! Every case runs on fresh in-process milters, deterministically (no
//! sleeps). Each prints its verdict sequences to stderr (`--nocapture`).

#![allow(clippy::too_many_arguments)]

mod common;

use bulkwatch::config::Action;
use common::{config, send_from, start, Client, Mail};
use indymilter_test::{EomAction, EomActions};

const OURS: &str = "ourco.example";
const PARTNER: &str = "partner.example";
const SPAMMER: &str = "<news@promo-mailer.example>";
const PAIRS: [(f64, f64); 2] = [(5.0, 20.0), (3.0, 5.0)];

// ---------------------------------------------------------------------------
// Transactions and verdicts
// ---------------------------------------------------------------------------

#[derive(Clone, Debug, PartialEq, Eq)]
enum Who {
    /// An SMTP client outside the site.
    Outside,
    /// A host of the office network 10/8 (own mail).
    Office(u8),
    /// A SASL login (own mail).
    Login(String),
}

fn login(addr: &str) -> Who {
    Who::Login(local(addr).to_owned())
}

#[derive(Clone)]
struct Tx {
    who: Who,
    from: String,
    rcpts: Vec<String>,
    headers: Vec<(String, String)>,
    body: String,
    label: String,
}

impl Tx {
    fn new(who: Who, from: &str, rcpts: Vec<String>, body: String, label: &str) -> Tx {
        Tx {
            who,
            from: from.to_owned(),
            rcpts,
            headers: Vec::new(),
            body,
            label: label.to_owned(),
        }
    }

    /// Sets header `k` (replacing one of that name).
    fn h(mut self, k: &str, v: impl Into<String>) -> Tx {
        let v = v.into();
        if let Some(x) = self
            .headers
            .iter_mut()
            .find(|(n, _)| n.eq_ignore_ascii_case(k))
        {
            x.1 = v;
        } else {
            self.headers.push((k.to_owned(), v));
        }
        self
    }
}

fn x_bulkwatch(a: &EomActions) -> Option<String> {
    a.actions.iter().find_map(|a| match a {
        EomAction::AddHeader { name, value } if name.to_bytes() == b"X-Bulkwatch" => {
            Some(value.to_string_lossy().into_owned())
        }
        _ => None,
    })
}

/// Sends `txs` in order to a fresh milter at thresholds `(suspect, bulk)`,
/// with `policy.clean = tag` and 10/8 the site's own network.
async fn run_seq(txs: &[Tx], (suspect, bulk): (f64, f64)) -> Vec<Option<String>> {
    let mut cfg = config();
    cfg.thresholds.suspect_threshold = suspect;
    cfg.thresholds.bulk_threshold = bulk;
    cfg.policy.clean = Action::Tag;
    let m = start(cfg).await;
    m.state
        .set_own_networks(vec!["10.0.0.0/8".parse().unwrap()]);
    let mut out = Vec::with_capacity(txs.len());
    for (i, tx) in txs.iter().enumerate() {
        let mail = Mail {
            headers: tx.headers.clone(),
            body: tx.body.clone(),
            rcpt: String::new(),
            queue_id: format!("Q{i:05X}"),
        };
        let client = match &tx.who {
            Who::Outside => Client::Outside,
            Who::Office(h) => Client::At([10, 1, 2, *h]),
            Who::Login(u) => Client::Login(u.as_str()),
        };
        let (a, _status) = send_from(m.addr, client, &mail, &tx.from, &tx.rcpts).await;
        out.push(x_bulkwatch(&a));
    }
    m.stop().await;
    out
}

fn level(v: &Option<String>) -> &str {
    match v {
        None => "none",
        Some(s) => s.split(';').next().unwrap_or("").trim(),
    }
}

fn field<'a>(v: &'a Option<String>, key: &str) -> Option<&'a str> {
    v.as_deref()?
        .split(';')
        .map(str::trim)
        .find_map(|p| p.strip_prefix(key).and_then(|r| r.strip_prefix('=')))
}

fn size(v: &Option<String>) -> Option<u64> {
    field(v, "size").and_then(|n| n.parse().ok())
}

/// `c3` clean size 3, `s4`, `b20`, `-` no header; `o` marks own=yes.
fn short(v: &Option<String>) -> String {
    match v {
        None => "-".into(),
        Some(s) => {
            let c = level(v).chars().next().unwrap_or('?');
            let own = if s.contains("own=yes") { "o" } else { "" };
            match size(v) {
                Some(n) => format!("{c}{n}{own}"),
                None => format!("{c}{own}"),
            }
        }
    }
}

fn summary(vs: &[Option<String>]) -> String {
    vs.iter()
        .enumerate()
        .map(|(i, v)| format!("{i}:{}", short(v)))
        .collect::<Vec<_>>()
        .join(" ")
}

fn first_bulk(vs: &[Option<String>]) -> Option<usize> {
    vs.iter().position(|v| level(v) == "bulk")
}

/// Class A: the attack's first bulk verdict is within two copies of the
/// plain sending's, at both threshold pairs.
async fn attack_case(name: &str, attack: Vec<Tx>, plain: Vec<Tx>) {
    assert_eq!(attack.len(), plain.len(), "{name}: case built wrong");
    for (i, (a, p)) in attack.iter().zip(&plain).enumerate() {
        assert_eq!(
            a.rcpts, p.rcpts,
            "{name}: transaction {i} recipients differ"
        );
    }
    let mut errs = Vec::new();
    for th in PAIRS {
        let va = run_seq(&attack, th).await;
        let vp = run_seq(&plain, th).await;
        let (fa, fp) = (first_bulk(&va), first_bulk(&vp));
        let seqs = format!(
            "\n    attack: {}\n    plain:  {}",
            summary(&va),
            summary(&vp)
        );
        eprintln!("{name} at {th:?}: attack first bulk {fa:?}, plain first bulk {fp:?}{seqs}");
        match (fa, fp) {
            (_, None) => errs.push(format!(
                "{name} at {th:?}: the plain sending never reached bulk (case too small){seqs}"
            )),
            (None, Some(p)) => errs.push(format!(
                "{name} at {th:?}: the attack never reached bulk; plain sending was bulk at copy {p}{seqs}"
            )),
            (Some(a), Some(p)) if a.abs_diff(p) > 2 => errs.push(format!(
                "{name} at {th:?}: the attack was first bulk at copy {a}, plain sending at copy {p}{seqs}"
            )),
            _ => {}
        }
    }
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}

/// Class B: nothing suspect or bulk; own mail untouched or clean, mail
/// from outside tagged clean.
async fn ham_case(name: &str, txs: Vec<Tx>) {
    let mut errs = Vec::new();
    for th in PAIRS {
        let vs = run_seq(&txs, th).await;
        eprintln!("{name} at {th:?}: {}", summary(&vs));
        if std::env::var("FULL").is_ok() {
            for (i, (tx, v)) in txs.iter().zip(&vs).enumerate() {
                eprintln!(
                    "  {i} [{}] {:?} rcpts={} : {}",
                    tx.label,
                    tx.who,
                    tx.rcpts.len(),
                    v.as_deref().unwrap_or("-")
                );
            }
        }
        let mut bad = Vec::new();
        for (i, (tx, v)) in txs.iter().zip(&vs).enumerate() {
            let l = level(v);
            let ok = match tx.who {
                Who::Outside => l == "clean",
                _ => v.is_none() || l == "clean",
            };
            if !ok {
                bad.push(format!(
                    "  message {i} [{}] ({:?}, {} rcpts): {}",
                    tx.label,
                    tx.who,
                    tx.rcpts.len(),
                    v.as_deref().unwrap_or("no X-Bulkwatch header")
                ));
            }
        }
        if !bad.is_empty() {
            let n = bad.len();
            bad.truncate(8);
            errs.push(format!(
                "{name} at {th:?}: {n} message(s) not clean:\n{}\n  sequence: {}",
                bad.join("\n"),
                summary(&vs)
            ));
        }
    }
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}

// ---------------------------------------------------------------------------
// Addresses, people, texts
// ---------------------------------------------------------------------------

const FIRST: [&str; 20] = [
    "anna", "ben", "clara", "david", "eva", "felix", "greta", "hugo", "ida", "jonas", "karin",
    "lars", "mia", "nils", "olga", "paul", "rita", "sven", "tina", "uwe",
];
const LAST: [&str; 20] = [
    "berg", "fischer", "hansen", "koch", "lange", "meyer", "neumann", "olsen", "peters", "richter",
    "schmidt", "vogel", "wagner", "weber", "wolf", "zimmer", "brandt", "keller", "lorenz", "frank",
];

fn person(i: usize, dom: &str) -> String {
    let n = i / 400;
    let suffix = if n == 0 { String::new() } else { n.to_string() };
    format!("<{}.{}{suffix}@{dom}>", FIRST[i % 20], LAST[(i / 20) % 20])
}

/// Our staff member `i`.
fn staff(i: usize) -> String {
    person(i, OURS)
}

fn staff_range(from: usize, n: usize) -> Vec<String> {
    (from..from + n).map(staff).collect()
}

/// Partner company staff member `i`.
fn partner(i: usize) -> String {
    person(i + 137, PARTNER)
}

fn bare(a: &str) -> &str {
    a.trim().trim_start_matches('<').trim_end_matches('>')
}

fn local(a: &str) -> &str {
    bare(a).split('@').next().unwrap_or("")
}

fn domain(a: &str) -> &str {
    bare(a).split('@').nth(1).unwrap_or("")
}

/// `Anna Berg` for `<anna.berg@...>`.
fn display(a: &str) -> String {
    local(a)
        .split('.')
        .map(|w| {
            let mut c = w.chars();
            match c.next() {
                Some(f) => f.to_uppercase().collect::<String>() + c.as_str(),
                None => String::new(),
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

fn named(a: &str) -> String {
    format!("{} <{}>", display(a), bare(a))
}

fn list(addrs: &[String]) -> String {
    addrs
        .iter()
        .map(|a| named(a))
        .collect::<Vec<_>>()
        .join(", ")
}

fn crlf(s: &str) -> String {
    s.replace("\r\n", "\n").replace('\n', "\r\n")
}

fn quote(body: &str) -> String {
    body.lines()
        .map(|l| {
            if l.is_empty() {
                ">".to_owned()
            } else if l.starts_with('>') {
                format!(">{l}")
            } else {
                format!("> {l}")
            }
        })
        .collect::<Vec<_>>()
        .join("\r\n")
}

fn when(i: usize) -> String {
    let days = ["Mon", "Tue", "Wed", "Thu", "Fri"];
    format!(
        "{}, {} Mar 2025 at {:02}:{:02}",
        days[i % 5],
        3 + i % 20,
        8 + (i / 7) % 10,
        (i * 13) % 60
    )
}

/// `On <date>, <who> wrote:` and the quoted text.
fn reply_quote(i: usize, author: &str, body: &str) -> String {
    format!(
        "On {}, {} wrote:\r\n{}\r\n",
        when(i),
        named(author),
        quote(body)
    )
}

fn outlook_quote(i: usize, author: &str, to: &str, subject: &str, body: &str) -> String {
    format!(
        "-----Original Message-----\r\nFrom: {}\r\nSent: {}\r\nTo: {}\r\nSubject: {subject}\r\n\r\n{}",
        named(author),
        when(i),
        to,
        crlf(body)
    )
}

fn msgid(tag: &str, i: usize, dom: &str) -> String {
    format!(
        "<{tag}.{i}.{:08x}@{dom}>",
        (i as u64).wrapping_mul(0x9E37_79B9) ^ 0x5A5A_1234
    )
}

// --- spam texts ------------------------------------------------------------

const SPAM: [(&str, &str); 6] = [
    (
        "Action required: your mailbox is almost full",
        "Dear {name},

We are writing because your mailbox storage quota has almost been reached and several incoming messages are being held on our server. To release the held messages and increase your storage at no cost, please confirm your account within the next 24 hours at https://mail-upgrade.example/verify?id={n}.

If you do not confirm, the held messages will be deleted and your account may be suspended without further notice. Thank you for your cooperation.

Mail Administration Team
Ticket {n}
",
    ),
    (
        "A private place reserved for you",
        "Hello {name},

My name is Daniel and I manage a private trading group that has returned more than forty percent every month since January. We only accept a few new members each week, and I reserved one place for you until Sunday. The minimum deposit is small and you can withdraw your profits at any time without fees.

Reply to this message or open https://quickgain.example/join/{n} to secure your place before it goes to someone else.

Kind regards,
Daniel
",
    ),
    (
        "Outstanding invoice - payment overdue",
        "Hi {name},

Please find below the details of the outstanding invoice INV-{n} for the services delivered last month. The payment was due on the fifteenth and our accounting department has not received it yet. To avoid a late fee and an interruption of the service, please settle the amount today using the secure payment page at https://pay-portal.example/inv/{n}.

If you have already paid, kindly send us the remittance advice so that we can update our records.

Best regards,
Accounts Receivable
",
    ),
    (
        "Your parcel is waiting at our depot",
        "Dear customer {name},

Your parcel could not be delivered today because the customs fee of 2.99 EUR has not been paid. The parcel is now stored at our local depot and will be returned to the sender after five working days. To schedule a new delivery, pay the fee and choose a convenient delivery slot at https://parcel-track.example/p/{n}.

Tracking number: {n}
Thank you for choosing our delivery service and have a pleasant day.
",
    ),
    (
        "Quick question about your website",
        "Hi {name},

I was looking at your company website today and noticed that it does not appear on the first page of search results for the most important keywords in your industry. Our team has helped more than three hundred small businesses double their organic traffic within ninety days, and we would be happy to prepare a free audit for you.

Just reply with a good time for a short call this week, or see our case studies at https://rank-boost.example/c/{n}.

Cheers,
Growth Marketing Team
",
    ),
    (
        "You are pre-approved",
        "Dear {name},

Good news: you have been pre-approved for a personal loan of up to 25,000 with an interest rate of only 1.9 percent. No credit check is required and the money can be on your account within one business day. Our offer is valid only until the end of this week, so complete the short application form now at https://fastloan.example/apply/{n} and receive your decision in minutes.

Sincerely,
Loan Department, reference {n}
",
    ),
];

fn spam_body(t: usize, rcpt: &str, n: usize) -> String {
    crlf(
        &SPAM[t]
            .1
            .replace("{name}", &display(rcpt))
            .replace("{n}", &(48_211 + n * 7).to_string()),
    )
}

/// The plain sending of copy `n` of spam `t` to `rcpts`.
fn plain(t: usize, n: usize, rcpts: &[String]) -> Tx {
    Tx::new(
        Who::Outside,
        SPAMMER,
        rcpts.to_vec(),
        spam_body(t, &rcpts[0], n),
        "plain copy",
    )
    .h("From", format!("Offers <{}>", bare(SPAMMER)))
    .h("To", named(&rcpts[0]))
    .h("Subject", SPAM[t].0)
    .h("Message-ID", msgid("p", n, "promo-mailer.example"))
}

/// An attack copy: the plain copy sent with MAIL FROM `from`, the header
/// From of `from` (the forged sender) unless changed later.
fn forged(t: usize, n: usize, rcpts: &[String], from: &str) -> Tx {
    let mut tx = plain(t, n, rcpts);
    tx.from = from.to_owned();
    tx.label = "attack copy".into();
    tx.h("From", named(from))
        .h("Message-ID", msgid("a", n, domain(from)))
}

// --- genuine (ordinary) texts -------------------------------------------------

const GENUINE: [(&str, &str); 4] = [
    (
        "Warehouse shelving: revised delivery schedule",
        "Hi all,

as discussed in yesterday's call, I have attached the revised delivery schedule for the warehouse shelving. The first truck will arrive on the twelfth and the installation team needs access to loading dock B from seven in the morning. Please let me know if anything on your side conflicts with these dates, and whether we need a second forklift on site.

Thanks,
Marta
",
    ),
    (
        "Minutes of the steering group, 4 March",
        "Hello everyone,

here are the short minutes of today's steering group. We agreed to postpone the rollout of the new ticket system by two weeks so that the support team can finish the training first. Finance confirmed the budget for the additional licences, and Jonas will check with the vendor whether the data migration can run over a weekend.

Next meeting: Tuesday, 18 March, 10:00, room 2.14.

Best,
Karin
",
    ),
    (
        "Question about the spare parts order",
        "Dear Paul,

thank you for the quick quote. Before we place the order I would like to confirm two details: can you deliver the pumps and the seal kits together, and is the price of the seal kits also valid for a quantity of forty instead of fifty? Our maintenance window starts on the twentieth, so a delivery in the week before would be ideal.

Kind regards,
Felix Hansen
",
    ),
    (
        "Catering for the customer day",
        "Hi Rita,

for the customer day on the 27th we expect about sixty guests. Could you please arrange coffee and pastries for the morning, a vegetarian lunch buffet, and water and juice throughout the afternoon? The guests arrive at nine and the last session ends around four. Please send me the offer so that I can get it approved by Thursday.

Many thanks,
Ida
",
    ),
];

fn genuine_body(g: usize) -> String {
    crlf(GENUINE[g].1)
}

// --- prose for ordinary threads ------------------------------------------------

struct Rng(u64);

impl Rng {
    fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x2545_F491_4F6C_DD1D) ^ 0x1357_9BDF_2468_ACE0)
    }
    fn next(&mut self) -> u64 {
        testkit::splitmix(&mut self.0)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn pick<'a>(&mut self, xs: &[&'a str]) -> &'a str {
        xs[self.below(xs.len())]
    }
}

const ADJ: [&str; 24] = [
    "revised",
    "updated",
    "final",
    "draft",
    "quarterly",
    "new",
    "second",
    "remaining",
    "shared",
    "internal",
    "annual",
    "technical",
    "proposed",
    "current",
    "detailed",
    "short",
    "weekly",
    "complete",
    "signed",
    "corrected",
    "preliminary",
    "translated",
    "printed",
    "older",
];
const NOUN: [&str; 32] = [
    "budget",
    "schedule",
    "contract",
    "report",
    "agenda",
    "proposal",
    "invoice",
    "estimate",
    "timeline",
    "checklist",
    "handbook",
    "roadmap",
    "summary",
    "presentation",
    "spreadsheet",
    "survey",
    "inventory",
    "brief",
    "policy",
    "forecast",
    "diagram",
    "plan",
    "specification",
    "quote",
    "ticket list",
    "backlog",
    "minutes",
    "template",
    "workflow",
    "release notes",
    "floor plan",
    "price list",
];
const TOPIC: [&str; 24] = [
    "workshop",
    "migration",
    "audit",
    "launch",
    "renovation",
    "training",
    "office move",
    "kickoff",
    "review meeting",
    "pilot project",
    "warehouse",
    "customer visit",
    "trade fair",
    "board meeting",
    "server upgrade",
    "hiring round",
    "onboarding",
    "supplier meeting",
    "network upgrade",
    "website",
    "summer party",
    "tender",
    "inspection",
    "rollout",
];
const VERB: [&str; 24] = [
    "still needs a second look",
    "should be ready",
    "was sent to legal",
    "looks fine to me",
    "has two open questions",
    "must be signed",
    "can wait a little",
    "is on the shared drive",
    "needs your approval",
    "was moved to the new folder",
    "is missing the last page",
    "should go out",
    "has changed again",
    "is waiting for finance",
    "was approved yesterday",
    "needs the new numbers",
    "could use a shorter introduction",
    "was discussed with the vendor",
    "is blocked by the permit",
    "depends on the delivery date",
    "was printed in the wrong format",
    "will be presented by Nils",
    "needs one more signature",
    "can be closed",
];
const WHEN: [&str; 16] = [
    "before Friday",
    "by the end of the month",
    "next Tuesday",
    "after the holidays",
    "tomorrow morning",
    "this afternoon",
    "before the call",
    "on Monday",
    "by noon",
    "later this week",
    "before the deadline",
    "in the next sprint",
    "after lunch",
    "on the 14th",
    "before we order",
    "right after the meeting",
];
const ASK: [&str; 12] = [
    "Could you check whether",
    "I wonder if",
    "Please confirm that",
    "Do you know whether",
    "Let me know if",
    "Can someone find out whether",
    "I am not sure",
    "We should decide whether",
    "Would it help if",
    "It is unclear to me whether",
    "Tell me in case",
    "Maybe we can ask whether",
];
const SHORT: [&str; 16] = [
    "Thanks, that works for me.",
    "Agreed, let's go ahead with this.",
    "Sounds good to me, see you on Thursday.",
    "Perfect, thank you!",
    "Fine by me.",
    "Noted, I will take care of it.",
    "Great, thanks for the quick update.",
    "Yes, please go ahead.",
    "Looks good, no further comments from my side.",
    "Thank you, received.",
    "OK for me as well.",
    "Good point, I agree.",
    "Thanks, I'll forward it to our team.",
    "That date is fine for us.",
    "Confirmed, thanks.",
    "Works for me, thanks everyone.",
];

fn sentence(r: &mut Rng) -> String {
    match r.below(5) {
        0 => format!(
            "The {} {} for the {} {} {}.",
            r.pick(&ADJ),
            r.pick(&NOUN),
            r.pick(&TOPIC),
            r.pick(&VERB),
            r.pick(&WHEN)
        ),
        1 => format!(
            "{} the {} {} {}.",
            r.pick(&ASK),
            r.pick(&TOPIC),
            r.pick(&NOUN),
            r.pick(&VERB)
        ),
        2 => format!(
            "I talked to {} about the {} and the {} {} {}.",
            FIRST[r.below(20)].to_owned() + "",
            r.pick(&TOPIC),
            r.pick(&ADJ),
            r.pick(&NOUN),
            r.pick(&VERB)
        ),
        3 => format!(
            "Regarding the {}, our {} {} and the {} {} {}.",
            r.pick(&TOPIC),
            r.pick(&NOUN),
            r.pick(&VERB),
            r.pick(&ADJ),
            r.pick(&NOUN),
            r.pick(&WHEN)
        ),
        _ => format!(
            "For {} we still need the {} {}, and the {} {}.",
            r.pick(&WHEN),
            r.pick(&ADJ),
            r.pick(&NOUN),
            r.pick(&NOUN),
            r.pick(&VERB)
        ),
    }
}

fn prose(r: &mut Rng, n: usize) -> String {
    (0..n).map(|_| sentence(r)).collect::<Vec<_>>().join(" ")
}

fn first_name(a: &str) -> String {
    display(a).split(' ').next().unwrap_or("").to_owned()
}

/// An own text: greeting, `sentences` of prose (0: a short reply), signer.
fn own_text(r: &mut Rng, to: &str, sentences: usize, signer: &str) -> String {
    let greet = if to.is_empty() {
        "Hi all,".to_owned()
    } else {
        format!("Hi {},", first_name(to))
    };
    let text = if sentences == 0 {
        r.pick(&SHORT).to_owned()
    } else {
        prose(r, sentences)
    };
    format!(
        "{greet}\r\n\r\n{text}\r\n\r\nBest,\r\n{}\r\n",
        first_name(signer)
    )
}

// --- threads -------------------------------------------------------------------

#[derive(Clone, Copy, PartialEq, Eq)]
enum Quote {
    /// `On .. wrote:` and the parent's whole body, quoted.
    Nested,
    /// `On .. wrote:` and the parent's own text only.
    Trimmed,
    /// Outlook's `-----Original Message-----` block, unquoted.
    Outlook,
}

#[derive(Clone)]
struct Post {
    who: Who,
    from: String,
    rcpts: Vec<String>,
    to: Vec<String>,
    cc: Vec<String>,
    parent: Option<usize>,
    /// Sentences of own text; 0 a short reply.
    sentences: usize,
}

fn post(who: Who, from: &str, rcpts: Vec<String>, parent: Option<usize>, sentences: usize) -> Post {
    Post {
        who,
        from: from.to_owned(),
        to: rcpts.clone(),
        rcpts,
        cc: Vec::new(),
        parent,
        sentences,
    }
}

/// The transactions of a thread: each post's own text above its parent's
/// quote, with Message-ID, In-Reply-To and References.
fn thread(seed: u64, subject: &str, posts: &[Post], style: Quote) -> Vec<Tx> {
    let mut r = Rng::new(seed);
    let mut ids: Vec<String> = Vec::new();
    let mut own: Vec<String> = Vec::new();
    let mut bodies: Vec<String> = Vec::new();
    let mut refs: Vec<Vec<String>> = Vec::new();
    let mut out = Vec::new();
    for (i, p) in posts.iter().enumerate() {
        let id = msgid(&format!("t{seed}"), i, domain(&p.from));
        let addressee = p.parent.map(|q| posts[q].from.clone()).unwrap_or_default();
        let text = own_text(&mut r, &addressee, p.sentences, &p.from);
        let body = match p.parent {
            None => text.clone(),
            Some(q) => {
                let qp = &posts[q];
                match style {
                    Quote::Nested => format!("{text}\r\n{}", reply_quote(q, &qp.from, &bodies[q])),
                    Quote::Trimmed => format!("{text}\r\n{}", reply_quote(q, &qp.from, &own[q])),
                    Quote::Outlook => format!(
                        "{text}\r\n{}",
                        outlook_quote(q, &qp.from, &list(&qp.to), subject, &bodies[q])
                    ),
                }
            }
        };
        let mut tx = Tx::new(
            p.who.clone(),
            &p.from,
            p.rcpts.clone(),
            body.clone(),
            "thread",
        )
        .h("From", named(&p.from))
        .h("To", list(&p.to))
        .h(
            "Subject",
            if p.parent.is_some() {
                format!("Re: {subject}")
            } else {
                subject.to_owned()
            },
        )
        .h("Message-ID", id.clone());
        if !p.cc.is_empty() {
            tx = tx.h("Cc", list(&p.cc));
        }
        let mut my_refs = Vec::new();
        if let Some(q) = p.parent {
            my_refs = refs[q].clone();
            my_refs.push(ids[q].clone());
            tx = tx
                .h("In-Reply-To", ids[q].clone())
                .h("References", my_refs.join(" "));
            tx.label = format!("reply to {q}");
        } else {
            tx.label = "first".into();
        }
        ids.push(id);
        own.push(text);
        bodies.push(body);
        refs.push(my_refs);
        out.push(tx);
    }
    out
}

// ===========================================================================
// A1: chained forged senders
// ===========================================================================

/// Copy i (one new victim each) sent with MAIL FROM the victim of copy i-1.
#[tokio::test]
async fn a1_1_straight_chain_one_victim_each() {
    let (mut att, mut pl) = (Vec::new(), Vec::new());
    for i in 0..30 {
        let r = vec![staff(i)];
        let from = if i == 0 {
            SPAMMER.to_owned()
        } else {
            staff(i - 1)
        };
        let mut a = forged(0, i, &r, &from);
        a = a.h("From", format!("Offers <{}>", bare(SPAMMER)));
        att.push(a);
        pl.push(plain(0, i, &r));
    }
    attack_case("a1_1", att, pl).await;
}

/// Two victims a copy; MAIL FROM and From the first victim of the copy
/// before; To names both victims.
#[tokio::test]
async fn a1_2_chain_two_victims_a_copy_from_header_forged_too() {
    let (mut att, mut pl) = (Vec::new(), Vec::new());
    for i in 0..25 {
        let r = staff_range(2 * i, 2);
        let from = if i == 0 {
            SPAMMER.to_owned()
        } else {
            staff(2 * (i - 1))
        };
        att.push(forged(1, i, &r, &from).h("To", list(&r)));
        pl.push(plain(1, i, &r));
    }
    attack_case("a1_2", att, pl).await;
}

/// MAIL FROM the victim of copy i/2 (an older link), a `Re:` subject and a
/// To header naming that victim.
#[tokio::test]
async fn a1_3_chain_from_older_victims_with_re_subject() {
    let (mut att, mut pl) = (Vec::new(), Vec::new());
    for i in 0..30 {
        let r = vec![staff(100 + i)];
        let from = if i == 0 {
            SPAMMER.to_owned()
        } else {
            staff(100 + i / 2)
        };
        att.push(
            forged(2, i, &r, &from)
                .h("Subject", format!("Re: {}", SPAM[2].0))
                .h("To", format!("{}, {}", named(&from), named(&r[0]))),
        );
        pl.push(plain(2, i, &r));
    }
    attack_case("a1_3", att, pl).await;
}

/// A first copy to ten victims, then 25 copies each "from" one of those
/// ten (in turn) to one new victim.
#[tokio::test]
async fn a1_4_ten_then_rotating_forged_senders() {
    let (mut att, mut pl) = (Vec::new(), Vec::new());
    let first = staff_range(0, 10);
    att.push(plain(3, 0, &first));
    pl.push(plain(3, 0, &first));
    for i in 1..=25 {
        let r = vec![staff(10 + i)];
        att.push(forged(3, i, &r, &first[i % 10]));
        pl.push(plain(3, i, &r));
    }
    attack_case("a1_4", att, pl).await;
}

/// Reply-all shaped chain: copy i from the victim of copy i-1 to every
/// victim so far and one new (the plain sending has the same recipients).
#[tokio::test]
async fn a1_5_chain_to_everyone_so_far_plus_one() {
    // Each copy to everyone so far and one more grows one conversation,
    // free up to one transaction's 100 people, forged or not: 130 copies
    // pass it.
    let (mut att, mut pl) = (Vec::new(), Vec::new());
    for i in 0..130 {
        let r = staff_range(0, i + 1);
        let from = if i == 0 {
            SPAMMER.to_owned()
        } else {
            staff(i - 1)
        };
        att.push(
            forged(5, i, &r, &from)
                .h("Subject", format!("Re: {}", SPAM[5].0))
                .h("To", list(&r)),
        );
        pl.push(plain(5, i, &r));
    }
    attack_case("a1_5", att, pl).await;
}

// ===========================================================================
// A2: chain in blocks, then one transaction to many of the forged senders
// ===========================================================================

struct Blocks {
    t: usize,
    blocks: usize,
    per_block: usize,
    rcpts_per_copy: usize,
    /// Forged senders are victims of the previous copy (else fresh
    /// addresses nobody sent to).
    chained: bool,
    /// Fresh addresses added to the transaction to the forged senders.
    extra_new: usize,
    /// Old victims added to it (reply-all shape).
    extra_old: usize,
    tail: usize,
}

fn blocks_case(b: &Blocks) -> (Vec<Tx>, Vec<Tx>) {
    let (mut att, mut pl) = (Vec::new(), Vec::new());
    let mut next = 0usize;
    let mut victims: Vec<String> = Vec::new();
    let mut senders: Vec<String> = Vec::new();
    let mut n = 0;
    for blk in 0..b.blocks {
        for j in 0..b.per_block {
            let r = staff_range(next, b.rcpts_per_copy);
            next += b.rcpts_per_copy;
            let from = if b.chained {
                victims
                    .last()
                    .cloned()
                    .unwrap_or_else(|| SPAMMER.to_owned())
            } else {
                person(blk * 100 + j, "ourco.example").replace("@", &format!(".f{blk}@"))
            };
            if from != SPAMMER {
                senders.push(from.clone());
            }
            att.push(forged(b.t, n, &r, &from));
            pl.push(plain(b.t, n, &r));
            victims.extend(r);
            n += 1;
        }
    }
    // One transaction to the forged senders (deduplicated), a few old
    // victims and fresh addresses.
    let mut r: Vec<String> = Vec::new();
    for s in &senders {
        if !r.contains(s) {
            r.push(s.clone());
        }
    }
    for v in victims.iter().take(b.extra_old) {
        if !r.contains(v) {
            r.push(v.clone());
        }
    }
    r.extend(staff_range(next, b.extra_new));
    next += b.extra_new;
    let from = senders
        .last()
        .cloned()
        .unwrap_or_else(|| SPAMMER.to_owned());
    att.push(forged(b.t, n, &r, &from).h("To", list(&r)));
    pl.push(plain(b.t, n, &r));
    n += 1;
    // The chain goes on from the forged senders, one new victim a copy.
    for k in 0..b.tail {
        let r = vec![staff(next)];
        next += 1;
        let from = senders[k % senders.len()].clone();
        att.push(forged(b.t, n, &r, &from).h("Subject", format!("Re: {}", SPAM[b.t].0)));
        pl.push(plain(b.t, n, &r));
        n += 1;
    }
    (att, pl)
}

#[tokio::test]
async fn a2_1_three_blocks_of_five_fresh_senders_then_all_senders() {
    let (a, p) = blocks_case(&Blocks {
        t: 1,
        blocks: 3,
        per_block: 5,
        rcpts_per_copy: 1,
        chained: false,
        extra_new: 0,
        extra_old: 0,
        tail: 20,
    });
    attack_case("a2_1", a, p).await;
}

#[tokio::test]
async fn a2_2_chained_blocks_of_two_victims_then_senders_and_thirty_new() {
    let (a, p) = blocks_case(&Blocks {
        t: 2,
        blocks: 4,
        per_block: 4,
        rcpts_per_copy: 2,
        chained: true,
        extra_new: 30,
        extra_old: 0,
        tail: 15,
    });
    attack_case("a2_2", a, p).await;
}

#[tokio::test]
async fn a2_3_two_blocks_of_ten_then_senders_and_victims_reply_all() {
    let (a, p) = blocks_case(&Blocks {
        t: 4,
        blocks: 2,
        per_block: 10,
        rcpts_per_copy: 1,
        chained: false,
        extra_new: 0,
        extra_old: 20,
        tail: 25,
    });
    attack_case("a2_3", a, p).await;
}

#[tokio::test]
async fn a2_4_chained_blocks_of_64() {
    let (a, p) = blocks_case(&Blocks {
        t: 0,
        blocks: 4,
        per_block: 1,
        rcpts_per_copy: 64,
        chained: true,
        extra_new: 4,
        extra_old: 60,
        tail: 10,
    });
    attack_case("a2_4", a, p).await;
}

#[tokio::test]
async fn a2_5_five_chained_blocks_of_three_copies_of_three() {
    let (a, p) = blocks_case(&Blocks {
        t: 5,
        blocks: 5,
        per_block: 3,
        rcpts_per_copy: 3,
        chained: true,
        extra_new: 10,
        extra_old: 0,
        tail: 10,
    });
    attack_case("a2_5", a, p).await;
}

// ===========================================================================
// A3: a seed to many, a few forwards from seed recipients, then a chain
// ===========================================================================

struct Seeded {
    t: usize,
    seed: usize,
    forwards: usize,
    per_forward: usize,
    chain: usize,
    per_chain: usize,
    /// Forwards carry References/In-Reply-To to the seed's Message-ID.
    thread_headers: bool,
    /// Chain copies quote the seed under `On .. wrote:`.
    chain_quotes: bool,
}

fn forward_body(t: usize, n: usize, seed_from: &str, seed_to: &str, fwd_to: &str) -> String {
    format!(
        "FYI, see below.\r\n\r\n---------- Forwarded message ---------\r\nFrom: Offers <{}>\r\nDate: {}\r\nSubject: {}\r\nTo: {}\r\n\r\n{}",
        bare(seed_from),
        when(n),
        SPAM[t].0,
        named(seed_to),
        spam_body(t, fwd_to, n)
    )
}

fn seeded_case(s: &Seeded) -> (Vec<Tx>, Vec<Tx>) {
    let (mut att, mut pl) = (Vec::new(), Vec::new());
    let seed = staff_range(0, s.seed);
    let seed_tx = plain(s.t, 0, &seed).h("To", list(&seed));
    let seed_id = msgid("p", 0, "promo-mailer.example");
    att.push(seed_tx.clone());
    pl.push(plain(s.t, 0, &seed));
    let mut next = s.seed;
    let mut n = 1;
    let mut last: Vec<String> = Vec::new();
    for f in 0..s.forwards {
        let r = staff_range(next, s.per_forward);
        next += s.per_forward;
        let from = seed[(f * 7) % seed.len()].clone();
        let mut a = forged(s.t, n, &r, &from)
            .h("Subject", format!("Fwd: {}", SPAM[s.t].0))
            .h("To", list(&r));
        a.body = forward_body(s.t, n, SPAMMER, &from, &r[0]);
        if s.thread_headers {
            a = a
                .h("In-Reply-To", seed_id.clone())
                .h("References", seed_id.clone());
        }
        att.push(a);
        pl.push(plain(s.t, n, &r));
        last = r;
        n += 1;
    }
    for _ in 0..s.chain {
        let r = staff_range(next, s.per_chain);
        next += s.per_chain;
        let from = last.first().cloned().unwrap_or_else(|| seed[0].clone());
        let mut a = forged(s.t, n, &r, &from).h("Subject", format!("Re: {}", SPAM[s.t].0));
        if s.chain_quotes {
            a.body = format!(
                "{}\r\n{}",
                spam_body(s.t, &r[0], n),
                reply_quote(n, SPAMMER, &spam_body(s.t, &from, 0))
            );
            a = a.h("In-Reply-To", seed_id.clone());
        }
        att.push(a);
        pl.push(plain(s.t, n, &r));
        last = r;
        n += 1;
    }
    (att, pl)
}

#[tokio::test]
async fn a3_1_seed_30_three_forwards_of_two_chain_30() {
    let (a, p) = seeded_case(&Seeded {
        t: 0,
        seed: 30,
        forwards: 3,
        per_forward: 2,
        chain: 30,
        per_chain: 1,
        thread_headers: false,
        chain_quotes: false,
    });
    attack_case("a3_1", a, p).await;
}

#[tokio::test]
async fn a3_2_seed_64_three_forwards_of_five_with_references_chain_20() {
    let (a, p) = seeded_case(&Seeded {
        t: 1,
        seed: 64,
        forwards: 3,
        per_forward: 5,
        chain: 20,
        per_chain: 1,
        thread_headers: true,
        chain_quotes: false,
    });
    attack_case("a3_2", a, p).await;
}

#[tokio::test]
async fn a3_3_seed_50_four_forwards_of_three_chain_of_pairs() {
    let (a, p) = seeded_case(&Seeded {
        t: 3,
        seed: 50,
        forwards: 4,
        per_forward: 3,
        chain: 15,
        per_chain: 2,
        thread_headers: false,
        chain_quotes: false,
    });
    attack_case("a3_3", a, p).await;
}

#[tokio::test]
async fn a3_4_seed_40_two_forwards_of_eight_chain_quoting_the_seed() {
    let (a, p) = seeded_case(&Seeded {
        t: 4,
        seed: 40,
        forwards: 2,
        per_forward: 8,
        chain: 25,
        per_chain: 1,
        thread_headers: true,
        chain_quotes: true,
    });
    attack_case("a3_4", a, p).await;
}

#[tokio::test]
async fn a3_5_seed_64_three_forwards_of_one_chain_30() {
    let (a, p) = seeded_case(&Seeded {
        t: 5,
        seed: 64,
        forwards: 3,
        per_forward: 1,
        chain: 30,
        per_chain: 1,
        thread_headers: true,
        chain_quotes: false,
    });
    attack_case("a3_5", a, p).await;
}

// ===========================================================================
// A4: forged In-Reply-To/References to a real message delivered earlier
// ===========================================================================

/// A genuine message `g` from `from` (client `who`) to `rcpts`.
fn genuine(g: usize, who: Who, from: &str, rcpts: &[String], id: &str) -> Tx {
    Tx::new(who, from, rcpts.to_vec(), genuine_body(g), "genuine")
        .h("From", named(from))
        .h("To", list(rcpts))
        .h("Subject", GENUINE[g].0)
        .h("Message-ID", id)
}

#[tokio::test]
async fn a4_1_in_reply_to_a_partner_mail_thirty_new_victims() {
    let marta = partner(0);
    let ours = staff_range(0, 5);
    let gid = msgid("g", 1, PARTNER);
    let g = genuine(0, Who::Outside, &marta, &ours, &gid);
    let (mut att, mut pl) = (vec![g.clone()], vec![g]);
    for i in 0..30 {
        let r = vec![staff(10 + i)];
        att.push(
            forged(2, i, &r, &marta)
                .h("Subject", format!("Re: {}", GENUINE[0].0))
                .h("In-Reply-To", gid.clone())
                .h("References", gid.clone()),
        );
        pl.push(plain(2, i, &r));
    }
    attack_case("a4_1", att, pl).await;
}

#[tokio::test]
async fn a4_2_references_with_made_up_ids_pairs_of_victims() {
    let karin = partner(3);
    let ours = staff_range(0, 8);
    let gid = msgid("g", 2, PARTNER);
    let g = genuine(1, Who::Outside, &karin, &ours, &gid);
    let (mut att, mut pl) = (vec![g.clone()], vec![g]);
    for i in 0..15 {
        let r = staff_range(20 + 2 * i, 2);
        let from = ours[i % ours.len()].clone();
        let refs = format!("{gid} <x{i}.1@{PARTNER}> <x{i}.2@{OURS}>");
        att.push(
            forged(0, i, &r, &from)
                .h("Subject", format!("Re: {}", GENUINE[1].0))
                .h("In-Reply-To", format!("<x{i}.2@{OURS}>"))
                .h("References", refs),
        );
        pl.push(plain(0, i, &r));
    }
    attack_case("a4_2", att, pl).await;
}

#[tokio::test]
async fn a4_3_answers_a_newsletter_to_40_and_quotes_it() {
    let sender = partner(5);
    let ours = staff_range(0, 40);
    let gid = msgid("g", 3, PARTNER);
    let g = genuine(3, Who::Outside, &sender, &ours, &gid);
    let (mut att, mut pl) = (vec![g.clone()], vec![g]);
    for i in 0..30 {
        let r = vec![staff(50 + i)];
        let from = ours[i % ours.len()].clone();
        let mut a = forged(4, i, &r, &from)
            .h("Subject", format!("Re: {}", GENUINE[3].0))
            .h("In-Reply-To", gid.clone())
            .h("References", gid.clone());
        a.body = format!(
            "{}\r\n{}",
            spam_body(4, &r[0], i),
            reply_quote(3, &sender, &genuine_body(3))
        );
        att.push(a);
        pl.push(plain(4, i, &r));
    }
    attack_case("a4_3", att, pl).await;
}

#[tokio::test]
async fn a4_4_two_genuine_messages_alternating_and_one_copy_to_their_readers() {
    let p0 = partner(1);
    let p1 = partner(2);
    let ours = staff_range(0, 6);
    let g1 = msgid("g", 4, PARTNER);
    let g2 = msgid("g", 5, PARTNER);
    let t1 = genuine(1, Who::Outside, &p0, &ours, &g1);
    let t2 = genuine(2, Who::Outside, &p1, &ours, &g2)
        .h("In-Reply-To", g1.clone())
        .h("References", g1.clone());
    let (mut att, mut pl) = (vec![t1.clone(), t2.clone()], vec![t1, t2]);
    for i in 0..30 {
        let r = if i == 10 {
            ours.clone()
        } else {
            vec![staff(20 + i)]
        };
        let (irt, refs) = if i % 2 == 0 {
            (g1.clone(), g1.clone())
        } else {
            (g2.clone(), format!("{g1} {g2}"))
        };
        let from = if i % 2 == 0 { p1.clone() } else { p0.clone() };
        att.push(
            forged(5, i, &r, &from)
                .h("Subject", format!("Re: {}", GENUINE[1].0))
                .h("In-Reply-To", irt)
                .h("References", refs)
                .h("Cc", list(&ours)),
        );
        pl.push(plain(5, i, &r));
    }
    attack_case("a4_4", att, pl).await;
}

/// The real message is one of our users' own: it went out (by login) to
/// the spammer's address (an inquiry answered) and two colleagues, so the
/// spammer holds its Message-ID and answers it in every copy.
#[tokio::test]
async fn a4_5_in_reply_to_our_users_mail_sent_to_the_spammer() {
    let sales = staff(300);
    let rc = vec![SPAMMER.to_owned(), staff(301), staff(302)];
    let gid = msgid("g", 6, OURS);
    let g = genuine(2, login(&sales), &sales, &rc, &gid);
    let (mut att, mut pl) = (vec![g.clone()], vec![g]);
    for i in 0..45 {
        let r = vec![staff(i)];
        att.push(
            forged(3, i, &r, SPAMMER)
                .h("Subject", format!("Re: {}", GENUINE[2].0))
                .h("In-Reply-To", gid.clone())
                .h("References", gid.clone()),
        );
        pl.push(plain(3, i, &r));
    }
    attack_case("a4_5", att, pl).await;
}

// ===========================================================================
// A5: forged To/Cc naming the victims, one new victim per envelope
// ===========================================================================

#[tokio::test]
async fn a5_1_to_names_every_victim_so_far() {
    let (mut att, mut pl) = (Vec::new(), Vec::new());
    for i in 0..30 {
        let r = vec![staff(i)];
        att.push(forged(3, i, &r, SPAMMER).h("To", list(&staff_range(0, i + 1))));
        pl.push(plain(3, i, &r));
    }
    attack_case("a5_1", att, pl).await;
}

#[tokio::test]
async fn a5_2_cc_names_twenty_staff_never_envelope_recipients() {
    let cc = staff_range(200, 20);
    let (mut att, mut pl) = (Vec::new(), Vec::new());
    for i in 0..25 {
        let r = vec![staff(i)];
        att.push(forged(1, i, &r, SPAMMER).h("Cc", list(&cc)));
        pl.push(plain(1, i, &r));
    }
    attack_case("a5_2", att, pl).await;
}

#[tokio::test]
async fn a5_3_from_and_to_the_previous_victim_cc_the_new_one() {
    let (mut att, mut pl) = (Vec::new(), Vec::new());
    for i in 0..30 {
        let r = vec![staff(i)];
        let prev = if i == 0 { staff(399) } else { staff(i - 1) };
        att.push(
            forged(4, i, &r, &prev)
                .h("To", named(&prev))
                .h(
                    "Cc",
                    list(&[r[0].clone(), staff(350), staff(351), staff(352)]),
                )
                .h("Subject", format!("Re: {}", SPAM[4].0)),
        );
        pl.push(plain(4, i, &r));
    }
    attack_case("a5_3", att, pl).await;
}

#[tokio::test]
async fn a5_4_twelve_then_reply_all_headers_to_one_new_each() {
    let first = staff_range(0, 12);
    let (mut att, mut pl) = (Vec::new(), Vec::new());
    att.push(plain(0, 0, &first).h("To", list(&first)));
    pl.push(plain(0, 0, &first));
    for i in 1..=25 {
        let r = vec![staff(20 + i)];
        let mut names = first.clone();
        names.push(r[0].clone());
        att.push(
            forged(0, i, &r, &first[i % 12])
                .h("To", named(SPAMMER))
                .h("Cc", list(&names))
                .h("Subject", format!("Re: {}", SPAM[0].0))
                .h("In-Reply-To", msgid("p", 0, "promo-mailer.example")),
        );
        pl.push(plain(0, i, &r));
    }
    attack_case("a5_4", att, pl).await;
}

#[tokio::test]
async fn a5_5_cc_names_64_reached_two_new_per_envelope() {
    let (mut att, mut pl) = (Vec::new(), Vec::new());
    for i in 0..20 {
        let r = staff_range(100 + 2 * i, 2);
        let cc: Vec<String> = (0..64).map(|k| staff(100 + (k % (2 * i + 2)))).collect();
        let mut cc2: Vec<String> = Vec::new();
        for c in cc {
            if !cc2.contains(&c) {
                cc2.push(c);
            }
        }
        att.push(
            forged(2, i, &r, SPAMMER)
                .h("To", list(&r))
                .h("Cc", list(&cc2)),
        );
        pl.push(plain(2, i, &r));
    }
    attack_case("a5_5", att, pl).await;
}

// ===========================================================================
// A6: forged quotes
// ===========================================================================

fn many_sender(i: usize) -> String {
    format!(
        "<{}.{}@mail{}.example>",
        FIRST[i % 20],
        LAST[(i * 7) % 20],
        i
    )
}

#[tokio::test]
async fn a6_1_spam_above_a_quoted_partner_mail_from_many_senders() {
    let marta = partner(0);
    let ours = staff_range(0, 5);
    let gid = msgid("g", 7, PARTNER);
    let g = genuine(0, Who::Outside, &marta, &ours, &gid);
    let (mut att, mut pl) = (vec![g.clone()], vec![g]);
    for i in 0..30 {
        let r = vec![staff(10 + i)];
        let mut a = forged(0, i, &r, &many_sender(i)).h("Subject", format!("Re: {}", GENUINE[0].0));
        a.body = format!(
            "{}\r\n{}",
            spam_body(0, &r[0], i),
            reply_quote(i, &marta, &genuine_body(0))
        );
        att.push(a);
        pl.push(plain(0, i, &r));
    }
    attack_case("a6_1", att, pl).await;
}

#[tokio::test]
async fn a6_2_copies_quote_each_other() {
    let (mut att, mut pl) = (Vec::new(), Vec::new());
    let mut prev: Option<(String, String)> = None;
    for i in 0..30 {
        let r = vec![staff(i)];
        let from = many_sender(i);
        let mut a = forged(1, i, &r, &from);
        let own = spam_body(1, &r[0], i);
        a.body = match &prev {
            None => own.clone(),
            Some((author, body)) => format!("{own}\r\n{}", reply_quote(i, author, body)),
        };
        if i > 0 {
            a = a.h("Subject", format!("Re: {}", SPAM[1].0));
        }
        // Keep the quote chain bounded: each copy quotes the previous copy
        // with at most its own quote beneath (two levels).
        let keep = match &prev {
            None => own.clone(),
            Some((author, body)) => {
                let inner: String = body
                    .lines()
                    .filter(|l| !l.starts_with(">>"))
                    .collect::<Vec<_>>()
                    .join("\r\n");
                format!("{own}\r\n{}", reply_quote(i, author, &inner))
            }
        };
        prev = Some((from, keep));
        att.push(a);
        pl.push(plain(1, i, &r));
    }
    attack_case("a6_2", att, pl).await;
}

#[tokio::test]
async fn a6_3_one_line_above_the_spam_quoted_from_many_senders() {
    let (mut att, mut pl) = (Vec::new(), Vec::new());
    let lines = [
        "Please see below, as requested.",
        "As discussed, details below.",
        "See the message below.",
        "Forwarding this for your attention.",
        "Below is the information you asked for.",
    ];
    for i in 0..25 {
        let r = vec![staff(i)];
        let from = many_sender(40 + i);
        let mut a = forged(2, i, &r, &from).h("Subject", format!("Re: {}", SPAM[2].0));
        a.body = format!(
            "{}\r\n\r\n{}",
            lines[i % lines.len()],
            reply_quote(i, "<ar@pay-portal.example>", &spam_body(2, &r[0], i))
        );
        att.push(a);
        pl.push(plain(2, i, &r));
    }
    attack_case("a6_3", att, pl).await;
}

#[tokio::test]
async fn a6_4_outlook_original_of_a_genuine_mail_below_pairs() {
    let karin = partner(3);
    let ours = staff_range(0, 7);
    let gid = msgid("g", 8, PARTNER);
    let g = genuine(1, Who::Outside, &karin, &ours, &gid);
    let (mut att, mut pl) = (vec![g.clone()], vec![g]);
    for i in 0..30 {
        let r = staff_range(20 + 2 * i, 2);
        let mut a =
            forged(3, i, &r, &many_sender(80 + i)).h("Subject", format!("RE: {}", GENUINE[1].0));
        a.body = format!(
            "{}\r\n{}",
            spam_body(3, &r[0], i),
            outlook_quote(i, &karin, &list(&ours), GENUINE[1].0, &genuine_body(1))
        );
        att.push(a);
        pl.push(plain(3, i, &r));
    }
    attack_case("a6_4", att, pl).await;
}

/// The quoted message is one of our users' own, sent out earlier (by
/// login) to an outside address the spammer controls.
#[tokio::test]
async fn a6_5_quoting_our_users_outbound_mail_from_many_senders() {
    let felix = staff(310);
    let rc = vec!["<buyer@mail3.example>".to_owned()];
    let gid = msgid("g", 9, OURS);
    let g = genuine(2, login(&felix), &felix, &rc, &gid);
    let (mut att, mut pl) = (vec![g.clone()], vec![g]);
    for i in 0..30 {
        let r = vec![staff(i)];
        let mut a =
            forged(5, i, &r, &many_sender(120 + i)).h("Subject", format!("Re: {}", GENUINE[2].0));
        a.body = format!(
            "{}\r\n{}",
            spam_body(5, &r[0], i),
            reply_quote(i, &felix, &genuine_body(2))
        );
        att.push(a);
        pl.push(plain(5, i, &r));
    }
    attack_case("a6_5", att, pl).await;
}

// ===========================================================================
// A7: saturation
// ===========================================================================

fn brand_new(i: usize) -> String {
    format!("<new{i}.person@{OURS}>")
}

/// Sends `pre` (the campaign grown past `min_size`), then each probe; each
/// probe must stay in the campaign and raise size= by at least 90% of its
/// brand-new recipients (and by at least one).
async fn saturation_case(name: &str, pre: Vec<Tx>, probes: Vec<(Tx, usize)>, min_size: u64) {
    let mut txs = pre.clone();
    txs.extend(probes.iter().map(|(t, _)| t.clone()));
    let mut errs = Vec::new();
    for th in PAIRS {
        let vs = run_seq(&txs, th).await;
        eprintln!("{name} at {th:?}: {}", summary(&vs));
        let before = &vs[pre.len() - 1];
        if size(before).unwrap_or(0) < min_size {
            errs.push(format!(
                "{name} at {th:?}: the campaign reached only {:?} before the probes (want > {min_size}): {}",
                size(before),
                summary(&vs)
            ));
            continue;
        }
        for (k, (_, new)) in probes.iter().enumerate() {
            let i = pre.len() + k;
            let (prev, cur) = (&vs[i - 1], &vs[i]);
            let same = field(prev, "campaign") == field(cur, "campaign");
            let delta = size(cur).unwrap_or(0) as i64 - size(prev).unwrap_or(0) as i64;
            let want = (*new * 9).div_ceil(10).max(1) as i64;
            if !same || delta < want {
                errs.push(format!(
                    "{name} at {th:?}: probe {k} (message {i}) to {new} brand-new recipients: size {:?} -> {:?} (delta {delta}, want >= {want}), same campaign: {same}\n    before: {}\n    after:  {}",
                    size(prev),
                    size(cur),
                    prev.as_deref().unwrap_or("none"),
                    cur.as_deref().unwrap_or("none")
                ));
            }
        }
    }
    assert!(errs.is_empty(), "{}", errs.join("\n"));
}

#[tokio::test]
async fn a7_1_twelve_hundreds_then_single_and_batch_copies() {
    let pre: Vec<Tx> = (0..12)
        .map(|i| plain(0, i, &staff_range(100 * i, 100)))
        .collect();
    let mut probes = Vec::new();
    let mut k = 0;
    for n in 0..5 {
        probes.push((plain(0, 20 + n, &[brand_new(k)]), 1));
        k += 1;
    }
    let r: Vec<String> = (k..k + 50).map(brand_new).collect();
    k += 50;
    probes.push((plain(0, 30, &r), 50));
    let r: Vec<String> = (k..k + 10).map(brand_new).collect();
    probes.push((plain(0, 31, &r), 10));
    saturation_case("a7_1", pre, probes, 1100).await;
}

#[tokio::test]
async fn a7_2_nineteen_times_64_then_forged_chain_of_singles() {
    let pre: Vec<Tx> = (0..19)
        .map(|i| plain(1, i, &staff_range(64 * i, 64)))
        .collect();
    let probes = (0..10)
        .map(|k| {
            let from = if k == 0 { staff(0) } else { brand_new(k - 1) };
            (
                forged(1, 40 + k, &[brand_new(k)], &from)
                    .h("Subject", format!("Re: {}", SPAM[1].0)),
                1,
            )
        })
        .collect();
    saturation_case("a7_2", pre, probes, 1100).await;
}

#[tokio::test]
async fn a7_3_past_1100_reply_shaped_copies_still_count_their_new_people() {
    let mut pre: Vec<Tx> = (0..11)
        .map(|i| plain(2, i, &staff_range(100 * i, 100)))
        .collect();
    pre.push(plain(2, 11, &staff_range(1100, 20)));
    let mut probes = Vec::new();
    for k in 0..5 {
        let mut r = staff_range(1090, 30);
        r.push(brand_new(2 * k));
        r.push(brand_new(2 * k + 1));
        probes.push((
            forged(2, 20 + k, &r, &staff(1090 + k))
                .h("Subject", format!("Re: {}", SPAM[2].0))
                .h("To", list(&r)),
            2,
        ));
    }
    for k in 0..3 {
        let r = vec![staff(1105 + k), brand_new(100 + k)];
        probes.push((forged(2, 30 + k, &r, &staff(1105 + k)), 1));
    }
    saturation_case("a7_3", pre, probes, 1100).await;
}

#[tokio::test]
async fn a7_4_two_transactions_of_600_then_answers_to_ten_new() {
    let pre: Vec<Tx> = (0..2)
        .map(|i| plain(3, i, &staff_range(600 * i, 600)))
        .collect();
    let first_id = msgid("p", 0, "promo-mailer.example");
    let probes = (0..10)
        .map(|k| {
            let r: Vec<String> = (10 * k..10 * k + 10).map(brand_new).collect();
            (
                forged(3, 10 + k, &r, &staff(k))
                    .h("In-Reply-To", first_id.clone())
                    .h("References", first_id.clone())
                    .h("Subject", format!("Re: {}", SPAM[3].0)),
                10,
            )
        })
        .collect();
    saturation_case("a7_4", pre, probes, 1100).await;
}

#[tokio::test]
async fn a7_5_twenty_four_times_50_then_forged_reply_all_triples() {
    let pre: Vec<Tx> = (0..24)
        .map(|i| {
            let r = staff_range(50 * i, 50);
            let from = if i == 0 {
                SPAMMER.to_owned()
            } else {
                staff(50 * (i - 1))
            };
            forged(5, i, &r, &from).h("To", list(&r))
        })
        .collect();
    let first_id = msgid("a", 0, "promo-mailer.example");
    let probes = (0..8)
        .map(|k| {
            let r: Vec<String> = (3 * k..3 * k + 3).map(brand_new).collect();
            let named_old = staff_range(0, 40);
            (
                forged(5, 30 + k, &r, &staff(k))
                    .h("To", list(&named_old))
                    .h("Cc", list(&r))
                    .h("In-Reply-To", first_id.clone())
                    .h("Subject", format!("Re: {}", SPAM[5].0)),
                3,
            )
        })
        .collect();
    saturation_case("a7_5", pre, probes, 1100).await;
}

// ===========================================================================
// B1: a thread among a partner company's staff, our people as recipients
// ===========================================================================

/// Partner staff (outside) write to our people `ours`; the partner staff
/// are named in the first message's To/Cc (in every message's when
/// `name_all`) and never envelope recipients here.
fn partner_thread(
    seed: u64,
    subject: &str,
    partners: usize,
    ours: &[String],
    n: usize,
    sentences: impl Fn(usize) -> usize,
    name_all: bool,
    style: Quote,
) -> Vec<Tx> {
    let ps: Vec<String> = (0..partners).map(partner).collect();
    let posts: Vec<Post> = (0..n)
        .map(|i| {
            let from = ps[i % partners].clone();
            let mut p = post(
                Who::Outside,
                &from,
                ours.to_vec(),
                if i == 0 { None } else { Some(i - 1) },
                sentences(i),
            );
            let others: Vec<String> = ps.iter().filter(|x| **x != from).cloned().collect();
            if i == 0 || name_all {
                p.to = others;
                p.cc = ours.to_vec();
            } else {
                p.to = ours.to_vec();
            }
            p
        })
        .collect();
    thread(seed, subject, &posts, style)
}

#[tokio::test]
async fn b1_1_short_replies_among_four_partners_to_three_of_ours() {
    let txs = partner_thread(
        11,
        "Delivery dates for the spring order",
        4,
        &staff_range(0, 3),
        12,
        |i| if i == 0 { 4 } else { 0 },
        false,
        Quote::Nested,
    );
    ham_case("b1_1", txs).await;
}

#[tokio::test]
async fn b1_2_long_replies_among_five_partners_to_eight_of_ours() {
    let txs = partner_thread(
        12,
        "Joint proposal for the tender",
        5,
        &staff_range(10, 8),
        20,
        |i| 2 + i % 2,
        true,
        Quote::Nested,
    );
    ham_case("b1_2", txs).await;
}

#[tokio::test]
async fn b1_3_thirty_messages_to_one_of_ours_alternating_short_and_long() {
    let txs = partner_thread(
        13,
        "Open points of the audit",
        3,
        &staff_range(30, 1),
        30,
        |i| if i % 2 == 0 { 3 } else { 0 },
        false,
        Quote::Nested,
    );
    ham_case("b1_3", txs).await;
}

#[tokio::test]
async fn b1_4_trimmed_quotes_to_fifteen_of_ours_some_dropping_off() {
    let ours = staff_range(40, 15);
    let mut txs = partner_thread(
        14,
        "Server upgrade weekend",
        6,
        &ours,
        16,
        |i| if i % 3 == 0 { 3 } else { 0 },
        false,
        Quote::Trimmed,
    );
    // Later messages go to fewer of ours (people drop off the thread).
    for (i, tx) in txs.iter_mut().enumerate().skip(8) {
        tx.rcpts.truncate(15 - (i - 7));
    }
    ham_case("b1_4", txs).await;
}

#[tokio::test]
async fn b1_5_outlook_style_thread_to_five_of_ours() {
    let txs = partner_thread(
        15,
        "Price list 2025",
        4,
        &staff_range(60, 5),
        10,
        |i| if i == 0 { 4 } else { 1 + i % 3 },
        true,
        Quote::Outlook,
    );
    ham_case("b1_5", txs).await;
}

// ===========================================================================
// B2: a thread whose Cc (our people) grows
// ===========================================================================

/// `n` posts; post i goes to the first `start + grown(i)` of ours. Senders
/// from `senders` in turn (who, address).
fn growing(
    seed: u64,
    subject: &str,
    senders: &[(Who, String)],
    start: usize,
    n: usize,
    every: usize,
    sentences: impl Fn(usize) -> usize,
    external_rcpts: &[String],
) -> Vec<Tx> {
    let ours = staff_range(100, start + n);
    let posts: Vec<Post> = (0..n)
        .map(|i| {
            let (who, from) = senders[i % senders.len()].clone();
            let k = start + i / every;
            let mut rc: Vec<String> = ours[..k].iter().filter(|a| **a != from).cloned().collect();
            if who != Who::Outside {
                // Our own reply goes out to the partner too.
                rc.extend(external_rcpts.iter().cloned());
            } else {
                // The partner's reply reaches our people who write in it.
                for (w, a) in senders {
                    if *w != Who::Outside && !rc.contains(a) {
                        rc.push(a.clone());
                    }
                }
            }
            let mut p = post(
                who,
                &from,
                rc,
                if i == 0 { None } else { Some(i - 1) },
                sentences(i),
            );
            p.to = vec![senders[(i + 1) % senders.len()].1.clone()];
            p.cc = ours[..k].to_vec();
            p
        })
        .collect();
    let mut txs = thread(seed, subject, &posts, Quote::Nested);
    // "Adding X" in short replies that add someone.
    for (i, tx) in txs.iter_mut().enumerate() {
        if i > 0 && i % every == 0 && sentences(i) == 0 {
            let added = &ours[start + i / every - 1];
            tx.body = format!(
                "Adding {}, who handles this on our side.\r\n\r\n{}",
                display(added),
                tx.body
            );
        }
    }
    txs
}

fn outside_partners(k: usize) -> Vec<(Who, String)> {
    (0..k).map(|i| (Who::Outside, partner(i))).collect()
}

#[tokio::test]
async fn b2_1_ten_short_replies_each_adding_one_of_ours() {
    let txs = growing(
        21,
        "Invoice questions",
        &outside_partners(3),
        2,
        11,
        1,
        |i| if i == 0 { 3 } else { 0 },
        &[],
    );
    ham_case("b2_1", txs).await;
}

#[tokio::test]
async fn b2_2_twenty_long_replies_adding_one_every_other_reply() {
    let txs = growing(
        22,
        "Migration plan",
        &outside_partners(4),
        3,
        21,
        2,
        |i| 2 + i % 2,
        &[],
    );
    ham_case("b2_2", txs).await;
}

#[tokio::test]
async fn b2_3_our_login_user_and_a_partner_alternate_cc_grows_each_reply() {
    let me = staff(90);
    let senders = vec![(Who::Outside, partner(0)), (login(&me), me.clone())];
    let txs = growing(
        23,
        "Contract renewal",
        &senders,
        2,
        17,
        1,
        |i| if i % 3 == 0 { 2 } else { 0 },
        &[partner(0)],
    );
    ham_case("b2_3", txs).await;
}

#[tokio::test]
async fn b2_4_twenty_four_short_replies_adding_one_each() {
    let txs = growing(
        24,
        "Trade fair booth",
        &outside_partners(5),
        2,
        25,
        1,
        |i| if i == 0 { 4 } else { 0 },
        &[],
    );
    ham_case("b2_4", txs).await;
}

#[tokio::test]
async fn b2_5_thirty_posts_partner_and_office_alternating_one_new_every_other() {
    let me = staff(91);
    let senders = vec![
        (Who::Outside, partner(1)),
        (Who::Office(44), me.clone()),
        (Who::Outside, partner(2)),
    ];
    let txs = growing(
        25,
        "Renovation of the second floor",
        &senders,
        2,
        30,
        2,
        |i| if i % 4 == 0 { 3 } else { 0 },
        &[partner(1), partner(2)],
    );
    ham_case("b2_5", txs).await;
}

// ===========================================================================
// B3: forks (replies quote different earlier messages)
// ===========================================================================

fn forked(
    seed: u64,
    subject: &str,
    senders: &[(Who, String)],
    ours: &[String],
    externals: &[String],
    n: usize,
    parent: impl Fn(usize, &mut Rng) -> usize,
    sentences: impl Fn(usize) -> usize,
    style: Quote,
) -> Vec<Tx> {
    let mut r = Rng::new(seed ^ 0xF0F0);
    let posts: Vec<Post> = (0..n)
        .map(|i| {
            let (who, from) = senders[i % senders.len()].clone();
            let mut rc: Vec<String> = ours.iter().filter(|a| **a != from).cloned().collect();
            if who != Who::Outside {
                rc.extend(externals.iter().filter(|a| **a != from).cloned());
            }
            let par = if i == 0 {
                None
            } else {
                Some(parent(i, &mut r))
            };
            post(who, &from, rc, par, sentences(i))
        })
        .collect();
    thread(seed, subject, &posts, style)
}

#[tokio::test]
async fn b3_1_random_earlier_parents_partner_senders_short() {
    let txs = forked(
        31,
        "Kickoff agenda",
        &outside_partners(4),
        &staff_range(0, 4),
        &[],
        15,
        |i, r| r.below(i),
        |i| if i == 0 { 4 } else { 0 },
        Quote::Nested,
    );
    ham_case("b3_1", txs).await;
}

#[tokio::test]
async fn b3_2_two_branches_from_the_root_long_replies() {
    let txs = forked(
        32,
        "Website relaunch",
        &outside_partners(3),
        &staff_range(20, 6),
        &[],
        20,
        |i, _| i.saturating_sub(2),
        |i| 2 + i % 3,
        Quote::Nested,
    );
    ham_case("b3_2", txs).await;
}

#[tokio::test]
async fn b3_3_twelve_outsiders_answer_the_root() {
    let senders: Vec<(Who, String)> = (0..12).map(|i| (Who::Outside, partner(20 + i))).collect();
    let txs = forked(
        33,
        "Who can take part in the pilot?",
        &senders,
        &staff_range(40, 5),
        &[],
        13,
        |_, _| 0,
        |i| if i == 0 { 3 } else { 0 },
        Quote::Nested,
    );
    ham_case("b3_3", txs).await;
}

#[tokio::test]
async fn b3_4_inside_and_outside_random_parents() {
    let a = staff(60);
    let b = staff(61);
    let senders = vec![
        (Who::Outside, partner(0)),
        (login(&a), a.clone()),
        (Who::Outside, partner(1)),
        (Who::Office(7), b.clone()),
    ];
    let mut ours = staff_range(62, 6);
    ours.push(a.clone());
    ours.push(b.clone());
    let txs = forked(
        34,
        "Onboarding of the new team",
        &senders,
        &ours,
        &[partner(0), partner(1)],
        25,
        |i, r| i - 1 - r.below(i.min(4)),
        |i| if i % 3 == 0 { 2 } else { 0 },
        Quote::Nested,
    );
    ham_case("b3_4", txs).await;
}

#[tokio::test]
async fn b3_5_outlook_forks_trimmed() {
    let txs = forked(
        35,
        "Inventory count",
        &outside_partners(5),
        &staff_range(80, 3),
        &[],
        18,
        |i, r| if i % 2 == 0 { r.below(i) } else { i - 1 },
        |i| if i % 2 == 0 { 2 } else { 0 },
        Quote::Outlook,
    );
    ham_case("b3_5", txs).await;
}

// ===========================================================================
// B4: an announcement to the whole company, then reply-alls
// ===========================================================================

struct Announce {
    seed: u64,
    staff: usize,
    batch: usize,
    who: fn(&str) -> Who,
    /// Outside people copied on the announcement.
    externals: Vec<String>,
    inside_replies: usize,
    inside_sentences: fn(usize) -> usize,
    /// Outside replies: (reply to all, sentences).
    outside: Vec<(bool, usize)>,
}

fn office(_: &str) -> Who {
    Who::Office(20)
}

fn announcement(a: &Announce) -> Vec<Tx> {
    let mut r = Rng::new(a.seed);
    let boss = staff(399);
    let everyone = staff_range(0, a.staff);
    let subject = "Company update: new office opening in April";
    let id = msgid("ann", a.seed as usize, OURS);
    let text = format!(
        "Dear colleagues,\r\n\r\nI am happy to announce that our new office opens on 1 April. {} {}\r\n\r\nThe move will happen in three waves, and every team lead will receive a detailed plan next week. Please keep the first week of April free of external appointments where you can.\r\n\r\nBest regards,\r\n{}\r\n",
        prose(&mut r, 2),
        prose(&mut r, 1),
        first_name(&boss)
    );
    let mut out = Vec::new();
    let mut all_rcpts: Vec<String> = everyone.clone();
    all_rcpts.extend(a.externals.iter().cloned());
    for (b, chunk) in all_rcpts.chunks(a.batch).enumerate() {
        let tx = Tx::new(
            (a.who)(&boss),
            &boss,
            chunk.to_vec(),
            text.clone(),
            &format!("announcement batch {b}"),
        )
        .h("From", named(&boss))
        .h("To", format!("All staff <all@{OURS}>"))
        .h("Subject", subject)
        .h("Message-ID", id.clone());
        out.push(tx);
    }
    let mut reply = |who: Who, from: &str, rcpts: Vec<String>, sentences: usize, k: usize| {
        let own = own_text(&mut r, &boss, sentences, from);
        Tx::new(
            who,
            from,
            rcpts,
            format!("{own}\r\n{}", reply_quote(k, &boss, &text)),
            "reply",
        )
        .h("From", named(from))
        .h("To", named(&boss))
        .h("Cc", format!("All staff <all@{OURS}>"))
        .h("Subject", format!("Re: {subject}"))
        .h("Message-ID", msgid("re", k, domain(from)))
        .h("In-Reply-To", id.clone())
        .h("References", id.clone())
    };
    for k in 0..a.inside_replies {
        let me = everyone[(k * 17 + 3) % a.staff].clone();
        let mut rc: Vec<String> = everyone.iter().filter(|x| **x != me).cloned().collect();
        rc.push(boss.clone());
        rc.extend(a.externals.iter().cloned());
        out.push(reply((a.who)(&me), &me, rc, (a.inside_sentences)(k), k));
    }
    for (k, (all, sentences)) in a.outside.iter().enumerate() {
        let ext = a.externals[k % a.externals.len()].clone();
        let rc = if *all {
            let mut rc = everyone.clone();
            rc.push(boss.clone());
            rc
        } else {
            vec![boss.clone()]
        };
        let mut tx = reply(Who::Outside, &ext, rc, *sentences, 100 + k);
        tx.label = if *all {
            "outside reply-all".into()
        } else {
            "outside reply".into()
        };
        out.push(tx);
    }
    out
}

fn by_login(a: &str) -> Who {
    login(a)
}

#[tokio::test]
async fn b4_1_login_to_120_inside_reply_alls_outside_replies_to_sender() {
    let txs = announcement(&Announce {
        seed: 41,
        staff: 120,
        batch: 1000,
        who: by_login,
        externals: vec![partner(0)],
        inside_replies: 10,
        inside_sentences: |k| if k % 2 == 0 { 0 } else { 2 },
        outside: vec![(false, 0), (false, 2), (false, 0)],
    });
    ham_case("b4_1", txs).await;
}

#[tokio::test]
async fn b4_2_office_to_200_in_batches_of_50_then_reply_alls() {
    let txs = announcement(&Announce {
        seed: 42,
        staff: 200,
        batch: 50,
        who: office,
        externals: vec![partner(0), partner(1)],
        inside_replies: 8,
        inside_sentences: |_| 0,
        outside: vec![(true, 0), (true, 0)],
    });
    ham_case("b4_2", txs).await;
}

#[tokio::test]
async fn b4_3_office_to_250_at_once_then_reply_alls() {
    let txs = announcement(&Announce {
        seed: 43,
        staff: 250,
        batch: 1000,
        who: office,
        externals: vec![partner(2)],
        inside_replies: 12,
        inside_sentences: |_| 0,
        outside: vec![(true, 0)],
    });
    ham_case("b4_3", txs).await;
}

#[tokio::test]
async fn b4_4_login_to_100_outside_reply_alls() {
    let txs = announcement(&Announce {
        seed: 44,
        staff: 100,
        batch: 1000,
        who: by_login,
        externals: vec![partner(3), partner(4), partner(5)],
        inside_replies: 3,
        inside_sentences: |_| 0,
        outside: vec![(true, 0), (true, 0), (true, 2), (true, 0), (true, 0)],
    });
    ham_case("b4_4", txs).await;
}

#[tokio::test]
async fn b4_5_login_to_150_in_batches_of_30_long_inside_replies() {
    let mut txs = announcement(&Announce {
        seed: 45,
        staff: 150,
        batch: 30,
        who: by_login,
        externals: vec![partner(6), partner(7)],
        inside_replies: 6,
        inside_sentences: |_| 3,
        outside: vec![(false, 0), (false, 2)],
    });
    // The outside replies go to the sender and three colleagues.
    for tx in txs.iter_mut().filter(|t| t.label == "outside reply") {
        tx.rcpts.extend(staff_range(5, 3));
    }
    ham_case("b4_5", txs).await;
}

// ===========================================================================
// B5: a poll from one of our users and many short answers
// ===========================================================================

const ANSWERS: [&str; 12] = [
    "B works best for me.",
    "Option A, please.",
    "I vote for C.",
    "Thursday is fine, Friday would not work.",
    "A or B, both fine.",
    "Yes, count me in.",
    "No preference, either is fine.",
    "I can only do the morning slot.",
    "B, and I can bring the projector.",
    "Vegetarian option for me, thanks.",
    "C if possible, otherwise A.",
    "I will be on holiday, sorry.",
];

struct Poll {
    seed: u64,
    sender_who: Who,
    staff: usize,
    batch: usize,
    externals: usize,
    inside_answers: usize,
    outside_answers: usize,
    /// Outside answers go to the sender and every staff recipient.
    outside_reply_all: bool,
}

fn poll(p: &Poll) -> Vec<Tx> {
    let mut r = Rng::new(p.seed);
    let me = staff(390);
    let people = staff_range(0, p.staff);
    let ext: Vec<String> = (0..p.externals)
        .map(|i| person(i, &format!("cust{}.example", i % 7)))
        .collect();
    let subject = "Quick poll: date for the customer workshop";
    let id = msgid("poll", p.seed as usize, OURS);
    let text = format!(
        "Hi everyone,\r\n\r\nplease answer with A, B or C so that I can book the room. {}\r\n\r\nA: Tuesday 18 March\r\nB: Thursday 20 March\r\nC: Monday 24 March\r\n\r\nThanks,\r\n{}\r\n",
        prose(&mut r, 2),
        first_name(&me)
    );
    let mut all: Vec<String> = people.clone();
    all.extend(ext.iter().cloned());
    let mut out = Vec::new();
    for (b, chunk) in all.chunks(p.batch).enumerate() {
        out.push(
            Tx::new(
                p.sender_who.clone(),
                &me,
                chunk.to_vec(),
                text.clone(),
                &format!("poll batch {b}"),
            )
            .h("From", named(&me))
            .h("To", list(chunk))
            .h("Subject", subject)
            .h("Message-ID", id.clone()),
        );
    }
    let answer = |who: Who, from: &str, rcpts: Vec<String>, k: usize| {
        let body = format!(
            "{}\r\n\r\n{}\r\n\r\n{}",
            ANSWERS[(k * 5 + 1) % ANSWERS.len()],
            first_name(from),
            reply_quote(k, &me, &text)
        );
        Tx::new(who, from, rcpts, body, "answer")
            .h("From", named(from))
            .h("To", named(&me))
            .h("Subject", format!("Re: {subject}"))
            .h("Message-ID", msgid("ans", k, domain(from)))
            .h("In-Reply-To", id.clone())
            .h("References", id.clone())
    };
    let n = p.inside_answers.max(p.outside_answers);
    for k in 0..n {
        if k < p.inside_answers && p.staff > 0 {
            let from = people[k % p.staff].clone();
            let who = match &p.sender_who {
                Who::Login(_) => login(&from),
                _ => Who::Office(30 + (k % 200) as u8),
            };
            out.push(answer(who, &from, vec![me.clone()], k));
        }
        if k < p.outside_answers {
            let from = ext[k % ext.len()].clone();
            let mut rc = vec![me.clone()];
            if p.outside_reply_all {
                rc.extend(people.iter().cloned());
            }
            let mut tx = answer(Who::Outside, &from, rc, 1000 + k);
            tx.label = "outside answer".into();
            out.push(tx);
        }
    }
    out
}

#[tokio::test]
async fn b5_1_office_poll_to_40_staff_40_answers() {
    let txs = poll(&Poll {
        seed: 51,
        sender_who: Who::Office(9),
        staff: 40,
        batch: 1000,
        externals: 0,
        inside_answers: 40,
        outside_answers: 0,
        outside_reply_all: false,
    });
    ham_case("b5_1", txs).await;
}

#[tokio::test]
async fn b5_2_login_survey_to_25_customers_25_outside_answers() {
    let txs = poll(&Poll {
        seed: 52,
        sender_who: login(&staff(390)),
        staff: 0,
        batch: 1000,
        externals: 25,
        inside_answers: 0,
        outside_answers: 25,
        outside_reply_all: false,
    });
    ham_case("b5_2", txs).await;
}

#[tokio::test]
async fn b5_3_login_poll_to_30_staff_and_30_externals_reply_alls() {
    let txs = poll(&Poll {
        seed: 53,
        sender_who: login(&staff(390)),
        staff: 30,
        batch: 1000,
        externals: 30,
        inside_answers: 15,
        outside_answers: 10,
        outside_reply_all: true,
    });
    ham_case("b5_3", txs).await;
}

#[tokio::test]
async fn b5_4_office_poll_to_60_staff_and_5_externals() {
    let txs = poll(&Poll {
        seed: 54,
        sender_who: Who::Office(9),
        staff: 60,
        batch: 1000,
        externals: 5,
        inside_answers: 50,
        outside_answers: 5,
        outside_reply_all: false,
    });
    ham_case("b5_4", txs).await;
}

#[tokio::test]
async fn b5_5_office_poll_to_200_in_batches_80_inside_10_outside_answers() {
    let txs = poll(&Poll {
        seed: 55,
        sender_who: Who::Office(9),
        staff: 200,
        batch: 50,
        externals: 10,
        inside_answers: 80,
        outside_answers: 10,
        outside_reply_all: false,
    });
    ham_case("b5_5", txs).await;
}

// ===========================================================================
// B6: answers from outside to mail our users sent out
// ===========================================================================

/// Our user `me` writes (login) to `to` (+ `cc` colleagues); returns the
/// transaction and its Message-ID.
fn outbound(
    seed: u64,
    k: usize,
    me: &str,
    to: &[String],
    cc: &[String],
    subject: &str,
    r: &mut Rng,
) -> (Tx, String, String) {
    let id = msgid(&format!("out{seed}"), k, OURS);
    let text = own_text(r, &to[0], 3, me);
    let mut rc = to.to_vec();
    rc.extend(cc.iter().cloned());
    let mut tx = Tx::new(login(me), me, rc, text.clone(), "our mail out")
        .h("From", named(me))
        .h("To", list(to))
        .h("Subject", subject)
        .h("Message-ID", id.clone());
    if !cc.is_empty() {
        tx = tx.h("Cc", list(cc));
    }
    (tx, id, text)
}

fn answer_from_outside(
    r: &mut Rng,
    k: usize,
    from: &str,
    me: &str,
    rcpts: Vec<String>,
    subject: &str,
    id: &str,
    quoted: &str,
    sentences: usize,
) -> Tx {
    let own = own_text(r, me, sentences, from);
    Tx::new(
        Who::Outside,
        from,
        rcpts,
        format!("{own}\r\n{}", reply_quote(k, me, quoted)),
        "outside answer",
    )
    .h("From", named(from))
    .h("To", named(me))
    .h("Subject", format!("Re: {subject}"))
    .h("Message-ID", msgid("ext", k, domain(from)))
    .h("In-Reply-To", id)
    .h("References", id)
}

#[tokio::test]
async fn b6_1_ten_users_each_answered_by_their_contact() {
    let mut r = Rng::new(61);
    let mut txs = Vec::new();
    let mut outs = Vec::new();
    for k in 0..10 {
        let me = staff(k);
        let ext = person(k, &format!("firm{k}.example"));
        let subject = format!("Your request {}", 7000 + k);
        let (tx, id, text) = outbound(
            61,
            k,
            &me,
            std::slice::from_ref(&ext),
            &[],
            &subject,
            &mut r,
        );
        txs.push(tx);
        outs.push((me, ext, subject, id, text));
    }
    for (k, (me, ext, subject, id, text)) in outs.iter().enumerate() {
        txs.push(answer_from_outside(
            &mut r,
            k,
            ext,
            me,
            vec![me.clone()],
            subject,
            id,
            text,
            k % 3,
        ));
    }
    ham_case("b6_1", txs).await;
}

#[tokio::test]
async fn b6_2_one_invitation_to_20_externals_20_answers_some_copying_a_colleague() {
    let mut r = Rng::new(62);
    let me = staff(5);
    let ext: Vec<String> = (0..20)
        .map(|i| person(i, &format!("guest{}.example", i % 9)))
        .collect();
    let subject = "Invitation: supplier day on 20 March";
    let (tx, id, text) = outbound(62, 0, &me, &ext, &[], subject, &mut r);
    let mut txs = vec![tx];
    for (k, e) in ext.iter().enumerate() {
        let mut rc = vec![me.clone()];
        if k % 3 == 0 {
            rc.push(staff(6 + k % 4));
        }
        txs.push(answer_from_outside(
            &mut r, k, e, &me, rc, subject, &id, &text, 0,
        ));
    }
    ham_case("b6_2", txs).await;
}

#[tokio::test]
async fn b6_3_vendor_answers_copying_a_colleague_thread_goes_on() {
    let mut r = Rng::new(63);
    let me = staff(7);
    let col = staff(8);
    let vendor = person(3, "vendor.example");
    let subject = "Maintenance contract for the pumps";
    let (tx, mut id, mut text) = outbound(
        63,
        0,
        &me,
        std::slice::from_ref(&vendor),
        &[],
        subject,
        &mut r,
    );
    let mut txs = vec![tx];
    let mut refs = id.clone();
    for k in 0..8 {
        let a = answer_from_outside(
            &mut r,
            k,
            &vendor,
            &me,
            vec![me.clone(), col.clone()],
            subject,
            &id,
            &text,
            if k % 2 == 0 { 2 } else { 0 },
        )
        .h("Cc", named(&col))
        .h("References", refs.clone());
        let aid = msgid("ext", k, "vendor.example");
        refs = format!("{refs} {aid}");
        let atext = a.body.clone();
        txs.push(a);
        // Our user answers (login), copying the colleague.
        let nid = msgid("out63", k + 1, OURS);
        let own = own_text(&mut r, &vendor, if k % 2 == 0 { 0 } else { 2 }, &me);
        let body = format!("{own}\r\n{}", reply_quote(k, &vendor, &atext));
        txs.push(
            Tx::new(
                login(&me),
                &me,
                vec![vendor.clone(), col.clone()],
                body.clone(),
                "our answer",
            )
            .h("From", named(&me))
            .h("To", named(&vendor))
            .h("Cc", named(&col))
            .h("Subject", format!("Re: {subject}"))
            .h("Message-ID", nid.clone())
            .h("In-Reply-To", aid.clone())
            .h("References", refs.clone()),
        );
        refs = format!("{refs} {nid}");
        id = nid;
        text = body;
    }
    ham_case("b6_3", txs).await;
}

/// 24 of our users write to a vendor's support; each gets the support
/// desk's acknowledgement (one template, its ticket number and name).
#[tokio::test]
async fn b6_4_support_acknowledgements_to_24_of_our_users() {
    let mut r = Rng::new(64);
    let desk = "<support@vendor.example>".to_owned();
    let mut txs = Vec::new();
    let mut outs = Vec::new();
    for k in 0..24 {
        let me = staff(20 + k);
        let subject = format!("Problem with licence key {}", 3100 + k);
        let (tx, id, _text) = outbound(
            64,
            k,
            &me,
            std::slice::from_ref(&desk),
            &[],
            &subject,
            &mut r,
        );
        txs.push(tx);
        outs.push((me, subject, id));
    }
    for (k, (me, subject, id)) in outs.iter().enumerate() {
        let body = format!(
            "Dear {},\r\n\r\nthank you for contacting Vendor Support. Your request has been received and ticket number {} has been created for it. One of our support engineers will get back to you within one business day. Please keep the ticket number in the subject line of any further messages about this request.\r\n\r\nKind regards,\r\nVendor Support Team\r\n",
            display(me),
            880_000 + k * 13
        );
        txs.push(
            Tx::new(Who::Outside, &desk, vec![me.clone()], body, "support ack")
                .h("From", format!("Vendor Support <{}>", bare(&desk)))
                .h("To", named(me))
                .h(
                    "Subject",
                    format!("[Ticket {}] Re: {subject}", 880_000 + k * 13),
                )
                .h("Message-ID", msgid("ack", k, "vendor.example"))
                .h("In-Reply-To", id.clone())
                .h("References", id.clone()),
        );
    }
    // The hard case (docs/admin/solicited.md, "Conversations"): answers
    // to the very users who wrote are replies, free for 16 people, then
    // counted: the first eighteen acknowledgements are clean at both
    // pairs, and none is bulk at 5/20.
    for th in PAIRS {
        let vs = run_seq(&txs, th).await;
        let acks = &vs[24..];
        assert!(
            acks[..18].iter().all(|v| level(v) == "clean"),
            "b6_4 at {th:?}: {}",
            summary(&vs)
        );
        if th.1 >= 20.0 {
            assert!(
                acks.iter().all(|v| level(v) != "bulk"),
                "b6_4 at {th:?}: {}",
                summary(&vs)
            );
        }
    }
}

#[tokio::test]
async fn b6_5_externals_reply_all_to_our_mail_with_five_colleagues() {
    let mut r = Rng::new(65);
    let me = staff(50);
    let cols = staff_range(51, 5);
    let ext: Vec<String> = (0..4).map(|i| person(i, "consult.example")).collect();
    let subject = "Workshop preparation";
    let (tx, id, text) = outbound(65, 0, &me, &ext, &cols, subject, &mut r);
    let mut txs = vec![tx];
    for (k, e) in ext.iter().enumerate() {
        let mut rc = vec![me.clone()];
        rc.extend(cols.iter().cloned());
        if k == 3 {
            rc.push(staff(60));
        }
        txs.push(
            answer_from_outside(
                &mut r,
                k,
                e,
                &me,
                rc,
                subject,
                &id,
                &text,
                if k % 2 == 0 { 0 } else { 2 },
            )
            .h("Cc", list(&cols)),
        );
    }
    ham_case("b6_5", txs).await;
}

// ===========================================================================
// B7: one outsider copy of an inbound announcement, then reply-alls
// ===========================================================================

struct Copied {
    seed: u64,
    people: usize,
    /// The copy is a forward (`Fwd:` and a forwarded-message block).
    forward: bool,
    outside_replies: usize,
    inside_replies: usize,
    reply_sentences: usize,
}

fn copied(c: &Copied) -> Vec<Tx> {
    let mut r = Rng::new(c.seed);
    let sender = partner(9);
    let ours = staff_range(0, c.people);
    let subject = "Partner network: new portal and contact persons";
    let id = msgid("pann", c.seed as usize, PARTNER);
    let text = format!(
        "Dear partners,\r\n\r\nfrom next month all orders and service requests go through our new partner portal. {} {}\r\n\r\nYour contact persons stay the same; the portal accounts will be sent to each of you separately.\r\n\r\nKind regards,\r\n{}\r\n",
        prose(&mut r, 2),
        prose(&mut r, 1),
        first_name(&sender)
    );
    let mut out = vec![Tx::new(
        Who::Outside,
        &sender,
        ours.clone(),
        text.clone(),
        "announcement",
    )
    .h("From", named(&sender))
    .h("To", list(&ours[..10]))
    .h("Subject", subject)
    .h("Message-ID", id.clone())];
    // One outsider passes it on to one new address of ours.
    let outsider = person(4, "othercorp.example");
    let newbie = staff(300);
    let mut copy = Tx::new(
        Who::Outside,
        &outsider,
        vec![newbie.clone()],
        if c.forward {
            format!(
                "FYI, this might interest you.\r\n\r\n---------- Forwarded message ---------\r\nFrom: {}\r\nSubject: {subject}\r\n\r\n{text}",
                named(&sender)
            )
        } else {
            text.clone()
        },
        "outsider copy",
    )
    .h("From", named(&outsider))
    .h("To", named(&newbie))
    .h(
        "Subject",
        if c.forward {
            format!("Fwd: {subject}")
        } else {
            subject.to_owned()
        },
    )
    .h("Message-ID", msgid("oc", 1, "othercorp.example"));
    if c.forward {
        copy = copy.h("References", id.clone());
    }
    out.push(copy);
    let n = c.outside_replies.max(c.inside_replies);
    for k in 0..n {
        if k < c.outside_replies {
            let from = partner(10 + k);
            let own = own_text(&mut r, &sender, c.reply_sentences, &from);
            out.push(
                Tx::new(
                    Who::Outside,
                    &from,
                    ours.clone(),
                    format!("{own}\r\n{}", reply_quote(k, &sender, &text)),
                    "outside reply-all",
                )
                .h("From", named(&from))
                .h("To", named(&sender))
                .h("Cc", list(&ours[..10]))
                .h("Subject", format!("Re: {subject}"))
                .h("Message-ID", msgid("pr", k, PARTNER))
                .h("In-Reply-To", id.clone())
                .h("References", id.clone()),
            );
        }
        if k < c.inside_replies {
            let me = ours[(k * 7 + 1) % c.people].clone();
            let mut rc: Vec<String> = ours.iter().filter(|x| **x != me).cloned().collect();
            rc.push(sender.clone());
            let own = own_text(&mut r, &sender, c.reply_sentences, &me);
            let who = if k % 2 == 0 {
                login(&me)
            } else {
                Who::Office(50)
            };
            out.push(
                Tx::new(
                    who,
                    &me,
                    rc,
                    format!("{own}\r\n{}", reply_quote(k, &sender, &text)),
                    "inside reply-all",
                )
                .h("From", named(&me))
                .h("To", named(&sender))
                .h("Subject", format!("Re: {subject}"))
                .h("Message-ID", msgid("ir", k, OURS))
                .h("In-Reply-To", id.clone())
                .h("References", id.clone()),
            );
        }
    }
    out
}

#[tokio::test]
async fn b7_1_sixty_then_copy_then_ten_outside_reply_alls() {
    let txs = copied(&Copied {
        seed: 71,
        people: 60,
        forward: false,
        outside_replies: 10,
        inside_replies: 0,
        reply_sentences: 0,
    });
    ham_case("b7_1", txs).await;
}

#[tokio::test]
async fn b7_2_eighty_then_copy_then_fifteen_inside_reply_alls() {
    let txs = copied(&Copied {
        seed: 72,
        people: 80,
        forward: false,
        outside_replies: 0,
        inside_replies: 15,
        reply_sentences: 0,
    });
    ham_case("b7_2", txs).await;
}

#[tokio::test]
async fn b7_3_ninety_nine_then_copy_then_mixed_reply_alls() {
    let txs = copied(&Copied {
        seed: 73,
        people: 99,
        forward: false,
        outside_replies: 5,
        inside_replies: 5,
        reply_sentences: 0,
    });
    ham_case("b7_3", txs).await;
}

#[tokio::test]
async fn b7_4_sixty_then_forwarded_copy_then_reply_alls_quoting() {
    let txs = copied(&Copied {
        seed: 74,
        people: 60,
        forward: true,
        outside_replies: 6,
        inside_replies: 6,
        reply_sentences: 1,
    });
    ham_case("b7_4", txs).await;
}

#[tokio::test]
async fn b7_5_seventy_then_copy_then_long_outside_reply_alls() {
    let txs = copied(&Copied {
        seed: 75,
        people: 70,
        forward: false,
        outside_replies: 6,
        inside_replies: 2,
        reply_sentences: 3,
    });
    ham_case("b7_5", txs).await;
}
