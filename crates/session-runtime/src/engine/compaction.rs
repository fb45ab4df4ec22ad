//! Compaction (SPEC 10): the request part, the summary step with its kept tail, the replay or
//! continue message after it, and pruning of old tool outputs.

use session_core::prompt_loop::CompactionTask;
use session_core::{
    AssistantMessage, CompactionPart, FinishReason, Message, MessagePath, MessageWithParts, Part, PartKind,
    SessionId, UserMessage, compaction::compaction_history, compaction::continue_part,
    compaction::preserve_budget, compaction::replay_parts, compaction::replay_user_message,
    compaction::select_tail, compaction::summary_message, compaction::summary_prompt,
    compaction::summary_request, compaction::tail_turns, compaction::too_large_error, history::ModelTarget,
    history::ToModelOptions, overflow::usable, processor::Outcome,
};
use session_llm::LlmRequest;
use tokio_util::sync::CancellationToken;

use super::bus::BusEvent;
use super::error::RuntimeError;
use super::runtime::Runtime;
use super::step::{StepContext, StepDriver};

impl Runtime {
    /// Compacts the session now, as the user asked (OpenCode's `summarize`, the TUI's
    /// `/compact`): a user message holding a compaction part (`auto: false`), then a run that
    /// writes the summary and stops. `model` writes it unless the compaction agent has one.
    pub async fn summarize(
        &self,
        session_id: &SessionId,
        model: Option<session_core::ModelRef>,
    ) -> Result<AssistantMessage, RuntimeError> {
        let part = PartKind::Compaction(CompactionPart { auto: false, overflow: None, tail_start_id: None });
        let input = super::inputs::PromptInput { model, attachments: vec![part], ..Default::default() };
        self.prompt(session_id, input).await
    }

    /// SPEC 10.2 `create`: a user message holding a compaction part.
    pub(super) async fn create_compaction(
        &self,
        session_id: &SessionId,
        last_user: &UserMessage,
        overflow: bool,
    ) -> Result<(), RuntimeError> {
        let part = PartKind::Compaction(CompactionPart {
            auto: true,
            overflow: overflow.then_some(true),
            tail_start_id: None,
        });
        self.write_user_message(session_id, &last_user.agent, &last_user.model, None, vec![part]).await?;
        Ok(())
    }

    /// Runs one compaction task (SPEC 10.2 `process`).
    pub(super) async fn compact(
        &self,
        session_id: &SessionId,
        messages: &[MessageWithParts],
        task: CompactionTask<'_>,
        last_user: &UserMessage,
        cancel: &CancellationToken,
    ) -> Result<(Outcome, AssistantMessage), RuntimeError> {
        let CompactionTask { parent_id, part_id, compaction } = task;
        let overflow = compaction.overflow == Some(true);
        let history = compaction_history(messages, parent_id, overflow)
            .map_err(|e| RuntimeError::Compaction(e.to_string()))?;
        // The summary is the compaction agent's work: its configured model writes it.
        let model = self.settings.compaction_model.clone().unwrap_or_else(|| last_user.model.clone());
        let entry = self.provider_for(&model)?;
        let catalog = self.model_for(&model)?;
        let target = ModelTarget::new(&model.provider_id, &model.model_id, &catalog.id, &entry.npm);
        let budget = preserve_budget(
            &self.settings.compaction,
            usable(&self.settings.compaction, &catalog.limit, self.settings.output_token_max),
        );
        let selection =
            select_tail(&history.messages, tail_turns(&self.settings.compaction), budget, |range| {
                session_core::history::estimate_history(range, &target, &ToModelOptions::default())
            });
        let head = history.messages.get(..selection.head_end).unwrap_or(&history.messages);
        let prompt = summary_prompt(history.previous_summary.as_deref(), &[]);
        let root = self.settings.worktree.to_string_lossy().into_owned();
        let summary = summary_message(
            self.next_id(),
            session_id.clone(),
            parent_id.clone(),
            &model,
            MessagePath { cwd: root.clone(), root },
            self.clock.now_ms(),
        );
        self.store.upsert_message(&Message::Assistant(summary.clone())).await?;
        self.bus.publish(BusEvent::assistant(&summary));
        let request = LlmRequest {
            model: catalog.id.clone(),
            system: vec![session_core::compaction::COMPACTION_SYSTEM_PROMPT.to_owned()],
            messages: summary_request(head, &target, &prompt),
            tools: Vec::new(),
            max_output_tokens: self.max_output_tokens(&catalog),
            options: super::request::package_options(&entry.npm),
            cancel: cancel.child_token(),
            session_id: Some(session_id.to_string()),
        };
        let processor = self.processor_for(summary.clone(), &catalog, &request.tools);
        let agent =
            self.agents.get(&last_user.agent).or_else(|| self.agents.get("build")).ok_or_else(|| {
                RuntimeError::AgentNotFound { name: last_user.agent.clone(), available: String::new() }
            })?;
        let context = StepContext {
            session_id,
            message_id: summary.id.clone(),
            agent,
            provider: &entry,
            cancel,
            structured: None,
        };
        let run = StepDriver::new(self, context, processor).run(request).await?;
        let (outcome, mut finished) = (run.outcome, run.message);
        if outcome == Outcome::Compact {
            finished.error = Some(too_large_error(history.replay.is_some()));
            finished.finish = Some(FinishReason::Error);
            self.store.upsert_message(&Message::Assistant(finished.clone())).await?;
            self.bus.publish(BusEvent::assistant(&finished));
            return Ok((Outcome::Stop, finished));
        }
        if selection.tail_start_id != compaction.tail_start_id {
            let part = Part {
                id: part_id.clone(),
                session_id: session_id.clone(),
                message_id: parent_id.clone(),
                kind: PartKind::Compaction(CompactionPart {
                    tail_start_id: selection.tail_start_id.clone(),
                    ..compaction.clone()
                }),
            };
            self.store.upsert_part(&part).await?;
            self.bus.publish(BusEvent::PartUpdated { part: Box::new(part) });
        }
        if finished.error.is_some() || outcome == Outcome::Stop {
            return Ok((Outcome::Stop, finished));
        }
        if compaction.auto {
            match &history.replay {
                Some(replay) => {
                    if let Message::User(original) = &replay.info {
                        let copy = replay_user_message(original, self.next_id(), self.clock.now_ms());
                        self.store_user_message(copy, replay_parts(&replay.parts)).await?;
                    }
                }
                None => {
                    self.write_user_message(
                        session_id,
                        &last_user.agent,
                        &last_user.model,
                        None,
                        vec![PartKind::Text(continue_part(overflow))],
                    )
                    .await?;
                }
            }
        }
        self.bus.publish(BusEvent::SessionCompacted { session_id: session_id.clone() });
        Ok((Outcome::Continue, finished))
    }

    /// Clears old tool outputs from the model's view once a run ends (SPEC 10.3).
    pub(super) async fn prune(&self, session_id: &SessionId) {
        let Ok(history) = self.store.load_history(session_id).await else { return };
        let mut messages = history.messages;
        let plan = session_core::compaction::apply_prune(
            &self.settings.compaction,
            &mut messages,
            self.clock.now_ms(),
        );
        for message in &messages {
            for part in &message.parts {
                if plan.pruned_part_ids.contains(&part.id)
                    && let Err(error) = self.store.upsert_part(part).await
                {
                    tracing::warn!(%error, "prune: writing a part failed");
                }
            }
        }
    }
}
