//! The agents and commands clients offer in their pickers: `GET /agent` and `GET /command`
//! in OpenCode 1.18's shapes, `GET /api/agent`, `/api/command` and `/api/skill` in the v2
//! ones, and `GET /skill`: the skills the runtime loaded, and those marked as slash commands
//! among the commands (source `skill`), where OpenCode's clients look for them.

use std::sync::Arc;

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::Serialize;
use serde_json::{Map, Value};
use session_core::permission::Rule;
use session_runtime::agents::Agent;
use session_runtime::config::{AgentMode, CommandConfig, LoadedSkill};
use session_runtime::models::parse_model_ref;

use crate::AppState;
use crate::error::ServerError;
use crate::project::{Located, LocationQuery};
use crate::routes::{DirectoryQuery, query};

type Shared = State<Arc<AppState>>;

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
pub(crate) async fn agents(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Value>, ServerError> {
    query(q)?;
    let default = state.runtime.default_agent();
    let mut list: Vec<&Agent> = state.runtime.agents().collect();
    list.sort_by_key(|agent| agent.name != default);
    let body: Vec<AgentInfo<'_>> = list.into_iter().map(AgentInfo::from).collect();
    serde_json::to_value(body).map(Json).map_err(|e| ServerError::Internal(e.to_string()))
}

/// The placeholders a command template takes, in order of first use: `$ARGUMENTS`, `$1`...
fn hints(template: &str) -> Vec<String> {
    let mut found: Vec<String> = Vec::new();
    let mut rest = template;
    while let Some(at) = rest.find('$') {
        rest = &rest[at + 1..];
        let hint = if rest.starts_with("ARGUMENTS") {
            "$ARGUMENTS".to_owned()
        } else {
            let digits: String = rest.chars().take_while(char::is_ascii_digit).collect();
            if digits.is_empty() {
                continue;
            }
            format!("${digits}")
        };
        if !found.contains(&hint) {
            found.push(hint);
        }
    }
    found
}

/// OpenCode's `Command`.
#[derive(Debug, Serialize)]
pub(crate) struct CommandInfo<'a> {
    name: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<&'a str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<&'a str>,
    source: &'static str,
    template: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    subtask: Option<bool>,
    hints: Vec<String>,
}

impl<'a> CommandInfo<'a> {
    /// A skill marked as a slash command, as OpenCode lists a skill's command.
    fn skill(skill: &'a LoadedSkill, template: &'a str) -> Self {
        Self {
            name: &skill.skill.name,
            description: Some(&skill.skill.description),
            agent: None,
            model: None,
            source: "skill",
            template,
            subtask: None,
            hints: Vec::new(),
        }
    }

    fn new(name: &'a str, command: &'a CommandConfig) -> Self {
        Self {
            name,
            description: command.description.as_deref(),
            agent: command.agent.as_deref(),
            model: command.model.as_deref(),
            source: "command",
            template: &command.template,
            subtask: command.subtask,
            hints: hints(&command.template),
        }
    }
}

/// The skills marked as slash commands that no configured command's name hides, with their
/// templates.
fn skill_commands(state: &AppState) -> Vec<(&LoadedSkill, String)> {
    let commands = state.runtime.commands();
    state
        .runtime
        .skills()
        .commands()
        .filter(|skill| !commands.contains_key(&skill.skill.name))
        .map(|skill| (skill, skill.command_template()))
        .collect()
}

/// `GET /command`: the configured commands (`command.<name>` and markdown commands), then the
/// skills marked as slash commands.
pub(crate) async fn commands(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Value>, ServerError> {
    query(q)?;
    let skills = skill_commands(&state);
    let body: Vec<CommandInfo<'_>> = state
        .runtime
        .commands()
        .iter()
        .map(|(name, command)| CommandInfo::new(name, command))
        .chain(skills.iter().map(|(skill, template)| CommandInfo::skill(skill, template)))
        .collect();
    serde_json::to_value(body).map(Json).map_err(|e| ServerError::Internal(e.to_string()))
}

/// OpenCode's skill (`GET /skill`), and the v2 `SkillV2Info` with `slash`.
#[derive(Debug, Serialize)]
pub(crate) struct SkillInfo<'a> {
    name: &'a str,
    description: &'a str,
    #[serde(skip_serializing_if = "Option::is_none")]
    slash: Option<bool>,
    location: String,
    content: &'a str,
}

impl<'a> SkillInfo<'a> {
    fn new(skill: &'a LoadedSkill, v2: bool) -> Self {
        Self {
            name: &skill.skill.name,
            description: &skill.skill.description,
            slash: v2.then_some(skill.slash),
            location: skill.skill.location.display().to_string(),
            content: &skill.skill.content,
        }
    }
}

/// `GET /skill`: the skills the runtime loaded, by name.
pub(crate) async fn skills(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Json<Value>, ServerError> {
    query(q)?;
    let body: Vec<SkillInfo<'_>> =
        state.runtime.skills().skills().iter().map(|skill| SkillInfo::new(skill, false)).collect();
    serde_json::to_value(body).map(Json).map_err(|e| ServerError::Internal(e.to_string()))
}

/// The v2 `ModelRef`.
#[derive(Debug, Serialize)]
struct ModelRefV2 {
    id: String,
    #[serde(rename = "providerID")]
    provider_id: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    variant: Option<String>,
}

fn model_ref_v2(reference: Option<&str>, variant: Option<&str>) -> Option<ModelRefV2> {
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
struct V2Request {
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
pub(crate) async fn v2_agents(
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
    Ok(Json(Located::new(&state, data)))
}

/// The v2 `CommandV2Info`.
#[derive(Debug, Serialize)]
pub(crate) struct CommandV2 {
    name: String,
    template: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    agent: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    model: Option<ModelRefV2>,
    #[serde(skip_serializing_if = "Option::is_none")]
    subtask: Option<bool>,
}

/// `GET /api/command`.
pub(crate) async fn v2_commands(
    State(state): Shared,
    q: Result<Query<LocationQuery>, QueryRejection>,
) -> Result<Json<Located<Vec<CommandV2>>>, ServerError> {
    query(q)?;
    let data = state
        .runtime
        .commands()
        .iter()
        .map(|(name, command)| CommandV2 {
            name: name.clone(),
            template: command.template.clone(),
            description: command.description.clone(),
            agent: command.agent.clone(),
            model: model_ref_v2(command.model.as_deref(), None),
            subtask: command.subtask,
        })
        .chain(skill_commands(&state).into_iter().map(|(skill, template)| CommandV2 {
            name: skill.skill.name.clone(),
            template,
            description: Some(skill.skill.description.clone()),
            agent: None,
            model: None,
            subtask: None,
        }))
        .collect();
    Ok(Json(Located::new(&state, data)))
}

/// `GET /api/skill`: the skills the runtime loaded, by name.
pub(crate) async fn v2_skills(
    State(state): Shared,
    q: Result<Query<LocationQuery>, QueryRejection>,
) -> Result<Json<Value>, ServerError> {
    query(q)?;
    let data: Vec<SkillInfo<'_>> =
        state.runtime.skills().skills().iter().map(|skill| SkillInfo::new(skill, true)).collect();
    serde_json::to_value(Located::new(&state, data))
        .map(Json)
        .map_err(|e| ServerError::Internal(e.to_string()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hints_name_each_placeholder_once_in_order() {
        assert_eq!(hints("fix $2 then $1 and $ARGUMENTS, again $2; $ alone; $x"), ["$2", "$1", "$ARGUMENTS"]);
        assert!(hints("no placeholders").is_empty());
    }
}
