//! `[scan]`: how much of a message the engine looks at.

use super::raw::RawScan;
use super::{to_usize, ConfigError};

/// Bounds on how much of a message the engine looks at.
#[derive(Debug, Clone, PartialEq)]
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
