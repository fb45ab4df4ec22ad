//! The session object as OpenCode 1.18's clients read it: the stored session (which carries
//! its slug, cost and token totals, kept by the store) with its `projectID` hashed, in every
//! body and event that carries a session.
//!
//! OpenCode names a project by its git repository's first commit; this server serves one
//! worktree and names it by a SHA-256 of the folder a session was made in (the store's
//! `projectID`), so every instance and every restart gives a session the same project id
//! without writing one anywhere.

use session_runtime::sessions::Session;
use session_runtime::wire::SessionInfo;
use sha2::{Digest, Sha256};

/// The project id clients see for sessions made in `folder` (the store's `projectID`).
pub(crate) fn project_id(folder: &str) -> String {
    let digest = Sha256::digest(folder.as_bytes());
    // 40 hex digits, the length of the git commit ids OpenCode uses.
    digest.iter().take(20).map(|byte| format!("{byte:02x}")).collect()
}

/// The client's view of `session`.
pub(crate) fn session_info(session: &Session) -> SessionInfo<'static> {
    SessionInfo::with_project_id(session, project_id(&session.project_id))
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use session_core::{Identifier as _, SessionId};
    use session_runtime::sessions::{SessionModel, SessionTime, SessionTokens};

    use super::*;

    #[test]
    fn a_project_id_is_stable_and_looks_like_a_commit_id() {
        let id = project_id("/work/project");
        assert_eq!(id.len(), 40);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(id, project_id("/work/project"));
        assert_ne!(id, project_id("/work/other"));
    }

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
            serde_json::to_value(session_info(&session)).unwrap_or_default(),
            json!({"id": "ses_01ABCdef", "slug": "calm-otter", "projectID": project_id("p"), "directory": "/w",
                   "path": "", "cost": 0.0105,
                   "tokens": {"input": 7, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}},
                   "title": "T", "agent": "build", "model": {"id": "m", "providerID": "p", "variant": "default"},
                   "version": "0.1.0", "time": {"created": 1, "updated": 2}})
        );
    }
}
