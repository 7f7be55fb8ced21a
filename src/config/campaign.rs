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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_section_gives_defaults() {
        assert_eq!(
            CampaignConfig::from(RawCampaign::default()),
            CampaignConfig::default()
        );
    }

    #[test]
    fn keep_subjects_is_read_and_max_campaigns_ignored() {
        let c = CampaignConfig::from(RawCampaign {
            max_campaigns: Some(0),
            keep_subjects: Some(false),
        });
        assert_eq!(
            c,
            CampaignConfig {
                keep_subjects: false
            }
        );
    }
}
