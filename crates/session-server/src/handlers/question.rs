//! Questions the `question` tool asks the user: `GET /question` (the requests waiting in this
//! instance, every session's), `POST /question/{requestID}/reply` (the answers, one list of
//! labels or typed text per question) and `POST /question/{requestID}/reject` (dismissed: the
//! tool call fails and the loop stops, as a rejected permission does). A question waits in the
//! process whose tool asked it; another instance answers 404.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use serde::Deserialize;
use session_core::QuestionId;
use session_runtime::questions::{QuestionNotFound, QuestionRequest};

use super::Shared;
use crate::body::{JsonBody, parse_body};
use crate::error::ServerError;
use crate::extract::{DirectoryQuery, parse_id, query};

/// `GET /question`: the question requests waiting for an answer, oldest first.
pub(crate) async fn list(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Vec<QuestionRequest>>, ServerError> {
    query(q)?;
    Ok(Json(state.runtime.questions()))
}

/// `POST /question/{requestID}/reply` body.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ReplyBody {
    answers: Option<Vec<Vec<String>>>,
}

fn not_waiting(QuestionNotFound(id): QuestionNotFound) -> ServerError {
    ServerError::NotFound(format!("question {id} is not waiting for an answer"))
}

/// `POST /question/{requestID}/reply`: answers a waiting question request.
pub(crate) async fn reply(
    State(state): Shared,
    Path(request): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
    body: JsonBody,
) -> Result<Json<bool>, ServerError> {
    query(q)?;
    let body: ReplyBody = parse_body(&body, true)?;
    let answers = body.answers.ok_or_else(|| {
        ServerError::body("answers: missing (one array of selected labels per question, in order)")
    })?;
    let request: QuestionId = parse_id(&request, "requestID")?;
    state.runtime.reply_question(&request, answers).map_err(not_waiting)?;
    Ok(Json(true))
}

/// `POST /question/{requestID}/reject`: dismisses a waiting question request.
pub(crate) async fn reject(
    State(state): Shared,
    Path(request): Path<String>,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<bool>, ServerError> {
    query(q)?;
    let request: QuestionId = parse_id(&request, "requestID")?;
    state.runtime.reject_question(&request).map_err(not_waiting)?;
    Ok(Json(true))
}
