//! `[campaign]`: campaign bookkeeping; a switch only, nothing to refuse.

use super::raw::RawCampaign;

/// Campaign bookkeeping.
#[derive(Debug, Clone, PartialEq)]
pub struct CampaignConfig {
    /// Keep a sample subject per campaign (shown in logs, alerts, /campaigns).
    pub keep_subjects: bool,
}

impl Default for CampaignConfig {
    fn default() -> Self {
        CampaignConfig {
            keep_subjects: true,
        }
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
