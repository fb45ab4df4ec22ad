//! The error texts of a refused ask and the pure bookkeeping of pending asks.
//!
//! Nothing here waits: [`PermissionAsks`] records asks and turns replies into resolutions, and
//! the async layer around it (session-tools) completes one oneshot per resolution.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use super::rules::{Action, Rule, Ruleset, evaluate, matching_rule, wildcard_match};
use crate::id::{MessageId, PermissionId, SessionId};
use crate::js_json::{JsonObject, stringify};

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
    /// Pending asks recorded by [`PermissionAsks::ask_anyway`]: only a reply to them settles
    /// them, never an approved rule.
    insisted: Vec<PermissionId>,
    /// Rulesets that decide every ask too (a subagent's parent's): each is evaluated followed
    /// by the approved rules, and the strictest answer of them and the asker's ruleset wins.
    bounds: Vec<Ruleset>,
}

/// How strict an action is: allow, then ask, then deny.
fn strictness(action: Action) -> u8 {
    match action {
        Action::Allow => 0,
        Action::Ask => 1,
        Action::Deny => 2,
    }
}

impl PermissionAsks {
    /// Starts with the rules approved earlier (for example loaded from the store).
    pub fn new(approved: Ruleset) -> Self {
        Self { approved, pending: Vec::new(), insisted: Vec::new(), bounds: Vec::new() }
    }

    /// Sets the rulesets that bound every decision (see [`PermissionAsks::bounds`]).
    pub fn set_bounds(&mut self, bounds: Vec<Ruleset>) {
        self.bounds = bounds;
    }

    /// The rulesets every decision is bounded by: a value any of them (followed by the
    /// approved rules) denies is denied, one any of them asks about is asked, whatever the
    /// asker's own ruleset says.
    pub fn bounds(&self) -> &[Ruleset] {
        &self.bounds
    }

    /// The decision for `pattern`: the strictest of `ruleset` and each bound (each followed by
    /// the approved rules), with the rule that decided it and the ruleset that rule is in.
    fn decide<'a>(
        &'a self,
        permission: &str,
        pattern: &str,
        ruleset: &'a [Rule],
    ) -> (Action, Option<&'a Rule>, &'a [Rule]) {
        let rule = matching_rule(permission, pattern, &[ruleset, &self.approved]);
        let mut decided = (rule.map_or(Action::Ask, |rule| rule.action), rule, ruleset);
        for bound in &self.bounds {
            let rule = matching_rule(permission, pattern, &[bound, &self.approved]);
            let action = rule.map_or(Action::Ask, |rule| rule.action);
            if strictness(action) > strictness(decided.0) {
                decided = (action, rule, bound.as_slice());
            }
        }
        decided
    }

    /// Fails with [`PermissionError::Denied`] when `ruleset` followed by the approved rules
    /// denies any of the request's patterns; records nothing.
    pub fn check_denied(&self, request: &PermissionRequest, ruleset: &[Rule]) -> Result<(), PermissionError> {
        let denied = request.patterns.iter().find_map(|pattern| {
            let (action, _, deciding) = self.decide(&request.permission, pattern, ruleset);
            (action == Action::Deny).then_some(deciding)
        });
        let Some(deciding) = denied else {
            return Ok(());
        };
        let rules = deciding
            .iter()
            .filter(|rule| wildcard_match(&request.permission, &rule.permission))
            .cloned()
            .collect();
        Err(PermissionError::Denied { rules })
    }

    /// The rule that decides `pattern` under `permission`: the last match in `ruleset`
    /// followed by the approved rules, or in a bound when that is stricter.
    pub fn deciding_rule<'a>(
        &'a self,
        permission: &str,
        pattern: &str,
        ruleset: &'a [Rule],
    ) -> Option<&'a Rule> {
        self.decide(permission, pattern, ruleset).1
    }

    /// True when the pending ask `id` was recorded by [`PermissionAsks::ask_anyway`].
    pub fn is_insisted(&self, id: &PermissionId) -> bool {
        self.insisted.contains(id)
    }

    /// Like [`PermissionAsks::ask`], but records a pending ask even when every pattern is
    /// allowed (a deny still fails at once): for a request whose patterns cannot be trusted
    /// to describe what would happen, such as a shell command the analysis cannot follow.
    /// An approved rule never settles it; only a reply does.
    pub fn ask_anyway(
        &mut self,
        id: PermissionId,
        session_id: SessionId,
        request: PermissionRequest,
        tool: Option<ToolCallRef>,
        ruleset: &[Rule],
    ) -> Result<AskOutcome, PermissionError> {
        self.check_denied(&request, ruleset)?;
        self.insisted.push(id.clone());
        self.pending.push(PermissionAsk { id, session_id, request, tool });
        Ok(AskOutcome::Pending)
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
        self.check_denied(&request, ruleset)?;
        let needs_ask = request
            .patterns
            .iter()
            .any(|pattern| self.decide(&request.permission, pattern, ruleset).0 == Action::Ask);
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
        self.insisted.retain(|id| id != request_id);
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
                let insisted = &self.insisted;
                // Only the approved rules decide here, not the asking agent's ruleset.
                let (now_allowed, still_pending): (Vec<_>, Vec<_>) =
                    std::mem::take(&mut self.pending).into_iter().partition(|other| {
                        other.session_id == session_id
                            && !insisted.contains(&other.id)
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
        self.insisted.retain(|id| !rejected.iter().any(|ask| &ask.id == id));
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
        self.insisted.retain(|id| id != request_id);
        Some(self.pending.remove(index))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::id::Identifier as _;

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

    /// The denial OpenCode 1.18.34 wrote (taken from its `opencode export`) for a `read` of
    /// `secret.txt` under the build agent with the configuration
    /// `"permission": {"edit": "allow", "read": {"*": "allow", "*secret.txt": "deny"}}`: a rule
    /// written `"key": "action"` lists `action` before `pattern`, one from a pattern object
    /// `pattern` before `action`.
    #[test]
    fn denied_error_orders_each_rule_as_opencode_built_it() {
        let config = serde_json::json!({"edit": "allow", "read": {"*": "allow", "*secret.txt": "deny"}});
        let user = crate::permission::rules_from_config(&config, None).unwrap();
        let mut rules = crate::permission::default_rules(&crate::permission::AgentPaths::default());
        rules.extend(user);
        let relevant: Vec<Rule> = rules
            .into_iter()
            .filter(|rule| crate::permission::wildcard_match("read", &rule.permission))
            .collect();
        let error = PermissionError::Denied { rules: relevant };
        let opencode = "The user has specified a rule which prevents you from using this specific tool call. \
            Here are some of the relevant rules [{\"permission\":\"*\",\"action\":\"allow\",\"pattern\":\"*\"},\
            {\"permission\":\"read\",\"pattern\":\"*\",\"action\":\"allow\"},\
            {\"permission\":\"read\",\"pattern\":\"*.env\",\"action\":\"ask\"},\
            {\"permission\":\"read\",\"pattern\":\"*.env.*\",\"action\":\"ask\"},\
            {\"permission\":\"read\",\"pattern\":\"*.env.example\",\"action\":\"allow\"},\
            {\"permission\":\"read\",\"pattern\":\"*\",\"action\":\"allow\"},\
            {\"permission\":\"read\",\"pattern\":\"*secret.txt\",\"action\":\"deny\"}]";
        assert_eq!(error.to_string(), opencode);
    }

    #[test]
    fn shorthand_rules_equal_their_object_form_and_only_print_differently() {
        let short = Rule::shorthand("bash", Action::Ask);
        let entry = Rule::new("bash", "*", Action::Ask);
        assert_eq!(short, entry);
        assert_eq!(short.to_json().to_string(), r#"{"permission":"bash","action":"ask","pattern":"*"}"#);
        assert_eq!(entry.to_json().to_string(), r#"{"permission":"bash","pattern":"*","action":"ask"}"#);
    }

    fn request(permission: &str, pattern: &str) -> PermissionRequest {
        PermissionRequest {
            permission: permission.to_owned(),
            patterns: vec![pattern.to_owned()],
            always: vec![pattern.to_owned()],
            metadata: JsonObject::new(),
        }
    }

    #[test]
    fn a_bound_makes_every_decision_at_least_as_strict_as_it() {
        let own = vec![Rule::new("*", "*", Action::Allow)];
        let parent = vec![
            Rule::new("*", "*", Action::Allow),
            Rule::new("bash", "*", Action::Ask),
            Rule::new("edit", "*", Action::Deny),
        ];
        let session = SessionId::parse("ses_bound").unwrap();
        let mut asks = PermissionAsks::default();
        // Unbound, the child's own rules let everything through.
        assert!(asks.check_denied(&request("edit", "a.rs"), &own).is_ok());
        asks.set_bounds(vec![parent]);
        let denied = asks.check_denied(&request("edit", "a.rs"), &own).unwrap_err();
        assert!(
            matches!(&denied, PermissionError::Denied { rules } if rules.iter().any(|r| r.permission == "edit"))
        );
        assert_eq!(asks.deciding_rule("bash", "ls", &own).map(|rule| rule.action), Some(Action::Ask));
        let id = PermissionId::parse("per_bound").unwrap();
        let outcome = asks.ask(id, session.clone(), request("bash", "ls"), None, &own).unwrap();
        assert_eq!(outcome, AskOutcome::Pending);
        let id = PermissionId::parse("per_read").unwrap();
        assert_eq!(asks.ask(id, session, request("read", "a.rs"), None, &own).unwrap(), AskOutcome::Allowed);
    }
}
