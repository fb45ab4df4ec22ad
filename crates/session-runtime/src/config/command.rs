//! `command.<name>`: a prompt template the user runs by name (`session run --command NAME`),
//! from the config or a markdown file whose body is the template.

use serde::{Deserialize, Serialize};

/// `command.<name>`: a prompt template with `$ARGUMENTS` and `$1`, `$2`, ... placeholders.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, expecting = "an object")]
pub struct CommandConfig {
    /// The prompt text; `$ARGUMENTS` is every argument, `$1`... one each (the last takes the
    /// rest).
    pub template: String,
    /// What the command does.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The agent the prompt runs with.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The model the prompt runs with, `provider/model`.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
    /// `true` runs the prompt as a subagent task (a child session) of the command's agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub subtask: Option<bool>,
}
