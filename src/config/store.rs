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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::refusal;

    fn redis(set: fn(&mut RawRedis)) -> RawRedis {
        let mut r = RawRedis::default();
        set(&mut r);
        r
    }

    /// How to spoil a `[store.redis]` section, the key and the message expected.
    type Case = (fn(&mut RawRedis), &'static str, &'static str);

    fn in_store(set: fn(&mut RawRedis)) -> RawStore {
        RawStore {
            backend: Some("redis".to_owned()),
            redis: Some(redis(set)),
        }
    }

    #[test]
    fn empty_sections_give_defaults() {
        assert_eq!(
            StoreConfig::try_from(RawStore::default()).unwrap(),
            StoreConfig::default()
        );
        assert_eq!(
            RedisConfig::try_from(RawRedis::default()).unwrap(),
            RedisConfig::default()
        );
        let with_empty_redis = StoreConfig::try_from(RawStore {
            backend: None,
            redis: Some(RawRedis::default()),
        });
        assert_eq!(with_empty_redis.unwrap(), StoreConfig::default());
    }

    #[test]
    fn unknown_backend_is_refused() {
        let raw = RawStore {
            backend: Some("sqlite".to_owned()),
            redis: None,
        };
        assert_eq!(
            refusal(StoreConfig::try_from(raw)),
            (
                "store.backend".to_owned(),
                "`sqlite` is not memory or redis".to_owned()
            )
        );
    }

    #[test]
    fn bad_redis_values_are_refused_naming_their_key() {
        let prefix = "must be 1 to 64 characters of letters, digits, - _ . :";
        let cases: [Case; 12] = [
            (
                |r| r.urls = Some(Vec::new()),
                "store.redis.urls",
                "needs at least one redis:// address",
            ),
            (
                |r| {
                    r.urls = Some(vec![
                        "redis://10.0.0.1:6379/0".to_owned(),
                        "rediss://10.0.0.2:6379/0".to_owned(),
                    ])
                },
                "store.redis.urls",
                "`rediss://10.0.0.2:6379/0` is not a redis:// or redis+unix:// address",
            ),
            (
                |r| r.key_prefix = Some(String::new()),
                "store.redis.key_prefix",
                prefix,
            ),
            (
                |r| r.key_prefix = Some("p".repeat(65)),
                "store.redis.key_prefix",
                prefix,
            ),
            (
                |r| r.key_prefix = Some("bulk watch".to_owned()),
                "store.redis.key_prefix",
                prefix,
            ),
            (
                |r| r.timeout_ms = Some(0),
                "store.redis.timeout_ms",
                "0 is outside 1..=60000",
            ),
            (
                |r| r.timeout_ms = Some(60_001),
                "store.redis.timeout_ms",
                "60001 is outside 1..=60000",
            ),
            (
                |r| r.pool_size = Some(0),
                "store.redis.pool_size",
                "0 is outside 1..=1024",
            ),
            (
                |r| r.pool_size = Some(1025),
                "store.redis.pool_size",
                "1025 is outside 1..=1024",
            ),
            (
                |r| r.retry_secs = Some(0),
                "store.redis.retry_secs",
                "0 is outside 1..=3600",
            ),
            (
                |r| r.retry_secs = Some(3601),
                "store.redis.retry_secs",
                "3601 is outside 1..=3600",
            ),
            (
                |r| r.layout = Some("stream".to_owned()),
                "store.redis.layout",
                "`stream` is not script or log",
            ),
        ];
        for (set, key, message) in cases {
            let expected = (key.to_owned(), message.to_owned());
            assert_eq!(refusal(RedisConfig::try_from(redis(set))), expected);
            // Inside [store] the key path is the same.
            assert_eq!(refusal(StoreConfig::try_from(in_store(set))), expected);
        }
    }

    #[test]
    fn redis_values_in_range_are_read() {
        let c = StoreConfig::try_from(RawStore {
            backend: Some("redis".to_owned()),
            redis: Some(RawRedis {
                urls: Some(vec![
                    "redis://10.0.0.1:6379/0".to_owned(),
                    "redis+unix:///run/redis.sock".to_owned(),
                ]),
                cluster: Some(true),
                key_prefix: Some("site-1:bw_v.2".to_owned()),
                timeout_ms: Some(60_000),
                pool_size: Some(1),
                retry_secs: Some(3600),
                layout: Some("log".to_owned()),
            }),
        })
        .unwrap();
        assert_eq!(
            c,
            StoreConfig {
                backend: StoreBackend::Redis,
                redis: RedisConfig {
                    urls: vec![
                        "redis://10.0.0.1:6379/0".to_owned(),
                        "redis+unix:///run/redis.sock".to_owned(),
                    ],
                    cluster: true,
                    key_prefix: "site-1:bw_v.2".to_owned(),
                    timeout: Duration::from_millis(60_000),
                    pool_size: 1,
                    retry_interval: Duration::from_secs(3600),
                    layout: RedisLayout::Log,
                },
            }
        );
    }
}
