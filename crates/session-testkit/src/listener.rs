//! A TCP listener whose connections a handler can reset: axum hands the handler a
//! [`Connection`] (as connect info), and cancelling its token makes the socket fail every read
//! and write and close with `SO_LINGER` 0, so that the client sees a real reset.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

/// A loopback listener handing out resettable connections.
pub(crate) struct ResettableListener(pub(crate) TcpListener);

/// One accepted connection, as the handler sees it.
#[derive(Debug, Clone)]
pub(crate) struct Connection {
    /// Cancelled to reset the connection.
    pub(crate) reset: CancellationToken,
}

impl Listener for ResettableListener {
    type Io = ResettableStream;
    type Addr = Connection;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            match self.0.accept().await {
                Ok((stream, _peer)) => {
                    // Small SSE chunks must leave at once for pacing to be observable.
                    let _ = stream.set_nodelay(true);
                    let reset = CancellationToken::new();
                    return (ResettableStream { stream, reset: reset.clone() }, Connection { reset });
                }
                // Accept errors (too many open files, aborted handshakes) are transient here.
                Err(_) => tokio::time::sleep(Duration::from_millis(5)).await,
            }
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        // Only the reset token is per connection; the listener's own has nothing to reset.
        self.0.local_addr()?;
        Ok(Connection { reset: CancellationToken::new() })
    }
}

impl Connected<IncomingStream<'_, ResettableListener>> for Connection {
    fn connect_info(stream: IncomingStream<'_, ResettableListener>) -> Self {
        stream.remote_addr().clone()
    }
}

/// A TCP stream that fails with `ConnectionReset` once its token is cancelled.
pub(crate) struct ResettableStream {
    stream: TcpStream,
    reset: CancellationToken,
}

fn reset_error() -> io::Error {
    io::Error::new(io::ErrorKind::ConnectionReset, "connection reset by the test server")
}

impl Drop for ResettableStream {
    fn drop(&mut self) {
        if self.reset.is_cancelled() {
            // Linger 0: closing sends RST instead of FIN.
            let _ = self.stream.set_zero_linger();
        }
    }
}

impl AsyncRead for ResettableStream {
    fn poll_read(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &mut ReadBuf<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.reset.is_cancelled() {
            return Poll::Ready(Err(reset_error()));
        }
        Pin::new(&mut this.stream).poll_read(cx, buf)
    }
}

impl AsyncWrite for ResettableStream {
    fn poll_write(self: Pin<&mut Self>, cx: &mut Context<'_>, buf: &[u8]) -> Poll<io::Result<usize>> {
        let this = self.get_mut();
        if this.reset.is_cancelled() {
            return Poll::Ready(Err(reset_error()));
        }
        Pin::new(&mut this.stream).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.reset.is_cancelled() {
            return Poll::Ready(Err(reset_error()));
        }
        Pin::new(&mut this.stream).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        if this.reset.is_cancelled() {
            return Poll::Ready(Err(reset_error()));
        }
        Pin::new(&mut this.stream).poll_shutdown(cx)
    }
}
