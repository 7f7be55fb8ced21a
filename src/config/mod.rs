//! Configuration: TOML in, validated [`Config`] out.
//!
//! Two stages, as in ripgrep's `LowArgs` -> `HiArgs`: [`raw::RawConfig`] is
//! the file as written (every key optional, unknown keys refused), and
//! [`Config::from_raw`] turns it into the validated form one section at a
//! time: each section's `TryFrom<RawXxx>` fills in that section's defaults,
//! checks its ranges and the rules between its own keys, and names the
//! offending key path in every error. No rule spans two sections. The
//! defaults live in one place, each section's `Default` impl;
//! `config/bulkwatch.toml` shows the same values and a test keeps the two
//! equal.
//!
//! This module reads files only in [`Config::load`]; everything else is pure.

mod error;
pub mod raw;

pub use error::ConfigError;

use ipnet::IpNet;
use std::net::IpAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use raw::{
    RawAlerts, RawAllow, RawCampaign, RawConfig, RawExact, RawFingerprint, RawMetrics, RawMilter,
    RawNormalize, RawPolicy, RawRedis, RawScan, RawState, RawStore, RawThresholds, RawWindow,
};

/// The default 128-bit key of the shingle hash, as 32 hex digits: the ASCII
/// bytes of `bulkwatch-fp-v1!`. Every host of a site must use the same key,
/// or their fingerprints will not match.
pub const DEFAULT_HASH_KEY: &str = "62756c6b77617463682d66702d763121";

/// The whole validated configuration.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Config {
    pub scan: ScanConfig,
    pub normalize: NormalizeConfig,
    pub fingerprint: FingerprintConfig,
    pub window: WindowConfig,
    pub exact: ExactConfig,
    pub campaign: CampaignConfig,
    pub thresholds: Thresholds,
    pub allow: AllowConfig,
    pub milter: MilterConfig,
    pub policy: PolicyConfig,
    pub state: StateConfig,
    pub metrics: MetricsConfig,
    pub alerts: AlertsConfig,
    pub store: StoreConfig,
}

/// Bounds on how much of a message the engine looks at.
#[derive(Debug, Clone, PartialEq)]
pub struct ScanConfig {
    /// Decoded text kept for fingerprinting, in bytes; the rest is ignored.
    pub max_scan_bytes: usize,
    /// Raw message bytes handed to the MIME parser; a longer message is cut.
    pub max_parse_bytes: usize,
}

/// Which normalization steps run (each one can be switched off).
#[derive(Debug, Clone, PartialEq)]
pub struct NormalizeConfig {
    pub nfkc: bool,
    pub case_fold: bool,
    pub strip_markup: bool,
    pub urls_to_host: bool,
    pub fold_digits: bool,
    pub drop_random_tokens: bool,
    pub strip_greetings: bool,
    pub strip_recipient: bool,
    pub strip_quotes: bool,
    pub strip_signatures: bool,
    pub stop_words: bool,
}

/// How features and fingerprints are computed. Changing any of these
/// changes every fingerprint: all hosts of a site must agree.
#[derive(Debug, Clone, PartialEq)]
pub struct FingerprintConfig {
    pub shingle_words: usize,
    /// Key of the fingerprint hashes (k0, k1), little-endian halves of the
    /// 16 key bytes: tokens are hashed with XXH3 seeded by `k0 ^ mix(k1)`
    /// (`shingle::token_seed`), MinHash seeds come from both halves.
    pub hash_key: (u64, u64),
    /// Keep only shingle hashes that are 0 mod m (1 keeps all).
    pub sample_modulus: u64,
    /// Fewer shingles than this: the message takes no part in near matching.
    pub min_features: usize,
    pub include_subject: bool,
}

/// The sliding window of recent fingerprints.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowConfig {
    pub window: Duration,
    pub max_entries: usize,
    /// Near-duplicate radius k: fingerprints within this Hamming distance match.
    pub max_distance: u32,
    /// MinHash LSH band tables (0 turns the second stage off).
    pub minhash_bands: usize,
    /// A band candidate matches when at most this many of its 32 sketch
    /// values differ (8 ≈ estimated Jaccard 0.67).
    pub max_sketch_diff: u32,
    /// ... and when its simhash is at most this far (two long texts can
    /// share most of their vocabulary and nothing else).
    pub max_minhash_distance: u32,
    /// A message that matches no entry joins a campaign when at least this
    /// many distinct texts (MinHash sketches) of it corroborate it (0:
    /// off): band candidates within the two bounds below. Heavy hash-busting leaves some members of a
    /// campaign just outside the match bounds of every other member, where
    /// together they still say which campaign it is.
    pub corroborating_matches: usize,
    /// Most differing sketch values of a corroborating entry.
    pub corroborating_sketch_diff: u32,
    /// Farthest simhash of a corroborating entry.
    pub corroborating_distance: u32,
}

/// The exact-hash set: rotating Bloom filters plus an LRU to the campaign.
#[derive(Debug, Clone, PartialEq)]
pub struct ExactConfig {
    pub bloom_items: usize,
    pub bloom_fp_rate: f64,
    pub generations: usize,
    pub lru_capacity: usize,
}

/// The most memory the exact set's Bloom filters may take, all generations
/// together (a typo such as `bloom_fp_rate = 1e-300` must not abort the
/// daemon on allocation).
pub const MAX_BLOOM_BYTES: u64 = 4 << 30;

impl ExactConfig {
    /// Bytes the Bloom filters take, all generations together: each of the
    /// `generations` filters holds `bloom_items / (generations - 1)` items
    /// at `bloom_fp_rate` (`-ln p / ln² 2` bits per item, as `ExactSet`
    /// sizes them).
    pub fn bloom_bytes(&self) -> u64 {
        let slices = self.generations.saturating_sub(1).max(1);
        let per_gen = (self.bloom_items / slices).max(16) as f64;
        let bits_per_item = -self.bloom_fp_rate.ln() / (std::f64::consts::LN_2.powi(2));
        let bytes = per_gen * bits_per_item / 8.0 * self.generations.max(2) as f64;
        if bytes.is_finite() && bytes < u64::MAX as f64 {
            bytes.ceil() as u64
        } else {
            u64::MAX
        }
    }
}

/// Campaign bookkeeping.
#[derive(Debug, Clone, PartialEq)]
pub struct CampaignConfig {
    /// Keep a sample subject per campaign (shown in logs, alerts, /campaigns).
    pub keep_subjects: bool,
}

/// When a campaign is suspect or bulk.
#[derive(Debug, Clone, PartialEq)]
pub struct Thresholds {
    /// Weighted recipients at which a campaign is bulk.
    pub bulk_threshold: f64,
    /// Weighted recipients at which a campaign is suspect.
    pub suspect_threshold: f64,
    /// Near matches at this distance or less count in full.
    pub strong_distance: u32,
    /// Matches whose sketch differs in at most this many values count in full.
    pub strong_sketch_diff: u32,
    /// Weight of a near match farther than `strong_distance`.
    pub weak_match_weight: f64,
}

/// Mail that is never judged: solicited bulk, trusted relays, own users.
#[derive(Debug, Clone, PartialEq)]
pub struct AllowConfig {
    /// Lower-case domains; a subdomain matches too.
    pub sender_domains: Vec<String>,
    pub client_networks: Vec<IpNet>,
    /// Mail from SMTP-authenticated clients (`{auth_authen}` set) is allowed.
    pub authenticated: bool,
}

/// Where and how the milter listens.
#[derive(Debug, Clone, PartialEq)]
pub enum SocketSpec {
    Inet(String),
    Unix(PathBuf),
}

/// What the milter does for a verdict level.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing at all.
    None,
    /// Add the X-Bulkwatch header.
    Tag,
    /// Tag and hold in Postfix's hold queue.
    Quarantine,
    /// 550 5.7.1.
    Reject,
    /// 451 4.7.1.
    Tempfail,
    /// Accept and drop silently.
    Discard,
}

impl Action {
    fn parse(key: &str, s: &str) -> Result<Self, ConfigError> {
        Ok(match s {
            "none" => Action::None,
            "tag" => Action::Tag,
            "quarantine" => Action::Quarantine,
            "reject" => Action::Reject,
            "tempfail" => Action::Tempfail,
            "discard" => Action::Discard,
            other => {
                return Err(ConfigError::invalid(
                    key,
                    format!(
                        "`{other}` is not one of none, tag, quarantine, reject, tempfail, discard"
                    ),
                ))
            }
        })
    }

    /// The name used in TOML.
    pub fn as_str(self) -> &'static str {
        match self {
            Action::None => "none",
            Action::Tag => "tag",
            Action::Quarantine => "quarantine",
            Action::Reject => "reject",
            Action::Tempfail => "tempfail",
            Action::Discard => "discard",
        }
    }
}

/// What to do when the engine fails or times out.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FailureAction {
    Accept,
    Tempfail,
}

/// The milter adapter's settings.
#[derive(Debug, Clone, PartialEq)]
pub struct MilterConfig {
    pub socket: SocketSpec,
    pub socket_owner: Option<String>,
    pub socket_group: Option<String>,
    pub socket_mode: u32,
    pub max_message_bytes: usize,
    pub max_connections: usize,
    /// A connection that sends no complete milter message for this long is
    /// closed (Postfix's own timeouts are shorter: `smtpd_timeout` 300 s).
    pub idle_timeout: Duration,
    pub engine_timeout: Duration,
    pub failure_action: FailureAction,
    pub reject_text: String,
    pub tempfail_text: String,
}

/// Action per verdict level.
#[derive(Debug, Clone, PartialEq)]
pub struct PolicyConfig {
    pub suspect: Action,
    pub bulk: Action,
}

/// Persistence of the in-memory state.
#[derive(Debug, Clone, PartialEq)]
pub struct StateConfig {
    pub state_dir: PathBuf,
    pub snapshot_interval: Duration,
}

/// Prometheus text metrics and the /campaigns endpoint.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricsConfig {
    /// `None`: no metrics listener.
    pub listen: Option<String>,
}

/// Mail alerts when a campaign first turns bulk.
#[derive(Debug, Clone, PartialEq)]
pub struct AlertsConfig {
    pub to: Vec<String>,
    pub from: String,
    /// `host:port` of an SMTP relay that accepts mail without authentication.
    pub smtp: String,
    pub min_interval: Duration,
}

/// Which store holds the shared state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreBackend {
    /// This host's memory (with the snapshot file): the default.
    Memory,
    /// A Redis server or cluster shared by several MX hosts, with the
    /// memory store as the local fallback.
    Redis,
}

/// How the Redis store divides the work (`store.redis.layout`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisLayout {
    /// Redis holds the window and the campaigns; a Lua script looks each
    /// message up and records it (the default).
    Script,
    /// Redis holds a log of the site's observations; each daemon applies
    /// it in order to its own engine, a replica, and looks up there.
    Log,
}

#[derive(Debug, Clone, PartialEq)]
pub struct StoreConfig {
    pub backend: StoreBackend,
    pub redis: RedisConfig,
}

/// `[store.redis]`: where the shared state lives and how long to wait for it.
#[derive(Debug, Clone, PartialEq)]
pub struct RedisConfig {
    /// `redis://host:port/db` of one server, or seed nodes of a cluster.
    pub urls: Vec<String>,
    pub cluster: bool,
    /// Prefix of every key (several sites or tests can share one Redis).
    pub key_prefix: String,
    /// Connect, read and write timeout; beyond it the message is judged
    /// from the local window.
    pub timeout: Duration,
    /// Connections kept open (one per message in flight); with the log
    /// layout also the most round trips out at once.
    pub pool_size: usize,
    /// After a failure, how long messages are judged locally before Redis
    /// is tried again.
    pub retry_interval: Duration,
    pub layout: RedisLayout,
}

impl Default for ScanConfig {
    fn default() -> Self {
        ScanConfig {
            max_scan_bytes: 256 * 1024,
            max_parse_bytes: 8 * 1024 * 1024,
        }
    }
}

impl Default for NormalizeConfig {
    fn default() -> Self {
        NormalizeConfig {
            nfkc: true,
            case_fold: true,
            strip_markup: true,
            urls_to_host: true,
            fold_digits: true,
            drop_random_tokens: true,
            strip_greetings: true,
            strip_recipient: true,
            strip_quotes: true,
            strip_signatures: true,
            stop_words: false,
        }
    }
}

impl Default for FingerprintConfig {
    fn default() -> Self {
        FingerprintConfig {
            shingle_words: 2,
            hash_key: parse_hash_key(DEFAULT_HASH_KEY).unwrap_or((0, 0)),
            sample_modulus: 1,
            min_features: 8,
            include_subject: false,
        }
    }
}

impl Default for WindowConfig {
    fn default() -> Self {
        WindowConfig {
            window: Duration::from_secs(6 * 3600),
            max_entries: 1_000_000,
            max_distance: 3,
            minhash_bands: 4,
            max_sketch_diff: 8,
            max_minhash_distance: 16,
            corroborating_matches: 3,
            corroborating_sketch_diff: 10,
            corroborating_distance: 20,
        }
    }
}

impl Default for ExactConfig {
    fn default() -> Self {
        ExactConfig {
            bloom_items: 1_000_000,
            bloom_fp_rate: 0.001,
            generations: 4,
            lru_capacity: 100_000,
        }
    }
}

impl Default for CampaignConfig {
    fn default() -> Self {
        CampaignConfig {
            keep_subjects: true,
        }
    }
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            bulk_threshold: 20.0,
            suspect_threshold: 5.0,
            strong_distance: 2,
            strong_sketch_diff: 5,
            weak_match_weight: 0.5,
        }
    }
}

impl Default for AllowConfig {
    fn default() -> Self {
        AllowConfig {
            sender_domains: Vec::new(),
            client_networks: Vec::new(),
            authenticated: true,
        }
    }
}

impl Default for MilterConfig {
    fn default() -> Self {
        MilterConfig {
            socket: SocketSpec::Inet("127.0.0.1:7357".to_owned()),
            socket_owner: None,
            socket_group: None,
            socket_mode: 0o660,
            max_message_bytes: 1024 * 1024,
            max_connections: 256,
            idle_timeout: Duration::from_secs(330),
            engine_timeout: Duration::from_millis(2000),
            failure_action: FailureAction::Accept,
            reject_text: "Message rejected as bulk mail".to_owned(),
            tempfail_text: "Message deferred, try again later".to_owned(),
        }
    }
}

impl Default for PolicyConfig {
    fn default() -> Self {
        PolicyConfig {
            suspect: Action::Tag,
            bulk: Action::Tag,
        }
    }
}

impl Default for StateConfig {
    fn default() -> Self {
        StateConfig {
            state_dir: PathBuf::from("state"),
            snapshot_interval: Duration::from_secs(300),
        }
    }
}

impl Default for MetricsConfig {
    fn default() -> Self {
        MetricsConfig {
            listen: Some("127.0.0.1:9357".to_owned()),
        }
    }
}

impl Default for AlertsConfig {
    fn default() -> Self {
        AlertsConfig {
            to: Vec::new(),
            from: "bulkwatch@localhost".to_owned(),
            smtp: "127.0.0.1:25".to_owned(),
            min_interval: Duration::from_secs(600),
        }
    }
}

impl Default for StoreConfig {
    fn default() -> Self {
        StoreConfig {
            backend: StoreBackend::Memory,
            redis: RedisConfig::default(),
        }
    }
}

impl Default for RedisConfig {
    fn default() -> Self {
        RedisConfig {
            urls: vec!["redis://127.0.0.1:6379/0".to_owned()],
            cluster: false,
            key_prefix: "bulkwatch".to_owned(),
            timeout: Duration::from_millis(50),
            pool_size: 8,
            retry_interval: Duration::from_secs(5),
            layout: RedisLayout::Script,
        }
    }
}

/// Parses 32 hex digits into the two key halves.
fn parse_hash_key(s: &str) -> Option<(u64, u64)> {
    let s = s.trim();
    if s.len() != 32 || !s.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let mut bytes = [0u8; 16];
    for (i, byte) in bytes.iter_mut().enumerate() {
        *byte = u8::from_str_radix(s.get(2 * i..2 * i + 2)?, 16).ok()?;
    }
    let (a, b) = bytes.split_at(8);
    Some((
        u64::from_le_bytes(a.try_into().ok()?),
        u64::from_le_bytes(b.try_into().ok()?),
    ))
}

/// An alert address must be one a mail can be sent to: checked when the
/// configuration is loaded (so check-config refuses it), not when the first
/// alert fails. lettre's parser (RFC 5322 mailbox, optional display name)
/// refuses CR, LF and anything else that is no address.
fn mailbox(key: &str, v: &str) -> Result<(), ConfigError> {
    if v.contains(['\r', '\n']) {
        return Err(ConfigError::invalid(key, "contains a line break"));
    }
    v.parse::<lettre::message::Mailbox>()
        .map(|_| ())
        .map_err(|e| ConfigError::invalid(key, format!("`{v}` is not a mail address ({e})")))
}

fn in_range<T: PartialOrd + std::fmt::Display + Copy>(
    key: &str,
    v: T,
    lo: T,
    hi: T,
) -> Result<T, ConfigError> {
    // `contains`, not `v < lo || v > hi`: NaN (TOML has `nan`) is in no range.
    if !(lo..=hi).contains(&v) {
        Err(ConfigError::invalid(
            key,
            format!("{v} is outside {lo}..={hi}"),
        ))
    } else {
        Ok(v)
    }
}

fn to_usize(key: &str, v: u64, lo: u64, hi: u64) -> Result<usize, ConfigError> {
    let v = in_range(key, v, lo, hi)?;
    usize::try_from(v).map_err(|_| ConfigError::invalid(key, "too large for this platform"))
}

/// Parses `inet:HOST:PORT`, `inet:PORT@HOST` (sendmail style) or `unix:/path`.
pub fn parse_socket(key: &str, s: &str) -> Result<SocketSpec, ConfigError> {
    if let Some(path) = s.strip_prefix("unix:") {
        if !path.starts_with('/') {
            return Err(ConfigError::invalid(
                key,
                "a unix socket path must be absolute",
            ));
        }
        return Ok(SocketSpec::Unix(PathBuf::from(path)));
    }
    if let Some(rest) = s.strip_prefix("inet:").or_else(|| s.strip_prefix("inet6:")) {
        let addr = match rest.split_once('@') {
            Some((port, host)) => format!("{host}:{port}"),
            None => rest.to_owned(),
        };
        let port_ok = addr
            .rsplit_once(':')
            .map(|(_, p)| p.parse::<u16>().is_ok())
            .unwrap_or(false);
        if !port_ok {
            return Err(ConfigError::invalid(
                key,
                format!("`{s}` has no valid port"),
            ));
        }
        return Ok(SocketSpec::Inet(addr));
    }
    Err(ConfigError::invalid(
        key,
        format!("`{s}` must start with inet: or unix:"),
    ))
}

impl Config {
    /// Reads and validates a TOML file.
    ///
    /// # Errors
    /// [`ConfigError::Read`] when the file cannot be read; `Parse` or
    /// `Invalid` naming the file and the key otherwise.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
            path: path.to_owned(),
            source,
        })?;
        Config::from_toml_str(&text).map_err(|e| e.with_origin(&path.display().to_string()))
    }

    /// Parses and validates TOML text.
    ///
    /// # Errors
    /// `Parse` for bad TOML or unknown keys, `Invalid` for bad values.
    pub fn from_toml_str(text: &str) -> Result<Config, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|e| ConfigError::Parse {
            origin: "config".to_owned(),
            message: e.to_string(),
        })?;
        Config::from_raw(raw).map_err(|e| e.with_origin("config"))
    }

    /// Fills defaults and validates, one section at a time in file order
    /// (each section's `TryFrom` holds its defaults and rules).
    ///
    /// # Errors
    /// `Invalid` naming the first bad key.
    pub fn from_raw(raw: RawConfig) -> Result<Config, ConfigError> {
        // No rule looks at two sections at once, so nothing is checked here
        // beyond the sections themselves. Fields are evaluated in the order
        // written: the first bad section is the one reported.
        Ok(Config {
            scan: raw.scan.unwrap_or_default().try_into()?,
            normalize: raw.normalize.unwrap_or_default().into(),
            fingerprint: raw.fingerprint.unwrap_or_default().try_into()?,
            window: raw.window.unwrap_or_default().try_into()?,
            exact: raw.exact.unwrap_or_default().try_into()?,
            campaign: raw.campaign.unwrap_or_default().into(),
            thresholds: raw.thresholds.unwrap_or_default().try_into()?,
            allow: raw.allow.unwrap_or_default().try_into()?,
            milter: raw.milter.unwrap_or_default().try_into()?,
            policy: raw.policy.unwrap_or_default().try_into()?,
            state: raw.state.unwrap_or_default().try_into()?,
            metrics: raw.metrics.unwrap_or_default().try_into()?,
            alerts: raw.alerts.unwrap_or_default().try_into()?,
            store: raw.store.unwrap_or_default().try_into()?,
        })
    }

    /// Keys whose change needs a restart, named by their paths, comparing
    /// `self` (running) with `new` (just loaded).
    pub fn restart_needed(&self, new: &Config) -> Vec<&'static str> {
        let mut keys = Vec::new();
        if self.milter.socket != new.milter.socket {
            keys.push("milter.socket");
        }
        if self.milter.socket_owner != new.milter.socket_owner
            || self.milter.socket_group != new.milter.socket_group
            || self.milter.socket_mode != new.milter.socket_mode
        {
            keys.push("milter.socket_owner/group/mode");
        }
        if self.milter.max_connections != new.milter.max_connections {
            keys.push("milter.max_connections");
        }
        if self.milter.idle_timeout != new.milter.idle_timeout {
            keys.push("milter.idle_timeout_secs");
        }
        if self.metrics.listen != new.metrics.listen {
            keys.push("metrics.listen");
        }
        if self.state.state_dir != new.state.state_dir {
            keys.push("state.state_dir");
        }
        if self.store != new.store {
            keys.push("store");
        }
        if self.fingerprint != new.fingerprint || self.normalize != new.normalize {
            keys.push("fingerprint/normalize (fingerprints would no longer match the window)");
        }
        if self.window != new.window || self.exact != new.exact {
            keys.push("window/exact (sizes of the in-memory state)");
        }
        keys
    }
}

impl TryFrom<RawScan> for ScanConfig {
    type Error = ConfigError;

    fn try_from(raw: RawScan) -> Result<Self, ConfigError> {
        let RawScan {
            max_scan_bytes,
            max_parse_bytes,
        } = raw;
        let mut c = ScanConfig::default();
        if let Some(v) = max_scan_bytes {
            c.max_scan_bytes = to_usize("scan.max_scan_bytes", v, 1024, 64 << 20)?;
        }
        if let Some(v) = max_parse_bytes {
            c.max_parse_bytes = to_usize("scan.max_parse_bytes", v, 1024, 1 << 30)?;
        }
        Ok(c)
    }
}

/// Every step is a switch with no range to check, so this cannot fail.
impl From<RawNormalize> for NormalizeConfig {
    fn from(raw: RawNormalize) -> Self {
        let RawNormalize {
            nfkc,
            case_fold,
            strip_markup,
            urls_to_host,
            fold_digits,
            drop_random_tokens,
            strip_greetings,
            strip_recipient,
            strip_quotes,
            strip_signatures,
            stop_words,
        } = raw;
        let d = NormalizeConfig::default();
        NormalizeConfig {
            nfkc: nfkc.unwrap_or(d.nfkc),
            case_fold: case_fold.unwrap_or(d.case_fold),
            strip_markup: strip_markup.unwrap_or(d.strip_markup),
            urls_to_host: urls_to_host.unwrap_or(d.urls_to_host),
            fold_digits: fold_digits.unwrap_or(d.fold_digits),
            drop_random_tokens: drop_random_tokens.unwrap_or(d.drop_random_tokens),
            strip_greetings: strip_greetings.unwrap_or(d.strip_greetings),
            strip_recipient: strip_recipient.unwrap_or(d.strip_recipient),
            strip_quotes: strip_quotes.unwrap_or(d.strip_quotes),
            strip_signatures: strip_signatures.unwrap_or(d.strip_signatures),
            stop_words: stop_words.unwrap_or(d.stop_words),
        }
    }
}

impl TryFrom<RawFingerprint> for FingerprintConfig {
    type Error = ConfigError;

    fn try_from(raw: RawFingerprint) -> Result<Self, ConfigError> {
        let RawFingerprint {
            shingle_words,
            hash_key,
            sample_modulus,
            min_features,
            include_subject,
        } = raw;
        let mut c = FingerprintConfig::default();
        if let Some(v) = shingle_words {
            c.shingle_words = to_usize("fingerprint.shingle_words", v.into(), 1, 8)?;
        }
        if let Some(v) = hash_key {
            c.hash_key = parse_hash_key(&v).ok_or_else(|| {
                ConfigError::invalid("fingerprint.hash_key", "must be exactly 32 hex digits")
            })?;
        }
        if let Some(v) = sample_modulus {
            c.sample_modulus = in_range("fingerprint.sample_modulus", v, 1, 64)?.into();
        }
        if let Some(v) = min_features {
            c.min_features = to_usize("fingerprint.min_features", v.into(), 1, 10_000)?;
        }
        if let Some(v) = include_subject {
            c.include_subject = v;
        }
        Ok(c)
    }
}

impl TryFrom<RawWindow> for WindowConfig {
    type Error = ConfigError;

    fn try_from(raw: RawWindow) -> Result<Self, ConfigError> {
        let RawWindow {
            window_secs,
            max_entries,
            max_distance,
            minhash_bands,
            max_sketch_diff,
            max_minhash_distance,
            corroborating_matches,
            corroborating_sketch_diff,
            corroborating_distance,
        } = raw;
        let mut c = WindowConfig::default();
        if let Some(v) = window_secs {
            c.window = Duration::from_secs(in_range("window.window_secs", v, 60, 30 * 86400)?);
        }
        if let Some(v) = max_entries {
            c.max_entries = to_usize("window.max_entries", v, 16, 1 << 30)?;
        }
        if let Some(v) = max_distance {
            c.max_distance = in_range("window.max_distance", v, 0, 7)?;
        }
        if let Some(v) = minhash_bands {
            c.minhash_bands = to_usize("window.minhash_bands", v.into(), 0, 16)?;
        }
        if let Some(v) = max_sketch_diff {
            c.max_sketch_diff = in_range("window.max_sketch_diff", v, 0, 32)?;
        }
        if let Some(v) = max_minhash_distance {
            c.max_minhash_distance = in_range("window.max_minhash_distance", v, 0, 64)?;
        }
        if let Some(v) = corroborating_matches {
            if v == 1 {
                // One entry within the looser bounds is no evidence.
                return Err(ConfigError::invalid(
                    "window.corroborating_matches",
                    "1 is not allowed: 0 turns corroboration off, 2 to 256 turn it on",
                ));
            }
            c.corroborating_matches = to_usize("window.corroborating_matches", v.into(), 0, 256)?;
        }
        if let Some(v) = corroborating_sketch_diff {
            c.corroborating_sketch_diff = in_range("window.corroborating_sketch_diff", v, 0, 32)?;
        }
        if let Some(v) = corroborating_distance {
            c.corroborating_distance = in_range("window.corroborating_distance", v, 0, 64)?;
        }
        Ok(c)
    }
}

impl TryFrom<RawExact> for ExactConfig {
    type Error = ConfigError;

    fn try_from(raw: RawExact) -> Result<Self, ConfigError> {
        let RawExact {
            bloom_items,
            bloom_fp_rate,
            generations,
            lru_capacity,
        } = raw;
        let mut c = ExactConfig::default();
        if let Some(v) = bloom_items {
            c.bloom_items = to_usize("exact.bloom_items", v, 16, 1 << 32)?;
        }
        if let Some(v) = bloom_fp_rate {
            if !(v > 0.0 && v < 0.5) {
                return Err(ConfigError::invalid(
                    "exact.bloom_fp_rate",
                    format!("{v} must be above 0 and below 0.5"),
                ));
            }
            c.bloom_fp_rate = v;
        }
        if let Some(v) = generations {
            c.generations = to_usize("exact.generations", v.into(), 2, 16)?;
        }
        if let Some(v) = lru_capacity {
            c.lru_capacity = to_usize("exact.lru_capacity", v, 1, 1 << 24)?;
        }
        let bloom = c.bloom_bytes();
        if bloom > MAX_BLOOM_BYTES {
            return Err(ConfigError::invalid(
                "exact.bloom_items",
                format!(
                    "with exact.bloom_fp_rate = {} and exact.generations = {}, the Bloom \
                     filters would take {} MiB; the limit is {} MiB (fewer items or a \
                     higher rate)",
                    c.bloom_fp_rate,
                    c.generations,
                    bloom >> 20,
                    MAX_BLOOM_BYTES >> 20
                ),
            ));
        }
        Ok(c)
    }
}

/// `keep_subjects` is a switch with no range to check, so this cannot fail.
impl From<RawCampaign> for CampaignConfig {
    fn from(raw: RawCampaign) -> Self {
        // Implementation note: `max_campaigns` is accepted in the file and
        // has never been used; refusing it now would break files that set it.
        let RawCampaign {
            max_campaigns: _,
            keep_subjects,
        } = raw;
        let d = CampaignConfig::default();
        CampaignConfig {
            keep_subjects: keep_subjects.unwrap_or(d.keep_subjects),
        }
    }
}

impl TryFrom<RawThresholds> for Thresholds {
    type Error = ConfigError;

    fn try_from(raw: RawThresholds) -> Result<Self, ConfigError> {
        let RawThresholds {
            bulk_threshold,
            suspect_threshold,
            strong_distance,
            strong_sketch_diff,
            weak_match_weight,
        } = raw;
        let mut c = Thresholds::default();
        if let Some(v) = bulk_threshold {
            c.bulk_threshold = in_range("thresholds.bulk_threshold", v, 1.0, 1e9)?;
        }
        if let Some(v) = suspect_threshold {
            c.suspect_threshold = in_range("thresholds.suspect_threshold", v, 1.0, 1e9)?;
        }
        if let Some(v) = strong_distance {
            c.strong_distance = in_range("thresholds.strong_distance", v, 0, 7)?;
        }
        if let Some(v) = strong_sketch_diff {
            c.strong_sketch_diff = in_range("thresholds.strong_sketch_diff", v, 0, 32)?;
        }
        if let Some(v) = weak_match_weight {
            c.weak_match_weight = in_range("thresholds.weak_match_weight", v, 0.0, 1.0)?;
        }
        if c.suspect_threshold > c.bulk_threshold {
            return Err(ConfigError::invalid(
                "thresholds.suspect_threshold",
                format!(
                    "{} is above thresholds.bulk_threshold ({})",
                    c.suspect_threshold, c.bulk_threshold
                ),
            ));
        }
        Ok(c)
    }
}

impl TryFrom<RawAllow> for AllowConfig {
    type Error = ConfigError;

    fn try_from(raw: RawAllow) -> Result<Self, ConfigError> {
        let RawAllow {
            sender_domains,
            client_networks,
            authenticated,
        } = raw;
        let mut c = AllowConfig::default();
        if let Some(v) = sender_domains {
            c.sender_domains = v
                .into_iter()
                .map(|d| d.trim().trim_start_matches('.').to_ascii_lowercase())
                .filter(|d| !d.is_empty())
                .collect();
        }
        if let Some(v) = client_networks {
            let mut nets = Vec::with_capacity(v.len());
            for s in v {
                let net = s
                    .parse::<IpNet>()
                    .or_else(|_| s.parse::<IpAddr>().map(IpNet::from))
                    .map_err(|_| {
                        ConfigError::invalid(
                            "allow.client_networks",
                            format!("`{s}` is not an address or CIDR network"),
                        )
                    })?;
                nets.push(net);
            }
            c.client_networks = nets;
        }
        if let Some(v) = authenticated {
            c.authenticated = v;
        }
        Ok(c)
    }
}

impl TryFrom<RawMilter> for MilterConfig {
    type Error = ConfigError;

    fn try_from(raw: RawMilter) -> Result<Self, ConfigError> {
        let RawMilter {
            socket,
            socket_owner,
            socket_group,
            socket_mode,
            max_message_bytes,
            max_connections,
            idle_timeout_secs,
            engine_timeout_ms,
            failure_action,
            reject_text,
            tempfail_text,
        } = raw;
        let mut c = MilterConfig::default();
        if let Some(v) = socket {
            c.socket = parse_socket("milter.socket", &v)?;
        }
        c.socket_owner = socket_owner.or(c.socket_owner.take());
        c.socket_group = socket_group.or(c.socket_group.take());
        if let Some(v) = socket_mode {
            c.socket_mode = u32::from_str_radix(v.trim_start_matches("0o"), 8)
                .ok()
                .filter(|m| *m <= 0o777)
                .ok_or_else(|| {
                    ConfigError::invalid(
                        "milter.socket_mode",
                        "must be an octal mode such as \"0660\"",
                    )
                })?;
        }
        if let Some(v) = max_message_bytes {
            c.max_message_bytes = to_usize("milter.max_message_bytes", v, 1024, 1 << 30)?;
        }
        if let Some(v) = max_connections {
            c.max_connections = to_usize("milter.max_connections", v, 1, 100_000)?;
        }
        if let Some(v) = idle_timeout_secs {
            c.idle_timeout =
                Duration::from_secs(in_range("milter.idle_timeout_secs", v, 10, 7210)?);
        }
        if let Some(v) = engine_timeout_ms {
            c.engine_timeout =
                Duration::from_millis(in_range("milter.engine_timeout_ms", v, 1, 600_000)?);
        }
        if let Some(v) = failure_action {
            c.failure_action = match v.as_str() {
                "accept" => FailureAction::Accept,
                "tempfail" => FailureAction::Tempfail,
                other => {
                    return Err(ConfigError::invalid(
                        "milter.failure_action",
                        format!("`{other}` is not accept or tempfail"),
                    ))
                }
            };
        }
        if let Some(v) = reject_text {
            c.reject_text = reply_text("milter.reject_text", v)?;
        }
        if let Some(v) = tempfail_text {
            c.tempfail_text = reply_text("milter.tempfail_text", v)?;
        }
        Ok(c)
    }
}

impl TryFrom<RawPolicy> for PolicyConfig {
    type Error = ConfigError;

    fn try_from(raw: RawPolicy) -> Result<Self, ConfigError> {
        let RawPolicy { suspect, bulk } = raw;
        let mut c = PolicyConfig::default();
        if let Some(v) = suspect {
            c.suspect = Action::parse("policy.suspect", &v)?;
        }
        if let Some(v) = bulk {
            c.bulk = Action::parse("policy.bulk", &v)?;
        }
        Ok(c)
    }
}

impl TryFrom<RawState> for StateConfig {
    type Error = ConfigError;

    fn try_from(raw: RawState) -> Result<Self, ConfigError> {
        let RawState {
            state_dir,
            snapshot_interval_secs,
        } = raw;
        let mut c = StateConfig::default();
        if let Some(v) = state_dir {
            if v.is_empty() {
                return Err(ConfigError::invalid("state.state_dir", "must not be empty"));
            }
            c.state_dir = PathBuf::from(v);
        }
        if let Some(v) = snapshot_interval_secs {
            c.snapshot_interval =
                Duration::from_secs(in_range("state.snapshot_interval_secs", v, 1, 86400)?);
        }
        Ok(c)
    }
}

impl TryFrom<RawMetrics> for MetricsConfig {
    type Error = ConfigError;

    fn try_from(raw: RawMetrics) -> Result<Self, ConfigError> {
        let RawMetrics { listen } = raw;
        let mut c = MetricsConfig::default();
        if let Some(v) = listen {
            if v.is_empty() {
                c.listen = None;
            } else if v.parse::<std::net::SocketAddr>().is_err() {
                return Err(ConfigError::invalid(
                    "metrics.listen",
                    format!("`{v}` is not an address:port (empty string turns metrics off)"),
                ));
            } else {
                c.listen = Some(v);
            }
        }
        Ok(c)
    }
}

impl TryFrom<RawAlerts> for AlertsConfig {
    type Error = ConfigError;

    fn try_from(raw: RawAlerts) -> Result<Self, ConfigError> {
        let RawAlerts {
            to,
            from,
            smtp,
            min_interval_secs,
        } = raw;
        let mut c = AlertsConfig::default();
        if let Some(v) = to {
            for (i, addr) in v.iter().enumerate() {
                mailbox(&format!("alerts.to[{i}]"), addr)?;
            }
            c.to = v;
        }
        if let Some(v) = from {
            mailbox("alerts.from", &v)?;
            c.from = v;
        }
        if let Some(v) = smtp {
            c.smtp = v;
        }
        if let Some(v) = min_interval_secs {
            c.min_interval = Duration::from_secs(v);
        }
        Ok(c)
    }
}

impl TryFrom<RawStore> for StoreConfig {
    type Error = ConfigError;

    fn try_from(raw: RawStore) -> Result<Self, ConfigError> {
        let RawStore { backend, redis } = raw;
        let mut c = StoreConfig::default();
        if let Some(v) = backend {
            c.backend = match v.as_str() {
                "memory" => StoreBackend::Memory,
                "redis" => StoreBackend::Redis,
                other => {
                    return Err(ConfigError::invalid(
                        "store.backend",
                        format!("`{other}` is not memory or redis"),
                    ))
                }
            };
        }
        if let Some(r) = redis {
            c.redis = r.try_into()?;
        }
        Ok(c)
    }
}

impl TryFrom<RawRedis> for RedisConfig {
    type Error = ConfigError;

    fn try_from(raw: RawRedis) -> Result<Self, ConfigError> {
        let RawRedis {
            urls,
            cluster,
            key_prefix,
            timeout_ms,
            pool_size,
            retry_secs,
            layout,
        } = raw;
        let mut c = RedisConfig::default();
        if let Some(v) = urls {
            if v.is_empty() {
                return Err(ConfigError::invalid(
                    "store.redis.urls",
                    "needs at least one redis:// address",
                ));
            }
            for u in &v {
                if !(u.starts_with("redis://") || u.starts_with("redis+unix://")) {
                    return Err(ConfigError::invalid(
                        "store.redis.urls",
                        format!("`{u}` is not a redis:// or redis+unix:// address"),
                    ));
                }
            }
            c.urls = v;
        }
        if let Some(v) = cluster {
            c.cluster = v;
        }
        if let Some(v) = key_prefix {
            if v.is_empty()
                || v.len() > 64
                || !v
                    .bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
            {
                return Err(ConfigError::invalid(
                    "store.redis.key_prefix",
                    "must be 1 to 64 characters of letters, digits, - _ . :",
                ));
            }
            c.key_prefix = v;
        }
        if let Some(v) = timeout_ms {
            c.timeout = Duration::from_millis(in_range("store.redis.timeout_ms", v, 1, 60_000)?);
        }
        if let Some(v) = pool_size {
            c.pool_size = to_usize("store.redis.pool_size", v, 1, 1024)?;
        }
        if let Some(v) = retry_secs {
            c.retry_interval = Duration::from_secs(in_range("store.redis.retry_secs", v, 1, 3600)?);
        }
        if let Some(v) = layout {
            c.layout = match v.as_str() {
                "script" => RedisLayout::Script,
                "log" => RedisLayout::Log,
                other => {
                    return Err(ConfigError::invalid(
                        "store.redis.layout",
                        format!("`{other}` is not script or log"),
                    ))
                }
            };
        }
        Ok(c)
    }
}

/// SMTP reply text: printable ASCII, no CR/LF, bounded.
fn reply_text(key: &str, v: String) -> Result<String, ConfigError> {
    if v.is_empty() || v.len() > 200 || !v.bytes().all(|b| (0x20..0x7f).contains(&b)) {
        return Err(ConfigError::invalid(
            key,
            "must be 1 to 200 printable ASCII characters",
        ));
    }
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_file_gives_defaults() {
        assert_eq!(Config::from_toml_str("").unwrap(), Config::default());
    }

    #[test]
    fn default_hash_key_parses() {
        assert!(parse_hash_key(DEFAULT_HASH_KEY).is_some());
        assert_ne!(Config::default().fingerprint.hash_key, (0, 0));
    }

    #[test]
    fn unknown_key_is_refused_with_its_name() {
        let err = Config::from_toml_str("[window]\nmax_distanse = 3\n").unwrap_err();
        assert!(err.to_string().contains("max_distanse"), "{err}");
    }

    /// Alerts that could never be sent are refused when the file is
    /// loaded, naming the key (before: accepted, and every alert failed).
    #[test]
    fn alert_addresses_must_be_addresses() {
        for (toml, key) in [
            ("[alerts]\nto = [\"not an address\"]\n", "alerts.to[0]"),
            (
                "[alerts]\nto = [\"ops@example.org\", \"a@b\\r\\nBcc: x@y\"]\n",
                "alerts.to[1]",
            ),
            (
                "[alerts]\nto = [\"ops@example.org\"]\nfrom = \"bw@example.org\\n\"\n",
                "alerts.from",
            ),
            ("[alerts]\nfrom = \"@\"\n", "alerts.from"),
        ] {
            let err = Config::from_toml_str(toml).unwrap_err();
            assert_eq!(err.key(), Some(key), "{toml}: {err}");
        }
        let ok = Config::from_toml_str(
            "[alerts]\nto = [\"ops@example.org\", \"Mail Team <mail@example.org>\"]\nfrom = \"bulkwatch@localhost\"\n",
        )
        .unwrap();
        assert_eq!(ok.alerts.to.len(), 2);
    }

    #[test]
    fn out_of_range_value_names_key_path() {
        let err = Config::from_toml_str("[window]\nmax_distance = 40\n").unwrap_err();
        assert_eq!(err.key(), Some("window.max_distance"));
    }

    #[test]
    fn one_corroborating_entry_is_refused() {
        let err = Config::from_toml_str("[window]\ncorroborating_matches = 1\n").unwrap_err();
        assert_eq!(err.key(), Some("window.corroborating_matches"));
        for v in [0, 2, 256] {
            let toml = format!("[window]\ncorroborating_matches = {v}\n");
            assert_eq!(
                Config::from_toml_str(&toml)
                    .unwrap()
                    .window
                    .corroborating_matches,
                v
            );
        }
    }

    #[test]
    fn suspect_above_bulk_is_refused() {
        let err =
            Config::from_toml_str("[thresholds]\nbulk_threshold = 5.0\nsuspect_threshold = 9.0\n")
                .unwrap_err();
        assert_eq!(err.key(), Some("thresholds.suspect_threshold"));
    }

    #[test]
    fn sockets_parse() {
        assert_eq!(
            parse_socket("k", "inet:127.0.0.1:7357").unwrap(),
            SocketSpec::Inet("127.0.0.1:7357".into())
        );
        assert_eq!(
            parse_socket("k", "inet:7357@localhost").unwrap(),
            SocketSpec::Inet("localhost:7357".into())
        );
        assert_eq!(
            parse_socket("k", "unix:/run/bw.sock").unwrap(),
            SocketSpec::Unix("/run/bw.sock".into())
        );
        assert!(parse_socket("k", "tcp:1").is_err());
        assert!(parse_socket("k", "unix:rel").is_err());
    }

    #[test]
    fn networks_and_domains_normalize() {
        let c = Config::from_toml_str(
            "[allow]\nsender_domains = [\".News.Example.COM\"]\nclient_networks = [\"10.0.0.0/8\", \"::1\"]\n",
        )
        .unwrap();
        assert_eq!(c.allow.sender_domains, vec!["news.example.com"]);
        assert_eq!(c.allow.client_networks.len(), 2);
    }
}

#[cfg(test)]
mod shipped_file {
    use super::*;

    /// config/bulkwatch.toml documents the defaults: it must not drift.
    #[test]
    fn shipped_config_equals_built_in_defaults() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("config/bulkwatch.toml");
        let cfg = Config::load(&path).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(cfg, Config::default());
    }
}
