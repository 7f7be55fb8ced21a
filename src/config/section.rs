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
/// Why a fingerprinting key waits for a restart.
pub const FINGERPRINTS: &str = "fingerprints would no longer match the window";
/// Why a sizing key waits for a restart.
pub const SIZES: &str = "sizes of the in-memory state";
/// Why a matching bound waits for a restart.
pub const LINKS: &str = "the window's links were made with it";

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
