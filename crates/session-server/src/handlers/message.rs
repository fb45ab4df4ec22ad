//! A session's messages, and what adds them: prompts (`POST /session/{id}/message`, which
//! answers when the run ends, and `prompt_async`, which answers at once) and commands (`POST
//! /session/{id}/command`, OpenCode's `session.command`: a configured command run with its
//! arguments, in the session or a child for a subtask command).

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use session_core::{Message, MessageError, MessageId, MessageWithParts, SessionId};
use session_runtime::PromptInput;
use session_runtime::commands::CommandInput;
use session_runtime::models::parse_model_ref;
use session_runtime::wire::{Event, SessionFailure};

use super::prompt::prompt_input;
use super::{Shared, find_session};
use crate::body::{JsonBody, parse_body};
use crate::error::ServerError;
use crate::extract::{DirectoryQuery, parse_id, query};
use crate::state::AppState;

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

/// `GET /session/{id}/message`: the messages with their parts, oldest first (`limit`: the
/// newest that many).
pub(crate) async fn list(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<MessagesQuery>, QueryRejection>,
) -> Result<Json<Vec<session_core::MessageWithParts>>, ServerError> {
    let q = query(q)?;
    let session = find_session(&state, &id).await?;
    let mut messages = state.store.load_history(&session.id).await?.messages;
    if let Some(limit) = q.limit {
        let skip = messages.len().saturating_sub(limit);
        messages.drain(..skip);
    }
    Ok(Json(messages))
}

/// `GET /session/{id}/message/{messageID}`.
pub(crate) async fn get(
    State(state): Shared,
    Path((id, message)): Path<(String, String)>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<MessageWithParts>, ServerError> {
    query(q)?;
    let message_id: MessageId = parse_id(&message, "messageID")?;
    let session = find_session(&state, &id).await?;
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
) -> Result<Json<MessageWithParts>, ServerError> {
    query(q)?;
    let input = prompt_input(&body, state.runtime.worktree())?;
    let session = find_session(&state, &id).await?;
    check_message_id(&state, &session.id, &input).await?;
    let reply = state.runtime.prompt(&session.id, input).await?;
    let history = state.store.load_history(&session.id).await?;
    let parts =
        history.messages.into_iter().find(|m| m.info.id() == &reply.id).map(|m| m.parts).unwrap_or_default();
    // The message enum carries the `role` tag clients read.
    Ok(Json(MessageWithParts { info: Message::Assistant(reply), parts }))
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
    let session = find_session(&state, &id).await?;
    check_lease(&state, &session.id).await?;
    check_message_id(&state, &session.id, &input).await?;
    let runtime = state.runtime.clone();
    let hub = state.hub.clone();
    tokio::spawn(async move {
        if let Err(error) = runtime.prompt(&session.id, input).await {
            tracing::warn!(session = %session.id, %error, "an asynchronous prompt failed");
            let error = MessageError::UnknownError { message: error.to_string() };
            hub.publish(Event::SessionError(SessionFailure { session_id: &session.id, error: Some(&error) }));
        }
    });
    Ok(StatusCode::NO_CONTENT.into_response())
}

/// `POST /session/{id}/command` body, as OpenCode's SDK sends it.
#[derive(Debug, Default, Deserialize)]
struct CommandBody {
    command: String,
    #[serde(default)]
    arguments: String,
    #[serde(default)]
    agent: Option<String>,
    /// `provider/model`.
    #[serde(default)]
    model: Option<String>,
    #[serde(rename = "messageID", default)]
    message_id: Option<String>,
    #[serde(default)]
    variant: Option<String>,
}

/// `POST /session/{id}/command`: runs the command (in the session, or a child for a subtask
/// command) and answers `{info, parts}` of the last assistant message.
pub(crate) async fn command(
    State(state): Shared,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
    body: JsonBody,
) -> Result<Json<MessageWithParts>, ServerError> {
    query(q)?;
    let body: CommandBody = parse_body(&body, true)?;
    if body.message_id.is_some() {
        tracing::debug!("ignoring messageID of a command: this server does not use it");
    }
    let model =
        match &body.model {
            Some(reference) => Some(parse_model_ref(reference).ok_or_else(|| {
                ServerError::body(format!("model: must be provider/model; got {reference:?}"))
            })?),
            None => None,
        };
    let session = find_session(&state, &id).await?;
    let input = CommandInput {
        command: body.command,
        arguments: body.arguments,
        agent: body.agent,
        model,
        variant: body.variant,
    };
    // An unknown command is the caller's mistake, not the server's.
    state.runtime.command_prompt(&input).map_err(|error| ServerError::body(format!("command: {error}")))?;
    let (ran_in, reply) = state.runtime.command(&session.id, &input).await?;
    let history = state.store.load_history(&ran_in).await?;
    let parts =
        history.messages.into_iter().find(|m| m.info.id() == &reply.id).map(|m| m.parts).unwrap_or_default();
    Ok(Json(MessageWithParts { info: Message::Assistant(reply), parts }))
}
