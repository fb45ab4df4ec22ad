//! What the runtime keeps on a session's record besides its messages, as OpenCode 1.18.34
//! keeps it: the folder relative to the project (`path`), the agent and model of its newest
//! prompt, and the rules it was started with. The store mints the slug and keeps the totals.

use std::path::{Component, Path};

use session_core::permission::Rule;
use session_core::{ModelRef, SessionId};
use session_store::{AgentModel, NewSession, Session, SessionModel, SessionPatch};

use super::bus::BusEvent;
use super::error::RuntimeError;
use super::runtime::Runtime;

/// What a new session of the runtime's folder starts with.
#[derive(Debug, Clone, Default)]
pub struct SessionStart {
    /// The id it takes (one a request sent ahead already named); unset, the store mints one.
    pub id: Option<SessionId>,
    /// Its title; unset, the store's default.
    pub title: Option<String>,
    /// Rules its runs obey after their agent's (OpenCode's session `permission`).
    pub permission: Vec<Rule>,
    /// The agent a client named for it; a prompt sets it otherwise.
    pub agent: Option<String>,
    /// The model a client named for it; a prompt sets it otherwise.
    pub model: Option<SessionModel>,
}

impl Runtime {
    /// Creates a session in the worktree.
    pub async fn create_session(&self, title: Option<String>) -> Result<Session, RuntimeError> {
        self.create_session_with_rules(title, Vec::new()).await
    }

    /// Creates a session in the worktree whose runs also obey `permission`, after the agent's
    /// rules (OpenCode's session `permission`).
    pub async fn create_session_with_rules(
        &self,
        title: Option<String>,
        permission: Vec<session_core::permission::Rule>,
    ) -> Result<Session, RuntimeError> {
        self.create_session_as(None, title, permission).await
    }

    /// [`Runtime::create_session_with_rules`] with the id `id` when given (the id a request
    /// sent ahead names, [`crate::sessions::RequestAhead::session_id`]), else one the store mints.
    pub async fn create_session_as(
        &self,
        id: Option<SessionId>,
        title: Option<String>,
        permission: Vec<session_core::permission::Rule>,
    ) -> Result<Session, RuntimeError> {
        self.start_session(SessionStart { id, title, permission, ..Default::default() }).await
    }

    /// Creates a session in the worktree with what `start` says.
    pub async fn start_session(&self, start: SessionStart) -> Result<Session, RuntimeError> {
        let worktree = &self.settings.worktree;
        let directory = worktree.to_string_lossy().into_owned();
        let session = self
            .store
            .create_session(NewSession {
                id: start.id,
                project_id: directory.clone(),
                directory,
                title: start.title,
                parent_id: None,
                version: Some(env!("CARGO_PKG_VERSION").to_owned()),
                permission: start.permission,
                path: Some(project_path(worktree)),
                agent: start.agent,
                model: start.model,
            })
            .await?;
        self.bus.publish(BusEvent::SessionCreated { info: Box::new(session.clone()) });
        Ok(session)
    }

    /// Records the agent and model of a prompt written at `time` on its session when either
    /// differs from the session's (OpenCode's `setAgentModel`), and tells the bus.
    pub(super) async fn note_agent_model(
        &self,
        session_id: &SessionId,
        agent: &str,
        model: &ModelRef,
        time: u64,
    ) -> Result<(), RuntimeError> {
        let model = SessionModel::of(model);
        let session = self.store.get_session(session_id).await?;
        if session.agent.as_deref() == Some(agent)
            && session.model.as_ref().is_some_and(|m| m.same_as(&model))
        {
            return Ok(());
        }
        let patch = SessionPatch {
            agent_model: Some(AgentModel { agent: agent.to_owned(), model, time }),
            ..SessionPatch::default()
        };
        let updated = self.store.update_session(session_id, patch).await?;
        self.bus.publish(BusEvent::SessionUpdated { info: Box::new(updated) });
        Ok(())
    }
}

/// `folder` relative to its project's root, `/`-separated (`""` at the root), as OpenCode
/// records a session's `path`: the project is the git working tree above the folder, and a
/// folder in no git working tree belongs to OpenCode's global project, rooted at `/`.
pub(crate) fn project_path(folder: &Path) -> String {
    let root = folder.ancestors().find(|dir| dir.join(".git").exists()).unwrap_or(Path::new("/"));
    let relative = folder.strip_prefix(root).unwrap_or(folder);
    relative
        .components()
        .filter_map(|component| match component {
            Component::Normal(name) => Some(name.to_string_lossy().into_owned()),
            _ => None,
        })
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_folder_is_recorded_relative_to_its_git_root_or_to_the_file_system_root() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let root = dir.path().join("repo");
        std::fs::create_dir_all(root.join(".git")).unwrap_or_else(|e| panic!("{e}"));
        std::fs::create_dir_all(root.join("crates/core")).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(project_path(&root), "");
        assert_eq!(project_path(&root.join("crates/core")), "crates/core");
        let loose = dir.path().join("loose");
        std::fs::create_dir_all(&loose).unwrap_or_else(|e| panic!("{e}"));
        let expected = loose.to_string_lossy().trim_start_matches('/').to_owned();
        assert_eq!(project_path(&loose), expected);
    }
}
