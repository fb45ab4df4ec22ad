//! Composition: everything an embedder would otherwise write as glue. [`Runtime::builder`]
//! (the one constructor), model sources ([`ConfiguredModels`] from the catalog, the config and
//! an injected environment; [`StaticModels`] for clients of one's own), the agents a config
//! defines, and [`assemble`], which turns a project folder and an environment into a ready
//! runtime.
//!
//! [`Runtime::builder`]: crate::Runtime::builder

mod agents;
mod attach;
mod builder;
mod error;
mod instructions;
mod models;
mod setup;

pub use agents::{configured_agents, default_agent};
pub use attach::{AttachError, MAX_ATTACHMENT_BYTES, attach_file, attach_opened};
pub use builder::RuntimeBuilder;
pub use error::ComposeError;
pub use instructions::{InstructionSources, instruction_files, instructions_text};
pub use models::{ConfiguredModels, ResolvedProvider, StaticModels};
pub use setup::{
    Assembled, RuntimeSetup, assemble, assemble_sending, config_sources, load_config, load_skills,
    mcp_manager, open_store, project_root, user_dir,
};
