//! `[scan]`: how much of a message the engine looks at.

use super::raw::RawScan;
use super::{to_usize, ConfigError};

/// Bounds on how much of a message the engine looks at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanConfig {
    /// Decoded text kept for fingerprinting, in bytes; the rest is ignored.
    pub max_scan_bytes: usize,
    /// Raw message bytes handed to the MIME parser; a longer message is cut.
    pub max_parse_bytes: usize,
}

impl Default for ScanConfig {
    fn default() -> Self {
        ScanConfig {
            max_scan_bytes: 256 * 1024,
            max_parse_bytes: 8 * 1024 * 1024,
        }
    }
}

impl TryFrom<RawScan> for ScanConfig {
    type Error = ConfigError;

    fn try_from(raw: RawScan) -> Result<Self, ConfigError> {
        let RawScan {
            max_scan_bytes,
            max_parse_bytes,
        } = raw;
        let mut c = ScanConfig::default();
        if let Some(v) = max_scan_bytes {
            c.max_scan_bytes = to_usize("scan.max_scan_bytes", v, 1024, 64 << 20)?;
        }
        if let Some(v) = max_parse_bytes {
            c.max_parse_bytes = to_usize("scan.max_parse_bytes", v, 1024, 1 << 30)?;
        }
        Ok(c)
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
        ] {
            assert_eq!(
                refusal(ScanConfig::try_from(raw)),
                (key.to_owned(), message.to_owned())
            );
        }
    }

    #[test]
    fn range_ends_are_accepted() {
        let c = ScanConfig::try_from(RawScan {
            max_scan_bytes: Some(1024),
            max_parse_bytes: Some(1 << 30),
        })
        .unwrap();
        assert_eq!((c.max_scan_bytes, c.max_parse_bytes), (1024, 1 << 30));
    }
}
