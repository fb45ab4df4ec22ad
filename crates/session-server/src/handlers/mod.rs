//! The request handlers, one module per resource, with OpenCode's paths and JSON bodies. The
//! route table (`crate::routes`) says which handler answers which method and path.

pub(crate) mod agent;
pub(crate) mod command;
pub(crate) mod config;
pub(crate) mod event;
pub(crate) mod file;
pub(crate) mod mcp;
pub(crate) mod message;
pub(crate) mod permission;
pub(crate) mod project;
mod prompt;
pub(crate) mod provider;
pub(crate) mod question;
pub(crate) mod session;
pub(crate) mod skill;
pub(crate) mod unsupported;

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Serialize;
use session_core::SessionId;
use session_runtime::sessions::Session;

use crate::error::ServerError;
use crate::extract::parse_id;
use crate::state::AppState;

/// The state every handler is given.
type Shared = State<Arc<AppState>>;

/// Parses the session id and checks that the session exists.
pub(crate) async fn find_session(state: &AppState, id: &str) -> Result<Session, ServerError> {
    let id: SessionId = parse_id(id, "id")?;
    state.store.get_session(&id).await.map_err(|error| match error {
        session_runtime::sessions::StoreError::NotFound { .. } => {
            ServerError::NotFound(format!("session {id} not found"))
        }
        other => other.into(),
    })
}

/// `value` as a JSON response, serialized once (for bodies that borrow from the state, which a
/// handler cannot return inside `Json`).
fn json_response<T: Serialize>(value: &T) -> Result<Response, ServerError> {
    let body = serde_json::to_vec(value).map_err(|error| ServerError::Internal(error.to_string()))?;
    let content_type = HeaderValue::from_static(mime::APPLICATION_JSON.as_ref());
    Ok(([(header::CONTENT_TYPE, content_type)], body).into_response())
}
