//! The runtime's error type.

use session_core::{MessageId, SessionId};

/// Why a prompt could not run.
#[derive(Debug, thiserror::Error)]
pub enum RuntimeError {
    /// Another prompt is running in this session.
    #[error("session {0} is busy: a prompt is already running in it")]
    Busy(SessionId),
    /// Another process runs this session (it holds the session's lease in the store).
    #[error(
        "session {session_id} is running in another process ({owner}); try again when that run ends \
         (its lease expires at {expires_at} ms unless renewed)"
    )]
    LeasedElsewhere {
        /// The session.
        session_id: SessionId,
        /// The lease holder (the other store's owner id).
        owner: String,
        /// When the lease ends unless its holder renews it (epoch ms).
        expires_at: u64,
    },
    /// The message (or part) to revert to is not in the session.
    #[error("nothing to revert: message {0} (or the given part) is not in the session")]
    RevertPointNotFound(MessageId),
    /// Restoring files from a snapshot failed.
    #[error("restoring files from the snapshot failed: {0}")]
    Snapshot(String),
    /// The store failed (a database error, or a session leased by another process).
    #[error(transparent)]
    Store(#[from] session_store::StoreError),
    /// The agent is not defined.
    #[error("Agent not found: \"{name}\". Available agents: {available}")]
    AgentNotFound {
        /// The requested agent.
        name: String,
        /// The defined agents.
        available: String,
    },
    /// The command is not defined.
    #[error("Command not found: \"{name}\". Available commands: {available}")]
    CommandNotFound {
        /// The requested command.
        name: String,
        /// The defined commands.
        available: String,
    },
    /// A command's `model` is not `provider/model`.
    #[error("command {name}: model must be provider/model; got {model:?}")]
    BadCommandModel {
        /// The command.
        name: String,
        /// Its model as written.
        model: String,
    },
    /// A variant the model or its provider does not take.
    #[error("variant {variant:?}: {reason}")]
    Variant {
        /// The variant asked for.
        variant: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// The provider is not configured.
    #[error("provider {0} is not configured")]
    UnknownProvider(String),
    /// The model is not in the catalog or the configuration.
    #[error("model {provider}/{model} is unknown: add it under provider.{provider}.models in the config")]
    UnknownModel {
        /// Provider id.
        provider: String,
        /// Model id.
        model: String,
    },
    /// The history has no user message.
    #[error("No user message found in stream. This should never happen.")]
    NoUserMessage,
    /// The loop ended without producing an assistant message.
    #[error("the run ended before the model answered")]
    NoAssistantMessage,
    /// Compaction could not be prepared.
    #[error("compaction failed: {0}")]
    Compaction(String),
    /// The requested output schema is not a valid JSON schema.
    #[error("the output format's JSON schema is invalid: {0}")]
    InvalidSchema(String),
    /// The run this prompt joined failed.
    #[error("{0}")]
    JoinedRunFailed(String),
    /// Compaction ran twice without a completed step in between.
    #[error("compaction did not free enough context; stopped instead of compacting again")]
    CompactionLoop,
}
