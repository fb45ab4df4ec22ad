//! Agents: a system prompt, a permission ruleset, an optional model and a step limit.

use std::borrow::Cow;
use std::path::Path;

use session_core::{
    permission::Action, permission::AgentPaths, permission::BuiltinAgent, permission::Rule,
    permission::Ruleset, permission::agent_ruleset,
};

/// The task tool's name, as OpenCode calls it (here because a subagent's request leaves it out).
pub const TASK_TOOL: &str = "task";

/// The system prompt of the `build` agent (our own text).
pub const BUILD_PROMPT: &str = "\
You are a coding agent working in the user's project through tools. Read before you change: \
look at the relevant files with read, glob and grep, then make focused edits with edit or \
write, and check your work with bash (tests, builds, linters) when that is possible. Keep the \
user's conventions. Prefer small, correct changes over broad rewrites. When a tool fails, read \
its error and adjust instead of repeating the same call. When you are done, answer briefly: what \
you changed, where, and anything the user must still do.";

/// The system prompt of the `plan` agent (our own text).
pub const PLAN_PROMPT: &str = "\
You are a planning agent. Study the user's project with the read-only tools (read, glob, grep) \
and produce a clear, ordered plan: the files to change, the changes to make, the risks \
and how to verify the result. Do not edit files or run commands that change anything; the user \
will switch to the build agent to carry the plan out.";

/// The message appended on the last allowed step (SPEC 12 step 9); its first words are
/// OpenCode's, the rest ours.
pub const MAX_STEPS_TEXT: &str = "\
CRITICAL - MAXIMUM STEPS REACHED\n\nThe maximum number of steps allowed for this task has been \
reached. Tools are disabled until next user input. Respond with text only.\n\nSTRICT \
REQUIREMENTS:\n1. Do NOT make any tool calls.\n2. Summarize the work done so far.\n3. List any \
remaining tasks that were not completed.\n4. Recommend what should be done next.";

/// The system prompt of the `general` subagent (our own text).
pub const GENERAL_PROMPT: &str = "\
You are a general-purpose subagent. Another agent gave you one task: carry it out with the \
tools you have, searching and reading as much as it needs, and changing files only when the \
task asks for it. Work on your own; nobody will answer questions. End with a short, complete \
report of what you found or did, since only your final message reaches the agent that asked.";

/// The system prompt of the `explore` subagent (our own text).
pub const EXPLORE_PROMPT: &str = "\
You are a fast, read-only explorer of a codebase. Find what you were asked for with glob, grep \
and read: files by pattern, code by keyword, how something works. Change nothing. Answer \
with the facts and the paths (with line numbers where they help), briefly; only your final \
message reaches the agent that asked.";

/// Where an agent may be used.
pub use crate::config::AgentMode;

/// `agent` with a session's own rules after its own (last match wins, so the session's rules
/// decide where both match); borrowed as it is when the session has none.
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
    /// When to use it (shown to the model in the task tool's list of subagents).
    pub description: Option<String>,
    /// Primary, subagent or both.
    pub mode: AgentMode,
    /// Left out of the task tool's list of subagents.
    pub hidden: bool,
    /// System prompt.
    pub prompt: String,
    /// Permission rules: defaults, the agent's own, then the user's.
    pub ruleset: Ruleset,
    /// `provider/model` override.
    pub model: Option<String>,
    /// The model variant (reasoning effort) its requests use.
    pub variant: Option<String>,
    /// Sampling temperature.
    pub temperature: Option<f64>,
    /// Nucleus sampling.
    pub top_p: Option<f64>,
    /// Step limit (`steps`); unset means no limit.
    pub steps: Option<u32>,
}

impl Agent {
    /// An agent with `prompt` and `ruleset`, usable as both primary and subagent, nothing else
    /// set.
    pub fn new(name: impl Into<String>, prompt: impl Into<String>, ruleset: Ruleset) -> Self {
        Self {
            name: name.into(),
            description: None,
            mode: AgentMode::All,
            hidden: false,
            prompt: prompt.into(),
            ruleset,
            model: None,
            variant: None,
            temperature: None,
            top_p: None,
            steps: None,
        }
    }

    /// The built-in `build` agent (all tools, as the rules allow) with the user's rules after.
    pub fn build(user_rules: &[Rule], paths: &AgentPaths) -> Self {
        let ruleset = agent_ruleset(Some(BuiltinAgent::Build), paths, user_rules, &[]);
        Self {
            mode: AgentMode::Primary,
            description: Some(
                "The default agent: reads, edits and runs commands as the rules allow.".to_owned(),
            ),
            ..Self::new("build", BUILD_PROMPT, ruleset)
        }
    }

    /// The built-in `plan` agent: read-only, edits and bash denied.
    pub fn plan(user_rules: &[Rule], paths: &AgentPaths) -> Self {
        let mut ruleset = agent_ruleset(Some(BuiltinAgent::Plan), paths, user_rules, &[]);
        // Plan mode must not change the project, whatever the user's general rules allow.
        ruleset.push(Rule::new("edit", "*", Action::Deny));
        ruleset.push(Rule::new("bash", "*", Action::Deny));
        Self {
            mode: AgentMode::Primary,
            description: Some("Plans changes with read-only tools; edits nothing.".to_owned()),
            ..Self::new("plan", PLAN_PROMPT, ruleset)
        }
    }

    /// The built-in `general` subagent: the build agent's tools for one delegated task.
    pub fn general(user_rules: &[Rule], paths: &AgentPaths) -> Self {
        let ruleset = agent_ruleset(Some(BuiltinAgent::General), paths, user_rules, &[]);
        Self {
            mode: AgentMode::Subagent,
            description: Some(
                "General-purpose agent for researching questions and carrying out multi-step tasks; \
                 can run several at once."
                    .to_owned(),
            ),
            ..Self::new("general", GENERAL_PROMPT, ruleset)
        }
    }

    /// The built-in `explore` subagent: read-only search of the codebase.
    pub fn explore(user_rules: &[Rule], paths: &AgentPaths) -> Self {
        let mut ruleset = agent_ruleset(Some(BuiltinAgent::Explore), paths, user_rules, &[]);
        // Read-only whatever the user's general rules allow: no edits, no commands.
        ruleset.push(Rule::new("edit", "*", Action::Deny));
        ruleset.push(Rule::new("bash", "*", Action::Deny));
        Self {
            mode: AgentMode::Subagent,
            description: Some(
                "Fast read-only agent for finding files by pattern, code by keyword, and answering \
                 questions about the codebase."
                    .to_owned(),
            ),
            ..Self::new("explore", EXPLORE_PROMPT, ruleset)
        }
    }

    /// Whether it can be a session's main agent.
    pub fn is_primary(&self) -> bool {
        self.mode != AgentMode::Subagent
    }

    /// Whether the task tool can run it.
    pub fn is_subagent(&self) -> bool {
        self.mode != AgentMode::Primary
    }
}

/// The environment block of the system prompt, then `instructions` (the instruction files,
/// each under its path) when there are any.
pub fn environment_prompt(worktree: &Path, is_git: bool, date: &str, instructions: Option<&str>) -> String {
    let mut prompt = format!(
        "Here is useful information about the environment you are running in:\n<env>\n  \
         Working directory: {}\n  Is directory a git repo: {}\n  Platform: {}\n  Today's date: {}\n</env>",
        worktree.display(),
        if is_git { "yes" } else { "no" },
        std::env::consts::OS,
        date,
    );
    if let Some(instructions) = instructions.filter(|text| !text.trim().is_empty()) {
        prompt.push_str("\n\n");
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
    fn explore_reads_and_changes_nothing() {
        let explore = Agent::explore(&[Rule::new("*", "*", Action::Allow)], &AgentPaths::default());
        let check = |tool: &str, pattern: &str| {
            session_core::permission::evaluate(tool, pattern, &[&explore.ruleset])
        };
        assert_eq!(check("read", "src/a.rs"), Action::Allow);
        assert_eq!(check("grep", "fn main"), Action::Allow);
        assert_eq!(check("edit", "src/a.rs"), Action::Deny);
        assert_eq!(check("bash", "ls"), Action::Deny);
        assert!(explore.is_subagent() && !explore.is_primary());
    }

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
