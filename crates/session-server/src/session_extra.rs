//! The session routes OpenCode 1.18's terminal UI and v2 client use besides the v1 ones:
//! todo, diff, fork, summarize, init, unrevert, rename and archive, one message; and clear
//! answers for what this server does not do (share, shell, deleting single messages or parts).

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use serde::Deserialize;
use session_core::{FileDiff, Identifier as _, MessageId, MessageWithParts, ModelRef};
use session_runtime::{BusEvent, PromptInput};
use session_store::SessionPatch;
use session_tools::Todo;

use crate::AppState;
use crate::body::{JsonBody, parse_body};
use crate::error::ServerError;
use crate::routes::{DirectoryQuery, parse_id, query, session};
use crate::session_info::SessionInfo;

type Shared = State<Arc<AppState>>;

/// What `/init` asks the model to do: our own wording of OpenCode's `/init`.
const INIT_PROMPT: &str = "Look through this project (its layout, build and test commands, code style and \
conventions) and write or update AGENTS.md at its root: a short guide for coding agents working here. Keep \
what is already true in an existing AGENTS.md and fix what is not.";

/// `GET /session/{id}/todo`.
pub(crate) async fn todo(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Vec<Todo>>, ServerError> {
    query(q)?;
    let session = session(&state, &id).await?;
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
    let session = session(&state, &id).await?;
    Ok(Json(state.runtime.session_diff(&session.id, turn.as_ref()).await?))
}

/// `GET /session/{id}/message/{messageID}`.
pub(crate) async fn message(
    State(state): Shared,
    Path((id, message)): Path<(String, String)>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<MessageWithParts>, ServerError> {
    query(q)?;
    let message_id: MessageId = parse_id(&message, "messageID")?;
    let session = session(&state, &id).await?;
    state
        .store
        .load_history(&session.id)
        .await?
        .messages
        .into_iter()
        .find(|m| m.info.id() == &message_id)
        .map(Json)
        .ok_or_else(|| {
            ServerError::NotFound(format!("message {message_id} is not in session {}", session.id))
        })
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
) -> Result<Json<SessionInfo>, ServerError> {
    query(q)?;
    let body: ForkBody = parse_body(&body, false)?;
    let at = body
        .message_id
        .as_deref()
        .map(MessageId::parse)
        .transpose()
        .map_err(|error| ServerError::body(format!("messageID: {error}")))?;
    let session = session(&state, &id).await?;
    let forked = state.store.fork_session(&session.id, at.as_ref()).await?;
    state.runtime.bus().publish(BusEvent::SessionCreated { info: Box::new(forked.clone()) });
    Ok(Json(forked.into()))
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
    let session = session(&state, &id).await?;
    let message = state.runtime.summarize(&session.id, model).await?;
    Ok(Json(message.error.is_none()))
}

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
    let session = session(&state, &id).await?;
    let input = PromptInput { text: INIT_PROMPT.to_owned(), model, ..PromptInput::default() };
    let message = state.runtime.prompt(&session.id, input).await?;
    Ok(Json(message.error.is_none()))
}

/// `POST /session/{id}/unrevert`: brings back what the pending revert removed.
pub(crate) async fn unrevert(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<SessionInfo>, ServerError> {
    query(q)?;
    let session = session(&state, &id).await?;
    Ok(Json(state.runtime.unrevert(&session.id).await?.into()))
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

/// `PATCH /session/{id}`: renames or archives a session.
pub(crate) async fn update(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
    body: JsonBody,
) -> Result<Json<SessionInfo>, ServerError> {
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
    let session = session(&state, &id).await?;
    let patch = SessionPatch {
        title: body.title,
        archived: body.time.and_then(|t| t.archived).map(Some),
        ..SessionPatch::default()
    };
    let updated = state.store.update_session(&session.id, patch).await?;
    state.runtime.bus().publish(BusEvent::SessionUpdated { info: Box::new(updated.clone()) });
    Ok(Json(updated.into()))
}
