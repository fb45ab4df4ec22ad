//! The project this server serves, as OpenCode 1.18's clients read it: `GET /project`,
//! `/project/current`, `/project/{id}/directories`, `/vcs`, and the v2 `location` every
//! `/api/*` answer carries.
//!
//! OpenCode names a project by its git repository's first commit; this server serves one
//! worktree and names it by a SHA-256 of the folder a session was made in (the store's
//! `projectID`), so every instance and every restart gives a session the same project id
//! without writing one anywhere.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::AppState;
use crate::error::ServerError;
use crate::routes::{DirectoryQuery, query};

type Shared = State<Arc<AppState>>;

/// The project id clients see for sessions made in `folder` (the store's `projectID`).
pub(crate) fn project_id(folder: &str) -> String {
    let digest = Sha256::digest(folder.as_bytes());
    // 40 hex digits, the length of the git commit ids OpenCode uses.
    digest.iter().take(20).map(|byte| format!("{byte:02x}")).collect()
}

fn worktree(state: &AppState) -> String {
    state.runtime.worktree().to_string_lossy().into_owned()
}

/// The query of the v2 routes: `location[directory]` and `location[workspace]`, or neither.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct LocationQuery {
    #[serde(default, rename = "location[directory]")]
    #[expect(dead_code, reason = "accepted so that v2 requests parse; this server serves one project")]
    directory: Option<String>,
    #[serde(default, rename = "location[workspace]")]
    #[expect(dead_code, reason = "accepted so that v2 requests parse; this server has no workspaces")]
    workspace: Option<String>,
}

/// The v2 `LocationInfo`.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Location {
    directory: String,
    project: LocationProject,
}

#[derive(Debug, Clone, Serialize)]
struct LocationProject {
    id: String,
    directory: String,
}

impl Location {
    /// Where this server works.
    pub(crate) fn of(state: &AppState) -> Self {
        let directory = worktree(state);
        Self {
            project: LocationProject { id: project_id(&directory), directory: directory.clone() },
            directory,
        }
    }
}

/// A v2 answer: where it applies, and the data.
#[derive(Debug, Serialize)]
pub(crate) struct Located<T> {
    location: Location,
    data: T,
}

impl<T> Located<T> {
    /// `data` at this server's location.
    pub(crate) fn new(state: &AppState, data: T) -> Self {
        Self { location: Location::of(state), data }
    }
}

/// `GET /api/location`.
pub(crate) async fn location(
    State(state): Shared,
    q: Result<Query<LocationQuery>, QueryRejection>,
) -> Result<Json<Location>, ServerError> {
    query(q)?;
    Ok(Json(Location::of(&state)))
}

/// OpenCode's `Project`.
#[derive(Debug, Serialize)]
pub(crate) struct Project {
    id: String,
    worktree: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    vcs: Option<&'static str>,
    name: String,
    time: ProjectTime,
    sandboxes: Vec<String>,
}

#[derive(Debug, Serialize)]
struct ProjectTime {
    created: u64,
    updated: u64,
}

fn project(state: &AppState) -> Project {
    let worktree = worktree(state);
    let path = state.runtime.worktree();
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_else(|| worktree.clone());
    let created = std::fs::metadata(path)
        .and_then(|m| m.created().or_else(|_| m.modified()))
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
    Project {
        id: project_id(&worktree),
        vcs: path.join(".git").exists().then_some("git"),
        worktree,
        name,
        time: ProjectTime { created, updated: created },
        sandboxes: Vec::new(),
    }
}

/// `GET /project/current`.
pub(crate) async fn current(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Project>, ServerError> {
    query(q)?;
    Ok(Json(project(&state)))
}

/// `GET /project`: the one project this server serves.
pub(crate) async fn list(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Vec<Project>>, ServerError> {
    query(q)?;
    Ok(Json(vec![project(&state)]))
}

/// One of OpenCode's `ProjectDirectories`.
#[derive(Debug, Serialize)]
pub(crate) struct ProjectDirectory {
    directory: String,
}

/// `GET /project/{projectID}/directories`: the worktree, for this server's project.
pub(crate) async fn directories(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Vec<ProjectDirectory>>, ServerError> {
    query(q)?;
    let worktree = worktree(&state);
    if id != project_id(&worktree) {
        return Err(ServerError::NotFound(format!(
            "project {id} is not served here (one project per server)"
        )));
    }
    Ok(Json(vec![ProjectDirectory { directory: worktree }]))
}

/// OpenCode's `VcsInfo`.
#[derive(Debug, Default, Serialize)]
pub(crate) struct VcsInfo {
    #[serde(skip_serializing_if = "Option::is_none")]
    branch: Option<String>,
}

/// `GET /vcs`: the branch `HEAD` names, read from the repository's `HEAD` file (a detached
/// head or no repository has none).
pub(crate) async fn vcs(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<VcsInfo>, ServerError> {
    query(q)?;
    let head =
        tokio::fs::read_to_string(state.runtime.worktree().join(".git/HEAD")).await.unwrap_or_default();
    let branch = head.trim().strip_prefix("ref: refs/heads/").map(str::to_owned);
    Ok(Json(VcsInfo { branch }))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_project_id_is_stable_and_looks_like_a_commit_id() {
        let id = project_id("/work/project");
        assert_eq!(id.len(), 40);
        assert!(id.chars().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(id, project_id("/work/project"));
        assert_ne!(id, project_id("/work/other"));
    }
}
