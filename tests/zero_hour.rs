//! Zero hour through a real Postfix and a real Dovecot: a private Postfix
//! whose milter is `bulkwatch serve` delivers over LMTP to a private
//! Dovecot (its own configuration, ports and mail directory), whose
//! doveadm HTTP API zero-hour uses, and whose IMAPSieve runs `bulkwatch
//! report` when a user moves a message into or out of Junk (the sieve
//! scripts the package ships, `debian/sieve`). The users' moves are made
//! by an IMAP client spoken by hand here.
//!
//! Needs root, Postfix and Dovecot (imapd, lmtpd, sieve); ignored, with
//! the reason, otherwise.

mod common;

use std::fs;
use std::io::Write;
use std::process::{Command, Stdio};

use common::dovecot::*;

/// Copy `i` of a phishing campaign: per-recipient name, link and
/// reference, from its own sender domain.
fn campaign_copy(i: usize) -> (String, String) {
    let from = format!("billing@pay{i}.example");
    let raw = format!(
        "From: Billing <{from}>\r\nTo: {to}\r\nSubject: Invoice overdue {i}\r\n\
         Message-ID: <inv{i}@pay{i}.example>\r\n\r\n\
         Dear customer u{i},\r\n\r\nyour mailbox storage plan expires today and incoming \
         messages will be held until the account is verified. Confirm your password at \
         https://verify{i}.example/login?id={i} within twenty four hours to keep your mail, \
         your contacts and your shared calendars. Reference number {i}{i}{i}.\r\n\r\n\
         Thank you for choosing our service,\r\nThe Accounts Team\r\n",
        to = user(i)
    );
    (from, raw)
}

/// A newsletter post to every user in one transaction, and a personal
/// note to each: the ordinary mail that must stay where it is.
fn ordinary_mail(r: &Rig) {
    let all: Vec<String> = (0..USERS).map(user).collect();
    let letter = "From: News <news@club.example>\r\nTo: members@club.example\r\n\
        Subject: Club newsletter\r\nList-Id: <news.club.example>\r\n\
        Message-ID: <letter@club.example>\r\n\r\nDear members,\r\n\r\nthe spring meeting is on \
        the third saturday of march in the old library; bring your reports and the photos of \
        the autumn walk. The committee thanks everyone who helped with the garden.\r\n";
    r.send("news@club.example", &all, letter)
        .unwrap_or_else(|e| panic!("{e}\n{}", r.all_logs()));
    // Each note its own words: personal mail shares no text.
    const WORDS: &[&str] = &[
        "garden",
        "tomatoes",
        "frost",
        "budget",
        "thursday",
        "finance",
        "lyon",
        "maps",
        "hike",
        "tickets",
        "kitchen",
        "train",
        "bakery",
        "corner",
        "piano",
        "lesson",
        "cousin",
        "wedding",
        "harbour",
        "ferry",
        "museum",
        "painting",
        "bicycle",
        "repair",
        "invoice",
        "plumber",
        "roof",
        "gutter",
        "recipe",
        "lemon",
        "cake",
        "birthday",
        "hospital",
        "visit",
        "grandma",
        "football",
        "match",
        "tuesday",
        "library",
        "novel",
        "chapter",
        "holiday",
        "mountains",
        "cabin",
        "firewood",
        "dentist",
        "appointment",
        "moving",
        "boxes",
        "neighbour",
        "dog",
        "walk",
        "river",
        "bridge",
        "concert",
        "violin",
        "rehearsal",
        "school",
        "report",
        "exam",
    ];
    let mut seed = 0x9e37_79b9_7f4a_7c15_u64;
    for i in 0..USERS {
        let words: Vec<&str> = (0..40)
            .map(|_| {
                seed = seed
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                WORDS[(seed >> 33) as usize % WORDS.len()]
            })
            .collect();
        let note = format!(
            "From: friend{i}@home{i}.example\r\nTo: {u}\r\nSubject: Note for u{i}\r\n\
             Message-ID: <note{i}@home{i}.example>\r\n\r\nHi,\r\n\r\n{}.\r\n",
            words.join(" "),
            u = user(i),
        );
        r.send(&format!("friend{i}@home{i}.example"), &[user(i)], &note)
            .unwrap_or_else(|e| panic!("{e}\n{}", r.all_logs()));
    }
}

#[cfg_attr(
    not(all(bulkwatch_postfix, bulkwatch_dovecot, bulkwatch_root)),
    ignore = "needs root, Postfix and Dovecot (apt-get install postfix dovecot-imapd dovecot-lmtpd dovecot-sieve)"
)]
#[test]
fn copies_delivered_before_the_campaign_turned_bulk_go_to_junk_and_come_back_when_allowed() {
    let mut r = rig("");
    ordinary_mail(&r);
    wait_for(
        "ordinary mail",
        60,
        || delivered(&r, 0..USERS, "INBOX", "Note"),
        || r.all_logs(),
    );
    // Copies until the first refusal: the campaign turned bulk there. The
    // daemon is restarted after the first five: the copies it delivered
    // before are moved all the same.
    let mut sent = 0;
    while sent < USERS {
        if sent == 5 {
            r.hosts[0].restart();
            assert!(r.log().contains("zero-hour ledger restored"), "{}", r.log());
        }
        let (from, raw) = campaign_copy(sent);
        match r.send(&from, &[user(sent)], &raw) {
            Ok(()) => sent += 1,
            Err(e) => {
                assert!(e.contains("550"), "{e}");
                break;
            }
        }
    }
    assert!(
        (10..USERS).contains(&sent),
        "{sent} copies delivered\n{}",
        r.all_logs()
    );
    // Within 60 s every delivered copy is in its recipient's Junk.
    wait_for(
        "the delivered copies in Junk",
        60,
        || delivered(&r, 0..sent, "Junk", "Invoice overdue"),
        || r.all_logs(),
    );
    // Nothing else moved: the newsletter and the notes are in the inboxes,
    // Junk holds the copy alone.
    for i in 0..USERS {
        let want_junk: Vec<String> = if i < sent {
            vec![format!("Invoice overdue {i}")]
        } else {
            vec![]
        };
        assert_eq!(r.subjects(i, "Junk"), want_junk, "{}", user(i));
        assert_eq!(
            r.subjects(i, "INBOX"),
            ["Club newsletter".to_owned(), format!("Note for u{i}")],
            "{}",
            user(i)
        );
    }
    let log = r.log();
    assert!(log.contains("zero-hour: copy moved to junk"), "{log}");
    // An allowance moves them back.
    let id = bulk_campaign(&log);
    r.bulkwatch(&["campaigns", "allow", &id]);
    wait_for(
        "the copies back in the inbox",
        60,
        || {
            delivered(&r, 0..sent, "INBOX", "Invoice overdue")
                && (0..sent).all(|i| r.subjects(i, "Junk").is_empty())
        },
        || r.all_logs(),
    );
    assert!(r.log().contains("zero-hour: copy moved back"));
}

#[cfg_attr(
    not(all(bulkwatch_postfix, bulkwatch_dovecot, bulkwatch_root)),
    ignore = "needs root, Postfix and Dovecot (apt-get install postfix dovecot-imapd dovecot-lmtpd dovecot-sieve)"
)]
#[test]
fn the_junk_button_reports_by_distinct_recipients_and_one_user_alone_changes_nothing() {
    // Counts alone would not make this campaign bulk: only reports do.
    let r = rig("reporters = 3\n");
    let raise = fs::read_to_string(&r.bw_config)
        .unwrap()
        .replace("bulk_threshold = 20.0", "bulk_threshold = 200.0")
        .replace("suspect_threshold = 10.0", "suspect_threshold = 100.0");
    fs::write(&r.bw_config, raise).unwrap();
    run(Command::new("kill").args(["-HUP", &r.daemon.id().to_string()]));
    wait_for(
        "reload",
        30,
        || r.log().contains("configuration reloaded"),
        || r.log(),
    );
    // A colleague's thread to four users, and eight copies of a campaign.
    let team: Vec<String> = (20..24).map(user).collect();
    let thread = "From: Marco <marco@supplier.example>\r\nTo: team@example.net\r\n\
        Subject: Order Q3\r\nMessage-ID: <order@supplier.example>\r\n\r\nHello all,\r\n\r\n\
        please find below the confirmation of your order for the third quarter: forty units \
        of the R7 controller and twelve spare power supplies, delivered to Verona on the \
        fourteenth. Invoices follow the usual terms.\r\n";
    r.send("marco@supplier.example", &team, thread).unwrap();
    for i in 0..8 {
        let (from, raw) = campaign_copy(i);
        r.send(&from, &[user(i)], &raw)
            .unwrap_or_else(|e| panic!("{e}\n{}", r.all_logs()));
    }
    wait_for(
        "delivery",
        60,
        || delivered(&r, 0..8, "INBOX", "Invoice") && delivered(&r, 20..24, "INBOX", "Order Q3"),
        || r.all_logs(),
    );

    // One user reports the thread, ten times: nothing changes for the others.
    for _ in 0..2 {
        let mut s = Imap::login(r.imap_port, &user(20));
        s.move_subject("INBOX", "Order Q3", "Junk");
        s.move_subject("Junk", "Order Q3", "INBOX");
    }
    let mut s = Imap::login(r.imap_port, &user(20));
    s.move_subject("INBOX", "Order Q3", "Junk");
    wait_for(
        "the report",
        30,
        || r.log().contains("reported spam by a recipient"),
        || r.all_logs(),
    );
    wait_for(
        "the thread's reports",
        30,
        || r.log().matches("reported spam by a recipient").count() >= 3,
        || r.all_logs(),
    );
    // The thread goes on for the others: Marco sends it again to two more.
    let more: Vec<String> = (24..26).map(user).collect();
    r.send(
        "marco@supplier.example",
        &more,
        &thread.replace("<order@", "<order2@"),
    )
    .unwrap_or_else(|e| panic!("one user's reports refused a colleague's thread: {e}"));
    // Two users report the campaign, one of them over and over: not yet
    // three reporters.
    for _ in 0..2 {
        let mut s = Imap::login(r.imap_port, &user(0));
        s.move_subject("INBOX", "Invoice", "Junk");
        s.move_subject("Junk", "Invoice", "INBOX");
    }
    for i in 0..2 {
        Imap::login(r.imap_port, &user(i)).move_subject("INBOX", "Invoice", "Junk");
    }
    wait_for(
        "the campaign's reports",
        30,
        || r.log().matches("reported spam by a recipient").count() >= 7,
        || r.all_logs(),
    );
    assert!(
        delivered(&r, 2..8, "INBOX", "Invoice"),
        "two reporters moved nothing\n{}",
        r.all_logs()
    );
    // A user who got no copy cannot report it: the header proves who got it.
    let copy = r.mailbox(0, "Junk").pop().unwrap();
    let out = Command::new(env!("CARGO_BIN_EXE_bulkwatch"))
        .args(["report", "spam", "--user", &user(25), "--socket"])
        .arg(r.hosts[0].dir.join("report.sock"))
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            c.stdin.take().unwrap().write_all(copy.as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    // (Refused by the daemon, not for want of a socket.)
    let said = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && said.contains("no copy of this message was delivered"),
        "a report from a user who got no copy was taken: {said}"
    );
    // The third recipient: the campaign is bulk; every delivered copy goes
    // to Junk, and the next copy is refused.
    Imap::login(r.imap_port, &user(2)).move_subject("INBOX", "Invoice", "Junk");
    wait_for(
        "the other copies in Junk",
        60,
        || delivered(&r, 0..8, "Junk", "Invoice"),
        || r.all_logs(),
    );
    let (from, raw) = campaign_copy(9);
    let refused = r.send(&from, &[user(9)], &raw);
    assert!(
        refused.as_ref().is_err_and(|e| e.contains("550")),
        "{refused:?}"
    );
    // The colleague's thread stayed with the others.
    assert!(
        delivered(&r, 21..24, "INBOX", "Order Q3"),
        "{}",
        r.all_logs()
    );
    // A move out of Junk reports ham: that user's later copies pass.
    Imap::login(r.imap_port, &user(5)).move_subject("Junk", "Invoice", "INBOX");
    wait_for(
        "the ham report",
        30,
        || r.log().contains("reported ham by a recipient"),
        || r.all_logs(),
    );
    let (from, raw) = campaign_copy(5);
    r.send(&from, &[user(5)], &raw.replace("inv5@", "inv5b@"))
        .unwrap_or_else(|e| panic!("{e}\n{}", r.all_logs()));
    let (from, raw) = campaign_copy(10);
    assert!(
        r.send(&from, &[user(10)], &raw).is_err(),
        "others' copies are still refused"
    );
}

#[cfg_attr(
    not(all(bulkwatch_postfix, bulkwatch_dovecot, bulkwatch_redis, bulkwatch_root)),
    ignore = "needs root, Postfix, Dovecot and redis-server (apt-get install postfix dovecot-imapd dovecot-lmtpd dovecot-sieve redis-server)"
)]
#[test]
fn two_hosts_on_one_redis_act_once_per_copy() {
    let server = common::redis::RedisServer::start();
    let r = rig_of(
        2,
        &format!(
            "\n[store]\nbackend = \"redis\"\n\n[store.redis]\nurls = [\"{}\"]\nkey_prefix = \"zero-hour\"\n",
            server.url()
        ),
    );
    // Copies go in through both hosts, turn about, until one refuses.
    let mut by_host = [0usize; 2];
    let mut sent = 0;
    while sent < USERS {
        let (from, raw) = campaign_copy(sent);
        match r.hosts[sent % 2].send(&from, &[user(sent)], &raw) {
            Ok(()) => {
                by_host[sent % 2] += 1;
                sent += 1;
            }
            Err(e) => {
                assert!(e.contains("550"), "{e}");
                break;
            }
        }
    }
    assert!(
        (10..USERS).contains(&sent),
        "{sent} copies delivered\n{}",
        r.all_logs()
    );
    wait_for(
        "every delivered copy in Junk",
        60,
        || delivered(&r, 0..sent, "Junk", "Invoice overdue"),
        || r.all_logs(),
    );
    // Each host moved the copies it delivered, the host whose message did
    // not make the campaign bulk included; each copy was moved once.
    for (n, h) in r.hosts.iter().enumerate() {
        let moved = h.log().matches("zero-hour: copy moved to junk").count();
        assert_eq!(moved, by_host[n], "host {n}\n{}", r.all_logs());
    }
    let dovecot = r.dovecot_log();
    for i in 0..sent {
        let moves = dovecot
            .matches(&format!("Executing command 'move' as '{}'", user(i)))
            .count();
        assert_eq!(moves, 1, "{}\n{dovecot}", user(i));
    }
}

#[cfg_attr(
    not(all(bulkwatch_postfix, bulkwatch_dovecot, bulkwatch_root)),
    ignore = "needs root, Postfix and Dovecot (apt-get install postfix dovecot-imapd dovecot-lmtpd dovecot-sieve)"
)]
#[test]
fn a_campaigns_held_copies_released_in_one_command_reach_the_inbox_not_the_bulk_folder() {
    let r = rig("");
    let held = fs::read_to_string(&r.bw_config)
        .unwrap()
        .replace("bulk = \"reject\"", "bulk = \"quarantine\"");
    fs::write(&r.bw_config, held).unwrap();
    run(Command::new("kill").args(["-HUP", &r.daemon.id().to_string()]));
    wait_for(
        "reload",
        30,
        || r.log().contains("configuration reloaded"),
        || r.log(),
    );
    for i in 0..USERS {
        let (from, raw) = campaign_copy(i);
        r.send(&from, &[user(i)], &raw)
            .unwrap_or_else(|e| panic!("{e}\n{}", r.all_logs()));
    }
    let log = r.log();
    let id = bulk_campaign(&log);
    let held: Vec<usize> = (0..USERS)
        .filter(|i| {
            log.lines().any(|l| {
                l.contains(&format!("inv{i}@pay{i}.example")) && l.contains("action=\"quarantine\"")
            })
        })
        .collect();
    assert!(held.len() >= 5, "{held:?}\n{log}");
    let conf = r.hosts[0].dir.join("conf");
    let conf = conf.to_str().unwrap();
    wait_for(
        "the held copies in the hold queue",
        60,
        || {
            r.bulkwatch(&["campaigns", "held", &id, "--postfix-config", conf])
                .lines()
                .count()
                >= held.len()
        },
        || r.all_logs(),
    );
    r.bulkwatch(&["campaigns", "release", &id, "--postfix-config", conf]);
    wait_for(
        "the released copies delivered",
        60,
        || delivered(&r, held.iter().copied(), "INBOX", "Invoice overdue"),
        || r.all_logs(),
    );
    for i in &held {
        assert!(
            r.subjects(*i, "Bulk").is_empty(),
            "{}: filed as bulk",
            user(*i)
        );
        let copy = r
            .mailbox(*i, "INBOX")
            .into_iter()
            .find(|m| m.contains("Invoice overdue"))
            .unwrap();
        assert!(copy.contains("held=yes"), "{copy}");
    }
}
