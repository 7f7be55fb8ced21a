//! Alerts go out over SMTP (lettre, STARTTLS as `alerts.tls` says) to
//! `alerts.smtp`, once per `min_interval`: checked against a minimal SMTP
//! server on 127.0.0.1:0.

mod common;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use bulkwatch::config::Config;
use bulkwatch::engine::campaign::CampaignId;
use bulkwatch::engine::verdict::CampaignSummary;
use bulkwatch::milter::alert;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;
use tokio::sync::mpsc;

/// Accepts SMTP sessions and stores each message's DATA.
async fn smtp_server(listener: TcpListener, got: Arc<Mutex<Vec<String>>>) {
    while let Ok((stream, _)) = listener.accept().await {
        let got = Arc::clone(&got);
        tokio::spawn(async move {
            let (r, mut w) = stream.into_split();
            let mut lines = BufReader::new(r).lines();
            w.write_all(b"220 test ESMTP\r\n").await.unwrap();
            while let Ok(Some(line)) = lines.next_line().await {
                let cmd = line.to_ascii_uppercase();
                if cmd.starts_with("DATA") {
                    w.write_all(b"354 go\r\n").await.unwrap();
                    let mut data = String::new();
                    while let Ok(Some(l)) = lines.next_line().await {
                        if l == "." {
                            break;
                        }
                        data.push_str(&l);
                        data.push('\n');
                    }
                    got.lock().unwrap().push(data);
                    w.write_all(b"250 queued\r\n").await.unwrap();
                } else if cmd.starts_with("QUIT") {
                    w.write_all(b"221 bye\r\n").await.unwrap();
                    break;
                } else {
                    w.write_all(b"250 ok\r\n").await.unwrap();
                }
            }
        });
    }
}

fn alert(id: u64) -> alert::Alert {
    let campaign = CampaignSummary {
        id: CampaignId(id),
        messages: 21,
        recipients: 21,
        score: 21.0,
        first_seen: 1_700_000_000,
        last_seen: 1_700_000_100,
        sender_domains: 1,
        senders: vec!["deals.example".into()],
        sample_subject: Some("Your offer".into()),
        list_post: false,
        conversation: false,
        largest: 0,
        freed: 0,
        grown: 0,
        own: 0,
        own_largest: 0,
    };
    alert::Alert {
        campaign,
        at: 1_700_000_100,
        message_id: Some(format!("{id:x}.20231114@deals.example")),
        queue_id: Some("4SbCdE1xyz".into()),
        metrics_listen: Some("127.0.0.1:9357".into()),
        judged_here: true,
        logs: alert::LogPlace::Journal,
        inside: None,
        held: false,
    }
}

#[tokio::test]
async fn alert_is_mailed_and_rate_limited() {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let server = tokio::spawn(smtp_server(listener, Arc::clone(&got)));

    let mut cfg = Config::default().alerts;
    cfg.to = vec!["postmaster@example.org".into()];
    cfg.from = "bulkwatch@example.org".into();
    cfg.smtp = addr.to_string();
    cfg.min_interval = Duration::from_secs(3600);
    let (tx, rx) = mpsc::channel(alert::QUEUE);
    tx.send(alert(0xabc)).await.unwrap();
    tx.send(alert(0xdef)).await.unwrap();
    drop(tx);
    // Returns once the queue is closed and drained.
    let (_cfg_tx, cfg_rx) = tokio::sync::watch::channel(cfg);
    alert::run(cfg_rx, rx, None, None, Arc::default()).await;
    server.abort();

    let got = got.lock().unwrap();
    assert_eq!(
        got.len(),
        1,
        "the second campaign falls in the rate limit: {got:?}"
    );
    let mail = &got[0];
    assert!(
        mail.contains("Content-Transfer-Encoding: 7bit"),
        "plain text, readable as sent:\n{mail}"
    );
    for part in [
        "Subject: bulkwatch: bulk campaign 000000000abc",
        "To: postmaster@example.org",
        "Your offer",
        "deals.example",
        // A readable date, the message that made it bulk, and the
        // commands that show the campaign.
        "turned bulk on Tue, 14 Nov 2023 22:15:00 +0000",
        "first seen: Tue, 14 Nov 2023 22:13:20 +0000",
        "The message that made it bulk:\n  Message-ID: <abc.20231114@deals.example>\n  queue id: 4SbCdE1xyz\n",
        "curl -s http://127.0.0.1:9357/campaigns \\\n    | grep -o '{\"id\":\"000000000abc\"[^}]*}'",
        "journalctl -u bulkwatch | grep 000000000abc",
    ] {
        assert!(mail.contains(part), "{part} in\n{mail}");
    }
}

/// Through the milter: the message that makes a campaign bulk queues one
/// alert carrying its Message-ID, its queue id and the metrics address
/// (for the command that shows the campaign); the next copy queues none.
#[tokio::test]
async fn the_message_that_makes_a_campaign_bulk_is_named_in_its_alert() {
    use bulkwatch::engine::Engine;
    use bulkwatch::milter::State;
    use common::{config, send, spam, start_state, NAMES};

    let cfg = config();
    let (tx, mut rx) = mpsc::channel(alert::QUEUE);
    let (cfg_tx, _cfg_rx) = tokio::sync::watch::channel(cfg.alerts.clone());
    let m = start_state(State::new(Engine::new(&cfg)).with_alerts(tx, cfg_tx)).await;
    for (i, name) in NAMES.iter().enumerate() {
        let mut mail = spam(name, 500 + i as u32);
        mail.headers
            .push(("Message-ID".into(), format!("<copy{i}@deals.example>")));
        send(m.addr, &mail).await;
    }
    m.stop().await;
    let a = rx.try_recv().expect("one alert");
    assert!(rx.try_recv().is_err(), "only one alert per campaign");
    // bulk_threshold 5: the fifth copy (index 4) made it bulk.
    assert_eq!(a.message_id.as_deref(), Some("copy4@deals.example"));
    assert_eq!(a.queue_id.as_deref(), Some("Q504"));
    assert_eq!(a.campaign.messages, 5);
    assert!(a.at >= a.campaign.first_seen, "{a:?}");
    assert_eq!(a.metrics_listen, cfg.metrics.listen);
    let text = alert::body(&a, 0);
    assert!(
        text.contains("  Message-ID: <copy4@deals.example>\n  queue id: Q504\n"),
        "{text}"
    );
}

/// Three hosts share Redis; host A has no alert recipients, B and C
/// have. A campaign that turns bulk on A is alerted once for the site (B
/// or C, whichever claims it first; the other counts it as claimed
/// elsewhere); one that turns bulk on C is alerted once too. Before, the
/// first was never alerted, since only the host that judged the crossing
/// alerted.
#[cfg_attr(
    not(bulkwatch_redis),
    ignore = "needs redis-server (apt-get install redis-server)"
)]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hosts_sharing_redis_alert_once_per_site() {
    use std::sync::atomic::Ordering::Relaxed;

    use bulkwatch::config::StoreBackend;
    use bulkwatch::engine::Engine;
    use bulkwatch::milter::State;
    use bulkwatch::store::RedisLayer;
    use common::{send, spam, start_state, Mail, NAMES};

    let server = common::redis::RedisServer::start();
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let smtp = listener.local_addr().unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let sink = tokio::spawn(smtp_server(listener, Arc::clone(&got)));

    let mut cfg = common::config();
    cfg.store.backend = StoreBackend::Redis;
    cfg.store.redis.urls = vec![server.url()];
    cfg.store.redis.key_prefix = "alerts-site".into();
    cfg.store.redis.timeout = Duration::from_secs(5);
    let mut alerts = cfg.alerts.clone();
    alerts.to = vec!["postmaster@example.org".into()];
    alerts.from = "bulkwatch@example.org".into();
    alerts.smtp = smtp.to_string();
    alerts.min_interval = Duration::ZERO;

    let mut hosts = Vec::new();
    let mut counts = Vec::new();
    for alerting in [false, true, true] {
        let mut state = State::new(Engine::new(&cfg))
            .with_redis(RedisLayer::from_config(&cfg).unwrap().unwrap());
        let redis = state.redis_shared().unwrap();
        // The replica has read the (empty) log: what it reads from now on
        // is news.
        redis.site().unwrap();
        if alerting {
            let (tx, rx) = mpsc::channel(alert::QUEUE);
            let (cfg_tx, cfg_rx) = tokio::sync::watch::channel(alerts.clone());
            state = state.with_alerts(tx, cfg_tx);
            let site = alert::Site {
                redis,
                every: Duration::from_millis(50),
                grace: Duration::ZERO,
                ttl: Duration::from_secs(3600),
            };
            counts.push(Arc::clone(&state.alert_counts));
            tokio::spawn(alert::run(
                cfg_rx,
                rx,
                Some(site),
                None,
                Arc::clone(&state.alert_counts),
            ));
        }
        hosts.push(start_state(state).await);
    }
    let total = |f: fn(&alert::Counts) -> u64| counts.iter().map(|c| f(c)).sum::<u64>();
    let settled = |n: u64| {
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        async move {
            loop {
                let (sent, elsewhere) = (
                    total(|c| c.sent.load(Relaxed)),
                    total(|c| c.elsewhere.load(Relaxed)),
                );
                if sent + elsewhere >= 2 * n || std::time::Instant::now() > deadline {
                    return (sent, elsewhere);
                }
                tokio::time::sleep(Duration::from_millis(20)).await;
            }
        }
    };

    // bulk_threshold 5: the fifth copy makes the campaign bulk, on A.
    for (i, name) in NAMES.iter().enumerate().take(5) {
        send(hosts[0].addr, &spam(name, 700 + i as u32)).await;
    }
    assert_eq!(settled(1).await, (1, 1), "one alert, one claim lost");
    // Another text turns bulk on C, which alerts itself.
    for (i, name) in NAMES.iter().enumerate().take(5) {
        let mail = Mail {
            body: format!(
                "Hello {name}, the quarterly statement of your pension fund is ready. \
                 Sign in to the members area before friday to review the yearly figures, \
                 the new contribution rates and the forms for your beneficiaries.\r\n"
            ),
            ..spam(name, 800 + i as u32)
        };
        send(hosts[2].addr, &mail).await;
    }
    assert_eq!(settled(2).await, (2, 2), "one alert per campaign");
    assert_eq!(got.lock().unwrap().len(), 2);
    for h in hosts {
        h.stop().await;
    }
    sink.abort();
}

/// `[alerts]` set by a reload applies at once (issue 52): a daemon started
/// without `alerts.to`, given one by SIGHUP, mails the next campaign that
/// turns bulk; the reload's log line names the keys it changed. Before,
/// the alert task started only at start, and the reload said only
/// "configuration reloaded".
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn alerts_set_by_a_reload_are_sent() {
    use common::daemon::Daemon;
    let got = Arc::new(Mutex::new(Vec::new()));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let smtp = listener.local_addr().unwrap();
    let server = tokio::spawn(smtp_server(listener, Arc::clone(&got)));
    let dir = tempfile::tempdir().unwrap();
    let socket = dir.path().join("milter.sock");
    let config = dir.path().join("bulkwatch.toml");
    let base = format!(
        "[milter]\nsocket = \"unix:{}\"\n\n[state]\nstate_dir = \"{}\"\n\n[metrics]\nlisten = \"\"\n\n\
         [thresholds]\nbulk_threshold = 3.0\nsuspect_threshold = 2.0\n",
        socket.display(),
        dir.path().join("state").display()
    );
    std::fs::write(&config, &base).unwrap();
    let mut d = Daemon::start(&config, &dir.path().join("daemon.log"), &socket);
    std::fs::write(
        &config,
        format!(
            "{base}\n[alerts]\nto = [\"postmaster@example.org\"]\nfrom = \"bulkwatch@example.org\"\nsmtp = \"{smtp}\"\n"
        ),
    )
    .unwrap();
    d.signal("-HUP");
    d.wait_log("configuration reloaded");
    let text = d.log_text();
    let line = text
        .lines()
        .find(|l| l.contains("configuration reloaded"))
        .unwrap();
    assert!(
        line.contains("alerts.to") && line.contains("alerts.smtp"),
        "{line}"
    );
    for i in 0..4 {
        let mut conn = common::open_unix(&socket).await;
        common::transact(&mut conn, &common::spam(&common::name(i), 70 + i as u32)).await;
        conn.close().await.unwrap();
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while got.lock().unwrap().is_empty() && std::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(d.stop().success());
    server.abort();
    let got = got.lock().unwrap();
    assert_eq!(got.len(), 1, "{got:?}\n{}", text);
    assert!(
        got[0].contains("Subject: bulkwatch: bulk campaign"),
        "{}",
        got[0]
    );
}

/// A certificate for 127.0.0.1, self-signed (made with the `openssl`
/// command), and its key, as a relay's snakeoil certificate is.
fn snakeoil(dir: &std::path::Path) -> (Vec<u8>, Vec<u8>) {
    let ok = std::process::Command::new("openssl")
        .args([
            "req",
            "-x509",
            "-newkey",
            "ec",
            "-pkeyopt",
            "ec_paramgen_curve:prime256v1",
            "-nodes",
            "-days",
            "2",
            "-subj",
            "/CN=127.0.0.1",
            "-addext",
            "subjectAltName=IP:127.0.0.1",
            "-keyout",
            "key.pem",
            "-out",
            "cert.pem",
        ])
        .current_dir(dir)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .status()
        .unwrap()
        .success();
    assert!(ok, "openssl req");
    (
        std::fs::read(dir.join("cert.pem")).unwrap(),
        std::fs::read(dir.join("key.pem")).unwrap(),
    )
}

/// One SMTP session on `io` until QUIT or STARTTLS; the messages' DATA
/// go to `got`, marked with whether the session was `tls`. Returns
/// whether the client asked for STARTTLS (answered 220).
async fn smtp_session<S>(
    io: S,
    tls: bool,
    offer: bool,
    got: &Mutex<Vec<(bool, String)>>,
) -> (bool, S)
where
    S: tokio::io::AsyncRead + tokio::io::AsyncWrite + Unpin,
{
    let mut io = BufReader::new(io);
    if !tls {
        io.write_all(b"220 test ESMTP\r\n").await.unwrap();
    }
    let mut line = String::new();
    loop {
        line.clear();
        if io.read_line(&mut line).await.unwrap_or(0) == 0 {
            return (false, io.into_inner());
        }
        let cmd = line.trim_end().to_ascii_uppercase();
        if cmd.starts_with("EHLO") {
            let ext = if offer && !tls {
                "250-test\r\n250 STARTTLS\r\n"
            } else {
                "250 test\r\n"
            };
            io.write_all(ext.as_bytes()).await.unwrap();
        } else if cmd == "STARTTLS" && offer && !tls {
            io.write_all(b"220 go ahead\r\n").await.unwrap();
            return (true, io.into_inner());
        } else if cmd.starts_with("DATA") {
            io.write_all(b"354 go\r\n").await.unwrap();
            let mut data = String::new();
            loop {
                line.clear();
                if io.read_line(&mut line).await.unwrap_or(0) == 0 || line.trim_end() == "." {
                    break;
                }
                data.push_str(&line);
            }
            got.lock().unwrap().push((tls, data));
            io.write_all(b"250 queued\r\n").await.unwrap();
        } else if cmd.starts_with("QUIT") {
            io.write_all(b"221 bye\r\n").await.unwrap();
            return (false, io.into_inner());
        } else {
            io.write_all(b"250 ok\r\n").await.unwrap();
        }
    }
}

/// An SMTP relay on 127.0.0.1:0 that offers STARTTLS with a self-signed
/// certificate; the messages it got, each with whether it came over TLS.
async fn tls_relay() -> (
    std::net::SocketAddr,
    Arc<Mutex<Vec<(bool, String)>>>,
    tempfile::TempDir,
) {
    use rustls::pki_types::pem::PemObject;
    use rustls::pki_types::{CertificateDer, PrivateKeyDer};
    let dir = tempfile::tempdir().unwrap();
    let (cert, key) = snakeoil(dir.path());
    let certs = vec![CertificateDer::from_pem_slice(&cert).unwrap()];
    let key = PrivateKeyDer::from_pem_slice(&key).unwrap();
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let got = Arc::new(Mutex::new(Vec::new()));
    let kept = Arc::clone(&got);
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            let (acceptor, got) = (acceptor.clone(), Arc::clone(&kept));
            tokio::spawn(async move {
                let (starttls, stream) = smtp_session(stream, false, true, &got).await;
                if starttls {
                    if let Ok(tls) = acceptor.accept(stream).await {
                        smtp_session(tls, true, true, &got).await;
                    }
                }
            });
        }
    });
    (addr, got, dir)
}

/// Alerts use STARTTLS when the relay offers it (issue 64; `alerts.tls`,
/// Postfix's words): "may" (the default) and "encrypt" send over TLS to a
/// relay whose certificate is its own (self-signed, as Debian's snakeoil),
/// "verify" refuses that relay (nothing is sent in clear instead), and
/// "none" sends in clear. Before, alerts went in clear text always.
#[cfg_attr(
    not(bulkwatch_openssl),
    ignore = "needs openssl (apt-get install openssl)"
)]
#[tokio::test]
async fn alerts_use_starttls_as_the_setting_says() {
    use bulkwatch::config::AlertTls;
    let (addr, got, _dir) = tls_relay().await;
    let mut sent = Vec::new();
    for (tls, id) in [
        (AlertTls::May, 1),
        (AlertTls::Encrypt, 2),
        (AlertTls::Verify, 3),
        (AlertTls::None, 4),
    ] {
        let mut cfg = Config::default().alerts;
        assert_eq!(cfg.tls, AlertTls::May, "the default");
        cfg.to = vec!["postmaster@example.org".into()];
        cfg.from = "bulkwatch@example.org".into();
        cfg.smtp = addr.to_string();
        cfg.tls = tls;
        let counts = Arc::new(alert::Counts::default());
        let (tx, rx) = mpsc::channel(alert::QUEUE);
        tx.send(alert(id)).await.unwrap();
        drop(tx);
        let (_cfg_tx, cfg_rx) = tokio::sync::watch::channel(cfg);
        alert::run(cfg_rx, rx, None, None, Arc::clone(&counts)).await;
        sent.push(counts.sent.load(std::sync::atomic::Ordering::Relaxed));
    }
    assert_eq!(
        sent,
        [1, 1, 0, 1],
        "verify refuses a certificate of its own"
    );
    let got: Vec<(bool, bool)> = got
        .lock()
        .unwrap()
        .iter()
        .map(|(tls, mail)| (*tls, mail.contains("bulk campaign")))
        .collect();
    assert_eq!(got, [(true, true), (true, true), (false, true)]);
}
