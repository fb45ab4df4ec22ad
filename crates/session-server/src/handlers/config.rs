//! What a client reads about the server: its folders (`GET /path`), the client's view of the
//! configuration (`GET /config`), and what it can do (`GET /experimental/capabilities`,
//! `/experimental/console`: no background subagents, no console organisation).

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::Serialize;

use super::Shared;
use crate::error::ServerError;
use crate::extract::{DirectoryQuery, query};
use crate::info::ClientConfig;

/// OpenCode's `Path`: the folders a client shows and resolves files against.
#[derive(Debug, Serialize)]
pub(crate) struct PathInfo {
    home: String,
    state: String,
    config: String,
    worktree: String,
    directory: String,
}

/// `GET /path`.
pub(crate) async fn path(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<PathInfo>, ServerError> {
    query(q)?;
    let text = |path: &std::path::Path| path.to_string_lossy().into_owned();
    let worktree = text(state.runtime.worktree());
    Ok(Json(PathInfo {
        home: text(&state.info.home),
        state: text(&state.info.state),
        config: text(&state.info.config),
        directory: worktree.clone(),
        worktree,
    }))
}

/// `GET /config`: the client's view of the configuration.
pub(crate) async fn client_config(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<ClientConfig>, ServerError> {
    query(q)?;
    Ok(Json(state.info.client_config.clone()))
}

/// OpenCode's `ExperimentalCapabilities`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct Capabilities {
    /// Subagents run inside their parent's step here, never in the background.
    background_subagents: bool,
}

/// `GET /experimental/capabilities`.
pub(crate) async fn capabilities(
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Capabilities>, ServerError> {
    query(q)?;
    Ok(Json(Capabilities { background_subagents: false }))
}

/// OpenCode's `ConsoleState`: this server is signed in to no console organisation.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct ConsoleState {
    console_managed_providers: Vec<String>,
    switchable_org_count: u32,
}

/// `GET /experimental/console`.
pub(crate) async fn console(
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<ConsoleState>, ServerError> {
    query(q)?;
    Ok(Json(ConsoleState { console_managed_providers: Vec::new(), switchable_org_count: 0 }))
}
