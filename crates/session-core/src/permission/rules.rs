//! Permission rules (SPEC 3): actions and rules, wildcard matching, "last match wins"
//! evaluation, and rules read from configuration.

use std::fmt;
use std::str::Chars;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::js_json::JsonObject;

/// What a rule decides for a permission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Go ahead silently.
    Allow,
    /// Ask the user first.
    Ask,
    /// Refuse with a [`PermissionError::Denied`](super::PermissionError::Denied).
    Deny,
}

impl Action {
    /// The lower-case name used in JSON and configuration.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Allow => "allow",
            Self::Ask => "ask",
            Self::Deny => "deny",
        }
    }

    /// Reads a configuration value (`"allow"`, `"ask"` or `"deny"`).
    pub fn parse(value: &str) -> Option<Self> {
        match value {
            "allow" => Some(Self::Allow),
            "ask" => Some(Self::Ask),
            "deny" => Some(Self::Deny),
            _ => None,
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One rule: for permissions matching `permission` and values matching `pattern`, do `action`.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Rule {
    /// Wildcard over permission names (a tool name, `edit`, `doom_loop`, ...).
    pub permission: String,
    /// Wildcard over the asked value (a path, a command, a tool name, ...).
    pub pattern: String,
    /// What to do on a match.
    pub action: Action,
    /// Written as `"key": "action"` (the pattern `*` implied) rather than as one entry of a
    /// `"key": {pattern: action}` object. It changes nothing but the key order of
    /// [`Rule::to_json`], which OpenCode's clients see in a denial's text; not stored.
    #[serde(skip)]
    pub shorthand: bool,
}

/// Rules are equal when they decide alike: how one was written does not matter.
impl PartialEq for Rule {
    fn eq(&self, other: &Self) -> bool {
        self.permission == other.permission && self.pattern == other.pattern && self.action == other.action
    }
}

impl Eq for Rule {}

impl std::hash::Hash for Rule {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.permission.hash(state);
        self.pattern.hash(state);
        self.action.hash(state);
    }
}

impl Rule {
    /// A rule from its three parts, as one entry of a `"key": {pattern: action}` object.
    pub fn new(permission: impl Into<String>, pattern: impl Into<String>, action: Action) -> Self {
        Self { permission: permission.into(), pattern: pattern.into(), action, shorthand: false }
    }

    /// A rule for every value of `permission`, written as `"permission": "action"`.
    pub fn shorthand(permission: impl Into<String>, action: Action) -> Self {
        Self { permission: permission.into(), pattern: "*".to_owned(), action, shorthand: true }
    }

    /// The rule as a JSON object in OpenCode's key order: `permission`, `pattern`, `action`, or
    /// `permission`, `action`, `pattern` for a [shorthand](Rule::shorthand) rule (OpenCode
    /// builds that one as `{permission, action, pattern: "*"}`).
    pub fn to_json(&self) -> Value {
        let mut object = JsonObject::new();
        object.insert("permission".to_owned(), Value::String(self.permission.clone()));
        let pattern = Value::String(self.pattern.clone());
        let action = Value::String(self.action.as_str().to_owned());
        if self.shorthand {
            object.insert("action".to_owned(), action);
            object.insert("pattern".to_owned(), pattern);
        } else {
            object.insert("pattern".to_owned(), pattern);
            object.insert("action".to_owned(), action);
        }
        Value::Object(object)
    }
}

/// An ordered list of rules; later rules win.
pub type Ruleset = Vec<Rule>;

// ---------------------------------------------------------------------------------------------
// Wildcards

/// Matches `text` against a permission wildcard (SPEC 3): `*` is any run of characters
/// (including `/`), `?` is one character, `\` counts as `/` on both sides, a pattern ending in
/// `" *"` also matches without that tail, and the match is anchored and case-sensitive.
pub fn wildcard_match(text: &str, pattern: &str) -> bool {
    // OpenCode turns a trailing " *" into an optional group, so "ls *" also matches "ls".
    if let Some(head) = pattern.strip_suffix(" *")
        && glob(text, head)
    {
        return true;
    }
    glob(text, pattern)
}

fn normalize_separator(ch: char) -> char {
    if ch == '\\' { '/' } else { ch }
}

/// Anchored matching of `*` and `?` by backtracking to the last star: O(text × pattern) at
/// worst, no allocation, and no way to fail on any input.
fn glob(text: &str, pattern: &str) -> bool {
    let mut text_rest = text.chars();
    let mut pattern_rest = pattern.chars();
    // After a mismatch the last star swallows one more character: the pattern just after that
    // star, and the text from where it would resume.
    let mut resume: Option<(Chars<'_>, Chars<'_>)> = None;
    loop {
        let mut pattern_next = pattern_rest.clone();
        let mut text_next = text_rest.clone();
        match (pattern_next.next().map(normalize_separator), text_next.next().map(normalize_separator)) {
            (None, None) => return true,
            (Some('*'), _) => {
                pattern_rest = pattern_next;
                resume = Some((pattern_rest.clone(), text_rest.clone()));
            }
            (Some('?'), Some(_)) => {
                pattern_rest = pattern_next;
                text_rest = text_next;
            }
            (Some(expected), Some(actual)) if expected == actual => {
                pattern_rest = pattern_next;
                text_rest = text_next;
            }
            _ => {
                let Some((after_star, swallowed)) = resume.as_mut() else { return false };
                if swallowed.next().is_none() {
                    return false;
                }
                pattern_rest = after_star.clone();
                text_rest = swallowed.clone();
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Evaluation

/// The last rule, over `rulesets` taken in order, whose permission and pattern both match.
pub fn matching_rule<'a>(permission: &str, pattern: &str, rulesets: &[&'a [Rule]]) -> Option<&'a Rule> {
    rulesets
        .iter()
        .rev()
        .flat_map(|rules| rules.iter().rev())
        .find(|rule| wildcard_match(permission, &rule.permission) && wildcard_match(pattern, &rule.pattern))
}

/// The action for `pattern` under `permission`: the last matching rule's, or ask when none
/// matches.
pub fn evaluate(permission: &str, pattern: &str, rulesets: &[&[Rule]]) -> Action {
    matching_rule(permission, pattern, rulesets).map_or(Action::Ask, |rule| rule.action)
}

// ---------------------------------------------------------------------------------------------
// Configuration

/// A permission configuration value that has no valid shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PermissionConfigError {
    /// The whole value is neither an object nor an action string.
    #[error("permission config must be an object or one of \"allow\", \"ask\", \"deny\", got {found}")]
    NotAnObject {
        /// What was found: a JSON type, or the unknown action text.
        found: String,
    },
    /// A permission's value is neither an action string nor an object of pattern to action.
    #[error("permission config {key:?} must be an action or an object of pattern to action, got {found}")]
    InvalidRule {
        /// The permission key.
        key: String,
        /// What was found: a JSON type, or the unknown action text.
        found: String,
    },
    /// A pattern's value is not an action string.
    #[error(
        "permission config {key:?}, pattern {pattern:?}: expected \"allow\", \"ask\" or \"deny\", got {found}"
    )]
    InvalidAction {
        /// The permission key.
        key: String,
        /// The pattern.
        pattern: String,
        /// What was found: a JSON type, or the unknown action text.
        found: String,
    },
}

fn json_type(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

fn describe(value: &Value) -> String {
    match value {
        Value::String(text) => format!("{text:?}"),
        other => json_type(other).to_owned(),
    }
}

/// Expands a leading `~` or `$HOME` in a configured pattern, as OpenCode does.
pub fn expand_home(pattern: &str, home: Option<&str>) -> String {
    let Some(home) = home else { return pattern.to_owned() };
    if pattern == "~" {
        home.to_owned()
    } else if let Some(rest) = pattern.strip_prefix("~/") {
        format!("{home}/{rest}")
    } else if let Some(rest) = pattern.strip_prefix("$HOME") {
        // OpenCode also expands "$HOME" glued to more text; the rest keeps its own separator.
        format!("{home}{rest}")
    } else {
        pattern.to_owned()
    }
}

/// Converts a permission configuration into rules, in the order the keys were written: a string
/// `v` under key `k` gives `{k, "*", v}`, an object gives one rule per pattern, and a bare
/// action string `v` stands for `{"*": v}`. With `home`, patterns starting `~/`, `~` or `$HOME`
/// are expanded.
pub fn rules_from_config(config: &Value, home: Option<&str>) -> Result<Ruleset, PermissionConfigError> {
    let entries = match config {
        Value::Object(entries) => entries,
        Value::String(text) => {
            let action = Action::parse(text)
                .ok_or_else(|| PermissionConfigError::NotAnObject { found: describe(config) })?;
            return Ok(vec![Rule::shorthand("*", action)]);
        }
        other => return Err(PermissionConfigError::NotAnObject { found: describe(other) }),
    };
    let mut rules = Ruleset::new();
    for (key, value) in entries {
        match value {
            Value::String(text) => {
                let action = Action::parse(text).ok_or_else(|| PermissionConfigError::InvalidRule {
                    key: key.clone(),
                    found: describe(value),
                })?;
                rules.push(Rule::shorthand(key.clone(), action));
            }
            Value::Object(patterns) => {
                for (pattern, action) in patterns {
                    let action = action.as_str().and_then(Action::parse).ok_or_else(|| {
                        PermissionConfigError::InvalidAction {
                            key: key.clone(),
                            pattern: pattern.clone(),
                            found: describe(action),
                        }
                    })?;
                    rules.push(Rule::new(key.clone(), expand_home(pattern, home), action));
                }
            }
            other => {
                return Err(PermissionConfigError::InvalidRule {
                    key: key.clone(),
                    found: json_type(other).to_owned(),
                });
            }
        }
    }
    Ok(rules)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wildcard_basics() {
        assert!(wildcard_match("anything/at/all", "*"));
        assert!(wildcard_match("", "*"));
        assert!(wildcard_match("src/a.ts", "src/*.ts"));
        assert!(wildcard_match("src\\a.ts", "src/*.ts"));
        assert!(wildcard_match("src/a.ts", "src\\*"));
        assert!(wildcard_match("ab", "a?"));
        assert!(!wildcard_match("a", "a?"));
        assert!(!wildcard_match("Read", "read"));
        assert!(wildcard_match("ls", "ls *"));
        assert!(wildcard_match("ls -la", "ls *"));
        assert!(!wildcard_match("lsof", "ls *"));
        assert!(wildcard_match("a.b(c)[d]+$^|{}", "a.b(c)[d]+$^|{}"));
        assert!(!wildcard_match("axb", "a.b"));
        assert!(wildcard_match("x.env.local", "*.env.*"));
    }
}
