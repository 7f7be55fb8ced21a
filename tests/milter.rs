//! Milter conversations against `milter::run` in-process on 127.0.0.1:0:
//! tag, reject, tempfail, quarantine, forged header removal, two messages on
//! one connection, abort mid-message, oversize message, messages judged on
//! the blocking pool.

mod common;

use bulkwatch::config::Action;
use bulkwatch::engine::verdict::LevelKind;
use common::{config, open, send, spam, start, transact, Mail, NAMES};
use indymilter_test::{any, EomAction, Status};

fn x_bulkwatch_values(actions: &indymilter_test::EomActions) -> Vec<String> {
    actions
        .actions
        .iter()
        .filter_map(|a| match a {
            EomAction::AddHeader { name, value } if name.to_bytes() == b"X-Bulkwatch" => {
                Some(value.to_string_lossy().into_owned())
            }
            _ => None,
        })
        .collect()
}

#[tokio::test]
async fn campaign_copies_get_suspect_then_bulk_header() {
    let m = start(config()).await;
    let mut values = Vec::new();
    for (i, name) in NAMES.iter().enumerate() {
        let (actions, status) = send(m.addr, &spam(name, 1000 + i as u32)).await;
        assert_eq!(status, Status::Accept, "message {i}");
        values.push(x_bulkwatch_values(&actions));
    }
    assert!(values[0].is_empty() && values[1].is_empty(), "{values:?}");
    for v in &values[2..4] {
        assert_eq!(v.len(), 1, "{values:?}");
        assert!(v[0].starts_with("suspect; campaign="), "{values:?}");
    }
    for v in &values[4..6] {
        assert_eq!(v.len(), 1, "{values:?}");
        assert!(v[0].starts_with("bulk; campaign="), "{v:?}");
        assert!(v[0].contains("; size="), "{v:?}");
    }
    // All copies name the same campaign.
    let id = |v: &str| v.split("campaign=").nth(1).map(|s| s[..12].to_owned());
    assert_eq!(id(&values[2][0]), id(&values[5][0]));
    assert_eq!(m.state.metrics.messages(LevelKind::Bulk), 2);
    m.stop().await;
}

/// A pipe's buffer (64 KiB on Linux): a message larger than it crosses to
/// the worker process in several writes.
const LARGE: usize = 64 * 1024;

/// Copies of a campaign padded past a pipe's buffer form one campaign
/// and get the same headers as small ones.
#[tokio::test]
async fn campaign_copies_larger_than_a_pipe_are_judged_alike() {
    const WORDS: [&str; 12] = [
        "shipping", "warranty", "returns", "customer", "service", "delivery", "payment", "account",
        "secure", "order", "refund", "policy",
    ];
    let mut terms = String::new();
    let mut line = 0;
    while terms.len() <= LARGE {
        for j in 0..WORDS.len() {
            terms.push_str(WORDS[(line * 5 + j * 7) % WORDS.len()]);
            terms.push(' ');
        }
        terms.push_str("apply.\r\n");
        line += 1;
    }
    let m = start(config()).await;
    let mut levels = Vec::new();
    for (i, name) in NAMES.iter().enumerate() {
        let mut mail = spam(name, 3000 + i as u32);
        mail.body.push_str(&terms);
        assert!(mail.body.len() > LARGE);
        let (actions, status) = send(m.addr, &mail).await;
        assert_eq!(status, Status::Accept, "message {i}");
        let values = x_bulkwatch_values(&actions);
        assert!(values.len() <= 1, "{values:?}");
        levels.push(
            values
                .first()
                .and_then(|v| v.split(';').next().map(str::to_owned)),
        );
    }
    let want = [
        None,
        None,
        Some("suspect"),
        Some("suspect"),
        Some("bulk"),
        Some("bulk"),
    ];
    assert_eq!(levels, want.map(|l| l.map(str::to_owned)));
    assert_eq!(m.state.metrics.messages(LevelKind::Bulk), 2);
    m.stop().await;
}

async fn policy_run(bulk: Action) -> Vec<(indymilter_test::EomActions, Status)> {
    let mut cfg = config();
    cfg.policy.bulk = bulk;
    cfg.policy.suspect = Action::None;
    let m = start(cfg).await;
    let mut out = Vec::new();
    for (i, name) in NAMES.iter().enumerate().take(5) {
        out.push(send(m.addr, &spam(name, 2000 + i as u32)).await);
    }
    m.stop().await;
    out
}

#[tokio::test]
async fn bulk_is_rejected_with_550() {
    let out = policy_run(Action::Reject).await;
    for (a, s) in &out[..4] {
        assert_eq!(*s, Status::Accept);
        assert!(
            x_bulkwatch_values(a).is_empty(),
            "suspect policy none: untagged"
        );
    }
    match &out[4].1 {
        Status::Reject { message: Some(msg) } => {
            assert_eq!(
                msg.to_str().unwrap(),
                "550 5.7.1 Message rejected as bulk mail"
            )
        }
        other => panic!("expected 550, got {other:?}"),
    }
}

#[tokio::test]
async fn bulk_is_tempfailed_with_451() {
    let out = policy_run(Action::Tempfail).await;
    match &out[4].1 {
        Status::Tempfail { message: Some(msg) } => {
            assert_eq!(
                msg.to_str().unwrap(),
                "451 4.7.1 Message deferred, try again later"
            )
        }
        other => panic!("expected 451, got {other:?}"),
    }
}

#[tokio::test]
async fn bulk_is_quarantined_and_tagged() {
    let out = policy_run(Action::Quarantine).await;
    let (actions, status) = &out[4];
    assert_eq!(*status, Status::Accept);
    assert!(actions.has_quarantine(any()), "{actions:?}");
    assert_eq!(x_bulkwatch_values(actions).len(), 1);
    assert!(!out[3].0.has_quarantine(any()));
}

#[tokio::test]
async fn bulk_is_discarded() {
    let out = policy_run(Action::Discard).await;
    assert_eq!(out[4].1, Status::Discard);
}

#[tokio::test]
async fn forged_headers_are_removed() {
    let m = start(config()).await;
    let mut mail = spam("alice", 1);
    mail.headers.push(("X-Bulkwatch".into(), "clean".into()));
    mail.headers
        .push(("x-bulkwatch".into(), "clean; trust me".into()));
    let (actions, status) = send(m.addr, &mail).await;
    assert_eq!(status, Status::Accept);
    assert!(actions.has_delete_header("X-Bulkwatch", 1), "{actions:?}");
    assert!(actions.has_delete_header("X-Bulkwatch", 2), "{actions:?}");
    assert!(
        x_bulkwatch_values(&actions).is_empty(),
        "a clean message is not tagged"
    );
    // Highest index first, so the indexes stay valid while deleting.
    let order: Vec<i32> = actions
        .actions
        .iter()
        .filter_map(|a| match a {
            EomAction::DeleteHeader { index, .. } => Some(*index),
            _ => None,
        })
        .collect();
    assert_eq!(order, vec![2, 1]);
    m.stop().await;
}

/// The value of the one `X-Bulkwatch-Score` header added, if any.
fn score(actions: &indymilter_test::EomActions) -> Option<String> {
    let scores: Vec<String> = actions
        .actions
        .iter()
        .filter_map(|a| match a {
            EomAction::AddHeader { name, value } if name.to_bytes() == b"X-Bulkwatch-Score" => {
                Some(value.to_string_lossy().into_owned())
            }
            _ => None,
        })
        .collect();
    assert!(scores.len() <= 1, "{scores:?}");
    scores.into_iter().next()
}

#[tokio::test]
async fn tagged_mail_carries_a_score_and_clean_mail_a_header_when_asked() {
    let mut cfg = config();
    cfg.policy.clean = Action::Tag;
    let m = start(cfg).await;
    // A forged score is removed like a forged verdict.
    let mut first = spam(NAMES[0], 1);
    first.headers.push(("X-Bulkwatch-Score".into(), "0".into()));
    let (a, status) = send(m.addr, &first).await;
    assert_eq!(status, Status::Accept);
    assert!(a.has_delete_header("X-Bulkwatch-Score", 1), "{a:?}");
    let v = x_bulkwatch_values(&a);
    assert!(v.len() == 1 && v[0].starts_with("clean"), "{v:?}");
    assert_eq!(score(&a).as_deref(), Some("1"));
    let mut last = None;
    for (i, name) in NAMES.iter().enumerate().skip(1) {
        last = Some(send(m.addr, &spam(name, i as u32 + 1)).await.0);
    }
    let last = last.unwrap();
    let v = x_bulkwatch_values(&last);
    assert!(v.len() == 1 && v[0].starts_with("bulk;"), "{v:?}");
    let s: f64 = score(&last).unwrap().parse().unwrap();
    assert!((5.0..=6.0).contains(&s), "score {s} of a campaign of six");
    m.stop().await;
}

#[tokio::test]
async fn two_messages_on_one_connection_are_judged_apart() {
    let mut cfg = config();
    cfg.thresholds.bulk_threshold = 2.0;
    cfg.thresholds.suspect_threshold = 2.0;
    let m = start(cfg).await;
    let mut conn = open(m.addr).await;
    let mut first = spam("alice", 10);
    first.headers.push(("X-Bulkwatch".into(), "forged".into()));
    let (a1, s1) = transact(&mut conn, &first).await;
    assert_eq!(s1, Status::Accept);
    assert!(a1.has_delete_header("X-Bulkwatch", 1));
    assert!(x_bulkwatch_values(&a1).is_empty());
    let (a2, s2) = transact(&mut conn, &spam("bob", 11)).await;
    assert_eq!(s2, Status::Accept);
    assert!(
        !a2.has_delete_header(any(), any()),
        "session was reset: {a2:?}"
    );
    let v = x_bulkwatch_values(&a2);
    assert!(v.len() == 1 && v[0].starts_with("bulk;"), "{v:?}");
    conn.close().await.unwrap();
    m.stop().await;
}

#[tokio::test]
async fn aborted_message_is_forgotten() {
    let m = start(config()).await;
    let mut conn = open(m.addr).await;
    let mail = spam("alice", 20);
    assert_eq!(conn.mail(["<a@b.example>"]).await.unwrap(), Status::Noreply);
    assert_eq!(conn.rcpt(["<c@d.example>"]).await.unwrap(), Status::Noreply);
    assert_eq!(conn.data().await.unwrap(), Status::Noreply);
    assert_eq!(
        conn.header("X-Bulkwatch", "forged").await.unwrap(),
        Status::Noreply
    );
    assert_eq!(
        conn.header("Subject", "half").await.unwrap(),
        Status::Noreply
    );
    conn.abort().await.unwrap();
    let (actions, status) = transact(&mut conn, &mail).await;
    assert_eq!(status, Status::Accept);
    assert!(
        !actions.has_delete_header(any(), any()),
        "nothing of the aborted message remains"
    );
    conn.close().await.unwrap();
    let judged: u64 = LevelKind::ALL
        .iter()
        .map(|l| m.state.metrics.messages(*l))
        .sum();
    assert_eq!(judged, 1, "the aborted message was not judged");
    m.stop().await;
}

#[tokio::test]
async fn oversize_message_is_still_answered() {
    let mut cfg = config();
    cfg.milter.max_message_bytes = 4096;
    let m = start(cfg).await;
    let mut mail: Mail = spam("alice", 30);
    mail.body = mail.body.repeat(2000); // about 1 MB
                                        // Past the bound the milter answers Skip: the MTA sends no more body.
    let mut conn = common::open(m.addr).await;
    conn.macros(indymilter_test::MacroStage::Mail, [("i", "Q1")])
        .await
        .unwrap();
    conn.mail(["<a@example.org>"]).await.unwrap();
    conn.rcpt(["<b@example.net>"]).await.unwrap();
    conn.data().await.unwrap();
    conn.eoh().await.unwrap();
    let first = mail.body.as_bytes().chunks(65_535).next().unwrap().to_vec();
    assert_eq!(conn.body(first).await.unwrap(), Status::Skip);
    let (_, status) = conn.eom().await.unwrap();
    assert_eq!(status, Status::Accept);
    conn.close().await.unwrap();
    let judged: u64 = LevelKind::ALL
        .iter()
        .map(|l| m.state.metrics.messages(*l))
        .sum();
    assert_eq!(judged, 1);
    assert_eq!(m.state.metrics.errors(), 0);
    m.stop().await;
}

#[tokio::test]
async fn metrics_and_campaigns_are_served_over_http() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let m = start(config()).await;
    for (i, name) in NAMES.iter().enumerate().take(3) {
        send(m.addr, &spam(name, 4000 + i as u32)).await;
    }
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let server = tokio::spawn(bulkwatch::http::serve(listener, m.state.clone()));
    let get = |path: &'static str| async move {
        let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
        s.write_all(format!("GET {path} HTTP/1.0\r\n\r\n").as_bytes())
            .await
            .unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).await.unwrap();
        out
    };
    let metrics = get("/metrics").await;
    assert!(metrics.starts_with("HTTP/1.0 200 OK\r\n"), "{metrics}");
    assert!(
        metrics.contains("bulkwatch_messages_total{level=\"suspect\"} 1"),
        "{metrics}"
    );
    assert!(
        metrics.contains("bulkwatch_campaigns_active 1"),
        "{metrics}"
    );
    assert!(metrics.contains("bulkwatch_window_entries 3"), "{metrics}");
    let campaigns = get("/campaigns").await;
    let body = campaigns.split("\r\n\r\n").nth(1).unwrap();
    let json: serde_json::Value = serde_json::from_str(body).unwrap();
    assert_eq!(json[0]["messages"], 3);
    assert_eq!(json[0]["sender_domains"][0], "deals.example");
    assert!(json[0]["sample_subject"]
        .as_str()
        .unwrap()
        .starts_with("Your offer"));
    assert!(get("/nope").await.starts_with("HTTP/1.0 404"));
    server.abort();
    m.stop().await;
}
