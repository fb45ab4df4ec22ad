//! The prompt loop (SPEC 12): a prompt is stored and run, or joins the loop already running in
//! the session; the loop asks session-core's `prompt_loop` what to do next and carries it out.

use session_core::prompt_loop::{
    AfterStep, CompactionGuard, LoopView, NextTask, StructuredSettlement, after_step, finish_error,
    needs_overflow_compaction, next_task, structured_settlement, with_reminders,
};
use session_core::{
    AssistantMessage, FinishReason, Message, MessageError, MessageWithParts, SessionId, UserMessage,
    permission::Rule, processor::Outcome,
};
use session_store::StoreError;
use tokio_util::sync::CancellationToken;

use super::agent::with_session_rules;
use super::ahead::RequestAhead;
use super::bus::BusEvent;
use super::error::RuntimeError;
use super::history_mirror::HistoryMirror;
use super::inputs::PromptInput;
use super::request::StepRequest;
use super::runs::RunGuard;
use super::runtime::Runtime;
use super::status::SessionStatus;
use super::step::{StepContext, StepDriver};
use super::structured::{StructuredOutput, missing_output_error};

/// What joined prompts get when the run they joined ended without a result (its future was
/// dropped).
const RUN_DROPPED: &str = "the run this prompt joined was stopped before it finished";

/// Two compactions with no completed step between them mean compaction cannot free the
/// context; the loop stops instead of spinning.
const LOOPING_COMPACTION: &str = "Compaction did not free enough context to continue; stopping instead of \
compacting again. Start a new session or use a model with a larger context.";

impl Runtime {
    /// Runs `input` in the session until the model is done (SPEC 12) and returns the last
    /// assistant message; a run that failed returns its message with the `error` set.
    ///
    /// A prompt sent while another runs in the session in this process joins that run (SPEC
    /// 12 step 11): its user message is stored at once, the running loop answers it (wrapped
    /// in a system reminder, step 8), and the call returns what the run returns. While a
    /// revert runs it is refused with [`RuntimeError::Busy`]; while another process holds the
    /// session's lease, with [`RuntimeError::LeasedElsewhere`]. A revert pending on the
    /// session becomes final first: the messages after its point are deleted (SPEC 13
    /// `cleanup`).
    pub async fn prompt(
        &self,
        session_id: &SessionId,
        input: PromptInput,
    ) -> Result<AssistantMessage, RuntimeError> {
        self.prompt_with(session_id, input, None).await
    }

    /// [`Runtime::prompt`] in a session just created, with the first step's request sent
    /// ahead ([`Runtime::send_ahead`]): the step uses its stream when it would send the same
    /// request, else drops it and sends its own.
    pub async fn prompt_with(
        &self,
        session_id: &SessionId,
        input: PromptInput,
        ahead: Option<RequestAhead>,
    ) -> Result<AssistantMessage, RuntimeError> {
        let mut written = false;
        loop {
            if let Some(guard) = self.runs.begin(session_id, true) {
                return self.run_owned(session_id, &input, written, guard, ahead).await;
            }
            if !self.runs.is_joinable(session_id) {
                return Err(RuntimeError::Busy(session_id.clone()));
            }
            if !written {
                self.write_prompt_message(session_id, &input).await?;
                written = true;
            }
            // The run may have ended while the message was written: then this prompt runs it.
            let Some(mut finished) = self.runs.join(session_id) else { continue };
            let result = match finished.wait_for(Option::is_some).await {
                Ok(result) => result.clone().unwrap_or_else(|| Err(RUN_DROPPED.to_owned())),
                Err(_) => Err(RUN_DROPPED.to_owned()),
            };
            return result.map_err(RuntimeError::JoinedRunFailed);
        }
    }

    /// The run of the prompt that found the session idle: the lease, the loop (again while
    /// prompts join it), then the lease released and the status idle.
    async fn run_owned(
        &self,
        session_id: &SessionId,
        input: &PromptInput,
        written: bool,
        guard: RunGuard<'_>,
        mut ahead: Option<RequestAhead>,
    ) -> Result<AssistantMessage, RuntimeError> {
        let run = guard.run;
        let cancel = &guard.cancel;
        if let Err(error) = self.acquire_lease(session_id).await {
            let result = Err(error);
            self.runs.end(session_id, run, 0, &result, false);
            return result;
        }
        // A message that cannot be stored ends the run like a failed loop would.
        let mut unwritten =
            if written { None } else { self.write_prompt_message(session_id, input).await.err() };
        loop {
            let seen = self.runs.joins(session_id, run);
            let mut history = HistoryMirror::default();
            let outcome = match unwritten.take() {
                Some(error) => Err(error),
                None => self.run_loop(session_id, cancel, ahead.take(), &mut history).await,
            };
            // The last summary diffs are written while the run still holds the session, from
            // the loop's own history brought up to date (its newest messages only).
            self.finish_summaries(session_id, &mut history).await;
            self.fork_housekeeping();
            if let Err(error) = self.store.flush().await {
                tracing::warn!(%error, "flushing the store after a run failed");
            }
            let stop = outcome.is_err() || cancel.is_cancelled();
            if !stop && self.runs.joins(session_id, run) != seen {
                continue;
            }
            if let Err(error) = self.store.release_lease(session_id).await {
                tracing::warn!(%error, "releasing the session lease failed");
            }
            if stop {
                // The run is over for good: it leaves the table before idle is published, so a
                // client that reacts to idle starts a run of its own instead of joining this one.
                self.runs.end(session_id, run, seen, &outcome, false);
                self.set_status(session_id, SessionStatus::Idle);
                return outcome;
            }
            // As above, idle follows the run's end, so that a client reacting to it (an undo
            // in the terminal UI) finds the session free; a prompt that joined keeps it busy.
            if self.runs.end(session_id, run, seen, &outcome, true) {
                self.set_status(session_id, SessionStatus::Idle);
                return outcome;
            }
            // A prompt joined after the loop's last look at the history: answer it too.
            if let Err(error) = self.acquire_lease(session_id).await {
                let failed = Err(error);
                self.runs.end(session_id, run, seen, &failed, false);
                return failed;
            }
        }
    }

    async fn acquire_lease(&self, session_id: &SessionId) -> Result<(), RuntimeError> {
        self.store.acquire_lease(session_id).await.map(drop).map_err(|error| match error {
            // Another process runs this session: say so plainly.
            StoreError::Leased { session_id, owner, expires_at } => {
                RuntimeError::LeasedElsewhere { session_id, owner, expires_at }
            }
            other => other.into(),
        })
    }

    /// Stores the prompt's user message: the agent, model and format checked, a pending
    /// revert made final first; the session then records the message's agent and model.
    async fn write_prompt_message(
        &self,
        session_id: &SessionId,
        input: &PromptInput,
    ) -> Result<UserMessage, RuntimeError> {
        let prompt = self.sources().resolve_prompt(input)?;
        // A pending revert becomes final when the session moves on (SPEC 13 `cleanup`).
        self.cleanup_revert(session_id).await?;
        let user = self
            .write_user_message_as(
                input.message_id.clone(),
                session_id,
                &prompt.agent.name,
                &prompt.model,
                input.format.clone(),
                prompt.parts,
            )
            .await?;
        // The session record names the agent and model its newest prompt runs with.
        self.note_agent_model(session_id, &user.agent, &user.model, user.time.created).await?;
        Ok(user)
    }

    /// The loop of SPEC 12: a step per pass until the model is done, the run is cancelled or
    /// a step stops it; compaction tasks are carried out as they come.
    async fn run_loop(
        &self,
        session_id: &SessionId,
        cancel: &CancellationToken,
        mut ahead: Option<RequestAhead>,
        history: &mut HistoryMirror,
    ) -> Result<AssistantMessage, RuntimeError> {
        // The session's own rules are read once per run: they are set when it is created.
        let session_rules = self.store.get_session(session_id).await?.permission;
        let mut step: u32 = 0;
        let mut guard = CompactionGuard::default();
        let mut last: Option<AssistantMessage> = None;
        // The snapshot the last step closed on when the loop went straight on from it.
        let mut boundary: Option<String> = None;
        while !cancel.is_cancelled() {
            let start_snapshot = boundary.take();
            self.set_status(session_id, SessionStatus::Busy);
            history.refresh(self.store.as_ref(), session_id).await?;
            // The previous step's summary diffs work on this read of the history.
            self.start_summary(session_id, history.shared());
            let messages = history.compacted();
            let (view, task) = next_task(&messages).map_err(|_| RuntimeError::NoUserMessage)?;
            let last_user = view.last_user;
            let task = match task {
                NextTask::Done(answer) => {
                    last = Some(answer.clone());
                    break;
                }
                NextTask::Compact(task) => Some(task),
                NextTask::Step => None,
            };
            step += 1;
            if step == 1 {
                self.fork_title(session_id, &messages);
            }
            if let Some(task) = task {
                if !guard.allow_compaction() {
                    let error = MessageError::ContextOverflowError {
                        message: LOOPING_COMPACTION.to_owned(),
                        response_body: None,
                    };
                    self.bus.publish(BusEvent::SessionError { session_id: session_id.clone(), error });
                    return Err(RuntimeError::CompactionLoop);
                }
                let (outcome, summary) = self.compact(session_id, &messages, task, last_user, cancel).await?;
                // A failed summary is what the run ends with (its error says why).
                last = Some(summary);
                if outcome == Outcome::Stop {
                    break;
                }
                continue;
            }
            let carried = Carried { ahead: if step == 1 { ahead.take() } else { None }, start_snapshot };
            match self.step(session_id, &messages, view, (step, &session_rules), cancel, carried).await? {
                StepEnd::Answer(message) => {
                    last = Some(message);
                    break;
                }
                StepEnd::Compacting => {}
                StepEnd::Continued { message, after, closing_snapshot } => {
                    match after {
                        AfterStep::Stop => {
                            last = Some(message);
                            break;
                        }
                        AfterStep::Compact { overflow } => {
                            self.create_compaction(session_id, last_user, overflow).await?;
                        }
                        AfterStep::Continue => {
                            guard.step_continued(message.finish.is_some());
                            boundary = closing_snapshot;
                        }
                    }
                    last = Some(message);
                }
            }
        }
        if session_core::compaction::prune_enabled(&self.settings.compaction) {
            self.prune(session_id).await;
        }
        last.ok_or(RuntimeError::NoAssistantMessage)
    }

    /// One model step for the newest user message (SPEC 12 steps 3, 6 to 10).
    async fn step(
        &self,
        session_id: &SessionId,
        messages: &[MessageWithParts],
        view: LoopView<'_>,
        (step, session_rules): (u32, &[Rule]),
        cancel: &CancellationToken,
        carried: Carried,
    ) -> Result<StepEnd, RuntimeError> {
        let LoopView { last_user, last_finished } = view;
        // The newest user message decides the agent, the model and the format (SPEC 12 step 3).
        let model = last_user.model.clone();
        let Some(agent) = self.agents.get(&last_user.agent) else {
            let error =
                RuntimeError::AgentNotFound { name: last_user.agent.clone(), available: self.agent_names() };
            self.bus.publish(BusEvent::SessionError {
                session_id: session_id.clone(),
                error: MessageError::UnknownError { message: error.to_string() },
            });
            return Err(error);
        };
        let agent = &*with_session_rules(agent, session_rules);
        let structured = StructuredOutput::for_format(last_user.format.as_ref())?;
        let entry = self.provider_for(&model)?;
        let catalog = self.model_for(&model)?;
        if needs_overflow_compaction(
            last_finished,
            &self.settings.compaction,
            &catalog.limit,
            self.settings.output_token_max,
        ) {
            self.create_compaction(session_id, last_user, false).await?;
            return Ok(StepEnd::Compacting);
        }

        let assistant = self.new_assistant(session_id, last_user, &agent.name, &model);
        self.store.upsert_message(&Message::Assistant(assistant.clone())).await?;
        self.bus.publish(BusEvent::assistant(&assistant));

        // From the second step on, prompts joined since the last answer are wrapped (step 8).
        let reminded = if step > 1 { with_reminders(messages, last_finished) } else { messages.into() };
        let request = self
            .sources()
            .request(StepRequest {
                session_id,
                messages: &reminded,
                agent,
                model: &model,
                provider: &entry,
                catalog: &catalog,
                step,
                structured: structured.as_ref(),
                cancel: cancel.child_token(),
            })
            .await?;
        // A new session's first request may have left before the session was stored.
        let sent = carried.ahead.and_then(|ahead| ahead.adopt(&model.provider_id, &request));
        let processor = self.processor_for(assistant.clone(), &catalog, &request.tools);
        let context = StepContext {
            session_id,
            message_id: assistant.id.clone(),
            agent,
            provider: &entry,
            cancel,
            structured: structured.as_ref(),
        };
        let run = StepDriver::new(self, context, processor)
            .with_sent(sent)
            .with_start_snapshot(carried.start_snapshot)
            .run(request)
            .await?;
        let (outcome, mut message) = (run.outcome, run.message);
        self.mark_summary(session_id, &message.parent_id);
        // SPEC 12 step 10, in OpenCode 1.18.34's order: a captured structured answer, then a
        // blocked answer (ContentFilterError), then a reply without the structured answer.
        let captured = structured.as_ref().and_then(|structured| structured.take());
        let settlement = match &structured {
            Some(_) => structured_settlement(captured.is_some(), &message),
            None => StructuredSettlement::Pending,
        };
        let error = match settlement {
            StructuredSettlement::Captured => None,
            _ => finish_error(&message)
                .or_else(|| (settlement == StructuredSettlement::Missing).then(missing_output_error)),
        };
        if let Some(value) = captured {
            message.structured = Some(value);
            message.finish.get_or_insert(FinishReason::Stop);
        } else if let Some(error) = &error {
            message.error = Some(error.clone());
        } else {
            // Nothing settled the run: the loop decides as usual.
            let after = after_step(outcome, &message);
            return Ok(StepEnd::Continued { message, after, closing_snapshot: run.closing_snapshot });
        }
        self.store.upsert_message(&Message::Assistant(message.clone())).await?;
        self.bus.publish(BusEvent::assistant(&message));
        if let Some(error) = error {
            self.bus.publish(BusEvent::SessionError { session_id: session_id.clone(), error });
        }
        Ok(StepEnd::Answer(message))
    }
}

/// How a step of the loop ended.
enum StepEnd {
    /// A structured answer (or its absence) or a blocked answer ended the run with this message.
    Answer(AssistantMessage),
    /// The overflow pre-check wrote a compaction request instead of running the step.
    Compacting,
    /// The step ran; the loop does what `after` says.
    Continued {
        /// The step's final message.
        message: AssistantMessage,
        /// What follows.
        after: AfterStep,
        /// The snapshot the step closed on, for the next step's start.
        closing_snapshot: Option<String>,
    },
}

/// What a step takes over from before it.
struct Carried {
    /// The first request, sent ahead of the session's store (step 1 of a new session).
    ahead: Option<RequestAhead>,
    /// The previous step's closing snapshot, when the loop went straight on from it.
    start_snapshot: Option<String>,
}
