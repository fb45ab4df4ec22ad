//! Reads OpenCode 1.18's terminal UI makes at start-up about features this server does not
//! have, answered truthfully (an empty list, a "no" flag) so the UI starts and shows none,
//! and a clear error for every route of OpenCode's server this one does not serve.

use std::collections::BTreeMap;
use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use axum::http::{Method, Uri};
use serde::Serialize;
use serde_json::Value;

use crate::AppState;
use crate::error::ServerError;
use crate::project::{Located, LocationQuery};
use crate::routes::{DirectoryQuery, query};

type Shared = State<Arc<AppState>>;

/// `GET /lsp`, `/formatter`, `/experimental/workspace`, `/experimental/workspace/status`,
/// `/question`: no language servers, formatters, workspaces or questions here.
pub(crate) async fn none(
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Vec<Value>>, ServerError> {
    query(q)?;
    Ok(Json(Vec::new()))
}

/// `GET /experimental/resource`: no MCP resources are offered to clients.
pub(crate) async fn resources(
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<BTreeMap<String, Value>>, ServerError> {
    query(q)?;
    Ok(Json(BTreeMap::new()))
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

/// `GET /api/integration` and `/api/reference`: no integrations or references here.
pub(crate) async fn v2_none(
    State(state): Shared,
    q: Result<Query<LocationQuery>, QueryRejection>,
) -> Result<Json<Located<Vec<Value>>>, ServerError> {
    query(q)?;
    Ok(Json(Located::new(&state, Vec::new())))
}

/// `POST /question/{requestID}/reply` and `/reject`: no tool here asks questions.
pub(crate) async fn no_question(axum::extract::Path(id): axum::extract::Path<String>) -> ServerError {
    ServerError::NotFound(format!(
        "question {id} is not waiting for an answer (this server's tools ask none)"
    ))
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
