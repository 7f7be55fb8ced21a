//! `[campaign]`: campaign bookkeeping; a switch only, nothing to refuse.

use super::section::*;

section! {
    /// Campaign bookkeeping.
    pub struct CampaignConfig in RawCampaign as "campaign" {
        /// Keep a sample subject per campaign (shown in logs, alerts, /campaigns).
        keep_subjects: bool = true, file keep_subjects: bool;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_section_gives_defaults() {
        assert_eq!(
            CampaignConfig::try_from(RawCampaign::default()).unwrap(),
            CampaignConfig::default()
        );
    }

    #[test]
    fn keep_subjects_is_read_and_the_dead_max_campaigns_is_refused() {
        let c = CampaignConfig::try_from(RawCampaign {
            keep_subjects: Some(false),
        })
        .unwrap();
        assert_eq!(
            c,
            CampaignConfig {
                keep_subjects: false
            }
        );
        // It never did anything; since 2026-11-26 it is an unknown key.
        let err =
            crate::config::Config::from_toml_str("[campaign]\nmax_campaigns = 5000\n").unwrap_err();
        assert!(err.to_string().contains("max_campaigns"), "{err}");
    }
}
