//! A replay's records written to an unnamed temporary file as they are
//! made, for `bulkwatch replay`: its memory then stays bounded by the
//! engine's window however large the mailbox (each record is read back
//! once, its campaign ids resolved through the merges made since, when
//! the output is written).

use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Seek, Write};
use std::os::unix::fs::OpenOptionsExt;

use super::Record;
use crate::engine::campaign::CampaignId;
use crate::engine::verdict::{AllowReason, Level, LevelKind, SkipReason};
use crate::store::codec::{CodecError, Reader, Writer};

/// Longest Message-ID or subject kept in a record.
const MAX_TEXT: usize = 998;

/// Records on disk.
pub struct Spill {
    out: BufWriter<File>,
    count: u64,
}

/// A file in the temporary directory, removed at once: it has no name
/// while it is used, and goes when the process ends however it ends.
fn unnamed_file() -> io::Result<File> {
    let dir = std::env::temp_dir();
    for n in 0..64u32 {
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = dir.join(format!(
            ".bulkwatch-replay-{}-{n}-{nanos}",
            std::process::id()
        ));
        let opened = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o600)
            .custom_flags(libc::O_NOFOLLOW)
            .open(&path);
        match opened {
            Ok(f) => {
                std::fs::remove_file(&path)?;
                return Ok(f);
            }
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
    }
    Err(io::Error::other("no free name for a temporary file"))
}

fn opt_u32(w: &mut Writer, v: Option<u32>) {
    w.u64(v.map_or(0, |x| u64::from(x) + 1));
}

fn opt_f64(w: &mut Writer, v: Option<f64>) {
    w.bool(v.is_some());
    w.f64(v.unwrap_or(0.0));
}

fn opt_str(w: &mut Writer, v: Option<&str>) {
    w.bool(v.is_some());
    w.str(v.unwrap_or(""), MAX_TEXT);
}

impl Spill {
    /// An empty spill.
    ///
    /// # Errors
    /// The temporary file cannot be made.
    pub fn new() -> io::Result<Spill> {
        Ok(Spill {
            out: BufWriter::with_capacity(1 << 16, unnamed_file()?),
            count: 0,
        })
    }

    /// Records written.
    pub fn len(&self) -> u64 {
        self.count
    }

    /// Whether none was written.
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Writes `r`.
    ///
    /// # Errors
    /// Writing failed (a full disk).
    pub fn push(&mut self, r: &Record) -> io::Result<()> {
        let mut w = Writer::default();
        w.u64(r.n as u64);
        w.str(&r.mbox, MAX_TEXT);
        w.u64(r.index as u64);
        w.u64(r.time);
        opt_str(&mut w, r.message_id.as_deref());
        w.u8(level_code(r.level));
        w.u8(reason_code(r.level));
        w.u64(r.campaign.map_or(u64::MAX, |c| c.0));
        w.u64(r.campaign_size);
        w.f64(r.score);
        w.bool(r.exact);
        opt_u32(&mut w, r.distance);
        opt_f64(&mut w, r.resemblance);
        w.u64(r.features as u64);
        w.bool(r.simhash.is_some());
        w.u64(r.simhash.unwrap_or(0));
        opt_str(&mut w, r.subject.as_deref());
        w.u64(r.nearest.map_or(0, |n| n as u64 + 1));
        w.u32(r.corroborating);
        w.bool(r.list);
        w.u64(r.near_campaign.map_or(u64::MAX, |c| c.0));
        opt_u32(&mut w, r.near_distance);
        opt_f64(&mut w, r.near_resemblance);
        let len = u32::try_from(w.0.len()).unwrap_or(u32::MAX);
        self.out.write_all(&len.to_le_bytes())?;
        self.out.write_all(&w.0)?;
        self.count += 1;
        Ok(())
    }

    /// The records back, in the order written.
    ///
    /// # Errors
    /// The file cannot be flushed or rewound.
    pub fn records(&mut self) -> io::Result<Records<'_>> {
        self.out.flush()?;
        let file = self.out.get_mut();
        file.rewind()?;
        let file = file.try_clone()?;
        Ok(Records {
            input: BufReader::with_capacity(1 << 16, file),
            left: self.count,
            buf: Vec::new(),
            _spill: std::marker::PhantomData,
        })
    }
}

/// The records of a [`Spill`], read back.
pub struct Records<'a> {
    input: BufReader<File>,
    left: u64,
    buf: Vec<u8>,
    /// Read while the spill is not written to.
    _spill: std::marker::PhantomData<&'a mut Spill>,
}

impl Iterator for Records<'_> {
    type Item = io::Result<Record>;

    fn next(&mut self) -> Option<io::Result<Record>> {
        if self.left == 0 {
            return None;
        }
        self.left -= 1;
        Some(self.read_one())
    }
}

fn invalid(e: CodecError) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, e)
}

impl Records<'_> {
    fn read_one(&mut self) -> io::Result<Record> {
        let mut len = [0u8; 4];
        self.input.read_exact(&mut len)?;
        self.buf.resize(u32::from_le_bytes(len) as usize, 0);
        self.input.read_exact(&mut self.buf)?;
        let mut r = Reader::new(&self.buf, "spilled record");
        let usize_of = |v: u64| usize::try_from(v).unwrap_or(usize::MAX);
        let n = usize_of(r.u64().map_err(invalid)?);
        let mbox = r.string(MAX_TEXT).map_err(invalid)?;
        let index = usize_of(r.u64().map_err(invalid)?);
        let time = r.u64().map_err(invalid)?;
        let message_id = read_opt_str(&mut r)?;
        let kind = r.u8().map_err(invalid)?;
        let level = level_of(kind, r.u8().map_err(invalid)?);
        let id = |v: u64| (v != u64::MAX).then_some(CampaignId(v));
        let campaign = id(r.u64().map_err(invalid)?);
        let campaign_size = r.u64().map_err(invalid)?;
        let score = r.f64().map_err(invalid)?;
        let exact = r.bool().map_err(invalid)?;
        let distance = read_opt_u32(&mut r)?;
        let resemblance = read_opt_f64(&mut r)?;
        let features = usize_of(r.u64().map_err(invalid)?);
        let has_simhash = r.bool().map_err(invalid)?;
        let simhash = r.u64().map_err(invalid)?;
        let subject = read_opt_str(&mut r)?;
        let nearest = r.u64().map_err(invalid)?;
        let corroborating = r.u32().map_err(invalid)?;
        let list = r.bool().map_err(invalid)?;
        let near_campaign = id(r.u64().map_err(invalid)?);
        let near_distance = read_opt_u32(&mut r)?;
        let near_resemblance = read_opt_f64(&mut r)?;
        r.finish().map_err(invalid)?;
        Ok(Record {
            n,
            mbox,
            index,
            time,
            message_id,
            level,
            campaign,
            campaign_size,
            score,
            exact,
            distance,
            resemblance,
            features,
            simhash: has_simhash.then_some(simhash),
            subject,
            nearest: nearest.checked_sub(1).map(usize_of),
            corroborating,
            list,
            near_campaign,
            near_distance,
            near_resemblance,
        })
    }
}

fn read_opt_u32(r: &mut Reader<'_>) -> io::Result<Option<u32>> {
    let v = r.u64().map_err(invalid)?;
    Ok(v.checked_sub(1).and_then(|x| u32::try_from(x).ok()))
}

fn read_opt_f64(r: &mut Reader<'_>) -> io::Result<Option<f64>> {
    let some = r.bool().map_err(invalid)?;
    let v = r.f64().map_err(invalid)?;
    Ok(some.then_some(v))
}

fn read_opt_str(r: &mut Reader<'_>) -> io::Result<Option<String>> {
    let some = r.bool().map_err(invalid)?;
    let s = r.string(MAX_TEXT).map_err(invalid)?;
    Ok(some.then_some(s))
}

fn level_code(l: Level) -> u8 {
    l.kind().index() as u8
}

/// The reason's position in its `ALL`; 0 for judged levels.
fn reason_code(l: Level) -> u8 {
    let i = match l {
        Level::Allowed(r) => AllowReason::ALL.iter().position(|x| *x == r),
        Level::Skipped(r) => SkipReason::ALL.iter().position(|x| *x == r),
        Level::Clean | Level::Suspect | Level::Bulk => None,
    };
    i.map_or(0, |i| i as u8)
}

/// The level of a record written by this process; a code out of range
/// (which only a corrupted spill file could hold) reads as clean.
fn level_of(kind: u8, reason: u8) -> Level {
    let reason = usize::from(reason);
    match LevelKind::ALL.get(usize::from(kind)) {
        Some(LevelKind::Suspect) => Level::Suspect,
        Some(LevelKind::Bulk) => Level::Bulk,
        Some(LevelKind::Allowed) => AllowReason::ALL
            .get(reason)
            .map_or(Level::Clean, |r| Level::Allowed(*r)),
        Some(LevelKind::Skipped) => SkipReason::ALL
            .get(reason)
            .map_or(Level::Clean, |r| Level::Skipped(*r)),
        Some(LevelKind::Clean) | None => Level::Clean,
    }
}
