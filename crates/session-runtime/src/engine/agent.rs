//! Agents: a system prompt, a permission ruleset, an optional model and a step limit.

use std::borrow::Cow;
use std::path::Path;

use session_core::{
    permission::AgentPaths, permission::BuiltinAgent, permission::Rule, permission::Ruleset,
    permission::agent_ruleset,
};

/// The system prompt of the `build` agent (our own text).
pub const BUILD_PROMPT: &str = "\
You are a coding agent working in the user's project through tools. Read before you change: \
look at the relevant files with read, list, glob and grep, then make focused edits with edit or \
write, and check your work with bash (tests, builds, linters) when that is possible. Keep the \
user's conventions. Prefer small, correct changes over broad rewrites. When a tool fails, read \
its error and adjust instead of repeating the same call. When you are done, answer briefly: what \
you changed, where, and anything the user must still do.";

/// The system prompt of the `plan` agent (our own text).
pub const PLAN_PROMPT: &str = "\
You are a planning agent. Study the user's project with the read-only tools (read, list, glob, \
grep) and produce a clear, ordered plan: the files to change, the changes to make, the risks \
and how to verify the result. Do not edit files or run commands that change anything; the user \
will switch to the build agent to carry the plan out.";

/// The message appended on the last allowed step (SPEC 12 step 9); its first words are
/// OpenCode's, the rest ours.
pub const MAX_STEPS_TEXT: &str = "\
CRITICAL - MAXIMUM STEPS REACHED\n\nThe maximum number of steps allowed for this task has been \
reached. Tools are disabled until next user input. Respond with text only.\n\nSTRICT \
REQUIREMENTS:\n1. Do NOT make any tool calls.\n2. Summarize the work done so far.\n3. List any \
remaining tasks that were not completed.\n4. Recommend what should be done next.";

/// `agent` with a session's own rules after its own (last match wins, so the session's
/// narrow it); borrowed as it is when the session has none.
pub(crate) fn with_session_rules<'a>(agent: &'a Agent, session_rules: &[Rule]) -> Cow<'a, Agent> {
    if session_rules.is_empty() {
        return Cow::Borrowed(agent);
    }
    let mut narrowed = agent.clone();
    narrowed.ruleset.extend(session_rules.iter().cloned());
    Cow::Owned(narrowed)
}

/// An agent the runtime can run.
#[derive(Debug, Clone)]
pub struct Agent {
    /// Name, such as `build`.
    pub name: String,
    /// System prompt.
    pub prompt: String,
    /// Permission rules: defaults, the agent's own, then the user's.
    pub ruleset: Ruleset,
    /// `provider/model` override.
    pub model: Option<String>,
    /// Step limit (`steps`); unset means no limit.
    pub steps: Option<u32>,
}

impl Agent {
    /// The built-in `build` agent (all tools, as the rules allow) with the user's rules after.
    pub fn build(user_rules: &[Rule], paths: &AgentPaths) -> Self {
        Self {
            name: "build".to_owned(),
            prompt: BUILD_PROMPT.to_owned(),
            ruleset: agent_ruleset(Some(BuiltinAgent::Build), paths, user_rules, &[]),
            model: None,
            steps: None,
        }
    }

    /// The built-in `plan` agent: read-only, edits and bash denied.
    pub fn plan(user_rules: &[Rule], paths: &AgentPaths) -> Self {
        let mut ruleset = agent_ruleset(Some(BuiltinAgent::Plan), paths, user_rules, &[]);
        // Plan mode must not change the project, whatever the user's general rules allow.
        ruleset.push(Rule::new("edit", "*", session_core::permission::Action::Deny));
        ruleset.push(Rule::new("bash", "*", session_core::permission::Action::Deny));
        Self { name: "plan".to_owned(), prompt: PLAN_PROMPT.to_owned(), ruleset, model: None, steps: None }
    }
}

/// The environment block of the system prompt, plus `AGENTS.md` when the project has one.
pub fn environment_prompt(worktree: &Path, is_git: bool, date: &str, agents_md: Option<&str>) -> String {
    let mut prompt = format!(
        "Here is useful information about the environment you are running in:\n<env>\n  \
         Working directory: {}\n  Is directory a git repo: {}\n  Platform: {}\n  Today's date: {}\n</env>",
        worktree.display(),
        if is_git { "yes" } else { "no" },
        std::env::consts::OS,
        date,
    );
    if let Some(instructions) = agents_md.filter(|text| !text.trim().is_empty()) {
        prompt.push_str("\n\nInstructions from AGENTS.md:\n");
        prompt.push_str(instructions.trim());
    }
    prompt
}

/// A civil date `YYYY-MM-DD` from epoch milliseconds (UTC).
pub use session_core::calendar::utc_date;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plan_denies_edits_and_bash() {
        let plan = Agent::plan(&[], &AgentPaths::default());
        assert_eq!(
            session_core::permission::evaluate("edit", "src/a.rs", &[&plan.ruleset]),
            session_core::permission::Action::Deny
        );
        assert_eq!(
            session_core::permission::evaluate("bash", "ls", &[&plan.ruleset]),
            session_core::permission::Action::Deny
        );
        assert_eq!(
            session_core::permission::evaluate("read", "src/a.rs", &[&plan.ruleset]),
            session_core::permission::Action::Allow
        );
    }
}
