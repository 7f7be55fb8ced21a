//! The milter's one listener type: TCP or a Unix socket, and the
//! connections it accepts, read and written through a shared reference so
//! that the guard ([`super::guard`]) can look into a connection (is a
//! command waiting in it?) while its session owns it.
//!
//! TCP connections get TCP_NODELAY, and every read re-arms TCP_QUICKACK:
//! bulkwatch asks the MTA not to wait for replies it does not need
//! ([`super::callbacks::NO_REPLY`]), so Postfix writes several small
//! packets in a row; with Nagle's algorithm on its side, each waits for
//! the ACK of the one before, and a delayed ACK holds it for 40 ms
//! (docs/dev/performance.md). Acknowledging at once costs one `setsockopt`
//! per read.

use std::io;
use std::mem::MaybeUninit;
use std::os::fd::{AsFd, BorrowedFd};
use std::pin::Pin;
use std::task::{Context, Poll};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

/// Where the milter listens.
#[derive(Debug)]
pub enum Listener {
    Tcp(TcpListener),
    Unix(UnixListener),
}

impl Listener {
    /// Polls for the next connection.
    pub fn poll_accept(&self, cx: &mut Context<'_>) -> Poll<io::Result<Socket>> {
        match self {
            Listener::Tcp(l) => l.poll_accept(cx).map_ok(|(s, peer)| {
                if let Err(e) = s.set_nodelay(true) {
                    tracing::warn!(%peer, error = %e, "cannot set TCP_NODELAY");
                }
                Socket::Tcp(s)
            }),
            Listener::Unix(l) => l.poll_accept(cx).map_ok(|(s, _)| Socket::Unix(s)),
        }
    }
}

/// One accepted connection.
#[derive(Debug)]
pub enum Socket {
    Tcp(TcpStream),
    Unix(UnixStream),
}

/// What waits in a connection, looked at without reading it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Waiting {
    Nothing,
    Bytes,
    /// The peer has closed it.
    Closed,
}

impl AsFd for Socket {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match self {
            Socket::Tcp(s) => s.as_fd(),
            Socket::Unix(s) => s.as_fd(),
        }
    }
}

/// Who is at the other end of a connection, for the guard's per-peer
/// cap: the user of a Unix socket's peer process (`SO_PEERCRED`), or a
/// TCP peer's address.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Peer {
    Uid(u32),
    Addr(std::net::IpAddr),
    Unknown,
}

impl Socket {
    /// The peer ([`Peer`]), read once at accept.
    pub fn peer(&self) -> Peer {
        match self {
            Socket::Tcp(s) => s.peer_addr().map_or(Peer::Unknown, |a| Peer::Addr(a.ip())),
            Socket::Unix(s) => s.peer_cred().map_or(Peer::Unknown, |c| Peer::Uid(c.uid())),
        }
    }

    pub fn poll_read_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Socket::Tcp(s) => s.poll_read_ready(cx),
            Socket::Unix(s) => s.poll_read_ready(cx),
        }
    }

    /// Reads what is there without waiting (`WouldBlock` when nothing).
    pub fn try_read(&self, buf: &mut [u8]) -> io::Result<usize> {
        let n = match self {
            Socket::Tcp(s) => s.try_read(buf)?,
            Socket::Unix(s) => s.try_read(buf)?,
        };
        if let (Socket::Tcp(s), true) = (self, n > 0) {
            // Best effort: without it, only speed suffers.
            let _ = s.set_quickack(true);
        }
        Ok(n)
    }

    pub fn poll_write_ready(&self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self {
            Socket::Tcp(s) => s.poll_write_ready(cx),
            Socket::Unix(s) => s.poll_write_ready(cx),
        }
    }

    /// Writes what fits without waiting (`WouldBlock` when nothing does).
    pub fn try_write(&self, buf: &[u8]) -> io::Result<usize> {
        match self {
            Socket::Tcp(s) => s.try_write(buf),
            Socket::Unix(s) => s.try_write(buf),
        }
    }

    /// Shuts the writing half down.
    pub fn shutdown_write(&self) -> io::Result<()> {
        socket2::SockRef::from(self).shutdown(std::net::Shutdown::Write)
    }

    /// Reads into `buf` through a shared reference: what
    /// [`AsyncRead::poll_read`] does. `Ok(n)`: `n` bytes were appended
    /// (0 at end of file).
    pub fn poll_read_shared(
        &self,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<usize>> {
        loop {
            match self.poll_read_ready(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
            match self.try_read(buf.initialize_unfilled()) {
                Ok(n) => {
                    buf.advance(n);
                    return Poll::Ready(Ok(n));
                }
                // Readiness was cleared: poll it again.
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }

    /// Writes through a shared reference: what [`AsyncWrite::poll_write`]
    /// does.
    pub fn poll_write_shared(&self, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        loop {
            match self.poll_write_ready(cx) {
                Poll::Ready(Ok(())) => {}
                Poll::Ready(Err(e)) => return Poll::Ready(Err(e)),
                Poll::Pending => return Poll::Pending,
            }
            match self.try_write(buf) {
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => {}
                r => return Poll::Ready(r),
            }
        }
    }

    /// What waits in the connection (a peek, never blocking: the socket is
    /// non-blocking).
    pub fn waiting(&self) -> Waiting {
        let mut one = [MaybeUninit::<u8>::uninit(); 1];
        match socket2::SockRef::from(self).peek(&mut one) {
            Ok(0) => Waiting::Closed,
            Ok(_) => Waiting::Bytes,
            Err(_) => Waiting::Nothing,
        }
    }
}

impl AsyncRead for Socket {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        self.poll_read_shared(cx, buf).map_ok(drop)
    }
}

impl AsyncWrite for Socket {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        self.poll_write_shared(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(Ok(()))
    }

    fn poll_shutdown(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<io::Result<()>> {
        Poll::Ready(self.shutdown_write())
    }
}

/// Unguarded, for the do-nothing milter of the benchmarks
/// (`examples/null_milter.rs`): the same sockets as bulkwatch's.
impl indymilter::Listener for Listener {
    type Io = Socket;

    fn poll_accept(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<Socket>> {
        Listener::poll_accept(self, cx)
    }
}
