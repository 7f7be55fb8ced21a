//! Solicited bulk through the milter protocol (docs/admin/solicited.md): one
//! transaction's recipients alone, mailing-list mail, and role recipients.
//! Each test holds whole `indymilter-test` conversations against
//! `milter::run` on 127.0.0.1:0.

mod common;

use bulkwatch::config::{Action, Config};
use bulkwatch::engine::verdict::{AllowReason, LevelKind};
use common::{config, send, send_envelope, spam, start, Mail, NAMES};
use indymilter_test::{EomAction, EomActions, Status};

fn x_bulkwatch(actions: &EomActions) -> Option<String> {
    actions.actions.iter().find_map(|a| match a {
        EomAction::AddHeader { name, value } if name.to_bytes() == b"X-Bulkwatch" => {
            Some(value.to_string_lossy().into_owned())
        }
        _ => None,
    })
}

fn rcpts(prefix: &str, n: usize) -> Vec<String> {
    (0..n)
        .map(|i| format!("<{prefix}{i}@example.net>"))
        .collect()
}

/// `mail` with a List-Id and List-Unsubscribe header, as a list manager
/// writes them.
fn with_list_headers(mut mail: Mail) -> Mail {
    mail.headers
        .push(("List-Id".into(), "Deals news <news.deals.example>".into()));
    mail.headers.push((
        "List-Unsubscribe".into(),
        "<mailto:leave@deals.example>".into(),
    ));
    mail
}

fn is_reject(s: &Status) -> bool {
    matches!(s, Status::Reject { .. })
}

/// One post to 25 subscribers in one transaction matched nothing: it is
/// clean (no header under `policy.clean = "none"`), although 25 recipients
/// are past the bulk threshold (5 here). 200 recipients in one transaction
/// are past `single_transaction_recipients` (100): bulk at once. A second
/// copy to 25 others matches the first and the campaign (50) is bulk.
#[tokio::test]
async fn one_transaction_alone_is_bulk_only_past_its_own_limit() {
    let mut cfg = config();
    cfg.policy.bulk = Action::Reject;
    let m = start(cfg).await;
    let from = "<list-bounces@deals.example>";
    let (a, s) = send_envelope(m.addr, &spam("alice", 1), from, &rcpts("a", 25)).await;
    assert_eq!(s, Status::Accept);
    assert_eq!(x_bulkwatch(&a), None, "clean, untagged");
    let (_, s) = send_envelope(m.addr, &spam("bob", 2), from, &rcpts("b", 25)).await;
    assert!(is_reject(&s), "the matching copy makes it bulk: {s:?}");
    assert_eq!(m.state.metrics.messages(LevelKind::Clean), 1);
    assert_eq!(m.state.metrics.messages(LevelKind::Bulk), 1);
    m.stop().await;

    let mut cfg = config();
    cfg.policy.bulk = Action::Reject;
    let m = start(cfg).await;
    let blast = Mail {
        body: "A different text altogether, sent once to many: claim the prize in \
               our lottery draw today by sending your bank details to the claims desk.\r\n"
            .into(),
        ..spam("carol", 3)
    };
    let (_, s) = send_envelope(m.addr, &blast, "<x@spam.example>", &rcpts("c", 200)).await;
    assert!(is_reject(&s), "200 RCPT TO in one transaction: {s:?}");
    m.stop().await;
}

/// List mail that turns bulk is tagged `list=yes` and delivered under
/// `policy.bulk = "reject"`, and counted. Copies that all carry a List-Id
/// from one sender domain are one list post: clean up to
/// `single_transaction_recipients` (100) in all, as one transaction
/// would be, and bulk past it (here the fifth copy to 25: 125). A copy
/// of the same campaign from another sender domain without list headers
/// is refused, and so are the list's later copies: the campaign is no
/// longer one list's.
#[tokio::test]
async fn list_mail_is_tagged_not_refused_until_the_campaign_comes_from_elsewhere() {
    let mut cfg = config();
    cfg.policy.bulk = Action::Reject;
    cfg.policy.suspect = Action::Reject;
    let m = start(cfg).await;
    let list_from = "<news-bounces@deals.example>";
    let mut replies = Vec::new();
    for (i, name) in NAMES.iter().enumerate().take(5) {
        let mail = with_list_headers(spam(name, 100 + i as u32));
        replies.push(send_envelope(m.addr, &mail, list_from, &rcpts(name, 25)).await);
    }
    for (a, s) in &replies[..4] {
        assert_eq!(*s, Status::Accept, "one list post to 100 in all");
        assert_eq!(x_bulkwatch(a), None, "clean, untagged");
    }
    let (a, s) = &replies[4];
    assert_eq!(*s, Status::Accept, "the fifth copy is bulk, but list mail");
    let v = x_bulkwatch(a).unwrap();
    assert!(
        v.starts_with("bulk; campaign=") && v.contains("size=125") && v.contains("; list=yes"),
        "{v}"
    );
    assert_eq!(m.state.metrics.messages(LevelKind::Bulk), 1);
    assert!(m.state.metrics.list_messages() >= 1);

    // The same text from a second sender domain, no list headers.
    let other = spam("frank", 200);
    let one = vec!["<frank@example.net>".to_owned()];
    let (_, s) = send_envelope(m.addr, &other, "<x@elsewhere.example>", &one).await;
    assert!(is_reject(&s), "{s:?}");
    // The list's next copy: the campaign now has two sender domains.
    let mail = with_list_headers(spam("grace", 201));
    let one = vec!["<grace@example.net>".to_owned()];
    let (_, s) = send_envelope(m.addr, &mail, list_from, &one).await;
    assert!(is_reject(&s), "{s:?}");
    m.stop().await;
}

/// A list that delivers one transaction per member (VERP, as Mailman
/// does: the member's address in the envelope sender) sends one post:
/// eleven members get it clean and untagged, under thresholds of 3 and 5
/// whose levels would refuse it, and the views call the campaign clean
/// too. It stays one post only while every copy is one: a copy of the
/// same text without a List-Id, even from the list's own domain, ends
/// that, and from then on the campaign is counted as any (the next list
/// copy is bulk, tagged as list mail).
#[tokio::test]
async fn a_list_that_delivers_one_transaction_per_member_sends_one_post() {
    let mut cfg = config();
    cfg.policy.bulk = Action::Reject;
    cfg.policy.suspect = Action::Reject;
    cfg.policy.list = Action::Tag;
    let m = start(cfg).await;
    let verp = |name: &str| format!("<news-bounces+{name}=example.net@deals.example>");
    for i in 0..11 {
        let name = &common::name(i);
        let mail = with_list_headers(spam(name, 500 + i as u32));
        let one = vec![format!("<{name}@example.net>")];
        let (a, s) = send_envelope(m.addr, &mail, &verp(name), &one).await;
        assert_eq!(s, Status::Accept, "member {i}");
        assert_eq!(x_bulkwatch(&a), None, "member {i}: clean, untagged");
    }
    assert_eq!(m.state.metrics.messages(LevelKind::Clean), 11);
    let (view, _) = bulkwatch::milter::metrics::campaigns_json(&m.state);
    let view: serde_json::Value = serde_json::from_str(&view).unwrap();
    assert_eq!(view.as_array().map(Vec::len), Some(1), "{view}");
    assert_eq!(
        (view[0]["recipients"].as_u64(), view[0]["level"].as_str()),
        (Some(11), Some("clean")),
        "{view}"
    );

    // Without a List-Id: counted (12 recipients), and the post after it too.
    let one = vec!["<zed@example.net>".to_owned()];
    let (_, s) = send_envelope(m.addr, &spam("zed", 600), "<news@deals.example>", &one).await;
    assert!(is_reject(&s), "{s:?}");
    let mail = with_list_headers(spam("yan", 601));
    let one = vec!["<yan@example.net>".to_owned()];
    let (a, s) = send_envelope(m.addr, &mail, &verp("yan"), &one).await;
    assert_eq!(s, Status::Accept);
    let v = x_bulkwatch(&a).unwrap_or_default();
    assert!(
        v.starts_with("bulk; campaign=") && v.contains("size=13") && v.contains("; list=yes"),
        "{v}"
    );
    m.stop().await;
}

/// `Precedence: bulk` alone marks list mail too.
#[tokio::test]
async fn precedence_bulk_is_list_mail() {
    let mut cfg = config();
    cfg.policy.bulk = Action::Reject;
    let m = start(cfg).await;
    let mut statuses = Vec::new();
    for (i, name) in NAMES.iter().enumerate().take(5) {
        let mut mail = spam(name, 300 + i as u32);
        mail.headers.push(("Precedence".into(), "bulk".into()));
        let one = vec![format!("<{name}@example.net>")];
        statuses.push(
            send_envelope(m.addr, &mail, "<n@deals.example>", &one)
                .await
                .1,
        );
    }
    assert!(
        statuses.iter().all(|s| *s == Status::Accept),
        "{statuses:?}"
    );
    assert_eq!(m.state.metrics.messages(LevelKind::Bulk), 1);
    m.stop().await;
}

/// A campaign copy to postmaster@ and abuse@ only is allowed (untagged,
/// delivered, counted as a recipient allow) while the campaign is rejected
/// for everyone else; with one ordinary recipient beside abuse@, the
/// transaction is rejected for all: abuse@ lends no bypass.
#[tokio::test]
async fn role_recipients_receive_but_lend_no_bypass() {
    let mut cfg = config();
    cfg.policy.bulk = Action::Reject;
    let m = start(cfg).await;
    let from = "<offers@deals.example>";
    for (i, name) in NAMES.iter().enumerate().take(5) {
        let one = vec![format!("<{name}@example.net>")];
        send_envelope(m.addr, &spam(name, 400 + i as u32), from, &one).await;
    }
    assert_eq!(
        m.state.metrics.messages(LevelKind::Bulk),
        1,
        "premise: bulk"
    );
    let roles = vec![
        "<postmaster@example.net>".to_owned(),
        "<Abuse@example.net>".to_owned(),
    ];
    let (a, s) = send_envelope(m.addr, &spam("frank", 410), from, &roles).await;
    assert_eq!(s, Status::Accept);
    assert_eq!(x_bulkwatch(&a), None);
    assert_eq!(m.state.metrics.allowed(AllowReason::Recipient), 1);
    let mixed = vec![
        "<abuse@example.net>".to_owned(),
        "<grace@example.net>".to_owned(),
    ];
    let (_, s) = send_envelope(m.addr, &spam("grace", 411), from, &mixed).await;
    assert!(is_reject(&s), "{s:?}");
    assert_eq!(m.state.metrics.allowed(AllowReason::Recipient), 1);
    m.stop().await;
}

/// The shipped configuration file says what the built-in defaults are.
#[test]
fn defaults_exempt_postmaster_and_abuse_and_tag_lists() {
    let c = Config::default();
    assert_eq!(c.allow.recipients, vec!["postmaster@", "abuse@"]);
    assert_eq!(c.policy.list, Action::Tag);
    assert_eq!(c.thresholds.single_transaction_recipients, 100);
}

/// A newsletter allowed by its domain (issue 52 item 6): `allow-domain`
/// lets every issue through, campaign after campaign, but only mail whose
/// From domain a trusted Authentication-Results header (the site's own
/// authenticator: `allow.authserv_ids`) says passed DKIM or DMARC. The
/// same text with the same From and no header, with a header of another
/// authserv-id, with a pass for another domain, a failed one, or one
/// hidden in a comment, is judged as any mail: a campaign of it is
/// refused.
#[tokio::test]
async fn a_domain_allowance_lets_authenticated_issues_through_and_nothing_forged() {
    let mut cfg = config();
    cfg.policy.bulk = Action::Reject;
    cfg.allow.authserv_ids = vec!["mx.example.org".into()];
    let m = start(cfg).await;
    let now = bulkwatch::milter::unix_now();
    let answer = m
        .state
        .control
        .handle(&m.state, "allow-domain News.Shop.Example", now);
    assert_eq!(answer["ok"], true, "{answer}");
    assert_eq!(answer["domain"], "news.shop.example");
    let issue = |n: u32, name: &str, ar: Option<&str>| {
        let mut mail = spam(name, n);
        mail.headers[0] = ("From".into(), "Shop news <letter@news.shop.example>".into());
        mail.headers[2] = ("Subject".into(), format!("Issue {n}"));
        mail.body = format!("Issue {n}: {}", mail.body);
        if n.is_multiple_of(2) {
            mail.body = mail.body.replace("premium savings", "spring garden");
        }
        if let Some(v) = ar {
            mail.headers
                .insert(0, ("Authentication-Results".into(), v.to_owned()));
        }
        mail
    };
    let genuine = "mx.example.org; dkim=pass (2048-bit key) header.d=shop.example header.s=s1; \
                   dmarc=pass header.from=news.shop.example";
    // Two issues of different text, to twelve people each: all through.
    for n in [1u32, 2] {
        for i in 0..12 {
            let (a, s) = send(m.addr, &issue(n, &common::name(i), Some(genuine))).await;
            assert_eq!(s, Status::Accept, "issue {n}, copy {i}");
            assert_eq!(x_bulkwatch(&a), None, "issue {n}, copy {i}");
        }
    }
    assert_eq!(m.state.metrics.allowed(AllowReason::Domain), 24);
    // What a forger can write, each in a campaign of its own text: judged,
    // and refused once bulk.
    let forged = [
        None,
        Some("evil.example; dkim=pass header.d=shop.example"),
        Some("mx.example.org; dkim=pass header.d=mailer.example"),
        Some("mx.example.org; dkim=fail header.d=shop.example"),
        Some("mx.example.org; dkim=pass (header.d=shop.example)"),
        Some("mx.example.org; spf=pass smtp.mailfrom=news.shop.example"),
    ];
    for (k, ar) in forged.iter().enumerate() {
        let n = 100 + k as u32 * 2 + 1;
        let mut refused = 0;
        for i in 0..8 {
            let mut mail = issue(n, &common::name(i), *ar);
            mail.body = format!(
                "{k} {k} {k} forged {}",
                mail.body.replace("Issue", &"x".repeat(k + 1))
            );
            let (_, s) = send(m.addr, &mail).await;
            refused += usize::from(is_reject(&s));
        }
        assert!(refused > 0, "{ar:?}: nothing refused");
    }
    assert_eq!(m.state.metrics.allowed(AllowReason::Domain), 24);
    // Withdrawn: the next issue is judged again.
    let answer = m
        .state
        .control
        .handle(&m.state, "disallow-domain news.shop.example", now);
    assert_eq!(answer["ok"], true, "{answer}");
    let mut refused = 0;
    for i in 0..8 {
        let (_, s) = send(m.addr, &issue(3, &common::name(i), Some(genuine))).await;
        refused += usize::from(is_reject(&s));
    }
    assert!(refused > 0);
    assert_eq!(m.state.metrics.allowed(AllowReason::Domain), 24);
    m.stop().await;
}

/// Without `allow.authserv_ids` no header is trusted: an allowance is
/// accepted, says so, and lets nothing through.
#[tokio::test]
async fn without_trusted_authserv_ids_a_domain_allowance_lets_nothing_through() {
    let m = start(config()).await;
    let now = bulkwatch::milter::unix_now();
    let answer = m
        .state
        .control
        .handle(&m.state, "allow-domain deals.example", now);
    assert_eq!(answer["ok"], true, "{answer}");
    assert!(
        answer["note"]
            .as_str()
            .unwrap()
            .contains("allow.authserv_ids is empty"),
        "{answer}"
    );
    for (i, name) in NAMES.iter().enumerate() {
        let mut mail = spam(name, i as u32);
        mail.headers.insert(
            0,
            (
                "Authentication-Results".into(),
                "mx.example.org; dkim=pass header.d=deals.example".into(),
            ),
        );
        send(m.addr, &mail).await;
    }
    assert_eq!(m.state.metrics.allowed(AllowReason::Domain), 0);
    assert!(m.state.metrics.messages(LevelKind::Bulk) > 0);
    // Bad names are refused, saying why.
    for bad in [
        "allow-domain com",
        "allow-domain a..b",
        "allow-domain x y z",
    ] {
        let answer = m.state.control.handle(&m.state, bad, now);
        assert_eq!(answer["ok"], false, "{bad}: {answer}");
    }
    m.stop().await;
}

/// With Redis a domain allowance is the site's: set through one daemon,
/// read by another (`refresh_domains`, which `serve` runs every 10 s) and
/// honoured there; withdrawn through the second, gone from the first. A
/// head replaced by junk is read by nobody and written back.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_domain_allowance_is_shared_over_redis() {
    use bulkwatch::config::StoreBackend;
    use bulkwatch::engine::Engine;
    use bulkwatch::milter::State;
    use bulkwatch::store::RedisLayer;
    let server = common::redis::RedisServer::start();
    let mut cfg = config();
    cfg.store.backend = StoreBackend::Redis;
    cfg.store.redis.urls = vec![server.url()];
    cfg.store.redis.timeout = std::time::Duration::from_secs(5);
    cfg.allow.authserv_ids = vec!["mx.example.org".into()];
    let milter = |cfg: &Config| {
        let layer = RedisLayer::from_config(cfg).unwrap().unwrap();
        common::start_state(State::new(Engine::new(cfg)).with_redis(layer))
    };
    let a = milter(&cfg).await;
    let b = milter(&cfg).await;
    let now = bulkwatch::milter::unix_now();
    let answer = a
        .state
        .control
        .handle(&a.state, "allow-domain deals.example", now);
    assert_eq!(answer["ok"], true, "{answer}");
    // The head replaced by junk (a careless or hostile writer): a daemon
    // that never verified the head reads nothing from it; one that did
    // writes it back (docs/admin/redis.md, "Who may write to it").
    let key = format!(
        "{}:head",
        bulkwatch::store::redis::key_base(&cfg.store.redis)
    );
    let good = server.cli(&["--no-raw", "GET", &key]).unwrap();
    server.cli(&["SET", &key, "junk"]).unwrap();
    let refresh = |m: &common::Milter| {
        let st = std::sync::Arc::clone(&m.state);
        tokio::task::spawn_blocking(move || st.control.refresh_domains(&st, now))
    };
    refresh(&b).await.unwrap();
    assert!(b.state.control.domain_allowances(now).is_empty());
    refresh(&a).await.unwrap();
    assert_eq!(server.cli(&["--no-raw", "GET", &key]).unwrap(), good);
    let st = std::sync::Arc::clone(&b.state);
    tokio::task::spawn_blocking(move || st.control.refresh_domains(&st, now))
        .await
        .unwrap();
    let listed: Vec<String> = b
        .state
        .control
        .domain_allowances(now)
        .into_iter()
        .map(|(d, _)| d)
        .collect();
    assert_eq!(listed, vec!["deals.example".to_owned()]);
    for (i, name) in NAMES.iter().enumerate() {
        let mut mail = spam(name, i as u32);
        mail.headers.insert(
            0,
            (
                "Authentication-Results".into(),
                "mx.example.org; dkim=pass header.d=deals.example".into(),
            ),
        );
        let (_, s) = send(b.addr, &mail).await;
        assert_eq!(s, Status::Accept);
    }
    assert_eq!(b.state.metrics.allowed(AllowReason::Domain), 6);
    let answer = b
        .state
        .control
        .handle(&b.state, "disallow-domain deals.example", now);
    assert_eq!(answer["ok"], true, "{answer}");
    let st = std::sync::Arc::clone(&a.state);
    tokio::task::spawn_blocking(move || st.control.refresh_domains(&st, now))
        .await
        .unwrap();
    assert!(a.state.control.domain_allowances(now).is_empty());
    a.stop().await;
    b.stop().await;
}
