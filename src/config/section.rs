//! One declaration per key: [`section!`] writes a section's file form,
//! validated form, defaults, reading, writing back and reload class from a
//! single list.
//!
//! For each key the list gives the validated field and its type, its
//! default, the name and TOML type it has in the file, how a file value is
//! read (checked and converted; the key path is passed in for the error),
//! how the field is written back (for `check-config`), and, when a new
//! value cannot apply until a restart, why. From that the macro generates:
//!
//! - `RawXxx`: the section as written, every key optional, unknown keys
//!   refused (serde);
//! - the validated struct with its doc comments, and its `Default`;
//! - `TryFrom<RawXxx>`: defaults filled in, each key present read in the
//!   order declared (the first bad key is the one reported), then the
//!   section's `check` for rules between its own keys;
//! - `From<&Xxx> for RawXxx`: the values as a file would hold them;
//! - `KEYS` (every dotted key path), `restart_needed` (the keys that differ
//!   and wait for a restart, with why) and `keep_running` (a reload keeps
//!   exactly those at their running values).
//!
//! `read` defaults to taking the file's value as it is and `write` to
//! writing the field as it is; both need the two types to be the same.
//! The conversions most keys share are the functions below (`to_u64`,
//! `secs_in`, `word`, ...).

use std::time::Duration;

use super::{in_range, ConfigError};

/// A key whose new value waits for a restart, and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Restart {
    /// The dotted key path (`window.max_entries`).
    pub key: &'static str,
    pub why: &'static str,
}

impl std::fmt::Display for Restart {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} ({})", self.key, self.why)
    }
}

/// Why a listener's key waits for a restart.
pub const LISTENER: &str = "listeners are opened at start";
/// Why `milter.workers` waits for a restart.
pub const WORKERS: &str = "the workers are started at start";
/// Why a fingerprinting key waits for a restart.
pub const FINGERPRINTS: &str = "fingerprints would no longer match the window";
/// Why a sizing key waits for a restart.
pub const SIZES: &str = "sizes of the in-memory state";
/// Why a matching bound waits for a restart.
pub const LINKS: &str = "the window's links were made with it";

/// Written back: a count as the file's `u64`.
pub fn to_u64(v: &usize) -> Option<u64> {
    Some(*v as u64)
}

/// Written back: a count as the file's `u32` (saturating).
pub fn to_u32(v: &usize) -> Option<u32> {
    Some(u32::try_from(*v).unwrap_or(u32::MAX))
}

/// Written back: a duration in whole seconds.
pub fn to_secs(d: &Duration) -> Option<u64> {
    Some(d.as_secs())
}

/// Written back: a duration in milliseconds (saturating).
pub fn to_millis(d: &Duration) -> Option<u64> {
    Some(u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
}

/// Read: seconds in `lo..=hi` as a duration.
pub fn secs_in(key: &str, v: u64, lo: u64, hi: u64) -> Result<Duration, ConfigError> {
    Ok(Duration::from_secs(in_range(key, v, lo, hi)?))
}

/// Read: milliseconds in `lo..=hi` as a duration.
pub fn millis_in(key: &str, v: u64, lo: u64, hi: u64) -> Result<Duration, ConfigError> {
    Ok(Duration::from_millis(in_range(key, v, lo, hi)?))
}

/// A key whose value is one of a few words: the words and what each
/// means, in one table per type, so that reading and writing back cannot
/// disagree.
pub type Words<T> = &'static [(&'static str, T)];

/// Read: the value of `v` in `words`, else an error listing them (`x is
/// not a, b or c`).
pub fn word<T: Copy>(key: &str, v: &str, words: Words<T>) -> Result<T, ConfigError> {
    if let Some((_, t)) = words.iter().find(|(w, _)| *w == v) {
        return Ok(*t);
    }
    let names: Vec<&str> = words.iter().map(|(w, _)| *w).collect();
    let list = match names.split_last() {
        Some((last, [])) => (*last).to_owned(),
        Some((last, rest)) => format!("{} or {last}", rest.join(", ")),
        None => String::new(),
    };
    Err(ConfigError::invalid(key, format!("`{v}` is not {list}")))
}

/// Written back: the word of `t` in `words`.
pub fn word_of<T: PartialEq>(t: &T, words: Words<T>) -> Option<String> {
    words
        .iter()
        .find(|(_, x)| x == t)
        .map(|(w, _)| (*w).to_owned())
}

macro_rules! section {
    (
        $(#[$meta:meta])*
        pub struct $Name:ident in $Raw:ident as $section:literal {
            $(
                $(#[$fmeta:meta])*
                $field:ident: $Ty:ty = $default:expr,
                    file $key:ident: $RawTy:ty
                    $(, read $read:expr)?
                    $(, write $write:expr)?
                    $(, restart $why:expr)?
                    ;
            )*
        }
        $(check $check:expr;)?
    ) => {
        #[doc = concat!("`[", $section, "]` as written in the file: every key optional, unknown keys refused.")]
        #[derive(Debug, Default, serde::Deserialize, serde::Serialize)]
        #[serde(deny_unknown_fields)]
        pub struct $Raw {
            $(pub $key: Option<$RawTy>,)*
        }

        $(#[$meta])*
        #[derive(Debug, Clone, PartialEq)]
        pub struct $Name {
            $($(#[$fmeta])* pub $field: $Ty,)*
        }

        impl Default for $Name {
            fn default() -> Self {
                $Name { $($field: $default,)* }
            }
        }

        impl $Name {
            /// Every key of the section, as dotted paths.
            pub const KEYS: &'static [&'static str] =
                &[$(concat!($section, ".", stringify!($key)),)*];

            /// The keys whose value differs in `new` and waits for a
            /// restart, in the order declared.
            pub fn restart_needed(&self, new: &Self) -> Vec<$crate::config::section::Restart> {
                #[allow(unused_mut)]
                let mut keys = Vec::new();
                $($(
                    if self.$field != new.$field {
                        keys.push($crate::config::section::Restart {
                            key: concat!($section, ".", stringify!($key)),
                            why: $why,
                        });
                    }
                )?)*
                let _ = new;
                keys
            }

            /// Puts back the running value of every key that waits for a
            /// restart.
            pub fn keep_running(&mut self, running: &Self) {
                $($(
                    // (`$why` names the repetition: only keys declared
                    // with `restart` are kept.)
                    let _: &str = $why;
                    self.$field = running.$field.clone();
                )?)*
                let _ = running;
            }
        }

        impl TryFrom<$Raw> for $Name {
            type Error = $crate::config::ConfigError;

            fn try_from(raw: $Raw) -> Result<Self, $crate::config::ConfigError> {
                #[allow(unused_mut)]
                let mut c = $Name::default();
                $(
                    if let Some(v) = raw.$key {
                        let read: fn(&'static str, $RawTy) -> Result<$Ty, $crate::config::ConfigError> =
                            section!(@read $($read)?);
                        c.$field = read(concat!($section, ".", stringify!($key)), v)?;
                    }
                )*
                $(
                    let check: fn(&$Name) -> Result<(), $crate::config::ConfigError> = $check;
                    check(&c)?;
                )?
                Ok(c)
            }
        }

        impl From<&$Name> for $Raw {
            fn from(c: &$Name) -> $Raw {
                let _ = c;
                $Raw {
                    $($key: {
                        let write: fn(&$Ty) -> Option<$RawTy> = section!(@write $($write)?);
                        write(&c.$field)
                    },)*
                }
            }
        }
    };
    (@read) => { |_, v| Ok(v) };
    (@read $read:expr) => { $read };
    (@write) => { |v| Some(v.clone()) };
    (@write $write:expr) => { $write };
}

pub(crate) use section;
