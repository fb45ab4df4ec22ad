//! The async engine of the session runtime: give it a project folder, a store and a model, send
//! it prompts, and read what happens on its bus.
//!
//! # Brief overview
//!
//! An embedder starts from the crate root: [`assemble`] turns a [`RuntimeSetup`] (a folder, a
//! home, the environment) into a ready [`Runtime`] with its store, tools, MCP servers and
//! model sources, the way the `session` binary does; [`Runtime::builder`] wires one by hand
//! from a store, a tool executor, [`RuntimeSettings`] and a [`ModelSource`] ([`StaticModels`]
//! for clients of one's own, [`ConfiguredModels`] from the catalog and the config). A run is
//! [`Runtime::prompt`] with a [`PromptInput`]; it ends with the assistant message or a
//! [`RuntimeError`], and publishes every change as a [`BusEvent`] on the [`Bus`] while it goes.
//!
//! The engine runs the agent loop of SPEC 12: one assistant message per step, retries on the
//! same message (SPEC 7; never a replay after a tool started), abort with SPEC 8's cleanup,
//! compaction (SPEC 10), snapshots, patch parts, revert and unrevert (SPEC 13), the session
//! status (SPEC 11) and the bus (SPEC 14). One run per session at a time: in process through a
//! run table ([`RuntimeError::Busy`]), across processes through the store's lease
//! ([`RuntimeError::LeasedElsewhere`]). It reads no environment variable: the binary passes
//! them in.
//!
//! The rest is in modules, by what a client does with it:
//!
//! - [`sessions`]: the session types a client holds; the operations are methods of
//!   [`Runtime`] ([`Runtime::session`], [`Runtime::list_sessions`], [`Runtime::revert`], ...).
//! - [`config`]: OpenCode's configuration keys, the layered JSONC files and their merge.
//! - [`setup`], [`agents`], [`commands`], [`prompts`], [`models`]: assembly in parts, the
//!   agents, commands, the texts sent to models, the catalog.
//! - [`permissions`], [`files`], [`mcp`], [`cluster`]: permission answers, file access in the
//!   workspace, MCP server status, the notices of servers sharing one database.
//! - [`snapshot`], [`clock`], [`git`]: working-tree snapshots, injected time, git helpers.
//!
//! It does not own what it wires together: the rules and the processor are session-core's,
//! the wire formats and the catalog session-llm's, persistence and leases session-store's,
//! tool execution and permissions session-tools'; the modules above re-export what a client
//! of the runtime needs of them.
//!
//! # Example
//!
//! ```no_run
//! use std::sync::Arc;
//!
//! use session_runtime::permissions::ReplyLater;
//! use session_runtime::{BusEvent, PromptInput, RuntimeSetup, assemble};
//!
//! # async fn run() -> Result<(), Box<dyn std::error::Error>> {
//! let setup = RuntimeSetup {
//!     cwd: "/home/me/project".into(),
//!     home: Some("/home/me".into()),
//!     data_dir: "/home/me/.local/share/session".into(),
//!     env: [("OPENAI_API_KEY".to_owned(), "sk-...".to_owned())].into(),
//!     model: Some("openai/gpt-4.1".to_owned()),
//!     base_url: None,
//!     db: None,
//!     store_options: Default::default(),
//! };
//! // Asks wait until `assembled.permissions.reply(...)` answers them.
//! let assembled = assemble(&setup, Arc::new(ReplyLater)).await?;
//! let runtime = assembled.runtime;
//! let mut events = runtime.bus().subscribe();
//! tokio::spawn(async move {
//!     while let Ok(event) = events.recv().await {
//!         if let BusEvent::SessionIdle { session_id } = event {
//!             println!("{session_id} is idle");
//!         }
//!     }
//! });
//! let session = runtime.create_session(None).await?;
//! let input = PromptInput { text: "What does this project do?".into(), ..PromptInput::default() };
//! let answer = runtime.prompt(&session.id, input).await?;
//! println!("{} output tokens", answer.tokens.output);
//! assembled.mcp.shutdown().await;
//! runtime.close_store().await?;
//! # Ok(())
//! # }
//! ```

mod compose;
pub mod config;
mod engine;
pub mod git;
pub mod wire;

pub use compose::{Assembled, ConfiguredModels, RuntimeBuilder, RuntimeSetup, StaticModels, assemble};
pub use engine::{
    Bus, BusEvent, ModelSource, PromptInput, ProviderEntry, Runtime, RuntimeError, RuntimeSettings,
};

/// Assembly in parts: what [`assemble`] reads and opens, for a binary that needs one piece.
pub mod setup {
    pub use crate::compose::{
        ComposeError, InstructionSources, assemble_sending, config_sources, instruction_files,
        instructions_text, load_config, load_skills, open_store, project_root, user_dir,
    };
}

/// Agents: the built-in and configured ones, and the task tool that starts a subagent.
pub mod agents {
    pub use crate::compose::{configured_agents, default_agent};
    pub use crate::engine::{Agent, TASK_TOOL, TaskTool};
}

/// The texts the runtime sends models: the agents' system prompts, the environment block, the
/// last step's text and the structured-output tool's.
pub mod prompts {
    pub use crate::engine::{
        BUILD_PROMPT, EXPLORE_PROMPT, GENERAL_PROMPT, MAX_STEPS_TEXT, PLAN_PROMPT,
        STRUCTURED_OUTPUT_INSTRUCTION, STRUCTURED_OUTPUT_TOOL, environment_prompt, missing_output_error,
        utc_date,
    };
}

/// Commands: a configured command run as a prompt ([`Runtime::command`]).
pub mod commands {
    pub use crate::engine::{CommandInput, expand_template};
}

/// Working-tree snapshots (SPEC 13) and their store's housekeeping.
pub mod snapshot {
    pub use crate::engine::{
        GitSnapshotter, HousekeepingReport, MAX_UNTRACKED_BYTES, NoSnapshots, SnapshotRetention,
        SnapshotStoreReport, Snapshotter,
    };
}

/// Time, sleeping and entropy, injected so that tests control them.
pub mod clock {
    pub use crate::engine::{Clock, Sleeper, SplitMix, SystemClock, TokioSleeper, random_entropy};
}

/// Sessions as a client holds them: their records, the listing query and page, histories,
/// revert records, status, todos and the store errors the runtime's session methods return.
pub mod sessions {
    pub use crate::engine::{RequestAhead, SessionStart, SessionStatus};
    pub use session_store::{
        ListSessions, NewSession, RevertRecord, Session, SessionDocument, SessionHistory, SessionModel,
        SessionPage, SessionPatch, SessionTime, SessionTokens, Store, StoreError,
    };
    pub use session_tools::Todo;
}

/// Questions the `question` tool asks the user: the runtime's table of waiting questions
/// ([`Runtime::questions`], [`Runtime::reply_question`], [`Runtime::reject_question`]) and the
/// tool's types.
pub mod questions {
    pub use crate::engine::{QuestionNotFound, QuestionRequest, Questions};
    pub use session_tools::{
        QUESTION_TOOL, QuestionAnswer, QuestionAsk, QuestionAsker, QuestionOption, QuestionPrompt,
        QuestionTool,
    };
}

/// Permission asks and their answers: the engine a runtime's tools ask through
/// ([`Runtime::permissions`], [`Runtime::reply_permission`]), the asker a client implements, and
/// the answer it gives.
pub mod permissions {
    pub use session_tools::{PermissionAnswer, PermissionAsker, PermissionEngine, ReplyLater};
}

/// The model catalog (models.dev's snapshot) and model references.
pub mod models {
    pub use crate::compose::ResolvedProvider;
    pub use crate::engine::{parse_model_ref, title_model};
    pub use session_llm::{Catalog, CatalogModel, split_model_ref};
}

/// MCP servers: the manager [`assemble`] starts and the status of each server.
pub mod mcp {
    pub use crate::compose::mcp_manager;
    pub use session_mcp::{McpManager, ServerState, ServerStatus};
}

/// File access inside the workspace ([`Runtime::workspace`]), as the tools have it: handles
/// pinned beneath the project, the project walk, image fitting, and files attached to a prompt.
pub mod files {
    pub use crate::compose::{AttachError, MAX_ATTACHMENT_BYTES, attach_file, attach_opened};
    pub use session_tools::{
        Opened, PinnedPath, Workspace, fit_images, in_git_folder, open_beneath, walk_project,
    };
}

/// The notices servers sharing one PostgreSQL database send each other.
pub mod cluster {
    pub use session_store::{NoticeListener, Notifier, NotifyError, PgConfig, encode_notice};
}
