//! Events as clients read them: `{"type", "properties"}`, in OpenCode 1.18's shapes for
//! `GET /event` ([`Event::opencode`]) or with the bus's own fields for `session run --format
//! events` ([`Event::bus`]). The two differ in five places: OpenCode's sessions, messages and
//! parts carry their `sessionID` (and a part its `time`), its sessions show the client's
//! project id, and its `permission.replied` says `requestID` and `reply`.

use serde::Serialize;
use session_core::permission::{PermissionAsk, Reply};
use session_core::{
    FileDiff, Message, MessageError, MessageId, Part, PartId, PermissionId, QuestionId, SessionId,
};
use session_store::Session;
use session_tools::Todo;

use super::SessionInfo;
use crate::BusEvent;
use crate::questions::QuestionRequest;
use crate::sessions::SessionStatus;

/// One event, serialized as `{"type": "...", "properties": {...}}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "type", content = "properties")]
pub enum Event<'a> {
    /// The first event of every stream.
    #[serde(rename = "server.connected")]
    ServerConnected(Connected),
    /// A session was created.
    #[serde(rename = "session.created")]
    SessionCreated(SessionChange<'a>),
    /// A session changed.
    #[serde(rename = "session.updated")]
    SessionUpdated(SessionChange<'a>),
    /// A session was deleted (the server's own event: the bus has none).
    #[serde(rename = "session.deleted")]
    SessionDeleted(SessionChange<'a>),
    /// What the session changed in the working tree, per file.
    #[serde(rename = "session.diff")]
    SessionDiff(SessionDiff<'a>),
    /// A session's status changed.
    #[serde(rename = "session.status")]
    SessionStatus(SessionStatusChange<'a>),
    /// A session went idle.
    #[serde(rename = "session.idle")]
    SessionIdle(SessionRef<'a>),
    /// Processing failed.
    #[serde(rename = "session.error")]
    SessionError(SessionFailure<'a>),
    /// A compaction finished.
    #[serde(rename = "session.compacted")]
    SessionCompacted(SessionRef<'a>),
    /// A message was created or changed.
    #[serde(rename = "message.updated")]
    MessageUpdated(MessageChange<'a>),
    /// A message was removed.
    #[serde(rename = "message.removed")]
    MessageRemoved(MessageRemoval<'a>),
    /// A part was removed from a message that stays.
    #[serde(rename = "message.part.removed")]
    PartRemoved(PartRemoval<'a>),
    /// A part was created or changed.
    #[serde(rename = "message.part.updated")]
    PartUpdated(PartChange<'a>),
    /// Text was appended to a streaming part.
    #[serde(rename = "message.part.delta")]
    PartDelta(PartDelta<'a>),
    /// The session's todo list was written.
    #[serde(rename = "todo.updated")]
    TodoUpdated(TodoChange<'a>),
    /// A permission ask is waiting for an answer.
    #[serde(rename = "permission.asked")]
    PermissionAsked(&'a PermissionAsk),
    /// A permission ask was answered.
    #[serde(rename = "permission.replied")]
    PermissionReplied(PermissionReply<'a>),
    /// The `question` tool is waiting for answers.
    #[serde(rename = "question.asked")]
    QuestionAsked(&'a QuestionRequest),
    /// A question was answered.
    #[serde(rename = "question.replied")]
    QuestionReplied(QuestionReply<'a>),
    /// A question was dismissed (or withdrawn by an abort).
    #[serde(rename = "question.rejected")]
    QuestionRejected(QuestionRejection<'a>),
}

/// An event with its id: `{"id", "type", "properties"}`, as `GET /event` sends it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Stamped<'a> {
    /// The event's id (`evt_...`).
    pub id: &'a str,
    /// The event.
    #[serde(flatten)]
    pub event: Event<'a>,
}

/// The properties of `server.connected`: none.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct Connected {}

/// `session.created`, `session.updated` and `session.deleted`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionChange<'a> {
    /// The session (OpenCode's shape only).
    #[serde(rename = "sessionID", skip_serializing_if = "Option::is_none")]
    pub session_id: Option<&'a SessionId>,
    /// The session record.
    pub info: SessionInfo<'a>,
}

/// `session.diff`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionDiff<'a> {
    /// The session.
    #[serde(rename = "sessionID")]
    pub session_id: &'a SessionId,
    /// The changed files.
    pub diff: &'a [FileDiff],
}

/// `session.status`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionStatusChange<'a> {
    /// The session.
    #[serde(rename = "sessionID")]
    pub session_id: &'a SessionId,
    /// Its new status.
    pub status: &'a SessionStatus,
}

/// `session.idle` and `session.compacted`: the session alone.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionRef<'a> {
    /// The session.
    #[serde(rename = "sessionID")]
    pub session_id: &'a SessionId,
}

/// `session.error`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionFailure<'a> {
    /// The session.
    #[serde(rename = "sessionID")]
    pub session_id: &'a SessionId,
    /// The error, as `{name, data}` (absent when another instance's error could not be read).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a MessageError>,
}

/// `message.updated`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageChange<'a> {
    /// The message's session (OpenCode's shape only).
    #[serde(rename = "sessionID", skip_serializing_if = "Option::is_none")]
    pub session_id: Option<&'a SessionId>,
    /// The message.
    pub info: &'a Message,
}

/// `message.removed`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MessageRemoval<'a> {
    /// The session.
    #[serde(rename = "sessionID")]
    pub session_id: &'a SessionId,
    /// The removed message.
    #[serde(rename = "messageID")]
    pub message_id: &'a MessageId,
}

/// `message.part.removed`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartRemoval<'a> {
    /// The session.
    #[serde(rename = "sessionID")]
    pub session_id: &'a SessionId,
    /// The message.
    #[serde(rename = "messageID")]
    pub message_id: &'a MessageId,
    /// The removed part.
    #[serde(rename = "partID")]
    pub part_id: &'a PartId,
}

/// `message.part.updated`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartChange<'a> {
    /// The part's session (OpenCode's shape only).
    #[serde(rename = "sessionID", skip_serializing_if = "Option::is_none")]
    pub session_id: Option<&'a SessionId>,
    /// The part.
    pub part: &'a Part,
    /// When the event was sent, epoch ms (OpenCode's shape only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub time: Option<u64>,
}

/// `message.part.delta`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PartDelta<'a> {
    /// The session.
    #[serde(rename = "sessionID")]
    pub session_id: &'a SessionId,
    /// The message.
    #[serde(rename = "messageID")]
    pub message_id: &'a MessageId,
    /// The part.
    #[serde(rename = "partID")]
    pub part_id: &'a PartId,
    /// The field grown.
    pub field: &'a str,
    /// The appended text.
    pub delta: &'a str,
}

/// `todo.updated`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TodoChange<'a> {
    /// The session.
    #[serde(rename = "sessionID")]
    pub session_id: &'a SessionId,
    /// The whole list as written.
    pub todos: &'a [Todo],
}

/// `permission.replied`, in either shape.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(untagged)]
pub enum PermissionReply<'a> {
    /// OpenCode 1.18's: `{sessionID, requestID, reply}`.
    OpenCode {
        /// The asking session.
        #[serde(rename = "sessionID")]
        session_id: &'a SessionId,
        /// The answered ask.
        #[serde(rename = "requestID")]
        request_id: &'a PermissionId,
        /// The answer.
        reply: Reply,
    },
    /// The bus's: `{sessionID, permissionID, response}`.
    Bus {
        /// The asking session.
        #[serde(rename = "sessionID")]
        session_id: &'a SessionId,
        /// The answered ask.
        #[serde(rename = "permissionID")]
        permission_id: &'a PermissionId,
        /// The answer.
        response: Reply,
    },
}

/// `question.replied`: `{sessionID, requestID, answers}` in both shapes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuestionReply<'a> {
    /// The asking session.
    #[serde(rename = "sessionID")]
    pub session_id: &'a SessionId,
    /// The answered question.
    #[serde(rename = "requestID")]
    pub request_id: &'a QuestionId,
    /// One list of labels (or typed text) per question.
    pub answers: &'a [Vec<String>],
}

/// `question.rejected`: `{sessionID, requestID}`.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct QuestionRejection<'a> {
    /// The asking session.
    #[serde(rename = "sessionID")]
    pub session_id: &'a SessionId,
    /// The dismissed question.
    #[serde(rename = "requestID")]
    pub request_id: &'a QuestionId,
}

/// Which shape an event is built in.
enum Shape<'f> {
    /// The bus's own fields.
    Bus,
    /// OpenCode's, sent at `now_ms`, sessions showing `project_id` of their stored one.
    OpenCode { now_ms: u64, project_id: &'f dyn Fn(&str) -> String },
}

impl<'a> Event<'a> {
    /// `event` in OpenCode 1.18's shape, sent at `now_ms`; `project_id` gives the project id
    /// clients see for a stored one.
    pub fn opencode(event: &'a BusEvent, now_ms: u64, project_id: &dyn Fn(&str) -> String) -> Self {
        Self::build(event, &Shape::OpenCode { now_ms, project_id })
    }

    /// `event` with the bus's own fields.
    pub fn bus(event: &'a BusEvent) -> Self {
        Self::build(event, &Shape::Bus)
    }

    /// The event's type name, such as `message.part.updated`.
    pub fn name(&self) -> &'static str {
        match self {
            Self::ServerConnected(_) => "server.connected",
            Self::SessionCreated(_) => "session.created",
            Self::SessionUpdated(_) => "session.updated",
            Self::SessionDeleted(_) => "session.deleted",
            Self::SessionDiff(_) => "session.diff",
            Self::SessionStatus(_) => "session.status",
            Self::SessionIdle(_) => "session.idle",
            Self::SessionError(_) => "session.error",
            Self::SessionCompacted(_) => "session.compacted",
            Self::MessageUpdated(_) => "message.updated",
            Self::MessageRemoved(_) => "message.removed",
            Self::PartRemoved(_) => "message.part.removed",
            Self::PartUpdated(_) => "message.part.updated",
            Self::PartDelta(_) => "message.part.delta",
            Self::TodoUpdated(_) => "todo.updated",
            Self::PermissionAsked(_) => "permission.asked",
            Self::PermissionReplied(_) => "permission.replied",
            Self::QuestionAsked(_) => "question.asked",
            Self::QuestionReplied(_) => "question.replied",
            Self::QuestionRejected(_) => "question.rejected",
        }
    }

    fn build(event: &'a BusEvent, shape: &Shape<'_>) -> Self {
        let opencode = matches!(shape, Shape::OpenCode { .. });
        let session = |info: &'a Session| SessionChange {
            session_id: opencode.then_some(&info.id),
            info: match shape {
                Shape::Bus => SessionInfo::stored(info),
                Shape::OpenCode { project_id, .. } => {
                    SessionInfo::with_project_id(info, project_id(&info.project_id))
                }
            },
        };
        // Every field is named (no `..`): a field added to the bus must be placed here.
        match event {
            BusEvent::SessionCreated { info } => Self::SessionCreated(session(info)),
            BusEvent::SessionUpdated { info } => Self::SessionUpdated(session(info)),
            BusEvent::SessionDiff { session_id, diff } => Self::SessionDiff(SessionDiff { session_id, diff }),
            BusEvent::SessionStatus { session_id, status } => {
                Self::SessionStatus(SessionStatusChange { session_id, status })
            }
            BusEvent::SessionIdle { session_id } => Self::SessionIdle(SessionRef { session_id }),
            BusEvent::SessionError { session_id, error } => {
                Self::SessionError(SessionFailure { session_id, error: Some(error) })
            }
            BusEvent::SessionCompacted { session_id } => Self::SessionCompacted(SessionRef { session_id }),
            BusEvent::MessageUpdated { info } => {
                Self::MessageUpdated(MessageChange { session_id: opencode.then(|| info.session_id()), info })
            }
            BusEvent::MessageRemoved { session_id, message_id } => {
                Self::MessageRemoved(MessageRemoval { session_id, message_id })
            }
            BusEvent::PartRemoved { session_id, message_id, part_id } => {
                Self::PartRemoved(PartRemoval { session_id, message_id, part_id })
            }
            BusEvent::PartUpdated { part } => Self::PartUpdated(PartChange {
                session_id: opencode.then_some(&part.session_id),
                part,
                time: match shape {
                    Shape::Bus => None,
                    Shape::OpenCode { now_ms, .. } => Some(*now_ms),
                },
            }),
            BusEvent::PartDelta { session_id, message_id, part_id, field, delta } => {
                Self::PartDelta(PartDelta { session_id, message_id, part_id, field, delta })
            }
            BusEvent::TodoUpdated { session_id, todos } => {
                Self::TodoUpdated(TodoChange { session_id, todos })
            }
            BusEvent::PermissionAsked(ask) => Self::PermissionAsked(ask),
            BusEvent::PermissionReplied { session_id, permission_id, response } => {
                Self::PermissionReplied(if opencode {
                    PermissionReply::OpenCode { session_id, request_id: permission_id, reply: *response }
                } else {
                    PermissionReply::Bus { session_id, permission_id, response: *response }
                })
            }
            BusEvent::QuestionAsked(request) => Self::QuestionAsked(request),
            BusEvent::QuestionReplied { session_id, request_id, answers } => {
                Self::QuestionReplied(QuestionReply { session_id, request_id, answers })
            }
            BusEvent::QuestionRejected { session_id, request_id } => {
                Self::QuestionRejected(QuestionRejection { session_id, request_id })
            }
        }
    }
}
