//! The milter's listener, guarded against the attacks a local peer can
//! make without any privilege.
//!
//! - **An accept error never stops the server.** Running out of file
//!   descriptors (`EMFILE`, `ENFILE`), buffers or memory, or a connection
//!   reset before it was accepted, is logged (at most once a second),
//!   counted (`bulkwatch_accept_errors_total`) and waited out with a
//!   back-off from 10 ms up to 1 s; accepting then goes on. The milter
//!   library would otherwise treat the error as fatal and the daemon exit.
//! - **A full server still serves, and never cuts a live Postfix
//!   session.** At most `milter.max_connections` connections are kept.
//!   The guard follows each connection's milter commands (the frames'
//!   command bytes, not their contents) and knows its phase: *fresh* (no
//!   complete command yet), *between transactions*, or *in a transaction*
//!   (from MAIL to the end of the message or an abort). When a new
//!   connection arrives and that many are open, one is closed to make
//!   room, in this order:
//!   First a fresh connection (item 1 below): it names no SMTP client, and
//!   a local flood of empty connections must not cost a busy client its
//!   live sessions. Then, when one SMTP client holds more than its share
//!   ([`client_share`]: an eighth of `max_connections`, at least two), one
//!   of that client's connections, in the order below, else its oldest. The
//!   client is what the MTA's connect command names (its network: an IPv4
//!   /24, an IPv6 /64), which the SMTP client cannot choose; every Postfix
//!   session shares one milter peer, so this is what stops one client
//!   holding sessions (in DATA, say) from shutting out every other client's
//!   mail;
//!   Then:
//!   1. a fresh connection, the oldest first: a client that connects and
//!      says nothing (Postfix negotiates at once). One whose first bytes
//!      wait in it unread (its session has not been scheduled yet) is not
//!      fresh: the guard looks (a peek) before it closes one;
//!   2. a connection between transactions silent for [`QUIET`] or more,
//!      the longest silent first;
//!   3. a transaction still in its envelope (MAIL and RCPT, no header yet)
//!      [`ENVELOPE_STALL`] after its MAIL, the oldest first: a client that
//!      sends MAIL and then one RCPT every few seconds holds a connection
//!      without ever reaching its message, and is no longer safe from
//!      eviction by its trickle;
//!   4. a transaction waiting after its DATA for [`DATA_STALL`] or more
//!      with nothing more (Postfix sends the headers only once its SMTP
//!      client sent the final dot: until then the session holds a slot
//!      and no work), the longest first;
//!   5. a transaction older than [`SLOW_TRANSACTION`], the oldest first;
//!   6. a connection in a transaction silent for [`STALLED`] or more, the
//!      longest silent first;
//!
//!   and when none is, the new connection itself is closed: it is the
//!   one at the back of the line. Whichever goes, Postfix applies its
//!   `milter_default_action` to that session's message: a client that
//!   holds more than its share, or holds DATA open, costs its own mail its
//!   filtering (deferred, with `tempfail`), not other clients'.
//! - **One peer cannot take every slot.** A peer (the user of a Unix
//!   socket's client process, by `SO_PEERCRED`, or a TCP client's
//!   address) may hold at most `max_connections` less an eighth
//!   ([`peer_cap`]); a connection past that evicts one of that peer's own
//!   in the order above, or is closed. Another peer (Postfix, when a local
//!   user floods the socket) always finds room. Two peers of one identity
//!   (Postfix and a local user both on TCP from 127.0.0.1, or both as
//!   root) share the cap: a Unix socket of mode 0660 for group postfix
//!   keeps every other local user out (docs/admin/security.md). A flood of fresh, empty connections
//!   therefore only ever evicts itself, and a Postfix session waiting on
//!   a slow SMTP client keeps its connection. Evictions and refusals are
//!   counted (`bulkwatch_connections_evicted_total`,
//!   `bulkwatch_connections_refused_total`) and logged at most once a
//!   second. An evicted connection reads end-of-file; its session ends as
//!   if the client had closed it.
//! - Idle connections are closed by the milter library after
//!   `milter.idle_timeout_secs` without a complete protocol message (see
//!   [`crate::milter::run`]).
//!
//! A read touches only its own connection's state (atomics); the
//! registry's lock is taken when a connection is accepted or closed.

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use crate::milter::listener::{Listener, Peer, Socket, Waiting};
use crate::milter::State;

/// First wait after a failed accept; it doubles up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(10);
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// Accept errors, evictions and refusals are logged at most this often.
const LOG_EVERY: Duration = Duration::from_secs(1);
/// A connection between transactions silent this long may be evicted.
pub const QUIET: Duration = Duration::from_secs(10);
/// A connection in a transaction silent this long may be evicted (Postfix
/// sends the next command as soon as its SMTP client does; a client
/// slower than this is rare, and Postfix then applies its
/// `milter_default_action` to that message only).
pub const STALLED: Duration = Duration::from_secs(60);
/// A transaction that has not reached its header this long after its MAIL
/// may be evicted when the server is full (Postfix hands the milter MAIL
/// and RCPT as its client sends them; an envelope seldom takes a second).
pub const ENVELOPE_STALL: Duration = Duration::from_secs(2);
/// A transaction older than this may be evicted when the server is full
/// (a message trickled a header or a line at a time).
pub const SLOW_TRANSACTION: Duration = Duration::from_secs(30);
/// A transaction waiting this long after DATA with nothing more (Postfix
/// sends the headers only after its client's final dot) may be evicted
/// when the server is full: it holds a slot and no work, and a message's
/// data seldom takes this long.
pub const DATA_STALL: Duration = Duration::from_secs(10);
/// Most bytes of a connect command's data read (host name, family, port
/// and address: a few hundred bytes).
const MAX_CONNECT: usize = 1024;

/// Where a connection is in the milter protocol.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
#[repr(u8)]
pub enum Phase {
    /// No complete command read yet.
    Fresh = 0,
    /// Negotiated; no transaction open.
    Between = 1,
    /// Between MAIL and the end of the message (or an abort).
    InTransaction = 2,
}

impl Phase {
    fn of(v: u8) -> Phase {
        match v {
            0 => Phase::Fresh,
            1 => Phase::Between,
            _ => Phase::InTransaction,
        }
    }

    /// The phase after the command `cmd` (the milter command byte).
    fn after(self, cmd: u8) -> Phase {
        match cmd {
            b'M' | b'R' | b'T' | b'L' | b'N' | b'B' => Phase::InTransaction,
            b'E' | b'A' | b'Q' | b'K' => Phase::Between,
            _ if self == Phase::Fresh => Phase::Between,
            _ => self,
        }
    }
}

/// The phase of a connection claimed for eviction while fresh: its
/// reader, finding it there, drops what it read and ends the session.
const GONE: u8 = 3;
/// Victims chosen in turn before the newcomer is refused, when each was
/// no longer fresh by the time it was claimed.
const MAX_CLAIMS: usize = 8;

/// What the registry and the connection's reader share.
#[derive(Debug)]
struct Conn {
    sock: Socket,
    peer: Peer,
    /// The registry's time origin (the same for every connection).
    base: Instant,
    accepted: Instant,
    /// Nanoseconds after `base` of the last read that brought bytes.
    last_read: AtomicU64,
    phase: AtomicU8,
    /// Nanoseconds after `base` of the open transaction's MAIL; 0: none.
    tx_started: AtomicU64,
    /// The open transaction reached its header (or body).
    tx_in_message: AtomicBool,
    /// Nanoseconds after `base` of the open transaction's DATA while no
    /// header followed it yet; 0: none.
    tx_data: AtomicU64,
    /// A hash of the SMTP client's network as the MTA's connect command
    /// named it ([`client_key`]); 0 until that command is read.
    client: AtomicU64,
    evicted: AtomicBool,
    /// The task waiting to read from it, woken on eviction.
    reader: Mutex<Option<Waker>>,
}

/// Reads the command bytes out of the milter stream: each frame is a
/// 4-byte big-endian length (the command byte and its data), then the
/// command byte, then the data, which is skipped.
#[derive(Debug, Default)]
struct Frames {
    /// Bytes of the current frame's header read so far.
    header: [u8; 4],
    have: usize,
    /// Data bytes of the current frame still to skip.
    skip: u64,
    /// The next byte is a command byte.
    at_command: bool,
    /// The data of the connection's first connect command being read (at
    /// most [`MAX_CONNECT`] bytes), and, once whole, waiting to be taken.
    connect: Option<Vec<u8>>,
    connect_done: bool,
    /// A connect command was met: later ones are not read (the MTA sends
    /// one a connection).
    connect_seen: bool,
}

impl Frames {
    /// The data of a connect command read whole since the last call.
    fn take_connect(&mut self) -> Option<Vec<u8>> {
        if self.connect_done {
            self.connect_done = false;
            self.connect.take()
        } else {
            None
        }
    }

    /// Feeds `bytes`; calls `f` with each command byte met.
    fn feed(&mut self, mut bytes: &[u8], mut f: impl FnMut(u8)) {
        while !bytes.is_empty() {
            if !self.at_command && self.skip > 0 {
                let n = usize::try_from(self.skip).map_or(bytes.len(), |s| s.min(bytes.len()));
                if let Some(c) = self.connect.as_mut().filter(|_| !self.connect_done) {
                    let room = MAX_CONNECT.saturating_sub(c.len()).min(n);
                    c.extend_from_slice(bytes.get(..room).unwrap_or_default());
                }
                self.skip -= n as u64;
                bytes = bytes.get(n..).unwrap_or_default();
                if self.skip == 0 && self.connect.is_some() {
                    self.connect_done = true;
                }
                continue;
            }
            let Some((&b, rest)) = bytes.split_first() else {
                break;
            };
            bytes = rest;
            if self.at_command {
                self.at_command = false;
                if b == b'C' && !self.connect_seen {
                    self.connect_seen = true;
                    self.connect = Some(Vec::new());
                    self.connect_done = self.skip == 0;
                }
                f(b);
                continue;
            }
            if let Some(slot) = self.header.get_mut(self.have) {
                *slot = b;
            }
            self.have += 1;
            if self.have == 4 {
                self.have = 0;
                let len = u32::from_be_bytes(self.header);
                if len > 0 {
                    self.at_command = true;
                    self.skip = u64::from(len - 1);
                }
            }
        }
    }
}

/// The open connections of one listener.
#[derive(Debug)]
struct Registry {
    base: Instant,
    conns: Vec<Arc<Conn>>,
}

impl Registry {
    fn nanos(&self, t: Instant) -> u64 {
        u64::try_from(t.saturating_duration_since(self.base).as_nanos()).unwrap_or(u64::MAX)
    }

    fn silence(&self, c: &Conn, now: Instant) -> Duration {
        Duration::from_nanos(
            self.nanos(now)
                .saturating_sub(c.last_read.load(Ordering::Relaxed)),
        )
    }

    /// The connection to close to make room at `now` (module
    /// documentation), among those of `peer` when given, or `None`: close
    /// the newcomer. `cap` is `max_connections`: an SMTP client holding
    /// more than its share of it ([`client_share`]) loses its own first.
    fn victim(
        &self,
        now: Instant,
        peer: Option<Peer>,
        cap: usize,
    ) -> Option<(Arc<Conn>, Phase, Duration)> {
        let live: Vec<&Arc<Conn>> = self
            .conns
            .iter()
            .filter(|c| !c.evicted.load(Ordering::Relaxed))
            .filter(|c| peer.is_none_or(|p| c.peer == p))
            .collect();
        // A fresh connection never named a client: it goes first, before
        // any client's sessions (a local flood of empty connections must
        // not cost one busy SMTP client its live sessions).
        if let Some(v) = self.fresh_victim(&live, now) {
            return Some(v);
        }
        let mut held: Vec<(u64, usize)> = Vec::new();
        for c in &live {
            let k = c.client.load(Ordering::Relaxed);
            if k == 0 {
                continue;
            }
            match held.iter_mut().find(|(x, _)| *x == k) {
                Some((_, n)) => *n += 1,
                None => held.push((k, 1)),
            }
        }
        if let Some((k, _)) = held
            .iter()
            .filter(|(_, n)| *n > client_share(cap))
            .max_by_key(|(_, n)| *n)
        {
            let own: Vec<&Arc<Conn>> = live
                .iter()
                .copied()
                .filter(|c| c.client.load(Ordering::Relaxed) == *k)
                .collect();
            // Its own in the usual order, else its oldest whatever it does.
            return self.victim_among(&own, now).or_else(|| {
                let c = own.iter().min_by_key(|c| c.accepted)?;
                let phase = Phase::of(c.phase.load(Ordering::Relaxed));
                Some((
                    Arc::clone(c),
                    phase,
                    now.saturating_duration_since(c.accepted),
                ))
            });
        }
        self.victim_among(&live, now)
    }

    /// [`Registry::victim`], claimed: a fresh victim is taken only while
    /// it is still fresh ([`GONE`], a compare-and-set its reader sees).
    /// Without it, a session whose first command was read between the
    /// choice and the close was cut after its negotiation (found by CI:
    /// one slow session of ten, under 143,000 churned connections).
    fn claimed_victim(
        &self,
        now: Instant,
        peer: Option<Peer>,
        cap: usize,
    ) -> Option<(Arc<Conn>, Phase, Duration)> {
        for _ in 0..MAX_CLAIMS {
            let (c, phase, age) = self.victim(now, peer, cap)?;
            if phase != Phase::Fresh
                || c.phase
                    .compare_exchange(
                        Phase::Fresh as u8,
                        GONE,
                        Ordering::AcqRel,
                        Ordering::Acquire,
                    )
                    .is_ok()
            {
                return Some((c, phase, age));
            }
        }
        None
    }

    /// [`Registry::victim`]'s order among `live`: fresh, quiet, an
    /// envelope or a wait after DATA held too long, a slow transaction, a
    /// stalled one.
    fn victim_among(
        &self,
        live: &[&Arc<Conn>],
        now: Instant,
    ) -> Option<(Arc<Conn>, Phase, Duration)> {
        if let Some(v) = self.fresh_victim(live, now) {
            return Some(v);
        }
        self.busy_victim(live, now)
    }

    /// The fresh connection to close among `live`: a closed one first,
    /// then the oldest with nothing waiting in it.
    fn fresh_victim(
        &self,
        live: &[&Arc<Conn>],
        now: Instant,
    ) -> Option<(Arc<Conn>, Phase, Duration)> {
        let phase = |c: &Conn| Phase::of(c.phase.load(Ordering::Relaxed));
        let mut fresh: Vec<&Arc<Conn>> = live
            .iter()
            .copied()
            .filter(|c| phase(c) == Phase::Fresh)
            .collect();
        fresh.sort_by_key(|c| c.accepted);
        // A closed one first, then the oldest with nothing waiting in it.
        let fresh = fresh
            .iter()
            .map(|c| (c, c.sock.waiting()))
            .filter(|(_, w)| *w != Waiting::Bytes)
            .min_by_key(|(c, w)| (*w != Waiting::Closed, c.accepted));
        fresh.map(|(c, _)| {
            let age = now.saturating_duration_since(c.accepted);
            (Arc::clone(c), Phase::Fresh, age)
        })
    }

    /// [`Registry::victim_among`] past the fresh: quiet, an envelope or a
    /// wait after DATA held too long, a slow transaction, a stalled one.
    fn busy_victim(
        &self,
        live: &[&Arc<Conn>],
        now: Instant,
    ) -> Option<(Arc<Conn>, Phase, Duration)> {
        let phase = |c: &Conn| Phase::of(c.phase.load(Ordering::Relaxed));
        let quiet = live
            .iter()
            .filter(|c| phase(c) == Phase::Between)
            .map(|c| (c, self.silence(c, now)))
            .filter(|(_, silent)| *silent >= QUIET)
            .max_by_key(|(_, silent)| *silent);
        if let Some((c, silent)) = quiet {
            return Some((Arc::clone(c), Phase::Between, silent));
        }
        let since = |at: u64| Duration::from_nanos(self.nanos(now).saturating_sub(at));
        // Transactions by age: first those still in their envelope, then
        // those waiting after DATA, then any that is old.
        let age = |c: &Conn| -> Option<Duration> {
            let started = c.tx_started.load(Ordering::Relaxed);
            (phase(c) == Phase::InTransaction && started > 0).then(|| since(started))
        };
        let waiting = |c: &Conn| -> Option<Duration> {
            let at = c.tx_data.load(Ordering::Relaxed);
            (phase(c) == Phase::InTransaction && at > 0).then(|| since(at))
        };
        let envelope = live
            .iter()
            .filter(|c| !c.tx_in_message.load(Ordering::Relaxed))
            .filter(|c| c.tx_data.load(Ordering::Relaxed) == 0)
            .filter_map(|c| Some((c, age(c)?)))
            .filter(|(_, a)| *a >= ENVELOPE_STALL)
            .max_by_key(|(_, a)| *a);
        let data = live
            .iter()
            .filter_map(|c| Some((c, waiting(c)?)))
            .filter(|(_, a)| *a >= DATA_STALL)
            .max_by_key(|(_, a)| *a);
        let slow = live
            .iter()
            .filter_map(|c| Some((c, age(c)?)))
            .filter(|(_, a)| *a >= SLOW_TRANSACTION)
            .max_by_key(|(_, a)| *a);
        if let Some((c, a)) = envelope.or(data).or(slow) {
            return Some((Arc::clone(c), Phase::InTransaction, a));
        }
        let stalled = live
            .iter()
            .filter(|c| phase(c) == Phase::InTransaction)
            .map(|c| (c, self.silence(c, now)))
            .filter(|(_, silent)| *silent >= STALLED)
            .max_by_key(|(_, silent)| *silent);
        stalled.map(|(c, silent)| (Arc::clone(c), Phase::InTransaction, silent))
    }

    fn live(&self) -> usize {
        self.conns
            .iter()
            .filter(|c| !c.evicted.load(Ordering::Relaxed))
            .count()
    }

    /// Live connections of `peer`.
    fn live_of(&self, peer: Peer) -> usize {
        self.conns
            .iter()
            .filter(|c| c.peer == peer && !c.evicted.load(Ordering::Relaxed))
            .count()
    }
}

/// The most live connections one SMTP client (its network, as the MTA's
/// connect names it: [`client_key`]) holds before, on a full server, its
/// own connections are closed first: an eighth of `cap`, at least two.
/// Every Postfix session shares one milter peer; this is what keeps one
/// SMTP client, holding sessions in DATA for instance, from shutting out
/// every other.
pub fn client_share(cap: usize) -> usize {
    (cap / 8).max(2)
}

/// The key of the SMTP client a connect command's `data` names (host
/// name, NUL, family, port, address, NUL): its network (an IPv4 /24, an
/// IPv6 /64), or local submission; a hash, never 0. `None` for data that
/// names no client this way.
pub fn client_key(data: &[u8]) -> Option<u64> {
    let at = data.iter().position(|b| *b == 0)?;
    let rest = data.get(at + 1..)?;
    let (&family, rest) = rest.split_first()?;
    let network = match family {
        b'4' | b'6' => {
            let addr = rest.get(2..)?;
            let end = addr.iter().position(|b| *b == 0).unwrap_or(addr.len());
            let text = std::str::from_utf8(addr.get(..end)?).ok()?;
            let ip: std::net::IpAddr = text.trim_start_matches("IPv6:").parse().ok()?;
            crate::milter::client_network(ip)
        }
        _ => "local".to_owned(),
    };
    Some(xxhash_rust::xxh3::xxh3_64(network.as_bytes()).max(1))
}

/// The most live connections one peer may hold under a cap of `cap`:
/// an eighth (at least one) is left to others. With a cap of 1, that one.
pub fn peer_cap(cap: usize) -> usize {
    if cap <= 1 {
        1
    } else {
        cap - (cap / 8).max(1)
    }
}

fn lock<T>(r: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while the lock was held leaves the value consistent (every
    // change is one assignment): go on with it.
    r.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

fn evict(c: &Conn) {
    c.evicted.store(true, Ordering::Relaxed);
    if let Some(w) = lock(&c.reader).take() {
        w.wake();
    }
}

/// A listener that never fails and keeps at most `cap` live connections
/// (see the module documentation).
pub struct Guarded {
    inner: Listener,
    cap: usize,
    registry: Arc<Mutex<Registry>>,
    state: Arc<State>,
    backoff: Option<Pin<Box<Sleep>>>,
    delay: Duration,
    last_log: Option<Instant>,
    suppressed: u64,
    last_full_log: Option<Instant>,
    full_suppressed: u64,
}

impl Guarded {
    /// Wraps `inner`, keeping at most `cap` live connections (at least 1);
    /// counts into `state`'s metrics.
    pub fn new(inner: Listener, cap: usize, state: Arc<State>) -> Guarded {
        Guarded {
            inner,
            cap: cap.max(1),
            registry: Arc::new(Mutex::new(Registry {
                base: Instant::now(),
                conns: Vec::new(),
            })),
            state,
            backoff: None,
            delay: MIN_BACKOFF,
            last_log: None,
            suppressed: 0,
            last_full_log: None,
            full_suppressed: 0,
        }
    }

    /// Connections open now, evicted ones still closing included.
    pub fn open(&self) -> usize {
        lock(&self.registry).conns.len()
    }

    fn accept_failed(&mut self, e: &io::Error) {
        self.state.metrics.record_accept_error();
        let now = Instant::now();
        if self
            .last_log
            .is_none_or(|t| now.saturating_duration_since(t) >= LOG_EVERY)
        {
            tracing::warn!(
                error = %e,
                retry_in_ms = self.delay.as_millis() as u64,
                suppressed = self.suppressed,
                "milter accept failed; waiting, then accepting again"
            );
            self.last_log = Some(now);
            self.suppressed = 0;
        } else {
            self.suppressed += 1;
        }
        self.backoff = Some(Box::pin(tokio::time::sleep(self.delay)));
        self.delay = (self.delay * 2).min(MAX_BACKOFF);
    }

    /// Logs a full server's choice, at most once a second.
    fn log_full(&mut self, now: Instant, what: impl FnOnce(u64)) {
        if self
            .last_full_log
            .is_none_or(|t| now.saturating_duration_since(t) >= LOG_EVERY)
        {
            what(self.full_suppressed);
            self.last_full_log = Some(now);
            self.full_suppressed = 0;
        } else {
            self.full_suppressed += 1;
        }
    }

    fn accepted(&mut self, sock: Socket) -> Tracked {
        self.delay = MIN_BACKOFF;
        let now = Instant::now();
        let peer = sock.peer();
        let mut r = lock(&self.registry);
        let mut refused = false;
        // A peer at its own cap makes room among its own connections.
        let own = (peer != Peer::Unknown && r.live_of(peer) >= peer_cap(self.cap)).then_some(peer);
        if own.is_some() || r.live() >= self.cap {
            match r.claimed_victim(now, own, self.cap) {
                Some((victim, phase, silence)) => {
                    evict(&victim);
                    drop(r);
                    self.state.metrics.record_eviction();
                    let cap = self.cap;
                    self.log_full(now, |suppressed| {
                        tracing::warn!(
                            cap,
                            phase = ?phase,
                            silent_ms = silence.as_millis() as u64,
                            suppressed,
                            "milter connections at max_connections: closed a {} one",
                            match phase {
                                Phase::Fresh => "fresh (never sent a command)",
                                Phase::Between => "quiet",
                                Phase::InTransaction => "stalled or slow transaction",
                            }
                        );
                    });
                    r = lock(&self.registry);
                }
                None => refused = true,
            }
        }
        let conn = Arc::new(Conn {
            sock,
            peer,
            base: r.base,
            accepted: now,
            last_read: AtomicU64::new(r.nanos(now)),
            phase: AtomicU8::new(Phase::Fresh as u8),
            tx_started: AtomicU64::new(0),
            tx_in_message: AtomicBool::new(false),
            tx_data: AtomicU64::new(0),
            client: AtomicU64::new(0),
            evicted: AtomicBool::new(refused),
            reader: Mutex::new(None),
        });
        r.conns.push(Arc::clone(&conn));
        drop(r);
        if refused {
            self.state.metrics.record_refusal();
            let cap = self.cap;
            self.log_full(now, |suppressed| {
                tracing::warn!(
                    cap,
                    suppressed,
                    "milter connections at max_connections, all of them active: refused the new one"
                );
            });
        }
        Tracked {
            conn,
            registry: Arc::downgrade(&self.registry),
            frames: Frames::default(),
        }
    }
}

impl indymilter::Listener for Guarded {
    type Io = Tracked;

    fn poll_accept(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Tracked>> {
        loop {
            if let Some(sleep) = self.backoff.as_mut() {
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.backoff = None;
            }
            match self.inner.poll_accept(cx) {
                Poll::Pending => return Poll::Pending,
                Poll::Ready(Ok(io)) => return Poll::Ready(Ok(self.accepted(io))),
                Poll::Ready(Err(e)) => self.accept_failed(&e),
            }
        }
    }
}

/// An accepted connection: reads update its phase and idle time; once
/// evicted it reads end-of-file.
pub struct Tracked {
    conn: Arc<Conn>,
    registry: Weak<Mutex<Registry>>,
    frames: Frames,
}

impl Drop for Tracked {
    fn drop(&mut self) {
        if let Some(r) = self.registry.upgrade() {
            lock(&r).conns.retain(|c| !Arc::ptr_eq(c, &self.conn));
        }
    }
}

impl Tracked {
    /// Notes what was read: the commands it held, and the time.
    fn note(&mut self, read: &[u8]) {
        let conn = &self.conn;
        let mut phase = Phase::of(conn.phase.load(Ordering::Relaxed));
        let since = Instant::now().saturating_duration_since(conn.base);
        let nanos = u64::try_from(since.as_nanos()).unwrap_or(u64::MAX).max(1);
        self.frames.feed(read, |cmd| {
            let before = phase;
            phase = phase.after(cmd);
            match cmd {
                // MAIL opens a transaction (and one opened by RCPT or a
                // header without MAIL starts then too).
                b'M' => {
                    conn.tx_started.store(nanos, Ordering::Relaxed);
                    conn.tx_in_message.store(false, Ordering::Relaxed);
                    conn.tx_data.store(0, Ordering::Relaxed);
                }
                // DATA: nothing more comes until the client's final dot.
                b'T' => conn.tx_data.store(nanos, Ordering::Relaxed),
                b'L' | b'N' | b'B' => {
                    conn.tx_in_message.store(true, Ordering::Relaxed);
                    conn.tx_data.store(0, Ordering::Relaxed);
                }
                _ => {}
            }
            if phase != Phase::InTransaction {
                conn.tx_started.store(0, Ordering::Relaxed);
                conn.tx_data.store(0, Ordering::Relaxed);
            } else if before != Phase::InTransaction && conn.tx_started.load(Ordering::Relaxed) == 0
            {
                conn.tx_started.store(nanos, Ordering::Relaxed);
            }
        });
        if let Some(key) = self.frames.take_connect().and_then(|d| client_key(&d)) {
            conn.client.store(key, Ordering::Relaxed);
        }
        if conn.phase.swap(phase as u8, Ordering::AcqRel) == GONE {
            conn.phase.store(GONE, Ordering::Release);
        }
        conn.last_read.store(nanos, Ordering::Relaxed);
    }
}

impl AsyncRead for Tracked {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if self.conn.evicted.load(Ordering::Relaxed) {
            // End of file: the session ends as if the peer had closed.
            return Poll::Ready(Ok(()));
        }
        let start = buf.filled().len();
        match self.conn.sock.poll_read_shared(cx, buf) {
            Poll::Ready(Ok(_)) => {
                let this = &mut *self;
                this.note(buf.filled().get(start..).unwrap_or_default());
                if this.conn.phase.load(Ordering::Acquire) == GONE {
                    // Claimed while fresh: what was read is not handed on.
                    buf.set_filled(start);
                }
                Poll::Ready(Ok(()))
            }
            Poll::Ready(Err(e)) => Poll::Ready(Err(e)),
            Poll::Pending => {
                *lock(&self.conn.reader) = Some(cx.waker().clone());
                // Evicted meanwhile: wake at once.
                if self.conn.evicted.load(Ordering::Relaxed) {
                    cx.waker().wake_by_ref();
                }
                Poll::Pending
            }
        }
    }
}

impl AsyncWrite for Tracked {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.conn.sock.poll_write_shared(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.conn.sock.shutdown_write())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A milter frame: length, command, data.
    fn frame(cmd: u8, data: &[u8]) -> Vec<u8> {
        let mut f = ((data.len() + 1) as u32).to_be_bytes().to_vec();
        f.push(cmd);
        f.extend_from_slice(data);
        f
    }

    /// The connect command's data names the SMTP client by network; it
    /// is read whole however the frames are split, and at most
    /// MAX_CONNECT bytes of it.
    #[test]
    fn the_connect_command_names_the_client_network() {
        let v4 = |a: &str| {
            let mut d = b"mx.example\0".to_vec();
            d.push(b'4');
            d.extend_from_slice(&25u16.to_be_bytes());
            d.extend_from_slice(a.as_bytes());
            d.push(0);
            d
        };
        let a = client_key(&v4("192.0.2.7")).unwrap();
        assert_eq!(client_key(&v4("192.0.2.200")), Some(a), "one /24");
        assert_ne!(client_key(&v4("192.0.3.7")), Some(a));
        let mut six = b"h\x006".to_vec();
        six.extend_from_slice(&[0, 25]);
        six.extend_from_slice(b"IPv6:2001:db8:1:2::5\0");
        let mut six2 = b"h\x006".to_vec();
        six2.extend_from_slice(&[0, 25]);
        six2.extend_from_slice(b"2001:db8:1:2:ff::9\0");
        assert_eq!(client_key(&six), client_key(&six2), "one /64");
        assert_eq!(client_key(b"localhost\0U"), client_key(b"x\0L"));
        assert_eq!(client_key(b"no family"), None);
        assert_eq!(client_key(&v4("not an address")), None);
        let read = |stream: &[u8], chunk: usize| {
            let mut f = Frames::default();
            let mut got = Vec::new();
            for c in stream.chunks(chunk) {
                f.feed(c, |_| {});
                if let Some(d) = f.take_connect() {
                    got.push(d);
                }
            }
            got
        };
        let mut stream = frame(b'C', &v4("198.51.100.4"));
        stream.extend(frame(b'H', b"helo\0"));
        stream.extend(frame(b'C', &v4("203.0.113.1")));
        let mut big = frame(b'C', &vec![b'x'; 5000]);
        big.extend(frame(b'H', b"helo\0"));
        for chunk in [1, 3, 7, 4096] {
            let got = read(&stream, chunk);
            assert_eq!(got.len(), 1, "the first connect only; chunks of {chunk}");
            assert_eq!(client_key(&got[0]), client_key(&v4("198.51.100.9")));
            let got = read(&big, chunk);
            assert_eq!(got.len(), 1);
            assert_eq!(got[0].len(), MAX_CONNECT);
        }
    }

    /// One SMTP client holding sessions in DATA (the audit's attack: 28 of
    /// 32, renewed before any other rule may close them) loses its own to
    /// a full server, however young they are; when no client holds more
    /// than its share, a session waiting after DATA for 10 s goes before a
    /// slower transaction, and one younger than that stays.
    #[tokio::test]
    async fn a_client_holding_sessions_in_data_loses_its_own() {
        let t0 = Instant::now();
        let mut r = Registry {
            base: t0,
            conns: Vec::new(),
        };
        let now = t0 + Duration::from_secs(1000);
        let just = now - Duration::from_millis(100);
        let in_data = |r: &Registry, data_for: u64, client: u64| {
            let c = transaction(
                r,
                now - Duration::from_secs(data_for + 1),
                just,
                false,
                Peer::Uid(107),
            );
            c.tx_data.store(
                r.nanos(now - Duration::from_secs(data_for)),
                Ordering::Relaxed,
            );
            c.client.store(client, Ordering::Relaxed);
            c
        };
        // 28 of the attacker's, each in DATA for a few seconds, and 4
        // ordinary sessions of 4 other clients in their messages.
        for i in 0..28 {
            let c = in_data(&r, 1 + i % 5, 99);
            r.conns.push(c);
        }
        for k in 1..=4 {
            let c = transaction(&r, now - Duration::from_secs(1), just, true, Peer::Uid(107));
            c.client.store(k, Ordering::Relaxed);
            r.conns.push(c);
        }
        for _ in 0..24 {
            let (c, _, _) = r.victim(now, None, 32).unwrap();
            assert_eq!(c.client.load(Ordering::Relaxed), 99);
            evict(&c);
        }
        // The attacker is down to its share (4): no one else is touched.
        assert!(r.victim(now, None, 32).is_none());
        // Without any client over its share: DATA held 10 s goes first.
        let mut r = Registry {
            base: t0,
            conns: Vec::new(),
        };
        let slow = transaction(
            &r,
            now - Duration::from_secs(35),
            just,
            true,
            Peer::Uid(107),
        );
        let young = in_data(&r, 9, 1);
        let held = in_data(&r, 12, 2);
        for c in [&slow, &young, &held] {
            r.conns.push(Arc::clone(c));
        }
        let (c, _, _) = r.victim(now, None, 32).unwrap();
        assert!(Arc::ptr_eq(&c, &held));
        evict(&c);
        let (c, _, _) = r.victim(now, None, 32).unwrap();
        assert!(Arc::ptr_eq(&c, &slow));
        evict(&c);
        assert!(r.victim(now, None, 32).is_none(), "9 s in DATA stays");
    }

    #[test]
    fn the_phase_follows_the_commands_split_anywhere() {
        let mut stream = Vec::new();
        for (cmd, data) in [
            (b'O', &b"\0\0\0\x06\0\0\0\x3f\0\0\0\x7f"[..]),
            (b'C', b"client\0"),
            (b'H', b"helo\0"),
            (b'D', b"Mi\0Q1\0"),
            (b'M', b"<a@b>\0"),
            (b'R', b"<c@d>\0"),
            (b'B', &[b'E'; 70_000]),
        ] {
            stream.extend(frame(cmd, data));
        }
        let phases_after = |chunk: usize| {
            let mut f = Frames::default();
            let mut phase = Phase::Fresh;
            let mut seen = Vec::new();
            for c in stream.chunks(chunk) {
                f.feed(c, |cmd| {
                    phase = phase.after(cmd);
                    seen.push((cmd, phase));
                });
            }
            seen
        };
        let want = vec![
            (b'O', Phase::Between),
            (b'C', Phase::Between),
            (b'H', Phase::Between),
            (b'D', Phase::Between),
            (b'M', Phase::InTransaction),
            (b'R', Phase::InTransaction),
            (b'B', Phase::InTransaction),
        ];
        for chunk in [1, 2, 3, 5, 7, 4096, 1 << 20] {
            assert_eq!(phases_after(chunk), want, "chunks of {chunk}");
        }
        assert_eq!(Phase::InTransaction.after(b'E'), Phase::Between);
        assert_eq!(Phase::InTransaction.after(b'A'), Phase::Between);
        assert_eq!(Phase::Fresh.after(b'D'), Phase::Between);
    }

    /// A fresh victim is claimed only while it is fresh: one whose first
    /// command its reader noted first is passed over, and a reader that
    /// finds its connection claimed does not hand on what it read.
    #[tokio::test]
    async fn a_fresh_victim_is_claimed_only_while_fresh() {
        let t0 = Instant::now();
        let mut r = Registry {
            base: t0,
            conns: Vec::new(),
        };
        let now = t0 + Duration::from_secs(10);
        let session = conn(&r, t0, t0, Phase::Fresh);
        let churn = conn(&r, t0 + Duration::from_secs(1), t0, Phase::Fresh);
        r.conns.push(Arc::clone(&session));
        r.conns.push(Arc::clone(&churn));
        let reader = |c: &Arc<Conn>| Tracked {
            conn: Arc::clone(c),
            registry: Weak::new(),
            frames: Frames::default(),
        };
        // The session's negotiation (an `O` command) is noted before the
        // claim: the churn's connection goes instead.
        let optneg = [0u8, 0, 0, 13, b'O', 0, 0, 0, 6, 0, 0, 0, 0xff, 0, 0, 0, 0];
        reader(&session).note(&optneg);
        let (c, phase, _) = r.claimed_victim(now, None, 2).unwrap();
        assert!(Arc::ptr_eq(&c, &churn));
        assert_eq!(phase, Phase::Fresh);
        assert_eq!(churn.phase.load(Ordering::Relaxed), GONE);
        evict(&c);
        // A claimed connection stays claimed whatever its reader reads.
        reader(&churn).note(&optneg);
        assert_eq!(churn.phase.load(Ordering::Relaxed), GONE);
    }

    fn conn(r: &Registry, accepted: Instant, last: Instant, phase: Phase) -> Arc<Conn> {
        // (The peer end is dropped: nothing is ever written to it.)
        let (sock, peer) = std::os::unix::net::UnixStream::pair().unwrap();
        std::mem::forget(peer);
        sock.set_nonblocking(true).unwrap();
        let sock = Socket::Unix(tokio::net::UnixStream::from_std(sock).unwrap());
        Arc::new(Conn {
            sock,
            peer: Peer::Uid(0),
            base: r.base,
            accepted,
            last_read: AtomicU64::new(r.nanos(last)),
            phase: AtomicU8::new(phase as u8),
            tx_started: AtomicU64::new(0),
            tx_in_message: AtomicBool::new(false),
            tx_data: AtomicU64::new(0),
            client: AtomicU64::new(0),
            evicted: AtomicBool::new(false),
            reader: Mutex::new(None),
        })
    }

    /// A transaction that MAIL opened at `mail`, in its message when
    /// `in_message`, for `peer`.
    fn transaction(
        r: &Registry,
        mail: Instant,
        last: Instant,
        in_message: bool,
        peer: Peer,
    ) -> Arc<Conn> {
        let c = conn(r, mail, last, Phase::InTransaction);
        c.tx_started.store(r.nanos(mail).max(1), Ordering::Relaxed);
        c.tx_in_message.store(in_message, Ordering::Relaxed);
        let mut c = Arc::try_unwrap(c).unwrap();
        c.peer = peer;
        Arc::new(c)
    }

    /// Transactions that trickle (never silent, so never "stalled"): one
    /// still in its envelope 2 s after MAIL goes first, the oldest first;
    /// then one older than 30 s; a young one and one in its message under
    /// 30 s never. A peer at its own cap loses its own connection, not
    /// another peer's.
    #[tokio::test]
    async fn held_transactions_go_by_age_and_a_peer_pays_for_its_own() {
        let t0 = Instant::now();
        let s = |n: u64| t0 + Duration::from_secs(n);
        let mut r = Registry {
            base: t0,
            conns: Vec::new(),
        };
        let now = s(1000);
        let just = now - Duration::from_millis(100);
        let young = transaction(&r, now - Duration::from_secs(1), just, false, Peer::Uid(7));
        let body = transaction(&r, now - Duration::from_secs(20), just, true, Peer::Uid(7));
        let held_old = transaction(&r, now - Duration::from_secs(40), just, false, Peer::Uid(7));
        let held = transaction(&r, now - Duration::from_secs(5), just, false, Peer::Uid(7));
        let slow = transaction(&r, now - Duration::from_secs(31), just, true, Peer::Uid(7));
        let postfix = transaction(
            &r,
            now - Duration::from_secs(9),
            just,
            false,
            Peer::Uid(107),
        );
        for c in [&young, &body, &held_old, &held, &slow, &postfix] {
            r.conns.push(Arc::clone(c));
        }
        // The attacker's own, for a newcomer of the attacker's.
        let (c, _, _) = r.victim(now, Some(Peer::Uid(7)), 1000).unwrap();
        assert!(Arc::ptr_eq(&c, &held_old));
        evict(&c);
        assert_eq!(r.live_of(Peer::Uid(7)), 4);
        // Any, for a newcomer when the server is full: the envelope held
        // longest (Postfix's, 9 s, before the attacker's 5 s).
        let order: Vec<Arc<Conn>> = (0..3)
            .filter_map(|_| {
                let (c, _, _) = r.victim(now, None, 1000)?;
                evict(&c);
                Some(c)
            })
            .collect();
        assert_eq!(order.len(), 3);
        assert!(Arc::ptr_eq(&order[0], &postfix));
        assert!(Arc::ptr_eq(&order[1], &held));
        assert!(Arc::ptr_eq(&order[2], &slow));
        assert!(
            r.victim(now, None, 1000).is_none(),
            "young and in-message stay"
        );
        assert_eq!(peer_cap(32), 28);
        assert_eq!(peer_cap(256), 224);
        assert_eq!((peer_cap(1), peer_cap(2)), (1, 1));
    }

    #[tokio::test]
    async fn fresh_goes_first_then_quiet_then_stalled_and_live_sessions_never() {
        let t0 = Instant::now();
        let s = |n: u64| t0 + Duration::from_secs(n);
        let mut r = Registry {
            base: t0,
            conns: Vec::new(),
        };
        let now = s(1000);
        // Busy sessions, silent for 0.3 s and 59 s: never evicted.
        r.conns.push(conn(
            &r,
            s(0),
            now - Duration::from_millis(300),
            Phase::InTransaction,
        ));
        r.conns.push(conn(
            &r,
            s(0),
            now - Duration::from_secs(59),
            Phase::InTransaction,
        ));
        // Between transactions, silent 5 s: not yet.
        r.conns
            .push(conn(&r, s(0), now - Duration::from_secs(5), Phase::Between));
        assert!(
            r.victim(now, None, 1000).is_none(),
            "nothing to evict: refuse the newcomer"
        );
        let stalled = conn(
            &r,
            s(0),
            now - Duration::from_secs(61),
            Phase::InTransaction,
        );
        r.conns.push(Arc::clone(&stalled));
        let quiet = conn(&r, s(0), now - Duration::from_secs(11), Phase::Between);
        r.conns.push(Arc::clone(&quiet));
        let old_fresh = conn(&r, s(500), s(500), Phase::Fresh);
        let young_fresh = conn(&r, s(999), s(999), Phase::Fresh);
        r.conns.push(Arc::clone(&young_fresh));
        r.conns.push(Arc::clone(&old_fresh));
        let order: Vec<Arc<Conn>> = (0..4)
            .filter_map(|_| {
                let (c, _, _) = r.victim(now, None, 1000)?;
                evict(&c);
                Some(c)
            })
            .collect();
        assert_eq!(order.len(), 4);
        assert!(Arc::ptr_eq(&order[0], &old_fresh));
        assert!(Arc::ptr_eq(&order[1], &young_fresh));
        assert!(Arc::ptr_eq(&order[2], &quiet));
        assert!(Arc::ptr_eq(&order[3], &stalled));
        assert!(r.victim(now, None, 1000).is_none());
        assert_eq!(r.live(), 3);
    }

    /// A fresh connection whose first command waits in it unread (its
    /// session not yet scheduled) is not taken for a silent one; one whose
    /// peer has gone is taken first.
    #[tokio::test]
    async fn a_fresh_connection_that_has_spoken_is_kept() {
        use std::io::Write;
        let t0 = Instant::now();
        let mut r = Registry {
            base: t0,
            conns: Vec::new(),
        };
        let pair = || {
            let (a, b) = std::os::unix::net::UnixStream::pair().unwrap();
            a.set_nonblocking(true).unwrap();
            (
                Socket::Unix(tokio::net::UnixStream::from_std(a).unwrap()),
                b,
            )
        };
        let make = |r: &Registry, sock: Socket, at: u64| {
            Arc::new(Conn {
                sock,
                peer: Peer::Uid(0),
                base: r.base,
                accepted: t0 + Duration::from_secs(at),
                last_read: AtomicU64::new(0),
                phase: AtomicU8::new(Phase::Fresh as u8),
                tx_started: AtomicU64::new(0),
                tx_in_message: AtomicBool::new(false),
                tx_data: AtomicU64::new(0),
                client: AtomicU64::new(0),
                evicted: AtomicBool::new(false),
                reader: Mutex::new(None),
            })
        };
        let (spoke, mut peer1) = pair();
        peer1.write_all(&frame(b'O', b"\0\0\0\x06")).unwrap();
        let (silent, _peer2) = pair();
        let (gone, peer3) = pair();
        drop(peer3);
        let spoke = make(&r, spoke, 1);
        let silent = make(&r, silent, 2);
        let gone = make(&r, gone, 3);
        r.conns
            .extend([Arc::clone(&spoke), Arc::clone(&silent), Arc::clone(&gone)]);
        let now = t0 + Duration::from_secs(10);
        let (first, _, _) = r.victim(now, None, 1000).unwrap();
        assert!(Arc::ptr_eq(&first, &gone), "a closed one first");
        evict(&first);
        let (second, _, _) = r.victim(now, None, 1000).unwrap();
        assert!(
            Arc::ptr_eq(&second, &silent),
            "then the silent one, though younger"
        );
        evict(&second);
        assert!(
            r.victim(now, None, 1000).is_none(),
            "never the one that has spoken"
        );
    }
}
