//! Permission asks and their answers: `GET /permission` (the asks waiting here), `POST
//! /permission/{requestID}/reply` (OpenCode 1.18's answer by ask id) and `POST
//! /session/{id}/permissions/{permissionID}` (the v1 answer); an ask waiting in another
//! instance is answered there.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use serde::Deserialize;
use session_core::PermissionId;
use session_core::permission::{PermissionAsk, Reply};

use super::{Shared, find_session};
use crate::body::{JsonBody, parse_body};
use crate::error::ServerError;
use crate::extract::{DirectoryQuery, parse_id, query};

/// `GET /permission`: the asks waiting for an answer in this instance.
pub(crate) async fn pending(
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

/// `POST /session/{id}/permissions/{permissionID}` body.
#[derive(Debug, Default, Deserialize)]
struct PermissionBody {
    response: Option<Reply>,
}

/// `POST /session/{id}/permissions/{permissionID}`: answers a permission ask.
pub(crate) async fn reply_in_session(
    State(state): Shared,
    Path((id, permission)): Path<(String, String)>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
    body: JsonBody,
) -> Result<Json<bool>, ServerError> {
    query(q)?;
    let body: PermissionBody = parse_body(&body, true)?;
    let reply = body
        .response
        .ok_or_else(|| ServerError::body("response: missing field `response` (once, always or reject)"))?;
    let permission_id: PermissionId = parse_id(&permission, "permissionID")?;
    let session = find_session(&state, &id).await?;
    let pending_here = state.permissions.pending(Some(&session.id)).iter().any(|ask| ask.id == permission_id);
    if pending_here {
        state.permissions.reply(&permission_id, reply, None);
        return Ok(Json(true));
    }
    match &state.cluster {
        // The ask may wait in the instance running the session.
        Some(cluster)
            if state.store.lease(&session.id).await?.is_some_and(|l| l.owner != state.store.owner()) =>
        {
            cluster.request_reply(&session.id, &permission_id, reply);
            Ok(Json(true))
        }
        _ => Err(ServerError::NotFound(format!(
            "permission {permission_id} is not waiting for an answer in session {}",
            session.id
        ))),
    }
}
