//! The in-process event bus (SPEC 14): every change a client may show, in order.

use serde::{Deserialize, Serialize};
use session_core::permission::ToolCallRef;
use session_core::{
    AssistantMessage, FileDiff, Message, MessageError, MessageId, Part, PartId, PermissionId, QuestionId,
    SessionId, permission::PermissionAsk, permission::Reply, permission::Resolution,
};
use session_store::Session;
use session_tools::QuestionPrompt;
use session_tools::Todo;
use tokio::sync::broadcast;

use super::status::SessionStatus;

/// A question waiting for its answer (the payload of `question.asked`, OpenCode's
/// `QuestionRequest`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QuestionRequest {
    /// The question's id (`que_...`).
    pub id: QuestionId,
    /// The asking session.
    #[serde(rename = "sessionID")]
    pub session_id: SessionId,
    /// The questions, in order.
    pub questions: Vec<QuestionPrompt>,
    /// The tool call asking.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolCallRef>,
}

/// One bus event: a plain Rust value. What clients read of it (OpenCode's `/event` shapes, the
/// lines of `run --format events`) is built from it in the `wire` module.
#[derive(Debug, Clone, PartialEq)]
pub enum BusEvent {
    /// A session was created.
    SessionCreated {
        /// The session.
        info: Box<Session>,
    },
    /// A session changed.
    SessionUpdated {
        /// The session.
        info: Box<Session>,
    },
    /// What the session changed in the working tree, per file, from its first step's snapshot
    /// to its last one (SPEC 13 summary diffs).
    SessionDiff {
        /// The session.
        session_id: SessionId,
        /// The changed files (at most `session_core::summary::MAX_SUMMARY_FILES`).
        diff: Vec<FileDiff>,
    },
    /// A session's status changed.
    SessionStatus {
        /// The session.
        session_id: SessionId,
        /// Its new status.
        status: SessionStatus,
    },
    /// A session went idle (deprecated twin of the idle status).
    SessionIdle {
        /// The session.
        session_id: SessionId,
    },
    /// Processing failed.
    SessionError {
        /// The session.
        session_id: SessionId,
        /// The error.
        error: MessageError,
    },
    /// A compaction finished and the loop continues.
    SessionCompacted {
        /// The session.
        session_id: SessionId,
    },
    /// A message was created or changed.
    MessageUpdated {
        /// The message.
        info: Box<Message>,
    },
    /// A message was removed (revert cleanup).
    MessageRemoved {
        /// The session.
        session_id: SessionId,
        /// The removed message.
        message_id: MessageId,
    },
    /// A part was removed from a message that stays (revert cleanup).
    PartRemoved {
        /// The session.
        session_id: SessionId,
        /// The message.
        message_id: MessageId,
        /// The removed part.
        part_id: PartId,
    },
    /// A part was created or changed.
    PartUpdated {
        /// The part.
        part: Box<Part>,
    },
    /// Text was appended to a streaming part.
    PartDelta {
        /// The session.
        session_id: SessionId,
        /// The message.
        message_id: MessageId,
        /// The part.
        part_id: PartId,
        /// The field grown.
        field: String,
        /// The appended text.
        delta: String,
    },
    /// The todo tool wrote the session's todo list.
    TodoUpdated {
        /// The session.
        session_id: SessionId,
        /// The whole list as written.
        todos: Vec<Todo>,
    },
    /// A permission ask is waiting for an answer.
    PermissionAsked(Box<PermissionAsk>),
    /// A permission ask was answered.
    PermissionReplied {
        /// The asking session.
        session_id: SessionId,
        /// The answered ask.
        permission_id: PermissionId,
        /// The answer.
        response: Reply,
    },
    /// The `question` tool is waiting for the user's answers.
    QuestionAsked(Box<QuestionRequest>),
    /// A question was answered.
    QuestionReplied {
        /// The asking session.
        session_id: SessionId,
        /// The answered question.
        request_id: QuestionId,
        /// One list of labels (or typed text) per question, in order.
        answers: Vec<Vec<String>>,
    },
    /// A question was dismissed, or withdrawn when its call was aborted.
    QuestionRejected {
        /// The asking session.
        session_id: SessionId,
        /// The dismissed question.
        request_id: QuestionId,
    },
}

impl BusEvent {
    /// The event's type name, such as `message.part.updated`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::SessionCreated { .. } => "session.created",
            Self::SessionUpdated { .. } => "session.updated",
            Self::SessionDiff { .. } => "session.diff",
            Self::SessionStatus { .. } => "session.status",
            Self::SessionIdle { .. } => "session.idle",
            Self::SessionError { .. } => "session.error",
            Self::SessionCompacted { .. } => "session.compacted",
            Self::MessageUpdated { .. } => "message.updated",
            Self::MessageRemoved { .. } => "message.removed",
            Self::PartRemoved { .. } => "message.part.removed",
            Self::PartUpdated { .. } => "message.part.updated",
            Self::PartDelta { .. } => "message.part.delta",
            Self::TodoUpdated { .. } => "todo.updated",
            Self::PermissionAsked(_) => "permission.asked",
            Self::PermissionReplied { .. } => "permission.replied",
            Self::QuestionAsked(_) => "question.asked",
            Self::QuestionReplied { .. } => "question.replied",
            Self::QuestionRejected { .. } => "question.rejected",
        }
    }

    /// A `permission.replied` event for a settled ask.
    pub fn replied(resolution: &Resolution) -> Self {
        Self::PermissionReplied {
            session_id: resolution.session_id.clone(),
            permission_id: resolution.request_id.clone(),
            response: resolution.reply,
        }
    }

    /// A `message.updated` event for an assistant message.
    pub fn assistant(message: &AssistantMessage) -> Self {
        Self::MessageUpdated { info: Box::new(Message::Assistant(message.clone())) }
    }
}

/// Publishes bus events to every subscriber; slow subscribers lose the oldest events.
#[derive(Debug, Clone)]
pub struct Bus {
    sender: broadcast::Sender<BusEvent>,
}

impl Bus {
    /// A bus whose subscribers each buffer up to `capacity` events.
    pub fn new(capacity: usize) -> Self {
        let (sender, _) = broadcast::channel(capacity.max(1));
        Self { sender }
    }

    /// A new subscription that sees every event published from now on.
    pub fn subscribe(&self) -> broadcast::Receiver<BusEvent> {
        self.sender.subscribe()
    }

    /// Publishes an event (nobody listening is fine).
    pub fn publish(&self, event: BusEvent) {
        let _ = self.sender.send(event);
    }
}

impl Default for Bus {
    fn default() -> Self {
        Self::new(4096)
    }
}
