//! The project this server serves, as OpenCode 1.18's clients read it: `GET /project`,
//! `/project/current`, `/project/{id}/directories`, `/vcs`, and `GET /api/location`.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use serde::Serialize;

use super::Shared;
use crate::error::ServerError;
use crate::extract::{DirectoryQuery, Location, LocationQuery, query};
use crate::session_info::project_id;
use crate::state::AppState;

fn worktree(state: &AppState) -> String {
    state.runtime.worktree().to_string_lossy().into_owned()
}

/// `GET /api/location`.
pub(crate) async fn location(
    State(state): Shared,
    q: Result<Query<LocationQuery>, QueryRejection>,
) -> Result<Json<Location>, ServerError> {
    query(q)?;
    Ok(Json(Location::of(state.runtime.worktree())))
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
