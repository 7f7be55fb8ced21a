//! The site's head: the latest word on the operators' corrections and the
//! domain allowances, versioned and sealed (issue 64).
//!
//! A seal proves who wrote a value, not that it is still the latest: a
//! withdrawn allowance written back, a correction's log entry deleted, a
//! value replaced by an older sealed one, all carry good seals. So the
//! corrections in force and the domain allowances live in one sealed value
//! (`{<prefix>:v<version>}:head`) with a version that only goes up: every
//! change is a compare-and-set from the version read (a Lua script), and
//! every host remembers the newest version it verified, in memory and in
//! its state directory (`head.bin`, so that a restart remembers it too).
//! A head older than that, missing, or not sealed with the site's key is
//! a rollback: the host says so, keeps what it verified and writes it back.
//! The log still carries each correction, in its place among the messages;
//! the head is what a replica that missed one (an entry removed, a log cut)
//! learns it from.

use crate::engine::campaign::{CampaignId, WHILE_LIVE};
use crate::engine::Correction;
use crate::store::codec::{CodecError, Reader, Writer};

/// First bytes of an encoded head, and its format.
const MAGIC: &[u8; 4] = b"BWHD";
const FORMAT: u8 = 1;
/// Most domain allowances a head holds.
pub const MAX_DOMAINS: usize = crate::engine::allowance::MAX_DOMAINS;
/// Most campaign corrections a head holds (the oldest go first).
pub const MAX_CORRECTIONS: usize = 10_000;
/// Largest encoded head read.
pub const MAX_HEAD_BYTES: usize = 2 << 20;

/// A campaign correction as the head keeps it: the latest for its id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Corrected {
    pub correction: Correction,
    /// When it was made (Unix seconds).
    pub at: u64,
}

/// The head's contents.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Head {
    /// Goes up by one with every change; 0: none was ever written.
    pub version: u64,
    /// When it was written (Unix seconds).
    pub written_at: u64,
    /// Sender domains allowed and until when (Unix seconds; `u64::MAX`:
    /// until withdrawn).
    pub domains: Vec<(String, u64)>,
    /// The latest correction of each campaign corrected lately.
    pub corrections: Vec<Corrected>,
}

impl Head {
    /// The bytes of the head (sealed by the caller).
    pub fn encode(&self) -> Vec<u8> {
        let mut w = Writer(Vec::with_capacity(64 + 40 * self.corrections.len()));
        w.0.extend_from_slice(MAGIC);
        w.u8(FORMAT);
        w.u64(self.version);
        w.u64(self.written_at);
        let domains = self.domains.iter().take(MAX_DOMAINS);
        w.u16(domains.len() as u16);
        for (d, until) in domains {
            w.str(d, 255);
            w.u64(*until);
        }
        let corrections = self.corrections.iter().take(MAX_CORRECTIONS);
        w.u16(corrections.len() as u16);
        for c in corrections {
            let (kind, id, until) = match c.correction {
                Correction::Allow { id, until } => (1, id, until),
                Correction::Forget { id } => (2, id, 0),
            };
            w.u8(kind);
            w.u64(id.0);
            w.u64(until);
            w.u64(c.at);
        }
        w.0
    }

    /// Reads [`Head::encode`]'s bytes; anything else is an error.
    pub fn decode(bytes: &[u8]) -> Result<Head, CodecError> {
        let mut r = Reader::new(bytes, "redis head");
        if r.array::<4>()? != *MAGIC || r.u8()? != FORMAT {
            return Err(CodecError::Invalid {
                what: "redis head: not a head of this format".into(),
            });
        }
        let (version, written_at) = (r.u64()?, r.u64()?);
        let n = r.count16(MAX_DOMAINS, "redis head domains")?;
        let mut domains = Vec::with_capacity(n);
        for _ in 0..n {
            let d = r.string(255)?;
            domains.push((d, r.u64()?));
        }
        let n = r.count16(MAX_CORRECTIONS, "redis head corrections")?;
        let mut corrections = Vec::with_capacity(n);
        for _ in 0..n {
            let (kind, id, until, at) = (r.u8()?, CampaignId(r.u64()?), r.u64()?, r.u64()?);
            let correction = match kind {
                1 => Correction::Allow { id, until },
                2 => Correction::Forget { id },
                k => {
                    return Err(CodecError::Invalid {
                        what: format!("redis head correction kind {k}"),
                    })
                }
            };
            corrections.push(Corrected { correction, at });
        }
        r.finish()?;
        Ok(Head {
            version,
            written_at,
            domains,
            corrections,
        })
    }

    /// Allows `domain` until `until`, or withdraws it (`None`).
    pub fn set_domain(&mut self, domain: &str, until: Option<u64>) {
        self.domains.retain(|(d, _)| d != domain);
        if let Some(u) = until {
            if self.domains.len() < MAX_DOMAINS {
                self.domains.push((domain.to_owned(), u));
            }
        }
    }

    /// Notes `c`, made at `at`, as its campaign's latest correction.
    pub fn correct(&mut self, c: Correction, at: u64) {
        self.corrections.retain(|x| x.correction.id() != c.id());
        self.corrections.push(Corrected { correction: c, at });
        if self.corrections.len() > MAX_CORRECTIONS {
            let extra = self.corrections.len() - MAX_CORRECTIONS;
            self.corrections.drain(..extra);
        }
    }

    /// Drops what no longer says anything: domain allowances that ran out
    /// at `now`, and corrections made more than `keep` seconds before the
    /// newest one that are no allowance still running then (a withdrawal
    /// or a forget outlives the window of the campaign it names; an
    /// allowance lives as long as it runs). Corrections go by their own
    /// clock, the messages' (a replay's is years behind the wall's).
    pub fn prune(&mut self, now: u64, keep: u64) {
        self.domains.retain(|(_, until)| *until > now);
        let newest = self.corrections.iter().map(|c| c.at).max().unwrap_or(0);
        self.corrections.retain(|c| {
            let running = matches!(c.correction, Correction::Allow { until, .. }
                if until > newest && until != 0);
            running || c.at.saturating_add(keep) >= newest
        });
    }

    /// The domain allowances running at `now`.
    pub fn domains_at(&self, now: u64) -> Vec<(String, u64)> {
        self.domains
            .iter()
            .filter(|(_, u)| *u > now)
            .cloned()
            .collect()
    }
}

/// An allowance without end, as the head keeps it.
pub const WHILE_LIVE_UNTIL: u64 = WHILE_LIVE;

#[cfg(test)]
mod tests {
    use super::*;

    fn head() -> Head {
        let mut h = Head {
            version: 7,
            written_at: 1_700_000_000,
            ..Head::default()
        };
        h.set_domain("news.shop.example", Some(u64::MAX));
        h.set_domain("old.example", Some(1_600_000_000));
        h.correct(
            Correction::Allow {
                id: CampaignId(0xabc),
                until: WHILE_LIVE,
            },
            1_700_000_000,
        );
        h.correct(Correction::Forget { id: CampaignId(5) }, 1_699_000_000);
        h
    }

    #[test]
    fn a_head_reads_back_and_refuses_what_it_is_not() {
        let h = head();
        let bytes = h.encode();
        assert_eq!(Head::decode(&bytes).unwrap(), h);
        for cut in 0..bytes.len() {
            assert!(Head::decode(&bytes[..cut]).is_err(), "{cut}");
        }
        let mut more = bytes.clone();
        more.push(0);
        assert!(Head::decode(&more).is_err());
        let mut other = bytes;
        other[4] = 9;
        assert!(Head::decode(&other).is_err());
    }

    #[test]
    fn the_latest_correction_of_a_campaign_stands_and_old_ones_go() {
        let mut h = head();
        h.correct(
            Correction::Allow {
                id: CampaignId(0xabc),
                until: 0,
            },
            1_700_000_100,
        );
        assert_eq!(h.corrections.len(), 2);
        assert!(h.corrections.iter().any(|c| c.correction
            == Correction::Allow {
                id: CampaignId(0xabc),
                until: 0
            }));
        h.set_domain("news.shop.example", None);
        h.prune(1_700_000_200, 3600);
        assert!(h.domains.is_empty(), "withdrawn, and ran out");
        assert_eq!(h.corrections.len(), 1, "the forget is older than an hour");
        // By the corrections' own clock: a later one moves it.
        h.prune(1_800_000_000, 3600);
        assert_eq!(h.corrections.len(), 1, "the wall's clock prunes none");
        h.correct(Correction::Forget { id: CampaignId(7) }, 1_700_010_000);
        h.prune(1_700_010_000, 3600);
        assert_eq!(h.corrections.len(), 1);
        assert_eq!(h.corrections[0].correction.id(), CampaignId(7));
    }
}
