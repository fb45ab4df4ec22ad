//! What can go wrong turning a configuration and an environment into a runtime.

use session_llm::{CatalogError, TransportError};
use session_tools::ToolError;

use crate::config::ConfigError;

/// A runtime could not be composed; each message says what to change.
#[derive(Debug, thiserror::Error)]
pub enum ComposeError {
    /// The configuration did not load, or one of its values is invalid.
    #[error(transparent)]
    Config(#[from] ConfigError),
    /// Neither `--model` nor the config's `model` chose one.
    #[error(
        "no model chosen: pass --model provider/model (for example anthropic/claude-sonnet-4-5) or set \"model\" in your config"
    )]
    NoModel,
    /// A model reference that is not `provider/model`.
    #[error("--model must be provider/model, for example openai/gpt-4.1; got {0:?}")]
    BadModelRef(String),
    /// A provider neither the catalog nor the config knows.
    #[error("unknown provider {0:?}: it is not in the model catalog; add provider.{0} to your config")]
    UnknownProvider(String),
    /// A remote provider without a key.
    #[error("no API key for {provider}: set {vars} or provider.{provider}.options.apiKey in your config")]
    NoApiKey {
        /// The provider.
        provider: String,
        /// The variables looked at, joined with " or ".
        vars: String,
    },
    /// The config's key is empty: an `{env:VAR}` whose variable is unset, or `""`.
    #[error(
        "no API key for {provider}: provider.{provider}.options.apiKey is empty ({unset}); set it, or {vars}"
    )]
    EmptyApiKey {
        /// The provider.
        provider: String,
        /// The provider's own key variables, joined with " or ".
        vars: String,
        /// Why it is empty: the `{env:...}` variables of the config that are unset.
        unset: String,
    },
    /// A model neither the catalog nor the config lists.
    #[error(
        "unknown model {reference}: it is not in the catalog; run `session models --provider {provider}` or add it under provider.{provider}.models"
    )]
    UnknownModel {
        /// The reference as given.
        reference: String,
        /// Its provider.
        provider: String,
    },
    /// A database setting that is not a PostgreSQL URL.
    #[error(
        "database {0:?} is not a PostgreSQL URL (postgres://...); leave it unset for the embedded SQLite file"
    )]
    NotPostgres(String),
    /// The store did not open.
    #[error("cannot open the session database: {0}; check the --db URL or \"database\" in your config")]
    Store(#[source] session_store::StoreError),
    /// A folder the runtime needs could not be made.
    #[error("cannot create the data folder {path}: {source}")]
    DataDir {
        /// The folder.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The embedded catalog did not load.
    #[error(transparent)]
    Catalog(#[from] CatalogError),
    /// No HTTP client could be built.
    #[error(transparent)]
    Transport(#[from] TransportError),
    /// `default_agent` names no agent that can run a session.
    #[error("default_agent {name:?} cannot be used: {reason}; set \"default_agent\" to a primary agent")]
    DefaultAgent {
        /// The name configured.
        name: String,
        /// Why it cannot be used.
        reason: String,
    },
    /// An instruction file could not be read.
    #[error("instructions: cannot read {path}: {source}")]
    Instructions {
        /// The file.
        path: String,
        /// Why.
        #[source]
        source: std::io::Error,
    },
    /// The workspace or the tool registry could not be set up.
    #[error(transparent)]
    Tools(#[from] ToolError),
}
