//! `[normalize]`: which normalization steps run; switches only, nothing to refuse.

use super::raw::RawNormalize;

/// Which normalization steps run (each one can be switched off).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalizeConfig {
    pub nfkc: bool,
    pub case_fold: bool,
    pub strip_markup: bool,
    pub urls_to_host: bool,
    pub fold_digits: bool,
    pub drop_random_tokens: bool,
    pub strip_greetings: bool,
    pub strip_recipient: bool,
    pub strip_quotes: bool,
    pub strip_signatures: bool,
    pub stop_words: bool,
}

impl Default for NormalizeConfig {
    fn default() -> Self {
        NormalizeConfig {
            nfkc: true,
            case_fold: true,
            strip_markup: true,
            urls_to_host: true,
            fold_digits: true,
            drop_random_tokens: true,
            strip_greetings: true,
            strip_recipient: true,
            strip_quotes: true,
            strip_signatures: true,
            stop_words: false,
        }
    }
}

/// Every step is a switch with no range to check, so this cannot fail.
impl From<RawNormalize> for NormalizeConfig {
    fn from(raw: RawNormalize) -> Self {
        let RawNormalize {
            nfkc,
            case_fold,
            strip_markup,
            urls_to_host,
            fold_digits,
            drop_random_tokens,
            strip_greetings,
            strip_recipient,
            strip_quotes,
            strip_signatures,
            stop_words,
        } = raw;
        let d = NormalizeConfig::default();
        NormalizeConfig {
            nfkc: nfkc.unwrap_or(d.nfkc),
            case_fold: case_fold.unwrap_or(d.case_fold),
            strip_markup: strip_markup.unwrap_or(d.strip_markup),
            urls_to_host: urls_to_host.unwrap_or(d.urls_to_host),
            fold_digits: fold_digits.unwrap_or(d.fold_digits),
            drop_random_tokens: drop_random_tokens.unwrap_or(d.drop_random_tokens),
            strip_greetings: strip_greetings.unwrap_or(d.strip_greetings),
            strip_recipient: strip_recipient.unwrap_or(d.strip_recipient),
            strip_quotes: strip_quotes.unwrap_or(d.strip_quotes),
            strip_signatures: strip_signatures.unwrap_or(d.strip_signatures),
            stop_words: stop_words.unwrap_or(d.stop_words),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_section_gives_defaults() {
        assert_eq!(
            NormalizeConfig::from(RawNormalize::default()),
            NormalizeConfig::default()
        );
    }

    /// Each key sets its own step: flipping them all flips every field.
    #[test]
    fn every_switch_sets_its_own_step() {
        let d = NormalizeConfig::default();
        let raw = RawNormalize {
            nfkc: Some(!d.nfkc),
            case_fold: Some(!d.case_fold),
            strip_markup: Some(!d.strip_markup),
            urls_to_host: Some(!d.urls_to_host),
            fold_digits: Some(!d.fold_digits),
            drop_random_tokens: Some(!d.drop_random_tokens),
            strip_greetings: Some(!d.strip_greetings),
            strip_recipient: Some(!d.strip_recipient),
            strip_quotes: Some(!d.strip_quotes),
            strip_signatures: Some(!d.strip_signatures),
            stop_words: Some(!d.stop_words),
        };
        assert_eq!(
            NormalizeConfig::from(raw),
            NormalizeConfig {
                nfkc: !d.nfkc,
                case_fold: !d.case_fold,
                strip_markup: !d.strip_markup,
                urls_to_host: !d.urls_to_host,
                fold_digits: !d.fold_digits,
                drop_random_tokens: !d.drop_random_tokens,
                strip_greetings: !d.strip_greetings,
                strip_recipient: !d.strip_recipient,
                strip_quotes: !d.strip_quotes,
                strip_signatures: !d.strip_signatures,
                stop_words: !d.stop_words,
            }
        );
    }
}
