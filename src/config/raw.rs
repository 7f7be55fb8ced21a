//! The TOML file as written: every key optional, unknown keys refused.
//!
//! Nothing here is validated; `super::Config::from_raw` turns it into the
//! validated form and fills in defaults. Each section's file form is
//! declared with its keys (`section!`, `super::section`), the whole file's
//! with the list of sections (`sections!` in `super`); all are re-exported
//! here.

pub use super::alerts::RawAlerts;
pub use super::allow::RawAllow;
pub use super::campaign::RawCampaign;
pub use super::exact::RawExact;
pub use super::fingerprint::RawFingerprint;
pub use super::metrics::RawMetrics;
pub use super::milter::RawMilter;
pub use super::normalize::RawNormalize;
pub use super::own::RawOwn;
pub use super::policy::RawPolicy;
pub use super::scan::RawScan;
pub use super::state::RawState;
pub use super::store::{RawRedis, RawStore};
pub use super::thresholds::RawThresholds;
pub use super::window::RawWindow;
pub use super::zero_hour::RawZeroHour;

pub use super::RawConfig;
