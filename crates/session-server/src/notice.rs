//! The notices instances on one PostgreSQL database send each other: what happened (ids only,
//! the bodies stay in the store) or what is asked of the instance running a session.

use serde::{Deserialize, Serialize};
use session_core::permission::{PermissionAsk, PermissionRequest, ToolCallRef};
use session_core::{
    FileDiff, Identifier as _, JsonObject, MessageId, PartId, PermissionId, SessionId, permission::Reply,
};
use session_runtime::sessions::SessionStatus;

/// One notice: the sending instance, the session, and what it says.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Notice {
    /// The sending instance (its store owner id); receivers skip their own notices.
    pub origin: String,
    /// The session the notice is about.
    pub session: SessionId,
    /// What happened, or what is asked.
    #[serde(flatten)]
    pub body: NoticeBody,
}

/// What a notice says, tagged by `kind` with the client event's name where it has one.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind")]
pub enum NoticeBody {
    /// The session was created (receivers read it from the store).
    #[serde(rename = "session.created")]
    SessionCreated,
    /// The session changed.
    #[serde(rename = "session.updated")]
    SessionUpdated,
    /// The session's summary diff changed (a long file list is cut to what fits a notice).
    #[serde(rename = "session.diff")]
    SessionDiff {
        /// The changed files.
        diff: Vec<FileDiff>,
    },
    /// The session's status changed (a retry's message is cut short).
    #[serde(rename = "session.status")]
    SessionStatus {
        /// The new status.
        status: SessionStatus,
    },
    /// The session went idle.
    #[serde(rename = "session.idle")]
    SessionIdle,
    /// Processing failed; the error is the newest failed assistant message's.
    #[serde(rename = "session.error")]
    SessionError,
    /// A compaction finished.
    #[serde(rename = "session.compacted")]
    SessionCompacted,
    /// A message was created or changed.
    #[serde(rename = "message.updated")]
    MessageUpdated {
        /// The message.
        message: MessageId,
    },
    /// A message was removed.
    #[serde(rename = "message.removed")]
    MessageRemoved {
        /// The removed message.
        message: MessageId,
    },
    /// A part was created, changed or grew (receivers read the text written so far).
    #[serde(rename = "message.part.updated")]
    PartUpdated {
        /// The message.
        message: MessageId,
        /// The part.
        part: PartId,
        /// The part is still streaming: receivers thin these out.
        #[serde(default, skip_serializing_if = "std::ops::Not::not")]
        streaming: bool,
    },
    /// A part was removed.
    #[serde(rename = "message.part.removed")]
    PartRemoved {
        /// The message.
        message: MessageId,
        /// The removed part.
        part: PartId,
    },
    /// An ask waits for an answer in the sending instance (it is stored nowhere, so its small
    /// fields travel along; its metadata does not).
    #[serde(rename = "permission.updated")]
    PermissionUpdated {
        /// The ask as clients see it.
        permission: Permission,
    },
    /// An ask was answered.
    #[serde(rename = "permission.replied")]
    PermissionReplied {
        /// The ask.
        permission: PermissionId,
        /// The answer.
        response: Reply,
    },
    /// The instance running the session should abort its run.
    #[serde(rename = "session.abort")]
    Abort,
    /// The instance where the ask waits should answer it.
    #[serde(rename = "permission.reply")]
    Reply {
        /// The ask.
        permission: PermissionId,
        /// The answer.
        response: Reply,
    },
}

impl NoticeBody {
    /// The kind's name on the wire, for logs.
    pub fn kind(&self) -> &'static str {
        match self {
            Self::SessionCreated => "session.created",
            Self::SessionUpdated => "session.updated",
            Self::SessionDiff { .. } => "session.diff",
            Self::SessionStatus { .. } => "session.status",
            Self::SessionIdle => "session.idle",
            Self::SessionError => "session.error",
            Self::SessionCompacted => "session.compacted",
            Self::MessageUpdated { .. } => "message.updated",
            Self::MessageRemoved { .. } => "message.removed",
            Self::PartUpdated { .. } => "message.part.updated",
            Self::PartRemoved { .. } => "message.part.removed",
            Self::PermissionUpdated { .. } => "permission.updated",
            Self::PermissionReplied { .. } => "permission.replied",
            Self::Abort => "session.abort",
            Self::Reply { .. } => "permission.reply",
        }
    }
}

/// An ask as it travels between instances (OpenCode's older `Permission` shape; its
/// metadata stays behind).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Permission {
    /// The ask's id.
    pub id: PermissionId,
    /// The permission asked for (`read`, `edit`, `bash`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// The values asked for.
    pub pattern: Vec<String>,
    /// The asking session.
    #[serde(rename = "sessionID")]
    pub session_id: SessionId,
    /// The assistant message of the asking tool call (empty when no tool asks).
    #[serde(rename = "messageID")]
    pub message_id: String,
    /// The permission and its patterns, for display.
    pub title: String,
    /// Details shown to the user.
    pub metadata: JsonObject,
    /// When the ask was published.
    pub time: PermissionTime,
    /// The asking tool call.
    #[serde(rename = "callID", default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// When an ask was published.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionTime {
    /// Epoch milliseconds.
    pub created: u64,
}

impl Permission {
    /// The ask this stands for (an "always" reply approves exactly the asked patterns, the
    /// list of "always" patterns not travelling).
    pub fn to_ask(&self) -> PermissionAsk {
        PermissionAsk {
            id: self.id.clone(),
            session_id: self.session_id.clone(),
            request: PermissionRequest {
                permission: self.kind.clone(),
                patterns: self.pattern.clone(),
                always: Vec::new(),
                metadata: self.metadata.clone(),
            },
            tool: self.call_id.as_ref().and_then(|call_id| {
                let message_id = MessageId::parse(&self.message_id).ok()?;
                Some(ToolCallRef { message_id, call_id: call_id.clone() })
            }),
        }
    }

    /// The client's view of `ask`, published at `created` (epoch ms).
    pub fn new(ask: &PermissionAsk, created: u64) -> Self {
        let request = &ask.request;
        let title = if request.patterns.is_empty() {
            request.permission.clone()
        } else {
            format!("{} {}", request.permission, request.patterns.join(", "))
        };
        Self {
            id: ask.id.clone(),
            kind: request.permission.clone(),
            pattern: request.patterns.clone(),
            session_id: ask.session_id.clone(),
            message_id: ask.tool.as_ref().map(|t| t.message_id.to_string()).unwrap_or_default(),
            title,
            metadata: request.metadata.clone(),
            time: PermissionTime { created },
            call_id: ask.tool.as_ref().map(|t| t.call_id.clone()),
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use session_core::Identifier as _;

    use super::*;

    fn id<T: session_core::Identifier>(value: &str) -> T {
        T::parse(value).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn notices_are_tagged_by_kind_and_round_trip() {
        let notice = Notice {
            origin: "owner-a".into(),
            session: SessionId::parse("ses_1").unwrap(),
            body: NoticeBody::PartUpdated {
                message: MessageId::parse("msg_1").unwrap(),
                part: PartId::parse("prt_1").unwrap(),
                streaming: false,
            },
        };
        let value = serde_json::to_value(&notice).unwrap();
        assert_eq!(
            value,
            json!({"origin": "owner-a", "session": "ses_1", "kind": "message.part.updated", "message": "msg_1", "part": "prt_1"})
        );
        assert_eq!(serde_json::from_value::<Notice>(value).ok(), Some(notice));
        let abort = json!({"origin": "o", "session": "ses_1", "kind": "session.abort"});
        assert!(matches!(
            serde_json::from_value::<Notice>(abort),
            Ok(Notice { body: NoticeBody::Abort, .. })
        ));
        let unknown = json!({"origin": "o", "session": "ses_1", "kind": "session.shrug"});
        assert!(serde_json::from_value::<Notice>(unknown).is_err());
    }

    #[test]
    fn a_notified_ask_keeps_its_tool_call() {
        let permission = Permission {
            id: id("per_1"),
            kind: "edit".into(),
            pattern: vec!["a.rs".into()],
            session_id: id("ses_1"),
            message_id: "msg_1".into(),
            title: "edit a.rs".into(),
            metadata: JsonObject::new(),
            time: PermissionTime { created: 1 },
            call_id: Some("call_1".into()),
        };
        let ask = permission.to_ask();
        assert_eq!(ask.request.patterns, vec!["a.rs".to_owned()]);
        assert_eq!(ask.tool, Some(ToolCallRef { message_id: id("msg_1"), call_id: "call_1".into() }));
    }
}
