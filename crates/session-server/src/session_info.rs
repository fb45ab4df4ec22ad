//! The session object as OpenCode 1.18's clients read it: the stored session with the
//! fields they require besides (`slug`, a hashed `projectID`), in every body and event that
//! carries a session, and its summed `cost` and `tokens` where a route reads them.

use serde::Serialize;
use session_core::{MessageWithParts, TokenUsage};
use session_store::Session;

use crate::project::project_id;

/// A stored session in OpenCode 1.18's `Session` shape.
#[derive(Debug, Serialize)]
pub(crate) struct SessionInfo {
    #[serde(flatten)]
    session: Session,
    /// A short stable name for URLs and lists; OpenCode makes random words, this server
    /// uses the id's unique tail so that it needs no storage.
    slug: String,
    /// What the session's answers cost so far, in dollars.
    #[serde(skip_serializing_if = "Option::is_none")]
    cost: Option<f64>,
    /// The tokens of the session's answers so far.
    #[serde(skip_serializing_if = "Option::is_none")]
    tokens: Option<TokenUsage>,
}

impl SessionInfo {
    /// The client's view of `session`.
    pub(crate) fn new(session: &Session) -> Self {
        Self::from(session.clone())
    }

    /// With the cost and tokens of `messages` (the session's history) summed.
    pub(crate) fn with_usage(mut self, messages: &[MessageWithParts]) -> Self {
        let mut cost = rust_decimal::Decimal::ZERO;
        let mut tokens = TokenUsage::default();
        for message in messages {
            if let session_core::Message::Assistant(assistant) = &message.info {
                cost += assistant.cost;
                tokens.input += assistant.tokens.input;
                tokens.output += assistant.tokens.output;
                tokens.reasoning += assistant.tokens.reasoning;
                tokens.cache.read += assistant.tokens.cache.read;
                tokens.cache.write += assistant.tokens.cache.write;
            }
        }
        self.cost = Some(std::str::FromStr::from_str(&cost.to_string()).unwrap_or(0.0));
        self.tokens = Some(tokens);
        self
    }
}

impl From<Session> for SessionInfo {
    fn from(mut session: Session) -> Self {
        let slug = slug(&session);
        session.project_id = project_id(&session.project_id);
        Self { slug, session, cost: None, tokens: None }
    }
}

/// The session id without its prefix, lower-cased.
fn slug(session: &Session) -> String {
    let id = session.id.as_str();
    id.strip_prefix("ses_").unwrap_or(id).to_ascii_lowercase()
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use session_core::{Identifier as _, SessionId};
    use session_store::SessionTime;

    use super::*;

    #[test]
    fn a_session_carries_its_slug_beside_the_stored_fields() {
        let session = Session {
            id: SessionId::parse("ses_01ABCdef").unwrap_or_else(|e| panic!("{e}")),
            project_id: "p".into(),
            directory: "/w".into(),
            parent_id: None,
            title: "T".into(),
            version: "0.1.0".into(),
            summary: None,
            revert: None,
            time: SessionTime { created: 1, updated: 2, compacting: None, archived: None },
            permission: Vec::new(),
            extra: serde_json::Map::new(),
        };
        assert_eq!(
            serde_json::to_value(SessionInfo::new(&session)).unwrap_or_default(),
            json!({"id": "ses_01ABCdef", "slug": "01abcdef", "projectID": project_id("p"), "directory": "/w",
                   "title": "T", "version": "0.1.0", "time": {"created": 1, "updated": 2}})
        );
    }
}
