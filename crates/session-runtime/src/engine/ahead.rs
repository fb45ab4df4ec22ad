//! A new session's first provider request, sent while the store opens, so that a
//! fresh run's start costs the slower of the two rather than their sum.
//!
//! A new session's first step sends what follows from the prompt alone: its user message is
//! the whole history. So the request can leave before the store has opened, the session been
//! created and the prompt stored. The step still builds its own request from the stored
//! history and adopts the stream sent ahead only when the two requests are equal; otherwise
//! the early request is dropped (its connection closes) and the step sends its own. What the
//! model answers is handled only after the step's writes, as always.
//!
//! The session's id is minted here, before the request leaves, so that the request names its
//! session in its headers as every later one does (as OpenCode 1.18.34 names it); the caller creates the session
//! with that id ([`RequestAhead::session_id`]).

use session_core::permission::Rule;
use session_core::{
    CreatedTime, IdGenerator, Message, MessageId, MessageWithParts, Part, PartId, SessionId, UserMessage,
};
use session_llm::{LlmRequest, LlmStream};
use tokio_util::sync::CancellationToken;

use super::agent::with_session_rules;
use super::error::RuntimeError;
use super::inputs::PromptInput;
use super::request::{RequestSources, StepRequest};
use super::step::sent_ahead;
use super::structured::StructuredOutput;

/// The first step's provider request of a new session's first prompt, sent before anything
/// was stored; [`crate::Runtime::prompt_with`] runs the prompt with it.
pub struct RequestAhead {
    /// The id the session must be created with for its first step to adopt this request.
    session_id: SessionId,
    /// The provider it went to.
    provider_id: String,
    /// What was sent.
    request: LlmRequest,
    /// Its stream, read up to the first event by a task of its own.
    stream: LlmStream,
}

impl std::fmt::Debug for RequestAhead {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RequestAhead")
            .field("session_id", &self.session_id)
            .field("provider_id", &self.provider_id)
            .field("model", &self.request.model)
            .finish_non_exhaustive()
    }
}

impl RequestAhead {
    /// Sends the request the first step of a new session with `input` as its first prompt,
    /// created with `session_rules`, sends. Fails as storing the prompt would (an unknown agent,
    /// variant or model).
    pub(crate) async fn send(
        sources: RequestSources<'_>,
        input: &PromptInput,
        session_rules: &[Rule],
    ) -> Result<Self, RuntimeError> {
        let prompt = sources.resolve_prompt(input)?;
        let provider = sources.provider_for(&prompt.model)?;
        let catalog = sources.model_for(&prompt.model)?;
        // The session's own id, minted as the store would mint it: the request names it.
        let now = sources.clock.now_ms();
        let session_id: SessionId = IdGenerator::new().next(now, &mut super::clock::random_entropy(now));
        // The message and part ids are placeholders: no request carries them, and the
        // comparison on adoption would tell if one did.
        let message_id = MessageId::new_unchecked("msg_ahead");
        let user = UserMessage {
            id: message_id.clone(),
            session_id: session_id.clone(),
            time: CreatedTime { created: now },
            format: input.format.clone(),
            summary: None,
            agent: prompt.agent.name.clone(),
            model: prompt.model.clone(),
            system: None,
            tools: None,
        };
        let parts = prompt
            .parts
            .into_iter()
            .enumerate()
            .map(|(n, kind)| Part {
                id: PartId::new_unchecked(format!("prt_ahead{n}")),
                session_id: session_id.clone(),
                message_id: message_id.clone(),
                kind,
            })
            .collect();
        let messages = [MessageWithParts { info: Message::User(user), parts }];
        let structured = StructuredOutput::for_format(input.format.as_ref())?;
        let request = sources
            .request(StepRequest {
                session_id: &session_id,
                messages: &messages,
                // The session's rules turn tools off as they will for the step (`session
                // run` denies `question` without a terminal).
                agent: &with_session_rules(prompt.agent, session_rules),
                model: &prompt.model,
                provider: &provider,
                catalog: &catalog,
                step: 1,
                structured: structured.as_ref(),
                cancel: CancellationToken::new(),
            })
            .await?;
        let stream = sent_ahead(provider.client.stream(request.clone()));
        Ok(Self { session_id, provider_id: prompt.model.provider_id, request, stream })
    }

    /// The id to create the session with: the request sent ahead names it, and the first step
    /// of a session with another id sends its own request.
    pub fn session_id(&self) -> &SessionId {
        &self.session_id
    }

    /// The stream, when `request` to `provider_id` is the request sent ahead; else `None`, and
    /// the early request is dropped.
    pub(super) fn adopt(self, provider_id: &str, request: &LlmRequest) -> Option<LlmStream> {
        if self.provider_id == provider_id && self.request.same_call(request) {
            return Some(self.stream);
        }
        tracing::debug!(
            "the request sent ahead is not the first step's: it is dropped, the step sends its own"
        );
        self.request.cancel.cancel();
        None
    }
}

impl super::runtime::Runtime {
    /// Sends the first step's request of a new session whose first prompt is `input`, before
    /// the session exists; pass it to [`Runtime::prompt_with`](super::runtime::Runtime::prompt_with)
    /// once the session is created. Use it only for a session that will have no message but
    /// this prompt's: for any other the step finds a different request and the early one is
    /// wasted.
    pub async fn send_ahead(&self, input: &PromptInput) -> Result<RequestAhead, RuntimeError> {
        RequestAhead::send(self.sources(), input, &[]).await
    }
}
