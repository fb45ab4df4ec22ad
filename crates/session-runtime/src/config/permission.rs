//! The `permission` key (top-level and `agent.<name>.permission`), parsed once into a typed
//! ordered map: OpenCode's `"tool": "allow"` or `"tool": {"pattern": "allow", ...}`, or one
//! action for every tool, with the keys in the order they were written (the order the rules
//! are evaluated in). Also the check of a layer's raw value, whose errors name the key path.

use std::path::Path;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use session_core::permission::{
    Action, PermissionConfigError, Rule, Ruleset, expand_home, rules_from_config,
};

use super::error::{ConfigError, describe};

/// A `permission` value: one action for every tool, or rules by tool in written order.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum PermissionConfig {
    /// `"permission": "ask"`: the action of every tool.
    All(Action),
    /// `{"bash": "ask", "edit": {"src/*": "allow"}}`: each tool's rule, in written order.
    Tools(IndexMap<String, ToolPermission>),
}

/// One tool's entry of a [`PermissionConfig`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum ToolPermission {
    /// `"bash": "ask"`: the action for every pattern.
    Action(Action),
    /// `"bash": {"git *": "allow", "*": "ask"}`: actions by pattern, in written order.
    Patterns(IndexMap<String, Action>),
}

impl PermissionConfig {
    /// The rules in written order: a tool's action gives `{tool, "*", action}`, a pattern map
    /// one rule per pattern, and one action for every tool stands for `{"*": action}`. With
    /// `home`, patterns starting `~/`, `~` or `$HOME` are expanded (as session-core's
    /// `rules_from_config` reads the same JSON).
    pub fn rules(&self, home: Option<&str>) -> Ruleset {
        let tools = match self {
            Self::All(action) => return vec![Rule::shorthand("*", *action)],
            Self::Tools(tools) => tools,
        };
        let mut rules = Ruleset::new();
        for (tool, entry) in tools {
            match entry {
                ToolPermission::Action(action) => rules.push(Rule::shorthand(tool.clone(), *action)),
                ToolPermission::Patterns(patterns) => {
                    rules.extend(patterns.iter().map(|(pattern, action)| {
                        Rule::new(tool.clone(), expand_home(pattern, home), *action)
                    }))
                }
            }
        }
        rules
    }
}

/// The rules of an optional `permission` value (empty when unset).
pub(super) fn rules_of(permission: Option<&PermissionConfig>, home: Option<&str>) -> Ruleset {
    permission.map(|permission| permission.rules(home)).unwrap_or_default()
}

/// Checks the raw `permission` value at `key` of the layer at `path`.
pub(super) fn check_permission(path: &Path, value: Option<&Value>, key: &str) -> Result<(), ConfigError> {
    match value {
        None | Some(Value::Null) => Ok(()),
        Some(value) => rules_from_config(value, None)
            .map(drop)
            .map_err(|error| permission_error(path, key, value, &error)),
    }
}

/// A permission error of session-core, as a type error with the key path.
fn permission_error(path: &Path, key: &str, value: &Value, error: &PermissionConfigError) -> ConfigError {
    const ACTION: &str = r#""allow", "ask" or "deny""#;
    let (key, expected, found) = match error {
        PermissionConfigError::InvalidRule { key: rule, .. } => (
            format!("{key}.{rule}"),
            format!("{ACTION} or an object of pattern to action"),
            value.get(rule).map(describe),
        ),
        PermissionConfigError::InvalidAction { key: rule, pattern, .. } => (
            format!("{key}.{rule}.{pattern}"),
            ACTION.to_owned(),
            value.get(rule).and_then(|patterns| patterns.get(pattern)).map(describe),
        ),
        PermissionConfigError::NotAnObject { .. } => {
            (key.to_owned(), format!("{ACTION} or an object of permission to rule"), Some(describe(value)))
        }
    };
    ConfigError::WrongType {
        path: path.to_path_buf(),
        key,
        expected,
        found: found.unwrap_or_else(|| error.to_string()),
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn the_typed_rules_are_session_cores_in_written_order() {
        for value in [
            json!("ask"),
            json!({"bash": {"git *": "allow", "~/x": "deny", "*": "ask"}, "*": "deny", "edit": "allow"}),
            json!({"read": {"$HOME/secret": "deny"}, "bash": "ask"}),
            json!({}),
        ] {
            let typed: PermissionConfig = serde_json::from_value(value.clone()).unwrap();
            assert_eq!(typed.rules(Some("/home/me")), rules_from_config(&value, Some("/home/me")).unwrap());
            assert_eq!(serde_json::to_value(&typed).unwrap(), value, "written back as read");
        }
    }

    #[test]
    fn an_unknown_action_is_not_a_permission() {
        assert!(serde_json::from_value::<PermissionConfig>(json!({"bash": "yes"})).is_err());
        assert!(serde_json::from_value::<PermissionConfig>(json!(true)).is_err());
    }
}
