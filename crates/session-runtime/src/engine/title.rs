//! Session titles (SPEC 12 step 3): on step 1 of a session's first prompt a title request is
//! forked to a small model. It never delays the step and never fails the run: every failure is
//! a log line, and the session keeps its default title.

use std::sync::Arc;
use std::time::Duration;

use futures_util::StreamExt as _;
use session_core::{
    LlmEvent, MessageWithParts, ModelRef, SessionId, history::ModelMessage, history::UserContent,
    title::TITLE_INSTRUCTION, title::clean_title, title::title_source,
};
use session_llm::{LlmRequest, LlmStream, RequestOptions};
use session_store::{SessionPatch, Store};
use tokio_util::sync::CancellationToken;

use super::bus::{Bus, BusEvent};
use super::inputs::ModelSource;
use super::runtime::Runtime;

/// The output tokens a title request may use: a title is a few tokens, and a model that
/// reasons first gets room for that.
const TITLE_MAX_OUTPUT_TOKENS: u32 = 1024;

/// How long a title request may take before it is given up.
const TITLE_TIMEOUT: Duration = Duration::from_secs(60);

/// How much answer text is read: the title is on its first line.
const MAX_ANSWER_BYTES: usize = 8 * 1024;

/// The model a title request goes to: the configured `small_model` when it can be called, else
/// the provider's cheap model of the session's model ([`ModelSource::small_model`]), else the
/// session's model itself.
pub fn title_model(configured: Option<&ModelRef>, models: &dyn ModelSource, session: &ModelRef) -> ModelRef {
    let callable = |model: &ModelRef| {
        models.provider(&model.provider_id).is_some()
            && models.model(&model.provider_id, &model.model_id).is_some()
    };
    if let Some(configured) = configured {
        if callable(configured) {
            return configured.clone();
        }
        tracing::warn!(
            model = %format!("{}/{}", configured.provider_id, configured.model_id),
            "title: small_model is not available; using the provider's small model"
        );
    }
    if let Some(model_id) = models.small_model(&session.provider_id) {
        let small = ModelRef { provider_id: session.provider_id.clone(), model_id, variant: None };
        if callable(&small) {
            return small;
        }
    }
    session.clone()
}

impl Runtime {
    /// Forks the title request when `history` holds the session's first user message and
    /// nothing after it from the user (SPEC 12 step 3); the session's title is replaced only
    /// while it is still the default one.
    pub(super) fn fork_title(&self, session_id: &SessionId, history: &[MessageWithParts]) {
        if !self.settings.titles {
            return;
        }
        let Some((user, text)) = title_source(history) else { return };
        let job = TitleJob {
            store: self.store.clone(),
            models: self.models.clone(),
            bus: self.bus.clone(),
            model: title_model(self.settings.small_model.as_ref(), self.models.as_ref(), &user.model),
            session_id: session_id.clone(),
            text,
            cancel: self.background.cancel_token(),
        };
        self.background.spawn(job.run());
    }
}

/// One title request, owned by its task.
struct TitleJob {
    store: Arc<dyn Store>,
    models: Arc<dyn ModelSource>,
    bus: Bus,
    model: ModelRef,
    session_id: SessionId,
    text: String,
    cancel: CancellationToken,
}

impl TitleJob {
    async fn run(self) {
        let session_id = self.session_id.clone();
        match self.title().await {
            Ok(Some(title)) => tracing::debug!(%session_id, title, "title: stored"),
            Ok(None) => {}
            Err(error) => tracing::warn!(%session_id, error, "title: not generated"),
        }
    }

    /// Asks for the title and stores it; `Ok(None)` when none was due or none came back.
    async fn title(self) -> Result<Option<String>, String> {
        let session = self.store.get_session(&self.session_id).await.map_err(|e| e.to_string())?;
        if session.parent_id.is_some() || !session.has_default_title() {
            return Ok(None);
        }
        let model = &self.model;
        let entry = self.models.provider(&model.provider_id).ok_or("the title model's provider is gone")?;
        let catalog =
            self.models.model(&model.provider_id, &model.model_id).ok_or("the title model is gone")?;
        let max_output_tokens = match catalog.limit.output {
            0 => TITLE_MAX_OUTPUT_TOKENS,
            limit => u32::try_from(limit).unwrap_or(u32::MAX).min(TITLE_MAX_OUTPUT_TOKENS),
        };
        let request = LlmRequest {
            model: catalog.id.clone(),
            system: vec![TITLE_INSTRUCTION.to_owned()],
            messages: vec![ModelMessage::User {
                content: vec![UserContent::Text { text: self.text.clone() }],
            }],
            tools: Vec::new(),
            max_output_tokens: Some(max_output_tokens),
            options: RequestOptions::default(),
            cancel: self.cancel.child_token(),
            session_id: Some(self.session_id.to_string()),
        };
        let answer = tokio::select! {
            () = self.cancel.cancelled() => return Ok(None),
            answer = tokio::time::timeout(TITLE_TIMEOUT, answer_text(entry.client.stream(request))) => {
                answer.map_err(|_| format!("no answer within {} s", TITLE_TIMEOUT.as_secs()))??
            }
        };
        let Some(title) = clean_title(&answer) else {
            tracing::debug!(answer, "title: the answer held no title");
            return Ok(None);
        };
        let patch = SessionPatch {
            title: Some(title.clone()),
            title_only_if_default: true,
            ..SessionPatch::default()
        };
        let updated = self.store.update_session(&self.session_id, patch).await.map_err(|e| e.to_string())?;
        if updated.title != title {
            // Renamed while the request ran: the user's title stays.
            return Ok(None);
        }
        self.bus.publish(BusEvent::SessionUpdated { info: Box::new(updated) });
        Ok(Some(title))
    }
}

/// The text of a streamed answer (reasoning left out), up to [`MAX_ANSWER_BYTES`].
async fn answer_text(mut stream: LlmStream) -> Result<String, String> {
    let mut text = String::new();
    while let Some(event) = stream.next().await {
        match event.map_err(|error| error.to_string())? {
            LlmEvent::TextDelta { text: delta, .. } => {
                text.push_str(&delta);
                if text.len() >= MAX_ANSWER_BYTES {
                    break;
                }
            }
            LlmEvent::ProviderError { message, .. } => return Err(message),
            LlmEvent::Finish { .. } => break,
            _ => {}
        }
    }
    Ok(text)
}
