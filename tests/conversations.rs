//! Conversations are not campaigns (issue 50), through the milter: a
//! reply-all chain, a poll and its answers, a forward to a new group are
//! never suspect or bulk, at thresholds 5/20 and 3/5; the same spam quoted
//! under a short line by thirty senders, a forged thread and the best move
//! against the rule (docs/admin/evasion.md, "Conversations") still reach
//! bulk. The thread crossing two days is judged by the engine itself (the
//! milter reads the clock).

mod common;

use bulkwatch::config::{Action, Config};
use bulkwatch::engine::{Engine, Envelope, UnixSecs};
use common::{send_envelope, start, Mail};
use indymilter_test::EomAction;

/// Thresholds (suspect, bulk) the patterns are tried at.
const THRESHOLDS: [(f64, f64); 2] = [(5.0, 20.0), (3.0, 5.0)];

fn cfg(suspect: f64, bulk: f64) -> Config {
    let mut cfg = common::config();
    cfg.thresholds.suspect_threshold = suspect;
    cfg.thresholds.bulk_threshold = bulk;
    cfg.policy.clean = Action::Tag;
    cfg
}

/// The level of the verdict header (`clean` when there is none).
fn level(actions: &indymilter_test::EomActions) -> String {
    actions
        .actions
        .iter()
        .find_map(|a| match a {
            EomAction::AddHeader { name, value } if name.to_bytes() == b"X-Bulkwatch" => {
                Some(value.to_string_lossy().into_owned())
            }
            _ => None,
        })
        .unwrap_or_else(|| "clean".into())
}

fn people(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}@example.org")).collect()
}

/// A message as the MTA hands it over, with a Message-ID and, for a
/// reply, `In-Reply-To` and `References`.
fn mail(
    from: &str,
    to: &[String],
    subject: &str,
    id: &str,
    parent: Option<&str>,
    body: &str,
) -> Mail {
    let mut headers = vec![
        ("From".to_owned(), from.to_owned()),
        ("To".to_owned(), to.join(", ")),
        ("Subject".to_owned(), subject.to_owned()),
        (
            "Date".to_owned(),
            "Mon, 28 Nov 2026 09:12:00 +0100".to_owned(),
        ),
        ("Message-ID".to_owned(), format!("<{id}>")),
    ];
    if let Some(p) = parent {
        headers.push(("In-Reply-To".to_owned(), format!("<{p}>")));
        headers.push(("References".to_owned(), format!("<{p}>")));
    }
    Mail {
        headers,
        body: body.replace('\n', "\r\n"),
        rcpt: String::new(),
        queue_id: id.split('@').next().unwrap_or("Q").to_owned(),
    }
}

const ORDER: &str = "Hello all,\n\nplease find below the confirmation of your order for the third \
quarter. We will deliver forty units of the model R7 controller, twelve spare power supplies and \
the documentation set to your warehouse in Verona on the fourteenth. Invoices follow the usual \
terms of sixty days. If any quantity or the delivery address needs a change, let me know before \
Friday so that the shipment can still be adjusted.\n\nBest regards,\nMarco Rossi\nSales, \
Supplier Srl\n";

const POLL: &str = "Hi team,\n\nwe need to choose the date of the spring offsite before the \
venue releases its rooms. Please answer with the letter of the date that suits you: A is the \
twelfth of March, B the nineteenth of March and C the second of April. The agenda will be sent \
once we know the date, and travel can be booked through the usual portal.\n\nThanks,\nGiulia\n";

const SPAM: &str = "Your mailbox has exceeded its storage limit and incoming messages are being \
held on the server. To avoid losing your messages, confirm your account within twenty four \
hours at the secure portal below. Accounts that are not confirmed will be suspended and their \
messages removed permanently by the administrator.\n\nhttps://mailbox-quota.example/confirm\n\n\
IT Service Desk\n";

/// `line` above `text` quoted as a mail client quotes it.
fn quoting(line: &str, who: &str, text: &str) -> String {
    let quoted: String = text.lines().map(|l| format!("> {l}\n")).collect();
    format!("{line}\n\nOn Mon, 28 Nov 2026 at 09:12, {who} wrote:\n{quoted}")
}

/// `text` forwarded under `line`, as Gmail forwards.
fn forwarding(line: &str, who: &str, text: &str) -> String {
    format!(
        "{line}\n\n---------- Forwarded message ---------\nFrom: {who}\nDate: Mon, 28 Nov 2026 \
         at 09:12\nSubject: Order confirmation Q3\n\n{text}"
    )
}

const ANSWERS: [&str; 6] = [
    "Thanks Marco, all correct.",
    "Looks good to me, thank you.",
    "Confirmed on our side.",
    "Agreed, thanks!",
    "All fine here.",
    "Thank you, noted.",
];

/// One conversation: a message to a group of `group` and `replies`
/// answers to all; a poll to `voters` with as many answers to its
/// sender; a forward of the first message to eight new colleagues.
/// Every verdict.
async fn conversations(addr: std::net::SocketAddr, replies: usize, voters: usize) -> Vec<String> {
    let mut levels = Vec::new();
    let marco = "marco@supplier.example";
    let team = people("staff", 12);
    let a = mail(
        "Marco Rossi <marco@supplier.example>",
        &team,
        "Order confirmation Q3",
        "order-1@supplier.example",
        None,
        ORDER,
    );
    levels.push(level(&send_envelope(addr, &a, marco, &team).await.0));
    for i in 0..replies {
        let from = &team[i % team.len()];
        // All: Marco and the others.
        let mut to: Vec<String> = vec![marco.to_owned()];
        to.extend(team.iter().filter(|t| *t != from).cloned());
        let r = mail(
            from,
            &to,
            "Re: Order confirmation Q3",
            &format!("reply-{i}@example.org"),
            Some("order-1@supplier.example"),
            &quoting(
                ANSWERS[i % ANSWERS.len()],
                "Marco Rossi <marco@supplier.example>",
                ORDER,
            ),
        );
        levels.push(level(&send_envelope(addr, &r, from, &to).await.0));
    }
    let giulia = "giulia@example.org";
    let voting = people("voter", voters);
    let p = mail(
        "Giulia <giulia@example.org>",
        &voting,
        "Spring offsite: which date?",
        "poll-1@example.org",
        None,
        POLL,
    );
    levels.push(level(&send_envelope(addr, &p, giulia, &voting).await.0));
    for (i, v) in voting.iter().enumerate() {
        let choice = ["A works for me.", "B please.", "C is best for me."][i % 3];
        let r = mail(
            v,
            &[giulia.to_owned()],
            "Re: Spring offsite: which date?",
            &format!("vote-{i}@example.org"),
            Some("poll-1@example.org"),
            &quoting(choice, "Giulia <giulia@example.org>", POLL),
        );
        levels.push(level(
            &send_envelope(addr, &r, v, &[giulia.to_owned()]).await.0,
        ));
    }
    let group = people("warehouse", 8);
    let f = mail(
        &team[3],
        &group,
        "Fwd: Order confirmation Q3",
        "fwd-1@example.org",
        Some("order-1@supplier.example"),
        &forwarding(
            "FYI, for the delivery on the 14th.",
            "Marco Rossi <marco@supplier.example>",
            ORDER,
        ),
    );
    levels.push(level(&send_envelope(addr, &f, &team[3], &group).await.0));
    levels
}

fn judged_ordinary(levels: &[String]) -> bool {
    levels.iter().all(|l| l.starts_with("clean"))
}

/// The admin's trial and its larger forms: reply-all chains of 6 and 20,
/// polls of 15 and 60, a forward to a new group: every message clean, at
/// 5/20 and at 3/5.
#[tokio::test]
async fn replies_polls_and_forwards_are_never_suspect_or_bulk() {
    for (suspect, bulk) in THRESHOLDS {
        for (replies, voters) in [(6, 15), (20, 60)] {
            let m = start(cfg(suspect, bulk)).await;
            let levels = conversations(m.addr, replies, voters).await;
            assert_eq!(levels.len(), 1 + replies + 1 + voters + 1);
            assert!(
                judged_ordinary(&levels),
                "at {suspect}/{bulk}, {replies} replies, {voters} voters: {levels:?}"
            );
            // The replies were fingerprinted with what they quote: they are
            // in the first message's campaign, which says it is a
            // conversation.
            assert!(
                levels[1..=replies]
                    .iter()
                    .all(|l| l.contains("conversation=yes") && l.contains("quote=read")),
                "{levels:?}"
            );
            // The first message quotes nothing.
            assert!(!levels[0].contains("quote=read"), "{levels:?}");
            m.stop().await;
        }
    }
}

/// The same spam text under a short line of its own from thirty senders,
/// each to a fresh recipient: a campaign as before (the last five copies
/// bulk, at both thresholds).
#[tokio::test]
async fn spam_under_a_quote_from_thirty_senders_is_bulk() {
    for (suspect, bulk) in THRESHOLDS {
        let m = start(cfg(suspect, bulk)).await;
        let mut levels = Vec::new();
        for i in 0..30 {
            let from = format!("sender{i}@botnet{i}.example");
            let to = vec![format!("victim{i}@example.org")];
            let r = mail(
                &from,
                &to,
                "Re: your mailbox",
                &format!("q{i}@botnet{i}.example"),
                Some(&format!("made-up-{i}@example.org")),
                &quoting("see below", "IT Service Desk <it@example.org>", SPAM),
            );
            levels.push(level(&send_envelope(m.addr, &r, &from, &to).await.0));
        }
        assert!(
            levels[25..].iter().all(|l| l.starts_with("bulk")),
            "at {suspect}/{bulk}: {levels:?}"
        );
        m.stop().await;
    }
}

/// A forged thread: the first copy in one transaction to thirty of the
/// spammer's own addresses, then thirty "replies" from them (In-Reply-To
/// the first copy, its text quoted), each to fresh recipients: the fourth
/// forward ends the conversation, and the last five are bulk at both
/// thresholds.
#[tokio::test]
async fn a_forged_thread_is_bulk() {
    for (suspect, bulk) in THRESHOLDS {
        let m = start(cfg(suspect, bulk)).await;
        let own = people("drop", 30)
            .into_iter()
            .map(|a| a.replace("example.org", "spam-own.example"))
            .collect::<Vec<_>>();
        let first = mail(
            "IT Service Desk <desk@spam-own.example>",
            &own,
            "Your mailbox",
            "first@spam-own.example",
            None,
            SPAM,
        );
        let mut levels = vec![level(
            &send_envelope(m.addr, &first, "desk@spam-own.example", &own)
                .await
                .0,
        )];
        for (i, from) in own.iter().enumerate() {
            let to = vec![
                format!("victim{i}@example.org"),
                format!("other{i}@example.org"),
            ];
            let r = mail(
                from,
                &to,
                "Re: Your mailbox",
                &format!("r{i}@spam-own.example"),
                Some("first@spam-own.example"),
                &quoting(
                    "Please act on this.",
                    "IT Service Desk <desk@spam-own.example>",
                    SPAM,
                ),
            );
            levels.push(level(&send_envelope(m.addr, &r, from, &to).await.0));
        }
        assert!(levels[0].starts_with("clean"), "{levels:?}");
        assert!(
            levels[4..].iter().all(|l| l.starts_with("bulk")),
            "at {suspect}/{bulk}: {levels:?}"
        );
        m.stop().await;
    }
}

/// The best move against the rule (docs/admin/evasion.md): stay a
/// conversation. A first copy to forty, then three forwards from
/// addresses it reached, twenty new recipients each: a hundred people,
/// as many as one transaction may reach clean
/// (`single_transaction_recipients`). One recipient more (the third
/// forward to twenty-one), or a fourth forward (after three of nineteen:
/// under the reach bound), and it is a campaign counted by its
/// recipients.
#[tokio::test]
async fn the_best_move_reaches_no_more_than_one_transaction() {
    for extra in ["recipient", "forward", "none"] {
        let m = start(cfg(5.0, 20.0)).await;
        let own = people("reached", 40);
        let first = mail(
            "Desk <desk@spam-own.example>",
            &own,
            "Notice",
            "n1@spam-own.example",
            None,
            SPAM,
        );
        let mut levels = vec![level(
            &send_envelope(m.addr, &first, "desk@spam-own.example", &own)
                .await
                .0,
        )];
        let forward = |f: usize, to: &[String]| {
            mail(
                &own[f],
                to,
                "Fwd: Notice",
                &format!("f{f}@example.org"),
                Some("n1@spam-own.example"),
                &forwarding("FYI", "Desk <desk@spam-own.example>", SPAM),
            )
        };
        for (f, from) in own.iter().enumerate().take(3) {
            let n = match extra {
                "recipient" if f == 2 => 21,
                // Room left under the reach bound: only the count of
                // forwards can end the conversation.
                "forward" => 19,
                _ => 20,
            };
            let to = people(&format!("new{f}-"), n);
            levels.push(level(
                &send_envelope(m.addr, &forward(f, &to), from, &to).await.0,
            ));
        }
        if extra == "forward" {
            let to = vec!["one-more@example.org".to_owned()];
            levels.push(level(
                &send_envelope(m.addr, &forward(3, &to), &own[3], &to)
                    .await
                    .0,
            ));
        }
        let (last, before) = levels.split_last().unwrap();
        assert!(judged_ordinary(before), "{extra}: {levels:?}");
        if extra == "none" {
            assert!(last.starts_with("clean"), "{levels:?}");
            assert!(last.contains("size=100"), "{last}");
        } else {
            let size = if extra == "forward" { 98 } else { 101 };
            assert!(last.starts_with("bulk"), "{extra}: {levels:?}");
            assert!(last.contains(&format!("size={size};")), "{extra}: {last}");
        }
        m.stop().await;
    }
}

/// A thread crossing two days: the window (6 hours) holds its messages a
/// few hours each; each day's replies are a conversation of their own, and
/// none is suspect or bulk (the engine, at the times given).
#[test]
fn a_thread_crossing_two_days_is_never_flagged() {
    for (suspect, bulk) in THRESHOLDS {
        let mut e = Engine::new(&cfg(suspect, bulk));
        let c = e.config().clone();
        let team = people("staff", 12);
        let marco = "marco@supplier.example".to_owned();
        let envelope = |from: &str, to: &[String]| Envelope {
            mail_from: Some(from.to_owned()),
            rcpts: to.to_vec(),
            ..Envelope::default()
        };
        let raw = |m: &Mail| -> Vec<u8> {
            let mut s = String::new();
            for (k, v) in &m.headers {
                s.push_str(&format!("{k}: {v}\r\n"));
            }
            s.push_str("\r\n");
            s.push_str(&m.body);
            s.into_bytes()
        };
        let start = 1_800_000_000u64;
        let first = mail(
            &marco,
            &team,
            "Order confirmation Q3",
            "o@s.example",
            None,
            ORDER,
        );
        let v = e.process(&raw(&first), &envelope(&marco, &team), UnixSecs(start));
        let mut levels = vec![v.level];
        // Every two hours for two days, someone answers all.
        for i in 0..24u64 {
            let from = &team[(i as usize) % 12];
            let mut to = vec![marco.clone()];
            to.extend(team.iter().filter(|t| *t != from).cloned());
            let r = mail(
                from,
                &to,
                "Re: Order confirmation Q3",
                &format!("d{i}@example.org"),
                Some("o@s.example"),
                &quoting(
                    ANSWERS[(i as usize) % 6],
                    "Marco Rossi <marco@supplier.example>",
                    ORDER,
                ),
            );
            let v = e.process(
                &raw(&r),
                &envelope(from, &to),
                UnixSecs(start + 7200 * (i + 1)),
            );
            levels.push(v.level);
        }
        assert!(
            levels
                .iter()
                .all(|l| *l == bulkwatch::engine::verdict::Level::Clean),
            "at {}/{}: {levels:?}",
            c.thresholds.suspect_threshold,
            c.thresholds.bulk_threshold
        );
    }
}
