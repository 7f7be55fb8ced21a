//! docs/admin/downstream.md's SpamAssassin rules, run by `spamassassin` (Debian
//! package) on messages tagged by bulkwatch through the milter protocol:
//! the rule block is read from the page itself, so the page cannot drift.

mod common;

use std::io::Write;
use std::process::{Command, Stdio};

use bulkwatch::config::Action;
use common::{config, send, send_envelope, spam, start, Mail, NAMES};
use indymilter_test::{EomAction, EomActions};

/// The fenced block after the page's spamassassin marker.
fn rules_from_docs() -> String {
    let page = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/docs/admin/downstream.md"
    ))
    .unwrap();
    let start = page.find("<!-- spamassassin rules").expect("marker");
    let rest = &page[start..];
    let open = rest.find("```\n").expect("opening fence") + 4;
    let close = rest[open..].find("```").expect("closing fence");
    rest[open..open + close].to_owned()
}

/// The headers bulkwatch added, in order.
fn added(actions: &EomActions) -> Vec<(String, String)> {
    actions
        .actions
        .iter()
        .filter_map(|a| match a {
            EomAction::AddHeader { name, value } => Some((
                name.to_string_lossy().into_owned(),
                value.to_string_lossy().into_owned(),
            )),
            _ => None,
        })
        .collect()
}

/// The message as delivered: the added headers, then the message's own.
fn delivered(mail: &Mail, added: &[(String, String)]) -> String {
    let mut s = String::new();
    for (k, v) in added.iter().chain(&mail.headers) {
        s.push_str(&format!("{k}: {v}\r\n"));
    }
    s.push_str("Message-ID: <downstream@deals.example>\r\n");
    s.push_str("Date: Thu, 26 Nov 2026 10:00:00 +0000\r\n\r\n");
    s.push_str(&mail.body);
    s
}

/// The names in the `tests=` list of SpamAssassin's X-Spam-Status header
/// (folded over several lines).
fn spamassassin_tests(rules: &std::path::Path, message: &str) -> Vec<String> {
    let home = tempfile::tempdir().unwrap();
    let mut child = Command::new("spamassassin")
        .args(["-L", "-x", "--cf"])
        .arg(format!("include {}", rules.display()))
        .env("HOME", home.path())
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spamassassin runs");
    child
        .stdin
        .take()
        .unwrap()
        .write_all(message.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8_lossy(&out.stdout).replace("\r\n", "\n");
    let start = text.find("X-Spam-Status:").expect("X-Spam-Status header");
    let mut status = String::new();
    for (i, line) in text[start..].lines().enumerate() {
        if i > 0 && !line.starts_with([' ', '\t']) {
            break;
        }
        status.push_str(line.trim());
        status.push(' ');
    }
    let tests = status.split("tests=").nth(1).unwrap_or("");
    let tests = tests
        .split_whitespace()
        .take_while(|w| !w.contains('='))
        .collect::<String>();
    tests
        .split(',')
        .filter(|t| !t.is_empty())
        .map(str::to_owned)
        .collect()
}

#[tokio::test]
#[cfg_attr(
    not(bulkwatch_spamassassin),
    ignore = "needs spamassassin (apt-get install spamassassin)"
)]
async fn the_documented_spamassassin_rules_fire_on_tagged_mail() {
    let dir = tempfile::tempdir().unwrap();
    let rules = dir.path().join("bulkwatch.cf");
    std::fs::write(&rules, rules_from_docs()).unwrap();

    // Six copies of a campaign: the third is suspect, the fifth bulk.
    let m = start(config()).await;
    let mut tagged = Vec::new();
    for (i, name) in NAMES.iter().enumerate() {
        let mail = spam(name, 600 + i as u32);
        let (actions, _) = send(m.addr, &mail).await;
        tagged.push((mail, added(&actions)));
    }
    m.stop().await;
    let (mail, headers) = &tagged[4];
    assert!(headers[0].1.starts_with("bulk; "), "premise: {headers:?}");
    let fired = spamassassin_tests(&rules, &delivered(mail, headers));
    assert!(fired.contains(&"BULKWATCH_BULK".to_owned()), "{fired:?}");
    assert!(
        !fired
            .iter()
            .any(|t| t == "BULKWATCH_SUSPECT" || t == "BULKWATCH_LIST" || t == "BULKWATCH_BIG"),
        "{fired:?}"
    );

    let (mail, headers) = &tagged[2];
    assert!(
        headers[0].1.starts_with("suspect; "),
        "premise: {headers:?}"
    );
    let fired = spamassassin_tests(&rules, &delivered(mail, headers));
    assert!(fired.contains(&"BULKWATCH_SUSPECT".to_owned()), "{fired:?}");
    assert!(!fired.contains(&"BULKWATCH_BULK".to_owned()), "{fired:?}");

    // Untagged mail (the first copy): none of the rules.
    let (mail, headers) = &tagged[0];
    assert!(headers.is_empty(), "premise: {headers:?}");
    let fired = spamassassin_tests(&rules, &delivered(mail, headers));
    assert!(
        !fired.iter().any(|t| t.starts_with("BULKWATCH_")),
        "{fired:?}"
    );

    // A list post to 60 subscribers (clean alone) that a second copy of 60
    // made bulk: bulk, list mail, and a score of 120.
    let mut cfg = config();
    cfg.policy.bulk = Action::Reject;
    let m = start(cfg).await;
    let list = |name: &str, n: u32| {
        let mut mail = spam(name, n);
        mail.headers
            .push(("List-Id".into(), "News <news.deals.example>".into()));
        mail
    };
    let rcpts =
        |p: &str| -> Vec<String> { (0..60).map(|i| format!("<{p}{i}@example.net>")).collect() };
    let from = "<news-bounces@deals.example>";
    send_envelope(m.addr, &list("alice", 700), from, &rcpts("a")).await;
    let mail = list("bob", 701);
    let (actions, _) = send_envelope(m.addr, &mail, from, &rcpts("b")).await;
    m.stop().await;
    let headers = added(&actions);
    assert!(
        headers[0].1.starts_with("bulk; ") && headers[0].1.contains("list=yes"),
        "{headers:?}"
    );
    assert_eq!(
        headers[1],
        ("X-Bulkwatch-Score".to_owned(), "120".to_owned())
    );
    let fired = spamassassin_tests(&rules, &delivered(&mail, &headers));
    for want in ["BULKWATCH_BULK", "BULKWATCH_LIST", "BULKWATCH_BIG"] {
        assert!(fired.contains(&want.to_owned()), "{want} in {fired:?}");
    }
}
