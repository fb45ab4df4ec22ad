//! `agent.<name>`: an override of a built-in agent or a new agent, as OpenCode's config and
//! markdown agents (front matter plus a body that is the prompt) write it.

use std::num::NonZeroU32;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};
use session_core::permission::{Action, Rule, Ruleset};

use super::error::ConfigError;
use super::permission::{PermissionConfig, rules_of};

/// `agent.<name>`: an override of a built-in agent or a new agent.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, expecting = "an object")]
pub struct AgentConfig {
    /// The agent's model, `provider/model`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// The model variant (reasoning effort) the agent's requests use, such as `high`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
    /// The system prompt (often `{file:path}`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompt: Option<String>,
    /// When to use the agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Sampling temperature.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub top_p: Option<f64>,
    /// Where the agent may be used.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<AgentMode>,
    /// `true` hides a subagent from the task tool's list (it can still be named).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hidden: Option<bool>,
    /// `true` removes the agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub disable: Option<bool>,
    /// The most loop steps before the agent must answer in text.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub steps: Option<NonZeroU32>,
    /// Deprecated spelling of `steps`; loading moves it into `steps` when that is unset.
    #[serde(rename = "maxSteps", skip_serializing_if = "Option::is_none")]
    pub max_steps: Option<NonZeroU32>,
    /// The agent's permission rules as written, appended after the top-level ones.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub permission: Option<PermissionConfig>,
    /// OpenCode's older switch per tool: `false` denies the tool, `true` allows it (`*` globs
    /// allowed in names); applied after `permission`.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub tools: IndexMap<String, bool>,
    /// A display colour (the TUI's; kept so it is not reported).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub color: Option<String>,
    /// A display name (OpenCode's; the key is the name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// Provider options for this agent's requests; OpenCode also moves unknown agent keys here.
    #[serde(skip_serializing_if = "Map::is_empty")]
    pub options: Map<String, Value>,
}

impl AgentConfig {
    /// The keys of `agent.<name>` (serde's names of the fields): OpenCode moves any other key
    /// into `options`, as its agent schema does. A unit test checks it against the fields.
    pub const KEYS: [&str; 16] = [
        "model",
        "variant",
        "prompt",
        "description",
        "temperature",
        "top_p",
        "mode",
        "hidden",
        "disable",
        "steps",
        "maxSteps",
        "permission",
        "tools",
        "color",
        "name",
        "options",
    ];

    /// The step limit: `steps`, else the deprecated `maxSteps`.
    pub fn step_limit(&self) -> Option<NonZeroU32> {
        self.steps.or(self.max_steps)
    }

    /// The agent's permission rules in written order (empty when unset), then its `tools`
    /// switches as rules (`write`, `edit` and `apply_patch` all mean the `edit` permission).
    pub fn permission_rules(&self, home: Option<&str>) -> Result<Ruleset, ConfigError> {
        let mut rules = rules_of(self.permission.as_ref(), home);
        for (tool, enabled) in &self.tools {
            let action = if *enabled { Action::Allow } else { Action::Deny };
            let permission = session_core::permission::tool_permission(tool);
            rules.push(Rule::new(permission, "*", action));
        }
        Ok(rules)
    }
}

/// Where an agent may be used.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum AgentMode {
    /// Only as a subagent, through the task tool.
    Subagent,
    /// Only as the session's main agent.
    Primary,
    /// Both.
    All,
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use session_core::permission::evaluate;

    use super::*;

    #[test]
    fn the_step_limit_falls_back_to_the_deprecated_spelling() {
        let agent = AgentConfig { max_steps: NonZeroU32::new(9), ..AgentConfig::default() };
        assert_eq!(agent.step_limit(), NonZeroU32::new(9));
        let agent = AgentConfig { steps: NonZeroU32::new(4), ..agent };
        assert_eq!(agent.step_limit(), NonZeroU32::new(4));
    }

    #[test]
    fn tool_switches_become_rules_after_the_permission() {
        let agent: AgentConfig = serde_json::from_value(json!({
            "permission": {"bash": "allow"},
            "tools": {"bash": false, "write": false, "webfetch": true}
        }))
        .unwrap();
        let rules = agent.permission_rules(None).unwrap();
        assert_eq!(evaluate("bash", "ls", &[&rules]), Action::Deny);
        assert_eq!(evaluate("edit", "a.rs", &[&rules]), Action::Deny);
        assert_eq!(evaluate("webfetch", "https://x", &[&rules]), Action::Allow);
    }

    #[test]
    fn the_keys_are_the_fields_serde_writes() {
        // Every field is set (no `..Default::default()`), so a new field fails to compile here
        // until it is added, and then fails the assertion until `KEYS` names it.
        let agent = AgentConfig {
            model: Some("p/m".to_owned()),
            variant: Some("high".to_owned()),
            prompt: Some("p".to_owned()),
            description: Some("d".to_owned()),
            temperature: Some(0.5),
            top_p: Some(0.5),
            mode: Some(AgentMode::All),
            hidden: Some(true),
            disable: Some(false),
            steps: NonZeroU32::new(3),
            max_steps: NonZeroU32::new(3),
            permission: Some(PermissionConfig::All(Action::Ask)),
            tools: IndexMap::from([("bash".to_owned(), false)]),
            color: Some("red".to_owned()),
            name: Some("n".to_owned()),
            options: Map::from_iter([("k".to_owned(), Value::Bool(true))]),
        };
        let written = serde_json::to_value(&agent).unwrap();
        let mut keys: Vec<&str> = written.as_object().unwrap().keys().map(String::as_str).collect();
        let mut expected = AgentConfig::KEYS.to_vec();
        keys.sort_unstable();
        expected.sort_unstable();
        assert_eq!(keys, expected);
    }
}
