//! What the engine is given: the model source it finds providers and models in, the settings
//! of its loop, and a prompt. A leaf of the engine: the request builder, the task tool and the
//! runtime all read these without reading each other.

use std::path::PathBuf;
use std::sync::Arc;

use session_core::{
    MessageId, ModelRef, OutputFormat, PartKind, TextPart, config::CompactionConfig, retry::RetryConfig,
};
use session_llm::{CatalogModel, Provider};

/// A provider the runtime can call, with what it needs to know about it.
#[derive(Clone)]
pub struct ProviderEntry {
    /// The provider's client.
    pub client: Arc<dyn Provider>,
    /// The AI SDK package naming its wire format (drives history conversion details).
    pub npm: String,
    /// Its retry policy (`provider.<id>.options.retry`), if configured.
    pub retry: Option<RetryConfig>,
}

impl std::fmt::Debug for ProviderEntry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ProviderEntry")
            .field("npm", &self.npm)
            .field("retry", &self.retry)
            .finish_non_exhaustive()
    }
}

/// Finds the provider client and the catalog entry for a model.
pub trait ModelSource: Send + Sync {
    /// The provider entry for `provider_id`, or `None` when it is not set up.
    fn provider(&self, provider_id: &str) -> Option<ProviderEntry>;
    /// The model's limits and prices, or `None` when unknown.
    fn model(&self, provider_id: &str, model_id: &str) -> Option<CatalogModel>;
    /// The provider's cheap model for side requests such as titles (its id for
    /// [`ModelSource::model`]), or `None` when it has none; see
    /// [`session_llm::small_model`] for the catalog's rule.
    fn small_model(&self, _provider_id: &str) -> Option<String> {
        None
    }
}

/// Settings of the loop, from configuration.
#[derive(Debug, Clone)]
pub struct RuntimeSettings {
    /// Compaction settings.
    pub compaction: CompactionConfig,
    /// `experimental.continue_loop_on_deny`.
    pub continue_loop_on_deny: bool,
    /// The output token ceiling (SPEC 6; 32 000 unless configured).
    pub output_token_max: u64,
    /// The model used when a prompt names none.
    pub default_model: ModelRef,
    /// The project's working tree.
    pub worktree: PathBuf,
    /// Extra text for the system prompt (the instruction files, each under its path).
    pub instructions: Option<String>,
    /// The agent a prompt that names none runs with; unset means `build`.
    pub default_agent: Option<String>,
    /// The commands (`command.<name>` and markdown commands) by name.
    pub commands: indexmap::IndexMap<String, crate::config::CommandConfig>,
    /// The skills the system prompt lists (when the executor has the `skill` tool) and the
    /// marked ones that are also commands.
    pub skills: Arc<crate::config::SkillSet>,
    /// The compaction agent's model (`agent.compaction.model`); unset, a summary is written by
    /// the model of the user message that asked for it (SPEC 10.2 step 3).
    pub compaction_model: Option<ModelRef>,
    /// Whether a session's first prompt forks a title request (SPEC 12 step 3); off in
    /// [`RuntimeSettings::new`], on in `assemble`.
    pub titles: bool,
    /// The model for titles (config `small_model`); else the provider's cheap model
    /// ([`ModelSource::small_model`]), else the session's model.
    pub small_model: Option<ModelRef>,
}

/// What the user sends.
#[derive(Debug, Clone, Default)]
pub struct PromptInput {
    /// The message text.
    pub text: String,
    /// The agent to use (default: the settings' `default_agent`, else `build`).
    pub agent: Option<String>,
    /// The model to use (default from settings).
    pub model: Option<ModelRef>,
    /// The model variant (reasoning effort), over the model's and the agent's.
    pub variant: Option<String>,
    /// More parts of the user message, after its text: attached files (`session run -f`) and
    /// the text they were inlined as.
    pub attachments: Vec<PartKind>,
    /// The answer's format: a JSON schema makes the model answer through the
    /// `StructuredOutput` tool and the message carry the result in `structured`.
    pub format: Option<OutputFormat>,
    /// The id the user message gets (a client's own, so that it knows the message when it
    /// comes back); unset, the runtime makes one. It must sort after the session's messages.
    pub message_id: Option<MessageId>,
}

/// A plain text part.
pub(crate) fn text_part(text: &str) -> PartKind {
    PartKind::Text(TextPart { text: text.to_owned(), ..TextPart::default() })
}

/// `provider/model` into a model reference.
pub fn parse_model_ref(reference: &str) -> Option<ModelRef> {
    let (provider, model) = session_llm::split_model_ref(reference)?;
    Some(ModelRef { provider_id: provider.to_owned(), model_id: model.to_owned(), variant: None })
}
