//! The runtime: what it is built from, its handles, and the small services the loop, the step
//! driver and compaction share (ids, status, the environment prompt, model lookup).

use std::collections::BTreeMap;
use std::sync::Arc;

use session_core::{
    AssistantMessage, AssistantTime, CreatedTime, IdSource, Message, MessageId, MessagePath,
    MessageWithParts, ModelRef, OutputFormat, Part, PartKind, SessionId, TokenUsage, UserMessage,
    processor::Processor, processor::ProcessorConfig,
};
use session_llm::{CatalogModel, ToolSpec};
use session_store::{Store, WriteBatch};
use session_tools::ToolExecutor;

use super::agent::Agent;
use super::background::Background;
use super::bus::{Bus, BusEvent};
use super::clock::{Clock, Sleeper, random_entropy};
use super::error::RuntimeError;
use super::history_mirror::HistoryMirror;
use super::inputs::{ModelSource, ProviderEntry, RuntimeSettings};
use super::question::Questions;
use super::request::RequestSources;
use super::runs::RunTable;
use super::snapshot::Snapshotter;
use super::status::SessionStatus;
use super::summary::{Summaries, Writer};

/// The handles a runtime is built from; no globals, nothing read from the environment.
pub(crate) struct RuntimeParts {
    /// Sessions, messages and parts.
    pub(crate) store: Arc<dyn Store>,
    /// Providers and the catalog.
    pub(crate) models: Arc<dyn ModelSource>,
    /// Tool execution (with its permission engine).
    pub(crate) tools: Arc<ToolExecutor>,
    /// Working-tree snapshots.
    pub(crate) snapshots: Arc<dyn Snapshotter>,
    /// The clock.
    pub(crate) clock: Arc<dyn Clock>,
    /// The sleeper used for retry backoff.
    pub(crate) sleeper: Arc<dyn Sleeper>,
    /// Agents by name (at least `build`).
    pub(crate) agents: BTreeMap<String, Agent>,
    /// Loop settings.
    pub(crate) settings: RuntimeSettings,
    /// The questions the `question` tool (when registered) waits on.
    pub(crate) questions: Arc<Questions>,
}

/// The engine: runs prompts through the agent loop.
pub struct Runtime {
    pub(super) store: Arc<dyn Store>,
    pub(super) models: Arc<dyn ModelSource>,
    pub(super) tools: Arc<ToolExecutor>,
    pub(super) snapshots: Arc<dyn Snapshotter>,
    pub(super) clock: Arc<dyn Clock>,
    pub(super) sleeper: Arc<dyn Sleeper>,
    pub(super) agents: BTreeMap<String, Agent>,
    pub(super) settings: RuntimeSettings,
    pub(super) bus: Bus,
    pub(super) runs: RunTable,
    /// Forked work: titles, snapshot housekeeping.
    pub(super) background: Background,
    /// Summary diffs being computed, per session.
    pub(super) summaries: Summaries,
    /// Questions waiting for the user.
    pub(super) questions: Arc<Questions>,
    ids: IdSource,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime").field("agents", &self.agents.keys()).finish_non_exhaustive()
    }
}

impl Runtime {
    /// A runtime over `parts`; [`Runtime::builder`] is the public way to make one.
    pub(crate) fn new(parts: RuntimeParts) -> Self {
        let ids = IdSource::new(random_entropy(parts.clock.now_ms()));
        let bus = Bus::default();
        parts.questions.connect(bus.clone(), parts.clock.clone());
        Self {
            store: parts.store,
            models: parts.models,
            tools: parts.tools,
            snapshots: parts.snapshots,
            clock: parts.clock,
            sleeper: parts.sleeper,
            agents: parts.agents,
            settings: parts.settings,
            bus,
            runs: RunTable::default(),
            background: Background::default(),
            summaries: Summaries::default(),
            questions: parts.questions,
            ids,
        }
    }

    /// The agents prompts may name, by name.
    pub fn agents(&self) -> impl Iterator<Item = &Agent> {
        self.agents.values()
    }

    /// The model a prompt that names none runs with.
    pub fn default_model(&self) -> &ModelRef {
        &self.settings.default_model
    }

    /// The agent a prompt that names none runs with.
    pub fn default_agent(&self) -> &str {
        self.settings.default_agent.as_deref().unwrap_or("build")
    }

    /// The event bus.
    pub fn bus(&self) -> &Bus {
        &self.bus
    }

    /// True when an agent is named `name`.
    pub fn has_agent(&self, name: &str) -> bool {
        self.agents.contains_key(name)
    }

    /// The project folder the runtime's tools work in.
    pub fn worktree(&self) -> &std::path::Path {
        &self.settings.worktree
    }

    /// The store.
    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Cancels the session's run, if one is going, and returns true; with nothing running it
    /// sets the status idle and returns false (SPEC 11 `cancel`).
    pub fn cancel(&self, session_id: &SessionId) -> bool {
        let running = self.runs.cancel(session_id);
        if !running {
            self.set_status(session_id, SessionStatus::Idle);
        }
        running
    }

    /// Waits for the work runs forked and did not wait for (title requests, snapshot
    /// housekeeping) to end. A process that exits after a prompt calls it so that a title
    /// still on its way is stored; a server never needs to.
    pub async fn settle(&self) {
        self.background.settle().await;
    }

    /// Stops forked work for good (an interrupted process exits without waiting for a title).
    pub fn cancel_background(&self) {
        self.background.cancel();
    }

    /// True while a prompt (or a revert) runs in the session in this process.
    pub fn is_busy(&self, session_id: &SessionId) -> bool {
        self.runs.is_busy(session_id)
    }

    pub(super) fn next_id<T: session_core::Identifier>(&self) -> T {
        self.ids.next(self.clock.now_ms())
    }

    pub(super) fn jitter(&self) -> f64 {
        self.ids.unit()
    }

    pub(super) fn set_status(&self, session_id: &SessionId, status: SessionStatus) {
        let idle = status == SessionStatus::Idle;
        self.bus.publish(BusEvent::SessionStatus { session_id: session_id.clone(), status });
        if idle {
            self.bus.publish(BusEvent::SessionIdle { session_id: session_id.clone() });
        }
    }

    /// Marks the turn of user message `turn` changed: the next [`Runtime::start_summary`] or
    /// the run's end computes it.
    pub(super) fn mark_summary(&self, session_id: &SessionId, turn: &MessageId) {
        // Without snapshots every diff is empty and nothing would be written: a pass would
        // only cost a history read after every step.
        if self.snapshots.is_on() {
            self.summaries.mark(session_id, turn);
        }
    }

    /// Hands `history` (what the run just read) to the session's summary work and makes sure a
    /// worker computes the marked turns.
    pub(super) fn start_summary(&self, session_id: &SessionId, history: Arc<Vec<MessageWithParts>>) {
        self.summaries.start(|| self.summary_writer(), session_id, history);
    }

    /// Waits for the session's summary work, then computes what is still marked (the run's
    /// end, with the run's own `history`).
    pub(super) async fn finish_summaries(&self, session_id: &SessionId, history: &mut HistoryMirror) {
        self.summaries.finish(self.summary_writer(), session_id, history).await;
    }

    fn summary_writer(&self) -> Writer {
        Writer::new(self.store.clone(), self.snapshots.clone(), self.bus.clone())
    }

    /// The names of the configured agents, for errors.
    pub(super) fn agent_names(&self) -> String {
        self.agents.keys().cloned().collect::<Vec<_>>().join(", ")
    }

    /// The output-token ceiling sent for `catalog`'s model (SPEC 6).
    pub(super) fn max_output_tokens(&self, catalog: &CatalogModel) -> Option<u32> {
        self.sources().max_output_tokens(catalog)
    }

    /// What a step's request is built from: the runtime's parts but the store.
    pub(super) fn sources(&self) -> RequestSources<'_> {
        RequestSources {
            models: self.models.as_ref(),
            tools: self.tools.as_ref(),
            agents: &self.agents,
            settings: &self.settings,
            clock: self.clock.as_ref(),
        }
    }

    /// A processor for one step writing `message`, priced and limited by `catalog`.
    /// A processor for `message`; calls are repaired against `offered` (the request's tools).
    pub(super) fn processor_for(
        &self,
        message: AssistantMessage,
        catalog: &CatalogModel,
        offered: &[ToolSpec],
    ) -> Processor {
        Processor::new(
            message,
            ProcessorConfig {
                cost: catalog.cost.clone(),
                limit: catalog.limit,
                compaction: self.settings.compaction.clone(),
                continue_loop_on_deny: self.settings.continue_loop_on_deny,
                offered_tools: Some(callable_tools(offered)),
            },
            Box::new(random_entropy(self.clock.now_ms())),
        )
    }

    pub(super) fn provider_for(&self, model: &ModelRef) -> Result<ProviderEntry, RuntimeError> {
        self.sources().provider_for(model)
    }

    pub(super) fn model_for(&self, model: &ModelRef) -> Result<CatalogModel, RuntimeError> {
        self.sources().model_for(model)
    }

    pub(super) fn new_assistant(
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

    /// Stores a user message with `parts` and publishes them.
    pub(super) async fn write_user_message(
        &self,
        session_id: &SessionId,
        agent: &str,
        model: &ModelRef,
        format: Option<OutputFormat>,
        parts: Vec<PartKind>,
    ) -> Result<UserMessage, RuntimeError> {
        self.write_user_message_as(None, session_id, agent, model, format, parts).await
    }

    /// [`Runtime::write_user_message`] under the id a client chose (checked by the caller).
    pub(super) async fn write_user_message_as(
        &self,
        id: Option<MessageId>,
        session_id: &SessionId,
        agent: &str,
        model: &ModelRef,
        format: Option<OutputFormat>,
        parts: Vec<PartKind>,
    ) -> Result<UserMessage, RuntimeError> {
        let user = UserMessage {
            id: id.unwrap_or_else(|| self.next_id()),
            session_id: session_id.clone(),
            time: CreatedTime { created: self.clock.now_ms() },
            format,
            summary: None,
            agent: agent.to_owned(),
            model: model.clone(),
            system: None,
            tools: None,
        };
        self.store_user_message(user, parts).await
    }

    /// Stores `user` and a part for each of `parts` in one transaction (a prompt is never
    /// half written), then publishes each.
    pub(super) async fn store_user_message(
        &self,
        user: UserMessage,
        parts: Vec<PartKind>,
    ) -> Result<UserMessage, RuntimeError> {
        let mut batch = WriteBatch::new().message(Message::User(user.clone()));
        for kind in parts {
            batch = batch.part(Part {
                id: self.next_id(),
                session_id: user.session_id.clone(),
                message_id: user.id.clone(),
                kind,
            });
        }
        self.store.commit(&batch).await?;
        for message in batch.messages {
            self.bus.publish(BusEvent::MessageUpdated { info: Box::new(message) });
        }
        for part in batch.parts {
            self.bus.publish(BusEvent::PartUpdated { part: Box::new(part) });
        }
        Ok(user)
    }
}

/// The tools a model may call with a request that offers `offered`, as OpenCode 1.18.34
/// names them in an unavailable tool's error: the offered ones and `invalid` (which it passes
/// to the model's SDK without offering it), in code-unit order.
fn callable_tools(offered: &[ToolSpec]) -> Vec<String> {
    let mut names: Vec<String> = offered.iter().map(|tool| tool.name.clone()).collect();
    if !names.iter().any(|name| name == session_core::processor::INVALID_TOOL) {
        names.push(session_core::processor::INVALID_TOOL.to_owned());
    }
    names.sort_unstable();
    names
}
