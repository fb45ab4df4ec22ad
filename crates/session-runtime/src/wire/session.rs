//! The session as clients read it.

use std::borrow::Cow;

use serde::Serialize;
use session_store::Session;

/// A stored session in OpenCode 1.18's `Session` shape: the stored record (slug, cost and
/// token totals included), with the project id the client is shown.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(transparent)]
pub struct SessionInfo<'a>(Cow<'a, Session>);

impl<'a> SessionInfo<'a> {
    /// `session` exactly as stored (the bus's own shape).
    pub fn stored(session: &'a Session) -> Self {
        Self(Cow::Borrowed(session))
    }

    /// `session` with `project_id` in place of the stored one.
    pub fn with_project_id(session: &Session, project_id: String) -> SessionInfo<'static> {
        let mut session = session.clone();
        session.project_id = project_id;
        SessionInfo(Cow::Owned(session))
    }

    /// The session shown.
    pub fn session(&self) -> &Session {
        &self.0
    }
}
