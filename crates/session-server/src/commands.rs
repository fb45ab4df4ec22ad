//! `POST /session/{id}/command` (OpenCode's `session.command`): runs a configured command with
//! its arguments and answers with the last assistant message; and `GET /session/{id}/children`
//! (`session.children`): the child sessions subagents and subtask commands ran in.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use serde::Deserialize;
use serde_json::{Value, json};
use session_core::Message;
use session_runtime::commands::CommandInput;
use session_runtime::models::parse_model_ref;
use session_store::ListSessions;

use crate::AppState;
use crate::body::{JsonBody, parse_body};
use crate::error::ServerError;
use crate::routes::{DirectoryQuery, query, session};

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
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
    body: JsonBody,
) -> Result<Json<Value>, ServerError> {
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
    let session = session(&state, &id).await?;
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
    Ok(Json(json!({"info": Message::Assistant(reply), "parts": parts})))
}

/// `GET /session/{id}/children`: the session's child sessions, newest first.
pub(crate) async fn children(
    State(state): State<Arc<AppState>>,
    Path(id): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Value>, ServerError> {
    query(q)?;
    let parent = session(&state, &id).await?;
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
    Ok(Json(serde_json::to_value(children).map_err(|error| ServerError::Internal(error.to_string()))?))
}
