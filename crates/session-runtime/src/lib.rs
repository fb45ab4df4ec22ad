//! The async engine of the session runtime.
//!
//! This crate will wire the provider, the store and the tools around session-core's processor,
//! run the prompt loop with retries, compaction and snapshots (issue 7). It holds no engine yet.
//!
//! It owns the configuration (module `config`, issue 4): the typed configuration with
//! OpenCode's keys, JSONC parsing, the three layers (user, project, `SESSION_CONFIG`) and their
//! deep merge, `{env:VAR}` and `{file:path}` substitutions through an injected [`Resolver`],
//! warnings for unknown keys, errors with key paths for wrong types, and the choice of wire API
//! from a provider's `npm` package ([`ApiKind`]). It deliberately reads no environment
//! variable: the binary passes them in.

mod config;

pub use config::{
    AgentConfig, AgentMode, ApiKind, Config, ConfigError, ConfigLayer, ConfigSources, ConfigWarning,
    CostTierConfig, ExperimentalConfig, FsResolver, LoadedConfig, ModelConfig, ModelCostConfig,
    ModelLimitConfig, PricesConfig, ProviderConfig, ProviderOptions, Resolver, SUPPORTED_PACKAGES,
    TierConfig, Timeout, api_kind, combine, discover, load, merge, parse_layer, substitute, user_config_dir,
};
