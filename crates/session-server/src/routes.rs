//! The request handlers: sessions, messages, prompts, abort, revert and permission replies,
//! with OpenCode's paths and JSON bodies.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use serde_json::{Value, json};
use session_core::permission::{Reply, Rule};
use session_core::{Identifier, MessageId, ModelRef, PartId, PermissionId, SessionId};
use session_runtime::sessions::SessionStart;
use session_runtime::{BusEvent, PromptInput};
use session_store::{ListSessions, NewSession, Session};

use crate::AppState;
use crate::body::{JsonBody, parse_body};
use crate::error::ServerError;
use crate::session_info::SessionInfo;

type Shared = State<Arc<AppState>>;

/// The query every route accepts (the SDK adds `directory` to its requests).
#[derive(Debug, Default, Deserialize)]
pub(crate) struct DirectoryQuery {
    /// The project directory the client works in; this server serves one project.
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "accepted so that the SDK's requests parse; this server serves one project"
    )]
    directory: Option<String>,
}

/// `GET /session/{id}/message` also takes a `limit`.
#[derive(Debug, Default, Deserialize)]
pub(crate) struct MessagesQuery {
    #[serde(default)]
    #[expect(
        dead_code,
        reason = "accepted so that the SDK's requests parse; this server serves one project"
    )]
    directory: Option<String>,
    #[serde(default)]
    limit: Option<usize>,
}

pub(crate) fn query<T>(query: Result<Query<T>, QueryRejection>) -> Result<T, ServerError> {
    query.map(|Query(q)| q).map_err(|rejection| ServerError::query(rejection.body_text()))
}

pub(crate) fn parse_id<T: Identifier>(value: &str, name: &str) -> Result<T, ServerError> {
    T::parse(value).map_err(|error| ServerError::param(format!("{name}: {error}")))
}

/// Parses the session id and checks that the session exists.
pub(crate) async fn session(state: &AppState, id: &str) -> Result<Session, ServerError> {
    let id: SessionId = parse_id(id, "id")?;
    state.store.get_session(&id).await.map_err(|error| match error {
        session_store::StoreError::NotFound { .. } => {
            ServerError::NotFound(format!("session {id} not found"))
        }
        other => other.into(),
    })
}

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

impl From<SessionModel> for session_store::SessionModel {
    fn from(model: SessionModel) -> Self {
        Self { id: model.id, provider_id: model.provider_id, variant: model.variant }
    }
}

/// `POST /session`: creates a session in the served project.
pub(crate) async fn create_session(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
    body: JsonBody,
) -> Result<Json<SessionInfo>, ServerError> {
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
    let model = body.model.map(session_store::SessionModel::from);
    let Some(parent) = body.parent_id else {
        let start = SessionStart { id: None, title: body.title, permission, agent: body.agent, model };
        let session = state.runtime.start_session(start).await?;
        return Ok(Json(session.into()));
    };
    let parent_id: SessionId =
        SessionId::parse(&parent).map_err(|error| ServerError::body(format!("parentID: {error}")))?;
    let parent = state.store.get_session(&parent_id).await.map_err(|error| match error {
        session_store::StoreError::NotFound { .. } => {
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
    Ok(Json(session.into()))
}

/// Sessions listed at most (newest first).
const MAX_LISTED: usize = 10_000;

/// `GET /session`: every session, most recently updated first.
pub(crate) async fn list_sessions(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Vec<SessionInfo>>, ServerError> {
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
    Ok(Json(sessions.into_iter().map(SessionInfo::from).collect()))
}

/// `GET /session/{id}`.
pub(crate) async fn get_session(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<SessionInfo>, ServerError> {
    query(q)?;
    Ok(Json(SessionInfo::from(session(&state, &id).await?)))
}

/// `DELETE /session/{id}`: stops its run here and deletes it with its children.
pub(crate) async fn delete_session(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<bool>, ServerError> {
    query(q)?;
    let session = session(&state, &id).await?;
    state.runtime.cancel(&session.id);
    state.store.delete_session(&session.id).await?;
    state
        .hub
        .publish("session.deleted", json!({"sessionID": session.id, "info": SessionInfo::new(&session)}));
    Ok(Json(true))
}

/// `GET /session/{id}/message`: the messages with their parts, oldest first (`limit`: the
/// newest that many).
pub(crate) async fn messages(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<MessagesQuery>, QueryRejection>,
) -> Result<Json<Vec<session_core::MessageWithParts>>, ServerError> {
    let q = query(q)?;
    let session = session(&state, &id).await?;
    let mut messages = state.store.load_history(&session.id).await?.messages;
    if let Some(limit) = q.limit {
        let skip = messages.len().saturating_sub(limit);
        messages.drain(..skip);
    }
    Ok(Json(messages))
}

/// The model a prompt names.
#[derive(Debug, Deserialize)]
struct ModelBody {
    #[serde(rename = "providerID")]
    provider_id: String,
    #[serde(rename = "modelID")]
    model_id: String,
}

/// `POST /session/{id}/message` and `prompt_async` body.
#[derive(Debug, Default, Deserialize)]
struct PromptBody {
    #[serde(rename = "messageID", default)]
    message_id: Option<String>,
    #[serde(default)]
    model: Option<ModelBody>,
    #[serde(default)]
    agent: Option<String>,
    #[serde(rename = "noReply", default)]
    no_reply: Option<bool>,
    #[serde(default)]
    system: Option<String>,
    #[serde(default)]
    tools: Option<serde_json::Map<String, Value>>,
    #[serde(default)]
    variant: Option<String>,
    #[serde(default)]
    format: Option<session_core::OutputFormat>,
    parts: Vec<Value>,
}

/// Checks a prompt body and turns it into the runtime's input; `worktree` is where `file://`
/// parts must point.
fn prompt_input(body: &JsonBody, worktree: &std::path::Path) -> Result<PromptInput, ServerError> {
    let body: PromptBody = parse_body(body, true)?;
    if body.no_reply == Some(true) {
        return Err(ServerError::body(
            "noReply: storing a message without a reply is not supported by this server",
        ));
    }
    if body.system.is_some() || body.tools.is_some() {
        tracing::debug!("ignoring system and tools of a prompt: this server does not use them");
    }
    let message_id = body
        .message_id
        .as_deref()
        .map(MessageId::parse)
        .transpose()
        .map_err(|error| ServerError::body(format!("messageID: {error}")))?;
    if body.variant.as_deref().is_some_and(|v| v.trim().is_empty()) {
        return Err(ServerError::body("variant: must not be empty"));
    }
    let mut texts = Vec::new();
    let mut attachments = Vec::new();
    for (index, part) in body.parts.iter().enumerate() {
        let kind = part.get("type").and_then(Value::as_str).ok_or_else(|| {
            ServerError::body(format!("parts[{index}].type: a part needs a type (\"text\")"))
        })?;
        match kind {
            "text" => {
                let text = part.get("text").and_then(Value::as_str).ok_or_else(|| {
                    ServerError::body(format!("parts[{index}].text: a text part needs a string text"))
                })?;
                if part.get("ignored").and_then(Value::as_bool) != Some(true) {
                    texts.push(text.to_owned());
                }
            }
            "file" => attachments.extend(crate::prompt_files::file_part(part, index, worktree)?),
            "agent" | "subtask" => {
                return Err(ServerError::body(format!(
                    "parts[{index}].type: {kind:?} parts are not supported by this server; send text and file \
                     parts"
                )));
            }
            other => tracing::debug!(kind = other, "skipping a prompt part of an unknown type"),
        }
    }
    if texts.is_empty() && attachments.is_empty() {
        return Err(ServerError::body("parts: at least one text or file part is required"));
    }
    let model = match body.model {
        Some(model) => {
            if model.provider_id.trim().is_empty() {
                return Err(ServerError::body("model.providerID: must not be empty"));
            }
            if model.model_id.trim().is_empty() {
                return Err(ServerError::body("model.modelID: must not be empty"));
            }
            Some(ModelRef { provider_id: model.provider_id, model_id: model.model_id, variant: None })
        }
        None => None,
    };
    if body.agent.as_deref().is_some_and(|a| a.trim().is_empty()) {
        return Err(ServerError::body("agent: must not be empty"));
    }
    Ok(PromptInput {
        text: texts.join("\n"),
        agent: body.agent,
        model,
        variant: body.variant,
        attachments,
        format: body.format,
        message_id,
    })
}

/// Refuses a client's message id that would not sort after the session's messages (ids order
/// a session's history) or that names one of them.
async fn check_message_id(
    state: &AppState,
    session: &SessionId,
    input: &PromptInput,
) -> Result<(), ServerError> {
    let Some(id) = &input.message_id else { return Ok(()) };
    let history = state.store.load_history(session).await?;
    if history.messages.last().is_some_and(|last| last.info.id() >= id) {
        return Err(ServerError::body(format!(
            "messageID: {id} does not sort after the session's last message; leave it out and the server \
             makes one"
        )));
    }
    Ok(())
}

/// `POST /session/{id}/message`: runs the prompt and answers with the last assistant message
/// and its parts once the run ends.
pub(crate) async fn prompt(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
    body: JsonBody,
) -> Result<Json<Value>, ServerError> {
    query(q)?;
    let input = prompt_input(&body, state.runtime.worktree())?;
    let session = session(&state, &id).await?;
    check_message_id(&state, &session.id, &input).await?;
    let reply = state.runtime.prompt(&session.id, input).await?;
    let history = state.store.load_history(&session.id).await?;
    let parts =
        history.messages.into_iter().find(|m| m.info.id() == &reply.id).map(|m| m.parts).unwrap_or_default();
    // The message enum carries the `role` tag clients read.
    Ok(Json(json!({"info": session_core::Message::Assistant(reply), "parts": parts})))
}

/// Refuses when another instance runs the session (its lease is live).
async fn check_lease(state: &AppState, session: &SessionId) -> Result<(), ServerError> {
    if let Some(lease) = state.store.lease(session).await?
        && lease.owner != state.store.owner()
    {
        return Err(ServerError::Busy(format!(
            "session {session} is running in another instance ({}); try again when that run ends",
            lease.owner
        )));
    }
    Ok(())
}

/// `POST /session/{id}/prompt_async`: starts the prompt and answers 204 at once; progress
/// and the end arrive as events.
pub(crate) async fn prompt_async(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
    body: JsonBody,
) -> Result<Response, ServerError> {
    query(q)?;
    let input = prompt_input(&body, state.runtime.worktree())?;
    let session = session(&state, &id).await?;
    check_lease(&state, &session.id).await?;
    check_message_id(&state, &session.id, &input).await?;
    let runtime = state.runtime.clone();
    let hub = state.hub.clone();
    tokio::spawn(async move {
        if let Err(error) = runtime.prompt(&session.id, input).await {
            tracing::warn!(session = %session.id, %error, "an asynchronous prompt failed");
            hub.publish(
                "session.error",
                json!({"sessionID": session.id, "error": {"name": "UnknownError", "data": {"message": error.to_string()}}}),
            );
        }
    });
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST /session/{id}/abort`: stops the session's run, here or in the instance running it.
pub(crate) async fn abort(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<bool>, ServerError> {
    query(q)?;
    let session = session(&state, &id).await?;
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
) -> Result<Json<SessionInfo>, ServerError> {
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
    let session = session(&state, &id).await?;
    Ok(Json(state.runtime.revert(&session.id, &message_id, part_id.as_ref()).await?.into()))
}

/// `POST /session/{id}/permissions/{permissionID}` body.
#[derive(Debug, Default, Deserialize)]
struct PermissionBody {
    response: Option<Reply>,
}

/// `POST /session/{id}/permissions/{permissionID}`: answers a permission ask.
pub(crate) async fn reply_permission(
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
    let session = session(&state, &id).await?;
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

/// `GET /doc`: the OpenAPI document.
pub(crate) async fn doc() -> Json<Value> {
    Json(crate::openapi::document())
}
