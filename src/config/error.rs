//! Errors of the configuration layer: reading, parsing and validating TOML.

use std::path::PathBuf;

/// What went wrong while loading a configuration file.
///
/// Every variant names the file (when there is one) and, for validation
/// failures, the dotted key path (`window.max_distance`), so an operator can
/// fix the line without reading code.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    /// The file could not be read: missing, unreadable, not a regular
    /// file (a FIFO, a device), or larger than [`crate::config::MAX_FILE`].
    #[error("cannot read config file {path}")]
    Read {
        path: PathBuf,
        #[source]
        source: crate::file::FileError,
    },
    /// The file is not UTF-8 text.
    #[error("config file {path} is not UTF-8 text")]
    NotText { path: PathBuf },
    /// The file is not valid TOML, or has an unknown key or a value of the wrong type.
    #[error("{origin}: {message}")]
    Parse { origin: String, message: String },
    /// A value has the right type but is out of range or inconsistent.
    /// `line` is the 1-based line of the key in the file, as a parse error
    /// gives one (none when the key is not in the file: a rule broken by
    /// another key's default).
    #[error("{origin}: {}invalid value for `{key}`: {message}", at_line(*.line))]
    Invalid {
        origin: String,
        line: Option<usize>,
        key: String,
        message: String,
    },
}

/// `line N: `, or nothing without a line.
fn at_line(line: Option<usize>) -> String {
    line.map(|n| format!("line {n}: ")).unwrap_or_default()
}

impl ConfigError {
    pub(crate) fn invalid(key: &str, message: impl Into<String>) -> Self {
        ConfigError::Invalid {
            origin: String::new(),
            line: None,
            key: key.to_owned(),
            message: message.into(),
        }
    }

    /// Sets the line of an `Invalid` error's key in `text`, the file it
    /// was read from.
    pub(crate) fn with_line_in(self, text: &str) -> Self {
        match self {
            ConfigError::Invalid {
                origin,
                key,
                message,
                ..
            } => ConfigError::Invalid {
                origin,
                line: super::lines::line_of_key(text, &key),
                key,
                message,
            },
            other => other,
        }
    }

    /// Sets the origin (file name or "built-in default") of an error made
    /// before the origin was known.
    pub(crate) fn with_origin(self, origin: &str) -> Self {
        match self {
            ConfigError::Invalid {
                key, message, line, ..
            } => ConfigError::Invalid {
                origin: origin.to_owned(),
                line,
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

    /// The 1-based line of the key this error is about, when known.
    pub fn line(&self) -> Option<usize> {
        match self {
            ConfigError::Invalid { line, .. } => *line,
            _ => None,
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
