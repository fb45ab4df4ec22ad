//! The prompt loop (SPEC 12) and the driver of one processor run (SPEC 4, 7, 8).

use std::collections::{BTreeMap, HashMap};
use std::path::PathBuf;
use std::sync::{Arc, Mutex, MutexGuard};

use futures_util::StreamExt as _;
use session_core::{
    AssistantContent, AssistantMessage, AssistantTime, CompactionConfig, CompactionPart, CreatedTime, Effect,
    FinishReason, IdGenerator, Input, Message, MessageError, MessageId, MessagePath, MessageWithParts,
    ModelMessage, ModelRef, ModelTarget, Outcome, OutputFormat, Part, PartId, PartKind, Processor,
    ProcessorConfig, ProcessorError, RetryConfig, RetryDecision, RetryRequest, SessionId, TextPart,
    ToModelOptions, TokenUsage, ToolCallRef, UserMessage, Waiting, compaction_history, continue_part, decide,
    disabled_tools, filter_compacted, is_overflow, preserve_budget, replay_parts, replay_user_message,
    select_tail, summary_message, summary_prompt, summary_request, tail_turns, to_model_messages,
    too_large_error, usable,
};
use session_llm::{CatalogModel, LlmRequest, Provider, RequestOptions, ToolChoice, ToolSpec};
use session_store::{NewSession, PartDelta, Session, Store, StoreError, WriteBatch};
use session_tools::{CLEANUP_GRACE, CallScope, CallTracker, ToolExecutor, ToolInvocation};
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::agent::{Agent, MAX_STEPS_TEXT, environment_prompt, utc_date};
use super::bus::{Bus, BusEvent};
use super::clock::{Clock, HashEntropy, Sleeper};
use super::error::RuntimeError;
use super::snapshot::Snapshotter;
use super::status::SessionStatus;
use super::structured::{
    STRUCTURED_OUTPUT_INSTRUCTION, STRUCTURED_OUTPUT_TOOL, StructuredOutput, missing_output_error,
};

/// What joined prompts get when the run they joined ended without a result (its future was
/// dropped).
const RUN_DROPPED: &str = "the run this prompt joined was stopped before it finished";

/// A provider the runtime can call, with what it needs to know about it.
#[derive(Clone)]
pub struct ProviderEntry {
    /// The provider's client.
    pub client: Arc<dyn Provider>,
    /// The AI SDK package naming its wire format (drives history conversion details).
    pub npm: String,
    /// Its retry policy (`provider.<id>.options.retry`), if configured.
    pub retry: Option<RetryConfig>,
}

impl std::fmt::Debug for ProviderEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderEntry")
            .field("npm", &self.npm)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

/// Finds the provider client and the catalog entry for a model.
pub trait ModelSource: Send + Sync {
    /// The provider entry for `provider_id`, or `None` when it is not set up.
    fn provider(&self, provider_id: &str) -> Option<ProviderEntry>;
    /// The model's limits and prices, or `None` when unknown.
    fn model(&self, provider_id: &str, model_id: &str) -> Option<CatalogModel>;
}

/// Settings of the loop, from configuration.
#[derive(Debug, Clone)]
pub struct RuntimeSettings {
    /// Compaction settings.
    pub compaction: CompactionConfig,
    /// `experimental.continue_loop_on_deny`.
    pub continue_loop_on_deny: bool,
    /// The output token ceiling (SPEC 6; 32 000 unless configured).
    pub output_token_max: u64,
    /// The model used when a prompt names none.
    pub default_model: ModelRef,
    /// The project's working tree.
    pub worktree: PathBuf,
    /// Extra text for the system prompt (the project's AGENTS.md).
    pub instructions: Option<String>,
}

/// What the user sends.
#[derive(Debug, Clone, Default)]
pub struct PromptInput {
    /// The message text.
    pub text: String,
    /// The agent to use (default `build`).
    pub agent: Option<String>,
    /// The model to use (default from settings).
    pub model: Option<ModelRef>,
    /// The answer's format: a JSON schema makes the model answer through the
    /// `StructuredOutput` tool and the message carry the result in `structured`.
    pub format: Option<OutputFormat>,
}

/// The handles a runtime is built from; no globals, nothing read from the environment.
pub struct RuntimeParts {
    /// Sessions, messages and parts.
    pub store: Arc<dyn Store>,
    /// Providers and the catalog.
    pub models: Arc<dyn ModelSource>,
    /// Tool execution (with its permission engine).
    pub tools: Arc<ToolExecutor>,
    /// Working-tree snapshots.
    pub snapshots: Arc<dyn Snapshotter>,
    /// The clock.
    pub clock: Arc<dyn Clock>,
    /// The sleeper used for retry backoff.
    pub sleeper: Arc<dyn Sleeper>,
    /// Agents by name (at least `build`).
    pub agents: BTreeMap<String, Agent>,
    /// Loop settings.
    pub settings: RuntimeSettings,
}

/// Two compactions with no completed step between them mean compaction cannot free the
/// context; the loop stops instead of spinning.
const LOOPING_COMPACTION: &str = "Compaction did not free enough context to continue; stopping instead of \
compacting again. Start a new session or use a model with a larger context.";

/// The engine: runs prompts through the agent loop.
pub struct Runtime {
    pub(super) store: Arc<dyn Store>,
    models: Arc<dyn ModelSource>,
    tools: Arc<ToolExecutor>,
    pub(super) snapshots: Arc<dyn Snapshotter>,
    clock: Arc<dyn Clock>,
    sleeper: Arc<dyn Sleeper>,
    agents: BTreeMap<String, Agent>,
    settings: RuntimeSettings,
    pub(super) bus: Bus,
    pub(super) runs: Mutex<HashMap<SessionId, RunEntry>>,
    /// Numbers runs so a finished run's guard never removes a newer run's entry.
    run_counter: std::sync::atomic::AtomicU64,
    ids: Mutex<(IdGenerator, HashEntropy)>,
}

/// What a finished run hands the prompts that joined it: its last assistant message, or the
/// text of its error.
type RunResult = Result<AssistantMessage, String>;

/// A run in progress in this process: a prompt loop, or a revert.
pub(super) struct RunEntry {
    /// Which run this is (see [`Runtime::run_counter`]).
    run: u64,
    /// Cancels the run.
    pub(super) cancel: CancellationToken,
    /// Filled once when a prompt loop ends; `None` for a revert, which prompts cannot join.
    finished: Option<watch::Sender<Option<RunResult>>>,
    /// How many prompts joined: each stored its user message for the running loop to answer.
    joins: u64,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("agents", &self.agents.keys()).finish_non_exhaustive()
    }
}

/// Removes a session's run entry when the run ends, however it ends.
pub(super) struct RunGuard<'a> {
    pub(super) runtime: &'a Runtime,
    pub(super) session_id: SessionId,
    pub(super) run: u64,
}

impl Drop for RunGuard<'_> {
    fn drop(&mut self) {
        let mut runs = lock(&self.runtime.runs);
        if runs.get(&self.session_id).is_some_and(|entry| entry.run == self.run) {
            runs.remove(&self.session_id);
        }
    }
}

pub(super) fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic elsewhere must not wedge every later run.
    mutex.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// What one assistant step needs besides the processor.
struct StepContext<'a> {
    session_id: &'a SessionId,
    message_id: MessageId,
    agent: &'a Agent,
    provider: &'a ProviderEntry,
    cancel: &'a CancellationToken,
    /// The step's structured-output capture, when the user asked for a schema.
    structured: Option<&'a StructuredOutput>,
}

impl Runtime {
    /// A runtime over `parts`.
    pub fn new(parts: RuntimeParts) -> Self {
        Self {
            store: parts.store,
            models: parts.models,
            tools: parts.tools,
            snapshots: parts.snapshots,
            clock: parts.clock,
            sleeper: parts.sleeper,
            agents: parts.agents,
            settings: parts.settings,
            bus: Bus::default(),
            runs: Mutex::new(HashMap::new()),
            run_counter: std::sync::atomic::AtomicU64::new(0),
            ids: Mutex::new((IdGenerator::new(), HashEntropy::default())),
        }
    }

    /// The event bus.
    pub fn bus(&self) -> &Bus {
        &self.bus
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Creates a session in the worktree.
    pub async fn create_session(&self, title: Option<String>) -> Result<Session, RuntimeError> {
        let directory = self.settings.worktree.to_string_lossy().into_owned();
        let session = self
            .store
            .create_session(NewSession {
                id: None,
                project_id: directory.clone(),
                directory,
                title,
                parent_id: None,
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            })
            .await?;
        self.bus.publish(BusEvent::SessionCreated { info: Box::new(session.clone()) });
        Ok(session)
    }

    /// Cancels the session's run, if one is going, and returns true; with nothing running it
    /// sets the status idle and returns false (SPEC 11 `cancel`).
    pub fn cancel(&self, session_id: &SessionId) -> bool {
        let running = match lock(&self.runs).get(session_id) {
            Some(entry) => {
                entry.cancel.cancel();
                true
            }
            None => false,
        };
        if !running {
            self.set_status(session_id, SessionStatus::Idle);
        }
        running
    }

    /// True while a prompt (or a revert) runs in the session in this process.
    pub fn is_busy(&self, session_id: &SessionId) -> bool {
        lock(&self.runs).contains_key(session_id)
    }

    fn next_id<T: session_core::Identifier>(&self) -> T {
        let now = self.clock.now_ms();
        let mut ids = lock(&self.ids);
        let (generator, entropy) = &mut *ids;
        generator.next(now, entropy)
    }

    fn jitter(&self) -> f64 {
        lock(&self.ids).1.unit()
    }

    fn set_status(&self, session_id: &SessionId, status: SessionStatus) {
        let idle = status == SessionStatus::Idle;
        self.bus.publish(BusEvent::SessionStatus { session_id: session_id.clone(), status });
        if idle {
            self.bus.publish(BusEvent::SessionIdle { session_id: session_id.clone() });
        }
    }

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
        let mut written = false;
        loop {
            if let Some((guard, cancel)) = self.begin_run(session_id, true) {
                return self.run_owned(session_id, &input, written, guard, &cancel).await;
            }
            if !self.is_joinable(session_id) {
                return Err(RuntimeError::Busy(session_id.clone()));
            }
            if !written {
                self.write_prompt_message(session_id, &input).await?;
                written = true;
            }
            // The run may have ended while the message was written: then this prompt runs it.
            let Some(mut finished) = self.join_run(session_id) else { continue };
            let result = match finished.wait_for(Option::is_some).await {
                Ok(result) => result.clone().unwrap_or_else(|| Err(RUN_DROPPED.to_owned())),
                Err(_) => Err(RUN_DROPPED.to_owned()),
            };
            return result.map_err(RuntimeError::JoinedRunFailed);
        }
    }

    /// Registers a run of the session, or `None` when one is going. A `joinable` run (a
    /// prompt loop) lets later prompts join it; a revert does not.
    pub(super) fn begin_run(
        &self,
        session_id: &SessionId,
        joinable: bool,
    ) -> Option<(RunGuard<'_>, CancellationToken)> {
        let mut runs = lock(&self.runs);
        if runs.contains_key(session_id) {
            return None;
        }
        let run = self.run_counter.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let cancel = CancellationToken::new();
        let finished = joinable.then(|| watch::channel(None).0);
        runs.insert(session_id.clone(), RunEntry { run, cancel: cancel.clone(), finished, joins: 0 });
        Some((RunGuard { runtime: self, session_id: session_id.clone(), run }, cancel))
    }

    fn is_joinable(&self, session_id: &SessionId) -> bool {
        lock(&self.runs).get(session_id).is_none_or(|entry| entry.finished.is_some())
    }

    /// Tells the session's running loop that a prompt joined; `None` when no loop runs.
    fn join_run(&self, session_id: &SessionId) -> Option<watch::Receiver<Option<RunResult>>> {
        let mut runs = lock(&self.runs);
        let entry = runs.get_mut(session_id)?;
        let receiver = entry.finished.as_ref()?.subscribe();
        entry.joins += 1;
        Some(receiver)
    }

    fn joins(&self, session_id: &SessionId, run: u64) -> u64 {
        lock(&self.runs).get(session_id).filter(|entry| entry.run == run).map_or(0, |entry| entry.joins)
    }

    /// Ends the run unless a prompt joined since `seen`: removes its entry and hands its
    /// result to the joined prompts. Returns false (and keeps the run) when one joined.
    fn end_run(
        &self,
        session_id: &SessionId,
        run: u64,
        seen: u64,
        result: &Result<AssistantMessage, RuntimeError>,
        may_continue: bool,
    ) -> bool {
        let mut runs = lock(&self.runs);
        let Some(entry) = runs.get(session_id).filter(|entry| entry.run == run) else { return true };
        if may_continue && entry.joins != seen {
            return false;
        }
        if let Some(entry) = runs.remove(session_id)
            && let Some(finished) = entry.finished
        {
            let shared = match result {
                Ok(message) => Ok(message.clone()),
                Err(error) => Err(error.to_string()),
            };
            finished.send_replace(Some(shared));
        }
        true
    }

    /// The run of the prompt that found the session idle: the lease, the loop (again while
    /// prompts join it), then the lease released and the status idle.
    async fn run_owned(
        &self,
        session_id: &SessionId,
        input: &PromptInput,
        written: bool,
        guard: RunGuard<'_>,
        cancel: &CancellationToken,
    ) -> Result<AssistantMessage, RuntimeError> {
        let run = guard.run;
        if let Err(error) = self.acquire_lease(session_id).await {
            let result = Err(error);
            self.end_run(session_id, run, 0, &result, false);
            return result;
        }
        // A message that cannot be stored ends the run like a failed loop would.
        let mut unwritten =
            if written { None } else { self.write_prompt_message(session_id, input).await.err() };
        loop {
            let seen = self.joins(session_id, run);
            let outcome = match unwritten.take() {
                Some(error) => Err(error),
                None => self.run_loop(session_id, cancel).await,
            };
            if let Err(error) = self.store.flush().await {
                tracing::warn!(%error, "flushing the store after a run failed");
            }
            let stop = outcome.is_err() || cancel.is_cancelled();
            if !stop && self.joins(session_id, run) != seen {
                continue;
            }
            if let Err(error) = self.store.release_lease(session_id).await {
                tracing::warn!(%error, "releasing the session lease failed");
            }
            self.set_status(session_id, SessionStatus::Idle);
            if self.end_run(session_id, run, seen, &outcome, !stop) {
                return outcome;
            }
            // A prompt joined after the loop's last look at the history: answer it too.
            if let Err(error) = self.acquire_lease(session_id).await {
                let failed = Err(error);
                self.end_run(session_id, run, seen, &failed, false);
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
    /// revert made final first.
    async fn write_prompt_message(
        &self,
        session_id: &SessionId,
        input: &PromptInput,
    ) -> Result<UserMessage, RuntimeError> {
        let agent_name = input.agent.clone().unwrap_or_else(|| "build".to_owned());
        let agent = self.agents.get(&agent_name).ok_or_else(|| RuntimeError::AgentNotFound {
            name: agent_name.clone(),
            available: self.agents.keys().cloned().collect::<Vec<_>>().join(", "),
        })?;
        let model = input
            .model
            .clone()
            .or_else(|| agent.model.as_deref().and_then(parse_model_ref))
            .unwrap_or_else(|| self.settings.default_model.clone());
        if let Some(OutputFormat::JsonSchema { schema, .. }) = &input.format {
            StructuredOutput::new(schema).map_err(RuntimeError::InvalidSchema)?;
        }
        // A pending revert becomes final when the session moves on (SPEC 13 `cleanup`).
        self.cleanup_revert(session_id).await?;
        self.write_user_message(
            session_id,
            &agent.name,
            &model,
            input.format.clone(),
            vec![text_part(&input.text)],
        )
        .await
    }

    async fn run_loop(
        &self,
        session_id: &SessionId,
        cancel: &CancellationToken,
    ) -> Result<AssistantMessage, RuntimeError> {
        let mut step: u32 = 0;
        let mut compactions_without_step = 0u32;
        let mut last: Option<AssistantMessage> = None;
        loop {
            if cancel.is_cancelled() {
                break;
            }
            self.set_status(session_id, SessionStatus::Busy);
            let history = self.store.load_history(session_id).await?.messages;
            let messages: Vec<MessageWithParts> = filter_compacted(&history).into_iter().cloned().collect();
            let Some(last_user) = messages.iter().rev().find_map(|m| match &m.info {
                Message::User(user) => Some(user.clone()),
                Message::Assistant(_) => None,
            }) else {
                return Err(RuntimeError::NoUserMessage);
            };
            let last_assistant = messages.iter().rev().find(|m| matches!(m.info, Message::Assistant(_)));
            if let Some(assistant) = last_assistant
                && let Message::Assistant(info) = &assistant.info
                && info.finish.is_some_and(|f| f != FinishReason::ToolCalls)
                && !has_pending_tool_work(assistant)
                && last_user.id < info.id
            {
                last = Some(info.clone());
                break;
            }
            let last_finished = messages.iter().rev().find_map(|m| match &m.info {
                Message::Assistant(a) if a.finish.is_some() => Some(a.clone()),
                _ => None,
            });
            step += 1;

            // A compaction request newer than the last finished answer is the next task.
            let task = messages.iter().rev().find_map(|m| {
                if last_finished.as_ref().is_some_and(|f| m.info.id() <= &f.id) {
                    return None;
                }
                m.parts.iter().find_map(|p| match &p.kind {
                    PartKind::Compaction(c) => Some((m.info.id().clone(), p.id.clone(), c.clone())),
                    _ => None,
                })
            });
            if let Some((parent_id, part_id, compaction)) = task {
                compactions_without_step += 1;
                if compactions_without_step > 1 {
                    let error = MessageError::ContextOverflowError {
                        message: LOOPING_COMPACTION.to_owned(),
                        response_body: None,
                    };
                    self.bus.publish(BusEvent::SessionError {
                        session_id: session_id.clone(),
                        error: error.clone(),
                    });
                    return Err(RuntimeError::CompactionLoop);
                }
                let (outcome, summary) = self
                    .compact(session_id, &messages, &parent_id, &part_id, &compaction, &last_user, cancel)
                    .await?;
                // A failed summary is what the run ends with (its error says why).
                last = Some(summary);
                if outcome == Outcome::Stop {
                    break;
                }
                continue;
            }

            // The newest user message decides the agent, the model and the format (SPEC 12 step 3).
            let model = last_user.model.clone();
            let Some(agent) = self.agents.get(&last_user.agent) else {
                let error = RuntimeError::AgentNotFound {
                    name: last_user.agent.clone(),
                    available: self.agents.keys().cloned().collect::<Vec<_>>().join(", "),
                };
                self.bus.publish(BusEvent::SessionError {
                    session_id: session_id.clone(),
                    error: MessageError::UnknownError { message: error.to_string() },
                });
                return Err(error);
            };
            let structured = match &last_user.format {
                Some(OutputFormat::JsonSchema { schema, .. }) => {
                    Some(StructuredOutput::new(schema).map_err(RuntimeError::InvalidSchema)?)
                }
                Some(OutputFormat::Text) | None => None,
            };
            let entry = self.provider_for(&model)?;
            let catalog = self.model_for(&model, &entry)?;
            if let Some(finished) = &last_finished
                && !finished.is_summary()
                && is_overflow(
                    &self.settings.compaction,
                    &finished.tokens,
                    &catalog.limit,
                    self.settings.output_token_max,
                )
            {
                self.create_compaction(session_id, &last_user, false).await?;
                continue;
            }

            let is_last_step = agent.steps.is_some_and(|max| step >= max);
            let assistant = self.new_assistant(session_id, &last_user, &agent.name, &model);
            self.store.upsert_message(&Message::Assistant(assistant.clone())).await?;
            self.bus.publish(BusEvent::assistant(&assistant));

            let target = ModelTarget::new(&model.provider_id, &model.model_id, &catalog.id, &entry.npm);
            let mut model_messages = to_model_messages(&messages, &target, &ToModelOptions::default());
            if step > 1 {
                wrap_reminders(&mut model_messages, &messages, last_finished.as_ref());
            }
            if is_last_step {
                model_messages.push(ModelMessage::Assistant {
                    content: vec![AssistantContent::Text {
                        text: MAX_STEPS_TEXT.to_owned(),
                        provider_options: None,
                    }],
                });
            }
            let tool_names = self.tools.registry().names().into_iter().map(str::to_owned).collect::<Vec<_>>();
            let disabled = disabled_tools(&tool_names, &agent.ruleset);
            let mut tools: Vec<ToolSpec> = self
                .tools
                .registry()
                .definitions(&disabled)
                .into_iter()
                .map(|d| ToolSpec { name: d.name, description: d.description, input_schema: d.parameters })
                .collect();
            let mut system = vec![agent.prompt.clone(), self.environment()];
            let mut options = RequestOptions::default();
            if let Some(structured) = &structured {
                tools.push(structured.tool());
                system.push(STRUCTURED_OUTPUT_INSTRUCTION.to_owned());
                options.tool_choice = Some(ToolChoice::Required);
            }
            let request = LlmRequest {
                model: catalog.id.clone(),
                system,
                messages: model_messages,
                tools,
                max_output_tokens: u32::try_from(session_core::max_output_tokens(
                    &catalog.limit,
                    self.settings.output_token_max,
                ))
                .ok(),
                options,
                cancel: cancel.child_token(),
            };
            let processor = Processor::new(
                assistant.clone(),
                ProcessorConfig {
                    cost: catalog.cost.clone(),
                    limit: catalog.limit,
                    compaction: self.settings.compaction.clone(),
                    continue_loop_on_deny: self.settings.continue_loop_on_deny,
                },
                Box::new(HashEntropy::default()),
            );
            let context = StepContext {
                session_id,
                message_id: assistant.id.clone(),
                agent,
                provider: &entry,
                cancel,
                structured: structured.as_ref(),
            };
            let (outcome, mut message) = self.process(&context, processor, request).await?;
            if let Some(structured) = &structured {
                // SPEC 12 step 10: a captured answer ends the run; a finished reply without one fails it.
                let captured = structured.take();
                let finished_without = captured.is_none()
                    && message.error.is_none()
                    && message
                        .finish
                        .is_some_and(|f| f != FinishReason::ToolCalls && f != FinishReason::Unknown);
                if captured.is_some() || finished_without {
                    if let Some(value) = captured {
                        message.structured = Some(value);
                        message.finish.get_or_insert(FinishReason::Stop);
                    } else {
                        let error = missing_output_error();
                        self.bus.publish(BusEvent::SessionError {
                            session_id: session_id.clone(),
                            error: error.clone(),
                        });
                        message.error = Some(error);
                    }
                    self.store.upsert_message(&Message::Assistant(message.clone())).await?;
                    self.bus.publish(BusEvent::assistant(&message));
                    last = Some(message);
                    break;
                }
            }
            last = Some(message.clone());
            match outcome {
                Outcome::Stop => break,
                Outcome::Compact => {
                    self.create_compaction(session_id, &last_user, message.finish.is_none()).await?;
                }
                Outcome::Continue => {
                    if message.finish.is_some() {
                        compactions_without_step = 0;
                    }
                }
            }
            if cancel.is_cancelled() {
                break;
            }
        }
        if session_core::prune_enabled(&self.settings.compaction) {
            self.prune(session_id).await;
        }
        last.ok_or(RuntimeError::NoAssistantMessage)
    }

    fn environment(&self) -> String {
        let worktree = &self.settings.worktree;
        let is_git = worktree.ancestors().any(|dir| dir.join(".git").exists());
        environment_prompt(
            worktree,
            is_git,
            &utc_date(self.clock.now_ms()),
            self.settings.instructions.as_deref(),
        )
    }

    fn provider_for(&self, model: &ModelRef) -> Result<ProviderEntry, RuntimeError> {
        self.models
            .provider(&model.provider_id)
            .ok_or_else(|| RuntimeError::UnknownProvider(model.provider_id.clone()))
    }

    fn model_for(&self, model: &ModelRef, _entry: &ProviderEntry) -> Result<CatalogModel, RuntimeError> {
        self.models.model(&model.provider_id, &model.model_id).ok_or_else(|| RuntimeError::UnknownModel {
            provider: model.provider_id.clone(),
            model: model.model_id.clone(),
        })
    }

    fn new_assistant(
        &self,
        session_id: &SessionId,
        parent: &UserMessage,
        agent: &str,
        model: &ModelRef,
    ) -> AssistantMessage {
        let root = self.settings.worktree.to_string_lossy().into_owned();
        AssistantMessage {
            id: self.next_id(),
            session_id: session_id.clone(),
            time: AssistantTime { created: self.clock.now_ms(), completed: None },
            error: None,
            parent_id: parent.id.clone(),
            model_id: model.model_id.clone(),
            provider_id: model.provider_id.clone(),
            mode: agent.to_owned(),
            agent: agent.to_owned(),
            path: MessagePath { cwd: root.clone(), root },
            summary: None,
            cost: rust_decimal::Decimal::ZERO,
            tokens: TokenUsage::default(),
            structured: None,
            variant: model.variant.clone(),
            finish: None,
        }
    }

    async fn write_user_message(
        &self,
        session_id: &SessionId,
        agent: &str,
        model: &ModelRef,
        format: Option<OutputFormat>,
        parts: Vec<PartKind>,
    ) -> Result<UserMessage, RuntimeError> {
        let user = UserMessage {
            id: self.next_id(),
            session_id: session_id.clone(),
            time: CreatedTime { created: self.clock.now_ms() },
            format,
            summary: None,
            agent: agent.to_owned(),
            model: model.clone(),
            system: None,
            tools: None,
        };
        let message = Message::User(user.clone());
        self.store.upsert_message(&message).await?;
        self.bus.publish(BusEvent::MessageUpdated { info: Box::new(message) });
        for kind in parts {
            let part = Part {
                id: self.next_id(),
                session_id: session_id.clone(),
                message_id: user.id.clone(),
                kind,
            };
            self.store.upsert_part(&part).await?;
            self.bus.publish(BusEvent::PartUpdated { part: Box::new(part) });
        }
        Ok(user)
    }

    /// SPEC 10.2 `create`: a user message holding a compaction part.
    async fn create_compaction(
        &self,
        session_id: &SessionId,
        last_user: &UserMessage,
        overflow: bool,
    ) -> Result<(), RuntimeError> {
        let part = PartKind::Compaction(CompactionPart {
            auto: true,
            overflow: overflow.then_some(true),
            tail_start_id: None,
        });
        self.write_user_message(session_id, &last_user.agent, &last_user.model, None, vec![part]).await?;
        Ok(())
    }

    /// Runs one compaction task (SPEC 10.2 `process`).
    #[allow(clippy::too_many_arguments)]
    async fn compact(
        &self,
        session_id: &SessionId,
        messages: &[MessageWithParts],
        parent_id: &MessageId,
        part_id: &PartId,
        compaction: &CompactionPart,
        last_user: &UserMessage,
        cancel: &CancellationToken,
    ) -> Result<(Outcome, AssistantMessage), RuntimeError> {
        let overflow = compaction.overflow == Some(true);
        let history = compaction_history(messages, parent_id, overflow)
            .map_err(|e| RuntimeError::Compaction(e.to_string()))?;
        let model = last_user.model.clone();
        let entry = self.provider_for(&model)?;
        let catalog = self.model_for(&model, &entry)?;
        let target = ModelTarget::new(&model.provider_id, &model.model_id, &catalog.id, &entry.npm);
        let budget = preserve_budget(
            &self.settings.compaction,
            usable(&self.settings.compaction, &catalog.limit, self.settings.output_token_max),
        );
        let selection =
            select_tail(&history.messages, tail_turns(&self.settings.compaction), budget, |range| {
                session_core::estimate_history(range, &target, &ToModelOptions::default())
            });
        let head = history.messages.get(..selection.head_end).unwrap_or(&history.messages);
        let prompt = summary_prompt(history.previous_summary.as_deref(), &[]);
        let root = self.settings.worktree.to_string_lossy().into_owned();
        let summary = summary_message(
            self.next_id(),
            session_id.clone(),
            parent_id.clone(),
            &model,
            MessagePath { cwd: root.clone(), root },
            self.clock.now_ms(),
        );
        self.store.upsert_message(&Message::Assistant(summary.clone())).await?;
        self.bus.publish(BusEvent::assistant(&summary));
        let request = LlmRequest {
            model: catalog.id.clone(),
            system: vec![session_core::COMPACTION_SYSTEM_PROMPT.to_owned()],
            messages: summary_request(head, &target, &prompt),
            tools: Vec::new(),
            max_output_tokens: u32::try_from(session_core::max_output_tokens(
                &catalog.limit,
                self.settings.output_token_max,
            ))
            .ok(),
            options: RequestOptions::default(),
            cancel: cancel.child_token(),
        };
        let processor = Processor::new(
            summary.clone(),
            ProcessorConfig {
                cost: catalog.cost.clone(),
                limit: catalog.limit,
                compaction: self.settings.compaction.clone(),
                continue_loop_on_deny: self.settings.continue_loop_on_deny,
            },
            Box::new(HashEntropy::default()),
        );
        let agent =
            self.agents.get(&last_user.agent).or_else(|| self.agents.get("build")).ok_or_else(|| {
                RuntimeError::AgentNotFound { name: last_user.agent.clone(), available: String::new() }
            })?;
        let context = StepContext {
            session_id,
            message_id: summary.id.clone(),
            agent,
            provider: &entry,
            cancel,
            structured: None,
        };
        let (outcome, mut finished) = self.process(&context, processor, request).await?;
        if outcome == Outcome::Compact {
            finished.error = Some(too_large_error(history.replay.is_some()));
            finished.finish = Some(FinishReason::Error);
            self.store.upsert_message(&Message::Assistant(finished.clone())).await?;
            self.bus.publish(BusEvent::assistant(&finished));
            return Ok((Outcome::Stop, finished));
        }
        if selection.tail_start_id != compaction.tail_start_id {
            let part = Part {
                id: part_id.clone(),
                session_id: session_id.clone(),
                message_id: parent_id.clone(),
                kind: PartKind::Compaction(CompactionPart {
                    tail_start_id: selection.tail_start_id.clone(),
                    ..compaction.clone()
                }),
            };
            self.store.upsert_part(&part).await?;
            self.bus.publish(BusEvent::PartUpdated { part: Box::new(part) });
        }
        if finished.error.is_some() || outcome == Outcome::Stop {
            return Ok((Outcome::Stop, finished));
        }
        if compaction.auto {
            match &history.replay {
                Some(replay) => {
                    if let Message::User(original) = &replay.info {
                        let copy = replay_user_message(original, self.next_id(), self.clock.now_ms());
                        let message = Message::User(copy.clone());
                        self.store.upsert_message(&message).await?;
                        self.bus.publish(BusEvent::MessageUpdated { info: Box::new(message) });
                        for kind in replay_parts(&replay.parts) {
                            let part = Part {
                                id: self.next_id(),
                                session_id: session_id.clone(),
                                message_id: copy.id.clone(),
                                kind,
                            };
                            self.store.upsert_part(&part).await?;
                            self.bus.publish(BusEvent::PartUpdated { part: Box::new(part) });
                        }
                    }
                }
                None => {
                    self.write_user_message(
                        session_id,
                        &last_user.agent,
                        &last_user.model,
                        None,
                        vec![PartKind::Text(continue_part(overflow))],
                    )
                    .await?;
                }
            }
        }
        self.bus.publish(BusEvent::SessionCompacted { session_id: session_id.clone() });
        Ok((Outcome::Continue, finished))
    }

    async fn prune(&self, session_id: &SessionId) {
        let Ok(history) = self.store.load_history(session_id).await else { return };
        let mut messages = history.messages;
        let plan = session_core::apply_prune(&self.settings.compaction, &mut messages, self.clock.now_ms());
        for message in &messages {
            for part in &message.parts {
                if plan.pruned_part_ids.contains(&part.id)
                    && let Err(error) = self.store.upsert_part(part).await
                {
                    tracing::warn!(%error, "prune: writing a part failed");
                }
            }
        }
    }

    /// Drives one processor over the provider stream with retries, tools and cleanup.
    async fn process(
        &self,
        context: &StepContext<'_>,
        mut processor: Processor,
        request: LlmRequest,
    ) -> Result<(Outcome, AssistantMessage), RuntimeError> {
        let scope = CallScope {
            session_id: context.session_id.clone(),
            message_id: context.message_id.clone(),
            agent: context.agent.name.clone(),
            ruleset: Arc::new(context.agent.ruleset.clone()),
            abort: context.cancel.child_token(),
        };
        let mut tracker = CallTracker::new();
        let mut outcome = None;
        let mut attempt: u32 = 0;
        let started = self.clock.now_ms();
        let mut failure = self.carry_out(context, &mut processor, &mut tracker, &scope, &mut outcome).await?;
        'attempts: loop {
            if failure.is_none() && outcome.is_none() {
                self.set_status(context.session_id, SessionStatus::Busy);
                let mut attempt_request = request.clone();
                attempt_request.cancel = context.cancel.child_token();
                let mut stream = context.provider.client.stream(attempt_request);
                let mut stream_open = true;
                let mut tool_started = false;
                failure = loop {
                    if outcome.is_some() {
                        break None;
                    }
                    let reading = stream_open && processor.wants_events();
                    // Nothing left to wait for: the stream is over and every tool settled.
                    let input = if !reading && tracker.is_empty() {
                        Input::EndOfStream
                    } else {
                        tokio::select! {
                        biased;
                        () = context.cancel.cancelled() => {
                            scope.abort.cancel();
                            Input::Interrupt
                        }
                        update = tracker.next(), if !tracker.is_empty() => match update {
                            Some(update) => update.into_input(),
                            None => continue,
                        },
                        event = stream.next(), if reading => match event {
                            Some(Ok(event)) => Input::Event(event),
                            Some(Err(error)) => {
                                if tool_started {
                                    // SPEC 7.3: never replay a stream whose tools already ran.
                                    break Some(retry_unsafe(error.to_message_error()));
                                }
                                break Some(error.to_message_error());
                            }
                            None => {
                                stream_open = false;
                                continue;
                            }
                        },
                        }
                    };
                    let interrupt = matches!(input, Input::Interrupt);
                    let running_before = tracker.open_calls().len();
                    if let Err(ProcessorError::Stream(error)) = processor.handle(input, self.clock.now_ms()) {
                        break Some(error);
                    }
                    if let Some(error) =
                        self.carry_out(context, &mut processor, &mut tracker, &scope, &mut outcome).await?
                    {
                        break Some(error);
                    }
                    tool_started |= tracker.open_calls().len() > running_before;
                    if interrupt {
                        // Finish cleanup now: the stream is abandoned.
                        self.finish(context, &mut processor, &mut tracker, &scope, &mut outcome).await?;
                    }
                };
            }
            if let Some(error) = failure.take() {
                if context.cancel.is_cancelled() {
                    let _ = processor.handle(Input::Interrupt, self.clock.now_ms());
                    self.finish(context, &mut processor, &mut tracker, &scope, &mut outcome).await?;
                    break 'attempts;
                }
                attempt += 1;
                let now = self.clock.now_ms();
                let mut retry_request = RetryRequest::new(&error, attempt, self.jitter(), now);
                retry_request.elapsed_ms = now.saturating_sub(started);
                retry_request.config = context.provider.retry.as_ref();
                match decide(&retry_request) {
                    RetryDecision::Retry { wait_ms, message } => {
                        let wait = session_core::clamp_delay(wait_ms);
                        let next = now.saturating_add(u64::try_from(wait.as_millis()).unwrap_or(u64::MAX));
                        self.set_status(context.session_id, SessionStatus::Retry { attempt, message, next });
                        tokio::select! {
                            () = self.sleeper.sleep(wait) => {}
                            () = context.cancel.cancelled() => {
                                let _ = processor.handle(Input::Interrupt, self.clock.now_ms());
                                self.finish(context, &mut processor, &mut tracker, &scope, &mut outcome).await?;
                                break 'attempts;
                            }
                        }
                        processor.begin_attempt();
                        continue 'attempts;
                    }
                    RetryDecision::Stop => {
                        let _ = processor.handle(Input::Halt(error), self.clock.now_ms());
                        self.finish(context, &mut processor, &mut tracker, &scope, &mut outcome).await?;
                        break 'attempts;
                    }
                }
            }
            if outcome.is_some() {
                break;
            }
            // The stream ended without a failure: let cleanup finish.
            self.finish(context, &mut processor, &mut tracker, &scope, &mut outcome).await?;
            break;
        }
        let outcome = outcome.unwrap_or(Outcome::Stop);
        Ok((outcome, processor.message().clone()))
    }

    /// Carries effects out until the processor is done.
    async fn finish(
        &self,
        context: &StepContext<'_>,
        processor: &mut Processor,
        tracker: &mut CallTracker,
        scope: &CallScope,
        outcome: &mut Option<Outcome>,
    ) -> Result<(), RuntimeError> {
        // Bounded: each round either drains effects or feeds the input cleanup waits for.
        for _ in 0..64 {
            // Effects queued by the last input (the message update, `Done`) are carried out
            // before deciding whether the processor is finished.
            if let Some(error) = self.carry_out(context, processor, tracker, scope, outcome).await? {
                let _ = processor.handle(Input::Halt(error), self.clock.now_ms());
                continue;
            }
            if outcome.is_some() || processor.waiting() == Waiting::Finished {
                return Ok(());
            }
            if processor.waiting() == Waiting::Nothing {
                let input = if context.cancel.is_cancelled() { Input::Interrupt } else { Input::EndOfStream };
                if let Err(ProcessorError::Stream(error)) = processor.handle(input, self.clock.now_ms()) {
                    let _ = processor.handle(Input::Halt(error), self.clock.now_ms());
                }
            }
        }
        Ok(())
    }

    /// Carries out every queued effect, answering requests; returns a stream failure if
    /// answering one failed the stream (a rejected doom-loop ask).
    async fn carry_out(
        &self,
        context: &StepContext<'_>,
        processor: &mut Processor,
        tracker: &mut CallTracker,
        scope: &CallScope,
        outcome: &mut Option<Outcome>,
    ) -> Result<Option<MessageError>, RuntimeError> {
        let mut failure = None;
        // Consecutive message and part writes go to the store as one transaction (a step-finish
        // part with the message totals it changes, a tool part's pending and running states),
        // and their events are published once it committed, in order. Any other effect first
        // commits what is pending, so the store and the bus never see effects out of order.
        let mut pending = PendingWrites::default();
        while let Some(effect) = processor.poll_effect() {
            let effect = match effect {
                Effect::UpsertPart(part) => {
                    pending.batch.parts.push((*part).clone());
                    pending.events.push(BusEvent::PartUpdated { part });
                    continue;
                }
                Effect::UpsertMessage(message) => {
                    let message = Message::Assistant(*message);
                    pending.batch.messages.push(message.clone());
                    pending.events.push(BusEvent::MessageUpdated { info: Box::new(message) });
                    continue;
                }
                other => other,
            };
            self.commit_writes(&mut pending).await?;
            let answer = match effect {
                Effect::UpsertPart(_) | Effect::UpsertMessage(_) => None,
                Effect::PartDelta { message_id, part_id, field, delta } => {
                    self.bus.publish(BusEvent::PartDelta {
                        session_id: context.session_id.clone(),
                        message_id: message_id.clone(),
                        part_id: part_id.clone(),
                        field: field.to_owned(),
                        delta: delta.clone(),
                    });
                    self.store
                        .append_delta(PartDelta {
                            session_id: context.session_id.clone(),
                            message_id,
                            part_id,
                            field: field.to_owned(),
                            delta,
                        })
                        .await?;
                    None
                }
                Effect::TakeSnapshot(_) => Some(Input::Snapshot(self.snapshots.track().await)),
                Effect::ComputePatch { hash } => Some(Input::Patch(self.snapshots.patch(&hash).await)),
                Effect::AskPermission { call_id, request } => {
                    let call = ToolCallRef { message_id: context.message_id.clone(), call_id };
                    // The doom-loop ask is evaluated against the agent's rules only (SPEC 3).
                    let reply = self
                        .tools
                        .permissions()
                        .ask(context.session_id, request, Some(call), &context.agent.ruleset, &scope.abort)
                        .await;
                    if context.cancel.is_cancelled() {
                        Some(Input::Interrupt)
                    } else {
                        Some(Input::PermissionReply(reply.map_err(|error| error.to_string())))
                    }
                }
                Effect::ExecuteTool { call_id, tool, input, .. }
                    if tool == STRUCTURED_OUTPUT_TOOL && context.structured.is_some() =>
                {
                    context.structured.map(|structured| Input::Event(structured.capture(call_id, input)))
                }
                Effect::ExecuteTool { call_id, tool, input, .. } => {
                    let call = ToolInvocation { call_id, tool, input };
                    tracker.spawn(self.tools.clone(), call, scope.clone());
                    None
                }
                Effect::StepSettled => None,
                Effect::AwaitToolCalls { .. } => {
                    let settlement = tracker.wait_all(CLEANUP_GRACE).await;
                    for update in settlement.updates {
                        let _ = processor.handle(update.into_input(), self.clock.now_ms());
                    }
                    (processor.waiting() == Waiting::ToolCalls).then_some(Input::GraceElapsed)
                }
                Effect::SessionError(error) => {
                    self.bus
                        .publish(BusEvent::SessionError { session_id: context.session_id.clone(), error });
                    None
                }
                Effect::SetIdle => {
                    self.set_status(context.session_id, SessionStatus::Idle);
                    None
                }
                Effect::Done(result) => {
                    *outcome = Some(result);
                    None
                }
            };
            if let Some(input) = answer
                && let Err(ProcessorError::Stream(error)) = processor.handle(input, self.clock.now_ms())
            {
                failure = Some(error);
            }
        }
        self.commit_writes(&mut pending).await?;
        Ok(failure)
    }

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

/// Writes collected from consecutive effects, committed together.
#[derive(Default)]
struct PendingWrites {
    batch: WriteBatch,
    events: Vec<BusEvent>,
}

/// Marks an error as unsafe to retry: a tool of the failed attempt already ran (SPEC 7.3).
fn retry_unsafe(error: MessageError) -> MessageError {
    let message = format!("{} (not retried: a tool of this step had already started)", error.message());
    let mut metadata = BTreeMap::new();
    metadata.insert("code".to_owned(), session_core::RETRY_UNSAFE_CODE.to_owned());
    MessageError::ApiError {
        message,
        status_code: None,
        is_retryable: false,
        response_headers: None,
        response_body: None,
        metadata: Some(metadata),
    }
}

fn text_part(text: &str) -> PartKind {
    PartKind::Text(TextPart { text: text.to_owned(), ..TextPart::default() })
}

/// `provider/model` into a model reference.
pub fn parse_model_ref(reference: &str) -> Option<ModelRef> {
    let (provider, model) = session_llm::split_model_ref(reference)?;
    Some(ModelRef { provider_id: provider.to_owned(), model_id: model.to_owned(), variant: None })
}

/// True when an assistant message still has tool work: a tool part that is not provider
/// executed and not an interrupted orphan (SPEC 12 step 2).
fn has_pending_tool_work(message: &MessageWithParts) -> bool {
    message.parts.iter().any(|part| match &part.kind {
        PartKind::Tool(tool) => !tool.provider_executed() && !tool.state.is_interrupted(),
        _ => false,
    })
}

/// SPEC 12 step 8: user texts sent after the last finished answer are wrapped in a reminder.
fn wrap_reminders(
    model_messages: &mut [ModelMessage],
    messages: &[MessageWithParts],
    last_finished: Option<&AssistantMessage>,
) {
    let Some(finished) = last_finished else { return };
    let newer: Vec<&str> = messages
        .iter()
        .filter(|m| matches!(m.info, Message::User(_)) && m.info.id() > &finished.id)
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match &p.kind {
            PartKind::Text(t)
                if t.synthetic != Some(true) && t.ignored != Some(true) && !t.text.trim().is_empty() =>
            {
                Some(t.text.as_str())
            }
            _ => None,
        })
        .collect();
    for message in model_messages.iter_mut() {
        if let ModelMessage::User { content } = message {
            for item in content.iter_mut() {
                if let session_core::UserContent::Text { text } = item
                    && newer.contains(&text.as_str())
                {
                    *text = format!(
                        "<system-reminder>\nThe user sent the following message:\n{text}\n\nPlease address this message and continue with your tasks.\n</system-reminder>"
                    );
                }
            }
        }
    }
}
