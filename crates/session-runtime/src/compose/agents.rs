//! The agents a configuration defines: the built-in `build`, `plan`, `general` and `explore`
//! with the user's rules, `agent.<name>` overrides of them (prompt, model, variant, sampling,
//! steps, permissions, tool switches, mode, visibility, removal) and new agents, as OpenCode's
//! `agent.ts` builds its list; and the default agent (`default_agent`).

use std::collections::BTreeMap;

use session_core::permission::{AgentPaths, agent_ruleset};

use super::ComposeError;
use crate::config::{AgentConfig, Config, ConfigError, restrict_after};
use crate::engine::{Agent, BUILD_PROMPT};

/// Agent names the runtime uses for its own hidden requests; `agent.<name>` of these sets
/// their model (see `compaction_model`) and defines no agent to run.
const INTERNAL: [&str; 3] = ["compaction", "title", "summary"];

/// The agents of `config`; `home` expands `~` in permission patterns.
pub fn configured_agents(
    config: &Config,
    home: Option<&str>,
) -> Result<BTreeMap<String, Agent>, ConfigError> {
    configured_agents_with(config, home, &AgentPaths::default())
}

/// [`configured_agents`], with `paths` the folders outside the project that every agent may
/// reach without asking (the runtime's saved tool outputs).
pub fn configured_agents_with(
    config: &Config,
    home: Option<&str>,
    paths: &AgentPaths,
) -> Result<BTreeMap<String, Agent>, ConfigError> {
    let user_rules = config.permission_rules(home)?;
    let mut agents: BTreeMap<String, Agent> = [
        Agent::build(&user_rules, paths),
        Agent::plan(&user_rules, paths),
        Agent::general(&user_rules, paths),
        Agent::explore(&user_rules, paths),
    ]
    .into_iter()
    .map(|agent| (agent.name.clone(), agent))
    .collect();
    for (name, configured) in &config.agent {
        if INTERNAL.contains(&name.as_str()) {
            continue;
        }
        if configured.disable == Some(true) {
            agents.remove(name);
            continue;
        }
        let own_rules = configured.permission_rules(home)?;
        let agent = agents.entry(name.clone()).or_insert_with(|| {
            // A new agent starts from the defaults and the user's rules, like build without
            // build's own rules; its own rules are appended below.
            let ruleset = agent_ruleset(None, paths, &user_rules, &[]);
            Agent::new(name.clone(), BUILD_PROMPT, ruleset)
        });
        apply(agent, configured, own_rules);
    }
    // An untrusted project's rules come after every trusted one, and only tighten them.
    for (name, agent) in &mut agents {
        let restrictions = config.restriction_rules(name, home)?;
        if !restrictions.is_empty() {
            let tail = restrict_after(&agent.ruleset, &restrictions);
            agent.ruleset.extend(tail);
        }
    }
    Ok(agents)
}

/// Lays `configured` over `agent`: set fields replace, rules are appended (the last match
/// wins, so the agent's own rules come after the defaults and the user's).
fn apply(agent: &mut Agent, configured: &AgentConfig, own_rules: session_core::permission::Ruleset) {
    if let Some(prompt) = configured.prompt.as_ref().filter(|prompt| !prompt.trim().is_empty()) {
        agent.prompt.clone_from(prompt);
    }
    if configured.description.is_some() {
        agent.description.clone_from(&configured.description);
    }
    if let Some(mode) = configured.mode {
        agent.mode = mode;
    }
    if let Some(hidden) = configured.hidden {
        agent.hidden = hidden;
    }
    if configured.model.is_some() {
        agent.model.clone_from(&configured.model);
    }
    if configured.variant.is_some() {
        agent.variant.clone_from(&configured.variant);
    }
    if configured.temperature.is_some() {
        agent.temperature = configured.temperature;
    }
    if configured.top_p.is_some() {
        agent.top_p = configured.top_p;
    }
    if let Some(steps) = configured.step_limit() {
        agent.steps = Some(steps.get());
    }
    agent.ruleset.extend(own_rules);
}

/// The agent a prompt that names none runs with: `default_agent` when set (it must be a
/// primary agent), else `build`, else the first primary agent by name.
pub fn default_agent(config: &Config, agents: &BTreeMap<String, Agent>) -> Result<String, ComposeError> {
    if let Some(name) = &config.default_agent {
        return match agents.get(name) {
            Some(agent) if agent.is_primary() => Ok(name.clone()),
            Some(_) => Err(ComposeError::DefaultAgent {
                name: name.clone(),
                reason: "it is a subagent (mode \"subagent\"); a session's main agent must be primary"
                    .to_owned(),
            }),
            None => Err(ComposeError::DefaultAgent {
                name: name.clone(),
                reason: format!("no such agent (agents: {})", primary_names(agents)),
            }),
        };
    }
    if agents.get("build").is_some_and(Agent::is_primary) {
        return Ok("build".to_owned());
    }
    agents.values().find(|agent| agent.is_primary()).map(|agent| agent.name.clone()).ok_or_else(|| {
        ComposeError::DefaultAgent {
            name: "build".to_owned(),
            reason: "every primary agent is disabled".to_owned(),
        }
    })
}

fn primary_names(agents: &BTreeMap<String, Agent>) -> String {
    agents.values().filter(|a| a.is_primary()).map(|a| a.name.as_str()).collect::<Vec<_>>().join(", ")
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;
    use session_core::permission::{Action, evaluate};

    use super::*;
    use crate::config::AgentMode;

    fn config(value: serde_json::Value) -> Config {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn the_built_ins_are_build_plan_general_and_explore() {
        let agents = configured_agents(&Config::default(), None).unwrap();
        assert_eq!(agents.keys().collect::<Vec<_>>(), ["build", "explore", "general", "plan"]);
        assert!(agents["general"].is_subagent() && !agents["general"].is_primary());
        assert_eq!(default_agent(&Config::default(), &agents).unwrap(), "build");
    }

    #[test]
    fn config_overrides_defines_and_removes_agents() {
        let config = config(json!({
            "agent": {
                "build": {"model": "mock/big", "variant": "high", "temperature": 0.2, "steps": 7},
                "review": {"description": "Reviews", "mode": "subagent", "prompt": "Review.",
                           "permission": {"edit": "deny"}, "tools": {"bash": false}},
                "plan": {"disable": true},
                "compaction": {"model": "mock/small"}
            }
        }));
        let agents = configured_agents(&config, None).unwrap();
        assert_eq!(agents.keys().collect::<Vec<_>>(), ["build", "explore", "general", "review"]);
        let build = &agents["build"];
        assert_eq!(build.model.as_deref(), Some("mock/big"));
        assert_eq!(build.variant.as_deref(), Some("high"));
        assert_eq!((build.temperature, build.steps), (Some(0.2), Some(7)));
        let review = &agents["review"];
        assert_eq!((review.prompt.as_str(), review.mode), ("Review.", AgentMode::Subagent));
        assert_eq!(evaluate("edit", "a.rs", &[&review.ruleset]), Action::Deny);
        assert_eq!(evaluate("bash", "ls", &[&review.ruleset]), Action::Deny);
        assert_eq!(evaluate("read", "a.rs", &[&review.ruleset]), Action::Allow);
    }

    #[test]
    fn the_default_agent_must_exist_and_be_primary() {
        let with = |default: &str| {
            let config =
                config(json!({"default_agent": default, "agent": {"locked": {"permission": "deny"}}}));
            let agents = configured_agents(&config, None).unwrap();
            default_agent(&config, &agents).map_err(|error| error.to_string())
        };
        assert_eq!(with("locked").unwrap(), "locked");
        assert!(with("explore").unwrap_err().contains("subagent"), "{:?}", with("explore"));
        assert!(with("nope").unwrap_err().contains("no such agent"), "{:?}", with("nope"));
        let config = config(json!({"agent": {"build": {"disable": true}}}));
        let agents = configured_agents(&config, None).unwrap();
        assert_eq!(default_agent(&config, &agents).unwrap(), "plan");
    }
}
