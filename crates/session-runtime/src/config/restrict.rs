//! What an untrusted project layer may change: restrictions on top of the trusted layers, never
//! a removal or a weakening of them.
//!
//! A plain merge lets a higher layer replace what a lower one wrote: `"permission": null` wiped
//! the user's rules, an object replaced the user's `"permission": "ask"`, a `sandbox` object
//! replaced the user's `"read-only"` word. So an untrusted layer is not merged as it is: its
//! permission rules (top-level and per agent, `tools` switches included) are kept apart as
//! [`Restrictions`] and appended after every trusted rule of each agent by [`restrict_after`],
//! which re-asserts the trusted denies an appended `ask` could cover; its `sandbox` is combined
//! field by field, each field the stricter of the two; and the keys that could re-open what the
//! user closed (`default_agent` over the user's, `disable: false`) are dropped with a warning.

use std::path::Path;

use indexmap::IndexMap;
use serde::Deserialize;
use serde_json::{Map, Value};
use session_core::permission::{Action, Rule, Ruleset, tool_permission};
use session_tools::{Enforcement, SandboxMode};

use super::error::{ConfigWarning, WarningReason};
use super::merge::merge;
use super::permission::{PermissionConfig, ToolPermission};
use super::sandbox::SandboxConfig;

/// The permission values of untrusted layers, kept out of the merge: rules that may only
/// tighten what the trusted layers and the built-in defaults decide.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Restrictions {
    /// Top-level `permission` values, in layer order (their `allow` rules already removed).
    pub permission: Vec<PermissionConfig>,
    /// `agent.<name>.permission` values and `tools` switches turned off (as `deny` rules),
    /// per agent, in layer order.
    pub agent: IndexMap<String, Vec<PermissionConfig>>,
}

impl Restrictions {
    /// True when no untrusted layer added a rule.
    pub fn is_empty(&self) -> bool {
        self.permission.is_empty() && self.agent.is_empty()
    }
}

/// Merges the untrusted layer `layer` (already stripped by `restrict_untrusted`) over
/// `merged`: its permission rules go to `restrictions`, its sandbox tightens field by field,
/// and what could loosen the trusted layers is dropped into `warnings`.
pub(crate) fn merge_untrusted(
    merged: Value,
    layer: Value,
    path: &Path,
    restrictions: &mut Restrictions,
    warnings: &mut Vec<ConfigWarning>,
) -> Value {
    let Value::Object(mut layer) = layer else { return merged };
    let Value::Object(mut merged) = merged else { return merge(merged, Value::Object(layer)) };
    let mut warn = |key: String| {
        warnings.push(ConfigWarning { path: path.to_path_buf(), key, reason: WarningReason::Untrusted });
    };
    if let Some(permission) = layer.remove("permission") {
        match permission {
            Value::Null => warn("permission: null (the trusted rules stay)".to_owned()),
            value => {
                for key in weakening_attempts(merged.get("permission"), &value) {
                    warn(key);
                }
                restrictions.permission.push(restriction(&value));
            }
        }
    }
    if let Some(sandbox) = layer.remove("sandbox") {
        let combined = tighten_sandbox(merged.get("sandbox"), &sandbox);
        merged.insert("sandbox".to_owned(), combined);
    }
    if layer.contains_key("default_agent") && merged.get("default_agent").is_some_and(|v| !v.is_null()) {
        layer.remove("default_agent");
        warn("default_agent (the trusted one stays)".to_owned());
    }
    if let Some(Value::Object(agents)) = layer.get_mut("agent") {
        for (name, agent) in agents.iter_mut() {
            let Value::Object(agent) = agent else { continue };
            restrict_agent(name, agent, restrictions, &mut warn);
        }
    }
    merge(Value::Object(merged), Value::Object(layer))
}

/// An untrusted layer's permission value as a restriction. The layer was checked, so the value
/// parses; were it not to, the restriction denies everything rather than vanish.
fn restriction(value: &Value) -> PermissionConfig {
    PermissionConfig::deserialize(value).unwrap_or(PermissionConfig::All(Action::Deny))
}

/// What in the untrusted permission value `untrusted` tried to loosen `trusted` (the merged
/// trusted value): replacing a rule for every permission by per-permission ones, or an `ask`
/// over a trusted deny. Neither takes effect (the trusted rules stay, and the deny is
/// re-asserted after the untrusted rules); each is reported as a dotted key.
fn weakening_attempts(trusted: Option<&Value>, untrusted: &Value) -> Vec<String> {
    let mut found = Vec::new();
    if matches!(
        (trusted, untrusted),
        (Some(Value::String(_)), Value::Object(_)) | (Some(Value::Object(_)), Value::String(_))
    ) {
        found.push(
            "permission (it would replace the trusted rules; they stay, its rules add to them)".to_owned(),
        );
    }
    let rules = |value: Option<&Value>| {
        value
            .and_then(|value| session_core::permission::rules_from_config(value, None).ok())
            .unwrap_or_default()
    };
    let base = rules(trusted);
    for ask in weakening_asks(&base, &rules(Some(untrusted))) {
        found.push(format!("permission.{}.{}: ask (the trusted deny stays)", ask.permission, ask.pattern));
    }
    found
}

/// Moves an untrusted `agent.<name>`'s rules and switched-off tools into `restrictions` and
/// drops `disable: false`, which could bring back an agent the user removed.
fn restrict_agent(
    name: &str,
    agent: &mut Map<String, Value>,
    restrictions: &mut Restrictions,
    warn: &mut impl FnMut(String),
) {
    if let Some(permission) = agent.remove("permission") {
        match permission {
            Value::Null => warn(format!("agent.{name}.permission: null (the trusted rules stay)")),
            value => restrictions.agent.entry(name.to_owned()).or_default().push(restriction(&value)),
        }
    }
    if let Some(Value::Object(tools)) = agent.remove("tools") {
        // `restrict_untrusted` removed every `true`; a `false` denies the tool.
        let denied: IndexMap<String, ToolPermission> = tools
            .iter()
            .filter(|(_, enabled)| **enabled == Value::Bool(false))
            .map(|(tool, _)| (tool_permission(tool).to_owned(), ToolPermission::Action(Action::Deny)))
            .collect();
        if !denied.is_empty() {
            restrictions.agent.entry(name.to_owned()).or_default().push(PermissionConfig::Tools(denied));
        }
    }
    if agent.get("disable") == Some(&Value::Bool(false)) {
        agent.remove("disable");
        warn(format!("agent.{name}.disable: false"));
    }
}

/// The sandbox of `trusted` (as written, word or object) tightened by `untrusted`: each field
/// the stricter of the two; the result is an object, so a later layer merges field by field.
fn tighten_sandbox(trusted: Option<&Value>, untrusted: &Value) -> Value {
    let parse = |value: Option<&Value>| {
        value
            .and_then(|value| serde_json::from_value::<SandboxConfig>(value.clone()).ok())
            .unwrap_or_default()
    };
    let mut base = parse(trusted);
    let over = parse(Some(untrusted));
    base.mode = match (base.mode, over.mode) {
        (Some(a), Some(b)) => Some(a.stricter(b)),
        (None, Some(b)) => Some(SandboxMode::WorkspaceWrite.stricter(b)),
        (a, None) => a,
    };
    if over.enforcement == Some(Enforcement::Required) {
        base.enforcement = Some(Enforcement::Required);
    }
    if over.network == Some(false) {
        base.network = Some(false);
    }
    if over.git_writable == Some(false) {
        base.git_writable = Some(false);
    }
    serde_json::to_value(&base).unwrap_or(Value::Object(Map::new()))
}

/// The rules to append after `base` (an agent's complete trusted ruleset) so that `extra` (the
/// untrusted rules) can only tighten it: `extra` without its `allow` rules, then every deny of
/// `base` that an appended `ask` could otherwise cover.
///
/// Last match wins, so an appended `ask` for `r*` would turn the trusted `"rm *": "deny"` into
/// an ask. A deny of `base` is re-asserted after the extra rules when some extra `ask` may match
/// a value it matches (their wildcards overlap) and no later rule of `base` matches all that
/// `ask` matches (then that later rule, not the deny, decides those values in `base`). The
/// result decides every value at least as strictly as `base` does.
pub fn restrict_after(base: &[Rule], extra: &[Rule]) -> Ruleset {
    let mut rules: Ruleset = extra.iter().filter(|rule| rule.action != Action::Allow).cloned().collect();
    let reasserted: Vec<Rule> = base
        .iter()
        .enumerate()
        .filter(|(index, deny)| deny_covered(base, *index, deny, &rules).is_some())
        .map(|(_, deny)| deny.clone())
        .collect();
    rules.extend(reasserted);
    rules
}

/// The `ask` rules of `extra` that could turn a deny of `base` into an ask if appended.
fn weakening_asks<'a>(base: &[Rule], extra: &'a [Rule]) -> Vec<&'a Rule> {
    let mut asks: Vec<&Rule> = Vec::new();
    for (index, deny) in base.iter().enumerate() {
        let mut rest = extra;
        while let Some(ask) = deny_covered(base, index, deny, rest) {
            if !asks.iter().any(|seen| std::ptr::eq(*seen, ask)) {
                asks.push(ask);
            }
            let position = rest.iter().position(|rule| std::ptr::eq(rule, ask)).map_or(rest.len(), |p| p + 1);
            rest = &rest[position..];
        }
    }
    asks
}

/// The first `ask` of `extra` that may match a value the deny `base[index]` decides in `base`
/// (their wildcards overlap, and no later rule of `base` matches all the ask matches).
fn deny_covered<'a>(base: &[Rule], index: usize, deny: &Rule, extra: &'a [Rule]) -> Option<&'a Rule> {
    if deny.action != Action::Deny {
        return None;
    }
    let later = &base[index + 1..];
    extra.iter().find(|ask| {
        ask.action == Action::Ask
            && rules_overlap(deny, ask)
            && !later.iter().any(|rule| rule_covers(rule, ask))
    })
}

/// True when `general` matches every value `specific` matches (checked conservatively: the
/// same text, or `*`).
fn rule_covers(general: &Rule, specific: &Rule) -> bool {
    let covers = |a: &str, b: &str| a == "*" || a == b;
    covers(&general.permission, &specific.permission) && covers(&general.pattern, &specific.pattern)
}

/// True when some permission and value match both rules.
fn rules_overlap(a: &Rule, b: &Rule) -> bool {
    wildcards_overlap(&a.permission, &b.permission) && wildcards_overlap(&a.pattern, &b.pattern)
}

/// True when some text matches both permission wildcards (`*`, `?`, `\` as `/`, and a trailing
/// `" *"` that may also be absent, as `wildcard_match` reads them).
pub(crate) fn wildcards_overlap(a: &str, b: &str) -> bool {
    let spellings = |pattern: &str| {
        let mut all = vec![pattern.to_owned()];
        if let Some(head) = pattern.strip_suffix(" *") {
            all.push(head.to_owned());
        }
        all
    };
    spellings(a).iter().any(|a| spellings(b).iter().any(|b| globs_overlap(a, b)))
}

/// Whether two globs of `*` (any run) and `?` (one character) share a matching text: a walk
/// over both at once, remembering the pairs of positions already tried.
fn globs_overlap(a: &str, b: &str) -> bool {
    let norm = |c: char| if c == '\\' { '/' } else { c };
    let a: Vec<char> = a.chars().map(norm).collect();
    let b: Vec<char> = b.chars().map(norm).collect();
    let width = b.len() + 1;
    let mut seen = vec![false; (a.len() + 1) * width];
    let mut stack = vec![(0usize, 0usize)];
    while let Some((i, j)) = stack.pop() {
        let slot = i * width + j;
        if seen[slot] {
            continue;
        }
        seen[slot] = true;
        if i == a.len() && j == b.len() {
            return true;
        }
        match (a.get(i), b.get(j)) {
            (Some('*'), next) => {
                stack.push((i + 1, j));
                if next.is_some() {
                    stack.push((i, j + 1));
                }
            }
            (next, Some('*')) => {
                stack.push((i, j + 1));
                if next.is_some() {
                    stack.push((i + 1, j));
                }
            }
            (Some(x), Some(y)) if *x == '?' || *y == '?' || x == y => stack.push((i + 1, j + 1)),
            _ => {}
        }
    }
    false
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use session_core::permission::{evaluate, rules_from_config, wildcard_match};

    use super::*;

    fn rules(value: Value) -> Ruleset {
        rules_from_config(&value, None).unwrap()
    }

    #[test]
    fn overlap_follows_the_wildcards() {
        assert!(wildcards_overlap("rm *", "r*"));
        assert!(wildcards_overlap("*", "anything"));
        assert!(wildcards_overlap("ls *", "ls"));
        assert!(wildcards_overlap("a?c", "*c"));
        assert!(wildcards_overlap("src\\*", "src/a"));
        assert!(!wildcards_overlap("rm *", "git *"));
        assert!(!wildcards_overlap("edit", "bash"));
        assert!(!wildcards_overlap("a*b", "c*"));
    }

    #[test]
    fn overlap_agrees_with_matching_on_sample_texts() {
        let patterns = ["*", "r*", "rm *", "rm", "git *", "?m x", "*x", "a*b*c", "ls *", "l?"];
        let texts = ["rm x", "rm", "git push", "ls", "ls -la", "abc", "aXbYc", "am x", "lx", "x"];
        for a in patterns {
            for b in patterns {
                let shared = texts.iter().any(|t| wildcard_match(t, a) && wildcard_match(t, b));
                // A shared sample text proves an overlap; the check may find more, never less.
                assert!(!shared || wildcards_overlap(a, b), "{a} / {b}");
            }
        }
    }

    #[test]
    fn an_ask_over_a_deny_cannot_weaken_it() {
        let base = rules(json!({"*": "allow", "bash": {"*": "ask", "rm *": "deny"}, "edit": "deny"}));
        let extra = rules(json!({"bash": {"r*": "ask"}, "*": "ask"}));
        let mut all = base.clone();
        all.extend(restrict_after(&base, &extra));
        for (permission, value) in [("bash", "rm -rf /"), ("edit", "a.rs"), ("bash", "ls"), ("read", "x")] {
            let before = evaluate(permission, value, &[&base]);
            let after = evaluate(permission, value, &[&all]);
            assert!(stricter_or_equal(after, before), "{permission} {value}: {before} -> {after}");
        }
        assert_eq!(evaluate("read", "x", &[&all]), Action::Ask);
    }

    #[test]
    fn a_deny_decided_away_later_is_not_reasserted() {
        let base = rules(json!({"bash": {"*": "deny", "ls *": "allow"}}));
        let extra = rules(json!({"bash": {"ls *": "ask"}}));
        let tail = restrict_after(&base, &extra);
        assert_eq!(tail, extra);
        let mut all = base;
        all.extend(tail);
        assert_eq!(evaluate("bash", "ls -la", &[&all]), Action::Ask);
        assert_eq!(evaluate("bash", "rm x", &[&all]), Action::Deny);
    }

    #[test]
    fn allows_never_pass() {
        let base = rules(json!({"bash": "ask"}));
        let tail = restrict_after(&base, &rules(json!({"bash": "allow", "edit": {"*": "allow"}})));
        assert!(tail.is_empty(), "{tail:?}");
    }

    #[test]
    fn the_sandbox_tightens_field_by_field() {
        let combined = tighten_sandbox(Some(&json!("read-only")), &json!({"enforcement": "required"}));
        assert_eq!(combined, json!({"mode": "read-only", "enforcement": "required"}));
        let combined = tighten_sandbox(
            Some(&json!({"mode": "read-only", "network": true})),
            &json!({"mode": "workspace-write", "network": false}),
        );
        assert_eq!(combined, json!({"mode": "read-only", "network": false}));
    }

    fn stricter_or_equal(a: Action, b: Action) -> bool {
        let rank = |action| match action {
            Action::Allow => 0,
            Action::Ask => 1,
            Action::Deny => 2,
        };
        rank(a) >= rank(b)
    }
}
