//! A do-nothing milter for benchmarks: every stage registered, every answer
//! Continue (Accept at end of message), TCP_NODELAY on accepted sockets, so
//! it pays the same protocol costs as bulkwatch and nothing else.
//!
//! `cargo run --release --example null_milter -- 127.0.0.1:7358`
//! (or `unix:/path`). Stops on SIGTERM or SIGINT.

use bulkwatch::milter::NoDelayListener;
use indymilter::{Callbacks, Config, EitherListener, Status};
use tokio::net::{TcpListener, UnixListener};
use tokio::signal::unix::{signal, SignalKind};

#[tokio::main]
async fn main() -> std::io::Result<()> {
    let addr = std::env::args()
        .nth(1)
        .unwrap_or_else(|| "127.0.0.1:7358".into());
    let listener: EitherListener<NoDelayListener, UnixListener> = match addr.strip_prefix("unix:") {
        Some(path) => {
            use std::os::unix::fs::PermissionsExt;
            let _ = std::fs::remove_file(path);
            let l = UnixListener::bind(path)?;
            // Postfix connects as user postfix.
            std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o666))?;
            EitherListener::Unix(l)
        }
        None => EitherListener::Tcp(NoDelayListener(TcpListener::bind(&addr).await?)),
    };
    let callbacks: Callbacks<()> = Callbacks::new()
        .on_connect(|_, _, _| Box::pin(async { Status::Continue }))
        .on_helo(|_, _| Box::pin(async { Status::Continue }))
        .on_mail(|_, _| Box::pin(async { Status::Continue }))
        .on_rcpt(|_, _| Box::pin(async { Status::Continue }))
        .on_data(|_| Box::pin(async { Status::Continue }))
        .on_header(|_, _, _| Box::pin(async { Status::Continue }))
        .on_eoh(|_| Box::pin(async { Status::Continue }))
        .on_body(|_, _| Box::pin(async { Status::Continue }))
        .on_eom(|_| Box::pin(async { Status::Accept }))
        .on_abort(|_| Box::pin(async { Status::Continue }))
        .on_close(|_| Box::pin(async { Status::Continue }))
        .on_unknown(|_, _| Box::pin(async { Status::Continue }));
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    let shutdown = async move {
        tokio::select! {
            _ = term.recv() => {}
            _ = int.recv() => {}
        }
    };
    eprintln!("null milter on {addr}");
    indymilter::run(listener, callbacks, Config::default(), shutdown).await
}
