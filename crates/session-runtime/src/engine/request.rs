//! A step's provider request (SPEC 12 steps 3 and 6): the prompt's agent and model resolved,
//! the agent's system prompt and tools, the model's options and the history as the model sees
//! it. The loop's steps and a new session's first request sent ahead (see `ahead`) build it
//! here, from everything of the runtime but the store, so the two cannot drift apart.

use std::collections::BTreeMap;

use session_core::prompt_loop::{is_last_step, push_max_steps};
use session_core::{
    MessageWithParts, ModelRef, PartKind, SessionId, history::ModelTarget, history::ToModelOptions,
    history::to_model_messages, permission::disabled_tools,
};
use session_llm::{Api, CatalogModel, LlmRequest, RequestOptions, ToolChoice, ToolSpec};
use session_tools::{SKILL_TOOL, ToolExecutor, available_skills, skills_prompt};
use tokio_util::sync::CancellationToken;

use super::agent::{Agent, MAX_STEPS_TEXT, environment_prompt, utc_date};
use super::clock::Clock;
use super::error::RuntimeError;
use super::inputs::{ModelSource, PromptInput, ProviderEntry, RuntimeSettings, parse_model_ref, text_part};
use super::structured::{STRUCTURED_OUTPUT_INSTRUCTION, StructuredOutput};
use super::variant::apply_variant;

/// The options every request to a provider of AI SDK package `npm` carries, whatever asks
/// (a step, a compaction): the field its Chat Completions turns send reasoning back in.
pub(super) fn package_options(npm: &str) -> RequestOptions {
    RequestOptions { reasoning_field: session_llm::chat_reasoning_field(npm), ..RequestOptions::default() }
}

/// What a step's request is built from: the runtime's parts that are not the store.
#[derive(Clone, Copy)]
pub(crate) struct RequestSources<'a> {
    /// Providers and the catalog.
    pub(crate) models: &'a dyn ModelSource,
    /// The tools offered.
    pub(crate) tools: &'a ToolExecutor,
    /// Agents by name.
    pub(crate) agents: &'a BTreeMap<String, Agent>,
    /// Loop settings (the worktree and instructions of the environment prompt, limits).
    pub(crate) settings: &'a RuntimeSettings,
    /// The clock (the environment prompt's date).
    pub(crate) clock: &'a dyn Clock,
}

/// One step's request, before it is built.
pub(super) struct StepRequest<'a> {
    /// The session the step runs in (its requests name it in their headers).
    pub(super) session_id: &'a SessionId,
    /// The history as the step sends it (reminders applied).
    pub(super) messages: &'a [MessageWithParts],
    /// The agent, with the session's rules applied.
    pub(super) agent: &'a Agent,
    /// The model, with its variant.
    pub(super) model: &'a ModelRef,
    /// The provider's entry for `model`.
    pub(super) provider: &'a ProviderEntry,
    /// The catalog's entry for `model`.
    pub(super) catalog: &'a CatalogModel,
    /// The step's number in its run (the last one gets the max-steps text).
    pub(super) step: u32,
    /// The structured-output capture, when the user asked for a schema.
    pub(super) structured: Option<&'a StructuredOutput>,
    /// The request's cancellation.
    pub(super) cancel: CancellationToken,
}

/// A prompt's agent, model and parts, as its user message stores them.
pub(super) struct ResolvedPrompt<'a> {
    /// The agent the prompt runs with.
    pub(super) agent: &'a Agent,
    /// Its model, with the variant in effect.
    pub(super) model: ModelRef,
    /// The user message's parts: the text (unless only attachments came), then attachments.
    pub(super) parts: Vec<PartKind>,
}

impl<'a> RequestSources<'a> {
    /// The environment part of the system prompt.
    pub(super) fn environment(&self) -> String {
        let worktree = &self.settings.worktree;
        let is_git = worktree.ancestors().any(|dir| dir.join(".git").exists());
        environment_prompt(
            worktree,
            is_git,
            &utc_date(self.clock.now_ms()),
            self.settings.instructions.as_deref(),
        )
    }

    /// The provider entry of `model`.
    pub(super) fn provider_for(&self, model: &ModelRef) -> Result<ProviderEntry, RuntimeError> {
        self.models
            .provider(&model.provider_id)
            .ok_or_else(|| RuntimeError::UnknownProvider(model.provider_id.clone()))
    }

    /// The catalog entry of `model`.
    pub(super) fn model_for(&self, model: &ModelRef) -> Result<CatalogModel, RuntimeError> {
        self.models.model(&model.provider_id, &model.model_id).ok_or_else(|| RuntimeError::UnknownModel {
            provider: model.provider_id.clone(),
            model: model.model_id.clone(),
        })
    }

    /// The output-token ceiling sent for `catalog`'s model (SPEC 6).
    pub(super) fn max_output_tokens(&self, catalog: &CatalogModel) -> Option<u32> {
        u32::try_from(session_core::overflow::max_output_tokens(
            &catalog.limit,
            self.settings.output_token_max,
        ))
        .ok()
    }

    /// The agent, model and parts of `input`'s user message; a bad agent, variant or schema
    /// fails here, before anything is stored or sent.
    pub(super) fn resolve_prompt(&self, input: &PromptInput) -> Result<ResolvedPrompt<'a>, RuntimeError> {
        let agent_name = input
            .agent
            .clone()
            .or_else(|| self.settings.default_agent.clone())
            .unwrap_or_else(|| "build".to_owned());
        let agent = self.agents.get(&agent_name).ok_or_else(|| RuntimeError::AgentNotFound {
            name: agent_name.clone(),
            available: self.agents.keys().cloned().collect::<Vec<_>>().join(", "),
        })?;
        let mut model = input
            .model
            .clone()
            .or_else(|| agent.model.as_deref().and_then(parse_model_ref))
            .unwrap_or_else(|| self.settings.default_model.clone());
        model.variant = input.variant.clone().or(model.variant).or_else(|| agent.variant.clone());
        if let Some(variant) = &model.variant {
            let api = Api::from_npm(&self.provider_for(&model)?.npm).unwrap_or(Api::OpenAiChat);
            apply_variant(&mut RequestOptions::default(), api, &self.model_for(&model)?, variant)?;
        }
        StructuredOutput::for_format(input.format.as_ref())?;
        // A message of attachments alone (a compaction request) has no empty text part.
        let parts = (!input.text.is_empty() || input.attachments.is_empty())
            .then(|| text_part(&input.text))
            .into_iter()
            .chain(input.attachments.iter().cloned())
            .collect();
        Ok(ResolvedPrompt { agent, model, parts })
    }

    /// Builds the step's request. Tool sources (MCP servers) start on the first request and
    /// list what changed since.
    pub(super) async fn request(&self, step: StepRequest<'_>) -> Result<LlmRequest, RuntimeError> {
        let StepRequest { session_id, messages, agent, model, provider, catalog, step, structured, cancel } =
            step;
        let target = ModelTarget::new(&model.provider_id, &model.model_id, &catalog.id, &provider.npm);
        let mut model_messages = to_model_messages(messages, &target, &ToModelOptions::default());
        if is_last_step(agent.steps, step) {
            push_max_steps(&mut model_messages, MAX_STEPS_TEXT);
        }
        self.tools.refresh_sources().await;
        let tool_names = self.tools.tool_names();
        let mut disabled = disabled_tools(&tool_names, &agent.ruleset);
        if !agent.is_primary() {
            // A subagent does its task itself: it starts no subagents of its own.
            disabled.insert(super::agent::TASK_TOOL.to_owned());
        }
        let mut tools: Vec<ToolSpec> = self
            .tools
            .definitions(&disabled)
            .into_iter()
            .map(|d| ToolSpec { name: d.name, description: d.description, input_schema: d.parameters })
            .collect();
        let mut system = vec![agent.prompt.clone(), self.environment()];
        // The skills the agent may load, last, as OpenCode places them; none when it may load
        // none (the tool is not offered then either).
        if tool_names.iter().any(|name| name == SKILL_TOOL) && !disabled.contains(SKILL_TOOL) {
            let skills = self.settings.skills.tool_skills();
            system.push(skills_prompt(&available_skills(&skills, &agent.ruleset)));
        }
        let mut options = RequestOptions {
            temperature: agent.temperature,
            top_p: agent.top_p,
            ..package_options(&provider.npm)
        };
        if let Some(variant) = &model.variant {
            let api = Api::from_npm(&provider.npm).unwrap_or(Api::OpenAiChat);
            apply_variant(&mut options, api, catalog, variant)?;
        }
        if let Some(structured) = structured {
            tools.push(structured.tool());
            system.push(STRUCTURED_OUTPUT_INSTRUCTION.to_owned());
            options.tool_choice = Some(ToolChoice::Required);
        }
        Ok(LlmRequest {
            model: catalog.id.clone(),
            // One system message, the parts joined by a newline, as OpenCode sends it.
            system: vec![
                system.iter().filter(|part| !part.is_empty()).cloned().collect::<Vec<_>>().join("\n"),
            ],
            messages: model_messages,
            tools,
            max_output_tokens: self.max_output_tokens(catalog),
            options,
            cancel,
            session_id: Some(session_id.to_string()),
        })
    }
}
