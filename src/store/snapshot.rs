//! State snapshots: the engine's window, band tables, exact set and
//! campaigns in a file, so a restart keeps counting where it stopped.
//!
//! Format (all integers little-endian):
//!
//! ```text
//! magic     8 bytes  "BWSNAP\r\n"
//! format    u16      FORMAT_VERSION
//! fp        u8       simhash::VERSION of the writer
//! shape     32 bytes SHA-256 of the settings that give fingerprints and
//!                    block tables their meaning (fingerprint, normalize,
//!                    window.max_distance, window.minhash_bands)
//! saved_at  u64      Unix seconds
//! sections  { tag u8, len u64, payload[len] } * 4, in tag order
//! checksum  32 bytes SHA-256 of everything before it
//! ```
//!
//! Sections: 1 window (base sequence, entries, then the texts of the
//! entries alone in their campaign, in order), 2 band tables (raw bucket
//! items), 3 exact set (Bloom generations and LRU), 4 campaign slots.
//! Format 2 (2026-11-27) names an entry's campaign by slot or, for a
//! message alone in its campaign, by id; format 1 files (slots only) are
//! refused like any other format, as are those of fingerprint version 4
//! and older that every upgrade to format 2 comes from. Format 3
//! (2026-11-27) marks list posts: the high bit of an entry's weight and
//! bit 1 of a campaign's flags byte (`alerted` is bit 0); format 2 files
//! read as format 3 files without list posts, and builds of format 2
//! refuse format 3 files (a downgrade starts empty). Format 4
//! (2026-11-28) keeps parties (`engine::party`): after the texts of an
//! entry alone in its campaign, its party keys (a flag, a count, the
//! keys), and after a campaign's flags its talk (a flag, its copies and
//! forwards, its party set exact or as bits); format 2 and 3 files read
//! with parties unknown (their campaigns are no conversations, and count
//! every recipient of a later message). Format 5 (2026-11-29) may hold
//! one band table more than `window.minhash_bands`, the last: the anchor
//! table of the containment rule (`engine::index`, one item a text);
//! format 4 files read with the anchor table empty (it fills as mail
//! arrives), and builds of format 4 refuse format 5 files (a downgrade
//! starts empty). Format 6 (issue 63) keeps what this MX observed: an
//! entry's sender field carries the own-mail bit in its high bit beside a
//! 15-bit hash, a message's party keys have a 2-byte count, a campaign's
//! talk is an exact set with a "full" flag followed by its largest
//! delivery, replies' freed recipients and own-mail tally (`alerted` of
//! own mail is bit 2 of the flags), and a fifth section holds our users'
//! Message-IDs (`engine::party::OwnThreads`); the parties of format 4 and
//! 5 files (keys made another way) read as unknown.
//! The block tables are rebuilt from the window.
//!
//! Reading trusts nothing: the checksum is checked first, then every count
//! is compared with the configuration's bounds before anything is
//! allocated, and every read is bounds-checked, so a truncated, corrupt or
//! hostile file gives a [`SnapshotError`], never a panic or a huge
//! allocation. Writing is atomic ([`write_atomic`]): a temporary file in the
//! same directory, fsync, rename, fsync of the directory; a crash at any
//! moment leaves the old or the new snapshot in place, never a broken one.
//!
//! Opening trusts nothing either ([`load`]): the file must be a regular
//! file. A symbolic link is not followed (`O_NOFOLLOW`) and a FIFO cannot
//! block the open (`O_NONBLOCK`); anything but a regular file (a FIFO, a
//! socket, a device, a link to `/dev/zero`) is refused with
//! [`SnapshotError::NotRegular`] before a byte is read. The read is bounded
//! by the file's size and by [`max_file_len`], the largest snapshot this
//! configuration can produce, so a huge or growing file is refused rather
//! than read until memory runs out. The caller treats a refused file like
//! a corrupt one ([`move_aside`] moves a link itself, never its target).
//!
//! This module does file I/O; the engine modules do not.

use std::fs;
use std::path::{Path, PathBuf};

use bloomfilter::Bloom;
use sha2::{Digest, Sha256};

use crate::config::Config;
use crate::engine::campaign::{secs32, AloneRecords, Campaign, CampaignId, Campaigns, Slot, Texts};
use crate::engine::exact::{ExactSet, Generation};
use crate::engine::index::window::{Entry, Owner};
use crate::engine::index::{max_band_tables, IndexParts};
use crate::engine::party::{clamp_key, Talk, MAX_KEYS, MAX_MESSAGE_KEYS, MAX_REPLY_FREE};
use crate::engine::Engine;
use crate::store::codec::{CodecError, Reader, Writer};

/// The snapshot's file name inside `state.state_dir`.
pub const FILE_NAME: &str = "state.bin";
/// Version of the layout described in the module docs.
pub const FORMAT_VERSION: u16 = 6;
const MAGIC: &[u8; 8] = b"BWSNAP\r\n";
const HEADER_LEN: usize = 8 + 2 + 1 + 32 + 8;
const CHECKSUM_LEN: usize = 32;
/// Longest string kept in a campaign (sender name, subject), in bytes.
const MAX_STRING: usize = 1024;
/// Most sender names and sender hashes per campaign (see `campaign.rs`).
const MAX_SENDER_NAMES: usize = 5;
const MAX_SENDERS: usize = 64;
/// Largest first sequence number of a saved window (a billion messages a
/// second for 146 years).
const MAX_BASE_SEQ: u64 = 1 << 62;

const TAG_WINDOW: u8 = 1;
const TAG_BANDS: u8 = 2;
const TAG_EXACT: u8 = 3;
const TAG_CAMPAIGNS: u8 = 4;
const TAG_THREADS: u8 = 5;

/// Why a snapshot could not be written or read.
#[derive(Debug, thiserror::Error)]
pub enum SnapshotError {
    #[error("cannot {op} {path}")]
    Io {
        op: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("not a bulkwatch snapshot (bad magic)")]
    BadMagic,
    #[error("snapshot format {found}, this build reads {expected}")]
    Format { found: u16, expected: u16 },
    #[error("snapshot fingerprint version {found}, this build uses {expected}")]
    FingerprintVersion { found: u8, expected: u8 },
    #[error("snapshot was taken with other fingerprint, normalize or index settings")]
    Shape,
    #[error("snapshot checksum mismatch (corrupt file)")]
    Checksum,
    #[error("snapshot truncated in {what}")]
    Truncated { what: &'static str },
    #[error("snapshot {what}: {count} exceeds the configured maximum {max}")]
    TooLarge {
        what: &'static str,
        count: u64,
        max: u64,
    },
    #[error("snapshot invalid: {what}")]
    Invalid { what: String },
    #[error("{path} is {kind}, not a regular file")]
    NotRegular { path: PathBuf, kind: &'static str },
}

impl From<CodecError> for SnapshotError {
    fn from(e: CodecError) -> SnapshotError {
        match e {
            CodecError::Truncated { what } => SnapshotError::Truncated { what },
            CodecError::TooLarge { what, count, max } => {
                SnapshotError::TooLarge { what, count, max }
            }
            CodecError::Invalid { what } => SnapshotError::Invalid { what },
        }
    }
}

/// SHA-256 of the settings without which saved fingerprints and tables
/// mean nothing. `Debug` output is stable within a build, and the format
/// version guards across builds.
fn shape_hash(cfg: &Config) -> [u8; 32] {
    let mut h = Sha256::new();
    h.update(format!("{:?}", cfg.fingerprint));
    h.update(format!("{:?}", cfg.normalize));
    h.update(cfg.window.max_distance.to_le_bytes());
    h.update((cfg.window.minhash_bands as u64).to_le_bytes());
    h.finalize().into()
}

// ---------------------------------------------------------------- writing

fn write_entry(w: &mut Writer, e: &Entry) {
    w.u64(e.simhash);
    w.u64(e.sketch);
    w.u32(e.time);
    match e.owner() {
        Owner::Slot(s) => {
            w.u8(0);
            w.u64(s.into());
        }
        Owner::Alone(id) => {
            w.u8(1);
            w.u64(id.0);
        }
    }
    w.u16(e.recipients);
    w.u16(e.sender_bits());
    // The high bit: a list post (older files have weights of 0 to 100).
    w.u8(e.weight() | if e.list_post() { 0x80 } else { 0 });
    w.u8(u8::from(e.near()));
    w.u8(e.size());
}

fn write_campaign(w: &mut Writer, c: &Campaign, format: u16) {
    w.u64(c.id.0);
    w.u64(c.first_seen.into());
    w.u64(c.last_seen.into());
    w.u32(c.messages);
    w.u64(c.recipients);
    w.u64(c.score_centi);
    w.u64(c.senders.len() as u64);
    for (h, n) in c.senders.iter() {
        w.u16(h);
        w.u32(n);
    }
    w.u64(c.texts.names().count() as u64);
    for n in c.texts.names() {
        w.str(n, MAX_STRING);
    }
    match c.texts.subject() {
        Some(s) => {
            w.u8(1);
            w.str(s, MAX_STRING);
        }
        None => w.u8(0),
    }
    // Bit 1: every member a list post (older files write 0 or 1); bit 2
    // (format 6): its own mail alerted.
    if format < 6 {
        // The layout of format 3 (tests of reading older files).
        w.u8(u8::from(c.alerted) | (u8::from(c.list_post) << 1));
        return;
    }
    w.u8(u8::from(c.alerted) | (u8::from(c.list_post) << 1) | (u8::from(c.own_alerted) << 2));
    write_talk(w, c.talk.as_deref());
    w.u16(c.largest);
    w.u16(c.freed);
    w.u16(c.grown);
    w.u32(c.own);
    w.u16(c.own_largest);
}

/// A campaign's talk (format 6): a flag, then copies, replies, whether
/// the party set is full, and its keys.
fn write_talk(w: &mut Writer, talk: Option<&Talk>) {
    let Some(t) = talk else {
        w.u8(0);
        return;
    };
    w.u8(1);
    let (copies, replies, full, keys) = t.to_parts();
    w.u32(copies);
    w.u32(replies);
    w.u8(u8::from(full));
    w.u64(keys.len() as u64);
    for k in keys {
        w.u32(*k);
    }
}

fn read_talk(r: &mut Reader<'_>) -> Result<Option<Box<Talk>>, SnapshotError> {
    if !r.bool()? {
        return Ok(None);
    }
    let (copies, replies, full) = (r.u32()?, r.u32()?, r.bool()?);
    let n = r.items(MAX_KEYS, 4)?;
    let keys = (0..n)
        .map(|_| r.u32().map(clamp_key))
        .collect::<Result<Vec<_>, _>>()?;
    let talk =
        Talk::from_parts(copies, replies, full, keys).ok_or_else(|| SnapshotError::Invalid {
            what: "campaign party set".into(),
        })?;
    Ok(Some(Box::new(talk)))
}

/// A talk of format 4 or 5, read past: its keys were made another way
/// than this build's, so the campaign's parties are unknown.
fn skip_old_talk(r: &mut Reader<'_>) -> Result<(), SnapshotError> {
    if !r.bool()? {
        return Ok(());
    }
    let _ = (r.u32()?, r.u32()?);
    match r.u8()? {
        0 => {
            let n = r.items(128, 4)?;
            for _ in 0..n {
                r.u32()?;
            }
        }
        1 => {
            r.u32()?;
            for _ in 0..64 {
                r.u64()?;
            }
        }
        k => {
            return Err(SnapshotError::Invalid {
                what: format!("campaign party set kind {k}"),
            })
        }
    }
    Ok(())
}

/// Serializes the engine's state, stamped with `saved_at` (Unix seconds).
/// Runs under the engine lock: it only copies memory.
pub fn encode(engine: &Engine, saved_at: u64) -> Vec<u8> {
    encode_format(engine, saved_at, FORMAT_VERSION)
}

/// The window's section: its entries, then the texts (and keys) of the
/// messages alone in their campaigns.
fn window_section(engine: &Engine, parts: &IndexParts, format: u16) -> Writer {
    let mut s = Writer::default();
    s.u64(parts.base);
    s.u64(parts.entries.len() as u64);
    for e in &parts.entries {
        write_entry(&mut s, e);
    }
    for (i, e) in parts.entries.iter().enumerate() {
        if let Owner::Alone(_) = e.owner() {
            let seq = parts.base + i as u64;
            s.str(engine.alone_texts.get(seq).raw(), MAX_STRING);
            match engine.alone_texts.keys(seq).filter(|_| format >= 6) {
                Some(keys) => {
                    s.u8(1);
                    let keys = keys.get(..MAX_MESSAGE_KEYS).unwrap_or(&keys);
                    s.u16(keys.len() as u16);
                    for k in keys {
                        s.u32(*k);
                    }
                }
                None if format >= 4 => s.u8(0),
                None => {}
            }
        }
    }
    s
}

/// The band tables' section.
fn bands_section(parts: &IndexParts) -> Writer {
    let mut s = Writer::default();
    s.u32(parts.band_bits);
    s.u64(parts.sweep_cursor as u64);
    s.u64(parts.bands.len() as u64);
    for table in &parts.bands {
        s.u64(table.len() as u64);
        for (i, items) in table {
            s.u32(*i);
            s.u64(items.len() as u64);
            for it in items {
                s.u64(*it);
            }
        }
    }
    s
}

/// [`encode`] in the layout of format `format` (3: without parties, for
/// the tests of reading older files).
fn encode_format(engine: &Engine, saved_at: u64, format: u16) -> Vec<u8> {
    let cfg = engine.config();
    let mut w = Writer::default();
    w.0.extend_from_slice(MAGIC);
    w.u16(format);
    w.u8(crate::engine::simhash::VERSION);
    w.0.extend_from_slice(&shape_hash(cfg));
    w.u64(saved_at);

    let parts = engine.index.to_parts();
    w.section(TAG_WINDOW, window_section(engine, &parts, format));

    w.section(TAG_BANDS, bands_section(&parts));

    let mut s = Writer::default();
    let gens = engine.exact.generations();
    s.u64(gens.len() as u64);
    for g in gens {
        s.u64(g.started);
        s.u64(g.count as u64);
        s.bytes(&g.bloom.to_bytes());
    }
    let lru: Vec<_> = engine.exact.lru_entries().collect();
    s.u64(lru.len() as u64);
    for (h, (slot, id)) in lru {
        s.0.extend_from_slice(h);
        s.u32(*slot);
        s.u64(*id);
    }
    w.section(TAG_EXACT, s);

    let mut s = Writer::default();
    let slots = engine.campaigns.slots();
    s.u64(slots.len() as u64);
    for slot in slots {
        match slot {
            Slot::Free => s.u8(0),
            Slot::Live { campaign, refs } => {
                s.u8(1);
                s.u32(*refs);
                write_campaign(&mut s, campaign, format);
            }
            Slot::Alias { target, refs, id } => {
                s.u8(2);
                s.u32(*target);
                s.u32(*refs);
                s.u64(id.0);
            }
        }
    }
    w.section(TAG_CAMPAIGNS, s);

    if format >= 6 {
        let mut s = Writer::default();
        let threads: Vec<(u64, u64, u32)> = engine.own_threads.iter().collect();
        s.u64(threads.len() as u64);
        for (k, t, sender) in threads {
            s.u64(k);
            s.u64(t);
            s.u32(sender);
        }
        w.section(TAG_THREADS, s);
    }

    let sum: [u8; 32] = Sha256::digest(&w.0).into();
    w.0.extend_from_slice(&sum);
    w.0
}

/// Writes `bytes` to `dir/name` atomically: temporary file in `dir`, write,
/// fsync, rename over `name`, fsync `dir`. On error the temporary file is
/// removed and the previous file is untouched.
///
/// # Errors
/// `Io` naming the step and path that failed.
pub fn write_atomic(dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf, SnapshotError> {
    // 0600: campaigns carry subjects and sender domains of mail.
    crate::file::write_atomic(dir, name, bytes, 0o600).map_err(|e| match e {
        crate::file::FileError::Io { op, path, source } => SnapshotError::Io { op, path, source },
        other => SnapshotError::Invalid {
            what: other.to_string(),
        },
    })
}

/// Snapshots `engine` into `dir/state.bin` (see [`encode`], [`write_atomic`]).
///
/// # Errors
/// The directory cannot be written.
pub fn save(engine: &Engine, dir: &Path) -> Result<PathBuf, SnapshotError> {
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    write_atomic(dir, FILE_NAME, &encode(engine, now))
}

/// Moves a snapshot that failed to load to `<path>.corrupt-<unixtime>` and
/// returns the new path, so it can be examined and is not loaded again. A
/// symbolic link is moved itself; its target is left alone.
///
/// # Errors
/// The rename failed.
pub fn move_aside(path: &Path, now: u64) -> Result<PathBuf, SnapshotError> {
    let mut name = path.as_os_str().to_owned();
    name.push(format!(".corrupt-{now}"));
    let to = PathBuf::from(name);
    fs::rename(path, &to).map_err(|source| SnapshotError::Io {
        op: "move aside",
        path: path.to_owned(),
        source,
    })?;
    Ok(to)
}

// ---------------------------------------------------------------- reading

const ENTRY_LEN: usize = 8 + 8 + 4 + 1 + 8 + 2 + 2 + 1 + 1 + 1;

fn read_entry(r: &mut Reader<'_>, format: u16) -> Result<Entry, SnapshotError> {
    let (simhash, sketch, time) = (r.u64()?, r.u64()?, r.u32()?);
    let owner = match (r.u8()?, r.u64()?) {
        (0, s) => Owner::Slot(u32::try_from(s).map_err(|_| SnapshotError::Invalid {
            what: format!("window entry names campaign slot {s}"),
        })?),
        (1, id) if id >> 48 == 0 => Owner::Alone(CampaignId(id)),
        (tag, v) => {
            return Err(SnapshotError::Invalid {
                what: format!("window entry's campaign ({tag}, {v})"),
            })
        }
    };
    let recipients = r.u16()?;
    let bits = r.u16()?;
    // Before format 6 a 16-bit hash, of which this build keeps the upper
    // 15 bits, and no own mail.
    let (sender, own) = if format >= 6 {
        (bits, bits & 0x8000 != 0)
    } else {
        (bits >> 1, false)
    };
    let weight = r.u8()?;
    let e = Entry::new(
        simhash,
        sketch,
        time,
        owner,
        recipients,
        sender,
        weight & 0x7F,
        r.bool()?,
    )
    .with_list_post(weight & 0x80 != 0)
    .with_own(own);
    match r.u8()? {
        c @ 0..=63 => Ok(e.with_size_class(c)),
        c => Err(SnapshotError::Invalid {
            what: format!("window entry size class {c}"),
        }),
    }
}

fn read_campaign(r: &mut Reader<'_>, format: u16) -> Result<Campaign, SnapshotError> {
    let id = CampaignId(r.u64()?);
    let first_seen = secs32(r.u64()?);
    let last_seen = secs32(r.u64()?);
    let messages = r.u32()?;
    let recipients = r.u64()?;
    let score_centi = r.u64()?;
    let n = r.items(MAX_SENDERS, 6)?;
    let mut senders = Vec::with_capacity(n);
    for _ in 0..n {
        senders.push((r.u16()?, r.u32()?));
    }
    let senders = senders.into_iter().collect();
    let n = r.items(MAX_SENDER_NAMES, 8)?;
    let mut sender_names = Vec::with_capacity(n);
    for _ in 0..n {
        sender_names.push(r.string(MAX_STRING)?);
    }
    let sample_subject = if r.bool()? {
        Some(r.string(MAX_STRING)?)
    } else {
        None
    };
    let texts = Texts::new(sample_subject.as_deref(), sender_names);
    let flags = r.u8()?;
    if flags > if format >= 6 { 7 } else { 3 } {
        return Err(SnapshotError::Invalid {
            what: "campaign flags".into(),
        });
    }
    let (talk, [largest, freed, grown], own, own_largest) = if format >= 6 {
        let talk = read_talk(r)?;
        let (largest, freed, grown) = (r.u16()?, r.u16()?, r.u16()?);
        let (own, own_largest) = (r.u32()?, r.u16()?);
        let freed = freed.min(MAX_REPLY_FREE as u16);
        (talk, [largest, freed, grown], own, own_largest)
    } else {
        if format >= 4 {
            skip_old_talk(r)?;
        }
        (None, [0; 3], 0, 0)
    };
    Ok(Campaign {
        id,
        first_seen,
        last_seen,
        messages,
        recipients,
        score_centi,
        senders,
        texts,
        alerted: flags & 1 != 0,
        list_post: flags & 2 != 0,
        // Allowances are kept in control.json (milter::control), which
        // is applied after the snapshot.
        allowed_until: None,
        talk,
        largest,
        freed,
        grown,
        own,
        own_largest,
        own_alerted: flags & 4 != 0,
    })
}

/// What [`decode`] found besides the engine.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Loaded {
    /// When the snapshot was written (Unix seconds).
    pub saved_at: u64,
    /// False when the saved band tables were not this configuration's
    /// (another number of them) and their items were dropped (near
    /// matching through simhash is unaffected).
    pub bands_restored: bool,
}

/// Rebuilds an engine for `cfg` from snapshot bytes.
///
/// # Errors
/// Any inconsistency: bad magic, other format or fingerprint version, other
/// fingerprint settings, checksum mismatch, truncation, counts above the
/// configured bounds, invalid values.
pub fn decode(bytes: &[u8], cfg: &Config) -> Result<(Engine, Loaded), SnapshotError> {
    let (mut r, saved_at, format) = read_header(bytes, cfg)?;
    let max_entries = cfg.window.max_entries;
    let (base, entries, alone_texts) = read_window(&mut r, max_entries, format)?;
    let (band_bits, sweep_cursor, bands) = read_bands(&mut r, cfg)?;
    let mut engine = Engine::new(cfg);
    let (gens, lru) = read_exact(&mut r, cfg, &engine)?;
    // Slots: live campaigns plus aliases, at most two per window entry
    // (see campaign.rs), plus freed ones still in the vector.
    let slots = read_slots(
        &mut r,
        max_entries.saturating_mul(2).saturating_add(16),
        format,
    )?;
    let threads = if format >= 6 {
        read_threads(&mut r, cfg)?
    } else {
        Vec::new()
    };
    r.finish()?;

    let nslots = slots.len();
    let campaigns = Campaigns::from_slots(slots, cfg.campaign.keep_subjects).ok_or_else(|| {
        SnapshotError::Invalid {
            what: "inconsistent campaign slots".into(),
        }
    })?;
    // Every slot named exists; every campaign of one has an id of its own.
    let mut ids = std::collections::HashSet::new();
    for e in &entries {
        let bad = match e.owner() {
            Owner::Slot(s) => {
                (s as usize >= nslots).then(|| format!("campaign slot {s} of {nslots}"))
            }
            Owner::Alone(id) => (campaigns.slot_of(id).is_some() || !ids.insert(id))
                .then(|| format!("campaign {id} twice")),
        };
        if let Some(what) = bad {
            return Err(SnapshotError::Invalid {
                what: format!("window entry names {what}"),
            });
        }
    }
    engine.alone = ids.len();
    drop(ids);
    engine.alone_texts = alone_texts;
    let bands_restored = engine.index.restore_parts(IndexParts {
        base,
        entries,
        band_bits,
        bands,
        sweep_cursor: usize::try_from(sweep_cursor).unwrap_or(0),
    });
    let mut exact = ExactSet::new(
        &cfg.exact,
        cfg.window.window.as_secs(),
        crate::engine::exact::bloom_seed(cfg),
    );
    exact.restore(gens, lru);
    engine.exact = exact;
    engine.campaigns = campaigns;
    for (k, t, sender) in threads {
        engine
            .own_threads
            .note(k, t, (sender != 0).then_some(sender));
    }
    Ok((
        engine,
        Loaded {
            saved_at,
            bands_restored,
        },
    ))
}

/// Checks the length, magic, checksum, format and fingerprint versions
/// and the configuration's shape; returns the reader past the header and
/// the time the snapshot was saved.
fn read_header<'a>(bytes: &'a [u8], cfg: &Config) -> Result<(Reader<'a>, u64, u16), SnapshotError> {
    if bytes.len() < HEADER_LEN + CHECKSUM_LEN {
        return Err(SnapshotError::Truncated { what: "header" });
    }
    let (body, sum) = bytes.split_at(bytes.len() - CHECKSUM_LEN);
    if body.get(..MAGIC.len()) != Some(MAGIC.as_slice()) {
        return Err(SnapshotError::BadMagic);
    }
    let digest: [u8; 32] = Sha256::digest(body).into();
    if digest.as_slice() != sum {
        return Err(SnapshotError::Checksum);
    }
    let mut r = Reader::new(body, "header");
    r.take(MAGIC.len())?;
    let format = r.u16()?;
    // Format 2 is format 3 without list posts: read alike.
    if !(2..=FORMAT_VERSION).contains(&format) {
        return Err(SnapshotError::Format {
            found: format,
            expected: FORMAT_VERSION,
        });
    }
    let fp = r.u8()?;
    if fp != crate::engine::simhash::VERSION {
        return Err(SnapshotError::FingerprintVersion {
            found: fp,
            expected: crate::engine::simhash::VERSION,
        });
    }
    if r.array::<32>()? != shape_hash(cfg) {
        return Err(SnapshotError::Shape);
    }
    let saved_at = r.u64()?;
    Ok((r, saved_at, format))
}

/// The window section: its base sequence number and at most
/// `max_entries` entries.
/// The window section: base, entries, and the texts of those alone in
/// their campaign.
type WindowParts = (u64, Vec<Entry>, AloneRecords);

fn read_window(
    r: &mut Reader<'_>,
    max_entries: usize,
    format: u16,
) -> Result<WindowParts, SnapshotError> {
    let mut s = r.section(TAG_WINDOW, "window")?;
    let base = s.u64()?;
    // Sequence numbers count messages since the window was created and
    // only grow; one near u64::MAX, never reached by counting, would
    // overflow as mail arrives.
    if base > MAX_BASE_SEQ {
        return Err(SnapshotError::Invalid {
            what: format!("window sequence number {base}"),
        });
    }
    let n = s.items(max_entries, ENTRY_LEN)?;
    let mut entries = Vec::with_capacity(n);
    for _ in 0..n {
        entries.push(read_entry(&mut s, format)?);
    }
    let mut texts = AloneRecords::default();
    for (i, e) in entries.iter().enumerate() {
        let (t, keys) = match e.owner() {
            Owner::Alone(_) => {
                let t = Texts::from_raw(s.string(MAX_STRING)?);
                let keys = if format >= 4 && s.bool()? {
                    let n = if format >= 6 {
                        usize::from(s.u16()?)
                    } else {
                        usize::from(s.u8()?)
                    };
                    if n > MAX_MESSAGE_KEYS {
                        return Err(SnapshotError::TooLarge {
                            what: "party keys of a message",
                            count: n as u64,
                            max: MAX_MESSAGE_KEYS as u64,
                        });
                    }
                    let keys = (0..n)
                        .map(|_| s.u32().map(clamp_key))
                        .collect::<Result<Vec<_>, _>>()?;
                    // Keys of format 4 and 5 were made another way.
                    (format >= 6).then_some(keys)
                } else {
                    None
                };
                (t, keys)
            }
            Owner::Slot(_) => (Texts::default(), None),
        };
        texts.push(base + i as u64, &t, keys.as_deref());
    }
    s.finish()?;
    Ok((base, entries, texts))
}

/// Our users' Message-IDs (format 6): at most `own.max_threads` (thread
/// key, time, sender key) triples.
type Threads = Vec<(u64, u64, u32)>;

fn read_threads(r: &mut Reader<'_>, cfg: &Config) -> Result<Threads, SnapshotError> {
    let mut s = r.section(TAG_THREADS, "own threads")?;
    let n = s.items(cfg.own.max_threads, 20)?;
    let threads = (0..n)
        .map(|_| Ok((s.u64()?, s.u64()?, s.u32()?)))
        .collect::<Result<Vec<_>, SnapshotError>>()?;
    s.finish()?;
    Ok(threads)
}

/// Buckets of one band table: (bucket index, items).
type BandBuckets = Vec<(u32, Vec<u64>)>;

/// The band tables section: bucket bits, sweep cursor and the tables.
fn read_bands(
    r: &mut Reader<'_>,
    cfg: &Config,
) -> Result<(u32, u64, Vec<BandBuckets>), SnapshotError> {
    let mut s = r.section(TAG_BANDS, "band tables")?;
    let band_bits = s.u32()?;
    let sweep_cursor = s.u64()?;
    let tables = s.items(max_band_tables(cfg.window.minhash_bands), 8)?;
    let mut bands = Vec::with_capacity(tables);
    // Each entry is in at most one bucket per table, and stale items are
    // swept in step with insertions: allow a generous multiple.
    let max_items = cfg
        .window
        .max_entries
        .saturating_mul(4)
        .saturating_add(1024);
    let max_buckets = 1usize << band_bits.min(24);
    for _ in 0..tables {
        let nb = s.items(max_buckets, 12)?;
        let mut buckets = Vec::with_capacity(nb);
        let mut total = 0usize;
        for _ in 0..nb {
            let i = s.u32()?;
            let ni = s.items(max_items.saturating_sub(total), 8)?;
            total += ni;
            let mut items = Vec::with_capacity(ni);
            for _ in 0..ni {
                items.push(s.u64()?);
            }
            buckets.push((i, items));
        }
        bands.push(buckets);
    }
    s.finish()?;
    Ok((band_bits, sweep_cursor, bands))
}

/// Exact-hash LRU items: (SHA-256, (campaign slot, campaign id)).
type LruItems = Vec<([u8; 32], (u32, u64))>;

/// The exact set section: Bloom generations of exactly the size and seed
/// a fresh engine for `cfg` has, and the LRU.
fn read_exact(
    r: &mut Reader<'_>,
    cfg: &Config,
    fresh_engine: &Engine,
) -> Result<(Vec<Generation>, LruItems), SnapshotError> {
    let mut s = r.section(TAG_EXACT, "exact set")?;
    let fresh = fresh_engine
        .exact
        .generations()
        .front()
        .map(|g| g.bloom.to_bytes())
        .ok_or_else(|| SnapshotError::Invalid {
            what: "empty exact set".into(),
        })?;
    let ngens = s.items(cfg.exact.generations, fresh.len())?;
    let mut gens = Vec::with_capacity(ngens);
    for _ in 0..ngens {
        let started = s.u64()?;
        let count = usize::try_from(s.u64()?).unwrap_or(usize::MAX);
        let bitmap = s.bytes(fresh.len())?;
        // The Bloom header (version, size, hash count, seed) must equal a
        // fresh filter's: same sizes and seed, or lookups would be garbage.
        if bitmap.len() != fresh.len() || bitmap.get(..45) != fresh.get(..45) {
            return Err(SnapshotError::Invalid {
                what: "Bloom filter of another size or seed".into(),
            });
        }
        let bloom = Bloom::from_bytes(bitmap.to_vec()).map_err(|e| SnapshotError::Invalid {
            what: format!("Bloom filter: {e}"),
        })?;
        gens.push(Generation {
            bloom,
            started,
            count,
        });
    }
    let nlru = s.items(cfg.exact.lru_capacity, 32 + 4 + 8)?;
    let mut lru = Vec::with_capacity(nlru);
    for _ in 0..nlru {
        let h: [u8; 32] = s.array()?;
        lru.push((h, (s.u32()?, s.u64()?)));
    }
    s.finish()?;
    Ok((gens, lru))
}

/// The campaigns section: at most `max_slots` slots.
fn read_slots(
    r: &mut Reader<'_>,
    max_slots: usize,
    format: u16,
) -> Result<Vec<Slot>, SnapshotError> {
    let mut s = r.section(TAG_CAMPAIGNS, "campaigns")?;
    let nslots = s.items(max_slots, 1)?;
    let mut slots = Vec::with_capacity(nslots);
    for _ in 0..nslots {
        slots.push(match s.u8()? {
            0 => Slot::Free,
            1 => {
                let refs = s.u32()?;
                Slot::Live {
                    campaign: read_campaign(&mut s, format)?,
                    refs,
                }
            }
            2 => Slot::Alias {
                target: s.u32()?,
                refs: s.u32()?,
                id: CampaignId(s.u64()?),
            },
            t => {
                return Err(SnapshotError::Invalid {
                    what: format!("campaign slot kind {t}"),
                });
            }
        });
    }
    s.finish()?;
    Ok(slots)
}

/// Encoded size of the largest campaign slot [`encode`] writes: a live
/// campaign with every list full and every string at its cap.
const MAX_CAMPAIGN_LEN: u64 = {
    let strings = (MAX_SENDER_NAMES as u64) * (8 + MAX_STRING as u64) + (1 + 8 + MAX_STRING as u64);
    // kind, refs, id, first/last seen, messages, recipients, score,
    // senders, names, subject, alerted, talk (its larger form)
    let talk = 1 + 4 + 4 + 1 + 8 + 4 * MAX_KEYS as u64;
    1 + 4 + 8 + 8 + 8 + 4 + 8 + 8 + (8 + MAX_SENDERS as u64 * 6) + 8 + strings + 1 + talk + 12
};

/// Encoded size of the largest record of a message alone in its
/// campaign: its texts and its party keys.
const MAX_RECORD_LEN: u64 = 8 + MAX_STRING as u64 + 1 + 2 + 4 * MAX_MESSAGE_KEYS as u64;

/// The largest snapshot file [`load`] reads for `cfg`: an upper bound on
/// what [`encode`] can write for this configuration, counted section by
/// section with every table full (`window.max_entries` entries, each in
/// at most one non-empty bucket per band table and with as many band items
/// as [`decode`] allows, every exact-set generation, a full LRU, twice
/// `window.max_entries` campaign slots of which every entry's campaign is
/// live and each at its largest). No snapshot of this configuration is
/// larger; a larger file is refused before it is read. The bound is
/// generous (the campaigns, at their largest, dominate it: about 6.6 KB
/// per window entry); what it rules out is a file of unbounded or absurd
/// size, not a large snapshot.
pub fn max_file_len(cfg: &Config) -> u64 {
    let entries = cfg.window.max_entries as u64;
    let fixed = (HEADER_LEN + CHECKSUM_LEN) as u64 + 4 * (1 + 8);
    let window =
        (8 + 8u64).saturating_add(entries.saturating_mul(ENTRY_LEN as u64 + MAX_RECORD_LEN));
    // As in decode: up to 4 items per entry (plus slack) per table, each
    // in a non-empty bucket (index u32, count u64) at worst of its own.
    let items = entries.saturating_mul(4).saturating_add(1024);
    let per_table = 8u64.saturating_add(items.saturating_mul(4 + 8 + 8));
    let tables = max_band_tables(cfg.window.minhash_bands) as u64;
    let bands = (4 + 8 + 8u64).saturating_add(tables.saturating_mul(per_table));
    // One generation's filter is sized for at most `bloom_items` items
    // (ExactSet divides them among generations); 64 bytes cover the
    // bloomfilter crate's header.
    let fp = cfg.exact.bloom_fp_rate;
    let fp = if fp > 0.0 && fp < 1.0 { fp } else { 1e-12 };
    let bloom = Bloom::<[u8]>::compute_bitmap_size(cfg.exact.bloom_items.max(16), fp) as u64 + 64;
    let exact = (8 + 8u64)
        .saturating_add(
            (cfg.exact.generations.max(2) as u64)
                .saturating_mul((8 + 8 + 8u64).saturating_add(bloom)),
        )
        .saturating_add((cfg.exact.lru_capacity as u64).saturating_mul(32 + 4 + 8));
    let slots = entries.saturating_mul(2).saturating_add(16);
    let campaigns = 8u64
        .saturating_add(slots.saturating_mul(1 + 4 + 4 + 8))
        .saturating_add(entries.saturating_add(16).saturating_mul(MAX_CAMPAIGN_LEN));
    let threads = (1 + 8 + 8u64).saturating_add((cfg.own.max_threads as u64).saturating_mul(20));
    fixed
        .saturating_add(window)
        .saturating_add(bands)
        .saturating_add(exact)
        .saturating_add(campaigns)
        .saturating_add(threads)
}

/// Reads the snapshot file at `path`, trusting nothing about it: see the
/// module docs.
///
/// # Errors
/// `NotRegular` for anything but a regular file (a symbolic link included,
/// whatever it points to), `TooLarge` for a file above [`max_file_len`],
/// `Io` when it cannot be opened or read.
pub fn read_file(path: &Path, cfg: &Config) -> Result<Vec<u8>, SnapshotError> {
    use crate::file::FileError;
    let max = max_file_len(cfg);
    crate::file::read_regular(path, max, crate::file::Links::Refuse).map_err(|e| match e {
        FileError::NotRegular { path, kind } => SnapshotError::NotRegular { path, kind },
        FileError::TooLarge { size, max, .. } => SnapshotError::TooLarge {
            what: "file size",
            count: size,
            max,
        },
        FileError::Grew { path } => SnapshotError::Invalid {
            what: format!("{} grew while it was read", path.display()),
        },
        FileError::Io { op, path, source } => SnapshotError::Io { op, path, source },
    })
}

/// Loads the snapshot at `path` into an engine for `cfg`.
///
/// # Errors
/// [`read_file`] refuses the file or cannot read it, or [`decode`] refuses
/// its contents.
pub fn load_engine(path: &Path, cfg: &Config) -> Result<Engine, SnapshotError> {
    load(path, cfg).map(|(e, _)| e)
}

/// [`load_engine`], also returning what [`Loaded`] says.
///
/// # Errors
/// As [`load_engine`].
pub fn load(path: &Path, cfg: &Config) -> Result<(Engine, Loaded), SnapshotError> {
    decode(&read_file(path, cfg)?, cfg)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Envelope, UnixSecs};

    use crate::engine::testutil::spam;

    fn ham(n: u32) -> String {
        format!(
            "From: Friend <f{n}@mail.example>\nTo: me@example.net\nSubject: note {n}\n\n\
             Topic number {n} is about gardening and the tomatoes grew {n} centimetres, \
             the cat slept on the warm roof while neighbours discussed the weather forecast \
             for the coming weekend and the bakery sold out of bread again today.\n"
        )
    }

    fn small_cfg() -> Config {
        let mut cfg = Config::default();
        cfg.window.max_entries = 1000;
        cfg.exact.bloom_items = 2000;
        cfg.exact.lru_capacity = 500;
        cfg.thresholds.bulk_threshold = 5.0;
        cfg.thresholds.suspect_threshold = 3.0;
        cfg
    }

    /// One recipient, another person each call: a campaign's copies
    /// reach different people (recipients are counted once a campaign).
    fn env() -> Envelope {
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        Envelope {
            rcpts: vec![format!("x{n}@example.net")],
            ..Envelope::default()
        }
    }

    fn counts(e: &Engine) -> (usize, usize, usize, usize, u64) {
        let s = e.stats();
        (
            s.window_entries,
            s.campaigns,
            s.campaign_slots,
            s.lru_entries,
            s.bloom_fill.to_bits(),
        )
    }

    fn fed_engine(cfg: &Config) -> Engine {
        let mut e = Engine::new(cfg);
        for (i, n) in ["alice", "bob", "carol", "dave"].iter().enumerate() {
            e.process(
                spam(n, 1000 + i as u32).as_bytes(),
                &env(),
                UnixSecs(1000 + i as u64),
            );
            e.process(ham(i as u32).as_bytes(), &env(), UnixSecs(1000 + i as u64));
        }
        // A message alone in its campaign (held in its window entry).
        e.process(
            b"From: Zed <z@other.example>\nSubject: Minutes\n\nThe committee met on \
              tuesday to review the budget for the harbour lights and agreed to paint \
              the lighthouse railings before the winter storms arrive in november.\n",
            &env(),
            UnixSecs(1010),
        );
        // A list's post in two transactions (a campaign in a slot) and
        // another alone in its entry: both keep the list-post mark.
        let list = Envelope {
            mail_from: Some("news-bounces@lists.example".into()),
            ..env()
        };
        let post = |text: &str| {
            format!(
                "From: News <news@lists.example>\nList-Id: <news.lists.example>\n\
                 Subject: Notes\n\n{text}\n"
            )
        };
        let first = post(
            "The reading group meets on thursday evening in the library annex to \
             discuss the second half of the novel and choose the next book for spring.",
        );
        e.process(first.as_bytes(), &list, UnixSecs(1011));
        e.process(first.as_bytes(), &list, UnixSecs(1012));
        e.process(
            post(
                "Volunteers for the river cleanup should bring gloves and boots on \
                 saturday morning; the council provides bags, grabbers and hot soup.",
            )
            .as_bytes(),
            &list,
            UnixSecs(1013),
        );
        e
    }

    #[test]
    fn round_trip_keeps_verdicts() {
        let cfg = small_cfg();
        let mut a = fed_engine(&cfg);
        let bytes = encode(&a, 42);
        let (mut b, loaded) = decode(&bytes, &cfg).unwrap();
        assert_eq!(
            loaded,
            Loaded {
                saved_at: 42,
                bands_restored: true
            }
        );
        assert_eq!(counts(&a), counts(&b));
        // Campaigns of one message (the ham) come back from their entries,
        // with their texts.
        let list = |e: &Engine| {
            let mut v: Vec<_> = e
                .campaigns()
                .map(|c| (c.id, c.messages, c.texts.clone(), c.list_post))
                .collect();
            v.sort_by_key(|x| x.0);
            v
        };
        assert!(
            a.alone > 0 && a.campaigns.live() > 0,
            "{} alone, {} in slots",
            a.alone,
            a.campaigns.live()
        );
        assert_eq!(list(&a), list(&b));
        let mut posts: Vec<u32> = list(&b).iter().filter(|c| c.3).map(|c| c.1).collect();
        posts.sort_unstable();
        assert_eq!(posts, [1, 2], "the list's campaigns, in a slot and alone");
        for (i, msg) in [
            spam("erin", 2000),
            ham(77),
            spam("frank", 2001),
            spam("erin", 2000),
        ]
        .iter()
        .enumerate()
        {
            let now = UnixSecs(2000 + i as u64);
            // The same envelope for both: the same parties.
            let to = env();
            let va = a.process(msg.as_bytes(), &to, now);
            let vb = b.process(msg.as_bytes(), &to, now);
            assert_eq!(va, vb, "message {i}");
        }
        assert_eq!(list(&a), list(&b));
        assert_eq!(encode(&a, 1), encode(&b, 1));
    }

    /// A snapshot saved with the containment rule (and its anchor table)
    /// is read after the rule is turned off, and the other way round: the
    /// band tables come back either way.
    #[test]
    fn a_snapshot_survives_turning_containment_off_and_on() {
        let cfg = small_cfg();
        let mut off = cfg.clone();
        off.window.containment = false;
        for (save, load) in [(&cfg, &off), (&off, &cfg)] {
            let bytes = encode(&fed_engine(save), 1);
            let (_, loaded) = decode(&bytes, load).unwrap();
            assert!(loaded.bands_restored);
        }
    }

    #[test]
    fn every_truncation_fails_cleanly() {
        let cfg = small_cfg();
        let bytes = encode(&fed_engine(&cfg), 1);
        for n in 0..bytes.len() {
            assert!(
                decode(bytes.get(..n).unwrap_or_default(), &cfg).is_err(),
                "prefix {n}"
            );
        }
    }

    #[test]
    fn flipped_byte_fails_the_checksum() {
        let cfg = small_cfg();
        let bytes = encode(&fed_engine(&cfg), 1);
        for pos in (8..bytes.len()).step_by(97) {
            let mut bad = bytes.clone();
            bad[pos] ^= 0x20;
            assert!(
                matches!(decode(&bad, &cfg), Err(SnapshotError::Checksum)),
                "byte {pos}"
            );
        }
    }

    /// Re-seals a modified body with a valid checksum, as a hostile writer
    /// would, to reach the checks behind the checksum.
    fn reseal(mut body: Vec<u8>) -> Vec<u8> {
        let sum: [u8; 32] = Sha256::digest(&body).into();
        body.extend_from_slice(&sum);
        body
    }

    #[test]
    fn hostile_counts_are_refused_before_allocating() {
        let cfg = small_cfg();
        let bytes = encode(&fed_engine(&cfg), 1);
        let mut body = bytes[..bytes.len() - CHECKSUM_LEN].to_vec();
        // Window entry count sits after the section tag, length and base.
        let at = HEADER_LEN + 1 + 8 + 8;
        body[at..at + 8].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            decode(&reseal(body), &cfg),
            Err(SnapshotError::TooLarge { .. })
        ));
    }

    /// Found by the snapshot fuzz target
    /// (fixtures/fuzz/snapshot/crash-window-base-near-u64-max.bin): a
    /// window whose first sequence number is near u64::MAX overflowed when
    /// the block tables were rebuilt from it.
    #[test]
    fn window_base_near_the_end_of_u64_is_refused() {
        let cfg = small_cfg();
        let bytes = encode(&fed_engine(&cfg), 1);
        let at = HEADER_LEN + 1 + 8;
        for base in [u64::MAX, u64::MAX - 3, MAX_BASE_SEQ + 1] {
            let mut body = bytes[..bytes.len() - CHECKSUM_LEN].to_vec();
            body[at..at + 8].copy_from_slice(&base.to_le_bytes());
            assert!(
                matches!(
                    decode(&reseal(body), &cfg),
                    Err(SnapshotError::Invalid { .. })
                ),
                "base {base}"
            );
        }
        let mut body = bytes[..bytes.len() - CHECKSUM_LEN].to_vec();
        body[at..at + 8].copy_from_slice(&MAX_BASE_SEQ.to_le_bytes());
        let (mut e, _) = decode(&reseal(body), &cfg).unwrap();
        let v = e.process(spam("zed", 9).as_bytes(), &env(), UnixSecs(5000));
        assert!(v.seq.is_some_and(|s| s > MAX_BASE_SEQ));
    }

    #[test]
    fn other_settings_are_incompatible() {
        let cfg = small_cfg();
        let bytes = encode(&fed_engine(&cfg), 1);
        let mut other = cfg.clone();
        other.fingerprint.shingle_words = 3;
        assert!(matches!(decode(&bytes, &other), Err(SnapshotError::Shape)));
        let mut smaller = cfg.clone();
        smaller.window.max_entries = 4;
        assert!(matches!(
            decode(&bytes, &smaller),
            Err(SnapshotError::TooLarge { .. })
        ));
        let mut v = bytes[..bytes.len() - CHECKSUM_LEN].to_vec();
        v[8] = 9;
        assert!(matches!(
            decode(&reseal(v), &cfg),
            Err(SnapshotError::Format { found: 9, .. })
        ));
    }

    /// A format-2 file (before list posts: the same layout without their
    /// bits) and a format-3 file (before parties) are read after an
    /// upgrade; their campaigns' parties are unknown: no conversation.
    #[test]
    fn format_2_and_3_files_are_read() {
        let cfg = small_cfg();
        let mut e = Engine::new(&cfg);
        for (i, n) in ["alice", "bob", "carol"].iter().enumerate() {
            e.process(spam(n, 7 + i as u32).as_bytes(), &env(), UnixSecs(1000));
        }
        e.process(b"Subject: alone\n\nsomething else entirely, said once and never again by anyone at all here", &env(), UnixSecs(1001));
        let bytes = encode_format(&e, 1, 3);
        let mut v = bytes[..bytes.len() - CHECKSUM_LEN].to_vec();
        assert_eq!(v[8..10], [3, 0]);
        let (back, _) = decode(&reseal(v.clone()), &cfg).unwrap();
        assert_eq!(counts(&back), counts(&e));
        assert!(back.campaigns.iter().all(|c| c.talk.is_none()));
        assert!(back.campaigns.iter().count() > 0);
        v[8] = 2;
        let (back, _) = decode(&reseal(v), &cfg).unwrap();
        assert_eq!(counts(&back), counts(&e));
        // This build's own files keep them.
        let (now, _) = decode(&encode(&e, 1), &cfg).unwrap();
        assert!(now.campaigns.iter().all(|c| c.talk.is_some()));
        let alone: Vec<u64> = now
            .window()
            .iter()
            .filter(|(_, x)| matches!(x.owner(), Owner::Alone(_)))
            .map(|(seq, _)| seq)
            .collect();
        assert!(!alone.is_empty());
        assert!(alone.iter().all(|s| now.alone_texts.keys(*s).is_some()));
    }

    /// Band items saved from one window size go back into another: band
    /// tables take any item at any size.
    #[test]
    fn band_items_fit_a_window_of_another_size() {
        fn items(e: &Engine) -> Vec<Vec<u64>> {
            e.index
                .to_parts()
                .bands
                .into_iter()
                .map(|t| {
                    let mut v: Vec<u64> = t.into_iter().flat_map(|(_, b)| b).collect();
                    v.sort_unstable();
                    v
                })
                .collect()
        }
        let cfg = small_cfg();
        let fed = fed_engine(&cfg);
        let bytes = encode(&fed, 1);
        let mut bigger = cfg.clone();
        bigger.window.max_entries = 1 << 16;
        let (e, loaded) = decode(&bytes, &bigger).unwrap();
        assert!(loaded.bands_restored);
        assert_eq!(e.stats().window_entries, fed.stats().window_entries);
        assert!(e.stats().window_entries > 0);
        assert_eq!(items(&e), items(&fed));
        assert!(items(&e).iter().all(|t| !t.is_empty()));
    }

    #[test]
    fn save_is_atomic_and_load_reads_it_back() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = small_cfg();
        let e = fed_engine(&cfg);
        let path = save(&e, dir.path()).unwrap();
        assert_eq!(path, dir.path().join(FILE_NAME));
        let back = load_engine(&path, &cfg).unwrap();
        assert_eq!(counts(&back), counts(&e));
        let names: Vec<_> = fs::read_dir(dir.path())
            .unwrap()
            .map(|d| d.unwrap().file_name())
            .collect();
        assert_eq!(names.len(), 1, "no temporary file left: {names:?}");
        use std::os::unix::fs::PermissionsExt;
        assert_eq!(
            fs::metadata(&path).unwrap().permissions().mode() & 0o777,
            0o600
        );
        let aside = move_aside(&path, 77).unwrap();
        assert!(aside.to_string_lossy().ends_with("state.bin.corrupt-77"));
        assert!(!path.exists());
    }

    /// A FIFO would block the open, a link to /dev/zero would be read
    /// until memory runs out: both are refused before a byte is read, as
    /// are a directory and a link to a good snapshot (never followed).
    #[test]
    fn only_a_regular_file_is_read() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = small_cfg();
        let good = save(&fed_engine(&cfg), dir.path()).unwrap();
        let cases: [(&str, &str); 4] = [
            ("zero", "a symbolic link"),
            ("link", "a symbolic link"),
            ("fifo", "a FIFO"),
            ("dir", "a directory"),
        ];
        std::os::unix::fs::symlink("/dev/zero", dir.path().join("zero")).unwrap();
        std::os::unix::fs::symlink(&good, dir.path().join("link")).unwrap();
        let st = std::process::Command::new("mkfifo")
            .arg(dir.path().join("fifo"))
            .status()
            .unwrap();
        assert!(st.success());
        fs::create_dir(dir.path().join("dir")).unwrap();
        for (name, kind) in cases {
            match load(&dir.path().join(name), &cfg) {
                Err(SnapshotError::NotRegular { kind: k, .. }) => assert_eq!(k, kind, "{name}"),
                other => panic!("{name}: {:?}", other.map(|(_, l)| l)),
            }
        }
        // Moving a link aside moves the link, not what it points to.
        let aside = move_aside(&dir.path().join("link"), 5).unwrap();
        assert!(fs::symlink_metadata(&aside)
            .unwrap()
            .file_type()
            .is_symlink());
        assert!(load(&good, &cfg).is_ok());
    }

    #[test]
    fn a_file_larger_than_any_snapshot_is_refused_unread() {
        let dir = tempfile::tempdir().unwrap();
        let cfg = small_cfg();
        let path = dir.path().join(FILE_NAME);
        // Sparse: nothing is written, and nothing must be read.
        let f = fs::File::create(&path).unwrap();
        f.set_len(max_file_len(&cfg) + 1).unwrap();
        assert!(matches!(
            load(&path, &cfg),
            Err(SnapshotError::TooLarge {
                what: "file size",
                ..
            })
        ));
    }

    /// The bound holds a full engine's snapshot with long campaign strings.
    #[test]
    fn max_file_len_bounds_a_full_engine() {
        let mut cfg = small_cfg();
        cfg.window.max_entries = 64;
        let mut e = Engine::new(&cfg);
        let long = "\u{00e9}".repeat(600);
        for i in 0..100u32 {
            let msg = format!(
                "From: {long} <s{i}@d{i}.{long}.example>\nTo: me@example.net\nSubject: {long} {i}\n\n\
                 Message {i} body {long} with words {i} {i} {i}.\n"
            );
            e.process(msg.as_bytes(), &env(), UnixSecs(1000 + u64::from(i)));
            e.process(
                spam("zed", i).as_bytes(),
                &env(),
                UnixSecs(1000 + u64::from(i)),
            );
        }
        assert_eq!(e.stats().window_entries, 64, "the window is full");
        let bytes = encode(&e, 1);
        assert!(
            (bytes.len() as u64) <= max_file_len(&cfg),
            "{} > {}",
            bytes.len(),
            max_file_len(&cfg)
        );
        let dir = tempfile::tempdir().unwrap();
        let path = write_atomic(dir.path(), FILE_NAME, &bytes).unwrap();
        assert!(load(&path, &cfg).is_ok());
    }
}
