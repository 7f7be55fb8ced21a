//! Shared test helpers: an in-process milter on 127.0.0.1:0 with a
//! shutdown handle, and a whole MTA-side conversation per message.
#![allow(dead_code)]

pub mod daemon;
pub mod dovecot;
pub mod redis;
pub mod synthetic;

use std::net::SocketAddr;
use std::sync::Arc;

use bulkwatch::config::Config;
use bulkwatch::engine::Engine;
use bulkwatch::milter::{self, Listener, State};
use indymilter_test::{EomActions, MacroStage, Status, TestConnection};
use tokio::net::TcpListener;
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

/// A running milter; `stop` shuts it down and checks it exited cleanly.
pub struct Milter {
    pub addr: SocketAddr,
    pub state: Arc<State>,
    shutdown: oneshot::Sender<()>,
    handle: JoinHandle<std::io::Result<()>>,
}

/// A milter for `cfg` that reads mail in worker processes of the real
/// binary, as `serve` does.
pub async fn start(cfg: Config) -> Milter {
    start_state(State::new(Engine::new(&cfg)).with_workers(workers(&cfg).await)).await
}

/// Two worker processes of the `bulkwatch` binary for `cfg`.
pub async fn workers(cfg: &Config) -> bulkwatch::worker::Pool {
    bulkwatch::worker::Pool::start(
        std::path::Path::new(env!("CARGO_BIN_EXE_bulkwatch")),
        cfg,
        2,
        bulkwatch::worker::Hooks::default(),
    )
    .await
    .unwrap()
}

/// A milter around a prepared state (e.g. with a shared store).
pub async fn start_state(state: State) -> Milter {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let state = Arc::new(state);
    let (shutdown, rx) = oneshot::channel::<()>();
    let handle = tokio::spawn(milter::run(
        Listener::Tcp(listener),
        Arc::clone(&state),
        async move {
            let _ = rx.await;
        },
    ));
    Milter {
        addr,
        state,
        shutdown,
        handle,
    }
}

impl Milter {
    pub async fn stop(self) {
        let _ = self.shutdown.send(());
        self.handle.await.unwrap().unwrap();
    }
}

/// Config with small thresholds: 3 copies suspect, 5 bulk.
pub fn config() -> Config {
    let mut cfg = Config::default();
    cfg.thresholds.bulk_threshold = 5.0;
    cfg.thresholds.suspect_threshold = 3.0;
    cfg.window.max_entries = 10_000;
    cfg.exact.bloom_items = 10_000;
    cfg
}

/// A personalized copy of one campaign for `name`.
pub fn spam(name: &str, n: u32) -> Mail {
    Mail {
        headers: vec![
            ("From".into(), "Deals <offers@deals.example>".into()),
            ("To".into(), format!("{name} <{name}@example.net>")),
            ("Subject".into(), format!("Your offer {n}")),
        ],
        body: format!(
            "Dear {name},\r\n\r\nWe are pleased to tell you that your account qualifies for our premium \
             savings program. Act now to claim the discount before the end of the week. \
             Visit https://track.deals.example/c/{n}?u={n} to confirm your details.\r\n\r\n\
             Our team reviewed your profile and selected you for an exclusive reward. Reply \
             today and receive free shipping on every order. Ref {n}{n}.\r\n"
        ),
        rcpt: format!("<{name}@example.net>"),
        queue_id: format!("Q{n}"),
    }
}

/// [`spam`] `n` to the `n`th name of [`NAMES`], as the bytes of a message.
pub fn spam_bytes(n: u32) -> Vec<u8> {
    let name = NAMES[n as usize % NAMES.len()];
    let m = spam(name, n);
    let mut raw = String::new();
    for (k, v) in &m.headers {
        raw.push_str(&format!("{k}: {v}\r\n"));
    }
    raw.push_str("\r\n");
    raw.push_str(&m.body);
    raw.into_bytes()
}

pub const NAMES: [&str; 6] = ["alice", "bob", "carol", "dave", "erin", "frank"];

/// The `i`th recipient's name: [`NAMES`], then `alice1`, `bob1`, ...
/// (another person each: a campaign counts each recipient once).
pub fn name(i: usize) -> String {
    match i / NAMES.len() {
        0 => NAMES[i].to_owned(),
        n => format!("{}{n}", NAMES[i % NAMES.len()]),
    }
}

/// One message as the MTA hands it over.
#[derive(Clone)]
pub struct Mail {
    pub headers: Vec<(String, String)>,
    pub body: String,
    pub rcpt: String,
    pub queue_id: String,
}

pub async fn open(addr: SocketAddr) -> TestConnection {
    greet(TestConnection::open(addr).await.unwrap()).await
}

pub async fn open_unix(path: &std::path::Path) -> TestConnection {
    greet(TestConnection::configure().open_unix(path).await.unwrap()).await
}

/// bulkwatch negotiates no reply for every stage up to the body
/// (`callbacks::NO_REPLY`): the test client reports `Noreply` there, and
/// would report `Continue` if the milter answered.
async fn greet(mut conn: TestConnection) -> TestConnection {
    let st = conn
        .connect("client.example", ([192, 0, 2, 7], 40000))
        .await
        .unwrap();
    assert_eq!(st, Status::Noreply);
    assert_eq!(conn.helo("client.example").await.unwrap(), Status::Noreply);
    conn
}

/// MAIL … EOM for one message on an open connection.
pub async fn transact(conn: &mut TestConnection, m: &Mail) -> (EomActions, Status) {
    let rcpt = [m.rcpt.clone()];
    transact_envelope(conn, m, "<offers@deals.example>", &rcpt).await
}

/// MAIL … EOM with a sender and recipients of the caller's (`m.rcpt` is
/// not used).
pub async fn transact_envelope(
    conn: &mut TestConnection,
    m: &Mail,
    mail_from: &str,
    rcpts: &[String],
) -> (EomActions, Status) {
    transact_with(conn, m, mail_from, rcpts, &[]).await
}

/// [`transact_envelope`] with more macros at MAIL (`{auth_authen}`).
pub async fn transact_with(
    conn: &mut TestConnection,
    m: &Mail,
    mail_from: &str,
    rcpts: &[String],
    mail_macros: &[(&str, &str)],
) -> (EomActions, Status) {
    let mut macros = vec![("i", m.queue_id.as_str())];
    macros.extend_from_slice(mail_macros);
    conn.macros(MacroStage::Mail, macros).await.unwrap();
    assert_eq!(conn.mail([mail_from]).await.unwrap(), Status::Noreply);
    for r in rcpts {
        assert_eq!(conn.rcpt([r.as_str()]).await.unwrap(), Status::Noreply);
    }
    assert_eq!(conn.data().await.unwrap(), Status::Noreply);
    for (k, v) in &m.headers {
        assert_eq!(
            conn.header(k.as_str(), v.as_str()).await.unwrap(),
            Status::Noreply
        );
    }
    assert_eq!(conn.eoh().await.unwrap(), Status::Noreply);
    // Chunks as an MTA sends them (65535 bytes at most); after Skip the MTA
    // sends no more body.
    for chunk in m.body.as_bytes().chunks(65_535) {
        match conn.body(chunk.to_vec()).await.unwrap() {
            Status::Continue => {}
            Status::Skip => break,
            other => panic!("body: {other:?}"),
        }
    }
    conn.eom().await.unwrap()
}

/// A whole connection carrying one message from `mail_from` to `rcpts`.
pub async fn send_envelope(
    addr: SocketAddr,
    m: &Mail,
    mail_from: &str,
    rcpts: &[String],
) -> (EomActions, Status) {
    let mut conn = open(addr).await;
    let r = transact_envelope(&mut conn, m, mail_from, rcpts).await;
    conn.close().await.unwrap();
    r
}

/// Who a connection comes from, as the MTA reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Client<'a> {
    /// An SMTP client outside the site (192.0.2.7).
    Outside,
    /// An SMTP client at this IPv4 address.
    At([u8; 4]),
    /// An SMTP client outside the site that logged in as this user
    /// (`{auth_authen}`).
    Login(&'a str),
}

/// A whole connection from `client` carrying one message from `mail_from`
/// to `rcpts`.
pub async fn send_from(
    addr: SocketAddr,
    client: Client<'_>,
    m: &Mail,
    mail_from: &str,
    rcpts: &[String],
) -> (EomActions, Status) {
    let ip = match client {
        Client::At(ip) => ip,
        Client::Outside | Client::Login(_) => [192, 0, 2, 7],
    };
    let mut conn = TestConnection::open(addr).await.unwrap();
    let st = conn.connect("client.example", (ip, 40000)).await.unwrap();
    assert_eq!(st, Status::Noreply);
    assert_eq!(conn.helo("client.example").await.unwrap(), Status::Noreply);
    let login = match client {
        Client::Login(user) => vec![("{auth_authen}", user)],
        _ => Vec::new(),
    };
    let r = transact_with(&mut conn, m, mail_from, rcpts, &login).await;
    conn.close().await.unwrap();
    r
}

/// A whole connection carrying one message.
pub async fn send(addr: SocketAddr, m: &Mail) -> (EomActions, Status) {
    let mut conn = open(addr).await;
    let r = transact(&mut conn, m).await;
    conn.close().await.unwrap();
    r
}

/// A message of an independent case (`tests/*_independent.rs`), with the
/// group it belongs to: messages of a group must share a campaign, or
/// stay apart.
pub struct Msg {
    pub group: &'static str,
    pub raw: Vec<u8>,
}

/// A message of an independent case as the replayer judged it.
pub struct Fed {
    pub group: &'static str,
    pub rec: bulkwatch::replay::Record,
    pub raw: Vec<u8>,
}

/// Replays `msgs` in order through a fresh replayer of [`config`].
pub fn replay(msgs: Vec<Msg>) -> Vec<Fed> {
    use bulkwatch::replay::{ReplayOptions, Replayer};
    let cfg = config();
    let mut r = Replayer::new(&cfg, ReplayOptions::default());
    for (i, m) in msgs.iter().enumerate() {
        r.feed("test", i + 1, &m.raw);
    }
    let records = r.into_summary().records;
    assert_eq!(records.len(), msgs.len());
    msgs.into_iter()
        .zip(records)
        .map(|(m, rec)| Fed {
            group: m.group,
            rec,
            raw: m.raw,
        })
        .collect()
}
