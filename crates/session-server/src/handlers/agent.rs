//! The agents clients offer in their pickers: `GET /agent` in OpenCode 1.18's shape and
//! `GET /api/agent` in the v2 one.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::Serialize;
use serde_json::{Map, Value};
use session_core::permission::Rule;
use session_runtime::agents::Agent;
use session_runtime::config::AgentMode;
use session_runtime::models::parse_model_ref;

use axum::response::Response;

use super::{Shared, json_response};
use crate::error::ServerError;
use crate::extract::{DirectoryQuery, Located, LocationQuery, query};

/// The agents every runtime has, which OpenCode marks `native`.
const NATIVE: [&str; 4] = ["build", "plan", "general", "explore"];

/// OpenCode's `Agent`.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub(crate) struct AgentInfo<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    mode: AgentMode,
    native: bool,
    hidden: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    top_p: Option<f64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    temperature: Option<f64>,
    permission: &'a [Rule],
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<AgentModel>,
    #[serde(skip_serializing_if = "Option::is_none")]
    variant: Option<&'a str>,
    prompt: &'a str,
    options: Map<String, Value>,
    #[serde(skip_serializing_if = "Option::is_none")]
    steps: Option<u32>,
}

#[derive(Debug, Serialize)]
struct AgentModel {
    #[serde(rename = "modelID")]
    model_id: String,
    #[serde(rename = "providerID")]
    provider_id: String,
}

impl<'a> From<&'a Agent> for AgentInfo<'a> {
    fn from(agent: &'a Agent) -> Self {
        Self {
            name: &agent.name,
            description: agent.description.as_deref(),
            mode: agent.mode,
            native: NATIVE.contains(&agent.name.as_str()),
            hidden: agent.hidden,
            top_p: agent.top_p,
            temperature: agent.temperature,
            permission: &agent.ruleset,
            model: agent
                .model
                .as_deref()
                .and_then(parse_model_ref)
                .map(|m| AgentModel { model_id: m.model_id, provider_id: m.provider_id }),
            variant: agent.variant.as_deref(),
            prompt: &agent.prompt,
            options: Map::new(),
            steps: agent.steps,
        }
    }
}

/// `GET /agent`: the default agent first, then the others by name.
pub(crate) async fn list(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Response, ServerError> {
    query(q)?;
    let default = state.runtime.default_agent();
    let mut list: Vec<&Agent> = state.runtime.agents().collect();
    list.sort_by_key(|agent| agent.name != default);
    let body: Vec<AgentInfo<'_>> = list.into_iter().map(AgentInfo::from).collect();
    json_response(&body)
}

/// The v2 `ModelRef`.
#[derive(Debug, Serialize)]
pub(crate) struct ModelRefV2 {
    id: String,
    #[serde(rename = "providerID")]
    provider_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    variant: Option<String>,
}

/// A model reference in the v2 shape, from `provider/model` and a variant.
pub(crate) fn model_ref_v2(reference: Option<&str>, variant: Option<&str>) -> Option<ModelRefV2> {
    reference.and_then(parse_model_ref).map(|m| ModelRefV2 {
        id: m.model_id,
        provider_id: m.provider_id,
        variant: variant.map(str::to_owned),
    })
}

/// The v2 `AgentV2Info`.
#[derive(Debug, Serialize)]
pub(crate) struct AgentV2 {
    id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<ModelRefV2>,
    request: V2Request,
    system: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    mode: AgentMode,
    hidden: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    steps: Option<u32>,
    permissions: Vec<PermissionV2>,
}

#[derive(Debug, Default, Serialize)]
pub(crate) struct V2Request {
    headers: Map<String, Value>,
    body: Map<String, Value>,
}

/// The v2 `PermissionV2Rule`: OpenCode renamed the three parts.
#[derive(Debug, Serialize)]
struct PermissionV2 {
    action: String,
    resource: String,
    effect: session_core::permission::Action,
}

/// `GET /api/agent`.
pub(crate) async fn list_v2(
    State(state): Shared,
    q: Result<Query<LocationQuery>, QueryRejection>,
) -> Result<Json<Located<Vec<AgentV2>>>, ServerError> {
    query(q)?;
    let data = state
        .runtime
        .agents()
        .map(|agent| AgentV2 {
            id: agent.name.clone(),
            model: model_ref_v2(agent.model.as_deref(), agent.variant.as_deref()),
            request: V2Request::default(),
            system: agent.prompt.clone(),
            description: agent.description.clone(),
            mode: agent.mode,
            hidden: agent.hidden,
            steps: agent.steps,
            permissions: agent
                .ruleset
                .iter()
                .map(|rule| PermissionV2 {
                    action: rule.permission.clone(),
                    resource: rule.pattern.clone(),
                    effect: rule.action,
                })
                .collect(),
        })
        .collect();
    Ok(Json(Located::new(state.runtime.worktree(), data)))
}
