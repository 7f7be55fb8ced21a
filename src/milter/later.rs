//! Pictures read later: a message whose picture of text the OCR workers
//! had no time for (a flood of picture mail from one client, or a burst)
//! is judged at once on the rest, says so in its verdict
//! (`pictures=unread`), and waits here to be read again with its
//! pictures' text when the OCR workers are free. That reading is judged as
//! a copy of the message (its envelope, its recipients), so its campaign
//! counts it from then on: a picture campaign whose copies arrived while
//! the workers were busy still reaches the count of its recipients. The
//! message itself is delivered already; the late verdict only counts, and
//! is logged (`"picture read later"`) with the queue id.
//!
//! What a sender can do with it, and the bounds that hold:
//! - A flood of picture mail fills the queue: the queue holds at most
//!   [`MAX_MESSAGES`] messages and [`MAX_BYTES`] bytes; when full, the
//!   newest message of the client holding the most is dropped (counted),
//!   so a flood pushes out its own copies, not other clients'.
//! - The queue is read round robin by client network (the key the worker
//!   slots use, which the client cannot choose), one message at a time and
//!   only while no message of now waits for an OCR worker
//!   ([`crate::worker::fair`]): a flood is read at one client's share. A
//!   message of now that comes while a reading done later holds the worker
//!   waits for it, at most [`MAX_READING`]; a message waits in the queue at
//!   most [`MAX_WAIT`] in all.
//! - A copy read later counts its recipients once more in the campaign its
//!   pictures' text joins; a campaign counts distinct recipients, so
//!   nobody is counted twice in one campaign.
//!
//! The queue lives in memory: a restart forgets it (the messages were
//! delivered; only their late counts are lost).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::sync::Notify;

use crate::engine::Envelope;
use crate::milter::origin::OwnReason;

/// Most messages waiting to be read later.
pub const MAX_MESSAGES: usize = 512;
/// Most bytes of messages waiting to be read later (all together).
pub const MAX_BYTES: usize = 64 << 20;
/// How long a message waits, from when it was queued, before it is given
/// up (counted `failed`): past it, its campaign has moved on.
pub const MAX_WAIT: Duration = Duration::from_secs(600);
/// Longest a reading done later may take an OCR worker: a message of now
/// that comes meanwhile waits at most this long behind it (Tesseract's own
/// stop is 1.5 s a message).
pub const MAX_READING: Duration = Duration::from_secs(3);

/// One message to read later.
#[derive(Debug)]
pub struct Pending {
    /// The fair key: its SMTP client's network (`milter::fair_key`).
    pub key: String,
    pub raw: Vec<u8>,
    pub env: Envelope,
    /// The authenticated identities the site's authenticators stated.
    pub authenticated: Vec<String>,
    pub own: Option<OwnReason>,
    /// When it was queued: a message waits at most [`MAX_WAIT`] in all.
    pub queued: std::time::Instant,
}

/// What became of the messages queued to be read later (`/metrics`).
#[derive(Debug, Default)]
pub struct Counts {
    /// Queued.
    pub queued: AtomicU64,
    /// Read and counted in their campaign.
    pub read: AtomicU64,
    /// Dropped from a full queue (the client holding the most first).
    pub dropped: AtomicU64,
    /// Not read again: the OCR workers failed on it or had no time in
    /// [`MAX_WAIT`].
    pub failed: AtomicU64,
}

#[derive(Debug, Default)]
struct Queue {
    by_key: HashMap<String, VecDeque<Pending>>,
    /// Keys with messages, in the order they are served.
    order: VecDeque<String>,
    messages: usize,
    bytes: usize,
}

/// The queue (module documentation). Cheap to share behind an `Arc`.
#[derive(Debug, Default)]
pub struct Later {
    queue: Mutex<Queue>,
    ready: Notify,
    pub counts: Counts,
}

fn lock(m: &Mutex<Queue>) -> MutexGuard<'_, Queue> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

impl Later {
    pub fn new() -> Later {
        Later::default()
    }

    /// Queues `p`; when the queue is full, the newest message of the
    /// client holding the most is dropped (`p` itself when its client is
    /// that one). False when `p` was dropped.
    pub fn push(&self, p: Pending) -> bool {
        let size = p.raw.len();
        let mut q = lock(&self.queue);
        while q.messages >= MAX_MESSAGES || q.bytes + size > MAX_BYTES {
            let Some(most) = q.largest() else { break };
            let own_most = q.by_key.get(&p.key).map_or(0, VecDeque::len);
            let most_len = q.by_key.get(&most).map_or(0, VecDeque::len);
            if own_most + 1 >= most_len || size > MAX_BYTES {
                self.counts.dropped.fetch_add(1, Ordering::Relaxed);
                return false;
            }
            q.drop_newest(&most);
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
        }
        if size > MAX_BYTES {
            self.counts.dropped.fetch_add(1, Ordering::Relaxed);
            return false;
        }
        q.messages += 1;
        q.bytes += size;
        let key = p.key.clone();
        let line = q.by_key.entry(key.clone()).or_default();
        line.push_back(p);
        if line.len() == 1 {
            q.order.push_back(key);
        }
        drop(q);
        self.counts.queued.fetch_add(1, Ordering::Relaxed);
        self.ready.notify_one();
        true
    }

    /// The next message, round robin by client; waits while none is
    /// queued.
    pub async fn next(&self) -> Pending {
        loop {
            let notified = self.ready.notified();
            if let Some(p) = self.try_next() {
                return p;
            }
            notified.await;
        }
    }

    /// The next message, round robin by client, if one is queued.
    pub fn try_next(&self) -> Option<Pending> {
        let mut q = lock(&self.queue);
        let key = q.order.pop_front()?;
        let line = q.by_key.get_mut(&key)?;
        let p = line.pop_front()?;
        if line.is_empty() {
            q.by_key.remove(&key);
        } else {
            q.order.push_back(key);
        }
        q.messages -= 1;
        q.bytes -= p.raw.len();
        Some(p)
    }

    /// Messages queued now.
    pub fn len(&self) -> usize {
        lock(&self.queue).messages
    }

    /// Whether none is queued.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl Queue {
    /// The client holding the most messages (the most bytes among equals).
    fn largest(&self) -> Option<String> {
        self.by_key
            .iter()
            .max_by_key(|(_, l)| (l.len(), l.iter().map(|p| p.raw.len()).sum::<usize>()))
            .map(|(k, _)| k.clone())
    }

    fn drop_newest(&mut self, key: &str) {
        let Some(line) = self.by_key.get_mut(key) else {
            return;
        };
        if let Some(p) = line.pop_back() {
            self.messages -= 1;
            self.bytes -= p.raw.len();
        }
        if line.is_empty() {
            self.by_key.remove(key);
            self.order.retain(|k| k != key);
        }
    }
}

/// Reads the queued messages of `state` until the task is dropped: each
/// by an OCR worker free of mail of now, judged as a copy of the message
/// (module documentation).
pub async fn run(state: Arc<super::State>) {
    let Some(later) = state.later.clone() else {
        return;
    };
    loop {
        let p = later.next().await;
        state.read_later(&later, p).await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pending(key: &str, n: usize) -> Pending {
        Pending {
            key: key.to_owned(),
            raw: vec![b'x'; n],
            env: Envelope::default(),
            authenticated: Vec::new(),
            own: None,
            queued: std::time::Instant::now(),
        }
    }

    /// Served round robin by client: a flood's hundred messages queued
    /// first do not hold back another client's one.
    #[test]
    fn clients_are_served_in_turn() {
        let l = Later::new();
        for _ in 0..100 {
            assert!(l.push(pending("flood", 10)));
        }
        assert!(l.push(pending("people", 10)));
        assert!(l.push(pending("people", 10)));
        let keys: Vec<String> = (0..4).map(|_| l.try_next().unwrap().key).collect();
        assert_eq!(keys, ["flood", "people", "flood", "people"]);
        assert_eq!(l.len(), 98);
    }

    /// A full queue drops the newest of the client holding the most: the
    /// flood's, never the other client's, and its own new one too.
    #[test]
    fn a_full_queue_drops_the_floods_messages() {
        let l = Later::new();
        for _ in 0..MAX_MESSAGES {
            assert!(l.push(pending("flood", 10)));
        }
        assert!(!l.push(pending("flood", 10)), "the flood's own is dropped");
        for _ in 0..20 {
            assert!(l.push(pending("people", 10)));
        }
        assert_eq!(l.len(), MAX_MESSAGES);
        assert_eq!(l.counts.dropped.load(Ordering::Relaxed), 21);
        let mut people = 0;
        while let Some(p) = l.try_next() {
            people += usize::from(p.key == "people");
        }
        assert_eq!(people, 20);
    }

    /// Bytes are bounded as messages are: a message larger than the whole
    /// queue is dropped, and big ones push out the largest client's.
    #[test]
    fn bytes_are_bounded() {
        let l = Later::new();
        assert!(!l.push(pending("a", MAX_BYTES + 1)));
        for _ in 0..4 {
            assert!(l.push(pending("flood", MAX_BYTES / 4)));
        }
        assert!(l.push(pending("people", 1000)));
        assert_eq!(l.len(), 4);
        let q = lock(&l.queue);
        assert!(q.bytes <= MAX_BYTES);
        assert_eq!(q.by_key.get("flood").map(VecDeque::len), Some(3));
    }
}
