//! The Redis store: Redis holds only an ordered log of the site's observations, and every daemon
//! applies that log, in its order, to an engine of its own (the replica).
//!
//! One message is one pipeline (one round trip) at most: `XADD` appends
//! the message's observation to the stream `{<prefix>:v<version>}:log` and
//! `XRANGE` reads what the site appended since this daemon last read. The
//! daemon applies those entries, its own included, to the replica and
//! takes its message's outcome from there. Up to `pool_size` round trips
//! are out at once; messages that arrive while all are out go together in
//! the next one (one `XADD` each, one `XRANGE`). Every replica applies the same
//! entries in the same order with the same settings, so every daemon sees
//! the same campaign ids and counts, and a lookup costs Redis about two
//! microseconds.
//!
//! The stream is trimmed to `window.max_entries` entries on every append
//! and, once a minute, to the window (by the time in its entry ids,
//! Redis's clock); it expires when no daemon appends for a window plus 5
//! minutes: Redis needs no cleanup job.
//!
//! A daemon that starts, or that was cut off, reads the log from where it
//! stopped (from the beginning after a start), at most
//! [`MAX_READS_PER_CALL`] chunks per message; until it has caught up with
//! its own entry its messages fall back to the local verdict. When the
//! log was trimmed past the replica's last entry, the replica starts again
//! from what the log holds.
//!
//! A log key that holds a value of another type (`WRONGTYPE`: set by hand
//! or by another program) would fail every round trip: it is deleted,
//! counted ([`Pool::wrongtype_repairs`]) and the round trip made
//! again, and every replica rebuilds from the new log.
//!
//! What the log does not give: a daemon that rebuilt its replica from
//! one window of log names a campaign whose first members have left the
//! log after the oldest member it saw, where the daemons that never
//! stopped keep the first member's id. Counts and verdicts agree.

use std::cell::Cell;
use std::collections::{HashMap, HashSet, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use redis::Value;
use sha2::{Digest, Sha256};

use super::redis::{err, Conn, Pool};
use crate::config::{Config, Thresholds};
use crate::engine::campaign::CampaignId;
use crate::engine::minhash::band_keys;
use crate::engine::party::{clamp_key, Origin, Parties, KEY_BYTES, MAX_ANSWERS, MAX_MESSAGE_RCPTS};
use crate::engine::shingle::Sentences;
use crate::engine::verdict::CampaignSummary;
use crate::engine::Correction;
use crate::engine::{Engine, Observation, Outcome, UnixSecs};
use crate::store::codec::{CodecError, Reader, Writer};
use crate::store::{BadStream, CatchUp, Store, StoreError};

/// Format of an entry; entries of another format are skipped. Format 2
/// added `thresholds.single_transaction_recipients`, format 3 the list-post
/// mark (`Observation::list_post`), format 4 the second and third MinHash
/// values (`Observation::deeper`, the containment test), format 5 the
/// band seeds' three smallest values (`Observation::smallest`, the band
/// probes), from which the reader makes the band keys (not written then),
/// format 6 the message's parties (`Observation::parties`: keyed hashes
/// of its sender, recipients and Message-IDs; an entry of an older format
/// reads as recipients of whom nothing is known, each counted, as those
/// builds count them), format 7 the message's sentence keys
/// (`Observation::sentences`: the text's anchors and the keys it looks
/// anchors up by; their upper halves, all the index keeps of a key); entries
/// of formats 1 to 6 are still read (format 6 and before without sentence
/// keys: such a message leaves no anchor and finds none); entries of
/// formats 1 to 4 are also read (as 0, false, the
/// sketch itself and none: such an entry's message joins no campaign on
/// containment, or none through a probe, which is what the builds that
/// wrote them decide but for copies diluted by little). Builds
/// before a format skip its entries (and say so): during a rolling upgrade
/// they count only their own and older hosts' mail. Format 8 (issue 63)
/// writes the parties as this MX observed them: the message's origin (own
/// mail or inbound), the sender and Message-ID of own mail only, up to
/// [`MAX_MESSAGE_RCPTS`] recipients' keys and 64-bit thread keys of the
/// Message-IDs answered, and a 15-bit sender-domain hash; the parties of
/// formats 6 and 7 (keys made another way) read as that many recipients of
/// whom nothing is known, and their 16-bit hash as its upper 15 bits.
pub(crate) const FORMAT: u8 = 8;
/// First byte of an operator's correction (`bulkwatch campaigns allow`
/// or `forget`) in the log. Builds before it skip such entries as
/// undecodable (and say so in their log).
const CORRECTION: u8 = 0xC0;
/// Most corrections stated again in one upkeep (see
/// `Replica::corrections_to_renew`).
const MAX_RENEWED: usize = 256;
/// Most campaigns whose last correction a replica remembers.
const MAX_CORRECTED: usize = 100_000;
/// Entries read per `XRANGE`.
const CHUNK: usize = 1024;
/// `XRANGE` calls a message may spend catching up after the first one;
/// beyond them the message is judged locally and the next one goes on.
pub const MAX_READS_PER_CALL: usize = 4;
/// Outcomes kept for entries applied by another thread's call.
const RECENT: usize = 4096;
/// Most messages one round trip carries.
pub const MAX_BATCH: usize = 256;
/// Most MinHash bands an entry may carry.
const MAX_BANDS: usize = 64;
/// Most seeds whose three smallest values an entry may carry (two per band).
const MAX_SMALLEST: usize = 2 * MAX_BANDS;
/// Most sentence keys an entry may carry.
const MAX_SENTENCES: usize = crate::engine::shingle::MAX_SENTENCE_KEYS;
/// Longest sample subject and sender name in an entry, in characters (as
/// the memory store keeps them).
const MAX_SUBJECT: usize = 120;
const MAX_NAME: usize = 100;
/// Seconds the log outlives the window (clock differences between hosts).
const MARGIN_SECS: u64 = 300;
/// Most seconds an entry's time may be ahead of Redis's clock.
const MAX_AHEAD_SECS: u64 = 3600;
/// How often (Redis's clock, ms) a daemon renews the log's TTL and trims
/// entries older than the window: well within the margin.
const UPKEEP_MS: u64 = 60_000;

/// Whether Redis answered `WRONGTYPE` (a key of another type), to any
/// command of a pipeline.
fn is_wrongtype(e: &redis::RedisError) -> bool {
    e.clone()
        .into_server_errors()
        .is_some_and(|errs| errs.iter().any(|(_, s)| s.code() == "WRONGTYPE"))
}

/// Deletes `KEYS[1]` unless it is a stream (or missing); returns the keys
/// deleted.
const REPAIR: &str = "local t = redis.call('TYPE', KEYS[1]).ok \
    if t == 'stream' or t == 'none' then return 0 end \
    return redis.call('DEL', KEYS[1])";

/// A stream entry id: milliseconds of Redis's clock, then a sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct StreamId(pub u64, pub u64);

impl StreamId {
    fn parse(b: &[u8]) -> Result<StreamId, StoreError> {
        let bad = || -> StoreError {
            BadStream::EntryId {
                id: String::from_utf8_lossy(b).into_owned(),
            }
            .into()
        };
        let s = std::str::from_utf8(b).map_err(|_| bad())?;
        let (ms, n) = s.split_once('-').ok_or_else(bad)?;
        Ok(StreamId(
            ms.parse().map_err(|_| bad())?,
            n.parse().map_err(|_| bad())?,
        ))
    }
}

impl std::fmt::Display for StreamId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}-{}", self.0, self.1)
    }
}

/// The entry of one observation at time `now`: little-endian fields in a
/// fixed order ([`crate::store::codec`]), each text as a presence flag and a
/// length-prefixed string.
pub fn encode(obs: &Observation, now: UnixSecs) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(192));
    w.u8(FORMAT);
    w.u64(now.0);
    w.0.extend_from_slice(&obs.exact);
    w.u64(obs.simhash);
    w.u64(obs.sketch);
    // Band keys that the smallest values give are not written (none, and
    // the reader makes them): 32 bytes less an entry with four bands.
    let derived = !obs.bands.is_empty()
        && obs.smallest.len() <= MAX_SMALLEST
        && band_keys(&obs.smallest).eq(obs.bands.iter().copied());
    let bands = if derived { &[][..] } else { &obs.bands[..] };
    w.u8(bands.len().min(MAX_BANDS) as u8);
    for band in bands.iter().take(MAX_BANDS) {
        w.u64(*band);
    }
    w.u8(u8::from(obs.near));
    // What builds before format 6 count the message for.
    w.u16(crate::engine::campaign::counted(obs.parties.recipients()));
    w.u16(obs.sender);
    w.u32(u32::try_from(obs.features).unwrap_or(u32::MAX));
    let t = &obs.thresholds;
    w.f64(t.bulk_threshold);
    w.f64(t.suspect_threshold);
    w.u32(t.strong_distance);
    w.u32(t.strong_sketch_diff);
    w.f64(t.weak_match_weight);
    w.u32(t.single_transaction_recipients);
    put_text(&mut w, obs.sender_name.as_deref(), MAX_NAME);
    put_text(&mut w, obs.subject.as_deref(), MAX_SUBJECT);
    w.u8(u8::from(obs.list_post));
    w.u64(obs.deeper[0]);
    w.u64(obs.deeper[1]);
    w.u8(u8::from(obs.reply));
    w.u8(obs.smallest.len().min(MAX_SMALLEST) as u8);
    for v in obs.smallest.iter().take(MAX_SMALLEST).flatten() {
        w.u32(*v);
    }
    w.u8(u8::from(derived));
    put_parties(&mut w, &obs.parties);
    // Upper halves: what the index keys and checks an anchor by.
    for keys in [&obs.sentences.anchors, &obs.sentences.lookups] {
        let keys = keys.iter().take(MAX_SENTENCES);
        w.u8(keys.len() as u8);
        for k in keys {
            w.u32((k >> 32) as u32);
        }
    }
    w.0
}

/// The parties of an entry (format 8): the origin (0 inbound, 1 own),
/// the own sender's key and own Message-ID's thread key (each a presence
/// flag and the key), the recipients' keys (a 2-byte count, 3 bytes a
/// key), the recipients without a key, the thread keys answered.
fn put_parties(w: &mut Writer, p: &Parties) {
    w.u8(u8::from(p.own()));
    w.u8(u8::from(p.sender.is_some()));
    w.u32(p.sender.unwrap_or(0));
    w.u8(u8::from(p.message.is_some()));
    w.u64(p.message.unwrap_or(0));
    let rcpts = p.rcpts.iter().take(MAX_MESSAGE_RCPTS);
    w.u16(rcpts.len() as u16);
    for r in rcpts {
        w.0.extend_from_slice(&r.to_le_bytes()[..KEY_BYTES]);
    }
    // Keys past the bound (never made by a message) count as people.
    let dropped = p.rcpts.len().saturating_sub(MAX_MESSAGE_RCPTS) as u32;
    w.u32(p.anonymous.saturating_add(dropped));
    let answers = p.answers.iter().take(MAX_ANSWERS);
    w.u8(answers.len() as u8);
    for a in answers {
        w.u64(*a);
    }
}

fn get_parties(r: &mut Reader<'_>) -> Result<Parties, CodecError> {
    let origin = match r.u8()? {
        0 => Origin::Inbound,
        1 => Origin::Own,
        o => {
            return Err(CodecError::Invalid {
                what: format!("log entry origin {o}"),
            })
        }
    };
    let some = r.bool()?;
    let sender = Some(clamp_key(r.u32()?)).filter(|_| some && origin == Origin::Own);
    let some = r.bool()?;
    let message = Some(r.u64()?).filter(|_| some && origin == Origin::Own);
    let n = usize::from(r.u16()?);
    if n > MAX_MESSAGE_RCPTS {
        return Err(CodecError::TooLarge {
            what: "log entry recipients",
            count: n as u64,
            max: MAX_MESSAGE_RCPTS as u64,
        });
    }
    let mut rcpts = Vec::with_capacity(n);
    for _ in 0..n {
        let b = r.array::<KEY_BYTES>()?;
        let k = b.iter().rev().fold(0u32, |k, x| (k << 8) | u32::from(*x));
        if !rcpts.contains(&k) {
            rcpts.push(k);
        }
    }
    let anonymous = r.u32()?;
    let n = byte_count(r, MAX_ANSWERS, "log entry answers")?;
    let answers = (0..n).map(|_| r.u64()).collect::<Result<Vec<_>, _>>()?;
    Ok(Parties {
        origin,
        sender,
        rcpts,
        anonymous,
        message,
        answers,
    })
}

/// The parties of an entry of format 6 or 7 (keys made another way than
/// this build's): only how many recipients it reached, each unknown.
fn get_old_parties(r: &mut Reader<'_>) -> Result<Parties, CodecError> {
    for _ in 0..2 {
        let _ = (r.bool()?, r.u32()?);
    }
    let n = byte_count(r, 64, "log entry recipients")?;
    for _ in 0..n {
        let _ = r.u32()?;
    }
    let anonymous = r.u32()?;
    let m = byte_count(r, MAX_ANSWERS, "log entry answers")?;
    for _ in 0..m {
        let _ = r.u32()?;
    }
    Ok(Parties::anonymous(anonymous.saturating_add(n as u32)))
}

/// An optional text of at most `max_chars` characters.
fn put_text(w: &mut Writer, s: Option<&str>, max_chars: usize) {
    w.u8(u8::from(s.is_some()));
    if let Some(s) = s {
        let end = s.char_indices().nth(max_chars).map_or(s.len(), |(i, _)| i);
        w.str(s.get(..end).unwrap_or_default(), max_chars * 4);
    }
}

fn get_text(r: &mut Reader<'_>, max_chars: usize) -> Result<Option<String>, CodecError> {
    if r.bool()? {
        r.string(max_chars * 4).map(Some)
    } else {
        Ok(None)
    }
}

/// The entry of an operator's correction at time `now`.
pub fn encode_correction(c: Correction, now: UnixSecs) -> Vec<u8> {
    let mut w = Writer(Vec::with_capacity(26));
    w.u8(CORRECTION);
    w.u64(now.0);
    match c {
        Correction::Allow { id, until } => {
            w.u8(1);
            w.u64(id.0);
            w.u64(until);
        }
        Correction::Forget { id } => {
            w.u8(2);
            w.u64(id.0);
            w.u64(0);
        }
    }
    w.0
}

/// Reads a correction's entry (see [`encode_correction`]).
pub(crate) fn decode_correction(bytes: &[u8]) -> Result<(Correction, UnixSecs), CodecError> {
    let mut r = Reader::new(bytes, "log correction");
    let _ = r.u8()?;
    let now = UnixSecs(r.u64()?);
    let (op, id, until) = (r.u8()?, CampaignId(r.u64()?), r.u64()?);
    r.finish()?;
    match op {
        1 => Ok((Correction::Allow { id, until }, now)),
        2 => Ok((Correction::Forget { id }, now)),
        _ => Err(CodecError::Invalid {
            what: format!("correction {op}"),
        }),
    }
}

/// Reads an entry; anything but a whole, well-formed entry is an error.
pub fn decode(bytes: &[u8]) -> Result<(Observation, UnixSecs), StoreError> {
    read_entry(&mut Reader::new(bytes, "log entry")).map_err(|e| BadStream::Entry(e).into())
}

/// A one-byte count of an entry's items, refused above `max`.
fn byte_count(r: &mut Reader<'_>, max: usize, what: &'static str) -> Result<usize, CodecError> {
    let n = usize::from(r.u8()?);
    if n > max {
        return Err(CodecError::TooLarge {
            what,
            count: n as u64,
            max: max as u64,
        });
    }
    Ok(n)
}

fn read_entry(r: &mut Reader<'_>) -> Result<(Observation, UnixSecs), CodecError> {
    let format = r.u8()?;
    if !(1..=FORMAT).contains(&format) {
        return Err(CodecError::Invalid {
            what: format!("format {format}, this build reads {FORMAT}"),
        });
    }
    let now = UnixSecs(r.u64()?);
    let exact = r.array::<32>()?;
    let simhash = r.u64()?;
    let sketch = r.u64()?;
    let nbands = byte_count(r, MAX_BANDS, "log entry bands")?;
    let mut bands = (0..nbands)
        .map(|_| r.u64())
        .collect::<Result<Vec<_>, _>>()?;
    let near = r.bool()?;
    let recipients = r.u16()?;
    // Before format 8 a 16-bit hash; its upper 15 bits are this build's.
    let sender = if format >= 8 {
        r.u16()? & 0x7FFF
    } else {
        r.u16()? >> 1
    };
    let features = r.u32()? as usize;
    let thresholds = Thresholds {
        bulk_threshold: r.f64()?,
        suspect_threshold: r.f64()?,
        strong_distance: r.u32()?,
        strong_sketch_diff: r.u32()?,
        weak_match_weight: r.f64()?,
        single_transaction_recipients: if format >= 2 { r.u32()? } else { 0 },
    };
    let sender_name = get_text(r, MAX_NAME)?;
    let subject = get_text(r, MAX_SUBJECT)?;
    let list_post = format >= 3 && r.bool()?;
    let (deeper, reply) = if format >= 4 {
        ([r.u64()?, r.u64()?], r.bool()?)
    } else {
        ([sketch; 2], true)
    };
    let smallest = if format >= 5 {
        let n = byte_count(r, MAX_SMALLEST, "log entry smallest values")?;
        let smallest = (0..n)
            .map(|_| Ok([r.u32()?, r.u32()?, r.u32()?]))
            .collect::<Result<Vec<_>, CodecError>>()?;
        if r.bool()? {
            if !bands.is_empty() {
                return Err(CodecError::Invalid {
                    what: "log entry with band keys both written and derived".into(),
                });
            }
            bands = band_keys(&smallest).collect();
        }
        smallest
    } else {
        Vec::new()
    };
    let parties = if format >= 8 {
        get_parties(r)?
    } else if format >= 6 {
        get_old_parties(r)?
    } else {
        Parties::anonymous(recipients.into())
    };
    let sentences = if format >= 7 {
        let mut keys = |what| -> Result<Vec<u64>, CodecError> {
            let n = byte_count(r, MAX_SENTENCES, what)?;
            (0..n).map(|_| Ok(u64::from(r.u32()?) << 32)).collect()
        };
        Sentences {
            anchors: keys("log entry anchors")?,
            lookups: keys("log entry sentence keys")?,
        }
    } else {
        Sentences::default()
    };
    r.finish()?;
    Ok((
        Observation {
            exact,
            simhash,
            sketch,
            deeper,
            bands,
            smallest,
            sentences,
            near,
            parties,
            sender,
            sender_name,
            subject,
            features,
            thresholds,
            // Not in the entry: only the verdict reads it, from the
            // daemon's own observation of its message.
            list: false,
            list_post,
            reply,
            // Not in the entry: only the verdict reads them.
            kept_cut: None,
            partial: false,
        },
        now,
    ))
}

/// Bytes of the tag that ends every entry in the log: HMAC-SHA256 of the
/// entry under the site's log key ([`log_key`]), cut to 128 bits.
const TAG_LEN: usize = 16;

/// The key that seals the site's log: made from `fingerprint.hash_key`,
/// which every host of a site shares already (their fingerprints must
/// agree) and which nothing but bulkwatch needs. Whoever may write to the
/// site's Redis without it (another application, an account of the
/// server) cannot add an entry any host applies: no observation that
/// makes a campaign of ham, no correction that allows a spam campaign.
/// With the built-in key (public) the seal keeps out nobody: `keygen`.
pub fn log_key(cfg: &Config) -> [u8; 32] {
    let (k0, k1) = cfg.fingerprint.hash_key;
    Sha256::new()
        .chain_update(b"bulkwatch log key 1\0")
        .chain_update(k0.to_le_bytes())
        .chain_update(k1.to_le_bytes())
        .finalize()
        .into()
}

/// HMAC-SHA256 (RFC 2104) of `msg` under `key`, cut to [`TAG_LEN`].
/// (Eleven lines over `sha2`, which the project has, instead of the
/// `hmac` crate for one construction.)
fn tag(key: &[u8; 32], msg: &[u8]) -> [u8; TAG_LEN] {
    let pad = |b: u8| {
        let mut p = [b; 64];
        p.iter_mut().zip(key).for_each(|(p, k)| *p ^= k);
        p
    };
    let inner = Sha256::new()
        .chain_update(pad(0x36))
        .chain_update(msg)
        .finalize();
    let outer = Sha256::new()
        .chain_update(pad(0x5c))
        .chain_update(inner)
        .finalize();
    let mut t = [0u8; TAG_LEN];
    t.iter_mut().zip(outer).for_each(|(t, o)| *t = o);
    t
}

/// `entry` with its tag after it: what the log holds.
pub fn seal(key: &[u8; 32], entry: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(entry.len() + TAG_LEN);
    out.extend_from_slice(entry);
    out.extend_from_slice(&tag(key, entry));
    out
}

/// The entry in `sealed` (its tag cut off) when the tag is right; empty,
/// which no reader decodes, when it is not: the entry is skipped and
/// counted as a bad one. Compared without an early exit.
pub fn open(key: &[u8; 32], mut sealed: Vec<u8>) -> Vec<u8> {
    let Some(at) = sealed.len().checked_sub(TAG_LEN) else {
        return Vec::new();
    };
    let (entry, t) = sealed.split_at(at);
    if !same(t, &tag(key, entry)) {
        return Vec::new();
    }
    sealed.truncate(at);
    sealed
}

/// Whether `a` and `b` are the same bytes, compared without an early exit
/// (a tag's bytes are not told one at a time by how long a test takes).
fn same(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

/// The hex of the tag of `msg` under `key`: a sealed value in a Redis
/// string.
fn hex_tag(key: &[u8; 32], msg: &str) -> String {
    crate::engine::simhash::hex(&tag(key, msg.as_bytes()))
}

/// A domain allowance's value in the site's hash: `until`, a dot and the
/// hex of its tag over the domain and `until` ([`tag`]), so that a value
/// written without the site's key is not read.
fn sealed_until(key: &[u8; 32], domain: &str, until: u64) -> String {
    let hex = hex_tag(key, &format!("domain\0{domain}\0{until}"));
    format!("{until}.{hex}")
}

/// The `until` of a domain allowance's `value` for the hash field
/// `domain` when its tag is right ([`sealed_until`]).
fn opened_until(key: &[u8; 32], domain: &str, value: &str) -> Option<u64> {
    let until: u64 = value.split_once('.')?.0.parse().ok()?;
    same(
        sealed_until(key, domain, until).as_bytes(),
        value.as_bytes(),
    )
    .then_some(until)
}

/// Entries of an `XRANGE` reply, in order: (id, the entry's bytes, its
/// seal under `key` checked and cut off: [`open`]).
fn entries(v: Value, key: &[u8; 32]) -> Result<Vec<(StreamId, Vec<u8>)>, StoreError> {
    let bad = || -> StoreError { BadStream::Xrange.into() };
    let Value::Array(items) = v else {
        return Err(bad());
    };
    let mut out = Vec::with_capacity(items.len());
    for item in items {
        let Value::Array(parts) = item else {
            return Err(bad());
        };
        let mut parts = parts.into_iter();
        let (Some(Value::BulkString(id)), Some(Value::Array(fields)), None) =
            (parts.next(), parts.next(), parts.next())
        else {
            return Err(bad());
        };
        let id = StreamId::parse(&id)?;
        // Fields: "o", the entry. Another shape is kept as an empty entry,
        // which does not decode: it is skipped like any bad entry.
        let bytes = match <[Value; 2]>::try_from(fields) {
            Ok([_, Value::BulkString(b)]) => open(key, b),
            _ => Vec::new(),
        };
        out.push((id, bytes));
    }
    Ok(out)
}

fn stream_id(v: &Value) -> Result<StreamId, StoreError> {
    match v {
        Value::BulkString(b) => StreamId::parse(b),
        Value::SimpleString(s) => StreamId::parse(s.as_bytes()),
        _ => Err(BadStream::XaddId.into()),
    }
}

/// An entry dated more than [`MAX_AHEAD_SECS`] past Redis's clock when it
/// was appended (a host whose clock runs ahead). Applied, it would move
/// every replica's time forward, and campaigns would stop leaving the
/// window: every replica skips it.
fn too_far_ahead(now: UnixSecs, id: StreamId) -> bool {
    now.0 > id.0 / 1000 + MAX_AHEAD_SECS
}

fn too_short() -> StoreError {
    BadStream::ShortPipeline.into()
}

/// The answer for the message of entry `id`, sent at `now`, once the
/// replica has read the log as far as it could.
fn answer(r: &Replica, now: UnixSecs, id: StreamId) -> Logged {
    if r.last.is_none_or(|l| l < id) {
        return Logged::CatchingUp(CatchUp::Behind {
            applied: r.last,
            entry: id,
        });
    }
    if too_far_ahead(now, id) {
        let ahead = now.0 - id.0 / 1000;
        tracing::warn!(
            ahead_secs = ahead,
            "redis log: this host's clock is ahead of Redis's; its messages are not shared"
        );
        return Logged::CatchingUp(CatchUp::ClockAhead { ahead_secs: ahead });
    }
    r.outcome(id)
        .map_or_else(|| Logged::CatchingUp(CatchUp::OutcomeGone), Logged::Outcome)
}

/// A daemon's copy of the site's state, built from the log.
struct Replica {
    engine: Engine,
    /// The last entry applied.
    last: Option<StreamId>,
    /// Time of the newest entry applied: entries are applied at no earlier
    /// time (hosts' clocks differ a little).
    now: u64,
    /// Outcomes of the last entries applied.
    recent: VecDeque<(StreamId, Outcome)>,
    /// Redis's clock, in milliseconds, as of the newest id seen.
    redis_ms: u64,
    /// `redis_ms` when the TTL was last renewed and the log trimmed.
    upkeep_ms: u64,
    /// Entries applied since the replica was made (skipped ones not
    /// counted): tells [`LogStore::copy_due`] whether it moved.
    applied: u64,
    /// The replica has given an outcome since it was made: it has read the
    /// log up to its daemon's messages (a replica made at a start or a
    /// rebuild holds only the log's oldest part until then).
    answered: bool,
    /// For each campaign a correction applies to (its live id), Redis's
    /// clock (ms) of the last correction entry that named it.
    corrected: HashMap<CampaignId, u64>,
    /// For each campaign a correction applies to (its live id), the time
    /// (the entry's own, Unix seconds) of the latest correction applied to
    /// it: an older one is not applied ([`Replica::apply`]).
    corrected_at: HashMap<CampaignId, u64>,
    /// Campaigns that turned bulk in entries applied since the replica
    /// answered (any host's: [`LogStore::take_crossings`]), the latest
    /// [`MAX_CROSSINGS`].
    crossings: VecDeque<Crossing>,
}

/// Most crossings a replica keeps until they are taken.
const MAX_CROSSINGS: usize = 64;

/// A campaign turned bulk with an entry of the log (whichever host
/// appended it).
#[derive(Debug, Clone, PartialEq)]
pub struct Crossing {
    pub campaign: CampaignSummary,
    /// The entry's time (Unix seconds).
    pub at: u64,
    /// Its own mail turned bulk (`[own]`), not its mail from outside.
    pub own: bool,
}

impl Replica {
    fn new(cfg: &Config) -> Replica {
        Replica {
            engine: Engine::new(cfg),
            last: None,
            now: 0,
            recent: VecDeque::new(),
            redis_ms: 0,
            upkeep_ms: 0,
            applied: 0,
            answered: false,
            corrected: HashMap::new(),
            corrected_at: HashMap::new(),
            crossings: VecDeque::new(),
        }
    }

    /// Entries that state again the corrections in force whose last entry
    /// is older than `age_ms` (at most [`MAX_RENEWED`]): the log is trimmed
    /// to the window, but an allowed or forgotten campaign that keeps
    /// getting mail outlives it, and a replica that reads the log from its
    /// start (a daemon that starts) must still find them. Every daemon may
    /// renew one; a replica that applies it counts it as renewed, so a
    /// correction is stated about once per half window. Only a replica
    /// that has read the log up to its daemon's messages renews.
    fn corrections_to_renew(&mut self, age_ms: u64) -> Vec<Vec<u8>> {
        if !self.answered {
            return Vec::new();
        }
        // Campaigns that left the window need no renewal (nor memory).
        let engine = &self.engine;
        self.corrected.retain(|id, _| engine.is_live(*id));
        let now = UnixSecs(self.now);
        let due: Vec<Correction> = self
            .engine
            .allowances()
            .filter(|(_, until)| *until > self.now)
            .map(|(id, until)| Correction::Allow { id, until })
            .chain(self.engine.forgotten().map(|id| Correction::Forget { id }))
            .filter(|c| {
                self.corrected
                    .get(&c.id())
                    .is_none_or(|ms| self.redis_ms.saturating_sub(*ms) >= age_ms)
            })
            .take(MAX_RENEWED)
            .collect();
        for c in &due {
            self.corrected.insert(c.id(), self.redis_ms);
        }
        due.into_iter().map(|c| encode_correction(c, now)).collect()
    }

    /// Applies the entries after `last`, in order; returns how many it
    /// skipped (undecodable or dated too far ahead; every replica skips the
    /// same ones).
    fn apply(&mut self, batch: Vec<(StreamId, Vec<u8>)>) -> usize {
        let mut bad = 0;
        for (id, bytes) in batch {
            if self.last.is_some_and(|l| id <= l) {
                continue;
            }
            self.last = Some(id);
            self.redis_ms = self.redis_ms.max(id.0);
            if bytes.first() == Some(&CORRECTION) {
                match decode_correction(&bytes) {
                    Ok((c, now)) if !too_far_ahead(now, id) => {
                        // (Named even when it was forgotten already: a
                        // renewed forget counts as renewed.)
                        let named = self.engine.root_id(c.id());
                        // A correction older than one applied to the same
                        // campaign is a copy of an old entry (a sealed
                        // entry can be copied by whoever may write to
                        // Redis): an `allow` written again after a later
                        // withdrawal. Hosts renew with their own time, so
                        // a true correction is never older.
                        let older = named
                            .and_then(|live| self.corrected_at.get(&live))
                            .is_some_and(|at| now.0 < *at);
                        if older {
                            bad += 1;
                            continue;
                        }
                        self.now = self.now.max(now.0);
                        self.engine.correct(c);
                        if let Some(live) = named {
                            if self.corrected.len() < MAX_CORRECTED {
                                self.corrected.insert(live, id.0);
                            }
                            if self.corrected_at.len() < MAX_CORRECTED
                                || self.corrected_at.contains_key(&live)
                            {
                                let at = self.corrected_at.entry(live).or_insert(0);
                                *at = (*at).max(now.0);
                            }
                        }
                        self.applied += 1;
                    }
                    _ => bad += 1,
                }
                continue;
            }
            let Ok((obs, now)) = decode(&bytes) else {
                bad += 1;
                continue;
            };
            if too_far_ahead(now, id) {
                bad += 1;
                continue;
            }
            self.now = self.now.max(now.0);
            if let Ok(out) = Store::record(&mut self.engine, &obs, UnixSecs(self.now)) {
                self.applied += 1;
                // Crossings in the log's history, read after a start or a
                // rebuild, are not news.
                let own = obs.parties.own();
                let wanted = !own || self.engine.config().own.alert;
                if let Some(c) = out
                    .campaign
                    .as_ref()
                    .filter(|_| self.answered && out.newly_bulk && !out.allowed && wanted)
                {
                    if self.crossings.len() == MAX_CROSSINGS {
                        self.crossings.pop_front();
                    }
                    self.crossings.push_back(Crossing {
                        campaign: c.clone(),
                        at: now.0,
                        own,
                    });
                }
                if self.recent.len() == RECENT {
                    self.recent.pop_front();
                }
                self.recent.push_back((id, out));
            }
        }
        bad
    }

    fn outcome(&self, id: StreamId) -> Option<Outcome> {
        self.recent
            .iter()
            .rev()
            .find(|(i, _)| *i == id)
            .map(|(_, o)| o.clone())
    }
}

/// What [`LogStore::record_logged`] found.
#[derive(Debug)]
pub enum Logged {
    /// The message's outcome, from the replica.
    Outcome(Outcome),
    /// Redis answered, but the replica has not applied the message's entry
    /// (it is reading the log after a start or a rebuild): the local
    /// verdict stands. Not an outage.
    CatchingUp(CatchUp),
}

/// A message's log entry, and the time it was judged at.
struct Entry {
    bytes: Vec<u8>,
    now: UnixSecs,
}

/// A message waiting for its round trip.
struct Pending {
    seq: u64,
    entry: Entry,
    /// Wakes the call that waits for this message (with the queue's lock):
    /// when its answer is in, or when it is its turn to send.
    wake: Arc<Condvar>,
}

/// Messages waiting to be sent, and answers for the calls that wait.
#[derive(Default)]
struct Queue {
    next: u64,
    waiting: Vec<Pending>,
    /// Calls sending a batch (round trips out).
    sending: usize,
    /// Answers for calls whose messages another call sent.
    done: HashMap<u64, Result<Logged, StoreError>>,
    /// Calls that stopped waiting: their answers are not kept.
    gone: HashSet<u64>,
}

/// Ends a call's turn at sending, also if it panics: the first call still
/// waiting is woken to send next.
struct Turn<'a>(&'a LogStore);

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        if let Ok(mut q) = self.0.queue.lock() {
            q.sending = q.sending.saturating_sub(1);
            if let Some(next) = q.waiting.first() {
                next.wake.notify_one();
            }
        }
    }
}

/// The Redis store. `&self` methods may be called from
/// many threads at once.
///
/// Up to `pool_size` calls have their round trips out at once. Beyond
/// that, concurrent calls share round trips (group commit): the messages
/// that arrive while every trip is out wait, and the next pipeline carries
/// them all (at most [`MAX_BATCH`]), one `XADD` each and one `XRANGE`. So
/// a message costs at most one round trip, and under load far less of
/// Redis's time and the host's. Trips out at once read overlapping parts
/// of the log; whichever comes back first applies them, and the others
/// apply only what follows the replica's last entry.
/// A field and its value, as `HSCAN` answers them.
type Pair = (Vec<u8>, Vec<u8>);

/// Most `HSCAN` round trips one read of the domain allowances makes.
pub const MAX_DOMAIN_PAGES: usize = 20;

pub struct LogStore {
    /// Connections.
    pool: Pool,
    key: String,
    /// The key that seals and opens the log's entries ([`log_key`]).
    log_key: [u8; 32],
    cfg: Config,
    /// How long entries are kept, in milliseconds.
    keep_ms: u64,
    replica: Mutex<Replica>,
    queue: Mutex<Queue>,
    /// Most round trips out at once (`pool_size`).
    senders: usize,
    /// When the replica was last copied into a fallback engine, and how
    /// many entries it had applied then ([`LogStore::copy_due`]).
    copied: Mutex<Option<(Instant, u64)>>,
    /// How long a call waits for other calls' round trips to carry its
    /// message: the one out when it came and its own.
    wait: Duration,
    /// Round trips sent and messages they carried.
    trips: AtomicU64,
    carried: AtomicU64,
    /// `XRANGE` calls after a round trip's own (catching up).
    reads: AtomicU64,
}

impl std::fmt::Debug for LogStore {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LogStore").field("key", &self.key).finish()
    }
}

impl LogStore {
    /// A log store for `cfg.store.redis`; connects lazily, as
    /// [`Pool::open`].
    pub fn open(cfg: &Config) -> Result<LogStore, StoreError> {
        let pool = Pool::open(cfg)?;
        Ok(LogStore {
            key: format!("{}:log", pool.key_base()),
            log_key: log_key(cfg),
            pool,
            cfg: cfg.clone(),
            keep_ms: (cfg.window.window.as_secs() + MARGIN_SECS).saturating_mul(1000),
            replica: Mutex::new(Replica::new(cfg)),
            queue: Mutex::new(Queue::default()),
            senders: cfg.store.redis.pool_size.max(1),
            copied: Mutex::new(None),
            wait: cfg.store.redis.timeout.saturating_mul(2),
            trips: AtomicU64::new(0),
            carried: AtomicU64::new(0),
            reads: AtomicU64::new(0),
        })
    }

    /// The connection pool, for [`Pool::clear`] and
    /// [`Pool::key_base`].
    pub fn pool(&self) -> &Pool {
        &self.pool
    }

    /// The stream's key.
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The replica, locked. A call that panicked while holding it may have
    /// left it half applied: it is made anew (and reads the log again)
    /// rather than every later call failing until a restart.
    fn replica(&self) -> Result<MutexGuard<'_, Replica>, StoreError> {
        Ok(self.replica.lock().unwrap_or_else(|poisoned| {
            tracing::error!(
                "redis log: a call panicked while applying the log; rebuilding the replica"
            );
            self.replica.clear_poison();
            let mut r = poisoned.into_inner();
            *r = Replica::new(&self.cfg);
            r
        }))
    }

    fn queue(&self) -> Result<MutexGuard<'_, Queue>, StoreError> {
        self.queue.lock().map_err(|_| StoreError::Poisoned("queue"))
    }

    /// [`LogStore::record_logged`], with a replica still catching up as an
    /// error.
    pub fn record_shared(&self, obs: &Observation, now: UnixSecs) -> Result<Outcome, StoreError> {
        match self.record_logged(obs, now)? {
            Logged::Outcome(out) => Ok(out),
            Logged::CatchingUp(why) => Err(why.into()),
        }
    }

    /// Appends the message to the log, applies what is new and returns the
    /// message's outcome, or that the replica has not reached the message's
    /// entry yet. Either that or an error (Redis down or slow) leaves the
    /// message to the local verdict.
    ///
    /// When fewer than `pool_size` round trips are out, this call sends its
    /// message and those waiting; else it waits (at most twice the Redis
    /// timeout) for the answer that another call's round trip brings it.
    pub fn record_logged(&self, obs: &Observation, now: UnixSecs) -> Result<Logged, StoreError> {
        let wake = Arc::new(Condvar::new());
        let entry = encode(obs, now);
        let mut q = self.queue()?;
        let seq = q.next;
        q.next = q.next.wrapping_add(1);
        q.waiting.push(Pending {
            seq,
            entry: Entry { bytes: entry, now },
            wake: Arc::clone(&wake),
        });
        let deadline = Instant::now() + self.wait;
        loop {
            if let Some(answer) = q.done.remove(&seq) {
                return answer;
            }
            // (Nothing waits, this call's message included, only when a
            // call that took it panicked: then this call waits it out.)
            if q.sending < self.senders && !q.waiting.is_empty() {
                q.sending += 1;
                let turn = Turn(self);
                let n = q.waiting.len().min(MAX_BATCH);
                let (mut calls, batch): (Vec<_>, Vec<Entry>) = q
                    .waiting
                    .drain(..n)
                    .map(|p| ((p.seq, p.wake), p.entry))
                    .unzip();
                drop(q);
                let sent = self.send(&batch);
                q = self.queue()?;
                let answers: Vec<Result<Logged, StoreError>> = match sent {
                    Ok(answers) => answers.into_iter().map(Ok).collect(),
                    Err(e) => {
                        let e = Arc::new(e);
                        // The messages that came meanwhile would wait for
                        // a Redis that just failed: they fail with these.
                        calls.extend(q.waiting.drain(..).map(|p| (p.seq, p.wake)));
                        calls
                            .iter()
                            .map(|_| Err(StoreError::Batch(Arc::clone(&e))))
                            .collect()
                    }
                };
                for ((seq, wake), answer) in calls.iter().zip(answers) {
                    if !q.gone.remove(seq) {
                        q.done.insert(*seq, answer);
                        wake.notify_one();
                    }
                }
                // Ends the turn and wakes the call to send next (the lock
                // is taken again there).
                drop(q);
                drop(turn);
                q = self.queue()?;
                continue;
            }
            let left = deadline.saturating_duration_since(Instant::now());
            if left.is_zero() {
                // Not an outage: Redis answers, but other calls' round
                // trips (a replica reading the log) take long.
                if let Some(i) = q.waiting.iter().position(|p| p.seq == seq) {
                    q.waiting.remove(i);
                } else {
                    q.gone.insert(seq);
                }
                return Ok(Logged::CatchingUp(CatchUp::HeldByOthers {
                    waited_ms: self.wait.as_millis(),
                }));
            }
            q = wake
                .wait_timeout(q, left)
                .map_err(|_| StoreError::Poisoned("queue"))?
                .0;
        }
    }

    /// Records `msgs` in one round trip (one per [`MAX_BATCH`] messages)
    /// and returns an answer for each, in order: what
    /// [`LogStore::record_logged`] does for the messages that wait, for a
    /// caller that holds several at once. It does not wait for calls of
    /// other threads (their round trips and this one may overlap; each
    /// entry is still applied once, in the log's order).
    pub fn record_batch(
        &self,
        msgs: &[(&Observation, UnixSecs)],
    ) -> Result<Vec<Logged>, StoreError> {
        let mut answers = Vec::with_capacity(msgs.len());
        for chunk in msgs.chunks(MAX_BATCH) {
            let batch: Vec<Entry> = chunk
                .iter()
                .map(|(obs, now)| Entry {
                    bytes: encode(obs, *now),
                    now: *now,
                })
                .collect();
            answers.extend(self.send(&batch)?);
        }
        Ok(answers)
    }

    /// Appends an operator's correction to the log, for every replica
    /// (this one included, in the same round trip). Answers the live
    /// campaign's id as this daemon's replica knows it; `None`, and nothing
    /// appended, when it knows no live campaign of that id.
    ///
    /// # Errors
    /// Redis failed, or the replica has not read the log up to this
    /// daemon's messages yet.
    pub fn correct(&self, c: Correction, now: UnixSecs) -> Result<Option<CampaignId>, StoreError> {
        self.refresh()?;
        let id = c.id();
        let live = {
            let r = self.replica()?;
            if !r.answered {
                return Err(CatchUp::Reading.into());
            }
            r.engine.live_id(id)
        };
        let Some(live) = live else {
            return Ok(None);
        };
        self.send(&[Entry {
            bytes: encode_correction(c, now),
            now,
        }])?;
        Ok(Some(live))
    }

    /// Reads what the site appended since the replica's last entry and
    /// applies it (at most [`MAX_READS_PER_CALL`] + 1 chunks), without
    /// appending: an idle daemon's view (`/campaigns`, `bulkwatch
    /// campaigns`) is otherwise as old as its last message.
    ///
    /// # Errors
    /// Redis failed or answered what bulkwatch cannot read.
    pub fn refresh(&self) -> Result<(), StoreError> {
        let mut conn = self.pool.take()?;
        let mut skipped = 0;
        for _ in 0..=MAX_READS_PER_CALL {
            let from = self.replica()?.last;
            let read = entries(
                self.read_from(from)
                    .query(conn.like())
                    .map_err(|e| err("log read", e))?,
                &self.log_key,
            )?;
            let got = read.len();
            let mut r = self.replica()?;
            let joins = match r.last {
                Some(l) => read.binary_search_by(|e| e.0.cmp(&l)).is_ok(),
                None => from.is_none(),
            };
            if joins {
                skipped += r.apply(read);
            } else if r.last == from && from.is_some() {
                // Trimmed past the replica: start again from what the log
                // holds, as a round trip would (it is not the site's view
                // until it has read to the end).
                tracing::warn!(
                    "redis log: the log was trimmed past this daemon's replica; rebuilding it"
                );
                *r = Replica::new(&self.cfg);
                continue;
            }
            if got <= CHUNK {
                // Read to the log's end: the replica is the site's view.
                r.answered |= joins;
                break;
            }
        }
        self.pool.give_back(conn);
        if skipped > 0 {
            tracing::warn!(
                entries = skipped,
                "redis log: skipped entries that do not decode, are not sealed with this host's key (every host of a site needs the same fingerprint.hash_key) or are dated past Redis's clock"
            );
        }
        Ok(())
    }

    /// The campaigns that turned bulk in entries the replica applied since
    /// the last call (any host's, the latest 64), so that a host can
    /// alert for a crossing another host judged ([`crate::milter::alert`]).
    pub fn take_crossings(&self) -> Vec<Crossing> {
        self.replica()
            .map(|mut r| r.crossings.drain(..).collect())
            .unwrap_or_default()
    }

    /// Claims the alert for campaign `id` for this host: true for the
    /// first host to ask (a key `<base>:alerted:<id>`, `SET NX` with a
    /// lifetime of `ttl`, its value the claim's tag under the site's key),
    /// false when another host has. A key there whose value is not that
    /// tag was not written by a host of the site: this host alerts (every
    /// host that finds it does: an alert twice rather than none).
    ///
    /// # Errors
    /// Redis failed.
    pub fn claim_alert(
        &self,
        id: CampaignId,
        own: bool,
        ttl: Duration,
    ) -> Result<bool, StoreError> {
        let mut conn = self.pool.take()?;
        // Its own mail's alert is claimed apart from its inbound one.
        let (what, tag) = if own {
            ("alerted-own", "alert-own")
        } else {
            ("alerted", "alert")
        };
        let key = format!("{}:{what}:{id}", self.pool.key_base());
        let claim = hex_tag(&self.log_key, &format!("{tag}\0{id}"));
        let set: Option<String> = redis::cmd("SET")
            .arg(&key)
            .arg(&claim)
            .arg("NX")
            .arg("EX")
            .arg(ttl.as_secs().max(1))
            .query(conn.like())
            .map_err(|e| err("alert claim", e))?;
        let first = match set {
            Some(_) => true,
            None => {
                let held: Option<Vec<u8>> = redis::cmd("GET")
                    .arg(&key)
                    .query(conn.like())
                    .map_err(|e| err("alert claim", e))?;
                held.is_none_or(|h| !same(&h, claim.as_bytes()))
            }
        };
        self.pool.give_back(conn);
        Ok(first)
    }

    /// Allows `domain` until `until` (Unix seconds; `u64::MAX`: until
    /// withdrawn), or withdraws it (`None`), in the site's hash of domain
    /// allowances (`<base>:domains`, domain -> until).
    ///
    /// # Errors
    /// Redis failed.
    pub fn set_domain_allowance(&self, domain: &str, until: Option<u64>) -> Result<(), StoreError> {
        let mut conn = self.pool.take()?;
        let key = format!("{}:domains", self.pool.key_base());
        let cmd = match until {
            Some(u) => {
                let mut c = redis::cmd("HSET");
                c.arg(&key)
                    .arg(domain)
                    .arg(sealed_until(&self.log_key, domain, u));
                c
            }
            None => {
                let mut c = redis::cmd("HDEL");
                c.arg(&key).arg(domain);
                c
            }
        };
        let _: i64 = cmd
            .query(conn.like())
            .map_err(|e| err("domain allowance", e))?;
        self.pool.give_back(conn);
        Ok(())
    }

    /// The site's domain allowances, read with `HSCAN` a page at a time:
    /// at most [`MAX_DOMAINS`](crate::engine::allowance::MAX_DOMAINS)
    /// entries and [`MAX_DOMAIN_PAGES`] round trips, whatever the hash
    /// holds; a field that is no domain or a value without the site's seal
    /// (`sealed_until`) is skipped (Redis is trusted no more than it must
    /// be).
    ///
    /// # Errors
    /// Redis failed.
    pub fn domain_allowances(&self) -> Result<Vec<(String, u64)>, StoreError> {
        use crate::engine::allowance::{domain, MAX_DOMAINS};
        let mut conn = self.pool.take()?;
        let key = format!("{}:domains", self.pool.key_base());
        let mut out = Vec::new();
        let mut cursor = "0".to_owned();
        for _ in 0..MAX_DOMAIN_PAGES {
            let (next, page): (String, Vec<Pair>) = redis::cmd("HSCAN")
                .arg(&key)
                .arg(&cursor)
                .arg("COUNT")
                .arg(100)
                .query(conn.like())
                .map_err(|e| err("domain allowances", e))?;
            for (field, value) in page {
                let name = std::str::from_utf8(&field).ok().and_then(domain);
                let until = std::str::from_utf8(&field)
                    .ok()
                    .zip(std::str::from_utf8(&value).ok())
                    .and_then(|(f, v)| opened_until(&self.log_key, f, v));
                if let (Some(d), Some(u)) = (name, until) {
                    if out.len() < MAX_DOMAINS {
                        out.push((d, u));
                    }
                }
            }
            if next == "0" || out.len() >= MAX_DOMAINS {
                break;
            }
            cursor = next;
        }
        self.pool.give_back(conn);
        Ok(out)
    }

    /// Round trips sent so far, and the messages they carried.
    pub fn round_trips(&self) -> (u64, u64) {
        (
            self.trips.load(Ordering::Relaxed),
            self.carried.load(Ordering::Relaxed),
        )
    }

    /// Calls `f` with the replica's engine once the replica has read the
    /// log up to its daemon's messages (it gave an outcome since it was
    /// made); `None` before.
    pub fn with_ready_replica<R>(&self, f: impl FnOnce(&Engine) -> R) -> Option<R> {
        let r = self.replica().ok()?;
        r.answered.then(|| f(&r.engine))
    }

    /// Whether a copy of the replica for the fallback engine is due: the
    /// replica has read the log up to its daemon's messages, applied
    /// entries since its last copy, and that copy is at least `every` old
    /// (a copy costs time and memory in proportion to the window; `every`
    /// bounds how often Redis trouble makes the daemon pay that). Never
    /// waits: a replica held by a round trip or a copy is not due now.
    pub fn copy_due(&self, every: Duration) -> bool {
        let Ok(r) = self.replica.try_lock() else {
            return false;
        };
        let Ok(copied) = self.copied.lock() else {
            return false;
        };
        r.answered
            && match *copied {
                None => r.applied > 0,
                Some((at, applied)) => r.applied != applied && at.elapsed() >= every,
            }
    }

    /// Forgets the last copy (it was dropped unused): the next outage may
    /// copy at once.
    pub fn forget_copy(&self) {
        if let Ok(mut copied) = self.copied.lock() {
            *copied = None;
        }
    }

    /// A copy of the replica's engine (`None` if a thread panicked while
    /// holding it). The replica is held meanwhile: about 0.08 s for a
    /// window of 10^5 entries and 0.5 s for 10^6 on this project's machine
    /// (`cargo bench --bench store`).
    pub fn copy(&self) -> Option<Engine> {
        let r = self.replica().ok()?;
        let copy = r.engine.clone();
        if let Ok(mut copied) = self.copied.lock() {
            *copied = Some((Instant::now(), r.applied));
        }
        Some(copy)
    }

    /// `XRANGE` calls made after round trips' own, to catch up: reading
    /// the log after a start, or past a chunk. Round trips out at the same
    /// time need none.
    pub fn catch_up_reads(&self) -> u64 {
        self.reads.load(Ordering::Relaxed)
    }

    /// One round trip for `batch` (not empty) on a pooled connection; an
    /// answer per message, in order. When the log's key holds a value of
    /// another type, it is deleted and the round trip made once more.
    fn send(&self, batch: &[Entry]) -> Result<Vec<Logged>, StoreError> {
        self.trips.fetch_add(1, Ordering::Relaxed);
        self.carried
            .fetch_add(batch.len() as u64, Ordering::Relaxed);
        let mut conn = self.pool.take()?;
        let wrongtype = Cell::new(false);
        let mut result = self.exchange(&mut conn, batch, &wrongtype);
        if result.is_err() && wrongtype.get() {
            // (The connection read every reply of the pipeline.)
            self.repair(&mut conn)?;
            result = self.exchange(&mut conn, batch, &Cell::new(false));
        }
        // After an error the connection may hold a late reply: dropped.
        if result.is_ok() {
            self.pool.give_back(conn);
        }
        result
    }

    /// Deletes the log's key if it holds anything but a stream (checked
    /// and deleted in one step: another daemon may have repaired it and
    /// appended to a new log since), and counts it if it did.
    fn repair(&self, conn: &mut Conn) -> Result<(), StoreError> {
        let deleted: i64 = redis::Script::new(REPAIR)
            .key(&self.key)
            .invoke(conn.like())
            .map_err(|e| err("log repair", e))?;
        if deleted > 0 {
            self.pool.repaired(&self.key);
        }
        Ok(())
    }

    /// One batch's round trip and what follows it, on `conn`.
    ///
    /// Reads start at the replica's last entry, inclusive: finding that
    /// entry first proves nothing after it was trimmed away (a stream is
    /// trimmed from its front), without a second read.
    ///
    /// `wrongtype` is set when Redis answered that the log's key holds a
    /// value of another type.
    fn exchange(
        &self,
        conn: &mut Conn,
        batch: &[Entry],
        wrongtype: &Cell<bool>,
    ) -> Result<Vec<Logged>, StoreError> {
        let fail = |e: redis::RedisError| {
            if is_wrongtype(&e) {
                wrongtype.set(true);
            }
            err("log", e)
        };
        let (mut from, upkeep, renewed) = self.plan()?;
        let cmds = self.commands(batch, &renewed, from, upkeep);
        let mut reply = conn.pipeline(cmds).map_err(fail)?.into_iter();
        let own = batch
            .iter()
            .map(|_| {
                reply
                    .next()
                    .map_or_else(|| Err(too_short()), |v| stream_id(&v))
            })
            .collect::<Result<Vec<StreamId>, StoreError>>()?;
        for _ in &renewed {
            reply.next().ok_or_else(too_short)?;
        }
        let (Some(newest), Some(first)) = (own.iter().max().copied(), reply.next()) else {
            return Err(too_short());
        };
        let skipped = match self.catch_up(
            conn,
            entries(first, &self.log_key)?,
            &mut from,
            newest,
            &fail,
        )? {
            Some(skipped) => skipped,
            // Not even the newest message's entry is left: trimmed already.
            None => {
                return Ok(batch
                    .iter()
                    .map(|_| Logged::CatchingUp(CatchUp::Trimmed { entry: newest }))
                    .collect())
            }
        };
        if skipped > 0 {
            tracing::warn!(
                entries = skipped,
                "redis log: skipped entries that do not decode, are not sealed with this host's key (every host of a site needs the same fingerprint.hash_key) or are dated past Redis's clock"
            );
        }
        let mut r = self.replica()?;
        let answers: Vec<Logged> = batch
            .iter()
            .zip(own)
            .map(|(e, id)| answer(&r, e.now, id))
            .collect();
        r.answered |= answers.iter().any(|a| matches!(a, Logged::Outcome(_)));
        Ok(answers)
    }

    /// What this round trip does besides the batch: where the read
    /// starts (the replica's last entry), whether it is time for upkeep
    /// (and then the trim point, once Redis's clock is known), and the
    /// corrections to append again before the log's trim drops them.
    #[allow(clippy::type_complexity)]
    fn plan(&self) -> Result<(Option<StreamId>, Option<Option<u64>>, Vec<Vec<u8>>), StoreError> {
        let mut r = self.replica()?;
        let upkeep = r.redis_ms == 0 || r.redis_ms >= r.upkeep_ms + UPKEEP_MS;
        if upkeep {
            r.upkeep_ms = r.redis_ms;
        }
        let trim = upkeep
            .then(|| r.redis_ms.checked_sub(self.keep_ms))
            .flatten();
        let renewed = if upkeep {
            r.corrections_to_renew(self.keep_ms / 2)
        } else {
            Vec::new()
        };
        Ok((r.last, upkeep.then_some(trim), renewed))
    }

    /// The pipeline of one round trip: the batch's entries, then
    /// corrections about to be trimmed with the log while their campaigns
    /// live, appended again (see Replica::corrections_to_renew); the read
    /// from `from`; and, at upkeep, the TTL and the trim.
    fn commands(
        &self,
        batch: &[Entry],
        renewed: &[Vec<u8>],
        from: Option<StreamId>,
        upkeep: Option<Option<u64>>,
    ) -> Vec<redis::Cmd> {
        let mut cmds: Vec<redis::Cmd> = batch
            .iter()
            .map(|e| e.bytes.as_slice())
            .chain(renewed.iter().map(Vec::as_slice))
            .map(|bytes| self.append(bytes))
            .collect();
        cmds.push(self.read_from(from));
        if let Some(trim) = upkeep {
            // Once a minute: the TTL (the window plus a margin) and, once
            // Redis's clock is known, entries older than that.
            let mut expire = redis::cmd("PEXPIRE");
            expire.arg(&self.key).arg(self.keep_ms);
            cmds.push(expire);
            if let Some(ms) = trim {
                let mut xtrim = redis::cmd("XTRIM");
                xtrim.arg(&self.key).arg("MINID").arg("~").arg(ms);
                cmds.push(xtrim);
            }
        }
        cmds
    }

    /// Applies `read` (the pipeline's read) and further reads from `from`
    /// until the replica holds `newest`, at most [`MAX_READS_PER_CALL`]
    /// more reads. Returns the entries skipped as undecodable, or `None`
    /// when a read came back empty: the log was trimmed past `newest`.
    fn catch_up(
        &self,
        conn: &mut Conn,
        mut read: Vec<(StreamId, Vec<u8>)>,
        from: &mut Option<StreamId>,
        newest: StreamId,
        fail: &dyn Fn(redis::RedisError) -> StoreError,
    ) -> Result<Option<usize>, StoreError> {
        let mut skipped = 0;
        for reads in 0..=MAX_READS_PER_CALL {
            if reads > 0 {
                self.reads.fetch_add(1, Ordering::Relaxed);
                read = entries(
                    self.read_from(*from).query(conn.like()).map_err(fail)?,
                    &self.log_key,
                )?;
                if read.is_empty() {
                    return Ok(None);
                }
            }
            let mut r = self.replica()?;
            // Another round trip out at the same time may have moved the
            // replica since this one was sent. A read that holds the
            // replica's last entry goes on from it without a gap (a read is
            // a contiguous part of the log), so what follows that entry is
            // applied; what precedes it was already. (When nothing moved
            // it, that entry is the read's first: reads start at the
            // replica's last entry, inclusive.)
            let joins = match r.last {
                Some(l) => read.binary_search_by(|e| e.0.cmp(&l)).is_ok(),
                // (An empty replica reads from the log's start.)
                None => from.is_none(),
            };
            if joins {
                skipped += r.apply(std::mem::take(&mut read));
            } else if r.last == *from {
                // The replica's last entry left the log: what came after
                // it may have too. Start again from what the log holds.
                tracing::warn!(
                    last = %from.map_or_else(String::new, |l| l.to_string()),
                    "redis log: the log was trimmed past this daemon's replica; rebuilding it"
                );
                *r = Replica::new(&self.cfg);
            }
            // (Else another round trip moved the replica past this read:
            // the next read starts where it is now.)
            *from = r.last;
            if from.is_some_and(|l| l >= newest) {
                break;
            }
        }
        Ok(Some(skipped))
    }

    /// `XADD` of one entry, the log trimmed to `window.max_entries`.
    fn append(&self, bytes: &[u8]) -> redis::Cmd {
        let mut c = redis::cmd("XADD");
        c.arg(&self.key)
            .arg("MAXLEN")
            .arg("~")
            .arg(self.cfg.window.max_entries)
            .arg("*")
            .arg("o")
            .arg(seal(&self.log_key, bytes));
        c
    }

    /// `XRANGE` from `from` inclusive (or from the log's start), one chunk
    /// past it.
    fn read_from(&self, from: Option<StreamId>) -> redis::Cmd {
        let mut c = redis::cmd("XRANGE");
        c.arg(&self.key)
            .arg(from.map_or_else(|| "-".to_owned(), |l| l.to_string()))
            .arg("+")
            .arg("COUNT")
            .arg(CHUNK + 1);
        c
    }
}

impl Store for LogStore {
    fn record(&mut self, obs: &Observation, now: UnixSecs) -> Result<Outcome, StoreError> {
        self.record_shared(obs, now)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs() -> Observation {
        Observation {
            exact: [7; 32],
            simhash: 0x0123_4567_89ab_cdef,
            sketch: 42,
            deeper: [43, 44],
            reply: false,
            bands: vec![1, 2, 3, 4],
            smallest: (0..8).map(|i| [i, i + 100, u32::MAX - i]).collect(),
            sentences: Sentences {
                anchors: vec![6 << 32, 5 << 32],
                lookups: vec![5 << 32, 6 << 32, 7 << 32],
            },
            near: true,
            parties: crate::engine::party::Parties::anonymous(300),
            sender: 0x3EEF,
            sender_name: Some("sender.example".into()),
            subject: Some("Ünïcode subject".into()),
            features: 77,
            thresholds: Config::default().thresholds,
            list: false,
            kept_cut: None,
            partial: false,
            list_post: true,
        }
    }

    #[test]
    fn an_entry_reads_back_as_written() {
        let o = obs();
        let (back, now) = decode(&encode(&o, UnixSecs(1_700_000_000))).unwrap();
        assert_eq!(now, UnixSecs(1_700_000_000));
        assert_eq!(back, o);
        let mut none = obs();
        none.sender_name = None;
        none.subject = Some(String::new());
        none.bands.clear();
        assert_eq!(decode(&encode(&none, UnixSecs(1))).unwrap().0, none);
    }

    /// A time of the tests' entries (Unix seconds).
    const T: u64 = 1_700_000_000;

    /// The stream id Redis gives an entry appended at `secs`.
    fn stream_id_at(secs: u64) -> StreamId {
        StreamId(secs * 1000, 0)
    }

    /// A replica that applied [`obs`] at `t`, and the id of its campaign.
    fn replica_of_one_campaign(t: u64) -> (Replica, CampaignId) {
        let mut a = Replica::new(&Config::default());
        a.apply(vec![(stream_id_at(t), encode(&obs(), UnixSecs(t)))]);
        let id = a.engine.campaigns().next().unwrap().id;
        (a, id)
    }

    /// A copy of an old sealed correction written after a later one for
    /// the same campaign (an `allow` put back after its withdrawal) is not
    /// applied; corrections in their order are.
    #[test]
    fn a_correction_older_than_the_last_one_applied_is_skipped() {
        let (mut a, id) = replica_of_one_campaign(T);
        let allow = |until, at| encode_correction(Correction::Allow { id, until }, UnixSecs(at));
        let forever = u64::MAX >> 30;
        let mut apply = |entry: Vec<u8>, at: u64| {
            let skipped = a.apply(vec![(stream_id_at(at), entry)]);
            (skipped, a.engine.allowances().count())
        };
        assert_eq!(apply(allow(forever, T + 1), T + 1), (0, 1));
        assert_eq!(apply(allow(0, T + 2), T + 2), (0, 0), "withdrawn");
        assert_eq!(
            apply(allow(forever, T + 1), T + 3),
            (1, 0),
            "the copy skipped"
        );
        assert_eq!(apply(allow(forever, T + 4), T + 4), (0, 1), "a new allow");
    }

    /// A correction in force is stated again once its last entry is half a
    /// log old, so a replica that reads the log from its start after the
    /// first entry was trimmed still applies it; then not again until the
    /// next half. Every replica applies the same entries alike.
    #[test]
    fn corrections_in_force_are_renewed_before_the_log_loses_them() {
        let cfg = Config::default();
        let (t, ms) = (T, stream_id_at);
        let (mut a, id) = replica_of_one_campaign(t);
        let mut other = obs();
        other.exact = [9; 32];
        other.simhash = !other.simhash;
        other.sketch = !other.sketch;
        other.bands = vec![5, 6, 7, 8];
        a.apply(vec![(ms(t + 1), encode(&other, UnixSecs(t + 1)))]);
        let forgotten = a
            .engine
            .campaigns()
            .map(|c| c.id)
            .find(|c| *c != id)
            .unwrap();
        a.apply(vec![
            (
                ms(t + 2),
                encode_correction(
                    Correction::Allow {
                        id,
                        until: u64::MAX >> 30,
                    },
                    UnixSecs(t + 2),
                ),
            ),
            (
                ms(t + 3),
                encode_correction(Correction::Forget { id: forgotten }, UnixSecs(t + 3)),
            ),
        ]);
        a.answered = true;
        // Not yet half a log old: nothing to renew.
        assert!(a.corrections_to_renew(3_000_000).is_empty());
        a.redis_ms = (t + 4000) * 1000;
        let renewed = a.corrections_to_renew(3_000_000);
        assert_eq!(renewed.len(), 2);
        assert!(
            a.corrections_to_renew(3_000_000).is_empty(),
            "once per half"
        );
        // A replica that reads only the renewed entries after the messages
        // (the first ones trimmed) holds both corrections.
        let mut b = Replica::new(&cfg);
        b.apply(vec![
            (ms(t), encode(&obs(), UnixSecs(t))),
            (ms(t + 1), encode(&other, UnixSecs(t + 1))),
        ]);
        let entries: Vec<_> = renewed
            .into_iter()
            .enumerate()
            .map(|(i, e)| (StreamId((t + 4000) * 1000, i as u64), e))
            .collect();
        assert_eq!(b.apply(entries), 0, "they decode");
        assert_eq!(
            b.engine.allowances().map(|(c, _)| c).collect::<Vec<_>>(),
            [id]
        );
        assert_eq!(b.engine.forgotten().collect::<Vec<_>>(), [forgotten]);
        // A replica still reading the log renews nothing.
        b.redis_ms = (t + 9000) * 1000;
        assert!(b.corrections_to_renew(3_000_000).is_empty());
    }

    /// Entries of format 1 (builds before the single-transaction rule)
    /// are read, with the rule off as their writers had it.
    #[test]
    fn format_1_entries_read_with_the_old_rule() {
        let mut o = obs();
        o.sender_name = None;
        o.subject = None;
        let mut e = encode(&o, UnixSecs(7));
        // Format 5 ends with the smallest values, format 4 with the two
        // deeper values and the reply byte, format 3 with the list-post
        // byte, after the two absent texts; format 2 has the limit's 4
        // bytes before them.
        e.truncate(e.len() - probe_bytes(&o) - 17);
        let n = e.len();
        let mut old = vec![1u8];
        old.extend_from_slice(&e[1..n - 7]);
        old.extend_from_slice(&e[n - 3..n - 1]);
        let (back, now) = decode(&old).unwrap();
        assert_eq!(now, UnixSecs(7));
        assert_eq!(back.thresholds.single_transaction_recipients, 0);
        o.thresholds.single_transaction_recipients = 0;
        o.list_post = false;
        o.deeper = [o.sketch; 2];
        o.reply = true;
        o.smallest.clear();
        o.sentences = Sentences::default();
        assert_eq!(back.sender, o.sender >> 1, "a 16-bit hash read as 15 bits");
        o.sender = back.sender;
        assert_eq!(back, o);
    }

    /// The bytes of format 5's smallest values in `o`'s entry (and its
    /// flag of derived band keys), and of format 6's parties and format
    /// 7's sentence keys after them.
    fn probe_bytes(o: &Observation) -> usize {
        2 + 12 * o.smallest.len() + party_bytes(o) + sentence_bytes(o)
    }

    /// The bytes of format 7's sentence keys in `o`'s entry.
    fn sentence_bytes(o: &Observation) -> usize {
        2 + 4 * (o.sentences.anchors.len() + o.sentences.lookups.len())
    }

    /// Entries of format 6 (builds before the anchors) read without
    /// sentence keys: their messages leave no anchor and find none. Too
    /// many keys: refused.
    #[test]
    fn format_6_entries_read_without_sentence_keys() {
        let o = obs();
        assert!(!o.sentences.anchors.is_empty());
        let e = encode(&o, UnixSecs(7));
        assert_eq!(decode(&e).unwrap().0, o, "format 8 reads back");
        let at = e.len() - party_bytes(&o) - sentence_bytes(&o);
        let mut old = e[..at].to_vec();
        old[0] = 6;
        // Format 6's parties: sender and Message-ID keys, no recipient,
        // 300 anonymous, no answer.
        old.extend_from_slice(&[0; 10]);
        old.push(0);
        old.extend_from_slice(&300u32.to_le_bytes());
        old.push(0);
        let (back, _) = decode(&old).unwrap();
        assert_eq!(back.sentences, Sentences::default());
        assert_eq!(
            Observation {
                sentences: o.sentences.clone(),
                sender: o.sender,
                ..back
            },
            o
        );
        let mut many = e.clone();
        let at = e.len() - sentence_bytes(&o);
        many[at] = (MAX_SENTENCES + 1) as u8;
        assert!(decode(&many).is_err());
    }

    /// The bytes of format 8's parties in `o`'s entry.
    fn party_bytes(o: &Observation) -> usize {
        let p = &o.parties;
        1 + 5 + 9 + 2 + KEY_BYTES * p.rcpts.len() + 4 + 1 + 8 * p.answers.len()
    }

    /// An entry's parties read back as written (own mail keeps its sender
    /// and Message-ID, inbound mail neither); entries of format 5 (builds
    /// before parties) and of formats 6 and 7 (keys made another way) read
    /// as recipients of whom nothing is known, as many as the entry counts.
    #[test]
    fn parties_read_back_and_older_ones_as_anonymous_recipients() {
        use crate::engine::party::Recipients;
        let of = |origin| {
            Parties::of(
                origin,
                Some("a@x.example"),
                Recipients {
                    addrs: &["b@example.org", "c@example.org"],
                    hashes: &[crate::engine::party::address_hash("d@example.org")],
                    more: 3,
                },
                Some("id@x.example"),
                &["parent@y.example"],
                (1, 2),
            )
        };
        for origin in [Origin::Own, Origin::Inbound] {
            let o = Observation {
                parties: of(origin),
                ..obs()
            };
            assert_eq!(o.parties.own(), origin == Origin::Own);
            assert_eq!(o.parties.sender.is_some(), origin == Origin::Own);
            let e = encode(&o, UnixSecs(7));
            assert_eq!(decode(&e).unwrap().0, o, "format 8 reads back");
            let mut old = e.clone();
            old[0] = 5;
            old.truncate(e.len() - party_bytes(&o) - sentence_bytes(&o));
            let (back, _) = decode(&old).unwrap();
            assert_eq!(back.parties, Parties::anonymous(6));
            assert_eq!(back.sender, o.sender >> 1, "a 16-bit hash read as 15 bits");
            assert_eq!(
                Observation {
                    parties: o.parties.clone(),
                    sentences: o.sentences.clone(),
                    sender: o.sender,
                    ..back
                },
                o
            );
            // More recipients than a message may have: refused.
            let mut many = e.clone();
            let at = e.len() - party_bytes(&o) - sentence_bytes(&o) + 15;
            many[at..at + 2].copy_from_slice(&1001u16.to_le_bytes());
            assert!(decode(&many).is_err());
            // An origin no build writes: refused.
            let mut odd = e.clone();
            odd[e.len() - party_bytes(&o) - sentence_bytes(&o)] = 7;
            assert!(decode(&odd).is_err());
        }
    }

    /// Format 7's parties (2 recipients' keys, 3 more, a sender, a
    /// Message-ID and an answer, each a 4-byte key) read as 5 people.
    #[test]
    fn format_7_parties_read_as_anonymous_recipients() {
        let o = obs();
        let e = encode(&o, UnixSecs(7));
        let at = e.len() - party_bytes(&o) - sentence_bytes(&o);
        let mut old = e[..at].to_vec();
        old[0] = 7;
        for k in [Some(1u32), Some(2)] {
            old.push(u8::from(k.is_some()));
            old.extend_from_slice(&k.unwrap_or(0).to_le_bytes());
        }
        old.push(2);
        old.extend_from_slice(&8u32.to_le_bytes());
        old.extend_from_slice(&9u32.to_le_bytes());
        old.extend_from_slice(&3u32.to_le_bytes());
        old.push(1);
        old.extend_from_slice(&5u32.to_le_bytes());
        old.extend_from_slice(&e[e.len() - sentence_bytes(&o)..]);
        let (back, _) = decode(&old).unwrap();
        assert_eq!(back.parties, Parties::anonymous(5));
    }

    /// Entries of format 2 (builds before list posts) read as no list post.
    #[test]
    fn format_2_entries_read_as_no_list_post() {
        let o = obs();
        assert!(o.list_post);
        let mut e = encode(&o, UnixSecs(7));
        e[0] = 2;
        e.truncate(e.len() - probe_bytes(&o) - 18);
        let (back, _) = decode(&e).unwrap();
        assert!(!back.list_post);
        assert_eq!(
            Observation {
                list_post: true,
                sender: o.sender,
                deeper: o.deeper,
                reply: o.reply,
                smallest: o.smallest.clone(),
                sentences: o.sentences.clone(),
                ..back
            },
            o
        );
    }

    /// Entries of format 3 (builds before the containment test of the
    /// three smallest values) read with the sketch as their deeper values,
    /// as replies: their messages join nothing on containment.
    #[test]
    fn format_3_entries_read_without_deeper_values() {
        let o = obs();
        let mut e = encode(&o, UnixSecs(7));
        e[0] = 3;
        e.truncate(e.len() - probe_bytes(&o) - 17);
        let (back, _) = decode(&e).unwrap();
        assert_eq!((back.deeper, back.reply), ([o.sketch; 2], true));
        assert_eq!(
            Observation {
                deeper: o.deeper,
                sender: o.sender,
                reply: o.reply,
                smallest: o.smallest.clone(),
                sentences: o.sentences.clone(),
                ..back
            },
            o
        );
        // A reply reads back as one.
        let r = Observation {
            reply: true,
            ..obs()
        };
        assert!(decode(&encode(&r, UnixSecs(7))).unwrap().0.reply);
    }

    /// Band keys that the smallest values give (as a message's own do)
    /// are left out of the entry and made again by the reader.
    #[test]
    fn band_keys_that_the_smallest_values_give_are_not_written() {
        use crate::engine::minhash::{min_sketch, mix, seeds};
        let words: Vec<u64> = (0..100).map(mix).collect();
        let m = min_sketch(&words, &seeds((1, 2)));
        let o = Observation {
            bands: m.bands[..4].to_vec(),
            smallest: m.smallest[..8].to_vec(),
            ..obs()
        };
        let e = encode(&o, UnixSecs(7));
        assert_eq!(decode(&e).unwrap().0, o);
        let other = Observation {
            bands: vec![1, 2, 3, 4],
            ..o.clone()
        };
        assert_eq!(encode(&other, UnixSecs(7)).len(), e.len() + 32);
        assert_eq!(decode(&encode(&other, UnixSecs(7))).unwrap().0, other);
    }

    /// Entries of format 4 (builds before the band probes) read without
    /// smallest values: their messages probe nothing.
    #[test]
    fn format_4_entries_read_without_probes() {
        let o = obs();
        let mut e = encode(&o, UnixSecs(7));
        e[0] = 4;
        e.truncate(e.len() - probe_bytes(&o));
        let (back, _) = decode(&e).unwrap();
        assert!(back.smallest.is_empty());
        assert_eq!(
            Observation {
                sender: o.sender,
                smallest: o.smallest.clone(),
                sentences: o.sentences.clone(),
                ..back
            },
            o
        );
        // More smallest values than any band count: refused.
        let mut many = encode(&o, UnixSecs(7));
        let at = many.len() - probe_bytes(&o);
        many[at] = (MAX_SMALLEST + 1) as u8;
        assert!(decode(&many).is_err());
    }

    #[test]
    fn long_texts_are_cut_to_what_the_memory_store_keeps() {
        let mut o = obs();
        o.subject = Some("é".repeat(500));
        let (back, _) = decode(&encode(&o, UnixSecs(1))).unwrap();
        assert_eq!(back.subject.unwrap().chars().count(), MAX_SUBJECT);
    }

    #[test]
    fn every_cut_or_altered_entry_is_an_error_not_a_panic() {
        let e = encode(&obs(), UnixSecs(5));
        for n in 0..e.len() {
            assert!(decode(&e[..n]).is_err(), "cut at {n}");
        }
        let mut long = e.clone();
        long.push(0);
        assert!(decode(&long).is_err());
        let mut other = e.clone();
        other[0] = FORMAT + 1;
        assert!(decode(&other).is_err());
        // Every single byte changed: an error or some entry, never a panic.
        for i in 0..e.len() {
            let mut x = e.clone();
            x[i] ^= 0xFF;
            let _ = decode(&x);
        }
    }

    proptest::proptest! {
        /// Whatever bytes a log entry holds, decoding answers, never
        /// panics; and a valid entry with bytes appended is refused.
        #[test]
        fn any_bytes_decode_or_fail_cleanly(
            bytes in proptest::collection::vec(proptest::num::u8::ANY, 0..300),
            start_valid in proptest::bool::ANY,
        ) {
            let input = if start_valid {
                let mut e = encode(&obs(), UnixSecs(9));
                e.extend_from_slice(&bytes);
                e
            } else {
                bytes.clone()
            };
            let r = decode(&input);
            if start_valid && !bytes.is_empty() {
                proptest::prop_assert!(r.is_err());
            }
        }
    }

    /// An entry is applied only with the tag of the site's key: a forged
    /// correction (the right format, written by whoever may write to
    /// Redis) or an entry changed in one byte reads as empty, which every
    /// replica skips as a bad entry; the tag is HMAC-SHA256 (RFC 4231's
    /// first vector, cut).
    #[test]
    fn only_entries_sealed_with_the_sites_key_are_read() {
        let cfg = Config::default();
        let key = log_key(&cfg);
        let mut other = cfg.clone();
        other.fingerprint.hash_key = (1, 2);
        assert_ne!(log_key(&other), key);
        let forged = encode_correction(
            Correction::Allow {
                id: CampaignId(7),
                until: u64::MAX,
            },
            UnixSecs(5),
        );
        let sealed = seal(&key, &forged);
        assert_eq!(open(&key, sealed.clone()), forged);
        assert!(open(&log_key(&other), sealed.clone()).is_empty());
        assert!(open(&key, forged.clone()).is_empty(), "no seal");
        assert!(open(&key, Vec::new()).is_empty());
        for i in 0..sealed.len() {
            let mut bad = sealed.clone();
            bad[i] ^= 1;
            assert!(open(&key, bad).is_empty(), "byte {i}");
        }
        let reply = |bytes: Vec<u8>| {
            Value::Array(vec![Value::Array(vec![
                Value::BulkString(b"5-1".to_vec()),
                Value::Array(vec![
                    Value::BulkString(b"o".to_vec()),
                    Value::BulkString(bytes),
                ]),
            ])])
        };
        assert_eq!(entries(reply(sealed), &key).unwrap()[0].1, forged);
        assert!(entries(reply(forged), &key).unwrap()[0].1.is_empty());
        // RFC 4231, test case 1, under a 32-byte key of 0x0b.
        let mut k = [0u8; 32];
        k[..20].fill(0x0b);
        let t = tag(&k, b"Hi There");
        let rfc_20_byte_key = [0xb0, 0x34, 0x4c, 0x61, 0xd8, 0xdb, 0x38, 0x53];
        assert_eq!(t[..8], rfc_20_byte_key);
    }

    #[test]
    fn malformed_xrange_replies_are_errors() {
        assert!(entries(Value::Nil, &[0; 32]).is_err());
        assert!(entries(Value::Array(vec![Value::Int(1)]), &[0; 32]).is_err());
        let bad_id = Value::Array(vec![Value::Array(vec![
            Value::BulkString(b"x-1".to_vec()),
            Value::Array(vec![]),
        ])]);
        assert!(entries(bad_id, &[0; 32]).is_err());
        // A well-formed reply with an entry of another shape: kept, empty.
        let odd = Value::Array(vec![Value::Array(vec![
            Value::BulkString(b"5-1".to_vec()),
            Value::Array(vec![Value::Int(3)]),
        ])]);
        assert_eq!(
            entries(odd, &[0; 32]).unwrap(),
            vec![(StreamId(5, 1), Vec::new())]
        );
    }

    #[test]
    fn stream_ids_order_as_redis_orders_them() {
        assert!(StreamId::parse(b"10-0").unwrap() > StreamId::parse(b"9-99").unwrap());
        assert!(StreamId::parse(b"10-2").unwrap() > StreamId::parse(b"10-1").unwrap());
        assert_eq!(StreamId(3, 4).to_string(), "3-4");
        assert!(StreamId::parse(b"10").is_err());
    }
}
