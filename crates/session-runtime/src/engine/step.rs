//! The driver of one assistant step (SPEC 4, 7, 8): it owns the step's processor, its tool
//! calls and their scope, and the outcome, and carries the processor's effects out against the
//! provider stream, the store, the bus, the snapshots and the tools, with retries and cleanup.

use std::collections::BTreeMap;
use std::sync::Arc;

use futures_util::{FutureExt as _, StreamExt as _};
use session_core::{
    AssistantMessage, LlmEvent, Message, MessageError, MessageId, Part, PartKind, SessionId,
    permission::ToolCallRef, processor::Effect, processor::Input, processor::Outcome, processor::Processor,
    processor::ProcessorError, processor::SnapshotPurpose, processor::ToolSettlement, processor::Waiting,
    retry::RetryDecision, retry::RetryRequest, retry::decide,
};
use session_llm::{LlmError, LlmRequest, LlmStream};
use session_store::{PartDelta, WriteBatch};
use session_tools::{CLEANUP_GRACE, CallScope, CallTracker, TodoWriteTool, Tool as _, ToolInvocation};
use tokio_util::sync::CancellationToken;
use tokio_util::task::AbortOnDropHandle;

use super::agent::Agent;
use super::bus::BusEvent;
use super::error::RuntimeError;
use super::inputs::ProviderEntry;
use super::runtime::Runtime;
use super::status::SessionStatus;
use super::structured::{STRUCTURED_OUTPUT_TOOL, StructuredOutput};

/// What one assistant step runs against besides its processor.
pub(super) struct StepContext<'a> {
    /// The session.
    pub(super) session_id: &'a SessionId,
    /// The assistant message the step writes.
    pub(super) message_id: MessageId,
    /// The agent whose tools and rules apply.
    pub(super) agent: &'a Agent,
    /// The provider streamed from.
    pub(super) provider: &'a ProviderEntry,
    /// The run's cancellation.
    pub(super) cancel: &'a CancellationToken,
    /// The step's structured-output capture, when the user asked for a schema.
    pub(super) structured: Option<&'a StructuredOutput>,
}

/// One step in progress: the processor and everything its effects touch.
pub(super) struct StepDriver<'a> {
    runtime: &'a Runtime,
    context: StepContext<'a>,
    processor: Processor,
    tracker: CallTracker,
    scope: CallScope,
    outcome: Option<Outcome>,
    /// Writes of effects carried out but not committed yet: they go to the store (and their
    /// events to the bus) in one transaction before the driver waits for anything or carries
    /// out an effect other than a write, so no one ever sees effects out of order.
    pending: PendingWrites,
    /// The first attempt's stream when its request was sent ahead of the step.
    sent: Option<LlmStream>,
    /// The previous step's closing snapshot, taken as this step's start snapshot.
    start_snapshot: Option<String>,
}

/// How a step ended: the processor's outcome, the final message, and the snapshot its last
/// step closed on (see [`session_core::processor::Processor::closing_snapshot`]).
pub(super) struct StepRun {
    /// What the loop does next, as the processor decided.
    pub(super) outcome: Outcome,
    /// The assistant message as stored last.
    pub(super) message: AssistantMessage,
    /// The worktree's tree when the step closed, when nothing of the step came after it.
    pub(super) closing_snapshot: Option<String>,
}

/// How reading one attempt's stream ended.
enum AttemptEnd {
    /// The processor is done, or the stream ended and every tool settled.
    Settled,
    /// The stream (or the processor's view of it) failed with this error.
    Failed(MessageError),
}

impl<'a> StepDriver<'a> {
    /// A driver of `processor` for the step described by `context`.
    pub(super) fn new(runtime: &'a Runtime, context: StepContext<'a>, processor: Processor) -> Self {
        let scope = CallScope {
            session_id: context.session_id.clone(),
            message_id: context.message_id.clone(),
            agent: context.agent.name.clone(),
            ruleset: Arc::new(context.agent.ruleset.clone()),
            abort: context.cancel.child_token(),
        };
        Self {
            runtime,
            context,
            processor,
            tracker: CallTracker::new(),
            scope,
            outcome: None,
            pending: PendingWrites::default(),
            sent: None,
            start_snapshot: None,
        }
    }

    /// The driver with the stream of its request already sent (`None`: the first attempt
    /// sends it).
    pub(super) fn with_sent(mut self, sent: Option<LlmStream>) -> Self {
        self.sent = sent;
        self
    }

    /// The driver answering the processor's start snapshot with `snapshot`, the previous
    /// step's closing one, instead of staging the worktree again: the run went straight from
    /// that step to this one, so only others' edits in between (milliseconds) could differ,
    /// and those then count in this step's patch rather than in none (SPEC 13).
    pub(super) fn with_start_snapshot(mut self, snapshot: Option<String>) -> Self {
        self.start_snapshot = snapshot;
        self
    }

    fn now(&self) -> u64 {
        self.runtime.clock.now_ms()
    }

    /// Runs the step over the provider stream with retries (SPEC 7), tools and cleanup (SPEC
    /// 8), and returns the processor's outcome with the step's final message.
    pub(super) async fn run(mut self, request: LlmRequest) -> Result<StepRun, RuntimeError> {
        let mut attempt: u32 = 0;
        let started = self.now();
        let mut failure = self.carry_out().await?;
        loop {
            if failure.is_none() && self.outcome.is_none() {
                failure = match self.read_attempt(&request).await? {
                    AttemptEnd::Settled => None,
                    AttemptEnd::Failed(error) => Some(error),
                };
            }
            if let Some(error) = failure.take() {
                // The failed attempt's writes go out before the retry status and its wait.
                self.commit_pending().await?;
                if self.context.cancel.is_cancelled() {
                    self.interrupt().await?;
                    break;
                }
                attempt += 1;
                let now = self.now();
                let mut retry_request = RetryRequest::new(&error, attempt, self.runtime.jitter(), now);
                retry_request.elapsed_ms = now.saturating_sub(started);
                retry_request.config = self.context.provider.retry.as_ref();
                match decide(&retry_request) {
                    RetryDecision::Retry { wait_ms, message } => {
                        let wait = session_core::retry::clamp_delay(wait_ms);
                        let next = now.saturating_add(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX));
                        let status = SessionStatus::Retry { attempt, message, next };
                        self.runtime.set_status(self.context.session_id, status);
                        tokio::select! {
                            () = self.runtime.sleeper.sleep(wait) => {}
                            () = self.context.cancel.cancelled() => {
                                self.interrupt().await?;
                                break;
                            }
                        }
                        self.processor.begin_attempt();
                        continue;
                    }
                    RetryDecision::Stop => {
                        let now = self.now();
                        let _ = self.processor.handle(Input::Halt(error), now);
                        self.finish().await?;
                        break;
                    }
                }
            }
            if self.outcome.is_none() {
                // The stream ended without a failure: let cleanup finish.
                self.finish().await?;
            }
            break;
        }
        self.commit_pending().await?;
        Ok(StepRun {
            outcome: self.outcome.unwrap_or(Outcome::Stop),
            message: self.processor.message().clone(),
            closing_snapshot: self.processor.closing_snapshot().map(str::to_owned),
        })
    }

    /// Streams one attempt, feeding the processor stream events, tool updates and the
    /// interrupt, until it is done or the stream fails.
    async fn read_attempt(&mut self, request: &LlmRequest) -> Result<AttemptEnd, RuntimeError> {
        self.runtime.set_status(self.context.session_id, SessionStatus::Busy);
        let mut stream = match self.sent.take() {
            Some(sent) => sent,
            None => {
                let mut attempt_request = request.clone();
                attempt_request.cancel = self.context.cancel.child_token();
                sent_ahead(self.context.provider.client.stream(attempt_request))
            }
        };
        let mut stream_open = true;
        let mut tool_started = false;
        // The stream's next item when it was already there after the last input.
        let mut ready = None;
        loop {
            if self.outcome.is_some() {
                return Ok(AttemptEnd::Settled);
            }
            let reading = stream_open && self.processor.wants_events();
            // Nothing left to wait for: the stream is over and every tool settled.
            let input = if !reading && self.tracker.is_empty() {
                Input::EndOfStream
            } else if let Some(item) = ready.take().filter(|_| reading && !self.context.cancel.is_cancelled())
            {
                match stream_item(item, tool_started) {
                    StreamItem::Input(input) => input,
                    StreamItem::Closed => {
                        stream_open = false;
                        continue;
                    }
                    StreamItem::Failed(error) => return Ok(AttemptEnd::Failed(error)),
                }
            } else {
                // Nothing is known to come next: what is pending goes out before the wait.
                self.commit_pending().await?;
                tokio::select! {
                    biased;
                    () = self.context.cancel.cancelled() => {
                        self.scope.abort.cancel();
                        Input::Interrupt
                    }
                    update = self.tracker.next(), if !self.tracker.is_empty() => match update {
                        Some(update) => update.into_input(),
                        None => continue,
                    },
                    item = stream.next(), if reading => match stream_item(item, tool_started) {
                        StreamItem::Input(input) => input,
                        StreamItem::Closed => {
                            stream_open = false;
                            continue;
                        }
                        StreamItem::Failed(error) => return Ok(AttemptEnd::Failed(error)),
                    },
                }
            };
            let interrupt = matches!(input, Input::Interrupt);
            let running_before = self.tracker.open_calls().len();
            let now = self.now();
            let todos = self.writes_todos(&input);
            if let Err(ProcessorError::Stream(error)) = self.processor.handle(input, now) {
                return Ok(AttemptEnd::Failed(error));
            }
            if todos {
                self.publish_todos();
            }
            if let Some(error) = self.carry_out().await? {
                return Ok(AttemptEnd::Failed(error));
            }
            tool_started |= self.tracker.open_calls().len() > running_before;
            if interrupt {
                // Finish cleanup now: the stream is abandoned.
                self.finish().await?;
            } else if stream_open && self.processor.wants_events() {
                // An event already there is handled before the pending writes are committed:
                // a burst (a step's start and its tool call) makes one transaction.
                ready = stream.next().now_or_never();
            }
        }
    }

    /// True when `input` is the successful end of a `todowrite` call of this step.
    fn writes_todos(&self, input: &Input) -> bool {
        let Input::ToolSettled(ToolSettlement::Completed { call_id, .. }) = input else { return false };
        self.processor.parts().iter().any(|part| {
            matches!(&part.kind, PartKind::Tool(tool) if tool.call_id == *call_id && tool.tool == TodoWriteTool.name())
        })
    }

    /// Publishes `todo.updated` with the session's list as the todo tool left it (SPEC 14).
    fn publish_todos(&self) {
        let session_id = self.context.session_id;
        let todos = self.runtime.tools.todos().get(session_id);
        self.runtime.bus.publish(BusEvent::TodoUpdated { session_id: session_id.clone(), todos });
    }

    /// Interrupts the processor and lets its cleanup finish (SPEC 8).
    async fn interrupt(&mut self) -> Result<(), RuntimeError> {
        let now = self.now();
        let _ = self.processor.handle(Input::Interrupt, now);
        self.finish().await
    }

    /// Carries effects out until the processor is done.
    async fn finish(&mut self) -> Result<(), RuntimeError> {
        // Bounded: each round either drains effects or feeds the input cleanup waits for.
        for _ in 0..64 {
            // Effects queued by the last input (the message update, `Done`) are carried out
            // before deciding whether the processor is finished.
            if let Some(error) = self.carry_out().await? {
                let now = self.now();
                let _ = self.processor.handle(Input::Halt(error), now);
                continue;
            }
            if self.outcome.is_some() || self.processor.waiting() == Waiting::Finished {
                return Ok(());
            }
            if self.processor.waiting() == Waiting::Nothing {
                let input =
                    if self.context.cancel.is_cancelled() { Input::Interrupt } else { Input::EndOfStream };
                let now = self.now();
                if let Err(ProcessorError::Stream(error)) = self.processor.handle(input, now) {
                    let _ = self.processor.handle(Input::Halt(error), now);
                }
            }
        }
        Ok(())
    }

    /// Commits the pending writes in one transaction, then publishes their events.
    async fn commit_pending(&mut self) -> Result<(), RuntimeError> {
        self.runtime.commit_writes(&mut self.pending).await
    }

    /// Carries out every queued effect, answering requests; returns a stream failure if
    /// answering one failed the stream (a rejected doom-loop ask).
    async fn carry_out(&mut self) -> Result<Option<MessageError>, RuntimeError> {
        let mut failure = None;
        // Consecutive message and part writes go to the store as one transaction (a step-finish
        // part with the message totals it changes, a tool part's pending and running states,
        // the message's completion at the end of the stream), and their events are published
        // once it committed, in order. Any other effect that touches the outside first commits
        // what is pending (`commits_before`), so the store and the bus never see effects out of
        // order; the rest stays pending until the driver waits (see `pending`).
        while let Some(effect) = self.processor.poll_effect() {
            let effect = match effect {
                Effect::UpsertPart(part) => {
                    // Copied out of the processor's shared part and the reference dropped at
                    // once: the processor is again its only holder, so its next change to the
                    // part (a text delta) copies nothing.
                    let part = Part::clone(&part);
                    self.pending.batch.parts.push(part.clone());
                    self.pending.events.push(BusEvent::PartUpdated { part: Box::new(part) });
                    continue;
                }
                Effect::UpsertMessage(message) => {
                    let message = Message::Assistant(*message);
                    self.pending.batch.messages.push(message.clone());
                    self.pending.events.push(BusEvent::MessageUpdated { info: Box::new(message) });
                    continue;
                }
                other => other,
            };
            if self.commits_before(&effect) {
                self.commit_pending().await?;
            }
            let answer = self.answer(effect).await?;
            let now = self.now();
            if let Some(input) = answer
                && let Err(ProcessorError::Stream(error)) = self.processor.handle(input, now)
            {
                failure = Some(error);
            }
        }
        Ok(failure)
    }

    /// True when the pending writes must reach the store and the bus before `effect` is
    /// carried out: it touches the outside (a delta, a tool, an ask, the worktree) or ends
    /// the step. Marks answered by nothing need not, nor does a snapshot while snapshots are
    /// off (answered at once, touching nothing), so the writes around them make one
    /// transaction (a step's closing part, its message totals and the tool result before
    /// them). With snapshots on, the writes come first: clients see them before the
    /// snapshot's worktree walk.
    fn commits_before(&self, effect: &Effect) -> bool {
        match effect {
            Effect::StepSettled | Effect::SetIdle => false,
            Effect::TakeSnapshot(_) => self.runtime.snapshots.is_on(),
            _ => true,
        }
    }

    /// Carries out one effect other than a write; returns the input that answers it, if any.
    async fn answer(&mut self, effect: Effect) -> Result<Option<Input>, RuntimeError> {
        let runtime = self.runtime;
        let session_id = self.context.session_id;
        Ok(match effect {
            // Carried out by `carry_out` itself.
            Effect::UpsertPart(_) | Effect::UpsertMessage(_) => None,
            Effect::StepSettled => None,
            // The processor's cleanup asks for idle, but the run still holds the session (its
            // summaries, the lease, a joined prompt): the run loop publishes idle once, when
            // the session is free.
            Effect::SetIdle => None,
            Effect::PartDelta { message_id, part_id, field, delta } => {
                runtime.bus.publish(BusEvent::PartDelta {
                    session_id: session_id.clone(),
                    message_id: message_id.clone(),
                    part_id: part_id.clone(),
                    field: field.to_owned(),
                    delta: delta.clone(),
                });
                runtime
                    .store
                    .append_delta(PartDelta {
                        session_id: session_id.clone(),
                        message_id,
                        part_id,
                        field: field.to_owned(),
                        delta,
                    })
                    .await?;
                None
            }
            Effect::TakeSnapshot(SnapshotPurpose::Start) if self.start_snapshot.is_some() => {
                Some(Input::Snapshot(self.start_snapshot.take()))
            }
            Effect::TakeSnapshot(_) => Some(Input::Snapshot(runtime.snapshots.track().await)),
            Effect::ComputePatch { hash, to } => Some(Input::Patch(match to {
                Some(to) => runtime.snapshots.patch_between(&hash, &to).await,
                None => runtime.snapshots.patch(&hash).await,
            })),
            Effect::AskPermission { call_id, request } => {
                let call = ToolCallRef { message_id: self.context.message_id.clone(), call_id };
                // The doom-loop ask is evaluated against the agent's rules only (SPEC 3).
                let reply = runtime
                    .tools
                    .permissions()
                    .ask(session_id, *request, Some(call), &self.context.agent.ruleset, &self.scope.abort)
                    .await;
                if self.context.cancel.is_cancelled() {
                    Some(Input::Interrupt)
                } else {
                    Some(Input::PermissionReply(reply.map_err(|error| error.to_string())))
                }
            }
            Effect::ExecuteTool { call_id, tool, input, .. }
                if tool == STRUCTURED_OUTPUT_TOOL && self.context.structured.is_some() =>
            {
                self.context
                    .structured
                    .map(|structured| Input::ToolSettled(structured.capture(call_id, *input)))
            }
            Effect::ExecuteTool { call_id, tool, input, .. } => {
                let call = ToolInvocation { call_id, tool, input: *input };
                self.tracker.spawn(runtime.tools.clone(), call, self.scope.clone());
                None
            }
            Effect::AwaitToolCalls { .. } => {
                let settlement = self.tracker.wait_all(CLEANUP_GRACE).await;
                for update in settlement.updates {
                    let now = self.now();
                    let input = update.into_input();
                    let todos = self.writes_todos(&input);
                    let _ = self.processor.handle(input, now);
                    if todos {
                        self.publish_todos();
                    }
                }
                (self.processor.waiting() == Waiting::ToolCalls).then_some(Input::GraceElapsed)
            }
            Effect::SessionError(error) => {
                runtime.bus.publish(BusEvent::SessionError { session_id: session_id.clone(), error: *error });
                None
            }
            Effect::Done(result) => {
                self.outcome = Some(result);
                None
            }
        })
    }
}

/// What an item of the provider stream means to the step.
enum StreamItem {
    /// An event for the processor.
    Input(Input),
    /// The stream ended.
    Closed,
    /// The stream failed with this error.
    Failed(MessageError),
}

fn stream_item(item: Option<Result<LlmEvent, LlmError>>, tool_started: bool) -> StreamItem {
    match item {
        Some(Ok(event)) => StreamItem::Input(Input::Event(sane_usage(event))),
        Some(Err(error)) => {
            let error = error.to_message_error();
            // SPEC 7.3: never replay a stream whose tools already ran.
            StreamItem::Failed(if tool_started { retry_unsafe(error) } else { error })
        }
        None => StreamItem::Closed,
    }
}

/// `stream` with its request already on its way: a task reads it up to its first event while
/// the driver commits what is pending (the step's new message, the last step's results), so
/// the provider's request does not wait for the store. Dropping the returned stream
/// stops the task; after the first event the stream is read directly.
pub(super) fn sent_ahead(mut stream: LlmStream) -> LlmStream {
    let first = AbortOnDropHandle::new(tokio::spawn(async move {
        let item = stream.next().await;
        (item, stream)
    }));
    futures_util::stream::once(first)
        .flat_map(|joined| match joined {
            Ok((Some(item), rest)) => {
                futures_util::stream::once(std::future::ready(item)).chain(rest).boxed()
            }
            Ok((None, _)) => futures_util::stream::empty().boxed(),
            Err(error) if error.is_panic() => std::panic::resume_unwind(error.into_panic()),
            // Cancelled: only when the async runtime shuts down under the step.
            Err(_) => futures_util::stream::once(std::future::ready(Err(LlmError::Stream {
                message: "the provider request's task was stopped".to_owned(),
            })))
            .boxed(),
        })
        .boxed()
}

/// Writes collected from consecutive effects, committed together.
#[derive(Default)]
pub(super) struct PendingWrites {
    batch: WriteBatch,
    events: Vec<BusEvent>,
}

impl Runtime {
    /// Commits the pending writes in one transaction, then publishes their events.
    async fn commit_writes(&self, pending: &mut PendingWrites) -> Result<(), RuntimeError> {
        if pending.events.is_empty() {
            return Ok(());
        }
        let batch = std::mem::take(&mut pending.batch);
        self.store.commit(&batch).await?;
        for event in pending.events.drain(..) {
            self.bus.publish(event);
        }
        Ok(())
    }
}

/// More tokens than any model's context or output: a count above it is a provider's error.
const MAX_REPORTED_TOKENS: i64 = 1_000_000_000_000;

/// A step-finish's token counts clamped to `0..=MAX_REPORTED_TOKENS`, with a warning for each
/// count a provider got wrong (negative or absurd); every other event passes unchanged.
fn sane_usage(mut event: LlmEvent) -> LlmEvent {
    if let LlmEvent::StepFinish { usage: Some(usage), .. } = &mut event {
        let counts = [
            ("input", &mut usage.input_tokens),
            ("output", &mut usage.output_tokens),
            ("total", &mut usage.total_tokens),
            ("reasoning", &mut usage.reasoning_tokens),
            ("cache read", &mut usage.cache_read_input_tokens),
            ("cache write", &mut usage.cache_write_input_tokens),
        ];
        for (name, count) in counts {
            if let Some(value) = count
                && !(0..=MAX_REPORTED_TOKENS).contains(value)
            {
                tracing::warn!(
                    count = name,
                    reported = *value,
                    "the provider reported an impossible token count"
                );
                *value = (*value).clamp(0, MAX_REPORTED_TOKENS);
            }
        }
    }
    event
}

/// Marks an error as unsafe to retry: a tool of the failed attempt already ran (SPEC 7.3).
fn retry_unsafe(error: MessageError) -> MessageError {
    let message = format!("{} (not retried: a tool of this step had already started)", error.message());
    let mut metadata = BTreeMap::new();
    metadata.insert("code".to_owned(), session_core::retry::RETRY_UNSAFE_CODE.to_owned());
    MessageError::ApiError {
        message,
        status_code: None,
        is_retryable: false,
        response_headers: None,
        response_body: None,
        metadata: Some(metadata),
    }
}

#[cfg(test)]
mod tests {
    use session_core::{FinishReason, Usage};

    use super::*;

    #[test]
    fn impossible_token_counts_are_clamped() {
        let usage = Usage {
            input_tokens: Some(-5),
            output_tokens: Some(i64::MAX),
            total_tokens: Some(-9),
            reasoning_tokens: Some(7),
            cache_read_input_tokens: None,
            cache_write_input_tokens: Some(0),
        };
        let event = LlmEvent::StepFinish {
            index: 0,
            reason: FinishReason::Stop,
            usage: Some(usage),
            provider_metadata: None,
        };
        let LlmEvent::StepFinish { usage: Some(clamped), .. } = sane_usage(event) else { unreachable!() };
        assert_eq!(
            (clamped.input_tokens, clamped.output_tokens, clamped.total_tokens, clamped.reasoning_tokens),
            (Some(0), Some(MAX_REPORTED_TOKENS), Some(0), Some(7))
        );
        assert_eq!((clamped.cache_read_input_tokens, clamped.cache_write_input_tokens), (None, Some(0)));
    }
}
