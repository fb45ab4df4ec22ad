//! The built-in agents' rulesets, an agent's complete ruleset, and the tools a ruleset disables.

use std::collections::BTreeSet;

use super::rules::{Action, Rule, Ruleset, wildcard_match};

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
    let mut rules = vec![Rule::shorthand("*", Action::Allow), Rule::shorthand("doom_loop", Action::Ask)];
    external_directory_rules(&mut rules, paths);
    rules.extend([
        Rule::shorthand("question", Action::Deny),
        Rule::shorthand("plan_enter", Action::Deny),
        Rule::shorthand("plan_exit", Action::Deny),
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
            vec![Rule::shorthand("question", Action::Allow), Rule::shorthand("plan_enter", Action::Allow)]
        }
        BuiltinAgent::Plan => {
            let mut rules =
                vec![Rule::shorthand("question", Action::Allow), Rule::shorthand("plan_exit", Action::Allow)];
            rules.extend(
                paths.plans_glob.iter().map(|glob| Rule::new("external_directory", glob, Action::Allow)),
            );
            rules.push(Rule::new("edit", "*", Action::Deny));
            rules.push(Rule::new("edit", ".opencode/plans/*.md", Action::Allow));
            rules.extend(paths.plans_relative_glob.iter().map(|glob| Rule::new("edit", glob, Action::Allow)));
            rules
        }
        BuiltinAgent::General => vec![Rule::shorthand("todowrite", Action::Deny)],
        BuiltinAgent::Explore => {
            let mut rules = vec![Rule::shorthand("*", Action::Deny)];
            rules.extend(
                ["grep", "glob", "list", "bash", "webfetch", "websearch", "codesearch", "read"]
                    .map(|tool| Rule::shorthand(tool, Action::Allow)),
            );
            external_directory_rules(&mut rules, paths);
            rules
        }
        BuiltinAgent::Compaction | BuiltinAgent::Title | BuiltinAgent::Summary => {
            vec![Rule::shorthand("*", Action::Deny)]
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
