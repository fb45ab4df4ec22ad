//! `GET /mcp`: each configured MCP server's status in OpenCode's shape,
//! `{ name: { status: "connected" | "failed" | "disabled", error? } }`.
//! `GET /experimental/resource`: no MCP resources are offered to clients.

use std::collections::BTreeMap;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde_json::{Map, Value, json};
use session_runtime::mcp::{ServerState, ServerStatus};

use super::Shared;
use crate::error::ServerError;
use crate::extract::{DirectoryQuery, query};

/// Starts the servers not started yet (each bounded by its timeout, as a prompt would) and
/// answers their status.
pub(crate) async fn status(State(state): Shared) -> Json<Value> {
    state.mcp.start_all().await;
    Json(status_body(&state.mcp.status()))
}

/// The body of `GET /mcp` for `servers`.
fn status_body(servers: &[ServerStatus]) -> Value {
    let mut body = Map::new();
    for server in servers {
        let entry = match (server.state, &server.error) {
            (ServerState::Failed, error) => {
                json!({"status": "failed", "error": error.clone().unwrap_or_else(|| "failed".to_owned())})
            }
            (state, _) => json!({"status": state.as_str()}),
        };
        body.insert(server.name.clone(), entry);
    }
    Value::Object(body)
}

/// `GET /experimental/resource`: no MCP resources are offered to clients.
pub(crate) async fn resources(
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<BTreeMap<String, Value>>, ServerError> {
    query(q)?;
    Ok(Json(BTreeMap::new()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_status_has_opencode_shape() {
        let servers = [
            ServerStatus {
                name: "a".into(),
                state: ServerState::Connected,
                tools: vec!["a_x".into()],
                error: None,
            },
            ServerStatus {
                name: "b".into(),
                state: ServerState::Failed,
                tools: vec![],
                error: Some("boom".into()),
            },
            ServerStatus { name: "c".into(), state: ServerState::Disabled, tools: vec![], error: None },
        ];
        assert_eq!(
            status_body(&servers),
            json!({"a": {"status": "connected"}, "b": {"status": "failed", "error": "boom"}, "c": {"status": "disabled"}})
        );
    }
}
