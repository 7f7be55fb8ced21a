//! The settings of reading, as the daemon's configuration gives them
//! (its `[scan]` and `[normalize]` sections, which are read and checked
//! there): plain values here.

/// Bounds on how much of a message is read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanConfig {
    /// Decoded text kept for fingerprinting, in bytes; the rest is ignored.
    pub max_scan_bytes: usize,
    /// Raw message bytes handed to the MIME parser; a longer message is cut.
    pub max_parse_bytes: usize,
    /// Pictures of text are read with Tesseract when it is installed
    /// (`None`: never).
    pub ocr: Option<OcrConfig>,
    /// With `ocr`: pictures of text are read by another process (the
    /// daemon's OCR worker), so that this one need not load one;
    /// a reading that holds such a picture says so
    /// ([`crate::Reading::wants_ocr`]) and is read again there.
    pub ocr_elsewhere: bool,
}

/// Where Tesseract's language data is, and which languages it reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OcrConfig {
    /// The `tessdata` directory (`None`: the first of the usual places that
    /// holds the languages; the process's recognizer looks).
    pub data: Option<std::path::PathBuf>,
    /// Languages, as Tesseract names them (`eng`, `eng+deu`).
    pub languages: String,
}

impl Default for OcrConfig {
    fn default() -> OcrConfig {
        OcrConfig {
            data: None,
            languages: "eng".to_owned(),
        }
    }
}

impl Default for ScanConfig {
    fn default() -> ScanConfig {
        ScanConfig {
            max_scan_bytes: 256 * 1024,
            max_parse_bytes: 8 * 1024 * 1024,
            ocr: Some(OcrConfig::default()),
            ocr_elsewhere: false,
        }
    }
}

/// Which normalization steps run (each one can be switched off).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NormalizeConfig {
    pub nfkc: bool,
    pub case_fold: bool,
    pub strip_markup: bool,
    pub read_spellings: bool,
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
    fn default() -> NormalizeConfig {
        NormalizeConfig {
            nfkc: true,
            case_fold: true,
            strip_markup: true,
            read_spellings: true,
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
