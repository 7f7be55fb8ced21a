//! `[store]` and `[store.redis]`: which store holds the shared state, and how Redis is reached.

use std::time::Duration;

use super::section::*;
use super::{to_usize, ConfigError};

/// Which store holds the shared state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StoreBackend {
    /// This host's memory (with the snapshot file): the default.
    Memory,
    /// A Redis server or cluster shared by several MX hosts, with the
    /// memory store as the local fallback.
    Redis,
}

/// How the Redis store divides the work (`store.redis.layout`): what the
/// file said. There is one layout, the log; the key stays so that a
/// file written for an earlier version still starts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedisLayout {
    /// Redis holds a log of the site's observations; each daemon applies
    /// it in order to its own engine, a replica, and looks up there.
    Log,
    /// `"script"`: the layout of earlier versions (a Lua copy of the
    /// linking rule ran in Redis), retired. Read as [`RedisLayout::Log`],
    /// with a warning ([`crate::config::Config::warnings`]).
    RetiredScript,
}

/// `store.backend`'s words.
const BACKENDS: Words<StoreBackend> = &[
    ("memory", StoreBackend::Memory),
    ("redis", StoreBackend::Redis),
];

/// `store.redis.layout`'s words.
const LAYOUTS: Words<RedisLayout> = &[
    ("log", RedisLayout::Log),
    ("script", RedisLayout::RetiredScript),
];

/// Why a store key waits for a restart.
const STORE: &str = "the store is connected at start";

section! {
    /// Which store holds the shared state, and how Redis is reached.
    pub struct StoreConfig in RawStore as "store" {
        backend: StoreBackend = StoreBackend::Memory,
            file backend: String,
            read |k, v| word(k, &v, BACKENDS),
            write |b| word_of(b, BACKENDS),
            restart STORE;
        redis: RedisConfig = RedisConfig::default(),
            file redis: RawRedis,
            read |_, v| RedisConfig::try_from(v),
            write |r| Some(RawRedis::from(r)),
            restart STORE;
    }
}

/// `url` with its password (`scheme://user:PASSWORD@host...`) written as
/// `***`: what logs and `check-config` print of a Redis address.
pub fn redacted_url(url: &str) -> String {
    let url = &redact_query(url);
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    // The authority ends at the first '/', '?' or '#'; its credentials at
    // its last '@'.
    let end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
    let (authority, tail) = rest.split_at(end);
    let Some((creds, host)) = authority.rsplit_once('@') else {
        return url.to_owned();
    };
    let creds = match creds.split_once(':') {
        Some((user, _)) => format!("{user}:***"),
        None if creds.is_empty() => String::new(),
        // `redis://PASSWORD@host` is read as a password by some clients.
        None => "***".to_owned(),
    };
    format!("{scheme}://{creds}@{host}{tail}")
}

/// `url` with the values of its `pass` and `password` query parameters
/// (`redis+unix:///path?pass=...`) written as `***`.
fn redact_query(url: &str) -> String {
    let Some((base, query)) = url.split_once('?') else {
        return url.to_owned();
    };
    let params: Vec<String> = query
        .split('&')
        .map(|p| match p.split_once('=') {
            Some((k, _))
                if k.eq_ignore_ascii_case("pass") || k.eq_ignore_ascii_case("password") =>
            {
                format!("{k}=***")
            }
            _ => p.to_owned(),
        })
        .collect();
    format!("{base}?{}", params.join("&"))
}

section! {
    /// `[store.redis]`: where the shared state lives and how long to wait for it.
    pub struct RedisConfig in RawRedis as "store.redis" {
        /// `redis://host:port/db` (or `rediss://` over TLS) of one server,
        /// or seed nodes of a cluster.
        urls: Vec<String> = vec!["redis://127.0.0.1:6379/0".to_owned()],
            file urls: Vec<String>,
            read |k, v| {
                if v.is_empty() {
                    return Err(ConfigError::invalid(k, "needs at least one redis:// address"));
                }
                for u in &v {
                    if !(u.starts_with("redis://")
                        || u.starts_with("rediss://")
                        || u.starts_with("redis+unix://"))
                    {
                        return Err(ConfigError::invalid(
                            k,
                            format!(
                                "`{}` is not a redis://, rediss:// or redis+unix:// address",
                                redacted_url(u)
                            ),
                        ));
                    }
                    // As `serve` reads it (the client's own parser, no
                    // connection): what it refuses is refused here.
                    if let Err(e) = redis::IntoConnectionInfo::into_connection_info(u.as_str()) {
                        return Err(ConfigError::invalid(
                            k,
                            format!(
                                "`{}` is not an address the Redis client reads ({:?})",
                                redacted_url(u),
                                e.kind()
                            ),
                        ));
                    }
                    if u.contains('#') {
                        return Err(ConfigError::invalid(
                            k,
                            format!(
                                "`{}`: a fragment (#insecure) is not taken: certificates are \
                                 always checked (store.redis.tls_ca_file names a private CA)",
                                redacted_url(u)
                            ),
                        ));
                    }
                }
                if v.iter().any(|u| u.starts_with("rediss://"))
                    && !v.iter().all(|u| u.starts_with("rediss://"))
                {
                    return Err(ConfigError::invalid(
                        k,
                        "mixes rediss:// with plain addresses: all of a site's nodes or none over TLS",
                    ));
                }
                Ok(v)
            },
            restart STORE;
        /// PEM file of the CA that signed the Redis servers' certificates
        /// (`rediss://`); empty: the system's trusted roots.
        tls_ca_file: String = String::new(),
            file tls_ca_file: String,
            read |k, v| if v.is_empty() || v.starts_with('/') {
                Ok(v)
            } else {
                Err(ConfigError::invalid(k, "must be an absolute path, or empty for the system's roots"))
            },
            write |s| Some(s.clone()),
            restart STORE;
        cluster: bool = false, file cluster: bool, restart STORE;
        /// Prefix of every key (several sites or tests can share one Redis).
        key_prefix: String = "bulkwatch".to_owned(),
            file key_prefix: String,
            read |k, v| {
                if v.is_empty()
                    || v.len() > 64
                    || !v
                        .bytes()
                        .all(|b| b.is_ascii_alphanumeric() || b"-_.:".contains(&b))
                {
                    return Err(ConfigError::invalid(
                        k,
                        "must be 1 to 64 characters of letters, digits, - _ . :",
                    ));
                }
                Ok(v)
            },
            restart STORE;
        /// Connect, read and write timeout; beyond it the message is judged
        /// from the local window.
        timeout: Duration = Duration::from_millis(50),
            file timeout_ms: u64,
            read |k, v| millis_in(k, v, 1, 60_000),
            write to_millis,
            restart STORE;
        /// Connections kept open (one per message in flight); with the log
        /// layout also the most round trips out at once.
        pool_size: usize = 8,
            file pool_size: u64,
            read |k, v| to_usize(k, v, 1, 1024),
            write to_u64,
            restart STORE;
        /// After a failure, how long messages are judged locally before Redis
        /// is tried again.
        retry_interval: Duration = Duration::from_secs(5),
            file retry_secs: u64,
            read |k, v| secs_in(k, v, 1, 3600),
            write to_secs,
            restart STORE;
        layout: RedisLayout = RedisLayout::Log,
            file layout: String,
            read |k, v| word(k, &v, LAYOUTS),
            write |l| word_of(l, LAYOUTS),
            restart STORE;
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

    /// What the Redis client cannot read is refused when the file is
    /// read (check-config), not first at `serve`; the password is not
    /// printed.
    #[test]
    fn redis_urls_are_read_as_serve_reads_them() {
        for bad in [
            "redis://:s3cret@10.0.0.1:notaport/0",
            "redis://10.0.0.1:6379/notadb",
            "redis://",
        ] {
            let raw = RawRedis {
                urls: Some(vec![bad.to_owned()]),
                ..RawRedis::default()
            };
            let e = RedisConfig::try_from(raw).unwrap_err().to_string();
            assert!(
                e.contains("is not an address the Redis client reads"),
                "{bad}: {e}"
            );
            assert!(!e.contains("s3cret"), "{e}");
        }
        for good in [
            "redis://127.0.0.1:6379/0",
            "redis://bulkwatch:pw@[::1]:6379/2",
            "redis+unix:///run/redis/redis.sock",
        ] {
            let raw = RawRedis {
                urls: Some(vec![good.to_owned()]),
                ..RawRedis::default()
            };
            assert!(RedisConfig::try_from(raw).is_ok(), "{good}");
        }
    }

    #[test]
    fn bad_redis_values_are_refused_naming_their_key() {
        let prefix = "must be 1 to 64 characters of letters, digits, - _ . :";
        let cases: [Case; 15] = [
            (
                |r| r.urls = Some(vec!["http://u:s3cret@10.0.0.1/".to_owned()]),
                "store.redis.urls",
                "`http://u:***@10.0.0.1/` is not a redis://, rediss:// or redis+unix:// address",
            ),
            (
                |r| r.urls = Some(vec!["rediss://10.0.0.1:6379/0#insecure".to_owned()]),
                "store.redis.urls",
                "`rediss://10.0.0.1:6379/0#insecure`: a fragment (#insecure) is not taken: \
                 certificates are always checked (store.redis.tls_ca_file names a private CA)",
            ),
            (
                |r| r.tls_ca_file = Some("ca.pem".to_owned()),
                "store.redis.tls_ca_file",
                "must be an absolute path, or empty for the system's roots",
            ),
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
                "mixes rediss:// with plain addresses: all of a site's nodes or none over TLS",
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
                "`stream` is not log or script",
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
                tls_ca_file: Some("/etc/ssl/site-ca.pem".to_owned()),
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
                    tls_ca_file: "/etc/ssl/site-ca.pem".to_owned(),
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

    #[test]
    fn a_url_is_printed_without_its_password() {
        for (url, shown) in [
            ("redis://127.0.0.1:6379/0", "redis://127.0.0.1:6379/0"),
            (
                "redis://:s3cret@10.0.0.1:6379/0",
                "redis://:***@10.0.0.1:6379/0",
            ),
            ("redis://bw:s3cret@host/0", "redis://bw:***@host/0"),
            ("redis://s3cret@host", "redis://***@host"),
            (
                "redis://bw:p@ss@host:1/2?x=y",
                "redis://bw:***@host:1/2?x=y",
            ),
            ("rediss://u:pw@h/0", "rediss://u:***@h/0"),
            (
                "redis+unix:///run/redis.sock?db=1&pass=x",
                "redis+unix:///run/redis.sock?db=1&pass=***",
            ),
            ("not a url", "not a url"),
        ] {
            assert_eq!(redacted_url(url), shown, "{url}");
            if url.contains("s3cret") || url.contains(":pw@") || url.contains("p@ss") {
                assert!(!redacted_url(url).contains("s3cret"));
            }
        }
    }
}
