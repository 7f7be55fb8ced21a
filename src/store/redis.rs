//! Connections to the Redis deployment a site shares: one server or a
//! Redis Cluster.
//!
//! Redis holds the log of the site's observations ([`super::stream`]);
//! every daemon applies it to its own engine, so the rule that links
//! messages into campaigns exists once, in Rust. Every key starts with
//! `{<key_prefix>:v<fingerprint version>}`: the braces are a Redis Cluster
//! hash tag, so all keys of one site live in one slot; a new fingerprint
//! version starts from fresh keys instead of misreading old ones.
//!
//! Connections are synchronous (the milter calls this from a blocking
//! task), with connect, read and write timeouts from TOML, and pooled: one
//! per round trip in flight, up to `pool_size` kept open. A failed
//! connection is dropped and the next call opens a new one, so the pool
//! reconnects by itself.
//!
//! A key of the prefix that holds a value of another type (`WRONGTYPE`)
//! would fail every call that reads it until someone deleted it: the log
//! deletes such a key and goes on as if it were missing, and the pool
//! counts and logs it ([`Pool::wrongtype_repairs`]).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use redis::{ConnectionLike, Value};

use crate::config::{Config, RedisConfig};
use crate::engine::simhash::VERSION;
use crate::store::StoreError;

/// Most key names remembered as logged ([`Pool::repaired`]): each
/// repaired key is logged once, up to this many.
const MAX_LOGGED_REPAIRS: usize = 1024;

/// One connection, to a server or to a cluster.
pub(crate) enum Conn {
    Single(redis::Connection),
    Cluster(Box<redis::cluster::ClusterConnection>),
}

impl Conn {
    pub(crate) fn like(&mut self) -> &mut dyn ConnectionLike {
        match self {
            Conn::Single(c) => c,
            Conn::Cluster(c) => c.as_mut(),
        }
    }

    /// Sends `cmds` in one round trip and returns their replies in order
    /// (a cluster connection needs its own pipeline type; every command
    /// here names keys of one hash tag, so one node answers them all).
    pub(crate) fn pipeline(&mut self, cmds: Vec<redis::Cmd>) -> redis::RedisResult<Vec<Value>> {
        match self {
            Conn::Single(c) => {
                let mut p = redis::pipe();
                for cmd in cmds {
                    p.add_command(cmd);
                }
                p.query(c)
            }
            Conn::Cluster(c) => {
                let mut p = redis::cluster::cluster_pipe();
                for cmd in cmds {
                    p.add_command(cmd);
                }
                p.query(c.as_mut())
            }
        }
    }
}

enum Target {
    Single(redis::Client),
    Cluster(redis::cluster::ClusterClient),
}

/// A pool of connections to one Redis deployment. `&self` methods may be
/// called from many threads at once.
pub struct Pool {
    target: Target,
    idle: Mutex<Vec<Conn>>,
    pool_size: usize,
    timeout: Duration,
    /// The key prefix, `{prefix:vN}`.
    base: String,
    /// The server's expiry setting was looked at (on the first connection).
    config_checked: AtomicBool,
    /// Keys deleted for holding a value of another type.
    wrongtype: AtomicU64,
    /// Names of those keys logged so far.
    logged: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for Pool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Pool")
            .field("base", &self.base)
            .field("pool_size", &self.pool_size)
            .finish()
    }
}

/// `CONFIG GET lazyfree-lazy-expire` on `conn`: `Ok(None)` on an error
/// reply or an answer of another shape; `Err` when the connection failed
/// or timed out and must not be used again (a late reply would be read as
/// the next command's).
fn lazy_expire_on(conn: &mut Conn) -> Result<Option<bool>, StoreError> {
    let v: Vec<String> = match redis::cmd("CONFIG")
        .arg("GET")
        .arg("lazyfree-lazy-expire")
        .query(conn.like())
    {
        Ok(v) => v,
        Err(e) if e.is_io_error() || e.is_timeout() || e.is_connection_dropped() => {
            return Err(err("config", e))
        }
        Err(_) => return Ok(None),
    };
    Ok(match v.get(1).map(String::as_str) {
        Some("yes") => Some(true),
        Some("no") => Some(false),
        _ => None,
    })
}

pub(crate) fn err(context: &'static str, source: redis::RedisError) -> StoreError {
    StoreError::Redis { context, source }
}

/// The CA that signs the servers' certificates, for `rediss://`
/// addresses when `store.redis.tls_ca_file` names one (else the system's
/// trusted roots check them).
fn tls_certificates(rc: &RedisConfig) -> Result<Option<redis::TlsCertificates>, StoreError> {
    if rc.tls_ca_file.is_empty() || !rc.urls.iter().any(|u| u.starts_with("rediss://")) {
        return Ok(None);
    }
    let pem = std::fs::read(&rc.tls_ca_file).map_err(|source| StoreError::CaFile {
        path: rc.tls_ca_file.clone().into(),
        source,
    })?;
    Ok(Some(redis::TlsCertificates {
        client_tls: None,
        root_cert: Some(pem),
    }))
}

/// The key prefix of a configuration: `{prefix:vN}`.
pub fn key_base(rc: &RedisConfig) -> String {
    format!("{{{}:v{}}}", rc.key_prefix, VERSION)
}

impl Pool {
    /// A pool for `cfg.store.redis`. Connects lazily: a Redis that is down
    /// at start is not an error here (the caller falls back per message).
    pub fn open(cfg: &Config) -> Result<Pool, StoreError> {
        let rc = &cfg.store.redis;
        let certs = tls_certificates(rc)?;
        let target = if rc.cluster {
            let mut builder = redis::cluster::ClusterClientBuilder::new(rc.urls.clone())
                .connection_timeout(rc.timeout)
                .response_timeout(rc.timeout)
                .retries(0);
            if let Some(c) = certs {
                builder = builder.certs(c);
            }
            Target::Cluster(builder.build().map_err(|e| err("cluster addresses", e))?)
        } else {
            let url = rc.urls.first().ok_or(StoreError::NoAddress)?;
            let client = match certs {
                Some(c) => redis::Client::build_with_tls(url.as_str(), c),
                None => redis::Client::open(url.as_str()),
            };
            Target::Single(client.map_err(|e| err("address", e))?)
        };
        Ok(Pool {
            target,
            idle: Mutex::new(Vec::new()),
            pool_size: rc.pool_size,
            timeout: rc.timeout,
            base: key_base(rc),
            config_checked: AtomicBool::new(false),
            wrongtype: AtomicU64::new(0),
            logged: Mutex::new(HashSet::new()),
        })
    }

    /// Whether Redis frees expired keys off its main thread
    /// (`lazyfree-lazy-expire`); `None` when it does not say (`CONFIG` may
    /// be renamed or denied on a managed Redis).
    pub fn lazy_expire(&self) -> Result<Option<bool>, StoreError> {
        let mut conn = self.take()?;
        let v = lazy_expire_on(&mut conn)?;
        self.give_back(conn);
        Ok(v)
    }

    /// The key prefix in use.
    pub fn key_base(&self) -> &str {
        &self.base
    }

    /// Keys of this prefix deleted because they held a value of another
    /// type than bulkwatch keeps there (`WRONGTYPE`): each
    /// would have failed every call until someone deleted it.
    pub fn wrongtype_repairs(&self) -> u64 {
        self.wrongtype.load(Ordering::Relaxed)
    }

    /// Counts a key deleted for holding another type, and logs it (once
    /// per key name).
    pub(crate) fn repaired(&self, key: &str) {
        self.wrongtype.fetch_add(1, Ordering::Relaxed);
        let first = self
            .logged
            .lock()
            .is_ok_and(|mut l| l.len() < MAX_LOGGED_REPAIRS && l.insert(key.to_owned()));
        if first {
            tracing::warn!(
                key,
                "redis: a key of bulkwatch's prefix held a value of another type \
                 (WRONGTYPE), or a log that takes no more entries (an entry with the \
                 largest id there is, written by someone else); deleted it, and the call \
                 went on without it"
            );
        }
    }

    fn connect(&self) -> Result<Conn, StoreError> {
        match &self.target {
            Target::Single(client) => {
                let c = client
                    .get_connection_with_timeout(self.timeout)
                    .map_err(|e| err("connect", e))?;
                c.set_read_timeout(Some(self.timeout))
                    .map_err(|e| err("connect", e))?;
                c.set_write_timeout(Some(self.timeout))
                    .map_err(|e| err("connect", e))?;
                Ok(Conn::Single(c))
            }
            Target::Cluster(client) => {
                let c = client.get_connection().map_err(|e| err("connect", e))?;
                c.set_read_timeout(Some(self.timeout))
                    .map_err(|e| err("connect", e))?;
                c.set_write_timeout(Some(self.timeout))
                    .map_err(|e| err("connect", e))?;
                Ok(Conn::Cluster(Box::new(c)))
            }
        }
    }

    /// A pooled connection, or a new one.
    pub(crate) fn take(&self) -> Result<Conn, StoreError> {
        let pooled = self.idle.lock().ok().and_then(|mut v| v.pop());
        match pooled {
            Some(c) => Ok(c),
            None => {
                let mut c = self.connect()?;
                if !self.config_checked.swap(true, Ordering::Relaxed) {
                    // Once per store, on its first connection.
                    if lazy_expire_on(&mut c)? == Some(false) {
                        tracing::warn!(
                            "redis: lazyfree-lazy-expire is off: a window slice (or the log) \
                             is one large key, and freeing it when it expires holds up every \
                             call meanwhile; set lazyfree-lazy-expire yes"
                        );
                    }
                }
                Ok(c)
            }
        }
    }

    /// Connections idle in the pool now.
    pub fn idle(&self) -> usize {
        self.idle.lock().map_or(0, |v| v.len())
    }

    /// Drops every idle connection. Called when a round trip fails: the
    /// others were opened to the same server (a master that died and
    /// whose replica took over, a Redis restarted), and each would fail
    /// one more message and keep the daemon off Redis for another
    /// `retry_secs`: with 8 pooled, 40 seconds of local verdicts after
    /// a Redis Cluster failover that took 4 (docs/admin/redis.md, "A
    /// compressed day"). Reconnecting costs one connect a connection.
    pub fn forget_idle(&self) -> usize {
        self.idle.lock().map_or(0, |mut v| {
            let n = v.len();
            v.clear();
            n
        })
    }

    /// Returns a connection whose last reply was read whole to the pool.
    pub(crate) fn give_back(&self, c: Conn) {
        if let Ok(mut v) = self.idle.lock() {
            if v.len() < self.pool_size {
                v.push(c);
            }
        }
    }

    /// Deletes every key of this pool's prefix (tests and `--fresh`
    /// replays). Not for production use: it scans the keyspace.
    pub fn clear(&self) -> Result<usize, StoreError> {
        let mut conn = self.take()?;
        let pattern = format!("{}*", glob_escape(&self.base));
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(&pattern)
            .query(conn.like())
            .map_err(|e| err("clear", e))?;
        for chunk in keys.chunks(500) {
            let _: () = redis::cmd("DEL")
                .arg(chunk)
                .query(conn.like())
                .map_err(|e| err("clear", e))?;
        }
        self.give_back(conn);
        Ok(keys.len())
    }

    /// `used_memory` and the number of keys of this prefix, for the
    /// memory-per-fingerprint measurement.
    pub fn memory_usage(&self) -> Result<(u64, usize), StoreError> {
        let mut conn = self.take()?;
        let info: String = redis::cmd("INFO")
            .arg("memory")
            .query(conn.like())
            .map_err(|e| err("info", e))?;
        let used = info
            .lines()
            .find_map(|l| l.strip_prefix("used_memory:"))
            .and_then(|v| v.trim().parse().ok())
            .unwrap_or(0);
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{}*", glob_escape(&self.base)))
            .query(conn.like())
            .map_err(|e| err("keys", e))?;
        self.give_back(conn);
        Ok((used, keys.len()))
    }
}

fn glob_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if matches!(c, '*' | '?' | '[' | ']' | '\\') {
            out.push('\\');
        }
        out.push(c);
    }
    out
}
