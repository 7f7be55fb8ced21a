//! Conversations are not campaigns (issues 50 and 63), through the milter:
//! a reply-all chain, a poll and its answers, a forward to a new group, a
//! partner's thread whose Cc grows and forks, an announcement to the whole
//! company and its answers, and answers to our own users' mail are never
//! suspect or bulk, at thresholds 5/20 and 3/5. Our own staff write
//! through a login (`{auth_authen}`) or from the office network, as they
//! do through Postfix: that mail is the site's own, counted apart
//! (`[own]`). What counts is what this MX observed (the forged kinds:
//! `tests/attack_conversations.rs`). Threads that cross days are judged
//! by the engine itself (the milter reads the clock).

mod common;

use bulkwatch::config::{Action, Config};
use bulkwatch::engine::party::Origin;
use bulkwatch::engine::verdict::Level;
use bulkwatch::engine::{Engine, Envelope, UnixSecs};
use common::{send_from, start, Client, Mail};
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

/// The verdict header (`clean` when there is none: own mail is left
/// untouched, `policy.own = "none"`).
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

fn has_header(actions: &indymilter_test::EomActions) -> bool {
    actions.actions.iter().any(
        |a| matches!(a, EomAction::AddHeader { name, .. } if name.to_bytes() == b"X-Bulkwatch"),
    )
}

fn people(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i}@example.org")).collect()
}

/// A message as the MTA hands it over, with a Message-ID and, for a
/// reply, `In-Reply-To` and `References`; `cc` as a Cc header.
fn mail(
    from: &str,
    to: &[String],
    cc: &[String],
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
            "Mon, 07 Dec 2026 09:12:00 +0100".to_owned(),
        ),
        ("Message-ID".to_owned(), format!("<{id}>")),
    ];
    if !cc.is_empty() {
        headers.push(("Cc".to_owned(), cc.join(", ")));
    }
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

const ANNOUNCEMENT: &str = "Dear colleagues,\n\nfrom the first of January the office in Via \
Roma will open at eight and close at seven, and the canteen will serve lunch from noon to half \
past two. Parking permits for the new year can be requested from the facilities team until the \
fifteenth of December; please bring your badge when you collect yours. The holiday calendar for \
next year is attached to this message.\n\nKind regards,\nHuman Resources\n";

const PROJECT: &str = "Hi all,\n\nthe kick-off of the joint migration project is confirmed for \
Thursday at ten in our Milan office. We will go through the cut-over plan for the billing \
system, the test windows of both teams and the list of open risks. Please send me any topic you \
want on the agenda by Wednesday noon, and say if you join remotely so that we book the video \
room.\n\nThanks,\nPaola\nPartner Consulting\n";

/// `line` above `text` quoted as a mail client quotes it.
fn quoting(line: &str, who: &str, text: &str) -> String {
    let quoted: String = text.lines().map(|l| format!("> {l}\n")).collect();
    format!("{line}\n\nOn Mon, 7 Dec 2026 at 09:12, {who} wrote:\n{quoted}")
}

/// `text` forwarded under `line`, as Gmail forwards.
fn forwarding(line: &str, who: &str, text: &str) -> String {
    format!(
        "{line}\n\n---------- Forwarded message ---------\nFrom: {who}\nDate: Mon, 7 Dec 2026 \
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

/// How our own staff reach the milter in one run.
#[derive(Debug, Clone, Copy)]
enum Staff {
    /// Each logs in (SMTP AUTH on submission).
    Login,
    /// From the office network, 10.0.0.0/8 (Postfix's mynetworks).
    Office,
}

fn staff(how: Staff, login: &str) -> Client<'_> {
    match how {
        Staff::Login => Client::Login(login),
        Staff::Office => Client::At([10, 1, 2, 3]),
    }
}

/// A supplier's order to twelve staff, answered to all by our staff; a
/// poll to `voters` colleagues answered by each; a forward of the order
/// to eight new colleagues. Every verdict, and whether each got a header.
async fn conversations(
    addr: std::net::SocketAddr,
    how: Staff,
    replies: usize,
    voters: usize,
) -> Vec<(String, bool)> {
    let mut levels = Vec::new();
    let marco = "marco@supplier.example";
    let team = people("staff", 12);
    let a = mail(
        "Marco Rossi <marco@supplier.example>",
        &team,
        &[],
        "Order confirmation Q3",
        "order-1@supplier.example",
        None,
        ORDER,
    );
    let r = send_from(addr, Client::Outside, &a, marco, &team).await.0;
    levels.push((level(&r), has_header(&r)));
    for i in 0..replies {
        let from = &team[i % team.len()];
        let mut to: Vec<String> = vec![marco.to_owned()];
        to.extend(team.iter().filter(|t| *t != from).cloned());
        let r = mail(
            from,
            &to,
            &[],
            "Re: Order confirmation Q3",
            &format!("reply-{i}@example.org"),
            Some("order-1@supplier.example"),
            &quoting(
                ANSWERS[i % ANSWERS.len()],
                "Marco Rossi <marco@supplier.example>",
                ORDER,
            ),
        );
        let r = send_from(addr, staff(how, from), &r, from, &to).await.0;
        levels.push((level(&r), has_header(&r)));
    }
    let giulia = "giulia@example.org";
    let voting = people("voter", voters);
    let p = mail(
        "Giulia <giulia@example.org>",
        &voting,
        &[],
        "Spring offsite: which date?",
        "poll-1@example.org",
        None,
        POLL,
    );
    let r = send_from(addr, staff(how, giulia), &p, giulia, &voting)
        .await
        .0;
    levels.push((level(&r), has_header(&r)));
    for (i, v) in voting.iter().enumerate() {
        let choice = ["A works for me.", "B please.", "C is best for me."][i % 3];
        let r = mail(
            v,
            &[giulia.to_owned()],
            &[],
            "Re: Spring offsite: which date?",
            &format!("vote-{i}@example.org"),
            Some("poll-1@example.org"),
            &quoting(choice, "Giulia <giulia@example.org>", POLL),
        );
        let r = send_from(addr, staff(how, v), &r, v, &[giulia.to_owned()])
            .await
            .0;
        levels.push((level(&r), has_header(&r)));
    }
    let group = people("warehouse", 8);
    let f = mail(
        &team[3],
        &group,
        &[],
        "Fwd: Order confirmation Q3",
        "fwd-1@example.org",
        Some("order-1@supplier.example"),
        &forwarding(
            "FYI, for the delivery on the 14th.",
            "Marco Rossi <marco@supplier.example>",
            ORDER,
        ),
    );
    let r = send_from(addr, staff(how, &team[3]), &f, &team[3], &group)
        .await
        .0;
    levels.push((level(&r), has_header(&r)));
    levels
}

/// The admin's trial and its larger forms: reply-all chains of 6 and 20,
/// polls of 15 and 60, a forward to a new group, with our staff logged in
/// and from the office network: the supplier's order clean, and our own
/// mail left untouched (no header), at 5/20 and at 3/5.
#[tokio::test]
async fn replies_polls_and_forwards_are_never_suspect_or_bulk() {
    for (suspect, bulk) in THRESHOLDS {
        for (how, replies, voters) in [
            (Staff::Login, 6, 15),
            (Staff::Login, 20, 60),
            (Staff::Office, 20, 60),
        ] {
            let m = start(cfg(suspect, bulk)).await;
            m.state
                .set_own_networks(vec!["10.0.0.0/8".parse().unwrap()]);
            let levels = conversations(m.addr, how, replies, voters).await;
            assert_eq!(levels.len(), 1 + replies + 1 + voters + 1);
            assert!(
                levels[0].0.starts_with("clean") && levels[0].1,
                "{levels:?}"
            );
            assert!(
                levels[1..]
                    .iter()
                    .all(|(l, header)| !header && l == "clean"),
                "at {suspect}/{bulk}, {how:?}, {replies} replies, {voters} voters: own mail \
                 untouched: {levels:?}"
            );
            m.stop().await;
        }
    }
}

/// A partner's thread among its own staff, our five people in copy: each
/// reply comes from a partner address named only in the first message's
/// headers (never a recipient here), quotes a different earlier message
/// (the thread's texts fork into several campaigns), and every second
/// reply copies in one more of our colleagues (the Cc grows by one); one
/// of our people answers too. Nothing is suspect or bulk.
#[tokio::test]
async fn a_partner_thread_that_grows_and_forks_is_never_flagged() {
    for (suspect, bulk) in THRESHOLDS {
        let m = start(cfg(suspect, bulk)).await;
        let partners: Vec<String> = ["paola", "luca", "marta", "enzo"]
            .iter()
            .map(|n| format!("{n}@partner.example"))
            .collect();
        let mut ours = people("ours", 5);
        let first = mail(
            &partners[0],
            &partners[1..],
            &ours,
            "Migration kick-off",
            "t0@partner.example",
            None,
            PROJECT,
        );
        let mut levels = vec![level(
            &send_from(m.addr, Client::Outside, &first, &partners[0], &ours)
                .await
                .0,
        )];
        let mut texts: Vec<(String, String)> = vec![("Paola".into(), PROJECT.into())];
        for i in 0..16usize {
            if i % 2 == 1 {
                ours.push(format!("newcc{i}@example.org"));
            }
            // Quote the message before, or one further back (a fork).
            let back = if i % 3 == 2 { texts.len().min(3) } else { 1 };
            let (who, quoted) = texts[texts.len() - back].clone();
            let line = format!("Thanks {who}, point {i} noted; adding what we need on our side.");
            let body = quoting(&line, &who, &quoted);
            let from = &partners[1 + i % 3];
            let (sender, client) = if i == 9 {
                (ours[0].clone(), Client::Login("ours0"))
            } else {
                (from.clone(), Client::Outside)
            };
            let r = mail(
                &sender,
                &partners,
                &ours,
                "Re: Migration kick-off",
                &format!("t{}@partner.example", i + 1),
                Some(&format!("t{i}@partner.example")),
                &body,
            );
            levels.push(level(
                &send_from(m.addr, client, &r, &sender, &ours).await.0,
            ));
            texts.push((format!("Reply {i}"), body));
        }
        assert!(
            levels.iter().all(|l| l.starts_with("clean")),
            "at {suspect}/{bulk}: {levels:?}"
        );
        m.stop().await;
    }
}

/// An announcement from an outside provider to 90 of our people in one
/// transaction, answered to all from outside, then one outsider's copy
/// of it to one new address (the case: it adds one person, not
/// 91), then more answers to all: all clean. The same text sent to the
/// whole company from inside, in one transaction and in batches of 50,
/// with reply-alls, is own mail and untouched.
#[tokio::test]
async fn an_announcement_and_its_answers_are_never_flagged() {
    for (suspect, bulk) in THRESHOLDS {
        let m = start(cfg(suspect, bulk)).await;
        let all = people("employee", 90);
        let hr = "news@hr-provider.example";
        let a = mail(
            hr,
            &all,
            &[],
            "Opening hours",
            "ann-1@hr.example",
            None,
            ANNOUNCEMENT,
        );
        let mut levels = vec![level(
            &send_from(m.addr, Client::Outside, &a, hr, &all).await.0,
        )];
        let reply = |i: usize, from: &str| {
            mail(
                from,
                &all,
                &[],
                "Re: Opening hours",
                &format!("re-{i}@hr.example"),
                Some("ann-1@hr.example"),
                &quoting("Thank you, noted.", "Human Resources", ANNOUNCEMENT),
            )
        };
        for i in 0..5 {
            let from = format!("colleague{i}@hr-provider.example");
            levels.push(level(
                &send_from(m.addr, Client::Outside, &reply(i, &from), &from, &all)
                    .await
                    .0,
            ));
        }
        let outsider = "someone@elsewhere.example";
        let one = vec!["new.hire@example.org".to_owned()];
        levels.push(level(
            &send_from(m.addr, Client::Outside, &a, outsider, &one)
                .await
                .0,
        ));
        for i in 5..10 {
            let from = format!("colleague{i}@hr-provider.example");
            levels.push(level(
                &send_from(m.addr, Client::Outside, &reply(i, &from), &from, &all)
                    .await
                    .0,
            ));
        }
        assert!(
            levels.iter().all(|l| l.starts_with("clean")),
            "at {suspect}/{bulk}: {levels:?}"
        );
        assert!(levels[6].contains("size=91"), "{levels:?}");
        // From inside: all staff at once, in batches, and their answers.
        let company = people("staff", 200);
        let mut own = Vec::new();
        let ann = mail(
            "hr@example.org",
            &company,
            &[],
            "Holiday calendar",
            "cal-1@example.org",
            None,
            &ANNOUNCEMENT.replace("Via Roma", "Via Verdi"),
        );
        let hr_login = Client::Login("hr");
        own.push(
            send_from(m.addr, hr_login, &ann, "hr@example.org", &company)
                .await
                .0,
        );
        for batch in company.chunks(50) {
            own.push(
                send_from(m.addr, hr_login, &ann, "hr@example.org", batch)
                    .await
                    .0,
            );
        }
        for (i, from) in company.iter().take(10).enumerate() {
            let r = mail(
                from,
                &company,
                &[],
                "Re: Holiday calendar",
                &format!("cal-re-{i}@example.org"),
                Some("cal-1@example.org"),
                &quoting(
                    "Thanks!",
                    "HR",
                    &ANNOUNCEMENT.replace("Via Roma", "Via Verdi"),
                ),
            );
            own.push(
                send_from(m.addr, Client::Login(from), &r, from, &company)
                    .await
                    .0,
            );
        }
        assert!(
            own.iter().all(|a| !has_header(a) && a.actions.is_empty()),
            "own mail untouched: {own:?}"
        );
        m.stop().await;
    }
}

/// Ann writes to thirty customers (her own mail, through her login);
/// each answers her with the same short line over her text, quoting her
/// Message-ID, and copies her colleague Bruno: they join her message's
/// campaign as answers to our own mail, and none is flagged.
#[tokio::test]
async fn answers_to_our_own_mail_are_never_flagged() {
    for (suspect, bulk) in THRESHOLDS {
        let m = start(cfg(suspect, bulk)).await;
        let customers: Vec<String> = (0..30)
            .map(|i| format!("buyer{i}@customer{i}.example"))
            .collect();
        let ann = "ann@example.org";
        let q = mail(
            ann,
            &customers,
            &[],
            "Spring offsite: which date?",
            "ask-1@example.org",
            None,
            POLL,
        );
        let first = send_from(m.addr, Client::Login("ann"), &q, ann, &customers)
            .await
            .0;
        assert!(!has_header(&first));
        let mut levels = Vec::new();
        for (i, c) in customers.iter().enumerate() {
            let to = vec![ann.to_owned(), "bruno@example.org".to_owned()];
            let r = mail(
                c,
                &to,
                &[],
                "Re: Spring offsite: which date?",
                &format!("ans-{i}@customer{i}.example"),
                Some("ask-1@example.org"),
                &quoting("B works for us.", "Ann", POLL),
            );
            levels.push(level(
                &send_from(m.addr, Client::Outside, &r, c, &to).await.0,
            ));
        }
        assert!(
            levels.iter().all(|l| l.starts_with("clean")),
            "at {suspect}/{bulk}: {levels:?}"
        );
        m.stop().await;
    }
}

/// The same text from outside, in batches of 50 to the whole company, is
/// counted from zero however often it went out from inside: the second
/// batch is bulk.
#[tokio::test]
async fn own_mail_makes_no_copy_from_outside_known() {
    let m = start(cfg(5.0, 20.0)).await;
    let company = people("staff", 200);
    let ann = mail(
        "hr@example.org",
        &company,
        &[],
        "Opening hours",
        "in-1@example.org",
        None,
        ANNOUNCEMENT,
    );
    let inside = send_from(
        m.addr,
        Client::Login("hr"),
        &ann,
        "hr@example.org",
        &company,
    )
    .await
    .0;
    assert!(!has_header(&inside));
    let mut levels = Vec::new();
    for batch in company.chunks(50) {
        let r = send_from(
            m.addr,
            Client::Outside,
            &ann,
            "hr@hr-lookalike.example",
            batch,
        )
        .await;
        levels.push(level(&r.0));
    }
    assert!(levels[0].starts_with("clean"), "{levels:?}");
    assert!(
        levels[1..].iter().all(|l| l.starts_with("bulk")),
        "{levels:?}"
    );
    m.stop().await;
}

/// A thread crossing two days with forty answers, from outside and from
/// inside: the window (6 hours) holds its messages a few hours each; none
/// is suspect or bulk (the engine, at the times given).
#[test]
fn forty_replies_over_two_days_are_never_flagged() {
    for (suspect, bulk) in THRESHOLDS {
        let mut e = Engine::new(&cfg(suspect, bulk));
        let team = people("staff", 12);
        let marco = "marco@supplier.example".to_owned();
        let envelope = |from: &str, to: &[String], origin| Envelope {
            mail_from: Some(from.to_owned()),
            rcpts: to.to_vec(),
            origin,
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
            &[],
            "Order confirmation Q3",
            "o@s.example",
            None,
            ORDER,
        );
        let v = e.process(
            &raw(&first),
            &envelope(&marco, &team, Origin::Inbound),
            UnixSecs(start),
        );
        let mut levels = vec![v.level];
        // Every 70 minutes for two days someone answers all: our staff
        // (own mail) and Marco's colleagues (from outside).
        for i in 0..40u64 {
            let outside = i % 3 == 0;
            let from = if outside {
                format!("colleague{i}@supplier.example")
            } else {
                team[(i as usize) % 12].clone()
            };
            let mut to = vec![marco.clone()];
            to.extend(team.iter().filter(|t| **t != from).cloned());
            let r = mail(
                &from,
                &to,
                &[],
                "Re: Order confirmation Q3",
                &format!("d{i}@example.org"),
                Some("o@s.example"),
                &quoting(
                    ANSWERS[(i as usize) % 6],
                    "Marco Rossi <marco@supplier.example>",
                    ORDER,
                ),
            );
            let origin = if outside {
                Origin::Inbound
            } else {
                Origin::Own
            };
            let v = e.process(
                &raw(&r),
                &envelope(&from, &to, origin),
                UnixSecs(start + 4200 * (i + 1)),
            );
            levels.push(v.level);
        }
        assert!(
            levels.iter().all(|l| *l == Level::Clean),
            "at {suspect}/{bulk}: {levels:?}"
        );
    }
}
