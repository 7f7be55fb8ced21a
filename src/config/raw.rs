//! The TOML file as written: every key optional, unknown keys refused.
//!
//! Nothing here is validated; `super::Config::from_raw` turns it into the
//! validated form and fills in defaults. Each section's file form is
//! declared with its keys (`section!`, `super::section`) and re-exported
//! here.

use serde::{Deserialize, Serialize};

pub use super::alerts::RawAlerts;
pub use super::allow::RawAllow;
pub use super::campaign::RawCampaign;
pub use super::exact::RawExact;
pub use super::fingerprint::RawFingerprint;
pub use super::metrics::RawMetrics;
pub use super::milter::RawMilter;
pub use super::normalize::RawNormalize;
pub use super::policy::RawPolicy;
pub use super::scan::RawScan;
pub use super::state::RawState;
pub use super::store::{RawRedis, RawStore};
pub use super::thresholds::RawThresholds;
pub use super::window::RawWindow;

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
