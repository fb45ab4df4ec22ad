//! The async engine of the session runtime.
//!
//! The engine ([`Runtime`], built with [`Runtime::builder`]) wires the provider, the store and the
//! tools around session-core's processor and runs the agent loop of SPEC 12: one assistant
//! message per step, retries on the same message (SPEC 7; never a replay after a tool started:
//! the run stops with the retry-unsafe error), abort with SPEC 8's cleanup, compaction with
//! replay or continue (SPEC 10), snapshots, patch parts, revert and unrevert (SPEC 13), the
//! session status (SPEC 11) and the event bus (SPEC 14). One run per session at a time: in
//! process through a run table ([`RuntimeError::Busy`]), across processes through the store's
//! lease ([`RuntimeError::LeasedElsewhere`]). Time and sleeping are injected ([`Clock`],
//! [`Sleeper`]) so that backoff is tested without waiting.
//!
//! It also owns the configuration (module `config`): the typed configuration with
//! OpenCode's keys, JSONC parsing, the three layers (user, project, `SESSION_CONFIG`) and their
//! deep merge, `{env:VAR}` and `{file:path}` substitutions through an injected [`Resolver`],
//! warnings for unknown keys, errors with key paths for wrong types, and the choice of wire API
//! from a provider's `npm` package ([`api_for_package`], over [`session_llm::Api::PACKAGES`]). It deliberately reads no environment
//! variable: the binary passes them in.
//!
//! It does not own what it wires together: the rules and the processor are session-core's,
//! the wire formats and the catalog session-llm's, persistence and leases session-store's,
//! tool execution and permissions session-tools'. Reading the process environment and
//! presenting events (a terminal, HTTP) are the binary's.

mod compose;
mod config;
mod engine;
pub mod git;
pub mod wire;

pub use compose::{
    Assembled, AttachError, ComposeError, ConfiguredModels, InstructionSources, MAX_ATTACHMENT_BYTES,
    ResolvedProvider, RuntimeBuilder, RuntimeSetup, StaticModels, assemble, assemble_sending, attach_file,
    attach_opened, config_sources, configured_agents, default_agent, instruction_files, instructions_text,
    load_config, load_skills, mcp_manager, open_store, project_root, user_dir,
};
pub use config::{
    AgentConfig, AgentMode, CommandConfig, Config, ConfigError, ConfigLayer, ConfigSources, ConfigWarning,
    CostTierConfig, ExperimentalConfig, FsResolver, KeyOrigin, LoadedConfig, LoadedSkill, MAX_SKILL_BYTES,
    MAX_SKILLS, MAX_SKILLS_BYTES, McpKind, McpServerConfig, ModelConfig, ModelCostConfig, ModelLimitConfig,
    PricesConfig, ProviderConfig, ProviderOptions, Resolver, Restrictions, SLASH_METADATA, SandboxConfig,
    ServerConfig, ServerFolders, ShellEnvConfig, Skill, SkillFolder, SkillProblem, SkillScope, SkillSearch,
    SkillSet, SnapshotRetentionConfig, TRUST_FILE, TierConfig, Timeout, TrustList, UntrustedResolver,
    WarningReason, api_for_package, check_name, combine, discover, discover_from, discover_in, key_origins,
    load, load_layers, mcp_servers, merge, parse_layer, restrict_after, restrict_untrusted, skill_folders,
    substitute, user_config_dir,
};
pub use engine::{
    Agent, BUILD_PROMPT, Bus, BusEvent, Clock, CommandInput, EXPLORE_PROMPT, GENERAL_PROMPT, GitSnapshotter,
    HousekeepingReport, MAX_STEPS_TEXT, MAX_UNTRACKED_BYTES, ModelSource, NoSnapshots, PLAN_PROMPT,
    PromptInput, ProviderEntry, RequestAhead, Runtime, RuntimeError, RuntimeSettings,
    STRUCTURED_OUTPUT_INSTRUCTION, STRUCTURED_OUTPUT_TOOL, SessionStart, SessionStatus, Sleeper,
    SnapshotRetention, SnapshotStoreReport, Snapshotter, SplitMix, SystemClock, TASK_TOOL, TaskTool,
    TokioSleeper, environment_prompt, expand_template, missing_output_error, parse_model_ref, random_entropy,
    title_model, utc_date,
};
