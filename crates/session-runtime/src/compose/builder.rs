//! The one way to build a [`Runtime`]: required handles up front, everything else defaulted
//! (system clock, tokio sleeper, no snapshots, no providers, the `build` agent).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use session_core::{ModelRef, config::CompactionConfig, permission::AgentPaths};
use session_store::{Store, SystemClock};
use session_tools::ToolExecutor;

use super::models::StaticModels;
use crate::engine::{
    Agent, Clock, ModelSource, NoSnapshots, Questions, Runtime, RuntimeParts, RuntimeSettings, Sleeper,
    Snapshotter, TokioSleeper,
};

impl RuntimeSettings {
    /// Settings with SPEC's defaults: default compaction, denials stop the loop, the 32 000
    /// output-token ceiling, no extra instructions, no skills, and no title requests (a runtime calls no
    /// model it was not asked to).
    pub fn new(default_model: ModelRef, worktree: impl Into<PathBuf>) -> Self {
        Self {
            compaction: CompactionConfig::default(),
            continue_loop_on_deny: false,
            output_token_max: session_core::overflow::OUTPUT_TOKEN_MAX,
            default_model,
            worktree: worktree.into(),
            instructions: None,
            default_agent: None,
            commands: indexmap::IndexMap::new(),
            skills: Arc::default(),
            compaction_model: None,
            titles: false,
            small_model: None,
        }
    }
}

/// Builds a [`Runtime`]; see [`Runtime::builder`].
pub struct RuntimeBuilder {
    parts: RuntimeParts,
}

impl std::fmt::Debug for RuntimeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RuntimeBuilder").field("settings", &self.parts.settings).finish_non_exhaustive()
    }
}

impl Runtime {
    /// A builder over the store, the tools and the settings; the rest has defaults: no
    /// providers ([`RuntimeBuilder::models`]), no snapshots, the system clock, tokio's timer and
    /// the `build` agent with the default rules.
    pub fn builder(
        store: Arc<dyn Store>,
        tools: Arc<ToolExecutor>,
        settings: RuntimeSettings,
    ) -> RuntimeBuilder {
        let mut agents = BTreeMap::new();
        let build = Agent::build(&[], &AgentPaths::default());
        agents.insert(build.name.clone(), build);
        RuntimeBuilder {
            parts: RuntimeParts {
                store,
                models: Arc::new(StaticModels::new()),
                tools,
                snapshots: Arc::new(NoSnapshots),
                clock: Arc::new(SystemClock),
                sleeper: Arc::new(TokioSleeper),
                agents,
                settings,
                questions: Questions::new(),
            },
        }
    }
}

impl RuntimeBuilder {
    /// Where providers and models come from.
    pub fn models(mut self, models: Arc<dyn ModelSource>) -> Self {
        self.parts.models = models;
        self
    }

    /// Working-tree snapshots (default none).
    pub fn snapshots(mut self, snapshots: Arc<dyn Snapshotter>) -> Self {
        self.parts.snapshots = snapshots;
        self
    }

    /// The clock (default the system clock).
    pub fn clock(mut self, clock: Arc<dyn Clock>) -> Self {
        self.parts.clock = clock;
        self
    }

    /// The sleeper of retry backoff (default tokio's timer).
    pub fn sleeper(mut self, sleeper: Arc<dyn Sleeper>) -> Self {
        self.parts.sleeper = sleeper;
        self
    }

    /// The agents by name, replacing the default `build`.
    pub fn agents(mut self, agents: BTreeMap<String, Agent>) -> Self {
        self.parts.agents = agents;
        self
    }

    /// The question table a `question` tool registered with the tools asks through (default:
    /// a fresh one, which no tool asks through); the runtime publishes its questions and answers
    /// them ([`Runtime::reply_question`]).
    pub fn questions(mut self, questions: Arc<Questions>) -> Self {
        self.parts.questions = questions;
        self
    }

    /// The runtime.
    pub fn build(self) -> Runtime {
        Runtime::new(self.parts)
    }
}
