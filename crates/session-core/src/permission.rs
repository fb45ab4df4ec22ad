//! Permission rules (SPEC 3): wildcard matching, "last match wins" evaluation, rules from
//! configuration, the built-in agents' rulesets, tools a ruleset disables, the error texts, and
//! the pure bookkeeping of pending asks.
//!
//! Nothing here waits: [`PermissionAsks`] records asks and turns replies into resolutions, and
//! the async layer around it (session-tools) completes one oneshot per resolution.

use std::collections::BTreeSet;
use std::fmt;
use std::str::Chars;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::id::{MessageId, PermissionId, SessionId};
use crate::js_json::stringify;
use crate::message::JsonObject;

/// What a rule decides for a permission.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Go ahead silently.
    Allow,
    /// Ask the user first.
    Ask,
    /// Refuse with a [`PermissionError::Denied`].
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
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Rule {
    /// Wildcard over permission names (a tool name, `edit`, `doom_loop`, ...).
    pub permission: String,
    /// Wildcard over the asked value (a path, a command, a tool name, ...).
    pub pattern: String,
    /// What to do on a match.
    pub action: Action,
}

impl Rule {
    /// A rule from its three parts.
    pub fn new(permission: impl Into<String>, pattern: impl Into<String>, action: Action) -> Self {
        Self { permission: permission.into(), pattern: pattern.into(), action }
    }

    /// The rule as a JSON object in OpenCode's key order (`permission`, `pattern`, `action`).
    pub fn to_json(&self) -> Value {
        let mut object = JsonObject::new();
        object.insert("permission".to_owned(), Value::String(self.permission.clone()));
        object.insert("pattern".to_owned(), Value::String(self.pattern.clone()));
        object.insert("action".to_owned(), Value::String(self.action.as_str().to_owned()));
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
fn expand_home(pattern: &str, home: Option<&str>) -> String {
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
            return Ok(vec![Rule::new("*", "*", action)]);
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
                rules.push(Rule::new(key.clone(), "*", action));
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

// ---------------------------------------------------------------------------------------------
// Built-in agents

/// The agents every installation has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum BuiltinAgent {
    /// The default agent; runs tools as the rules allow.
    Build,
    /// Plan mode: no edits except plan files.
    Plan,
    /// The general-purpose subagent.
    General,
    /// The read-only exploring subagent.
    Explore,
    /// Writes compaction summaries; may run no tools.
    Compaction,
    /// Writes session titles; may run no tools.
    Title,
    /// Writes message summaries; may run no tools.
    Summary,
}

impl BuiltinAgent {
    /// Every built-in agent.
    pub const ALL: [Self; 7] =
        [Self::Build, Self::Plan, Self::General, Self::Explore, Self::Compaction, Self::Title, Self::Summary];

    /// The agent's name.
    pub fn name(self) -> &'static str {
        match self {
            Self::Build => "build",
            Self::Plan => "plan",
            Self::General => "general",
            Self::Explore => "explore",
            Self::Compaction => "compaction",
            Self::Title => "title",
            Self::Summary => "summary",
        }
    }

    /// The built-in agent with this name.
    pub fn from_name(name: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|agent| agent.name() == name)
    }
}

/// Paths that some built-in rules name; the runtime supplies them (`None` or empty leaves those
/// rules out), so this crate reads no environment.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AgentPaths {
    /// Glob of the folder where truncated tool output is saved (`<data>/tool-output/*`).
    pub tool_output_glob: Option<String>,
    /// Globs of the skill folders (`<skill dir>/*`).
    pub skill_globs: Vec<String>,
    /// Glob of the global plans folder (`<data>/plans/*`), which plan may reach.
    pub plans_glob: Option<String>,
    /// Worktree-relative glob of the global plan files (`<relative data>/plans/*.md`), which
    /// plan may edit.
    pub plans_relative_glob: Option<String>,
}

impl AgentPaths {
    /// Folders outside the worktree that agents may read without asking.
    fn whitelisted(&self) -> impl Iterator<Item = &str> {
        self.tool_output_glob.iter().chain(self.skill_globs.iter()).map(String::as_str)
    }
}

fn external_directory_rules(rules: &mut Ruleset, paths: &AgentPaths) {
    rules.push(Rule::new("external_directory", "*", Action::Ask));
    rules.extend(paths.whitelisted().map(|glob| Rule::new("external_directory", glob, Action::Allow)));
}

/// The rules every agent starts from: everything allowed, then `doom_loop` and directories
/// outside the worktree ask, questions and plan switches denied, and `.env` files ask.
pub fn default_rules(paths: &AgentPaths) -> Ruleset {
    let mut rules = vec![Rule::new("*", "*", Action::Allow), Rule::new("doom_loop", "*", Action::Ask)];
    external_directory_rules(&mut rules, paths);
    rules.extend([
        Rule::new("question", "*", Action::Deny),
        Rule::new("plan_enter", "*", Action::Deny),
        Rule::new("plan_exit", "*", Action::Deny),
        // As in the usual .gitignore for Node projects: env files are secrets, examples are not.
        Rule::new("read", "*", Action::Allow),
        Rule::new("read", "*.env", Action::Ask),
        Rule::new("read", "*.env.*", Action::Ask),
        Rule::new("read", "*.env.example", Action::Allow),
    ]);
    rules
}

/// A built-in agent's own rules, which come after [`default_rules`].
pub fn builtin_agent_rules(agent: BuiltinAgent, paths: &AgentPaths) -> Ruleset {
    match agent {
        BuiltinAgent::Build => {
            vec![Rule::new("question", "*", Action::Allow), Rule::new("plan_enter", "*", Action::Allow)]
        }
        BuiltinAgent::Plan => {
            let mut rules =
                vec![Rule::new("question", "*", Action::Allow), Rule::new("plan_exit", "*", Action::Allow)];
            rules.extend(
                paths.plans_glob.iter().map(|glob| Rule::new("external_directory", glob, Action::Allow)),
            );
            rules.push(Rule::new("edit", "*", Action::Deny));
            rules.push(Rule::new("edit", ".opencode/plans/*.md", Action::Allow));
            rules.extend(paths.plans_relative_glob.iter().map(|glob| Rule::new("edit", glob, Action::Allow)));
            rules
        }
        BuiltinAgent::General => vec![Rule::new("todowrite", "*", Action::Deny)],
        BuiltinAgent::Explore => {
            let mut rules = vec![Rule::new("*", "*", Action::Deny)];
            rules.extend(
                ["grep", "glob", "list", "bash", "webfetch", "websearch", "codesearch", "read"]
                    .map(|tool| Rule::new(tool, "*", Action::Allow)),
            );
            external_directory_rules(&mut rules, paths);
            rules
        }
        BuiltinAgent::Compaction | BuiltinAgent::Title | BuiltinAgent::Summary => {
            vec![Rule::new("*", "*", Action::Deny)]
        }
    }
}

/// An agent's complete ruleset (`agent.permission`): the defaults, the built-in agent's own
/// rules (none for a configured agent, `agent = None`), the user's permission rules, the rules
/// configured for this agent, and finally an allow for the tool-output folder unless a rule
/// explicitly denies it.
pub fn agent_ruleset(
    agent: Option<BuiltinAgent>,
    paths: &AgentPaths,
    user: &[Rule],
    agent_config: &[Rule],
) -> Ruleset {
    let mut rules = default_rules(paths);
    if let Some(agent) = agent {
        rules.extend(builtin_agent_rules(agent, paths));
    }
    rules.extend_from_slice(user);
    rules.extend_from_slice(agent_config);
    if let Some(glob) = &paths.tool_output_glob {
        // Truncated output must stay readable unless the user said otherwise for exactly it.
        let explicit = rules.iter().any(|rule| {
            rule.permission == "external_directory" && rule.action == Action::Deny && &rule.pattern == glob
        });
        if !explicit {
            rules.push(Rule::new("external_directory", glob.clone(), Action::Allow));
        }
    }
    rules
}

// ---------------------------------------------------------------------------------------------
// Disabled tools

/// Tools whose permission is `edit`.
pub const EDIT_TOOLS: [&str; 3] = ["edit", "write", "apply_patch"];

/// The permission name a tool is checked under (`edit` for the editing tools).
pub fn tool_permission(tool: &str) -> &str {
    if EDIT_TOOLS.contains(&tool) { "edit" } else { tool }
}

/// The tools to leave out of a model request: those whose last rule matching their permission
/// name is a deny for every pattern (`"*"`).
pub fn disabled_tools<I>(tools: I, ruleset: &[Rule]) -> BTreeSet<String>
where
    I: IntoIterator,
    I::Item: AsRef<str>,
{
    tools
        .into_iter()
        .filter(|tool| {
            let permission = tool_permission(tool.as_ref());
            ruleset
                .iter()
                .rev()
                .find(|rule| wildcard_match(permission, &rule.permission))
                .is_some_and(|rule| rule.pattern == "*" && rule.action == Action::Deny)
        })
        .map(|tool| tool.as_ref().to_owned())
        .collect()
}

// ---------------------------------------------------------------------------------------------
// Errors

/// The text of [`PermissionError::Rejected`].
pub const PERMISSION_REJECTED_TEXT: &str = "The user rejected permission to use this specific tool call.";
/// The text of [`PermissionError::Corrected`] before the feedback.
pub const PERMISSION_CORRECTED_PREFIX: &str =
    "The user rejected permission to use this specific tool call with the following feedback: ";
/// The text of [`PermissionError::Denied`] before the rules' JSON.
pub const PERMISSION_DENIED_PREFIX: &str = "The user has specified a rule which prevents you from using this specific tool call. Here are some of the relevant rules ";
/// The text of [`QuestionRejectedError`].
pub const QUESTION_REJECTED_TEXT: &str = "The user dismissed this question";

/// Why a permission ask did not go ahead.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PermissionError {
    /// The user rejected the ask.
    #[error("{}", PERMISSION_REJECTED_TEXT)]
    Rejected,
    /// The user rejected the ask and said what to do instead.
    #[error("{}{feedback}", PERMISSION_CORRECTED_PREFIX)]
    Corrected {
        /// The user's words.
        feedback: String,
    },
    /// A rule denies it.
    #[error("{}{}", PERMISSION_DENIED_PREFIX, rules_json(.rules))]
    Denied {
        /// The asking ruleset's rules whose permission matches the asked one.
        rules: Ruleset,
    },
}

fn rules_json(rules: &[Rule]) -> String {
    stringify(&Value::Array(rules.iter().map(Rule::to_json).collect()))
}

/// The user dismissed a question.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, thiserror::Error)]
#[error("{}", QUESTION_REJECTED_TEXT)]
pub struct QuestionRejectedError;

// ---------------------------------------------------------------------------------------------
// Asks

/// What a tool asks permission for (the input of OpenCode's `Permission.ask`, without ids).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionRequest {
    /// The permission name (`edit`, `bash`, `doom_loop`, ...).
    pub permission: String,
    /// The values asked for; every one must be allowed.
    pub patterns: Vec<String>,
    /// The patterns an "always" reply approves from then on.
    pub always: Vec<String>,
    /// Details shown to the user.
    pub metadata: JsonObject,
}

/// The tool call an ask belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ToolCallRef {
    /// The assistant message holding the call.
    #[serde(rename = "messageID")]
    pub message_id: MessageId,
    /// The provider's call id.
    #[serde(rename = "callID")]
    pub call_id: String,
}

/// An ask waiting for the user (the payload of `permission.asked`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PermissionAsk {
    /// The ask's id.
    pub id: PermissionId,
    /// The asking session.
    #[serde(rename = "sessionID")]
    pub session_id: SessionId,
    /// What is asked.
    #[serde(flatten)]
    pub request: PermissionRequest,
    /// The tool call asking, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<ToolCallRef>,
}

/// The user's answer to an ask.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Reply {
    /// Go ahead this time.
    Once,
    /// Go ahead, and approve the ask's `always` patterns from now on.
    Always,
    /// Refuse.
    Reject,
}

/// The result of asking when the rules already decide or the ask must wait.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AskOutcome {
    /// Every pattern is allowed: go ahead without asking.
    Allowed,
    /// The ask is pending; wait for its [`Resolution`].
    Pending,
}

/// A pending ask that is settled (one `permission.replied` event and one completed waiter).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Resolution {
    /// The settled ask.
    pub request_id: PermissionId,
    /// Its session.
    pub session_id: SessionId,
    /// The reply to publish.
    pub reply: Reply,
    /// What the waiting tool gets.
    pub result: Result<(), PermissionError>,
}

/// The pending asks of all sessions and the rules approved by "always" replies.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct PermissionAsks {
    approved: Ruleset,
    pending: Vec<PermissionAsk>,
}

impl PermissionAsks {
    /// Starts with the rules approved earlier (for example loaded from the store).
    pub fn new(approved: Ruleset) -> Self {
        Self { approved, pending: Vec::new() }
    }

    /// The rules approved by "always" replies, oldest first.
    pub fn approved(&self) -> &[Rule] {
        &self.approved
    }

    /// The asks waiting for a reply, oldest first.
    pub fn pending(&self) -> &[PermissionAsk] {
        &self.pending
    }

    /// Asks for `request` under `ruleset` followed by the approved rules: a deny on any pattern
    /// fails at once, all patterns allowed goes ahead, anything else records a pending ask.
    pub fn ask(
        &mut self,
        id: PermissionId,
        session_id: SessionId,
        request: PermissionRequest,
        tool: Option<ToolCallRef>,
        ruleset: &[Rule],
    ) -> Result<AskOutcome, PermissionError> {
        let mut needs_ask = false;
        for pattern in &request.patterns {
            match evaluate(&request.permission, pattern, &[ruleset, &self.approved]) {
                Action::Deny => {
                    let rules = ruleset
                        .iter()
                        .filter(|rule| wildcard_match(&request.permission, &rule.permission))
                        .cloned()
                        .collect();
                    return Err(PermissionError::Denied { rules });
                }
                Action::Allow => {}
                Action::Ask => needs_ask = true,
            }
        }
        if !needs_ask {
            return Ok(AskOutcome::Allowed);
        }
        self.pending.push(PermissionAsk { id, session_id, request, tool });
        Ok(AskOutcome::Pending)
    }

    /// Applies the user's reply to the ask `request_id`; an unknown id settles nothing.
    ///
    /// "reject" fails the ask (with the feedback, when non-empty) and rejects every other
    /// pending ask of its session. "always" also approves the ask's `always` patterns and
    /// settles the session's other asks that the approved rules now allow.
    pub fn reply(
        &mut self,
        request_id: &PermissionId,
        reply: Reply,
        message: Option<&str>,
    ) -> Vec<Resolution> {
        let Some(index) = self.pending.iter().position(|ask| &ask.id == request_id) else {
            return Vec::new();
        };
        let ask = self.pending.remove(index);
        let session_id = ask.session_id.clone();
        match reply {
            Reply::Reject => {
                // An empty feedback is no feedback, as in OpenCode.
                let error = match message {
                    Some(feedback) if !feedback.is_empty() => {
                        PermissionError::Corrected { feedback: feedback.to_owned() }
                    }
                    _ => PermissionError::Rejected,
                };
                let mut resolutions = vec![Resolution {
                    request_id: ask.id,
                    session_id: session_id.clone(),
                    reply,
                    result: Err(error),
                }];
                resolutions.extend(self.reject_session(&session_id));
                resolutions
            }
            Reply::Once => vec![Resolution { request_id: ask.id, session_id, reply, result: Ok(()) }],
            Reply::Always => {
                let permission = &ask.request.permission;
                self.approved.extend(
                    ask.request
                        .always
                        .iter()
                        .map(|pattern| Rule::new(permission.clone(), pattern, Action::Allow)),
                );
                let mut resolutions = vec![Resolution {
                    request_id: ask.id.clone(),
                    session_id: session_id.clone(),
                    reply,
                    result: Ok(()),
                }];
                let approved = &self.approved;
                // Only the approved rules decide here, not the asking agent's ruleset.
                let (now_allowed, still_pending): (Vec<_>, Vec<_>) =
                    std::mem::take(&mut self.pending).into_iter().partition(|other| {
                        other.session_id == session_id
                            && other.request.patterns.iter().all(|pattern| {
                                evaluate(&other.request.permission, pattern, &[approved]) == Action::Allow
                            })
                    });
                self.pending = still_pending;
                resolutions.extend(now_allowed.into_iter().map(|other| Resolution {
                    request_id: other.id,
                    session_id: other.session_id,
                    reply: Reply::Always,
                    result: Ok(()),
                }));
                resolutions
            }
        }
    }

    /// Rejects every pending ask of a session (the session was cancelled).
    pub fn reject_session(&mut self, session_id: &SessionId) -> Vec<Resolution> {
        let (rejected, kept): (Vec<_>, Vec<_>) =
            std::mem::take(&mut self.pending).into_iter().partition(|ask| &ask.session_id == session_id);
        self.pending = kept;
        rejected
            .into_iter()
            .map(|ask| Resolution {
                request_id: ask.id,
                session_id: ask.session_id,
                reply: Reply::Reject,
                result: Err(PermissionError::Rejected),
            })
            .collect()
    }

    /// Forgets an ask whose waiter went away without a reply; returns it if it was pending.
    pub fn cancel(&mut self, request_id: &PermissionId) -> Option<PermissionAsk> {
        let index = self.pending.iter().position(|ask| &ask.id == request_id)?;
        Some(self.pending.remove(index))
    }
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

    #[test]
    fn denied_error_lists_rules_as_compact_json() {
        let error = PermissionError::Denied { rules: vec![Rule::new("*", "*", Action::Deny)] };
        assert_eq!(
            error.to_string(),
            format!(
                "{PERMISSION_DENIED_PREFIX}[{{\"permission\":\"*\",\"pattern\":\"*\",\"action\":\"deny\"}}]"
            )
        );
    }
}
