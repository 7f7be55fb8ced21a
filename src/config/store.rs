//! `[store]` and `[store.redis]`: which store holds the shared state, and how Redis is reached.

use std::time::Duration;

use super::raw::{RawRedis, RawStore};
use super::{in_range, to_usize, ConfigError};

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
