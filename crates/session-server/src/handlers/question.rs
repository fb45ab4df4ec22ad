//! Questions a tool asks the user: no tool here asks one, so none waits and none can be
//! answered.

use axum::Json;
use axum::extract::Query;
use axum::extract::rejection::QueryRejection;
use serde_json::Value;

use crate::error::ServerError;
use crate::extract::{DirectoryQuery, query};

/// `GET /question`: no question waits here.
pub(crate) async fn list(
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Vec<Value>>, ServerError> {
    query(q)?;
    Ok(Json(Vec::new()))
}

/// `POST /question/{requestID}/reply` and `/reject`: no tool here asks questions.
pub(crate) async fn answer(axum::extract::Path(id): axum::extract::Path<String>) -> ServerError {
    ServerError::NotFound(format!(
        "question {id} is not waiting for an answer (this server's tools ask none)"
    ))
}
