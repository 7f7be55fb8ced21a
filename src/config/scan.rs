//! `[scan]`: how much of a message the engine looks at.

use super::section::*;
use super::to_usize;
use super::ConfigError;

section! {
    /// Bounds on how much of a message the engine looks at.
    #[derive(Eq)]
    pub struct ScanConfig in RawScan as "scan" {
        /// Decoded text kept for fingerprinting, in bytes; the rest is ignored.
        max_scan_bytes: usize = 256 * 1024,
            file max_scan_bytes: u64,
            read |k, v| to_usize(k, v, 1024, 64 << 20),
            write to_u64,
            restart FINGERPRINTS;
        /// Raw message bytes handed to the MIME parser; a longer message is cut.
        max_parse_bytes: usize = 8 * 1024 * 1024,
            file max_parse_bytes: u64,
            read |k, v| to_usize(k, v, 1024, 1 << 30),
            write to_u64,
            restart FINGERPRINTS;
        /// Pictures of text under a short text are read with Tesseract:
        /// "auto" (when libtesseract and the language data are installed),
        /// "off", or the absolute path of a tessdata directory.
        ocr: String = "auto".to_owned(),
            file ocr: String,
            read |k, v| if v == "auto" || v == "off" || v.starts_with('/') {
                Ok(v)
            } else {
                Err(ConfigError::invalid(k, "must be \"auto\", \"off\" or an absolute path"))
            },
            write |s| Some(s.clone()),
            restart WORKERS;
        /// Languages Tesseract reads, as it names them ("eng", "eng+deu").
        ocr_languages: String = "eng".to_owned(),
            file ocr_languages: String,
            read |k, v| if !v.is_empty()
                && v.len() <= 64
                && v.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'+')
            {
                Ok(v)
            } else {
                Err(ConfigError::invalid(k, "must be language names joined by +, like eng+deu"))
            },
            write |s| Some(s.clone()),
            restart WORKERS;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::tests::refusal;

    fn raw(set: fn(&mut RawScan)) -> RawScan {
        let mut r = RawScan::default();
        set(&mut r);
        r
    }

    #[test]
    fn empty_section_gives_defaults() {
        assert_eq!(
            ScanConfig::try_from(RawScan::default()).unwrap(),
            ScanConfig::default()
        );
    }

    #[test]
    fn sizes_out_of_range_are_refused_naming_their_key() {
        for (raw, key, message) in [
            (
                raw(|r| r.max_scan_bytes = Some(1023)),
                "scan.max_scan_bytes",
                "1023 is outside 1024..=67108864",
            ),
            (
                raw(|r| r.max_scan_bytes = Some((64 << 20) + 1)),
                "scan.max_scan_bytes",
                "67108865 is outside 1024..=67108864",
            ),
            (
                raw(|r| r.max_parse_bytes = Some(1023)),
                "scan.max_parse_bytes",
                "1023 is outside 1024..=1073741824",
            ),
            (
                raw(|r| r.max_parse_bytes = Some((1 << 30) + 1)),
                "scan.max_parse_bytes",
                "1073741825 is outside 1024..=1073741824",
            ),
            (
                raw(|r| r.ocr = Some("tessdata".to_owned())),
                "scan.ocr",
                "must be \"auto\", \"off\" or an absolute path",
            ),
            (
                raw(|r| r.ocr_languages = Some("eng, deu".to_owned())),
                "scan.ocr_languages",
                "must be language names joined by +, like eng+deu",
            ),
            (
                raw(|r| r.ocr_languages = Some(String::new())),
                "scan.ocr_languages",
                "must be language names joined by +, like eng+deu",
            ),
        ] {
            assert_eq!(
                refusal(ScanConfig::try_from(raw)),
                (key.to_owned(), message.to_owned())
            );
        }
    }

    #[test]
    fn ocr_settings_are_read() {
        let c = ScanConfig::try_from(raw(|r| {
            r.ocr = Some("/opt/tessdata".to_owned());
            r.ocr_languages = Some("eng+deu".to_owned());
        }))
        .unwrap();
        assert_eq!(
            (c.ocr.as_str(), c.ocr_languages.as_str()),
            ("/opt/tessdata", "eng+deu")
        );
        let off = ScanConfig::try_from(raw(|r| r.ocr = Some("off".to_owned()))).unwrap();
        assert_eq!(off.ocr, "off");
    }

    #[test]
    fn range_ends_are_accepted() {
        let c = ScanConfig::try_from(RawScan {
            max_scan_bytes: Some(1024),
            max_parse_bytes: Some(1 << 30),
            ..RawScan::default()
        })
        .unwrap();
        assert_eq!((c.max_scan_bytes, c.max_parse_bytes), (1024, 1 << 30));
    }
}
