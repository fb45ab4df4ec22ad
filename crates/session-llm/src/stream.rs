//! The async edge of decoding: body chunks from the transport become SSE events under an idle
//! timeout, and SSE events become `LlmEvent`s under a cancellation token. All parsing is the
//! pure code of `sse.rs` and the adapters; this module only waits.

use std::collections::VecDeque;
use std::fmt;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use bytes::Bytes;
use futures_core::Stream;
use futures_util::stream::BoxStream;
use session_core::LlmEvent;
use tokio::time::{Instant, Sleep};
use tokio_util::sync::{CancellationToken, WaitForCancellationFutureOwned};

use crate::decode::Api;
use crate::error::{LlmError, TransportError};
use crate::parser::StreamParser;
use crate::sse::{DEFAULT_MAX_EVENT_BYTES, SseDecoder, SseEvent};

/// The default idle timeout: five minutes without a byte fails the stream.
pub const DEFAULT_IDLE_TIMEOUT: Duration = Duration::from_secs(5 * 60);

/// A response body as the transport yields it.
pub type ByteStream = BoxStream<'static, Result<Bytes, TransportError>>;

/// The events of one provider response.
pub type LlmStream = BoxStream<'static, Result<LlmEvent, LlmError>>;

/// Limits applied while reading a stream.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StreamLimits {
    /// The longest wait for the next chunk of the body.
    pub idle_timeout: Duration,
    /// The largest single server-sent event.
    pub max_event_bytes: usize,
}

impl Default for StreamLimits {
    fn default() -> Self {
        Self { idle_timeout: DEFAULT_IDLE_TIMEOUT, max_event_bytes: DEFAULT_MAX_EVENT_BYTES }
    }
}

/// SSE events from a body stream, failing with `IdleTimeout` when no chunk arrives in time.
///
/// Must be polled inside a tokio runtime (the timer is tokio's).
pub struct SseStream {
    body: Option<ByteStream>,
    decoder: SseDecoder,
    queue: VecDeque<SseEvent>,
    scratch: Vec<SseEvent>,
    error: Option<LlmError>,
    idle_timeout: Duration,
    /// Created on first poll, so that building the stream needs no runtime.
    timer: Option<Pin<Box<Sleep>>>,
    finished: bool,
}

impl fmt::Debug for SseStream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SseStream")
            .field("queued", &self.queue.len())
            .field("idle_timeout", &self.idle_timeout)
            .field("finished", &self.finished)
            .finish_non_exhaustive()
    }
}

impl SseStream {
    /// Wraps a body stream.
    pub fn new(body: ByteStream, limits: StreamLimits) -> Self {
        Self {
            body: Some(body),
            decoder: SseDecoder::with_max_event_bytes(limits.max_event_bytes),
            queue: VecDeque::new(),
            scratch: Vec::new(),
            error: None,
            idle_timeout: limits.idle_timeout,
            timer: None,
            finished: false,
        }
    }

    /// Stops reading the body (the connection is dropped); queued events are still yielded.
    fn close_body(&mut self) {
        self.body = None;
        self.timer = None;
    }
}

impl Stream for SseStream {
    type Item = Result<SseEvent, LlmError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if let Some(event) = this.queue.pop_front() {
                return Poll::Ready(Some(Ok(event)));
            }
            if let Some(error) = this.error.take() {
                this.finished = true;
                return Poll::Ready(Some(Err(error)));
            }
            if this.finished {
                return Poll::Ready(None);
            }
            let Some(body) = this.body.as_mut() else {
                this.finished = true;
                continue;
            };
            match body.as_mut().poll_next(cx) {
                Poll::Ready(Some(Ok(chunk))) => {
                    let deadline = Instant::now() + this.idle_timeout;
                    if let Some(timer) = this.timer.as_mut() {
                        timer.as_mut().reset(deadline);
                    }
                    let result = this.decoder.push(&chunk, &mut this.scratch);
                    this.queue.extend(this.scratch.drain(..));
                    if let Err(error) = result {
                        this.error = Some(error.into());
                        this.close_body();
                    }
                }
                Poll::Ready(Some(Err(error))) => {
                    this.error = Some(LlmError::Transport(error));
                    this.close_body();
                }
                Poll::Ready(None) => {
                    let result = this.decoder.finish(&mut this.scratch);
                    this.queue.extend(this.scratch.drain(..));
                    if let Err(error) = result {
                        this.error = Some(error.into());
                    }
                    this.close_body();
                }
                Poll::Pending => {
                    let idle_timeout = this.idle_timeout;
                    let timer = this.timer.get_or_insert_with(|| {
                        Box::pin(tokio::time::sleep_until(Instant::now() + idle_timeout))
                    });
                    if timer.as_mut().poll(cx).is_ready() {
                        this.error = Some(LlmError::IdleTimeout { after: idle_timeout });
                        this.close_body();
                        continue;
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

/// `LlmEvent`s from an SSE stream and a provider's parser, ending at the first error, at the
/// provider's terminal event, or with `Aborted` as soon as the token is cancelled.
struct EventStream {
    sse: SseStream,
    parser: Box<dyn StreamParser>,
    cancel: CancellationToken,
    cancelled: Pin<Box<WaitForCancellationFutureOwned>>,
    queue: VecDeque<LlmEvent>,
    scratch: Vec<LlmEvent>,
    error: Option<LlmError>,
    ended: bool,
    finished: bool,
}

impl Stream for EventStream {
    type Item = Result<LlmEvent, LlmError>;

    fn poll_next(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Option<Self::Item>> {
        let this = self.get_mut();
        loop {
            if this.finished {
                return Poll::Ready(None);
            }
            if this.cancel.is_cancelled() {
                this.finished = true;
                this.sse.close_body();
                return Poll::Ready(Some(Err(LlmError::Aborted)));
            }
            if let Some(event) = this.queue.pop_front() {
                return Poll::Ready(Some(Ok(event)));
            }
            if let Some(error) = this.error.take() {
                this.finished = true;
                return Poll::Ready(Some(Err(error)));
            }
            if this.ended {
                this.finished = true;
                return Poll::Ready(None);
            }
            match Pin::new(&mut this.sse).poll_next(cx) {
                Poll::Ready(Some(Ok(event))) => {
                    let result = this.parser.on_event(&event, &mut this.scratch);
                    this.queue.extend(this.scratch.drain(..));
                    if let Err(error) = result {
                        this.error = Some(error);
                        this.ended = true;
                        this.sse.close_body();
                    } else if this.parser.is_done() {
                        // The terminal event came: whatever follows is not needed.
                        this.ended = true;
                        this.sse.close_body();
                    }
                }
                Poll::Ready(Some(Err(error))) => {
                    this.error = Some(error);
                    this.ended = true;
                }
                Poll::Ready(None) => {
                    let result = this.parser.on_end(&mut this.scratch);
                    this.queue.extend(this.scratch.drain(..));
                    this.error = result.err();
                    this.ended = true;
                }
                Poll::Pending => {
                    // Registers the waker so that a cancellation wakes this stream up.
                    if this.cancelled.as_mut().poll(cx).is_ready() {
                        continue;
                    }
                    return Poll::Pending;
                }
            }
        }
    }
}

/// Turns a response body of `api` into `LlmEvent`s (what a recorded stream's replay over a
/// byte stream, and every adapter's HTTP call, run).
pub fn event_stream(
    api: Api,
    body: ByteStream,
    limits: StreamLimits,
    cancel: CancellationToken,
) -> LlmStream {
    parse_stream(api.parser(), body, limits, cancel)
}

/// Like [`event_stream`] with any stream parser.
pub fn parse_stream(
    parser: Box<dyn StreamParser>,
    body: ByteStream,
    limits: StreamLimits,
    cancel: CancellationToken,
) -> LlmStream {
    Box::pin(EventStream {
        sse: SseStream::new(body, limits),
        parser,
        cancelled: Box::pin(cancel.clone().cancelled_owned()),
        cancel,
        queue: VecDeque::new(),
        scratch: Vec::new(),
        error: None,
        ended: false,
        finished: false,
    })
}
