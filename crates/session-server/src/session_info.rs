//! The session object as OpenCode 1.18's clients read it: the stored session with the
//! fields they require besides (`slug`), in every body and event that carries a session.

use std::borrow::Cow;

use serde::Serialize;
use session_store::Session;

/// A stored session in OpenCode 1.18's `Session` shape.
#[derive(Debug, Serialize)]
pub(crate) struct SessionInfo<'a> {
    #[serde(flatten)]
    session: Cow<'a, Session>,
    /// A short stable name for URLs and lists; OpenCode makes random words, this server
    /// uses the id's unique tail so that it needs no storage.
    slug: String,
}

impl<'a> SessionInfo<'a> {
    /// The client's view of `session`.
    pub(crate) fn new(session: &'a Session) -> Self {
        Self { slug: slug(session), session: Cow::Borrowed(session) }
    }
}

impl From<Session> for SessionInfo<'static> {
    fn from(session: Session) -> Self {
        Self { slug: slug(&session), session: Cow::Owned(session) }
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
            json!({"id": "ses_01ABCdef", "slug": "01abcdef", "projectID": "p", "directory": "/w",
                   "title": "T", "version": "0.1.0", "time": {"created": 1, "updated": 2}})
        );
    }
}
