//! The HTTP listener (`metrics.listen`): `/metrics` (Prometheus text),
//! `/campaigns` and `/domains` (JSON), the dashboard at `/`, and, with a
//! control token, `POST /campaigns/ID/allow|disallow|forget` and `POST
//! /domains/DOMAIN/allow|disallow`, and `POST /report/spam|ham?user=USER`
//! (a user's report of the copy named in `X-Bulkwatch-Copy`).
//!
//! HTTP/1.1 is read by hyper, one request per connection. Anyone who can
//! reach the port is assumed hostile:
//! - **Bounded connections.** At most [`MAX_HTTP_CONNECTIONS`] at once. A
//!   new one past that closes the oldest connection that has not yet sent
//!   a whole request head (a slowloris client), or, when every one has,
//!   is itself closed unanswered (`bulkwatch_http_refused_total`). A
//!   request head must arrive within [`HEADER_TIMEOUT`] and fit in 16 KiB;
//!   a whole exchange, the answer's writing included, ends within
//!   [`CONNECTION_TIMEOUT`]. A flood of idle or slow clients therefore
//!   holds a bounded number of descriptors for a bounded time, and a
//!   request that arrives whole is answered.
//! - **Host check.** A request whose `Host` names anything but an IP
//!   address or `localhost` is refused (421): a page of another site that
//!   rebinds its own name to this address (DNS rebinding) cannot read
//!   `/campaigns` through the user's browser.
//! - **No script from mail.** Every answer carries [`SECURITY_HEADERS`]: the
//!   page runs only its own script, which sets text (never HTML) and shows
//!   directional formatting characters of a sender's text as code points.
//! - **Control** needs the bearer token (`metrics.control_token`), compared
//!   in constant time; a page of another site cannot send that header
//!   without a CORS preflight, which this listener never grants.

use std::convert::Infallible;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{HeaderValue, AUTHORIZATION, CONTENT_TYPE, HOST};
use hyper::StatusCode;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;

use crate::milter::metrics::{campaigns_filtered, query_pairs, render, Filter, View};
use crate::milter::State;

/// Most HTTP connections served at once (module documentation).
pub const MAX_HTTP_CONNECTIONS: usize = 32;
/// Longest a client may take to send its request head.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(5);
/// Longest a whole exchange may take, reading the answer included.
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);

/// The dashboard at `/`: a page, its script and its style sheet, served
/// from the binary (no external asset; see [`SECURITY_HEADERS`]).
const DASHBOARD_HTML: &str = include_str!("dashboard/index.html");
const DASHBOARD_JS: &str = include_str!("dashboard/dashboard.js");
const DASHBOARD_CSS: &str = include_str!("dashboard/dashboard.css");

/// Sent with every answer. The page loads only its own script, style
/// sheet and `/campaigns`; nothing inline runs, so text from mail (a
/// subject) that reached the page could not run as script even if it were
/// ever written as HTML (the script sets text only).
pub const SECURITY_HEADERS: [(&str, &str); 4] = [
    (
        "content-security-policy",
        "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
         img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
    ),
    ("x-content-type-options", "nosniff"),
    ("referrer-policy", "no-referrer"),
    ("cache-control", "no-store"),
];

/// What routing needs of a request.
#[derive(Debug, Clone, Copy, Default)]
pub struct Request<'a> {
    pub method: &'a str,
    /// Without its query.
    pub path: &'a str,
    /// The query, after `?` (`/campaigns`'s filter), still encoded.
    pub query: Option<&'a str>,
    pub host: Option<&'a str>,
    pub authorization: Option<&'a str>,
    /// `X-Bulkwatch-Copy`: the copy a `POST /report/…` reports.
    pub copy: Option<&'a str>,
}

/// An answer: status, content type, body, and for `/campaigns` whose
/// campaigns it lists (sent as `X-Bulkwatch-View`).
#[derive(Debug, Clone, PartialEq)]
pub struct Reply {
    pub status: StatusCode,
    pub content_type: &'static str,
    pub body: String,
    pub view: Option<View>,
    /// `/campaigns`: (live campaigns in all, those the filter admits),
    /// sent as `X-Bulkwatch-Total` and `X-Bulkwatch-Matched`.
    pub counts: Option<(usize, usize)>,
}

impl Reply {
    fn new(status: StatusCode, content_type: &'static str, body: impl Into<String>) -> Reply {
        Reply {
            status,
            content_type,
            body: body.into(),
            view: None,
            counts: None,
        }
    }

    fn text(status: StatusCode, body: &str) -> Reply {
        Reply::new(status, "text/plain; charset=utf-8", body)
    }
}

/// Whether `host` (a `Host` header) names this listener by address or as
/// `localhost`; a missing one is accepted (HTTP/1.0 clients; browsers
/// always send it).
pub fn host_allowed(host: Option<&str>) -> bool {
    let Some(host) = host.map(str::trim) else {
        return true;
    };
    // [v6]:port, [v6], v4:port, v4, name:port, name.
    let name = match host.strip_prefix('[') {
        Some(rest) => match rest.split_once(']') {
            Some((inside, _)) => return inside.parse::<std::net::Ipv6Addr>().is_ok(),
            None => return false,
        },
        None => host.rsplit_once(':').map_or(host, |(n, _)| n),
    };
    name.parse::<std::net::Ipv4Addr>().is_ok() || name.eq_ignore_ascii_case("localhost")
}

/// The answer to `req` (blocking: `/campaigns` and control may make a
/// Redis round trip).
pub fn respond(state: &State, req: &Request<'_>) -> Reply {
    if !host_allowed(req.host) {
        return Reply::text(
            StatusCode::MISDIRECTED_REQUEST,
            "this listener answers to an IP address or localhost only (a name is refused, so \
             that a page of another site cannot reach it by rebinding its name)\n",
        );
    }
    let (ok, json) = (StatusCode::OK, "application/json");
    match (req.method, req.path) {
        ("GET", "/campaigns") => {
            let filter = match Filter::parse(query_pairs(req.query.unwrap_or(""))) {
                Ok(f) => f,
                Err(e) => return Reply::text(StatusCode::BAD_REQUEST, &format!("{e}\n")),
            };
            let list = campaigns_filtered(state, &filter);
            let body = crate::escape::json(
                &serde_json::to_string(&list.campaigns).unwrap_or_else(|_| "[]".to_owned()),
            );
            Reply {
                view: Some(list.view),
                counts: Some((list.active, list.matched)),
                ..Reply::new(ok, json, body)
            }
        }
        ("GET", "/metrics") => Reply::new(
            ok,
            "text/plain; version=0.0.4; charset=utf-8",
            render(state, crate::milter::unix_now()),
        ),
        ("GET", "/") => Reply::new(ok, "text/html; charset=utf-8", DASHBOARD_HTML),
        ("GET", "/dashboard.js") => Reply::new(ok, "text/javascript; charset=utf-8", DASHBOARD_JS),
        ("GET", "/dashboard.css") => Reply::new(ok, "text/css; charset=utf-8", DASHBOARD_CSS),
        ("GET", "/control") => Reply::new(
            ok,
            json,
            serde_json::json!({"enabled": state.config().metrics.control_token.is_some()})
                .to_string(),
        ),
        ("GET", "/zero-hour") => Reply::new(ok, json, zero_hour(state).to_string()),
        ("GET", "/domains") => {
            let answer = state.control.run(
                state,
                crate::milter::control::Command::Domains,
                crate::milter::unix_now(),
            );
            Reply::new(ok, json, answer.to_string())
        }
        ("POST", p @ ("/report/spam" | "/report/ham")) => report(state, p == "/report/spam", req),
        ("POST", p) if p.starts_with("/campaigns/") || p.starts_with("/domains/") => {
            control(state, p, req.authorization)
        }
        ("GET", _) => Reply::text(StatusCode::NOT_FOUND, "not found\n"),
        _ => Reply::text(
            StatusCode::METHOD_NOT_ALLOWED,
            "GET, or POST /campaigns/ID/allow|disallow|forget or /domains/DOMAIN/allow|disallow \
             with the control token\n",
        ),
    }
}

/// `/zero-hour`: whether it is on, the copies recorded, what was done
/// (counts and the latest events, newest first).
fn zero_hour(state: &State) -> serde_json::Value {
    use std::sync::atomic::Ordering::Relaxed;
    let Some(z) = state.zero_hour() else {
        return serde_json::json!({"enabled": false});
    };
    let c = &z.counts;
    serde_json::json!({
        "enabled": true,
        "copies": z.len(),
        "moved": c.junked.load(Relaxed),
        "moved_back": c.restored.load(Relaxed),
        "given_up": c.given_up.load(Relaxed),
        "spam_reports": c.spam_reports.load(Relaxed),
        "ham_reports": c.ham_reports.load(Relaxed),
        "refused_reports": c.refused_reports.load(Relaxed),
        "events": z.events(),
    })
}

/// `POST /report/spam|ham?user=USER` with the copy's header value in
/// `X-Bulkwatch-Copy` and the control token: a user's report, as the
/// report socket takes it (`crate::milter::zerohour`).
fn report(state: &State, spam: bool, req: &Request<'_>) -> Reply {
    let json = "application/json";
    if let Some(refusal) = unauthorized(state, req.authorization) {
        return refusal;
    }
    let user = query_pairs(req.query.unwrap_or(""))
        .into_iter()
        .find_map(|(k, v)| (k == "user").then_some(v));
    let (Some(user), Some(copy)) = (user, req.copy) else {
        let answer = crate::milter::control::error(
            "report: the user in ?user= and the copy's header value in X-Bulkwatch-Copy",
        );
        return Reply::new(StatusCode::BAD_REQUEST, json, answer.to_string());
    };
    let kind = if spam { "spam" } else { "ham" };
    let answer = state.control.handle(
        state,
        &format!("report {kind} {user} {copy}"),
        crate::milter::unix_now(),
    );
    Reply::new(ok_or_bad(&answer), json, answer.to_string())
}

/// 200 for an answer that says ok, 400 for a refusal.
fn ok_or_bad(answer: &serde_json::Value) -> StatusCode {
    if answer.get("ok").and_then(serde_json::Value::as_bool) == Some(true) {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    }
}

/// The refusal of a control request without the token (`None`: it has
/// it).
fn unauthorized(state: &State, authorization: Option<&str>) -> Option<Reply> {
    let Some(token) = state.config().metrics.control_token.clone() else {
        return Some(Reply::text(
            StatusCode::NOT_FOUND,
            "control is off (metrics.control_token)\n",
        ));
    };
    let given = authorization
        .and_then(|v| v.trim().strip_prefix("Bearer "))
        .map(str::trim)
        .unwrap_or_default();
    if !same(given.as_bytes(), token.as_bytes()) {
        let body = serde_json::json!({"ok": false, "error": "a valid control token is needed"});
        return Some(Reply::new(
            StatusCode::UNAUTHORIZED,
            "application/json",
            body.to_string(),
        ));
    }
    None
}

/// `POST /campaigns/ID/allow`, `/disallow` or `/forget`, with `Authorization: Bearer
/// TOKEN` (`metrics.control_token`); off (404) when no token is set.
fn control(state: &State, path: &str, authorization: Option<&str>) -> Reply {
    let json = "application/json";
    if let Some(refusal) = unauthorized(state, authorization) {
        return refusal;
    }
    use crate::milter::control::{campaign_id, Command};
    let command = if let Some(rest) = path.strip_prefix("/domains/") {
        // `/domains/DOMAIN/allow|disallow`: a domain allowance.
        let mut parts = rest.split('/');
        match (parts.next(), parts.next(), parts.next()) {
            (Some(d), Some(action @ ("allow" | "disallow")), None)
                if crate::engine::allowance::domain(d).is_some() =>
            {
                if action == "allow" {
                    Command::AllowDomain {
                        domain: d.to_owned(),
                        secs: None,
                    }
                } else {
                    Command::DisallowDomain(d.to_owned())
                }
            }
            _ => return Reply::text(StatusCode::NOT_FOUND, "not found\n"),
        }
    } else {
        let mut parts = path.trim_start_matches("/campaigns/").split('/');
        let (id, action) = match (parts.next(), parts.next(), parts.next()) {
            (Some(id), Some(action @ ("allow" | "disallow" | "forget")), None) => (id, action),
            _ => return Reply::text(StatusCode::NOT_FOUND, "not found\n"),
        };
        let id = match campaign_id(id) {
            Ok(id) => id,
            Err(refusal) => {
                let answer = crate::milter::control::error(&refusal);
                return Reply::new(StatusCode::BAD_REQUEST, json, answer.to_string());
            }
        };
        match action {
            "allow" => Command::Allow { id, secs: None },
            "disallow" => Command::Disallow(id),
            _ => Command::Forget(id),
        }
    };
    let answer = state.control.run(state, command, crate::milter::unix_now());
    let status = if answer.get("ok") == Some(&serde_json::Value::Bool(true)) {
        StatusCode::OK
    } else {
        StatusCode::BAD_REQUEST
    };
    Reply::new(status, json, answer.to_string())
}

/// Compares two secrets in time that depends on their lengths only.
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

/// One open connection.
struct Slot {
    accepted: Instant,
    /// A whole request head arrived.
    answered: AtomicBool,
    /// Closes the connection (it is evicted).
    close: tokio::sync::Notify,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// Makes room for a new connection at `MAX_HTTP_CONNECTIONS`: closes the
/// oldest that has not sent a whole request head. False when every one
/// has (then the new one is refused).
fn make_room(slots: &Mutex<Vec<Arc<Slot>>>, state: &State) -> bool {
    let mut s = lock(slots);
    if s.len() < MAX_HTTP_CONNECTIONS {
        return true;
    }
    let victim = s
        .iter()
        .enumerate()
        .filter(|(_, c)| !c.answered.load(Ordering::Relaxed))
        .min_by_key(|(_, c)| c.accepted)
        .map(|(i, _)| i);
    match victim {
        Some(i) => {
            let c = s.swap_remove(i);
            c.close.notify_one();
            state.metrics.record_http_evicted();
            true
        }
        None => false,
    }
}

async fn answer(
    state: Arc<State>,
    slot: Arc<Slot>,
    req: hyper::Request<Incoming>,
) -> hyper::Response<Full<Bytes>> {
    slot.answered.store(true, Ordering::Relaxed);
    let method = req.method().as_str().to_owned();
    let path = req.uri().path().to_owned();
    let query = req.uri().query().map(str::to_owned);
    let header = |name| {
        req.headers()
            .get(name)
            .and_then(|v: &HeaderValue| v.to_str().ok())
            .map(str::to_owned)
    };
    let (host, authorization) = (header(HOST), header(AUTHORIZATION));
    let copy = header(hyper::header::HeaderName::from_static("x-bulkwatch-copy"));
    // (With Redis, `/campaigns` and control make a round trip: off the
    // runtime's threads.)
    let reply = tokio::task::spawn_blocking(move || {
        respond(
            &state,
            &Request {
                method: &method,
                path: &path,
                query: query.as_deref(),
                host: host.as_deref(),
                authorization: authorization.as_deref(),
                copy: copy.as_deref(),
            },
        )
    })
    .await
    .unwrap_or_else(|_| Reply::text(StatusCode::INTERNAL_SERVER_ERROR, "the request failed\n"));
    let mut builder = hyper::Response::builder()
        .status(reply.status)
        .header(CONTENT_TYPE, reply.content_type);
    if let Some(v) = reply.view {
        builder = builder.header("x-bulkwatch-view", v.as_str());
    }
    if let Some((total, matched)) = reply.counts {
        builder = builder
            .header("x-bulkwatch-total", total)
            .header("x-bulkwatch-matched", matched);
    }
    for (name, value) in SECURITY_HEADERS {
        builder = builder.header(name, value);
    }
    builder
        .body(Full::new(Bytes::from(reply.body)))
        .unwrap_or_else(|_| hyper::Response::new(Full::new(Bytes::new())))
}

/// Serves one connection (module documentation for its bounds).
async fn connection(state: Arc<State>, slot: Arc<Slot>, stream: tokio::net::TcpStream) {
    let service_slot = Arc::clone(&slot);
    let service = hyper::service::service_fn(move |req| {
        let (state, slot) = (Arc::clone(&state), Arc::clone(&service_slot));
        async move { Ok::<_, Infallible>(answer(state, slot, req).await) }
    });
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .keep_alive(false)
        .max_buf_size(16 * 1024);
    let conn = http.serve_connection(TokioIo::new(stream), service);
    tokio::select! {
        _ = tokio::time::timeout(CONNECTION_TIMEOUT, conn) => {}
        () = slot.close.notified() => {}
    }
}

/// Serves HTTP on `listener` until the task is dropped or aborted.
pub async fn serve(listener: TcpListener, state: Arc<State>) {
    let slots: Arc<Mutex<Vec<Arc<Slot>>>> = Arc::default();
    loop {
        let stream = match listener.accept().await {
            Ok((stream, _)) => stream,
            Err(e) => {
                tracing::warn!(error = %e, "metrics accept failed");
                tokio::time::sleep(Duration::from_millis(100)).await;
                continue;
            }
        };
        if !make_room(&slots, &state) {
            state.metrics.record_http_refused();
            drop(stream);
            continue;
        }
        let slot = Arc::new(Slot {
            accepted: Instant::now(),
            answered: AtomicBool::new(false),
            close: tokio::sync::Notify::new(),
        });
        lock(&slots).push(Arc::clone(&slot));
        let (state, slots) = (Arc::clone(&state), Arc::clone(&slots));
        tokio::spawn(async move {
            connection(state, Arc::clone(&slot), stream).await;
            lock(&slots).retain(|s| !Arc::ptr_eq(s, &slot));
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;
    use crate::engine::Engine;

    /// A request from the text of its head.
    fn respond_to(state: &State, head: &str) -> Reply {
        let mut lines = head.lines();
        let first = lines.next().unwrap_or_default();
        let mut parts = first.split_whitespace();
        let (method, target) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
        let path = target.split('?').next().unwrap_or("");
        let query = target.split_once('?').map(|(_, q)| q);
        let header = |want: &str| {
            head.lines().skip(1).find_map(|l| {
                let (n, v) = l.split_once(':')?;
                n.trim().eq_ignore_ascii_case(want).then(|| v.trim())
            })
        };
        respond(
            state,
            &Request {
                method,
                path,
                query,
                host: header("host"),
                authorization: header("authorization"),
                copy: header("x-bulkwatch-copy"),
            },
        )
    }

    #[test]
    fn requests_are_routed() {
        let state = State::new(Engine::new(&Config::default()));
        assert_eq!(respond_to(&state, "GET /metrics HTTP/1.0").status, 200);
        let r = respond_to(&state, "GET /campaigns HTTP/1.1\nHost: 127.0.0.1:9357");
        assert_eq!((r.status, r.body.as_str()), (StatusCode::OK, "[]"));
        // The dashboard: the page names only its own script and style
        // sheet, which are served too.
        let r = respond_to(&state, "GET / HTTP/1.1");
        assert_eq!(r.content_type, "text/html; charset=utf-8");
        let page = r.body;
        assert!(page.contains("src=\"/dashboard.js\"") && page.contains("href=\"/dashboard.css\""));
        assert!(
            !page.contains("http://") && !page.contains("https://"),
            "no external asset"
        );
        assert!(
            !page.contains("<script>") && !page.contains("style="),
            "nothing inline"
        );
        for (path, ctype) in [
            ("/dashboard.js", "text/javascript"),
            ("/dashboard.css", "text/css"),
        ] {
            let r = respond_to(&state, &format!("GET {path} HTTP/1.0"));
            assert_eq!(r.status, StatusCode::OK);
            assert!(
                r.content_type.starts_with(ctype) && !r.body.is_empty(),
                "{path}"
            );
        }
        // Sender-controlled text is never parsed as HTML by the script.
        assert!(
            !DASHBOARD_JS.contains("innerHTML") && !DASHBOARD_JS.contains("insertAdjacentHTML")
        );
        assert!(SECURITY_HEADERS[0]
            .1
            .contains("default-src 'none'; script-src 'self'; style-src 'self';"));
        assert_eq!(respond_to(&state, "GET /x HTTP/1.0").status, 404);
        assert_eq!(respond_to(&state, "POST /metrics HTTP/1.0").status, 405);
    }

    /// DNS rebinding: a page of another site whose name now points here
    /// sends its own name as Host, and is refused; addresses and
    /// localhost are answered.
    #[test]
    fn only_addresses_and_localhost_are_answered() {
        let state = State::new(Engine::new(&Config::default()));
        for host in [
            "evil.example:9357",
            "evil.example",
            "127.0.0.1.evil.example",
            "[::1",
            "",
        ] {
            let r = respond_to(&state, &format!("GET /campaigns HTTP/1.1\nHost: {host}"));
            assert_eq!(r.status, StatusCode::MISDIRECTED_REQUEST, "{host}");
            assert!(!r.body.contains('['), "no campaign list for {host}");
        }
        for host in [
            "127.0.0.1:9357",
            "127.0.0.1",
            "[::1]:9357",
            "localhost:9357",
            "LOCALHOST",
        ] {
            let r = respond_to(&state, &format!("GET /campaigns HTTP/1.1\nHost: {host}"));
            assert_eq!(r.status, StatusCode::OK, "{host}");
        }
        assert_eq!(
            respond_to(&state, "GET /campaigns HTTP/1.0").status,
            StatusCode::OK
        );
    }

    #[test]
    fn reports_need_the_control_token_and_zero_hour() {
        let mut cfg = Config::default();
        cfg.metrics.control_token = Some("0123456789abcdef0123".into());
        let state = State::new(Engine::new(&cfg));
        let head = "POST /report/spam?user=a%40example.org HTTP/1.0\nHost: 127.0.0.1\n\
                    X-Bulkwatch-Copy: n=1; c=000000000001; t=1; r=; s=00\n";
        assert_eq!(respond_to(&state, head).status, StatusCode::UNAUTHORIZED);
        let with = format!("{head}Authorization: Bearer 0123456789abcdef0123\n");
        let r = respond_to(&state, &with);
        assert_eq!(r.status, StatusCode::BAD_REQUEST);
        assert!(r.body.contains("zero-hour is off"), "{}", r.body);
        let z = crate::milter::zerohour::ZeroHour::new(&cfg);
        let state = State::new(Engine::new(&cfg)).with_zero_hour(std::sync::Arc::new(z));
        let r = respond_to(&state, &with);
        assert!(
            r.body.contains("no copy of this message was delivered"),
            "{}",
            r.body
        );
    }

    #[test]
    fn allow_and_forget_need_the_control_token() {
        let mut cfg = Config::default();
        let post = |state: &State, path: &str, auth: &str| {
            let r = respond_to(state, &format!("POST {path} HTTP/1.1\n{auth}"));
            (r.status, r.body)
        };
        // No token: control is off, whatever is sent.
        let state = State::new(Engine::new(&cfg));
        assert_eq!(
            respond_to(&state, "GET /control HTTP/1.0").body,
            "{\"enabled\":false}"
        );
        assert_eq!(
            post(&state, "/campaigns/000000000001/allow", "").0,
            StatusCode::NOT_FOUND
        );
        cfg.metrics.control_token = Some("0123456789abcdef0123".into());
        let state = State::new(Engine::new(&cfg));
        assert_eq!(
            respond_to(&state, "GET /control HTTP/1.0").body,
            "{\"enabled\":true}"
        );
        for auth in [
            "",
            "Authorization: Bearer wrong",
            "Authorization: 0123456789abcdef0123",
        ] {
            assert_eq!(
                post(&state, "/campaigns/000000000001/allow", auth).0,
                StatusCode::UNAUTHORIZED,
                "{auth}"
            );
        }
        let ok = "authorization: Bearer 0123456789abcdef0123";
        let (s, body) = post(&state, "/campaigns/000000000001/allow", ok);
        assert_eq!(s, StatusCode::BAD_REQUEST, "no such campaign: {body}");
        let raw = crate::engine::testutil::spam("ann", 1);
        let v = state.engine().process(
            raw.as_bytes(),
            &crate::engine::Envelope::default(),
            crate::engine::UnixSecs(crate::milter::unix_now()),
        );
        let id = v.campaign.map(|c| c.id.to_string()).unwrap();
        let (s, body) = post(&state, &format!("/campaigns/{id}/allow"), ok);
        assert_eq!(s, StatusCode::OK, "{body}");
        let allowed = |state: &State| crate::milter::metrics::campaigns(state).campaigns[0].allowed;
        assert!(allowed(&state));
        let (s, body) = post(&state, &format!("/campaigns/{id}/disallow"), ok);
        assert_eq!(s, StatusCode::OK, "{body}");
        assert!(!allowed(&state));
        let metrics = crate::milter::metrics::render(&state, crate::milter::unix_now());
        for line in [
            "bulkwatch_campaign_allows_total 1",
            "bulkwatch_campaign_disallows_total 1",
            "bulkwatch_campaign_forgets_total 0",
        ] {
            assert!(metrics.contains(line), "{line} in {metrics}");
        }
        let (s, body) = post(&state, &format!("/campaigns/{id}/forget"), ok);
        assert_eq!(s, StatusCode::OK, "{body}");
        let (s, body) = post(&state, &format!("/campaigns/{id}/forget"), ok);
        assert_eq!(s, StatusCode::BAD_REQUEST, "forgotten already: {body}");
        assert_eq!(
            post(&state, "/campaigns/000000000001/drop", ok).0,
            StatusCode::NOT_FOUND
        );
        assert_eq!(
            post(&state, "/campaigns/zz/allow", ok).0,
            StatusCode::BAD_REQUEST
        );
    }

    /// With Redis configured but not answering, `/campaigns` lists this
    /// host's campaigns and says so; without Redis the view is the host's.
    #[test]
    fn campaigns_say_whose_they_are() {
        use crate::config::StoreBackend;
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .unwrap();
        let mut cfg = Config::default();
        cfg.store.backend = StoreBackend::Redis;
        cfg.store.redis.urls = vec![format!("redis://127.0.0.1:{port}")];
        cfg.store.redis.timeout = Duration::from_millis(500);
        let shared = crate::store::RedisLayer::from_config(&cfg)
            .unwrap()
            .unwrap();
        let state = State::new(Engine::new(&cfg)).with_redis(shared);
        let r = respond_to(&state, "GET /campaigns HTTP/1.1");
        assert_eq!((r.status, r.body.as_str()), (StatusCode::OK, "[]"));
        assert_eq!(r.view, Some(View::HostRedisUnavailable));
        assert_eq!(r.view.map(View::as_str), Some("host; redis unavailable"));
        let local = State::new(Engine::new(&Config::default()));
        assert_eq!(
            respond_to(&local, "GET /campaigns HTTP/1.1").view,
            Some(View::Host)
        );
        assert_eq!(
            respond_to(&local, "GET /metrics HTTP/1.1").view,
            None,
            "only the list says whose it is"
        );
    }
}
