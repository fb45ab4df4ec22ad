//! The session object as OpenCode 1.18's clients read it: the stored session (which carries
//! its slug, cost and token totals, kept by the store) with its `projectID` hashed, in every
//! body and event that carries a session.

use serde::Serialize;
use session_store::Session;

use crate::project::project_id;

/// A stored session in OpenCode 1.18's `Session` shape.
#[derive(Debug, Serialize)]
#[serde(transparent)]
pub(crate) struct SessionInfo {
    session: Session,
}

impl SessionInfo {
    /// The client's view of `session`.
    pub(crate) fn new(session: &Session) -> Self {
        Self::from(session.clone())
    }
}

impl From<Session> for SessionInfo {
    fn from(mut session: Session) -> Self {
        session.project_id = project_id(&session.project_id);
        Self { session }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use session_core::{Identifier as _, SessionId};
    use session_store::{SessionModel, SessionTime, SessionTokens};

    use super::*;

    #[test]
    fn a_session_is_the_stored_one_with_its_project_id_hashed() {
        let session = Session {
            id: SessionId::parse("ses_01ABCdef").unwrap_or_else(|e| panic!("{e}")),
            slug: "calm-otter".into(),
            project_id: "p".into(),
            directory: "/w".into(),
            path: Some(String::new()),
            parent_id: None,
            summary: None,
            cost: rust_decimal::Decimal::new(105, 4),
            tokens: SessionTokens { input: 7, ..SessionTokens::default() },
            title: "T".into(),
            agent: Some("build".into()),
            model: Some(SessionModel {
                id: "m".into(),
                provider_id: "p".into(),
                variant: Some("default".into()),
            }),
            version: "0.1.0".into(),
            time: SessionTime { created: 1, updated: 2, compacting: None, archived: None },
            permission: Vec::new(),
            revert: None,
            extra: serde_json::Map::new(),
        };
        assert_eq!(
            serde_json::to_value(SessionInfo::new(&session)).unwrap_or_default(),
            json!({"id": "ses_01ABCdef", "slug": "calm-otter", "projectID": project_id("p"), "directory": "/w",
                   "path": "", "cost": 0.0105,
                   "tokens": {"input": 7, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
                   "title": "T", "agent": "build", "model": {"id": "m", "providerID": "p", "variant": "default"},
                   "version": "0.1.0", "time": {"created": 1, "updated": 2}})
        );
    }
}
