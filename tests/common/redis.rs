//! Private Redis servers for tests: `redis-server` on free loopback ports,
//! no persistence, stopped (killed and reaped) on drop.
//!
//! Tests that use them are ignored, with the reason, where `redis-server`
//! is not installed (`build.rs` sets `bulkwatch_redis`).

use std::net::TcpListener;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use bulkwatch::config::Config;
use bulkwatch::engine::verdict::Verdict;
use bulkwatch::engine::{analyze, observe, verdict_of, Envelope, UnixSecs};
use bulkwatch::replay::REPLAY_EPOCH;
use bulkwatch::store::{RedisLayer, RedisResult};

/// Spam message `n` ([`super::spam_bytes`]) to one person of its own,
/// judged through `layer` at `REPLAY_EPOCH + n` (Redis must answer).
pub fn judged_on(layer: &RedisLayer, cfg: &Config, n: u32) -> Verdict {
    let env = Envelope {
        rcpts: vec![format!("r{n}@example.net")],
        ..Envelope::default()
    };
    let an = analyze(&super::spam_bytes(n), &env, cfg);
    let obs = observe(cfg, &an, &env).unwrap();
    let now = UnixSecs(REPLAY_EPOCH + u64::from(n));
    let out = match layer.record(&obs, now) {
        RedisResult::Judged(out) => out,
        other => panic!("redis did not judge message {n}: {other:?}"),
    };
    verdict_of(cfg, &obs, out)
}

/// A free loopback port (and, for cluster nodes, its bus port + 10000).
pub fn free_port(with_bus: bool) -> u16 {
    loop {
        let l = TcpListener::bind("127.0.0.1:0").unwrap();
        let port = l.local_addr().unwrap().port();
        if !with_bus {
            return port;
        }
        if port < 55000 && TcpListener::bind(("127.0.0.1", port + 10000)).is_ok() {
            return port;
        }
    }
}

pub struct RedisServer {
    pub port: u16,
    child: Option<Child>,
    dir: tempfile::TempDir,
    extra: Vec<String>,
    /// The certificates of a TLS server ([`RedisServer::start_tls`]).
    certs: Option<tempfile::TempDir>,
}

impl RedisServer {
    pub fn start() -> RedisServer {
        Self::start_with(free_port(false), Vec::new())
    }

    fn start_with(port: u16, extra: Vec<String>) -> RedisServer {
        let dir = tempfile::tempdir().unwrap();
        let mut s = RedisServer {
            port,
            child: None,
            dir,
            extra,
            certs: None,
        };
        s.spawn();
        s
    }

    fn spawn(&mut self) {
        let child = Command::new("redis-server")
            .args(["--port", &self.port.to_string()])
            .args(["--bind", "127.0.0.1", "--save", "", "--appendonly", "no"])
            .args(["--protected-mode", "no", "--loglevel", "warning"])
            .arg("--dir")
            .arg(self.dir.path())
            .args(&self.extra)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        self.child = Some(child);
        wait_for(
            || self.cli(&["PING"]).is_some_and(|o| o.contains("PONG")),
            "redis PING",
        );
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/0", self.port)
    }

    /// A server that also takes TLS connections, on `tls_port`, with a
    /// certificate for 127.0.0.1 signed by a CA made for it (`ca.pem` in
    /// its directory; `other-ca.pem` is a CA that did not sign it). Made
    /// with the `openssl` command.
    pub fn start_tls() -> (RedisServer, u16) {
        let dir = tempfile::tempdir().unwrap();
        let d = dir.path();
        let openssl = |args: &[&str]| {
            let ok = Command::new("openssl")
                .args(args)
                .current_dir(d)
                .stdout(Stdio::null())
                .stderr(Stdio::null())
                .status()
                .unwrap()
                .success();
            assert!(ok, "openssl {args:?}");
        };
        for ca in ["ca", "other-ca"] {
            openssl(&[
                "req",
                "-x509",
                "-newkey",
                "rsa:2048",
                "-nodes",
                "-days",
                "2",
                "-subj",
                &format!("/CN=bulkwatch test {ca}"),
                "-keyout",
                &format!("{ca}.key"),
                "-out",
                &format!("{ca}.pem"),
            ]);
        }
        openssl(&[
            "req",
            "-newkey",
            "rsa:2048",
            "-nodes",
            "-subj",
            "/CN=127.0.0.1",
            "-keyout",
            "server.key",
            "-out",
            "server.csr",
        ]);
        std::fs::write(d.join("ext.cnf"), "subjectAltName=IP:127.0.0.1\n").unwrap();
        openssl(&[
            "x509",
            "-req",
            "-in",
            "server.csr",
            "-CA",
            "ca.pem",
            "-CAkey",
            "ca.key",
            "-CAcreateserial",
            "-days",
            "2",
            "-extfile",
            "ext.cnf",
            "-out",
            "server.pem",
        ]);
        let tls_port = free_port(false);
        let at = |f: &str| d.join(f).display().to_string();
        let extra = vec![
            "--tls-port".to_owned(),
            tls_port.to_string(),
            "--tls-cert-file".to_owned(),
            at("server.pem"),
            "--tls-key-file".to_owned(),
            at("server.key"),
            "--tls-ca-cert-file".to_owned(),
            at("ca.pem"),
            "--tls-auth-clients".to_owned(),
            "no".to_owned(),
        ];
        let mut s = Self::start_with(free_port(false), extra);
        s.certs = Some(dir);
        (s, tls_port)
    }

    /// A file of a TLS server's certificates ([`RedisServer::start_tls`]).
    pub fn cert(&self, name: &str) -> PathBuf {
        self.certs.as_ref().expect("a TLS server").path().join(name)
    }

    /// Runs redis-cli against this server; its stdout, if it succeeded.
    pub fn cli(&self, args: &[&str]) -> Option<String> {
        cli(self.port, args)
    }

    /// Kills the server (SIGKILL): an outage, not a shutdown.
    pub fn kill(&mut self) {
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
    }

    /// Starts it again on the same port (empty: no persistence).
    pub fn restart(&mut self) {
        self.kill();
        self.spawn();
    }

    pub fn dir(&self) -> PathBuf {
        self.dir.path().to_owned()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
    }
}

pub fn cli(port: u16, args: &[&str]) -> Option<String> {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string()])
        .args(args)
        .stderr(Stdio::null())
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Waits (bounded) for a condition that the server reports itself.
pub fn wait_for(mut f: impl FnMut() -> bool, what: &str) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !f() {
        assert!(Instant::now() < deadline, "gave up waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A 3-node Redis Cluster (masters only) on loopback.
pub struct RedisCluster {
    pub nodes: Vec<RedisServer>,
}

impl RedisCluster {
    pub fn start() -> RedisCluster {
        let mut nodes = Vec::new();
        while nodes.len() < 3 {
            let port = free_port(true);
            if nodes.iter().any(|n: &RedisServer| n.port == port) {
                continue;
            }
            let conf = format!("nodes-{port}.conf");
            nodes.push(RedisServer::start_with(
                port,
                vec![
                    "--cluster-enabled".into(),
                    "yes".into(),
                    "--cluster-config-file".into(),
                    conf,
                ],
            ));
        }
        let addrs: Vec<String> = nodes
            .iter()
            .map(|n| format!("127.0.0.1:{}", n.port))
            .collect();
        let mut args: Vec<&str> = vec!["--cluster", "create"];
        args.extend(addrs.iter().map(String::as_str));
        args.extend(["--cluster-replicas", "0", "--cluster-yes"]);
        let created = nodes[0].cli(&args);
        assert!(created.is_some(), "redis-cli --cluster create failed");
        for n in &nodes {
            wait_for(
                || {
                    n.cli(&["CLUSTER", "INFO"])
                        .is_some_and(|o| o.contains("cluster_state:ok"))
                },
                "cluster_state:ok",
            );
        }
        RedisCluster { nodes }
    }

    pub fn urls(&self) -> Vec<String> {
        self.nodes.iter().map(RedisServer::url).collect()
    }
}
