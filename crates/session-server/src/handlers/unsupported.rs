//! What this server does not have: the reads OpenCode 1.18's terminal UI makes at start-up about
//! features it lacks, answered truthfully (an empty list) so the UI starts and shows none; clear
//! refusals (501) of the session routes it does not offer (share, shell, editing single messages
//! or parts); and a clear error for every other route of OpenCode's server.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::{Method, Uri};
use serde_json::Value;

use super::Shared;
use crate::error::ServerError;
use crate::extract::{DirectoryQuery, Located, LocationQuery, query};

/// `GET /lsp`, `/formatter`, `/experimental/workspace`, `/experimental/workspace/status`: no
/// language servers, formatters or workspaces here.
pub(crate) async fn none(
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Vec<Value>>, ServerError> {
    query(q)?;
    Ok(Json(Vec::new()))
}

/// `GET /api/integration` and `/api/reference`: no integrations or references here.
pub(crate) async fn none_v2(
    State(state): Shared,
    q: Result<Query<LocationQuery>, QueryRejection>,
) -> Result<Json<Located<Vec<Value>>>, ServerError> {
    query(q)?;
    Ok(Json(Located::new(state.runtime.worktree(), Vec::new())))
}

/// `POST` and `DELETE /session/{id}/share`: this server shares nothing.
pub(crate) async fn share(Path(_id): Path<String>) -> ServerError {
    ServerError::Unsupported(
        "sharing is disabled: this server never sends a session anywhere (export it with `session sessions \
         export` instead)"
            .to_owned(),
    )
}

/// `POST /session/{id}/shell`: not offered.
pub(crate) async fn shell(Path(_id): Path<String>) -> ServerError {
    ServerError::Unsupported(
        "running a shell command outside a model step is not supported by this server; ask the agent to run \
         it (the bash tool)"
            .to_owned(),
    )
}

/// `DELETE /session/{id}/message/{messageID}` and the part routes: not offered.
pub(crate) async fn edit_history(Path(_path): Path<Vec<String>>) -> ServerError {
    ServerError::Unsupported(
        "deleting or editing single messages and parts is not supported by this server; revert to a message \
         instead (POST /session/{id}/revert)"
            .to_owned(),
    )
}

/// The first path segments of OpenCode 1.18's server: a request under one of them that no
/// route here takes is a feature of OpenCode's this server does not offer.
const OPENCODE_AREAS: [&str; 22] = [
    "api",
    "auth",
    "agent",
    "command",
    "config",
    "event",
    "experimental",
    "file",
    "find",
    "formatter",
    "global",
    "instance",
    "log",
    "lsp",
    "mcp",
    "permission",
    "project",
    "provider",
    "pty",
    "question",
    "session",
    "sync",
];
const MORE_AREAS: [&str; 4] = ["skill", "tui", "vcs", "doc"];

/// Every other path: 501 `UnsupportedError` under OpenCode's areas (its server has the route,
/// this one does not), else 404; both say which routes are served.
pub(crate) async fn fallback(method: Method, uri: Uri) -> ServerError {
    let path = uri.path();
    let area = path.trim_start_matches('/').split('/').next().unwrap_or_default();
    if OPENCODE_AREAS.contains(&area) || MORE_AREAS.contains(&area) {
        return ServerError::Unsupported(format!(
            "{method} {path} is not supported by this server (GET /doc lists the routes it serves; \
             docs/http-api.md says what each unsupported one answers)"
        ));
    }
    ServerError::NotFound(format!("{method} {path} is not a route of this server (GET /doc lists them)"))
}
