//! The reads and answers OpenCode 1.18's own clients (`opencode run --attach`, the terminal
//! UI, the SDK's v2 client) make besides the v1 routes: the server's paths, the client's view
//! of the configuration, the statuses of running sessions, and permission answers by ask id.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use serde::{Deserialize, Serialize};
use session_core::PermissionId;
use session_core::permission::{PermissionAsk, Reply};
use session_runtime::sessions::SessionStatus;

use crate::AppState;
use crate::body::{JsonBody, parse_body};
use crate::error::ServerError;
use crate::routes::{DirectoryQuery, parse_id, query};

type Shared = State<Arc<AppState>>;

/// What the server tells clients about where it keeps things and what it is configured with;
/// the caller (the `session serve` command) fills it, since a library reads no environment.
#[derive(Debug, Clone, Default)]
pub struct ServerInfo {
    /// The user's home folder.
    pub home: PathBuf,
    /// Where the server keeps its state (the database, the token file).
    pub state: PathBuf,
    /// The user's configuration folder.
    pub config: PathBuf,
    /// The configuration as clients may see it.
    pub client_config: ClientConfig,
    /// The providers this server can call, with their models, for the clients' pickers.
    pub providers: Vec<crate::ClientProvider>,
}

/// The part of the configuration a client reads from `GET /config`: what it needs to choose a
/// model and to know what the server does not do. Keys, headers and endpoints are not in it.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct ClientConfig {
    /// The default model, `provider/model`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// Sharing: this server shares nothing, so always `"disabled"`.
    pub share: ShareMode,
    /// This server never updates itself.
    pub autoupdate: bool,
}

/// OpenCode's `share` setting; only its "disabled" value is ever true here.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ShareMode {
    /// Nothing is shared.
    #[default]
    Disabled,
}

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
pub(crate) async fn config(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<ClientConfig>, ServerError> {
    query(q)?;
    Ok(Json(state.info.client_config.clone()))
}

/// `GET /session/status`: every session that is busy or waiting to retry (idle ones are
/// left out, as OpenCode does).
pub(crate) async fn session_status(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<BTreeMap<String, SessionStatus>>, ServerError> {
    query(q)?;
    Ok(Json(state.statuses.snapshot()))
}

/// `GET /permission`: the asks waiting for an answer in this instance.
pub(crate) async fn pending_permissions(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Vec<PermissionAsk>>, ServerError> {
    query(q)?;
    Ok(Json(state.permissions.pending(None)))
}

/// `POST /permission/{requestID}/reply` body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReplyBody {
    reply: Option<Reply>,
    /// With `reject`: what the model is told instead of "rejected".
    #[serde(default)]
    message: Option<String>,
}

/// `POST /permission/{requestID}/reply`: answers an ask by its id, here or in the instance
/// whose run is waiting for it.
pub(crate) async fn reply(
    State(state): Shared,
    Path(request): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
    body: JsonBody,
) -> Result<Json<bool>, ServerError> {
    query(q)?;
    let body: ReplyBody = parse_body(&body, true)?;
    let reply = body.reply.ok_or_else(|| ServerError::body("reply: missing (once, always or reject)"))?;
    let request: PermissionId = parse_id(&request, "requestID")?;
    // An ask waiting here settles at once (an unknown id settles nothing).
    if !state.permissions.reply(&request, reply, body.message.as_deref()).is_empty() {
        return Ok(Json(true));
    }
    if let (Some(cluster), Some(session)) = (&state.cluster, state.statuses.ask_session(&request)) {
        // Feedback text does not travel between instances; the answer does.
        cluster.request_reply(&session, &request, reply);
        return Ok(Json(true));
    }
    Err(ServerError::NotFound(format!("permission {request} is not waiting for an answer")))
}
