//! The commands clients offer: `GET /command` in OpenCode 1.18's shape (the configured
//! commands, then the skills marked as slash commands, source `skill`, where OpenCode's clients
//! look for them) and `GET /api/command` in the v2 one.

use axum::Json;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Query, State};
use serde::Serialize;
use session_runtime::config::{CommandConfig, LoadedSkill};

use axum::response::Response;

use super::agent::{ModelRefV2, model_ref_v2};
use super::{Shared, json_response};
use crate::error::ServerError;
use crate::extract::{DirectoryQuery, Located, LocationQuery, query};
use crate::state::AppState;

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
pub(crate) async fn list(
    State(state): Shared,
    q: Result<Query<DirectoryQuery>, QueryRejection>,
) -> Result<Response, ServerError> {
    query(q)?;
    let skills = skill_commands(&state);
    let body: Vec<CommandInfo<'_>> = state
        .runtime
        .commands()
        .iter()
        .map(|(name, command)| CommandInfo::new(name, command))
        .chain(skills.iter().map(|(skill, template)| CommandInfo::skill(skill, template)))
        .collect();
    json_response(&body)
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
pub(crate) async fn list_v2(
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
    Ok(Json(Located::new(state.runtime.worktree(), data)))
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
