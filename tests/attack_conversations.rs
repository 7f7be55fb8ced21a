//! Forged conversations (issue 63): a sender writes its envelope sender,
//! every header and every quote, so none of them may make a campaign's
//! recipients "already counted" or its copies a conversation. Each attack
//! of the audit is sent twice through the milter, once with its forgeries
//! and once plainly (the same transactions to the same recipients, from
//! the spammer's own address, without `In-Reply-To`, `References`, quotes
//! or To/Cc naming anyone else), and must reach bulk at the same copy as
//! the plain sending, within two copies, at thresholds 5/20 and 3/5.

mod common;

use bulkwatch::config::{Action, Config};
use common::{send_from, start, Client, Mail};
use indymilter_test::EomAction;

/// Thresholds (suspect, bulk) the attacks are tried at.
const THRESHOLDS: [(f64, f64); 2] = [(5.0, 20.0), (3.0, 5.0)];

const SPAM: &str = "Your mailbox has exceeded its storage limit and incoming messages are being \
held on the server. To avoid losing your messages, confirm your account within twenty four \
hours at the secure portal below. Accounts that are not confirmed will be suspended and their \
messages removed permanently by the administrator.\n\nhttps://mailbox-quota.example/confirm\n\n\
IT Service Desk\n";

const HAM: &str = "Hello all,\n\nplease find below the confirmation of your order for the third \
quarter. We will deliver forty units of the model R7 controller, twelve spare power supplies and \
the documentation set to your warehouse in Verona on the fourteenth. Invoices follow the usual \
terms of sixty days.\n\nBest regards,\nMarco Rossi\n";

const SPAMMER: &str = "desk@spam-own.example";

fn cfg(suspect: f64, bulk: f64) -> Config {
    let mut cfg = common::config();
    cfg.thresholds.suspect_threshold = suspect;
    cfg.thresholds.bulk_threshold = bulk;
    cfg.policy.clean = Action::Tag;
    cfg
}

fn victim(i: usize) -> String {
    format!("victim{i}@example.org")
}

/// One SMTP transaction of an attack, as sent with its forgeries.
#[derive(Debug, Clone)]
struct Copy {
    from: String,
    rcpts: Vec<String>,
    /// `In-Reply-To` and `References`.
    answers: Option<String>,
    /// The To and Cc headers, when the copy names people in them.
    to: Option<String>,
    cc: Option<String>,
    /// A quote of an earlier message under the text.
    quote: Option<String>,
    /// Another text than the spam (a real message the attack refers to).
    body: Option<&'static str>,
}

impl Copy {
    fn to(from: &str, rcpts: Vec<String>) -> Copy {
        Copy {
            from: from.to_owned(),
            rcpts,
            answers: None,
            to: None,
            cc: None,
            quote: None,
            body: None,
        }
    }

    /// The same transaction sent plainly.
    fn plain(&self) -> Copy {
        Copy {
            from: if self.body.is_some() {
                self.from.clone()
            } else {
                SPAMMER.to_owned()
            },
            answers: None,
            to: None,
            cc: None,
            quote: None,
            ..self.clone()
        }
    }

    fn mail(&self, n: usize) -> Mail {
        let mut headers = vec![
            ("From".to_owned(), self.from.clone()),
            (
                "To".to_owned(),
                self.to.clone().unwrap_or_else(|| self.rcpts.join(", ")),
            ),
            ("Subject".to_owned(), "Re: your mailbox".to_owned()),
            (
                "Date".to_owned(),
                "Mon, 07 Dec 2026 09:12:00 +0100".to_owned(),
            ),
            (
                "Message-ID".to_owned(),
                format!("<copy{n}@spam-own.example>"),
            ),
        ];
        if let Some(cc) = &self.cc {
            headers.push(("Cc".to_owned(), cc.clone()));
        }
        if let Some(a) = &self.answers {
            headers.push(("In-Reply-To".to_owned(), format!("<{a}>")));
            headers.push(("References".to_owned(), format!("<{a}>")));
        }
        let mut body = self.body.unwrap_or(SPAM).to_owned();
        if let Some(q) = &self.quote {
            let quoted: String = q.lines().map(|l| format!("> {l}\n")).collect();
            body = format!("{body}\nOn Mon, 7 Dec 2026 at 09:00, IT Desk wrote:\n{quoted}");
        }
        Mail {
            headers,
            body: body.replace('\n', "\r\n"),
            rcpt: String::new(),
            queue_id: format!("Q{n}"),
        }
    }
}

/// The verdict header of each copy (`clean` when there is none).
async fn run(copies: &[Copy], suspect: f64, bulk: f64) -> Vec<String> {
    let m = start(cfg(suspect, bulk)).await;
    let mut levels = Vec::with_capacity(copies.len());
    for (n, c) in copies.iter().enumerate() {
        let (actions, _) = send_from(m.addr, Client::Outside, &c.mail(n), &c.from, &c.rcpts).await;
        levels.push(
            actions
                .actions
                .iter()
                .find_map(|a| match a {
                    EomAction::AddHeader { name, value } if name.to_bytes() == b"X-Bulkwatch" => {
                        Some(value.to_string_lossy().into_owned())
                    }
                    _ => None,
                })
                .unwrap_or_else(|| "clean".into()),
        );
    }
    m.stop().await;
    levels
}

/// The index of the first copy of the spam that was bulk.
fn first_bulk(levels: &[String]) -> Option<usize> {
    levels.iter().position(|l| l.starts_with("bulk"))
}

/// Sends `attack` forged and plainly at both thresholds: both reach bulk,
/// within two copies of each other, and the forged one no later than
/// `at_most` when given. Answers the forged run's verdicts at 5/20.
async fn same_as_plain(name: &str, attack: &[Copy]) -> Vec<String> {
    let plain: Vec<Copy> = attack.iter().map(Copy::plain).collect();
    let mut kept = Vec::new();
    for (suspect, bulk) in THRESHOLDS {
        let forged = run(attack, suspect, bulk).await;
        let plainly = run(&plain, suspect, bulk).await;
        let (f, p) = (first_bulk(&forged), first_bulk(&plainly));
        assert!(
            p.is_some(),
            "{name} at {suspect}/{bulk}: sent plainly it never turned bulk: {plainly:?}"
        );
        let (f, p) = (f.unwrap_or(usize::MAX), p.unwrap_or(0));
        assert!(
            f <= p + 2,
            "{name} at {suspect}/{bulk}: bulk at copy {f} forged, {p} plainly\nforged: {forged:?}"
        );
        if kept.is_empty() {
            kept = forged;
        }
    }
    kept
}

/// The size a verdict header names.
fn size(level: &str) -> u64 {
    level
        .split("; ")
        .find_map(|f| f.strip_prefix("size="))
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Copy 0 from the spammer to v0; copy i "from" v(i) to v(i-1), each
/// answering and quoting the copy before: every recipient was the last
/// copy's forged sender. 151 copies reach 150 people.
#[tokio::test]
async fn a_chain_of_forged_senders_is_bulk_as_plain_sending() {
    let mut chain = vec![Copy::to(SPAMMER, vec![victim(0)])];
    for i in 1..=150 {
        let mut c = Copy::to(&victim(i), vec![victim(i - 1)]);
        c.answers = Some(format!("copy{}@spam-own.example", i - 1));
        c.quote = Some(SPAM.to_owned());
        chain.push(c);
    }
    let levels = same_as_plain("the chain", &chain).await;
    assert_eq!(size(levels.last().unwrap()), 150, "{:?}", levels.last());
}

/// 64 chain copies, then one transaction to the 64 forged senders, twice.
#[tokio::test]
async fn a_chain_in_blocks_of_64_is_bulk_as_plain_sending() {
    let mut copies = vec![Copy::to(SPAMMER, vec![victim(0)])];
    let mut n = 0;
    for _ in 0..2 {
        let senders: Vec<String> = (n + 1..=n + 64).map(victim).collect();
        for i in n + 1..=n + 64 {
            let mut c = Copy::to(&victim(i), vec![victim(i - 1)]);
            c.answers = Some(format!("copy{}@spam-own.example", copies.len() - 1));
            copies.push(c);
        }
        let mut block = Copy::to(&victim(n + 64), senders);
        block.answers = Some(format!("copy{}@spam-own.example", copies.len() - 1));
        copies.push(block);
        n += 64;
    }
    same_as_plain("the chain in blocks", &copies).await;
}

/// A first copy to 64, three forwards "from" people it reached to five
/// new people each (answering it), then a chain.
#[tokio::test]
async fn seed_forwards_and_chain_are_bulk_as_plain_sending() {
    let seed: Vec<String> = (0..64).map(victim).collect();
    let mut copies = vec![Copy::to(SPAMMER, seed.clone())];
    for (f, from) in seed.iter().enumerate().take(3) {
        let to: Vec<String> = (0..5).map(|j| victim(1000 + 5 * f + j)).collect();
        let mut c = Copy::to(from, to);
        c.answers = Some("copy0@spam-own.example".to_owned());
        c.quote = Some(SPAM.to_owned());
        copies.push(c);
    }
    for i in 0..60 {
        let mut c = Copy::to(&victim(2001 + i), vec![victim(2000 + i)]);
        c.answers = Some("copy0@spam-own.example".to_owned());
        copies.push(c);
    }
    same_as_plain("seed, forwards and chain", &copies).await;
}

/// Transactions of 100 fresh recipients until the campaign's party set
/// is full, then transactions to 64 brand-new addresses: each adds its 64
/// (a full set answers "unknown", which counts; before, a saturated bit
/// set answered "known" and 12 such transactions added nobody).
#[tokio::test]
async fn a_saturated_party_set_still_counts_new_people() {
    let mut copies = Vec::new();
    for t in 0..12 {
        let rcpts: Vec<String> = (0..100).map(|j| victim(100 * t + j)).collect();
        let from = if t == 0 {
            SPAMMER.to_owned()
        } else {
            victim(100 * (t - 1))
        };
        copies.push(Copy::to(&from, rcpts));
    }
    for t in 0..12 {
        let rcpts: Vec<String> = (0..64).map(|j| victim(50_000 + 64 * t + j)).collect();
        copies.push(Copy::to(&victim(3), rcpts));
    }
    let levels = same_as_plain("party-set saturation", &copies).await;
    let sizes: Vec<u64> = levels.iter().map(|l| size(l)).collect();
    // Each adds its 64 but for a rare address whose keyed 22-bit hash is
    // one the full set holds (1,024 of 4 million: one in 4,096).
    for w in sizes[12..].windows(2) {
        assert!(w[1] >= w[0] + 62, "{sizes:?}");
    }
    assert!(sizes[23] - sizes[11] >= 64 * 12 - 4, "{sizes:?}");
}

/// A real message delivered to ten people, then copies to one new victim
/// each, "answering" it (In-Reply-To and References of its Message-ID)
/// and sent "from" its recipients.
#[tokio::test]
async fn copies_answering_a_delivered_message_are_bulk_as_plain_sending() {
    let team: Vec<String> = (0..10).map(|i| format!("staff{i}@example.org")).collect();
    let mut real = Copy::to("marco@supplier.example", team.clone());
    real.body = Some(HAM);
    let mut copies = vec![real];
    for i in 0..40 {
        let mut c = Copy::to(&team[i % 10], vec![victim(i)]);
        c.answers = Some("copy0@spam-own.example".to_owned());
        c.quote = Some(HAM.to_owned());
        copies.push(c);
    }
    same_as_plain("answers to a delivered message", &copies).await;
}

/// Copies to one new victim each whose To and Cc headers name every
/// earlier victim, as a reply to all would.
#[tokio::test]
async fn copies_naming_the_victims_in_to_and_cc_are_bulk_as_plain_sending() {
    let mut copies = Vec::new();
    for i in 0..40 {
        let mut c = Copy::to(
            &if i == 0 {
                SPAMMER.to_owned()
            } else {
                victim(i - 1)
            },
            vec![victim(i)],
        );
        c.to = Some(victim(i));
        c.cc = Some((0..i).map(victim).collect::<Vec<_>>().join(", "));
        if i > 0 {
            c.answers = Some(format!("copy{}@spam-own.example", i - 1));
        }
        copies.push(c);
    }
    same_as_plain("To and Cc naming the victims", &copies).await;
}

/// The best shapes left (docs/admin/evasion.md, "Conversations"), and
/// what they gain over the same new people reached plainly:
/// - copies that each go again to everyone reached and add one person
///   grow one conversation, free up to one transaction's 100 people
///   (`single_transaction_recipients`): bulk at copy 117 where one-person
///   copies are bulk at copy 19, for about 100²/2 = 5,000 deliveries;
/// - copies that go again to half of everyone reached and add two are
///   replies, free for 16 people (`party::MAX_REPLY_FREE`): bulk at copy
///   18 where two-person copies are bulk at copy 10.
#[tokio::test]
async fn shapes_that_repeat_gain_at_most_one_transaction() {
    let mut grow = Vec::new();
    let mut reached: Vec<String> = vec![victim(0), victim(1)];
    grow.push(Copy::to(SPAMMER, reached.clone()));
    for i in 2..130 {
        reached.push(victim(i));
        grow.push(Copy::to(SPAMMER, reached.clone()));
    }
    let levels = run(&grow, 5.0, 20.0).await;
    // Copy k has reached k + 2 people; past 100 each counts: 20 at 119.
    assert_eq!(first_bulk(&levels), Some(117), "{levels:?}");
    assert!(
        levels[..117]
            .iter()
            .all(|l| l.starts_with("clean") || l.starts_with("suspect")),
        "{levels:?}"
    );

    let mut half = Vec::new();
    let mut reached: Vec<String> = vec![victim(0), victim(1)];
    half.push(Copy::to(SPAMMER, reached.clone()));
    for k in 1..30 {
        let again = reached.len().div_ceil(2);
        let mut to: Vec<String> = reached[..again].to_vec();
        let new = [victim(1000 + 2 * k), victim(1001 + 2 * k)];
        to.extend(new.iter().cloned());
        reached.extend(new);
        half.push(Copy::to(SPAMMER, to));
    }
    let levels = run(&half, 5.0, 20.0).await;
    assert_eq!(first_bulk(&levels), Some(18), "{levels:?}");
    let plain: Vec<Copy> = (0..30)
        .map(|k| Copy::to(SPAMMER, vec![victim(3000 + 2 * k), victim(3001 + 2 * k)]))
        .collect();
    assert_eq!(first_bulk(&run(&plain, 5.0, 20.0).await), Some(10));
}
