//! The agents a configuration defines: the built-in `build` and `plan` with the user's rules,
//! and `agent.<name>` overrides of their prompt, model, steps and permissions.

use std::collections::BTreeMap;

use session_core::permission::AgentPaths;

use crate::config::{Config, ConfigError};
use crate::engine::Agent;

/// The agents of `config`; `home` expands `~` in permission patterns.
pub fn configured_agents(
    config: &Config,
    home: Option<&str>,
) -> Result<BTreeMap<String, Agent>, ConfigError> {
    let user_rules = config.permission_rules(home)?;
    let paths = AgentPaths::default();
    let mut agents = BTreeMap::new();
    for mut agent in [Agent::build(&user_rules, &paths), Agent::plan(&user_rules, &paths)] {
        if let Some(configured) = config.agent.get(&agent.name) {
            if let Some(prompt) = &configured.prompt {
                agent.prompt.clone_from(prompt);
            }
            agent.model.clone_from(&configured.model);
            agent.steps = configured.steps.map(std::num::NonZero::get);
            agent.ruleset.extend(configured.permission_rules(home)?);
        }
        agents.insert(agent.name.clone(), agent);
    }
    Ok(agents)
}
