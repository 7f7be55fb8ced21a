//! The log's entries (`crate::store::stream`): what one observation or
//! one operator's correction becomes in the site's Redis log, and back.
//! Little-endian fields in a fixed order ([`crate::store::codec`]),
//! versioned (`FORMAT`); the reader trusts nothing (every count bounded,
//! every read checked). Sealing is [`crate::store::seal`]'s.

use crate::config::Thresholds;
use crate::engine::campaign::CampaignId;
use crate::engine::minhash::band_keys;
use crate::engine::party::{clamp_key, Origin, Parties, KEY_BYTES, MAX_ANSWERS, MAX_MESSAGE_RCPTS};
use crate::engine::shingle::Sentences;
use crate::engine::Correction;
use crate::engine::{Observation, UnixSecs};
use crate::store::codec::{CodecError, Reader, Writer};
use crate::store::{BadStream, StoreError};

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
pub(crate) const CORRECTION: u8 = 0xC0;

/// Most MinHash bands an entry may carry.
pub(crate) const MAX_BANDS: usize = 64;

/// Most seeds whose three smallest values an entry may carry (two per band).
pub(crate) const MAX_SMALLEST: usize = 2 * MAX_BANDS;

/// Most sentence keys an entry may carry.
const MAX_SENTENCES: usize = crate::engine::shingle::MAX_SENTENCE_KEYS;

/// Longest sample subject and sender name in an entry, in characters (as
/// the memory store keeps them).
const MAX_SUBJECT: usize = 120;

const MAX_NAME: usize = 100;

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
    let n = r.count16(MAX_MESSAGE_RCPTS, "log entry recipients")?;
    let mut rcpts = Vec::with_capacity(n);
    for _ in 0..n {
        let b = r.array::<KEY_BYTES>()?;
        let k = b.iter().rev().fold(0u32, |k, x| (k << 8) | u32::from(*x));
        if !rcpts.contains(&k) {
            rcpts.push(k);
        }
    }
    let anonymous = r.u32()?;
    let n = r.count8(MAX_ANSWERS, "log entry answers")?;
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
    let n = r.count8(64, "log entry recipients")?;
    for _ in 0..n {
        let _ = r.u32()?;
    }
    let anonymous = r.u32()?;
    let m = r.count8(MAX_ANSWERS, "log entry answers")?;
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

/// The thresholds an entry was judged with (format 2 added the single
/// transaction's size).
fn get_thresholds(r: &mut Reader<'_>, format: u8) -> Result<Thresholds, CodecError> {
    Ok(Thresholds {
        bulk_threshold: r.f64()?,
        suspect_threshold: r.f64()?,
        strong_distance: r.u32()?,
        strong_sketch_diff: r.u32()?,
        weak_match_weight: r.f64()?,
        single_transaction_recipients: if format >= 2 { r.u32()? } else { 0 },
    })
}

/// The sentence keys of an entry (format 7 on): 32 bits each.
fn get_sentences(r: &mut Reader<'_>) -> Result<Sentences, CodecError> {
    let mut keys = |what| -> Result<Vec<u64>, CodecError> {
        let n = r.count8(MAX_SENTENCES, what)?;
        (0..n).map(|_| Ok(u64::from(r.u32()?) << 32)).collect()
    };
    Ok(Sentences {
        anchors: keys("log entry anchors")?,
        lookups: keys("log entry sentence keys")?,
    })
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
    let nbands = r.count8(MAX_BANDS, "log entry bands")?;
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
    let thresholds = get_thresholds(r, format)?;
    let sender_name = get_text(r, MAX_NAME)?;
    let subject = get_text(r, MAX_SUBJECT)?;
    let list_post = format >= 3 && r.bool()?;
    let (deeper, reply) = if format >= 4 {
        ([r.u64()?, r.u64()?], r.bool()?)
    } else {
        ([sketch; 2], true)
    };
    let smallest = if format >= 5 {
        let n = r.count8(MAX_SMALLEST, "log entry smallest values")?;
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
        get_sentences(r)?
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

/// A stream entry id: milliseconds of Redis's clock, then a sequence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub struct StreamId(pub u64, pub u64);

impl StreamId {
    pub(crate) fn parse(b: &[u8]) -> Result<StreamId, StoreError> {
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

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::config::Config;

    pub(crate) fn obs() -> Observation {
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
}
