//! The configuration written back as TOML, with the file's own key names
//! and units (seconds, milliseconds, the socket mode in octal), so that
//! `check-config` prints what can be pasted into a file and reads back as
//! the same configuration.

use std::time::Duration;

use super::raw::*;
use super::{Config, FailureAction, RedisLayout, SocketSpec, StoreBackend};

fn n(v: usize) -> Option<u64> {
    Some(v as u64)
}

fn n32(v: usize) -> Option<u32> {
    Some(u32::try_from(v).unwrap_or(u32::MAX))
}

fn secs(d: Duration) -> Option<u64> {
    Some(d.as_secs())
}

fn millis(d: Duration) -> Option<u64> {
    Some(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

impl From<&Config> for RawConfig {
    fn from(c: &Config) -> RawConfig {
        let m = &c.milter;
        let r = &c.store.redis;
        RawConfig {
            scan: Some(RawScan {
                max_scan_bytes: n(c.scan.max_scan_bytes),
                max_parse_bytes: n(c.scan.max_parse_bytes),
            }),
            normalize: Some(RawNormalize {
                nfkc: Some(c.normalize.nfkc),
                case_fold: Some(c.normalize.case_fold),
                strip_markup: Some(c.normalize.strip_markup),
                urls_to_host: Some(c.normalize.urls_to_host),
                fold_digits: Some(c.normalize.fold_digits),
                drop_random_tokens: Some(c.normalize.drop_random_tokens),
                strip_greetings: Some(c.normalize.strip_greetings),
                strip_recipient: Some(c.normalize.strip_recipient),
                strip_quotes: Some(c.normalize.strip_quotes),
                strip_signatures: Some(c.normalize.strip_signatures),
                stop_words: Some(c.normalize.stop_words),
            }),
            fingerprint: Some(RawFingerprint {
                shingle_words: n32(c.fingerprint.shingle_words),
                hash_key: Some(super::format_hash_key(c.fingerprint.hash_key)),
                sample_modulus: Some(
                    u32::try_from(c.fingerprint.sample_modulus).unwrap_or(u32::MAX),
                ),
                min_features: n32(c.fingerprint.min_features),
                include_subject: Some(c.fingerprint.include_subject),
            }),
            window: Some(RawWindow {
                window_secs: secs(c.window.window),
                max_entries: n(c.window.max_entries),
                max_distance: Some(c.window.max_distance),
                minhash_bands: n32(c.window.minhash_bands),
                max_sketch_diff: Some(c.window.max_sketch_diff),
                max_minhash_distance: Some(c.window.max_minhash_distance),
                corroborating_matches: n32(c.window.corroborating_matches),
                corroborating_sketch_diff: Some(c.window.corroborating_sketch_diff),
                corroborating_distance: Some(c.window.corroborating_distance),
            }),
            exact: Some(RawExact {
                bloom_items: n(c.exact.bloom_items),
                bloom_fp_rate: Some(c.exact.bloom_fp_rate),
                generations: n32(c.exact.generations),
                lru_capacity: n(c.exact.lru_capacity),
            }),
            campaign: Some(RawCampaign {
                max_campaigns: None,
                keep_subjects: Some(c.campaign.keep_subjects),
            }),
            thresholds: Some(RawThresholds {
                bulk_threshold: Some(c.thresholds.bulk_threshold),
                suspect_threshold: Some(c.thresholds.suspect_threshold),
                strong_distance: Some(c.thresholds.strong_distance),
                strong_sketch_diff: Some(c.thresholds.strong_sketch_diff),
                weak_match_weight: Some(c.thresholds.weak_match_weight),
                single_transaction_recipients: Some(c.thresholds.single_transaction_recipients),
            }),
            allow: Some(RawAllow {
                sender_domains: Some(c.allow.sender_domains.clone()),
                client_networks: Some(
                    c.allow
                        .client_networks
                        .iter()
                        .map(ToString::to_string)
                        .collect(),
                ),
                authenticated: Some(c.allow.authenticated),
                recipients: Some(c.allow.recipients.clone()),
            }),
            milter: Some(RawMilter {
                socket: Some(match &m.socket {
                    SocketSpec::Inet(a) => format!("inet:{a}"),
                    SocketSpec::Unix(p) => format!("unix:{}", p.display()),
                }),
                socket_owner: m.socket_owner.clone(),
                socket_group: m.socket_group.clone(),
                socket_mode: Some(format!("{:04o}", m.socket_mode)),
                max_message_bytes: n(m.max_message_bytes),
                max_connections: n(m.max_connections),
                idle_timeout_secs: secs(m.idle_timeout),
                engine_timeout_ms: millis(m.engine_timeout),
                failure_action: Some(
                    match m.failure_action {
                        FailureAction::Accept => "accept",
                        FailureAction::Tempfail => "tempfail",
                    }
                    .into(),
                ),
                reject_text: Some(m.reject_text.clone()),
                tempfail_text: Some(m.tempfail_text.clone()),
            }),
            policy: Some(RawPolicy {
                clean: Some(c.policy.clean.as_str().into()),
                suspect: Some(c.policy.suspect.as_str().into()),
                bulk: Some(c.policy.bulk.as_str().into()),
                list: Some(c.policy.list.as_str().into()),
            }),
            state: Some(RawState {
                state_dir: Some(c.state.state_dir.display().to_string()),
                snapshot_interval_secs: secs(c.state.snapshot_interval),
            }),
            metrics: Some(RawMetrics {
                // The empty string turns the listener off.
                listen: Some(c.metrics.listen.clone().unwrap_or_default()),
                control_token: Some(c.metrics.control_token.clone().unwrap_or_default()),
            }),
            alerts: Some(RawAlerts {
                to: Some(c.alerts.to.clone()),
                from: Some(c.alerts.from.clone()),
                smtp: Some(c.alerts.smtp.clone()),
                min_interval_secs: secs(c.alerts.min_interval),
            }),
            store: Some(RawStore {
                backend: Some(
                    match c.store.backend {
                        StoreBackend::Memory => "memory",
                        StoreBackend::Redis => "redis",
                    }
                    .into(),
                ),
                redis: Some(RawRedis {
                    urls: Some(r.urls.clone()),
                    cluster: Some(r.cluster),
                    key_prefix: Some(r.key_prefix.clone()),
                    timeout_ms: millis(r.timeout),
                    pool_size: n(r.pool_size),
                    retry_secs: secs(r.retry_interval),
                    layout: Some(
                        match r.layout {
                            RedisLayout::Script => "script",
                            RedisLayout::Log => "log",
                        }
                        .into(),
                    ),
                }),
            }),
        }
    }
}

impl Config {
    /// The configuration as TOML, with the file's key names and units; it
    /// reads back as the same configuration.
    pub fn to_toml(&self) -> String {
        toml::to_string(&RawConfig::from(self))
            .unwrap_or_else(|e| format!("# cannot print the configuration: {e}\n"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round_trip(c: &Config) -> Config {
        let text = c.to_toml();
        let raw: RawConfig = toml::from_str(&text).unwrap_or_else(|e| panic!("{e}\n{text}"));
        Config::from_raw(raw).unwrap_or_else(|e| panic!("{e}\n{text}"))
    }

    #[test]
    fn printed_configuration_reads_back_the_same() {
        let d = Config::default();
        assert_eq!(round_trip(&d), d);
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/config/bulkwatch.toml"
        ))
        .unwrap();
        let mut c = Config::from_raw(toml::from_str(&format!("{text}\n")).unwrap()).unwrap();
        c.milter.socket = SocketSpec::Unix("/run/bulkwatch/milter.sock".into());
        c.milter.socket_mode = 0o640;
        c.milter.socket_group = Some("postfix".into());
        c.metrics.listen = None;
        c.allow.client_networks = vec!["10.0.0.0/8".parse().unwrap()];
        c.store.backend = StoreBackend::Redis;
        c.store.redis.layout = RedisLayout::Log;
        c.fingerprint.hash_key = (0x0123_4567_89ab_cdef, 42);
        c.policy.bulk = super::super::Action::Reject;
        assert_eq!(round_trip(&c), c);
        let text = c.to_toml();
        assert!(text.contains("socket_mode = \"0640\""), "{text}");
        assert!(text.contains("window_secs = 21600"), "{text}");
        assert!(text.contains("[store.redis]"), "{text}");
    }
}
