//! Sessions: create, list, read, rename or archive, delete; their statuses, children, todo
//! lists and diffs; and what acts on one: fork, abort, revert and unrevert, summarize, init.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use serde::Deserialize;
use serde_json::Value;
use session_core::permission::Rule;
use session_core::{FileDiff, Identifier as _, MessageId, ModelRef, PartId, SessionId};
use session_runtime::sessions::Todo;
use session_runtime::sessions::{ListSessions, NewSession, SessionPatch};
use session_runtime::sessions::{SessionStart, SessionStatus};
use session_runtime::wire::{Event, SessionChange, SessionInfo};
use session_runtime::{BusEvent, PromptInput};

use axum::response::Response;

use super::{Shared, find_session, json_response};
use crate::body::{JsonBody, parse_body};
use crate::error::ServerError;
use crate::extract::{DirectoryQuery, parse_id, query};
use crate::session_info::session_info;

/// `POST /session` body, as OpenCode 1.18's clients send it.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct CreateBody {
    #[serde(rename = "parentID", default)]
    parent_id: Option<String>,
    #[serde(default)]
    title: Option<String>,
    /// The agent the session starts with (checked); a prompt naming another replaces it.
    #[serde(default)]
    agent: Option<String>,
    /// The model the session starts with; a prompt naming another replaces it.
    #[serde(default)]
    model: Option<SessionModel>,
    /// The session's own permission rules, after its agent's.
    #[serde(default)]
    permission: Vec<Rule>,
    /// Client metadata; accepted and not kept.
    #[serde(default)]
    #[expect(dead_code, reason = "accepted so that the clients' requests parse; nothing reads it")]
    metadata: Option<serde_json::Map<String, Value>>,
    /// Workspaces are not supported: a request naming one is refused.
    #[serde(rename = "workspaceID", default)]
    workspace_id: Option<String>,
}

/// A model as a session names it (`{providerID, id, variant}`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct SessionModel {
    #[serde(rename = "providerID")]
    provider_id: String,
    id: String,
    #[serde(default)]
    variant: Option<String>,
}

impl From<SessionModel> for session_runtime::sessions::SessionModel {
    fn from(model: SessionModel) -> Self {
        Self { id: model.id, provider_id: model.provider_id, variant: model.variant }
    }
}

/// `POST /session`: creates a session in the served project.
pub(crate) async fn create(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
    body: JsonBody,
) -> Result<Json<SessionInfo<'static>>, ServerError> {
    query(q)?;
    let body: CreateBody = parse_body(&body, false)?;
    if body.workspace_id.is_some() {
        return Err(ServerError::body("workspaceID: this server has no workspaces"));
    }
    if let Some(agent) = &body.agent
        && !state.runtime.has_agent(agent)
    {
        return Err(ServerError::body(format!("agent: no agent named {agent:?}")));
    }
    if let Some(model) = &body.model
        && (model.provider_id.is_empty() || model.id.is_empty())
    {
        return Err(ServerError::body("model: providerID and id must not be empty"));
    }
    let permission = body.permission;
    let model = body.model.map(session_runtime::sessions::SessionModel::from);
    let Some(parent) = body.parent_id else {
        let start = SessionStart { id: None, title: body.title, permission, agent: body.agent, model };
        let session = state.runtime.start_session(start).await?;
        return Ok(Json(session_info(&session)));
    };
    let parent_id: SessionId =
        SessionId::parse(&parent).map_err(|error| ServerError::body(format!("parentID: {error}")))?;
    let parent = state.store.get_session(&parent_id).await.map_err(|error| match error {
        session_runtime::sessions::StoreError::NotFound { .. } => {
            ServerError::body(format!("parentID: session {parent_id} does not exist"))
        }
        other => other.into(),
    })?;
    let session = state
        .store
        .create_session(NewSession {
            id: None,
            project_id: parent.project_id.clone(),
            directory: parent.directory.clone(),
            title: body.title,
            parent_id: Some(parent_id),
            version: Some(env!("CARGO_PKG_VERSION").to_owned()),
            permission,
            path: parent.path.clone(),
            agent: body.agent,
            model,
        })
        .await?;
    state.runtime.bus().publish(BusEvent::SessionCreated { info: Box::new(session.clone()) });
    Ok(Json(session_info(&session)))
}

/// Sessions listed at most (newest first).
const MAX_LISTED: usize = 10_000;

/// `GET /session`: every session, most recently updated first.
pub(crate) async fn list(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Vec<SessionInfo<'static>>>, ServerError> {
    query(q)?;
    let mut sessions = Vec::new();
    let mut request = ListSessions { limit: 1000, ..ListSessions::default() };
    loop {
        let page = state.store.list_sessions(&request).await?;
        sessions.extend(page.sessions);
        match page.next {
            Some(next) if sessions.len() < MAX_LISTED => request.after = Some(next),
            _ => break,
        }
    }
    sessions.truncate(MAX_LISTED);
    Ok(Json(sessions.iter().map(session_info).collect()))
}

/// `GET /session/{id}`.
pub(crate) async fn get(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<SessionInfo<'static>>, ServerError> {
    query(q)?;
    Ok(Json(session_info(&find_session(&state, &id).await?)))
}

/// `DELETE /session/{id}`: stops its run here and deletes it with its children.
pub(crate) async fn delete(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<bool>, ServerError> {
    query(q)?;
    let session = find_session(&state, &id).await?;
    state.runtime.cancel(&session.id);
    state.store.delete_session(&session.id).await?;
    state.hub.publish(Event::SessionDeleted(SessionChange {
        session_id: Some(&session.id),
        info: session_info(&session),
    }));
    Ok(Json(true))
}

/// `PATCH /session/{id}`: renames or archives a session.
pub(crate) async fn update(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
    body: JsonBody,
) -> Result<Json<SessionInfo<'static>>, ServerError> {
    query(q)?;
    let body: UpdateBody = parse_body(&body, true)?;
    if body.permission.is_some() {
        return Err(ServerError::body(
            "permission: a session's rules are set when it is made (POST /session)",
        ));
    }
    if body.metadata.is_some() {
        return Err(ServerError::body(
            "metadata: changing a session's metadata is not supported by this server",
        ));
    }
    if body.title.as_deref().is_some_and(|t| t.trim().is_empty()) {
        return Err(ServerError::body("title: must not be empty"));
    }
    let session = find_session(&state, &id).await?;
    let patch = SessionPatch {
        title: body.title,
        archived: body.time.and_then(|t| t.archived).map(Some),
        ..SessionPatch::default()
    };
    let updated = state.store.update_session(&session.id, patch).await?;
    state.runtime.bus().publish(BusEvent::SessionUpdated { info: Box::new(updated.clone()) });
    Ok(Json(session_info(&updated)))
}

/// `PATCH /session/{id}` body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateBody {
    #[serde(default)]
    title: Option<String>,
    #[serde(default)]
    time: Option<UpdateTime>,
    #[serde(default)]
    metadata: Option<serde_json::Value>,
    #[serde(default)]
    permission: Option<serde_json::Value>,
}

#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct UpdateTime {
    #[serde(default)]
    archived: Option<u64>,
}

/// `GET /session/status`: every session that is busy or waiting to retry (idle ones are
/// left out, as OpenCode does).
pub(crate) async fn status(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<BTreeMap<String, SessionStatus>>, ServerError> {
    query(q)?;
    Ok(Json(state.statuses.snapshot()))
}

/// `GET /session/{id}/children`: the session's child sessions, newest first.
pub(crate) async fn children(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Response, ServerError> {
    query(q)?;
    let parent = find_session(&state, &id).await?;
    let mut query = ListSessions { limit: 1000, ..ListSessions::default() };
    let mut children = Vec::new();
    loop {
        let page = state.store.list_sessions(&query).await?;
        children.extend(page.sessions.into_iter().filter(|s| s.parent_id.as_ref() == Some(&parent.id)));
        match page.next {
            Some(cursor) => query.after = Some(cursor),
            None => break,
        }
    }
    json_response(&children)
}

/// `GET /session/{id}/todo`.
pub(crate) async fn todo(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Vec<Todo>>, ServerError> {
    query(q)?;
    let session = find_session(&state, &id).await?;
    Ok(Json(state.runtime.todos(&session.id)))
}

/// `GET /session/{id}/diff` query: the turn of one user message, or the whole session.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct DiffQuery {
    #[serde(default, rename = "messageID")]
    message_id: Option<String>,
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "accepted so that the SDK's requests parse; this server serves one project"
    )]
    directory: Option<String>,
}

/// `GET /session/{id}/diff`: the files the session (or one turn) changed.
pub(crate) async fn diff(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DiffQuery>, QueryRejection>,
) -> Result<Json<Vec<FileDiff>>, ServerError> {
    let q = query(q)?;
    let turn: Option<MessageId> = q.message_id.as_deref().map(|m| parse_id(m, "messageID")).transpose()?;
    let session = find_session(&state, &id).await?;
    Ok(Json(state.runtime.session_diff(&session.id, turn.as_ref()).await?))
}

/// `POST /session/{id}/fork` body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct ForkBody {
    #[serde(default, rename = "messageID")]
    message_id: Option<String>,
}

/// `POST /session/{id}/fork`: a copy of the session (up to `messageID`, which it leaves out).
pub(crate) async fn fork(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
    body: JsonBody,
) -> Result<Json<SessionInfo<'static>>, ServerError> {
    query(q)?;
    let body: ForkBody = parse_body(&body, false)?;
    let at = body
        .message_id
        .as_deref()
        .map(MessageId::parse)
        .transpose()
        .map_err(|error| ServerError::body(format!("messageID: {error}")))?;
    let session = find_session(&state, &id).await?;
    let forked = state.store.fork_session(&session.id, at.as_ref()).await?;
    state.runtime.bus().publish(BusEvent::SessionCreated { info: Box::new(forked.clone()) });
    Ok(Json(session_info(&forked)))
}

/// `POST /session/{id}/abort`: stops the session's run, here or in the instance running it.
pub(crate) async fn abort(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<bool>, ServerError> {
    query(q)?;
    let session = find_session(&state, &id).await?;
    if !state.runtime.is_busy(&session.id)
        && let Some(cluster) = &state.cluster
        && state.store.lease(&session.id).await?.is_some_and(|lease| lease.owner != state.store.owner())
    {
        // Another instance runs it: that one stops the run and reports idle.
        cluster.request_abort(&session.id);
        return Ok(Json(true));
    }
    state.runtime.cancel(&session.id);
    Ok(Json(true))
}

/// `POST /session/{id}/revert` body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
struct RevertBody {
    #[serde(rename = "messageID")]
    message_id: String,
    #[serde(rename = "partID", default)]
    part_id: Option<String>,
}

/// `POST /session/{id}/revert`: reverts the files changed after a message (or part).
pub(crate) async fn revert(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
    body: JsonBody,
) -> Result<Json<SessionInfo<'static>>, ServerError> {
    query(q)?;
    let body: RevertBody = parse_body(&body, true)?;
    let message_id = MessageId::parse(&body.message_id)
        .map_err(|error| ServerError::body(format!("messageID: {error}")))?;
    let part_id = body
        .part_id
        .as_deref()
        .map(PartId::parse)
        .transpose()
        .map_err(|error| ServerError::body(format!("partID: {error}")))?;
    let session = find_session(&state, &id).await?;
    Ok(Json(session_info(&state.runtime.revert(&session.id, &message_id, part_id.as_ref()).await?)))
}

/// `POST /session/{id}/unrevert`: brings back what the pending revert removed.
pub(crate) async fn unrevert(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<SessionInfo<'static>>, ServerError> {
    query(q)?;
    let session = find_session(&state, &id).await?;
    Ok(Json(session_info(&state.runtime.unrevert(&session.id).await?)))
}

/// The model body of `summarize` and `init`.
#[derive(Debug, Default, Deserialize)]
struct ModelBody {
    #[serde(rename = "providerID")]
    provider_id: Option<String>,
    #[serde(rename = "modelID")]
    model_id: Option<String>,
    #[serde(default)]
    auto: Option<bool>,
    #[serde(default, rename = "messageID")]
    message_id: Option<String>,
}

impl ModelBody {
    fn model(&self) -> Result<Option<ModelRef>, ServerError> {
        match (&self.provider_id, &self.model_id) {
            (Some(provider), Some(model)) if !provider.is_empty() && !model.is_empty() => {
                Ok(Some(ModelRef { provider_id: provider.clone(), model_id: model.clone(), variant: None }))
            }
            (None, None) => Ok(None),
            _ => Err(ServerError::body("providerID and modelID: give both, not empty")),
        }
    }
}

/// `POST /session/{id}/summarize`: compacts the session now; answers when the summary is
/// written.
pub(crate) async fn summarize(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
    body: JsonBody,
) -> Result<Json<bool>, ServerError> {
    query(q)?;
    let body: ModelBody = parse_body(&body, false)?;
    let model = body.model()?;
    if body.auto == Some(true) {
        tracing::debug!("summarize: `auto` is the runtime's own decision; compacting now as asked");
    }
    let session = find_session(&state, &id).await?;
    let message = state.runtime.summarize(&session.id, model).await?;
    Ok(Json(message.error.is_none()))
}

/// What `/init` asks the model to do: our own wording of OpenCode's `/init`.
const INIT_PROMPT: &str = "Look through this project (its layout, build and test commands, code style and \
conventions) and write or update AGENTS.md at its root: a short guide for coding agents working here. Keep \
what is already true in an existing AGENTS.md and fix what is not.";

/// `POST /session/{id}/init`: asks the model to write the project's AGENTS.md.
pub(crate) async fn init(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
    body: JsonBody,
) -> Result<Json<bool>, ServerError> {
    query(q)?;
    let body: ModelBody = parse_body(&body, false)?;
    let model = body.model()?;
    if let Some(message) = &body.message_id {
        // The message id is the client's; the runtime names its own messages.
        tracing::debug!(%message, "init: using the runtime's own message id");
    }
    let session = find_session(&state, &id).await?;
    let input = PromptInput { text: INIT_PROMPT.to_owned(), model, ..PromptInput::default() };
    let message = state.runtime.prompt(&session.id, input).await?;
    Ok(Json(message.error.is_none()))
}
