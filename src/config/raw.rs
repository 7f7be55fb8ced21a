//! The TOML file as written: every key optional, unknown keys refused.
//!
//! Nothing here is validated; `super::Config::from_raw` turns it into the
//! validated form and fills in defaults.

use serde::{Deserialize, Serialize};

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawConfig {
    pub scan: Option<RawScan>,
    pub normalize: Option<RawNormalize>,
    pub fingerprint: Option<RawFingerprint>,
    pub window: Option<RawWindow>,
    pub exact: Option<RawExact>,
    pub campaign: Option<RawCampaign>,
    pub thresholds: Option<RawThresholds>,
    pub allow: Option<RawAllow>,
    pub milter: Option<RawMilter>,
    pub policy: Option<RawPolicy>,
    pub state: Option<RawState>,
    pub metrics: Option<RawMetrics>,
    pub alerts: Option<RawAlerts>,
    pub store: Option<RawStore>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawScan {
    pub max_scan_bytes: Option<u64>,
    pub max_parse_bytes: Option<u64>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawNormalize {
    pub nfkc: Option<bool>,
    pub case_fold: Option<bool>,
    pub strip_markup: Option<bool>,
    pub urls_to_host: Option<bool>,
    pub fold_digits: Option<bool>,
    pub drop_random_tokens: Option<bool>,
    pub strip_greetings: Option<bool>,
    pub strip_recipient: Option<bool>,
    pub strip_quotes: Option<bool>,
    pub strip_signatures: Option<bool>,
    pub stop_words: Option<bool>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawFingerprint {
    pub shingle_words: Option<u32>,
    pub hash_key: Option<String>,
    pub sample_modulus: Option<u32>,
    pub min_features: Option<u32>,
    pub include_subject: Option<bool>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawWindow {
    pub window_secs: Option<u64>,
    pub max_entries: Option<u64>,
    pub max_distance: Option<u32>,
    pub minhash_bands: Option<u32>,
    pub max_sketch_diff: Option<u32>,
    pub max_minhash_distance: Option<u32>,
    pub corroborating_matches: Option<u32>,
    pub corroborating_sketch_diff: Option<u32>,
    pub corroborating_distance: Option<u32>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawExact {
    pub bloom_items: Option<u64>,
    pub bloom_fp_rate: Option<f64>,
    pub generations: Option<u32>,
    pub lru_capacity: Option<u64>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawCampaign {
    pub max_campaigns: Option<u64>,
    pub keep_subjects: Option<bool>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawThresholds {
    pub bulk_threshold: Option<f64>,
    pub suspect_threshold: Option<f64>,
    pub strong_distance: Option<u32>,
    pub strong_sketch_diff: Option<u32>,
    pub weak_match_weight: Option<f64>,
    pub single_transaction_recipients: Option<u32>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawAllow {
    pub sender_domains: Option<Vec<String>>,
    pub client_networks: Option<Vec<String>>,
    pub authenticated: Option<bool>,
    pub recipients: Option<Vec<String>>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawMilter {
    pub socket: Option<String>,
    pub socket_owner: Option<String>,
    pub socket_group: Option<String>,
    pub socket_mode: Option<String>,
    pub max_message_bytes: Option<u64>,
    pub max_connections: Option<u64>,
    pub idle_timeout_secs: Option<u64>,
    pub engine_timeout_ms: Option<u64>,
    pub failure_action: Option<String>,
    pub reject_text: Option<String>,
    pub tempfail_text: Option<String>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawPolicy {
    pub clean: Option<String>,
    pub suspect: Option<String>,
    pub bulk: Option<String>,
    pub list: Option<String>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawState {
    pub state_dir: Option<String>,
    pub snapshot_interval_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawMetrics {
    pub listen: Option<String>,
    pub control_token: Option<String>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawAlerts {
    pub to: Option<Vec<String>>,
    pub from: Option<String>,
    pub smtp: Option<String>,
    pub min_interval_secs: Option<u64>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawStore {
    pub backend: Option<String>,
    pub redis: Option<RawRedis>,
}

#[derive(Debug, Default, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct RawRedis {
    pub urls: Option<Vec<String>>,
    pub cluster: Option<bool>,
    pub key_prefix: Option<String>,
    pub timeout_ms: Option<u64>,
    pub pool_size: Option<u64>,
    pub retry_secs: Option<u64>,
    pub layout: Option<String>,
}
