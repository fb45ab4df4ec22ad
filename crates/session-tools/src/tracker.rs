//! The call tracker: one oneshot (SPEC 1.2's `done` Deferred) per running call, the updates
//! they produce in the order the processor must see them, and the cleanup grace of SPEC 8.

use std::collections::HashMap;
use std::future::poll_fn;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use session_core::JsonObject;
use session_core::LlmEvent;
use session_core::processor::{Input, ToolSettlement};
use tokio::sync::{mpsc, oneshot};
use tokio_util::sync::CancellationToken;

use crate::context::ProgressSink;
use crate::error::ToolError;
use crate::executor::{CallScope, ToolExecutor, ToolInvocation};
use crate::tool::ToolSuccess;

/// The cleanup grace of SPEC 8: how long cleanup waits for calls still running.
pub const CLEANUP_GRACE: Duration = Duration::from_millis(250);

/// A finished call: its result or its error.
#[derive(Debug)]
pub struct ToolCompletion {
    /// The provider's call id.
    pub call_id: String,
    /// The tool's name.
    pub tool: String,
    /// What the call produced.
    pub result: Result<ToolSuccess, ToolError>,
}

impl ToolCompletion {
    /// The typed settlement the processor records (what the runtime feeds it).
    pub fn into_settlement(self) -> ToolSettlement {
        match self.result {
            Ok(success) => ToolSettlement::Completed { call_id: self.call_id, output: success.into_output() },
            Err(error) => ToolSettlement::Failed {
                call_id: self.call_id,
                message: error.to_string(),
                failure: Some(error.failure()),
            },
        }
    }

    /// The same outcome as a stream event: a tool-result of kind json, or a tool-error with its
    /// [`session_core::ToolFailure`] (for recordings and clients that speak events).
    pub fn into_event(self) -> LlmEvent {
        match self.result {
            Ok(result) => LlmEvent::ToolResult {
                id: self.call_id,
                name: self.tool,
                result: result.to_value(),
                provider_executed: false,
            },
            Err(error) => LlmEvent::ToolError {
                id: self.call_id,
                name: self.tool,
                message: error.to_string(),
                error: Some(error.failure()),
            },
        }
    }
}

/// Something a running call reports, in the order it happened.
#[derive(Debug)]
pub enum ToolUpdate {
    /// The tool updated its title and/or metadata.
    Progress {
        /// The call.
        call_id: String,
        /// The new title.
        title: Option<String>,
        /// The new metadata.
        metadata: Option<JsonObject>,
    },
    /// The call finished.
    Finished(ToolCompletion),
}

impl ToolUpdate {
    /// The call this update is about.
    pub fn call_id(&self) -> &str {
        match self {
            Self::Progress { call_id, .. } => call_id,
            Self::Finished(completion) => &completion.call_id,
        }
    }

    /// The processor input for this update (`Input::ToolProgress` or `Input::ToolSettled`).
    pub fn into_input(self) -> Input {
        match self {
            Self::Progress { call_id, title, metadata } => Input::ToolProgress { call_id, title, metadata },
            Self::Finished(completion) => Input::ToolSettled(completion.into_settlement()),
        }
    }
}

/// What [`CallTracker::wait_all`] found when the grace ended.
#[derive(Debug, Default)]
pub struct Settlement {
    /// Updates that arrived, in order: feed them to the processor.
    pub updates: Vec<ToolUpdate>,
    /// Calls still running when the grace ran out; they were cancelled and forgotten, so their
    /// late completions are ignored. Feed `Input::GraceElapsed` next.
    pub unsettled: Vec<String>,
}

/// The completing side of one tracked call, held by whatever runs it.
#[derive(Debug)]
pub struct CallHandle {
    call_id: String,
    tool: String,
    done: oneshot::Sender<ToolCompletion>,
    abort: CancellationToken,
    progress: ProgressSink,
}

impl CallHandle {
    /// The provider's call id.
    pub fn call_id(&self) -> &str {
        &self.call_id
    }

    /// Fires when the call is cancelled.
    pub fn abort(&self) -> &CancellationToken {
        &self.abort
    }

    /// Sends title and metadata updates to the tracker.
    pub fn progress(&self) -> &ProgressSink {
        &self.progress
    }

    /// Settles the call. Returns false when the tracker no longer tracks it (cleanup gave up
    /// on it): the completion is then ignored, as SPEC 1.2 ignores results of calls that are
    /// not running.
    pub fn complete(self, result: Result<ToolSuccess, ToolError>) -> bool {
        self.done.send(ToolCompletion { call_id: self.call_id, tool: self.tool, result }).is_ok()
    }
}

struct OpenCall {
    tool: String,
    abort: CancellationToken,
    done: oneshot::Receiver<ToolCompletion>,
}

/// The running calls of one processor run; owned by the driver that feeds the processor.
///
/// Calls run concurrently; [`CallTracker::next`] yields their progress and completions in
/// order, and [`CallTracker::wait_all`] gives cleanup its grace.
pub struct CallTracker {
    open: HashMap<String, OpenCall>,
    progress_tx: mpsc::UnboundedSender<ToolUpdate>,
    progress_rx: mpsc::UnboundedReceiver<ToolUpdate>,
}

impl std::fmt::Debug for CallTracker {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CallTracker").field("open", &self.open_calls()).finish()
    }
}

impl Default for CallTracker {
    fn default() -> Self {
        Self::new()
    }
}

impl CallTracker {
    /// A tracker with no calls.
    pub fn new() -> Self {
        let (progress_tx, progress_rx) = mpsc::unbounded_channel();
        Self { open: HashMap::new(), progress_tx, progress_rx }
    }

    /// Starts tracking a call; its abort token is a child of `parent`. Returns `None` when a
    /// call with this id is already running.
    pub fn track(&mut self, call_id: &str, tool: &str, parent: &CancellationToken) -> Option<CallHandle> {
        if self.open.contains_key(call_id) {
            return None;
        }
        let (done_tx, done_rx) = oneshot::channel();
        let abort = parent.child_token();
        self.open.insert(
            call_id.to_owned(),
            OpenCall { tool: tool.to_owned(), abort: abort.clone(), done: done_rx },
        );
        let sender = self.progress_tx.clone();
        let id = call_id.to_owned();
        let progress = ProgressSink::new(move |title, metadata| {
            // The tracker may be gone; progress then has nowhere to go.
            let _ = sender.send(ToolUpdate::Progress { call_id: id.clone(), title, metadata });
        });
        Some(CallHandle {
            call_id: call_id.to_owned(),
            tool: tool.to_owned(),
            done: done_tx,
            abort,
            progress,
        })
    }

    /// Tracks `call` and runs it on the tokio runtime with `executor`. Returns false (and runs
    /// nothing) when a call with this id is already running.
    pub fn spawn(&mut self, executor: Arc<ToolExecutor>, call: ToolInvocation, scope: CallScope) -> bool {
        let Some(handle) = self.track(&call.call_id, &call.tool, &scope.abort) else { return false };
        tokio::spawn(async move {
            let result = executor.run(&call, &scope, handle.abort().clone(), handle.progress().clone()).await;
            handle.complete(result);
        });
        true
    }

    /// True when no call is running.
    pub fn is_empty(&self) -> bool {
        self.open.is_empty()
    }

    /// The ids of the running calls, sorted.
    pub fn open_calls(&self) -> Vec<String> {
        let mut ids: Vec<String> = self.open.keys().cloned().collect();
        ids.sort();
        ids
    }

    /// Cancels one running call; false when it is not running.
    pub fn cancel(&self, call_id: &str) -> bool {
        self.open.get(call_id).map(|call| call.abort.cancel()).is_some()
    }

    /// Cancels every running call.
    pub fn cancel_all(&self) {
        self.open.values().for_each(|call| call.abort.cancel());
    }

    /// The next update of a running call: progress before completions. Returns `None` at
    /// once when no call is running and no progress is queued. Cancel-safe: an update is
    /// never lost when the future is dropped, so it can sit in a `select!` loop.
    pub async fn next(&mut self) -> Option<ToolUpdate> {
        loop {
            let polled = poll_fn(|cx| {
                if let Poll::Ready(Some(update)) = self.progress_rx.poll_recv(cx) {
                    return Poll::Ready(Polled::Progress(update));
                }
                if self.open.is_empty() {
                    return Poll::Ready(Polled::Idle);
                }
                for (id, call) in &mut self.open {
                    if let Poll::Ready(outcome) = Pin::new(&mut call.done).poll(cx) {
                        return Poll::Ready(Polled::Done(id.clone(), outcome.ok()));
                    }
                }
                Poll::Pending
            })
            .await;
            match polled {
                Polled::Idle => return None,
                // Progress of a call that cleanup gave up on goes nowhere.
                Polled::Progress(update) if self.open.contains_key(update.call_id()) => return Some(update),
                Polled::Progress(_) => {}
                Polled::Done(id, completion) => {
                    let Some(call) = self.open.remove(&id) else { continue };
                    let completion = completion.unwrap_or_else(|| ToolCompletion {
                        call_id: id,
                        tool: call.tool,
                        result: Err(ToolError::Failed {
                            message: "the tool stopped without a result".into(),
                        }),
                    });
                    return Some(ToolUpdate::Finished(completion));
                }
            }
        }
    }

    /// Cleanup's wait (SPEC 8 step 5d): collects updates until every call has finished or
    /// `grace` ran out, then cancels and forgets the calls still running. Feed the updates to
    /// the processor, then `Input::GraceElapsed` if it still waits.
    pub async fn wait_all(&mut self, grace: Duration) -> Settlement {
        let deadline = tokio::time::Instant::now() + grace;
        let mut updates = Vec::new();
        while !self.open.is_empty() {
            match tokio::time::timeout_at(deadline, self.next()).await {
                Ok(Some(update)) => updates.push(update),
                Ok(None) | Err(_) => break,
            }
        }
        // Progress already sent by the calls given up on still counts: it carries their
        // partial output into the aborted state (SPEC 9).
        while let Ok(update) = self.progress_rx.try_recv() {
            if self.open.contains_key(update.call_id()) {
                updates.push(update);
            }
        }
        let unsettled = self.open_calls();
        for (_, call) in self.open.drain() {
            call.abort.cancel();
        }
        Settlement { updates, unsettled }
    }
}

enum Polled {
    Progress(ToolUpdate),
    Done(String, Option<ToolCompletion>),
    Idle,
}
