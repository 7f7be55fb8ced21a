//! The milter's listener, guarded against the attacks a local peer can
//! make without any privilege.
//!
//! - **An accept error never stops the server.** Running out of file
//!   descriptors (`EMFILE`, `ENFILE`), buffers or memory, or a connection
//!   reset before it was accepted, is logged (at most once a second),
//!   counted (`bulkwatch_accept_errors_total`) and waited out with a
//!   back-off from 10 ms up to 1 s; accepting then goes on. The milter
//!   library would otherwise treat the error as fatal and the daemon exit.
//! - **A full server still serves.** At most `milter.max_connections`
//!   connections are kept; when a new one arrives and that many are open,
//!   the one that has been idle longest (no byte read from it for the
//!   longest time) is closed, counted (`bulkwatch_connections_evicted_total`)
//!   and logged. Holding every slot with idle connections can then no
//!   longer blind the filter: Postfix's next connection evicts one of them.
//!   An evicted connection reads end-of-file; its session ends as if the
//!   client had closed it.
//! - Idle connections are closed by the milter library after
//!   `milter.idle_timeout_secs` without a complete protocol message (see
//!   [`crate::milter::run`]).

use std::future::Future;
use std::io;
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard};
use std::task::{Context, Poll, Waker};
use std::time::{Duration, Instant};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::Sleep;

use crate::milter::State;

/// First wait after a failed accept; it doubles up to [`MAX_BACKOFF`].
const MIN_BACKOFF: Duration = Duration::from_millis(10);
const MAX_BACKOFF: Duration = Duration::from_secs(1);
/// Accept errors are logged at most this often.
const LOG_EVERY: Duration = Duration::from_secs(1);

/// One tracked connection.
#[derive(Debug)]
struct Conn {
    /// The last time bytes were read from it (or it was accepted).
    last_read: Instant,
    evicted: bool,
    /// The task waiting to read from it, woken on eviction.
    reader: Option<Waker>,
}

/// The open connections of one listener.
#[derive(Debug, Default)]
struct Registry {
    /// Slots; `None` is free. Never longer than the most connections ever
    /// open at once (at most the cap plus the milter library's headroom).
    conns: Vec<Option<Conn>>,
    open: usize,
}

impl Registry {
    fn insert(&mut self, now: Instant) -> usize {
        let conn = Conn {
            last_read: now,
            evicted: false,
            reader: None,
        };
        self.open += 1;
        match self.conns.iter().position(Option::is_none) {
            Some(i) => {
                if let Some(slot) = self.conns.get_mut(i) {
                    *slot = Some(conn);
                }
                i
            }
            None => {
                self.conns.push(Some(conn));
                self.conns.len() - 1
            }
        }
    }

    fn remove(&mut self, i: usize) {
        if let Some(slot) = self.conns.get_mut(i) {
            if slot.take().is_some() {
                self.open -= 1;
            }
        }
    }

    /// Marks the longest-idle connection not yet evicted as evicted and
    /// wakes its reader; returns how long it had been idle.
    fn evict_longest_idle(&mut self, now: Instant) -> Option<Duration> {
        let victim = self
            .conns
            .iter_mut()
            .flatten()
            .filter(|c| !c.evicted)
            .min_by_key(|c| c.last_read)?;
        victim.evicted = true;
        if let Some(w) = victim.reader.take() {
            w.wake();
        }
        Some(now.saturating_duration_since(victim.last_read))
    }

    /// Connections open and not evicted.
    fn live(&self) -> usize {
        self.conns.iter().flatten().filter(|c| !c.evicted).count()
    }
}

fn lock(r: &Mutex<Registry>) -> MutexGuard<'_, Registry> {
    // A panic while the registry was held leaves it consistent (every
    // change is one assignment): go on with it.
    r.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// A listener that never fails and keeps at most `cap` live connections
/// (see the module documentation).
pub struct Guarded<L> {
    inner: L,
    cap: usize,
    registry: Arc<Mutex<Registry>>,
    state: Arc<State>,
    backoff: Option<Pin<Box<Sleep>>>,
    delay: Duration,
    last_log: Option<Instant>,
    suppressed: u64,
}

impl<L> Guarded<L> {
    /// Wraps `inner`, keeping at most `cap` live connections (at least 1);
    /// counts into `state`'s metrics.
    pub fn new(inner: L, cap: usize, state: Arc<State>) -> Guarded<L> {
        Guarded {
            inner,
            cap: cap.max(1),
            registry: Arc::default(),
            state,
            backoff: None,
            delay: MIN_BACKOFF,
            last_log: None,
            suppressed: 0,
        }
    }

    /// Connections open now, evicted ones still closing included.
    pub fn open(&self) -> usize {
        lock(&self.registry).open
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

    fn accepted<Io>(&mut self, io: Io) -> Tracked<Io> {
        self.delay = MIN_BACKOFF;
        let now = Instant::now();
        let mut r = lock(&self.registry);
        if r.live() >= self.cap {
            if let Some(idle) = r.evict_longest_idle(now) {
                self.state.metrics.record_eviction();
                tracing::warn!(
                    cap = self.cap,
                    idle_ms = idle.as_millis() as u64,
                    "milter connections at max_connections: closed the longest-idle one"
                );
            }
        }
        let slot = r.insert(now);
        drop(r);
        Tracked {
            io,
            slot,
            registry: Arc::clone(&self.registry),
        }
    }
}

impl<L> indymilter::Listener for Guarded<L>
where
    L: indymilter::Listener,
{
    type Io = Tracked<L::Io>;

    fn poll_accept(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Tracked<L::Io>>> {
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

/// An accepted connection: reads update its idle time; once evicted it
/// reads end-of-file.
pub struct Tracked<Io> {
    io: Io,
    slot: usize,
    registry: Arc<Mutex<Registry>>,
}

impl<Io> Drop for Tracked<Io> {
    fn drop(&mut self) {
        lock(&self.registry).remove(self.slot);
    }
}

impl<Io: AsyncRead + Unpin> AsyncRead for Tracked<Io> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        {
            let mut r = lock(&self.registry);
            let Some(Some(conn)) = r.conns.get_mut(self.slot) else {
                return Poll::Ready(Ok(()));
            };
            if conn.evicted {
                // End of file: the session ends as if the peer had closed.
                return Poll::Ready(Ok(()));
            }
        }
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.io).poll_read(cx, buf);
        let mut r = lock(&self.registry);
        if let Some(Some(conn)) = r.conns.get_mut(self.slot) {
            match &polled {
                Poll::Ready(_) if buf.filled().len() > before => conn.last_read = Instant::now(),
                Poll::Pending => conn.reader = Some(cx.waker().clone()),
                Poll::Ready(_) => {}
            }
        }
        polled
    }
}

impl<Io: AsyncWrite + Unpin> AsyncWrite for Tracked<Io> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.io).poll_write(cx, buf)
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.io).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn eviction_picks_the_longest_idle_and_skips_evicted_ones() {
        let t0 = Instant::now();
        let mut r = Registry::default();
        let a = r.insert(t0);
        let b = r.insert(t0 + Duration::from_secs(5));
        let c = r.insert(t0 + Duration::from_secs(2));
        assert_eq!(r.live(), 3);
        assert_eq!(
            r.evict_longest_idle(t0 + Duration::from_secs(10)),
            Some(Duration::from_secs(10))
        );
        assert!(r.conns[a].as_ref().is_some_and(|x| x.evicted));
        assert_eq!(
            r.evict_longest_idle(t0 + Duration::from_secs(10)),
            Some(Duration::from_secs(8))
        );
        assert!(r.conns[c].as_ref().is_some_and(|x| x.evicted));
        assert_eq!(r.live(), 1);
        r.remove(a);
        r.remove(a);
        assert_eq!(r.open, 2);
        // A freed slot is reused: the registry does not grow past the most
        // connections open at once.
        assert_eq!(r.insert(t0), a);
        r.remove(b);
        r.remove(c);
        r.remove(a);
        assert_eq!((r.open, r.live(), r.conns.len()), (0, 0, 3));
        assert_eq!(r.evict_longest_idle(t0), None);
    }
}
