//! The Redis store: the window, exact set and campaign counts of several MX
//! hosts in one Redis server or Redis Cluster.
//!
//! One message is one `EVALSHA` of `record.lua` (one network round trip):
//! the script looks the fingerprint up, joins or merges campaigns and
//! records the message atomically, so every daemon sees the same campaign
//! ids and counts. The layout is described at the top of the script. Every
//! key starts with `{<key_prefix>:v<fingerprint version>}`: the braces are a
//! Redis Cluster hash tag, so all keys of one site live in one slot and the
//! script may touch any of them; a new fingerprint version starts from
//! fresh keys instead of misreading old ones. Keys expire with the window
//! (TTL), so Redis needs no cleanup job.
//!
//! Connections are synchronous (the milter calls this from a blocking
//! task), with connect, read and write timeouts from TOML, and pooled: one
//! per message in flight, up to `pool_size` kept open. A failed connection
//! is dropped and the next call opens a new one, so the store reconnects
//! by itself.
//!
//! A key of the prefix that holds a value of another type (`WRONGTYPE`)
//! would fail every call that reads it until someone deleted it: the
//! script deletes such a key and goes on as if it were missing (the log
//! layout does the same on its side), and the store counts and logs it
//! ([`RedisStore::wrongtype_repairs`]).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;
use std::time::Duration;

use redis::{ConnectionLike, Value};

use crate::config::{Config, RedisConfig};
use crate::engine::campaign::{secs32, CampaignId, Texts};
use crate::engine::simhash::VERSION;
use crate::engine::verdict::CampaignSummary;
use crate::engine::{NearMiss, Observation, Outcome, UnixSecs};
use crate::store::{BadReply, Store, StoreError};

/// Seconds a key outlives the window: room for clock differences between
/// hosts.
const TTL_MARGIN_SECS: u64 = 300;
/// Longest sample subject and sender name sent, in characters (as the
/// memory store keeps them).
const MAX_SUBJECT: usize = 120;
const MAX_NAME: usize = 100;

static SCRIPT: &str = include_str!("record.lua");

/// Most key names remembered as logged ([`RedisStore::repaired`]): each
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

/// What the script needs besides the message: fixed when the store opens
/// (the window settings need a restart to change, as for the memory store).
#[derive(Debug, Clone)]
struct Params {
    base: String,
    window_secs: u64,
    radius: u32,
    max_sketch_diff: u32,
    max_minhash_distance: u32,
    /// `window.corroborating_*`: least entries, sketch difference, distance.
    corroboration: (usize, u32, u32),
    keep_subjects: bool,
}

/// A pool of connections to one Redis deployment. `&self` methods may be
/// called from many threads at once.
pub struct RedisStore {
    target: Target,
    idle: Mutex<Vec<Conn>>,
    pool_size: usize,
    timeout: Duration,
    params: Params,
    script: redis::Script,
    /// The server's expiry setting was looked at (on the first connection).
    config_checked: AtomicBool,
    /// Keys deleted for holding a value of another type.
    wrongtype: AtomicU64,
    /// Names of those keys logged so far.
    logged: Mutex<HashSet<String>>,
}

impl std::fmt::Debug for RedisStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisStore")
            .field("base", &self.params.base)
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

/// The key prefix of a configuration: `{prefix:vN}`.
pub fn key_base(rc: &RedisConfig) -> String {
    format!("{{{}:v{}}}", rc.key_prefix, VERSION)
}

impl RedisStore {
    /// A store for `cfg.store.redis`. Connects lazily: a Redis that is down
    /// at start is not an error here (the caller falls back per message).
    pub fn open(cfg: &Config) -> Result<RedisStore, StoreError> {
        let rc = &cfg.store.redis;
        let target = if rc.cluster {
            let client = redis::cluster::ClusterClientBuilder::new(rc.urls.clone())
                .connection_timeout(rc.timeout)
                .response_timeout(rc.timeout)
                .retries(0)
                .build()
                .map_err(|e| err("cluster addresses", e))?;
            Target::Cluster(client)
        } else {
            let url = rc.urls.first().ok_or(StoreError::NoAddress)?;
            Target::Single(redis::Client::open(url.as_str()).map_err(|e| err("address", e))?)
        };
        Ok(RedisStore {
            target,
            idle: Mutex::new(Vec::new()),
            pool_size: rc.pool_size,
            timeout: rc.timeout,
            params: Params {
                base: key_base(rc),
                window_secs: cfg.window.window.as_secs(),
                radius: cfg.window.max_distance,
                max_sketch_diff: cfg.window.max_sketch_diff,
                max_minhash_distance: cfg.window.max_minhash_distance,
                corroboration: (
                    cfg.window.corroborating_matches,
                    cfg.window.corroborating_sketch_diff,
                    cfg.window.corroborating_distance,
                ),
                keep_subjects: cfg.campaign.keep_subjects,
            },
            script: redis::Script::new(SCRIPT),
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
        &self.params.base
    }

    /// Keys of this prefix deleted because they held a value of another
    /// type than bulkwatch keeps there (`WRONGTYPE`), both layouts: each
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
                 (WRONGTYPE); deleted it, and the call went on without it"
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

    /// Returns a connection whose last reply was read whole to the pool.
    pub(crate) fn give_back(&self, c: Conn) {
        if let Ok(mut v) = self.idle.lock() {
            if v.len() < self.pool_size {
                v.push(c);
            }
        }
    }

    /// Looks up and records one message (one round trip). On error the
    /// connection is dropped; the next call opens a new one.
    pub fn record_shared(&self, obs: &Observation, now: UnixSecs) -> Result<Outcome, StoreError> {
        let mut conn = self.take()?;
        let out = self.invoke(&mut conn, obs, now)?;
        self.give_back(conn);
        Ok(out)
    }

    /// Deletes every key of this store's prefix (tests and `--fresh`
    /// replays). Not for production use: it scans the keyspace.
    pub fn clear(&self) -> Result<usize, StoreError> {
        let mut conn = self.take()?;
        let pattern = format!("{}*", glob_escape(&self.params.base));
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
            .arg(format!("{}*", glob_escape(&self.params.base)))
            .query(conn.like())
            .map_err(|e| err("keys", e))?;
        self.give_back(conn);
        Ok((used, keys.len()))
    }

    fn invoke(
        &self,
        conn: &mut Conn,
        obs: &Observation,
        now: UnixSecs,
    ) -> Result<Outcome, StoreError> {
        let p = &self.params;
        let t = &obs.thresholds;
        let cutoff = now.0.saturating_sub(p.window_secs);
        let halves = |x: u64| [x >> 32, x & 0xFFFF_FFFF];
        let tables = block_keys(obs.simhash, p.radius);
        let weak_pct = obs.weak_weight_pct();
        let bulk_centi = (t.bulk_threshold * 100.0).ceil().max(0.0) as u64;
        let slice = slice_secs(p.window_secs);
        let mut inv = self.script.prepare_invoke();
        inv.key(format!("{}:s:{}", p.base, now.0 / slice))
            .arg(&p.base)
            .arg(now.0)
            .arg(cutoff)
            .arg(p.window_secs + TTL_MARGIN_SECS)
            .arg(p.radius)
            .arg(p.max_sketch_diff)
            .arg(p.max_minhash_distance)
            .arg(t.strong_distance)
            .arg(t.strong_sketch_diff)
            .arg(weak_pct)
            .arg(bulk_centi)
            .arg(if obs.near { "1" } else { "0" })
            .arg(crate::engine::simhash::hex(&obs.exact))
            .arg(CampaignId::from_exact(&obs.exact).to_string())
            .arg(obs.recipients)
            .arg(obs.sender)
            .arg(clip(obs.sender_name.as_deref(), MAX_NAME).replace('\n', " "))
            .arg(clip(obs.subject.as_deref(), MAX_SUBJECT))
            .arg(if p.keep_subjects { "1" } else { "0" });
        for h in halves(obs.simhash).into_iter().chain(halves(obs.sketch)) {
            inv.arg(h);
        }
        inv.arg(tables.len()).arg(obs.bands.len()).arg(slice);
        for t in &tables {
            inv.arg(t);
        }
        for b in &obs.bands {
            inv.arg(format!("{b:016x}"));
        }
        let (min, sd, d) = p.corroboration;
        inv.arg(min).arg(sd).arg(d);
        inv.arg(t.single_transaction_recipients);
        let v: Value = inv.invoke(conn.like()).map_err(|e| err("record", e))?;
        let (out, repaired) = parse_reply(v)?;
        for key in repaired {
            self.repaired(&key);
        }
        Ok(out)
    }
}

pub use crate::engine::Correction;

impl RedisStore {
    /// Applies `c` in Redis (the script layout): answers the live
    /// campaign's id, or `None` when no live campaign has that id.
    pub fn correct(&self, c: Correction, now: UnixSecs) -> Result<Option<CampaignId>, StoreError> {
        let mut inv = self.script.prepare_invoke();
        self.mode_args(&mut inv, now);
        match c {
            Correction::Allow { id, until } => inv.arg("allow").arg(id.to_string()).arg(until),
            Correction::Forget { id } => inv.arg("forget").arg(id.to_string()),
        };
        let mut conn = self.take()?;
        let v: Value = inv.invoke(conn.like()).map_err(|e| err("control", e))?;
        self.give_back(conn);
        let live = text(&v, "campaign")?;
        if live.is_empty() {
            return Ok(None);
        }
        campaign_id(&live).map(Some)
    }

    /// The site's `limit` largest live campaigns of two messages or more
    /// (the script layout), their counts brought up to `now`; forgotten
    /// ones left out. Sender domains are not counted, only named.
    pub fn site_campaigns(
        &self,
        now: UnixSecs,
        limit: usize,
    ) -> Result<Vec<crate::engine::campaign::Campaign>, StoreError> {
        let mut inv = self.script.prepare_invoke();
        self.mode_args(&mut inv, now);
        inv.arg("list").arg(limit);
        let mut conn = self.take()?;
        let v: Value = inv.invoke(conn.like()).map_err(|e| err("list", e))?;
        self.give_back(conn);
        parse_list(v, limit)
    }

    /// The arguments every request to the script starts with (KEYS[1]
    /// routes it to the site's slot in a cluster).
    fn mode_args(&self, inv: &mut redis::ScriptInvocation<'_>, now: UnixSecs) {
        let p = &self.params;
        let slice = slice_secs(p.window_secs);
        inv.key(format!("{}:s:{}", p.base, now.0 / slice))
            .arg(&p.base)
            .arg(now.0)
            .arg(now.0.saturating_sub(p.window_secs))
            .arg(p.window_secs + TTL_MARGIN_SECS);
    }
}

/// Fields per campaign of the script's `list` reply.
const LIST_FIELDS: usize = 10;

/// Reads the script's `list` reply (see [`RedisStore::site_campaigns`]).
fn parse_list(
    v: Value,
    limit: usize,
) -> Result<Vec<crate::engine::campaign::Campaign>, StoreError> {
    let Value::Array(f) = v else {
        return Err(BadReply::NotArray { what: "list reply" }.into());
    };
    if f.len() % LIST_FIELDS != 0 || f.len() / LIST_FIELDS > limit {
        return Err(BadReply::Fields {
            what: "list reply",
            got: f.len(),
            want: LIST_FIELDS * (f.len() / LIST_FIELDS).min(limit),
        }
        .into());
    }
    let num = |v: &Value, what: &str| int(v, what).map(|i| u64::try_from(i).unwrap_or(0));
    f.chunks(LIST_FIELDS)
        .map(|c| {
            let g = |i: usize| c.get(i).unwrap_or(&Value::Nil);
            let subject = text(g(7), "subject")?;
            let until = num(g(9), "allowed")?;
            Ok(crate::engine::campaign::Campaign {
                id: campaign_id(&text(g(0), "campaign")?)?,
                first_seen: secs32(num(g(1), "first")?),
                last_seen: secs32(num(g(2), "last")?),
                messages: u32::try_from(num(g(3), "messages")?).unwrap_or(u32::MAX),
                recipients: num(g(4), "recipients")?,
                score_centi: num(g(5), "score")?,
                // Only the count is in Redis: one entry per domain.
                senders: (0..num(g(6), "senders")?.min(64))
                    .map(|h| (h as u16, 1))
                    .collect(),
                texts: Texts::new(
                    (!subject.is_empty()).then_some(subject.as_str()),
                    text(g(8), "names")?.split('\n'),
                ),
                alerted: false,
                allowed_until: std::num::NonZeroU64::new(until),
            })
        })
        .collect()
}

impl Store for RedisStore {
    fn record(&mut self, obs: &Observation, now: UnixSecs) -> Result<Outcome, StoreError> {
        self.record_shared(obs, now)
    }
}

/// Seconds of one slice of the window (half a window, at least 1): a
/// lookup reads at most three slices, and a slice's keys outlive their
/// last use by at most one slice.
pub fn slice_secs(window_secs: u64) -> u64 {
    (window_secs / 2).max(1)
}

/// The first `n` characters of `s`, or "".
fn clip(s: Option<&str>, n: usize) -> String {
    s.map(|s| s.chars().take(n).collect()).unwrap_or_default()
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

/// Bucket names of the k+1 permuted block tables (Manku et al.): block i
/// of a simhash split into k+1 nearly equal bit ranges. Two simhashes
/// within distance k agree on at least one block, so looking in every
/// table finds them all.
pub fn block_keys(simhash: u64, k: u32) -> Vec<String> {
    let n = u64::from(k.min(63)) + 1;
    (0..n)
        .map(|i| {
            let start = i * 64 / n;
            let end = (i + 1) * 64 / n;
            let len = end - start;
            let mask = if len >= 64 {
                u64::MAX
            } else {
                (1u64 << len) - 1
            };
            format!("{i}:{:x}", (simhash >> start) & mask)
        })
        .collect()
}

fn int(v: &Value, what: &str) -> Result<i64, StoreError> {
    match v {
        Value::Int(i) => Ok(*i),
        Value::BulkString(b) => std::str::from_utf8(b)
            .ok()
            .and_then(|s| s.parse().ok())
            .ok_or_else(|| {
                BadReply::NotNumber {
                    field: what.to_owned(),
                }
                .into()
            }),
        _ => Err(BadReply::NotNumber {
            field: what.to_owned(),
        }
        .into()),
    }
}

fn text(v: &Value, what: &str) -> Result<String, StoreError> {
    match v {
        Value::BulkString(b) => Ok(String::from_utf8_lossy(b).into_owned()),
        Value::SimpleString(s) => Ok(s.clone()),
        Value::Int(i) => Ok(i.to_string()),
        _ => Err(BadReply::NotText {
            field: what.to_owned(),
        }
        .into()),
    }
}

fn opt_u32(i: i64) -> Option<u32> {
    u32::try_from(i).ok()
}

fn campaign_id(s: &str) -> Result<CampaignId, StoreError> {
    if s.len() != 12 {
        return Err(BadReply::CampaignId { id: s.to_owned() }.into());
    }
    u64::from_str_radix(s, 16)
        .map(CampaignId)
        .map_err(|_| BadReply::CampaignId { id: s.to_owned() }.into())
}

/// Reads the script's reply: the outcome, and the keys the script
/// deleted for holding another type. Anything unexpected is an error (the
/// caller falls back to the local verdict), never a panic.
fn parse_reply(v: Value) -> Result<(Outcome, Vec<String>), StoreError> {
    let Value::Array(mut f) = v else {
        return Err(BadReply::NotArray { what: "reply" }.into());
    };
    if f.len() != 24 {
        return Err(BadReply::Fields {
            what: "reply",
            got: f.len(),
            want: 24,
        }
        .into());
    }
    let repaired = match f.pop() {
        Some(Value::Array(keys)) => keys
            .iter()
            .map(|k| text(k, "repaired"))
            .collect::<Result<Vec<_>, _>>()?,
        _ => return Err(BadReply::NotList { field: "repaired" }.into()),
    };
    Ok((parse_outcome(f)?, repaired))
}

/// Reads the outcome, the reply's first 23 fields.
fn parse_outcome(f: Vec<Value>) -> Result<Outcome, StoreError> {
    let g = |i: usize| f.get(i).unwrap_or(&Value::Nil);
    let merged_text = text(g(15), "merged")?;
    let merged = merged_text
        .split(',')
        .filter(|s| !s.is_empty())
        .map(campaign_id)
        .collect::<Result<Vec<_>, _>>()?;
    let names = text(g(14), "names")?;
    let score_centi = int(g(10), "score")?.max(0);
    let campaign = CampaignSummary {
        id: campaign_id(&text(g(5), "campaign")?)?,
        first_seen: u64::try_from(int(g(6), "first")?).unwrap_or(0),
        last_seen: u64::try_from(int(g(7), "last")?).unwrap_or(0),
        messages: u32::try_from(int(g(8), "messages")?.max(0)).unwrap_or(u32::MAX),
        recipients: u64::try_from(int(g(9), "recipients")?).unwrap_or(0),
        score: score_centi as f64 / 100.0,
        sender_domains: usize::try_from(int(g(11), "senders")?).unwrap_or(0),
        sample_subject: (int(g(13), "has_subject")? == 1)
            .then(|| text(g(12), "subject"))
            .transpose()?,
        senders: names
            .split('\n')
            .filter(|s| !s.is_empty())
            .map(str::to_owned)
            .collect(),
    };
    Ok(Outcome {
        exact: int(g(0), "exact")? == 1,
        distance: opt_u32(int(g(1), "distance")?),
        sketch_diff: opt_u32(int(g(2), "sketch_diff")?),
        nearest: u64::try_from(int(g(3), "nearest")?).ok(),
        seq: u64::try_from(int(g(4), "seq")?).unwrap_or(0),
        merged,
        campaign: Some(campaign),
        newly_bulk: int(g(16), "newly_bulk")? == 1,
        corroborating: u32::try_from(int(g(17), "corroborating")?).unwrap_or(0),
        near_miss: near_miss(g(18), g(19), g(20), g(21))?,
        allowed: int(g(22), "allowed")? == 1,
    })
}

/// The near miss of a reply: campaign id ("" for none), distance, sketch
/// difference and sequence number.
fn near_miss(
    id: &Value,
    d: &Value,
    sd: &Value,
    seq: &Value,
) -> Result<Option<NearMiss>, StoreError> {
    let id = text(id, "near_campaign")?;
    if id.is_empty() {
        return Ok(None);
    }
    let field = |v: &Value, name: &str| -> Result<i64, StoreError> {
        let n = int(v, name)?;
        if n < 0 {
            return Err(BadReply::Negative {
                field: name.to_owned(),
            }
            .into());
        }
        Ok(n)
    };
    Ok(Some(NearMiss {
        campaign: campaign_id(&id)?,
        distance: u32::try_from(field(d, "near_distance")?).unwrap_or(u32::MAX),
        sketch_diff: u32::try_from(field(sd, "near_sketch_diff")?).unwrap_or(u32::MAX),
        seq: u64::try_from(field(seq, "near_seq")?).unwrap_or(0),
    }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn block_keys_cover_the_simhash_in_k_plus_one_blocks() {
        let k = block_keys(0x0123_4567_89ab_cdef, 3);
        assert_eq!(k, vec!["0:cdef", "1:89ab", "2:4567", "3:123"]);
        // Two simhashes within distance k share at least one block key.
        let a = 0xFFFF_0000_FFFF_0000u64;
        let b = a ^ 0x0001_0001_0001_0000;
        let (ka, kb) = (block_keys(a, 3), block_keys(b, 3));
        assert!(ka.iter().zip(&kb).any(|(x, y)| x == y));
        assert_eq!(block_keys(7, 4).len(), 5);
    }

    /// The script's bounds are the memory store's: both stores must find
    /// the same entries and campaigns.
    #[test]
    fn the_script_shares_the_memory_stores_bounds() {
        for (name, value) in [
            ("MAX_CHAIN", crate::engine::campaign::MAX_CHAIN),
            ("MAX_SCAN", crate::engine::index::tables::MAX_BUCKET_SCAN),
        ] {
            let line = format!("local {name} = {value}\n");
            assert!(SCRIPT.contains(&line), "record.lua lacks {line:?}");
        }
    }

    #[test]
    fn malformed_replies_are_errors() {
        assert!(parse_reply(Value::Nil).is_err());
        assert!(parse_reply(Value::Array(vec![Value::Int(1); 3])).is_err());
        let mut f = vec![Value::Int(0); 24];
        f[5] = Value::BulkString(b"zz".to_vec());
        f[23] = Value::Array(Vec::new());
        assert!(parse_reply(Value::Array(f)).is_err());
        // A well-formed outcome, but the repaired keys are not a list.
        let mut f = vec![Value::Int(0); 24];
        f[5] = Value::BulkString(b"000000000001".to_vec());
        for i in [12, 14, 15, 18] {
            f[i] = Value::BulkString(Vec::new());
        }
        let mut ok = f.clone();
        ok[23] = Value::Array(Vec::new());
        assert!(parse_reply(Value::Array(ok.clone())).is_ok());
        assert!(parse_reply(Value::Array(f)).is_err());
        // A near miss with a negative distance is refused.
        ok[18] = Value::BulkString(b"000000000002".to_vec());
        ok[19] = Value::Int(-1);
        assert!(parse_reply(Value::Array(ok)).is_err());
    }

    #[test]
    fn a_well_formed_reply_is_read() {
        let s = |x: &str| Value::BulkString(x.as_bytes().to_vec());
        let f = vec![
            Value::Int(0),
            Value::Int(2),
            Value::Int(3),
            Value::Int(7),
            Value::Int(9),
            s("00000000abcd"),
            Value::Int(100),
            Value::Int(160),
            Value::Int(4),
            Value::Int(5),
            Value::Int(450),
            Value::Int(1),
            s("Hello"),
            Value::Int(1),
            s("a.example\nb.example"),
            s("000000000001,000000000002"),
            Value::Int(1),
            Value::Int(3),
            s("0000000000ef"),
            Value::Int(9),
            Value::Int(7),
            Value::Int(4),
            Value::Int(1),
            Value::Array(vec![s("{p:v2}:s:1")]),
        ];
        let (o, repaired) = parse_reply(Value::Array(f)).unwrap();
        assert_eq!(repaired, vec!["{p:v2}:s:1"]);
        assert_eq!(o.distance, Some(2));
        assert_eq!(o.nearest, Some(7));
        assert_eq!(o.merged, vec![CampaignId(1), CampaignId(2)]);
        let c = o.campaign.unwrap();
        assert_eq!(c.id, CampaignId(0xabcd));
        assert_eq!(c.score, 4.5);
        assert_eq!(c.senders.len(), 2);
        assert_eq!(c.sample_subject.as_deref(), Some("Hello"));
        assert!(o.newly_bulk);
        assert_eq!(o.corroborating, 3);
        assert!(o.allowed);
        let miss = o.near_miss.unwrap();
        assert_eq!(
            (miss.campaign, miss.distance, miss.sketch_diff, miss.seq),
            (CampaignId(0xef), 9, 7, 4)
        );
    }
}
