//! Questions the `question` tool asks, waiting for a client's answer (OpenCode's `Question`
//! service): pending per session with `que_` ids, published on the bus as `question.asked`, and
//! settled by [`Runtime::reply_question`] or [`Runtime::reject_question`]. A question whose
//! call is aborted is withdrawn and published as rejected, so clients close their dialogs.

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use async_trait::async_trait;
use session_core::permission::QuestionRejectedError;
use session_core::{Clock, IdSource, QuestionId};
use session_store::SystemClock;
use session_tools::{QuestionAnswer, QuestionAsk, QuestionAsker};
use tokio::sync::oneshot;

use super::bus::{Bus, BusEvent};
use super::clock::random_entropy;

pub use super::bus::QuestionRequest;

/// A reply or rejection named a question that is not waiting (answered, withdrawn, unknown).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("question {0} is not waiting for an answer")]
pub struct QuestionNotFound(pub QuestionId);

type Settled = Result<Vec<QuestionAnswer>, QuestionRejectedError>;

struct Pending {
    request: QuestionRequest,
    answer: oneshot::Sender<Settled>,
}

/// The questions waiting in one runtime; the `question` tool asks through it.
pub struct Questions {
    pending: Mutex<BTreeMap<QuestionId, Pending>>,
    bus: OnceLock<Bus>,
    clock: OnceLock<Arc<dyn Clock>>,
    ids: IdSource,
}

impl std::fmt::Debug for Questions {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Questions").field("pending", &self.lock().len()).finish_non_exhaustive()
    }
}

impl Default for Questions {
    fn default() -> Self {
        Self {
            pending: Mutex::default(),
            bus: OnceLock::new(),
            clock: OnceLock::new(),
            ids: IdSource::new(random_entropy(SystemClock.now_ms())),
        }
    }
}

impl Questions {
    /// An empty table, not yet publishing (the runtime built with it connects its bus).
    pub fn new() -> Arc<Self> {
        Arc::new(Self::default())
    }

    /// Publishes on `bus` and dates ids by `clock` from now on (the first runtime wins).
    pub(crate) fn connect(&self, bus: Bus, clock: Arc<dyn Clock>) {
        let _ = self.bus.set(bus);
        let _ = self.clock.set(clock);
    }

    /// The questions waiting, oldest first.
    pub fn list(&self) -> Vec<QuestionRequest> {
        self.lock().values().map(|pending| pending.request.clone()).collect()
    }

    /// Answers a question: one list of labels (or typed text) per question, in order.
    pub fn reply(&self, id: &QuestionId, answers: Vec<QuestionAnswer>) -> Result<(), QuestionNotFound> {
        let pending = self.lock().remove(id).ok_or_else(|| QuestionNotFound(id.clone()))?;
        self.publish(BusEvent::QuestionReplied {
            session_id: pending.request.session_id.clone(),
            request_id: id.clone(),
            answers: answers.clone(),
        });
        let _ = pending.answer.send(Ok(answers));
        Ok(())
    }

    /// Dismisses a question: the asking call fails with "The user dismissed this question".
    pub fn reject(&self, id: &QuestionId) -> Result<(), QuestionNotFound> {
        let pending = self.lock().remove(id).ok_or_else(|| QuestionNotFound(id.clone()))?;
        self.publish(BusEvent::QuestionRejected {
            session_id: pending.request.session_id,
            request_id: id.clone(),
        });
        let _ = pending.answer.send(Err(QuestionRejectedError));
        Ok(())
    }

    /// Withdraws a question whose asker stopped waiting, published as rejected.
    fn withdraw(&self, id: &QuestionId) {
        let withdrawn = self.lock().remove(id);
        if let Some(pending) = withdrawn {
            self.publish(BusEvent::QuestionRejected {
                session_id: pending.request.session_id,
                request_id: id.clone(),
            });
        }
    }

    fn publish(&self, event: BusEvent) {
        if let Some(bus) = self.bus.get() {
            bus.publish(event);
        }
    }

    fn now_ms(&self) -> u64 {
        self.clock.get().map_or_else(|| SystemClock.now_ms(), |clock| clock.now_ms())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<QuestionId, Pending>> {
        // Every change is one insert or remove: a panic elsewhere leaves the map consistent.
        self.pending.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Withdraws its question when the waiting future is dropped before an answer (an abort).
struct Withdraw<'a> {
    questions: &'a Questions,
    id: QuestionId,
}

impl Drop for Withdraw<'_> {
    fn drop(&mut self) {
        self.questions.withdraw(&self.id);
    }
}

#[async_trait]
impl QuestionAsker for Questions {
    async fn ask(&self, ask: QuestionAsk) -> Result<Vec<QuestionAnswer>, QuestionRejectedError> {
        let id: QuestionId = self.ids.next(self.now_ms());
        let request = QuestionRequest {
            id: id.clone(),
            session_id: ask.session_id,
            questions: ask.questions,
            tool: ask.tool,
        };
        let (answer, answered) = oneshot::channel();
        self.lock().insert(id.clone(), Pending { request: request.clone(), answer });
        let _withdraw = Withdraw { questions: self, id };
        self.publish(BusEvent::QuestionAsked(Box::new(request)));
        // A dropped sender (the table itself gone) counts as a dismissal.
        answered.await.unwrap_or(Err(QuestionRejectedError))
    }
}

#[cfg(test)]
mod tests {
    use session_core::SessionId;
    use session_tools::QuestionPrompt;

    use super::*;

    fn ask(session: &str) -> QuestionAsk {
        QuestionAsk {
            session_id: SessionId::new_unchecked(session),
            questions: vec![QuestionPrompt {
                question: "Q?".into(),
                header: "Q".into(),
                options: Vec::new(),
                multiple: None,
            }],
            tool: None,
        }
    }

    async fn waiting(questions: &Questions, count: usize) -> Vec<QuestionRequest> {
        for _ in 0..200 {
            let list = questions.list();
            if list.len() == count {
                return list;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        panic!("{count} questions never waited");
    }

    #[tokio::test]
    async fn a_reply_settles_the_ask_and_is_published() {
        let questions = Questions::new();
        let bus = Bus::default();
        let mut events = bus.subscribe();
        questions.connect(bus, Arc::new(SystemClock));
        let asking = tokio::spawn({
            let questions = questions.clone();
            async move { questions.ask(ask("ses_a")).await }
        });
        let list = waiting(&questions, 1).await;
        assert!(list[0].id.as_str().starts_with("que_"), "{:?}", list[0].id);
        questions.reply(&list[0].id, vec![vec!["Yes".into()]]).unwrap();
        assert_eq!(asking.await.unwrap(), Ok(vec![vec!["Yes".to_owned()]]));
        assert!(questions.list().is_empty());
        assert_eq!(questions.reply(&list[0].id, Vec::new()), Err(QuestionNotFound(list[0].id.clone())));
        let asked = events.recv().await.unwrap();
        assert_eq!(asked.name(), "question.asked");
        let value = serde_json::to_value(crate::wire::Event::bus(&asked)).unwrap();
        assert_eq!(value["properties"]["sessionID"], "ses_a");
        assert_eq!(value["properties"]["questions"][0]["question"], "Q?");
        let replied = events.recv().await.unwrap();
        let replied = serde_json::to_value(crate::wire::Event::bus(&replied)).unwrap();
        assert_eq!(
            replied,
            serde_json::json!({"type": "question.replied", "properties": {
                "sessionID": "ses_a", "requestID": list[0].id.as_str(), "answers": [["Yes"]]}})
        );
    }

    #[tokio::test]
    async fn a_rejection_fails_the_ask() {
        let questions = Questions::new();
        let bus = Bus::default();
        let mut events = bus.subscribe();
        questions.connect(bus, Arc::new(SystemClock));
        let asking = tokio::spawn({
            let questions = questions.clone();
            async move { questions.ask(ask("ses_b")).await }
        });
        let id = waiting(&questions, 1).await[0].id.clone();
        questions.reject(&id).unwrap();
        assert_eq!(asking.await.unwrap(), Err(QuestionRejectedError));
        assert_eq!(questions.reject(&id), Err(QuestionNotFound(id.clone())));
        let _asked = events.recv().await.unwrap();
        let rejected = events.recv().await.unwrap();
        let rejected = serde_json::to_value(crate::wire::Event::bus(&rejected)).unwrap();
        assert_eq!(
            rejected,
            serde_json::json!({"type": "question.rejected", "properties": {
                "sessionID": "ses_b", "requestID": id.as_str()}})
        );
    }

    #[tokio::test]
    async fn a_dropped_ask_is_withdrawn_as_rejected() {
        let questions = Questions::new();
        let bus = Bus::default();
        let mut events = bus.subscribe();
        questions.connect(bus, Arc::new(SystemClock));
        let asking = tokio::spawn({
            let questions = questions.clone();
            async move { questions.ask(ask("ses_c")).await }
        });
        let id = waiting(&questions, 1).await[0].id.clone();
        asking.abort();
        let _ = asking.await;
        assert!(questions.list().is_empty());
        let _asked = events.recv().await.unwrap();
        match events.recv().await.unwrap() {
            BusEvent::QuestionRejected { request_id, .. } => assert_eq!(request_id, id),
            other => panic!("expected a rejection, got {other:?}"),
        }
    }

    #[test]
    fn ids_ascend() {
        let questions = Questions::default();
        let (a, b): (QuestionId, QuestionId) = (questions.ids.next(5), questions.ids.next(5));
        assert!(a < b);
    }
}
