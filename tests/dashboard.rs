//! The dashboard at `/` of the HTTP listener, in a real browser: a
//! campaign fed through the milter protocol appears on the page, drawn by
//! its script under the page's Content-Security-Policy (a blocked script
//! would leave the table empty).

mod common;

use std::process::Command;
use std::sync::Arc;

use common::{send, spam, Mail, NAMES};

/// The page as headless Chromium leaves it once its script has run.
fn rendered(url: &str) -> String {
    let profile = tempfile::tempdir().unwrap();
    let out = Command::new(chromium())
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--no-first-run",
            "--disable-extensions",
            // Runs the page's timers and fetches in virtual time before
            // the DOM is dumped; no wall-clock wait.
            "--virtual-time-budget=10000",
        ])
        .arg(format!("--user-data-dir={}", profile.path().display()))
        .arg("--dump-dom")
        .arg(url)
        .output()
        .expect("chromium runs");
    assert!(
        out.status.success(),
        "chromium failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// The dashboard of `m` as Chromium renders it, served on a free
/// loopback port for the time of the rendering.
async fn dashboard(m: &common::Milter) -> String {
    dashboard_at(m, "/").await
}

/// [`dashboard`] at `path` (a filter in its query).
async fn dashboard_at(m: &common::Milter, path: &str) -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let url = format!("http://{}{path}", listener.local_addr().unwrap());
    let http = tokio::spawn(bulkwatch::http::serve(listener, Arc::clone(&m.state)));
    let dom = tokio::task::spawn_blocking(move || rendered(&url))
        .await
        .unwrap();
    http.abort();
    dom
}

/// The table row the page's script drew for campaign `id`, if any.
fn row<'a>(dom: &'a str, id: &str) -> Option<&'a str> {
    let row = dom.get(dom.find(&format!("data-campaign=\"{id}\""))?..)?;
    Some(&row[..row.find("</tr>").unwrap_or(row.len())])
}

fn chromium() -> &'static str {
    ["/usr/bin/chromium", "/usr/bin/chromium-browser"]
        .into_iter()
        .find(|p| std::path::Path::new(p).exists())
        .unwrap_or("chromium")
}

#[cfg_attr(
    not(bulkwatch_chromium),
    ignore = "needs chromium (apt-get install chromium)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_campaign_fed_through_the_milter_appears_on_the_dashboard() {
    let m = common::start(common::config()).await;
    for (i, name) in NAMES.iter().enumerate() {
        send(m.addr, &spam(name, i as u32)).await;
    }
    let (id, subject) = m.state.with_view(|e| {
        let c = e.campaigns().next().expect("one campaign");
        (
            c.id.to_string(),
            c.texts.subject().expect("a subject").to_owned(),
        )
    });
    let dom = dashboard(&m).await;
    m.stop().await;
    // The row the script drew: the campaign, its level, its subject, its
    // size and a chart.
    let row = row(&dom, &id).unwrap_or_else(|| panic!("campaign {id} not on the page:\n{dom}"));
    assert!(row.contains("level-bulk\">bulk</span>"), "{row}");
    assert!(row.contains(&*subject), "{row}");
    assert!(row.contains(">6</td>"), "six recipients: {row}");
    assert!(row.contains("<svg class=\"chart\""), "{row}");
    assert!(dom.contains("1 campaigns in the window, 1 bulk"), "{dom}");
    assert!(!dom.contains("Redis did not answer"), "{dom}");
    assert!(
        !row.contains("<button"),
        "read-only without a control token"
    );
}

/// With `metrics.control_token`, each row gets allow and forget buttons
/// (what they send is tested in `milter::metrics`).
#[cfg_attr(
    not(bulkwatch_chromium),
    ignore = "needs chromium (apt-get install chromium)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_a_control_token_the_dashboard_offers_allow_and_forget() {
    let mut cfg = common::config();
    cfg.metrics.control_token = Some("0123456789abcdef0123".into());
    let m = common::start(cfg).await;
    send(m.addr, &spam("alice", 1)).await;
    let dom = dashboard(&m).await;
    m.stop().await;
    assert!(
        dom.contains(
            "<button type=\"button\">allow</button><button type=\"button\">forget</button>"
        ),
        "{dom}"
    );
    assert!(dom.contains("id=\"token\" type=\"password\""), "{dom}");
}

/// With Redis, an idle daemon's page shows the site's campaigns and
/// counts: a campaign fed through one milter appears, with the site's
/// size and its arrivals chart, on the page of another that judged
/// nothing. Allowed through the second, its level reads `allowed` on the
/// page of the first.
#[cfg_attr(
    not(all(bulkwatch_chromium, bulkwatch_redis)),
    ignore = "needs chromium and redis-server (apt-get install chromium redis-server)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_redis_every_dashboard_shows_the_site() {
    use bulkwatch::config::StoreBackend;
    use bulkwatch::engine::Engine;
    use bulkwatch::milter::State;
    use bulkwatch::store::RedisLayer;
    {
        let server = common::redis::RedisServer::start();
        let mut cfg = common::config();
        cfg.store.backend = StoreBackend::Redis;
        cfg.store.redis.urls = vec![server.url()];
        cfg.store.redis.timeout = std::time::Duration::from_secs(5);
        let milter = |cfg: &bulkwatch::config::Config| {
            let layer = RedisLayer::from_config(cfg).unwrap().unwrap();
            common::start_state(State::new(Engine::new(cfg)).with_redis(layer))
        };
        let busy = milter(&cfg).await;
        let idle = milter(&cfg).await;
        for (i, name) in NAMES.iter().enumerate() {
            send(busy.addr, &spam(name, i as u32)).await;
        }
        let dom = dashboard(&idle).await;
        let row_start = dom
            .find("data-campaign=")
            .unwrap_or_else(|| panic!("no campaign on the idle page:\n{dom}"));
        let row = &dom[row_start..];
        let row = &row[..row.find("</tr>").unwrap_or(row.len())];
        assert!(row.contains("level-bulk\">bulk</span>"), "{row}");
        assert!(row.contains(">6</td>"), "the site's six recipients: {row}");
        assert!(row.contains("<svg class=\"chart\""), "{row}");
        let id = &row["data-campaign=\"".len()..][..12];
        let answer = idle.state.control.handle(
            &idle.state,
            &format!("allow {id}"),
            bulkwatch::milter::unix_now(),
        );
        assert_eq!(answer["ok"], true, "{answer}");
        let dom = dashboard(&busy).await;
        assert!(dom.contains("level-allowed\">allowed</span>"), "{dom}");
        busy.stop().await;
        idle.stop().await;
    }
}

/// With Redis configured but not answering, the daemon judges alone (fail
/// open) and its page says that it shows this host's campaigns only.
#[cfg_attr(
    not(bulkwatch_chromium),
    ignore = "needs chromium (apt-get install chromium)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_redis_the_page_says_it_shows_this_host_only() {
    use bulkwatch::config::StoreBackend;
    use bulkwatch::engine::Engine;
    use bulkwatch::milter::State;
    use bulkwatch::store::RedisLayer;
    // A loopback port with nothing listening.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let mut cfg = common::config();
    cfg.store.backend = StoreBackend::Redis;
    cfg.store.redis.urls = vec![format!("redis://127.0.0.1:{port}")];
    cfg.store.redis.timeout = std::time::Duration::from_secs(1);
    let layer = RedisLayer::from_config(&cfg).unwrap().unwrap();
    let m = common::start_state(State::new(Engine::new(&cfg)).with_redis(layer)).await;
    for (i, name) in NAMES.iter().enumerate() {
        send(m.addr, &spam(name, i as u32)).await;
    }
    let dom = dashboard(&m).await;
    m.stop().await;
    assert!(
        dom.contains(
            "Redis did not answer: this host's campaigns only. 1 campaigns in the window, 1 bulk"
        ),
        "{dom}"
    );
    assert!(dom.contains("class=\"partial\""), "{dom}");
}

/// A sender's directional formatting characters cannot reorder what the
/// page shows: "\u{202e}evil.example" would read "elpmaxe.live". The page
/// shows the character as its code point, in a cell isolated from its
/// neighbours.
#[cfg_attr(
    not(bulkwatch_chromium),
    ignore = "needs chromium (apt-get install chromium)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn directional_characters_of_a_sender_are_shown_not_obeyed() {
    let m = common::start(common::config()).await;
    for (i, name) in NAMES.iter().enumerate() {
        let mut mail = spam(name, i as u32);
        for (k, v) in mail.headers.iter_mut() {
            if k == "Subject" {
                *v = "Invoice from \u{202e}evil.example\u{202c} today".into();
            }
        }
        send(m.addr, &mail).await;
    }
    let dom = dashboard(&m).await;
    m.stop().await;
    assert!(
        dom.contains("Invoice from [U+202E]evil.example[U+202C] today"),
        "{dom}"
    );
    assert!(!dom.contains('\u{202e}'), "{dom}");
    assert!(dom.contains("class=\"mail\" dir=\"auto\""), "{dom}");
}

/// Issue 41 item 3, in the browser: a post to 25 recipients in one
/// transaction is judged clean and delivered untagged, so the page must
/// not call its campaign bulk ("1 bulk" in the header was the bug); a
/// campaign the operator allowed reads `allowed`, not its level, and
/// offers `disallow` where the others offer `allow`.
#[cfg_attr(
    not(bulkwatch_chromium),
    ignore = "needs chromium (apt-get install chromium)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_page_shows_the_level_the_next_message_would_get() {
    let mut cfg = common::config();
    cfg.metrics.control_token = Some("0123456789abcdef0123".into());
    let m = common::start(cfg).await;
    let rcpts: Vec<String> = (0..25).map(|i| format!("<sub{i}@example.net>")).collect();
    let (_, s) = common::send_envelope(
        m.addr,
        &spam("alice", 1),
        "<list-bounces@deals.example>",
        &rcpts,
    )
    .await;
    assert_eq!(s, indymilter_test::Status::Accept);
    let id = m.state.with_view(|e| {
        let c = e.campaigns().next().expect("its campaign");
        c.id.to_string()
    });
    let dom = dashboard(&m).await;
    assert!(
        dom.contains(", 0 bulk shown;"),
        "the header counts no bulk: {dom}"
    );
    let post = row(&dom, &id).unwrap_or_else(|| panic!("campaign {id} not on the page:\n{dom}"));
    assert!(!post.contains("level-bulk"), "{post}");
    assert!(
        post.contains("<button type=\"button\">allow</button>"),
        "{post}"
    );
    // A campaign of six messages, bulk, then allowed by the operator.
    for (i, name) in NAMES.iter().enumerate() {
        send(
            m.addr,
            &Mail {
                body: "Another offer altogether: refinance your mortgage at a rate you will not \
                   believe, today only, by calling our advisers at the number below.\r\n"
                    .into(),
                ..spam(name, 10 + i as u32)
            },
        )
        .await;
    }
    let bulk = m.state.with_view(|e| {
        e.campaigns()
            .find(|c| c.messages >= 6)
            .map(|c| c.id)
            .expect("the offer's campaign")
    });
    assert!(m.state.engine().allow(bulk, None).is_some());
    let dom = dashboard(&m).await;
    m.stop().await;
    let row = row(&dom, &bulk.to_string())
        .unwrap_or_else(|| panic!("campaign {bulk} not on the page:\n{dom}"));
    assert!(row.contains("level-allowed\">allowed</span>"), "{row}");
    assert!(
        row.contains("<button type=\"button\">disallow</button>")
            && !row.contains(">allow</button>"),
        "{row}"
    );
    assert!(
        dom.contains(", 0 bulk shown;"),
        "an allowed campaign is not counted bulk: {dom}"
    );
}

/// The dashboard's filter (issue 52): the page's address carries it
/// (`/?level=bulk`, `/?q=…`), the form and `/campaigns` read it, and the
/// status says how many of how many are shown; a list's post is marked as
/// such.
#[cfg_attr(
    not(bulkwatch_chromium),
    ignore = "needs chromium (apt-get install chromium)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_filters_by_level_and_text() {
    let m = common::start(common::config()).await;
    for (i, name) in NAMES.iter().enumerate() {
        send(m.addr, &spam(name, i as u32)).await;
    }
    let notes = [
        ("Allotment rota", "the allotment rota changes next week because the water tank is being repaired by the council and the hoses must stay coiled"),
        ("Choir practice", "choir practice moves to the library hall on thursday since the church roof leaks again and the organ needs tuning"),
        ("Bake sale", "the bake sale raised enough for new goal nets and the referees asked for lemon cake at the final of the junior league"),
    ];
    for (i, (subject, text)) in notes.iter().enumerate() {
        let mut mail = Mail {
            headers: vec![
                ("From".into(), format!("club{i}@village.example")),
                ("Subject".into(), (*subject).into()),
            ],
            body: format!("{text}.\r\n"),
            rcpt: format!("<member{i}@example.net>"),
            queue_id: format!("QN{i}"),
        };
        if i == 2 {
            mail.headers.push((
                "List-Id".into(),
                "Village news <news.village.example>".into(),
            ));
        }
        send(m.addr, &mail).await;
    }
    let bulk_id = m.state.with_view(|e| {
        e.campaigns()
            .find(|c| c.messages == 6)
            .map(|c| c.id.to_string())
            .unwrap()
    });
    let dom = dashboard_at(&m, "/?level=bulk").await;
    assert!(row(&dom, &bulk_id).is_some(), "{dom}");
    assert_eq!(dom.matches("data-campaign=").count(), 1, "{dom}");
    assert!(
        dom.contains("1 of 4 campaigns in the window (1 match the filter)"),
        "{dom}"
    );
    let dom = dashboard_at(&m, "/?q=choir").await;
    assert_eq!(dom.matches("data-campaign=").count(), 1, "{dom}");
    assert!(
        dom.contains("Choir practice") && row(&dom, &bulk_id).is_none(),
        "{dom}"
    );
    let dom = dashboard_at(&m, "/?limit=2").await;
    assert_eq!(dom.matches("data-campaign=").count(), 2, "{dom}");
    assert!(dom.contains("2 of 4 campaigns in the window"), "{dom}");
    // Bulk first, whatever the sizes.
    let first = dom.find("data-campaign=").unwrap();
    assert!(
        dom[first..].starts_with(&format!("data-campaign=\"{bulk_id}\"")),
        "{dom}"
    );
    m.stop().await;
}

/// The dashboard's domain allowances (issue 52 item 6): with a control
/// token, a campaign of one sender domain offers **allow domain**, and the
/// allowed domains are listed with a **disallow** button each, with what
/// makes them honoured (the trusted authserv-ids).
#[cfg_attr(
    not(bulkwatch_chromium),
    ignore = "needs chromium (apt-get install chromium)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dashboard_allows_a_sender_domain_and_lists_the_allowed() {
    let mut cfg = common::config();
    cfg.metrics.control_token = Some("0123456789abcdef0123".into());
    cfg.allow.authserv_ids = vec!["mx.example.org".into()];
    let m = common::start(cfg).await;
    send(m.addr, &spam("alice", 1)).await;
    let answer = m.state.control.handle(
        &m.state,
        "allow-domain news.shop.example",
        bulkwatch::milter::unix_now(),
    );
    assert_eq!(answer["ok"], true, "{answer}");
    let id = m
        .state
        .with_view(|e| e.campaigns().next().unwrap().id.to_string());
    let dom = dashboard(&m).await;
    m.stop().await;
    let row = row(&dom, &id).unwrap_or_else(|| panic!("campaign {id} not on the page:\n{dom}"));
    assert!(
        row.contains("<button type=\"button\">allow domain</button>"),
        "{row}"
    );
    let listed = dom
        .find("data-domain=\"news.shop.example\"")
        .map(|i| &dom[i..])
        .unwrap_or_else(|| panic!("the allowed domain is not listed:\n{dom}"));
    let item = &listed[..listed.find("</li>").unwrap_or(listed.len())];
    assert!(
        item.contains("until withdrawn") && item.contains(">disallow</button>"),
        "{item}"
    );
    assert!(
        dom.contains("Authentication-Results header of mx.example.org"),
        "{dom}"
    );
}
