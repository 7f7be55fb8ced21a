//! `[normalize]`: which normalization steps run; switches only, nothing to refuse.

use super::section::*;

section! {
    /// Which normalization steps run (each one can be switched off).
    #[derive(Eq)]
    pub struct NormalizeConfig in RawNormalize as "normalize" {
        nfkc: bool = true, file nfkc: bool, restart FINGERPRINTS;
        case_fold: bool = true, file case_fold: bool, restart FINGERPRINTS;
        strip_markup: bool = true, file strip_markup: bool, restart FINGERPRINTS;
        read_spellings: bool = true, file read_spellings: bool, restart FINGERPRINTS;
        urls_to_host: bool = true, file urls_to_host: bool, restart FINGERPRINTS;
        fold_digits: bool = true, file fold_digits: bool, restart FINGERPRINTS;
        drop_random_tokens: bool = true, file drop_random_tokens: bool, restart FINGERPRINTS;
        strip_greetings: bool = true, file strip_greetings: bool, restart FINGERPRINTS;
        strip_recipient: bool = true, file strip_recipient: bool, restart FINGERPRINTS;
        strip_quotes: bool = true, file strip_quotes: bool, restart FINGERPRINTS;
        strip_signatures: bool = true, file strip_signatures: bool, restart FINGERPRINTS;
        stop_words: bool = false, file stop_words: bool, restart FINGERPRINTS;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_section_gives_defaults() {
        assert_eq!(
            NormalizeConfig::try_from(RawNormalize::default()).unwrap(),
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
            read_spellings: Some(!d.read_spellings),
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
            NormalizeConfig::try_from(raw).unwrap(),
            NormalizeConfig {
                nfkc: !d.nfkc,
                case_fold: !d.case_fold,
                strip_markup: !d.strip_markup,
                read_spellings: !d.read_spellings,
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
