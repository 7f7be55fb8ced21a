//! Errors of the configuration layer: reading, parsing and validating TOML.

use std::path::PathBuf;

/// What went wrong while loading a configuration file.
///
/// Every variant names the file (when there is one) and, for validation
/// failures, the dotted key path (`window.max_distance`), so an operator can
/// fix the line without reading code.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read.
    #[error("cannot read config file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    /// The file is not valid TOML, or has an unknown key or a value of the wrong type.
    #[error("{origin}: {message}")]
    Parse { origin: String, message: String },
    /// A value has the right type but is out of range or inconsistent.
    #[error("{origin}: invalid value for `{key}`: {message}")]
    Invalid {
        origin: String,
        key: String,
        message: String,
    },
}

impl ConfigError {
    pub(crate) fn invalid(key: &str, message: impl Into<String>) -> Self {
        ConfigError::Invalid {
            origin: String::new(),
            key: key.to_owned(),
            message: message.into(),
        }
    }

    /// Sets the origin (file name or "built-in default") of an error made
    /// before the origin was known.
    pub(crate) fn with_origin(self, origin: &str) -> Self {
        match self {
            ConfigError::Invalid { key, message, .. } => ConfigError::Invalid {
                origin: origin.to_owned(),
                key,
                message,
            },
            ConfigError::Parse { message, .. } => ConfigError::Parse {
                origin: origin.to_owned(),
                message,
            },
            other => other,
        }
    }

    /// The dotted key path this error is about, if it is about one key.
    pub fn key(&self) -> Option<&str> {
        match self {
            ConfigError::Invalid { key, .. } => Some(key),
            _ => None,
        }
    }
}
