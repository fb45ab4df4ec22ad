//! Configuration: OpenCode's config keys, read from layered JSONC files.
//!
//! An OpenCode user's `opencode.json` works here under the name `session.json`: the keys are
//! OpenCode's wherever both have the concept (`model`, `provider`, `permission`, `agent`,
//! `compaction`, ...). OpenCode keys this runtime does not implement are accepted silently;
//! truly unknown keys give a [`ConfigWarning`]; a wrong type is a [`ConfigError`] naming the
//! file, the key path, what was expected and what was found.
//!
//! Nothing here reads the process environment: the binary reads `HOME`, `SESSION_CONFIG` and
//! the variables for `{env:VAR}` and hands them in ([`discover`], [`FsResolver`]).
//!
//! ```no_run
//! use std::path::{Path, PathBuf};
//! use session_runtime::config::{FsResolver, discover, load};
//!
//! # fn main() -> Result<(), session_runtime::config::ConfigError> {
//! let home = PathBuf::from("/home/me");
//! let sources = discover(Path::new("/home/me/project/src"), Some(&home), None);
//! let resolver = FsResolver::new([("OPENAI_API_KEY".to_owned(), "sk-...".to_owned())], Some(home));
//! let loaded = load(&sources, &resolver)?;
//! for warning in &loaded.warnings {
//!     eprintln!("warning: {warning}");
//! }
//! let model = loaded.config.model.as_deref().unwrap_or("openai/gpt-4.1");
//! # let _ = model;
//! # Ok(())
//! # }
//! ```

mod agent;
mod check;
mod command;
mod discover;
mod error;
mod layer;
mod load;
mod markdown;
mod mcp;
mod merge;
mod origin;
mod package;
mod permission;
mod restrict;
mod sandbox;
mod skills;
mod substitute;
mod trust;
mod types;
mod unsupported;

pub use agent::{AgentConfig, AgentMode};
pub use command::CommandConfig;
pub use discover::{ConfigSources, discover, discover_from, discover_in, trust_root, user_config_dir};
pub use error::{ConfigError, ConfigWarning, WarningReason};
pub use layer::ConfigLayer;
pub use load::{LoadedConfig, combine, load, load_layers, parse_layer};
pub use mcp::{McpKind, McpServerConfig, ServerFolders, mcp_servers};
pub use merge::merge;
pub use origin::{KeyOrigin, key_origins};
pub use package::api_for_package;
pub use permission::{PermissionConfig, ToolPermission};
pub use restrict::{Restrictions, restrict_after};
pub use sandbox::SandboxConfig;
pub use skills::{
    LoadedSkill, MAX_SKILL_BYTES, MAX_SKILLS, MAX_SKILLS_BYTES, SLASH_METADATA, Skill, SkillFolder,
    SkillProblem, SkillScope, SkillSearch, SkillSet, check_name, skill_folders,
};
pub(crate) use substitute::read_regular_file_within;
pub use substitute::{FsResolver, Resolver, substitute};
pub use trust::{TRUST_FILE, TrustList, UntrustedResolver, restrict_untrusted};
pub use types::{
    Config, CostTierConfig, ExperimentalConfig, ModelConfig, ModelCostConfig, ModelLimitConfig, PricesConfig,
    ProviderConfig, ProviderOptions, ServerConfig, ShellEnvConfig, SnapshotRetentionConfig, TierConfig,
    Timeout,
};
