//! The engine end to end: a real SQLite store, real tools in a temp workspace, an in-process
//! provider that plays scripted turns, and a sleeper that records instead of waiting.

use std::collections::{BTreeMap, VecDeque};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use super::support::eventually;
use async_trait::async_trait;
use futures_util::StreamExt as _;
use serde_json::{Value, json};
use session_core::{
    FinishReason, LlmEvent, Message, MessageError, MessageWithParts, ModelCost, ModelRef, PartKind,
    SessionId, ToolStatus, Usage, overflow::ModelLimit, permission::AgentPaths, permission::PermissionAsk,
    permission::Reply,
};
use session_llm::{Api, CatalogModel, LlmError, LlmRequest, LlmStream, Provider};
use session_runtime::agents::Agent;
use session_runtime::clock::Sleeper;
use session_runtime::sessions::SessionStatus;
use session_runtime::snapshot::{NoSnapshots, Snapshotter};
use session_runtime::{BusEvent, ModelSource, PromptInput, ProviderEntry, Runtime, RuntimeSettings};
use session_store::{SqliteConfig, SqliteStore, Store, StoreOptions};
use session_tools::{
    PermissionAnswer, PermissionAsker, PermissionEngine, ToolExecutor, Workspace, builtin_registry,
};

/// One scripted provider call: events, then optionally an error that ends the stream; or a
/// stream that never ends (for abort tests).
#[derive(Clone)]
enum Turn {
    Events(Vec<LlmEvent>, Option<fn() -> LlmError>),
    Hang(Vec<LlmEvent>),
}

#[derive(Default)]
struct Scripted {
    turns: Mutex<VecDeque<Turn>>,
    requests: Mutex<Vec<LlmRequest>>,
}

impl Provider for Scripted {
    fn api(&self) -> Api {
        Api::OpenAiChat
    }

    fn stream(&self, request: LlmRequest) -> LlmStream {
        self.requests.lock().unwrap().push(request.clone());
        let turn = self.turns.lock().unwrap().pop_front();
        match turn {
            Some(Turn::Events(events, error)) => {
                let mut items: Vec<Result<LlmEvent, LlmError>> = events.into_iter().map(Ok).collect();
                if let Some(error) = error {
                    items.push(Err(error()));
                }
                futures_util::stream::iter(items).boxed()
            }
            Some(Turn::Hang(events)) => {
                let cancel = request.cancel.clone();
                futures_util::stream::iter(events.into_iter().map(Ok))
                    .chain(futures_util::stream::once(async move {
                        cancel.cancelled().await;
                        Err(LlmError::Aborted)
                    }))
                    .boxed()
            }
            None => futures_util::stream::iter(vec![Err(LlmError::Aborted)]).boxed(),
        }
    }
}

struct Models {
    provider: Arc<Scripted>,
    limit: ModelLimit,
}

impl ModelSource for Models {
    fn provider(&self, provider_id: &str) -> Option<ProviderEntry> {
        (provider_id == "test").then(|| ProviderEntry {
            client: self.provider.clone(),
            npm: "@ai-sdk/openai-compatible".into(),
            retry: None,
        })
    }

    fn model(&self, provider_id: &str, model_id: &str) -> Option<CatalogModel> {
        (provider_id == "test").then(|| {
            let mut model = CatalogModel::unknown(model_id);
            model.limit = self.limit;
            model.cost = serde_json::from_value::<ModelCost>(
                json!({"input": 1, "output": 2, "cache": {"read": 0, "write": 0}}),
            )
            .unwrap();
            model
        })
    }
}

/// Records how long the runtime asked to sleep, and returns at once.
#[derive(Default)]
struct RecordingSleeper(Mutex<Vec<Duration>>);

#[async_trait]
impl Sleeper for RecordingSleeper {
    async fn sleep(&self, duration: Duration) {
        self.0.lock().unwrap().push(duration);
    }
}

/// Answers every permission ask with a fixed reply and counts the asks.
struct FixedAsker {
    reply: Reply,
    asked: Mutex<Vec<String>>,
}

#[async_trait]
impl PermissionAsker for FixedAsker {
    async fn ask(&self, ask: &PermissionAsk) -> Option<PermissionAnswer> {
        self.asked.lock().unwrap().push(ask.request.permission.clone());
        Some(PermissionAnswer { reply: self.reply, message: None })
    }
}

struct Harness {
    runtime: Runtime,
    provider: Arc<Scripted>,
    sleeper: Arc<RecordingSleeper>,
    asker: Arc<FixedAsker>,
    store: Arc<dyn Store>,
    _dir: tempfile::TempDir,
    work: std::path::PathBuf,
}

async fn harness(
    turns: Vec<Turn>,
    reply: Reply,
    limit: ModelLimit,
    steps: Option<u32>,
    snapshots: bool,
) -> Harness {
    let dir = tempfile::tempdir().unwrap();
    let work = dir.path().join("work");
    std::fs::create_dir_all(&work).unwrap();
    std::fs::write(work.join("notes.txt"), "alpha\nbeta\n").unwrap();
    let store: Arc<dyn Store> = Arc::new(
        SqliteStore::open(&SqliteConfig::new(dir.path().join("db.sqlite")), StoreOptions::default())
            .await
            .unwrap(),
    );
    let provider = Arc::new(Scripted { turns: Mutex::new(turns.into()), requests: Mutex::default() });
    let asker = Arc::new(FixedAsker { reply, asked: Mutex::default() });
    let permissions = Arc::new(PermissionEngine::new(asker.clone()));
    let tools =
        Arc::new(ToolExecutor::new(builtin_registry().unwrap(), Workspace::new(&work).unwrap(), permissions));
    let sleeper = Arc::new(RecordingSleeper::default());
    let snapshotter: Arc<dyn Snapshotter> = if snapshots {
        git(&work, &["init", "--quiet"]);
        Arc::new(
            session_runtime::snapshot::GitSnapshotter::open(&work, &dir.path().join("data"))
                .await
                .expect("git snapshots"),
        )
    } else {
        Arc::new(NoSnapshots)
    };
    let mut build = Agent::build(&[], &AgentPaths::default());
    build.steps = steps;
    let mut agents = BTreeMap::new();
    agents.insert("build".to_owned(), build);
    let mut settings = RuntimeSettings::new(
        ModelRef { provider_id: "test".into(), model_id: "m".into(), variant: None },
        work.clone(),
    );
    settings.output_token_max = 32_000;
    let runtime = Runtime::builder(store.clone(), tools, settings)
        .models(Arc::new(Models { provider: provider.clone(), limit }))
        .snapshots(snapshotter)
        .sleeper(sleeper.clone())
        .agents(agents)
        .build();
    Harness { runtime, provider, sleeper, asker, store, _dir: dir, work }
}

fn git(dir: &Path, args: &[&str]) {
    let status = std::process::Command::new("git").args(args).current_dir(dir).status().unwrap();
    assert!(status.success());
}

fn ev(value: Value) -> LlmEvent {
    serde_json::from_value(value).unwrap()
}

fn text_turn(text: &str) -> Turn {
    Turn::Events(
        vec![
            ev(json!({"type": "step-start", "index": 0})),
            ev(json!({"type": "text-start", "id": "t"})),
            ev(json!({"type": "text-delta", "id": "t", "text": text})),
            ev(json!({"type": "text-end", "id": "t"})),
            step_finish("stop", 100, 10),
            ev(json!({"type": "finish", "reason": "stop"})),
        ],
        None,
    )
}

fn step_finish(reason: &str, input: i64, output: i64) -> LlmEvent {
    LlmEvent::StepFinish {
        index: 0,
        reason: serde_json::from_value(json!(reason)).unwrap(),
        usage: Some(Usage { input_tokens: Some(input), output_tokens: Some(output), ..Usage::default() }),
        provider_metadata: None,
    }
}

fn tool_turn(calls: &[(&str, &str, Value)]) -> Turn {
    let mut events = vec![ev(json!({"type": "step-start", "index": 0}))];
    for (id, name, input) in calls {
        events.push(ev(json!({"type": "tool-input-start", "id": id, "name": name})));
        events.push(ev(json!({"type": "tool-call", "id": id, "name": name, "input": input})));
    }
    events.push(step_finish("tool-calls", 200, 20));
    events.push(ev(json!({"type": "finish", "reason": "tool-calls"})));
    Turn::Events(events, None)
}

async fn history(h: &Harness, session: &SessionId) -> Vec<MessageWithParts> {
    h.store.load_history(session).await.unwrap().messages
}

fn tool_states(messages: &[MessageWithParts]) -> Vec<(String, ToolStatus)> {
    messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match &p.kind {
            PartKind::Tool(t) => Some((t.tool.clone(), t.state.status())),
            _ => None,
        })
        .collect()
}

fn rate_limited() -> LlmError {
    session_llm::api_failure(
        "test",
        429,
        BTreeMap::from([("retry-after-ms".to_owned(), "1500".to_owned())]),
        Some(r#"{"error":{"message":"Rate limit reached","type":"rate_limit"}}"#.to_owned()),
        None,
    )
}

fn server_error() -> LlmError {
    session_llm::api_failure("test", 500, BTreeMap::new(), Some("internal error".to_owned()), None)
}

const BIG: ModelLimit = ModelLimit { context: 200_000, input: None, output: 8_000 };

#[tokio::test]
async fn a_text_reply_ends_the_loop() {
    let h = harness(vec![text_turn("Hello there")], Reply::Once, BIG, None, false).await;
    let session = h.runtime.create_session(None).await.unwrap();
    let mut events = h.runtime.bus().subscribe();
    let reply =
        h.runtime.prompt(&session.id, PromptInput { text: "hi".into(), ..Default::default() }).await.unwrap();
    assert_eq!(reply.finish, Some(FinishReason::Stop));
    assert!(reply.cost > rust_decimal::Decimal::ZERO);
    let messages = history(&h, &session.id).await;
    assert_eq!(messages.len(), 2);
    let text: Vec<&str> = messages[1]
        .parts
        .iter()
        .filter_map(|p| match &p.kind {
            PartKind::Text(t) => Some(t.text.as_str()),
            _ => None,
        })
        .collect();
    assert_eq!(text, ["Hello there"]);
    // Bus order: the user message, busy, the assistant's parts, then idle last.
    let mut names = Vec::new();
    while let Ok(event) = events.try_recv() {
        names.push(event.name());
    }
    assert_eq!(names.first(), Some(&"message.updated"));
    assert!(names.contains(&"message.part.delta"));
    assert_eq!(names.last(), Some(&"session.idle"));
    let delta_at = names.iter().position(|n| *n == "message.part.delta").unwrap();
    let first_part = names.iter().position(|n| *n == "message.part.updated").unwrap();
    assert!(first_part < delta_at);
}

#[tokio::test]
async fn a_tool_step_then_a_reply_runs_the_real_tool() {
    let h = harness(
        vec![
            tool_turn(&[("c1", "read", json!({"filePath": "notes.txt"}))]),
            text_turn("It says alpha and beta."),
        ],
        Reply::Once,
        BIG,
        None,
        false,
    )
    .await;
    let session = h.runtime.create_session(None).await.unwrap();
    let reply = h
        .runtime
        .prompt(&session.id, PromptInput { text: "read notes".into(), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(reply.finish, Some(FinishReason::Stop));
    let messages = history(&h, &session.id).await;
    assert_eq!(tool_states(&messages), [("read".to_owned(), ToolStatus::Completed)]);
    let output = messages
        .iter()
        .flat_map(|m| m.parts.iter())
        .find_map(|p| match &p.kind {
            PartKind::Tool(t) => match &t.state {
                session_core::ToolState::Completed { output, .. } => Some(output.clone()),
                _ => None,
            },
            _ => None,
        })
        .unwrap();
    assert!(output.contains("alpha"), "{output}");
    // The second request carries the tool call and its result.
    let requests = h.provider.requests.lock().unwrap();
    assert_eq!(requests.len(), 2);
    let second = serde_json::to_string(&requests[1].messages).unwrap();
    assert!(second.contains("tool-result") && second.contains("alpha"), "{second}");
}

/// The writes of a burst of stream events, and those carried out before the driver next
/// waits, make one transaction each, and the bus still sees every message before
/// its parts and each tool part's states in order.
#[tokio::test]
async fn a_burst_of_events_is_committed_together_and_published_in_order() {
    let h = harness(
        vec![tool_turn(&[("c1", "read", json!({"filePath": "notes.txt"}))]), text_turn("Read.")],
        Reply::Once,
        BIG,
        None,
        false,
    )
    .await;
    let session = h.runtime.create_session(None).await.unwrap();
    let before = h.store.stats().commits;
    let mut events = h.runtime.bus().subscribe();
    let reply = h
        .runtime
        .prompt(&session.id, PromptInput { text: "read".into(), ..Default::default() })
        .await
        .unwrap();
    assert_eq!(reply.finish, Some(FinishReason::Stop));
    // The user message with its part; per step the assistant message, then the stream's burst up to the
    // tool's start (step start, tool pending and running), then the tool's end with the
    // step's closing part, totals and completion; the text step's burst holds the text's
    // start, so its deltas follow it, and its end with the step's close.
    assert_eq!(h.store.stats().commits - before, 1 + (1 + 1 + 1) + (1 + 1 + 1));
    let mut seen_messages = std::collections::HashSet::new();
    let mut tool_states = Vec::new();
    while let Ok(event) = events.try_recv() {
        match event {
            BusEvent::MessageUpdated { info } => {
                seen_messages.insert(info.id().clone());
            }
            BusEvent::PartUpdated { part } => {
                assert!(seen_messages.contains(&part.message_id), "a part before its message: {part:?}");
                if let PartKind::Tool(tool) = &part.kind {
                    tool_states.push(tool.state.status());
                }
            }
            _ => {}
        }
    }
    assert_eq!(tool_states, [ToolStatus::Pending, ToolStatus::Running, ToolStatus::Completed]);
}

#[tokio::test]
async fn parallel_tool_calls_all_complete() {
    let h = harness(
        vec![
            tool_turn(&[
                ("c1", "read", json!({"filePath": "notes.txt"})),
                ("c2", "glob", json!({"pattern": "*"})),
                ("c3", "grep", json!({"pattern": "beta"})),
            ]),
            text_turn("done"),
        ],
        Reply::Once,
        BIG,
        None,
        false,
    )
    .await;
    let session = h.runtime.create_session(None).await.unwrap();
    h.runtime.prompt(&session.id, PromptInput { text: "look".into(), ..Default::default() }).await.unwrap();
    let states = tool_states(&history(&h, &session.id).await);
    assert_eq!(states.len(), 3);
    assert!(states.iter().all(|(_, s)| *s == ToolStatus::Completed), "{states:?}");
}

fn doom_turn() -> Turn {
    let input = json!({"filePath": "notes.txt"});
    tool_turn(&[("c1", "read", input.clone()), ("c2", "read", input.clone()), ("c3", "read", input)])
}

#[tokio::test]
async fn doom_loop_answered_once_continues() {
    let h = harness(vec![doom_turn(), text_turn("ok")], Reply::Once, BIG, None, false).await;
    let session = h.runtime.create_session(None).await.unwrap();
    let reply =
        h.runtime.prompt(&session.id, PromptInput { text: "x".into(), ..Default::default() }).await.unwrap();
    assert_eq!(reply.finish, Some(FinishReason::Stop));
    assert_eq!(h.asker.asked.lock().unwrap().as_slice(), ["doom_loop"]);
    let states = tool_states(&history(&h, &session.id).await);
    assert!(states.iter().all(|(_, s)| *s == ToolStatus::Completed), "{states:?}");
}

#[tokio::test]
async fn doom_loop_answered_always_is_not_asked_again() {
    let h = harness(vec![doom_turn(), doom_turn(), text_turn("ok")], Reply::Always, BIG, None, false).await;
    let session = h.runtime.create_session(None).await.unwrap();
    h.runtime.prompt(&session.id, PromptInput { text: "x".into(), ..Default::default() }).await.unwrap();
    assert_eq!(h.asker.asked.lock().unwrap().len(), 1, "the approved rule answers the second loop");
}

#[tokio::test]
async fn doom_loop_rejected_stops_with_the_error() {
    let h = harness(vec![doom_turn(), text_turn("never")], Reply::Reject, BIG, None, false).await;
    let session = h.runtime.create_session(None).await.unwrap();
    let reply =
        h.runtime.prompt(&session.id, PromptInput { text: "x".into(), ..Default::default() }).await.unwrap();
    let error = reply.error.expect("rejected");
    assert!(error.message().contains("rejected permission"), "{error:?}");
    assert_eq!(h.provider.requests.lock().unwrap().len(), 1, "no further step after a rejection");
    let states = tool_states(&history(&h, &session.id).await);
    assert!(states.iter().all(|(_, s)| matches!(s, ToolStatus::Completed | ToolStatus::Error)), "{states:?}");
}

#[tokio::test]
async fn a_429_with_retry_after_ms_is_retried_after_that_delay() {
    let h = harness(
        vec![Turn::Events(vec![], Some(rate_limited)), text_turn("after retry")],
        Reply::Once,
        BIG,
        None,
        false,
    )
    .await;
    let session = h.runtime.create_session(None).await.unwrap();
    let mut events = h.runtime.bus().subscribe();
    let reply =
        h.runtime.prompt(&session.id, PromptInput { text: "x".into(), ..Default::default() }).await.unwrap();
    assert_eq!(reply.finish, Some(FinishReason::Stop));
    assert_eq!(h.sleeper.0.lock().unwrap().as_slice(), [Duration::from_millis(1500)]);
    let mut saw_retry = false;
    while let Ok(event) = events.try_recv() {
        if let BusEvent::SessionStatus { status: SessionStatus::Retry { attempt, .. }, .. } = event {
            assert_eq!(attempt, 1);
            saw_retry = true;
        }
    }
    assert!(saw_retry);
}

#[tokio::test]
async fn five_failures_then_the_error() {
    let turns = (0..6).map(|_| Turn::Events(vec![], Some(server_error))).collect();
    let h = harness(turns, Reply::Once, BIG, None, false).await;
    let session = h.runtime.create_session(None).await.unwrap();
    let reply =
        h.runtime.prompt(&session.id, PromptInput { text: "x".into(), ..Default::default() }).await.unwrap();
    assert_eq!(reply.error.as_ref().map(|e| e.name()), Some("APIError"));
    assert_eq!(h.sleeper.0.lock().unwrap().len(), 5, "at most 5 retries");
    assert_eq!(h.provider.requests.lock().unwrap().len(), 6);
    // The stored message is the returned one: error and completion time persisted.
    let stored = history(&h, &session.id).await;
    let Message::Assistant(stored) = &stored[1].info else { panic!("{stored:?}") };
    assert_eq!(stored.error.as_ref().map(|e| e.name()), Some("APIError"));
    assert!(stored.time.completed.is_some());
}

#[tokio::test]
async fn a_failure_after_a_tool_started_is_not_replayed() {
    let mut events = match tool_turn(&[("c1", "read", json!({"filePath": "notes.txt"}))]) {
        Turn::Events(events, _) => events,
        Turn::Hang(_) => unreachable!(),
    };
    // Cut right after the call: the tool has started when the stream fails.
    events.truncate(3);
    let h = harness(
        vec![Turn::Events(events, Some(server_error)), text_turn("x")],
        Reply::Once,
        BIG,
        None,
        false,
    )
    .await;
    let session = h.runtime.create_session(None).await.unwrap();
    let reply =
        h.runtime.prompt(&session.id, PromptInput { text: "x".into(), ..Default::default() }).await.unwrap();
    let error = reply.error.expect("stopped");
    assert!(error.message().contains("not retried"), "{error:?}");
    assert_eq!(h.provider.requests.lock().unwrap().len(), 1);
    assert!(h.sleeper.0.lock().unwrap().is_empty());
}

#[tokio::test]
async fn abort_mid_stream_marks_the_message_aborted() {
    let h = Arc::new(
        harness(
            vec![Turn::Hang(vec![
                ev(json!({"type": "step-start", "index": 0})),
                ev(json!({"type": "text-start", "id": "t"})),
                ev(json!({"type": "text-delta", "id": "t", "text": "partial"})),
            ])],
            Reply::Once,
            BIG,
            None,
            false,
        )
        .await,
    );
    let session = h.runtime.create_session(None).await.unwrap();
    let runner = {
        let h = h.clone();
        let id = session.id.clone();
        tokio::spawn(async move {
            h.runtime.prompt(&id, PromptInput { text: "x".into(), ..Default::default() }).await
        })
    };
    while !h.runtime.is_busy(&session.id) {
        tokio::task::yield_now().await;
    }
    tokio::time::sleep(Duration::from_millis(50)).await;
    assert!(h.runtime.cancel(&session.id));
    let reply = runner.await.unwrap().unwrap();
    assert_eq!(reply.error.as_ref().map(|e| e.name()), Some("MessageAbortedError"));
    assert!(reply.time.completed.is_some());
}

#[tokio::test]
async fn abort_mid_tool_kills_it_and_keeps_the_part() {
    let h = Arc::new(
        harness(
            vec![Turn::Hang(vec![
                ev(json!({"type": "step-start", "index": 0})),
                ev(json!({"type": "tool-input-start", "id": "b1", "name": "bash"})),
                ev(json!({"type": "tool-call", "id": "b1", "name": "bash", "input": {"command": "sleep 30", "description": "wait"}})),
            ])],
            Reply::Once,
            BIG,
            None,
            false,
        )
        .await,
    );
    let session = h.runtime.create_session(None).await.unwrap();
    let runner = {
        let h = h.clone();
        let id = session.id.clone();
        tokio::spawn(async move {
            h.runtime.prompt(&id, PromptInput { text: "x".into(), ..Default::default() }).await
        })
    };
    tokio::time::sleep(Duration::from_millis(300)).await;
    assert!(h.runtime.cancel(&session.id));
    let reply = tokio::time::timeout(Duration::from_secs(20), runner)
        .await
        .expect("abort is prompt")
        .unwrap()
        .unwrap();
    assert_eq!(reply.error.as_ref().map(|e| e.name()), Some("MessageAbortedError"));
    let states = tool_states(&history(&h, &session.id).await);
    assert_eq!(states.len(), 1);
    // The killed command either reports its partial output or ends as an aborted error;
    // it is never left running.
    assert!(matches!(states[0].1, ToolStatus::Completed | ToolStatus::Error), "{states:?}");
}

#[tokio::test]
async fn the_step_limit_sends_the_max_steps_message() {
    let h = harness(
        vec![tool_turn(&[("c1", "glob", json!({"pattern": "*"}))]), text_turn("summary of work")],
        Reply::Once,
        BIG,
        Some(2),
        false,
    )
    .await;
    let session = h.runtime.create_session(None).await.unwrap();
    h.runtime.prompt(&session.id, PromptInput { text: "x".into(), ..Default::default() }).await.unwrap();
    let requests = h.provider.requests.lock().unwrap();
    assert_eq!(requests.len(), 2);
    let last = serde_json::to_string(&requests[1].messages).unwrap();
    assert!(last.contains("MAXIMUM STEPS REACHED"));
    let first = serde_json::to_string(&requests[0].messages).unwrap();
    assert!(!first.contains("MAXIMUM STEPS REACHED"));
}

#[tokio::test]
async fn overflow_at_step_finish_compacts_and_continues() {
    // A tiny context: the first step's 9 000 tokens overflow a 10 000 context with 2 000 output.
    let limit = ModelLimit { context: 10_000, input: None, output: 2_000 };
    let big_step = Turn::Events(
        vec![
            ev(json!({"type": "step-start", "index": 0})),
            ev(json!({"type": "text-start", "id": "t"})),
            ev(json!({"type": "text-delta", "id": "t", "text": "working"})),
            ev(json!({"type": "text-end", "id": "t"})),
            step_finish("tool-calls", 9_000, 10),
        ],
        None,
    );
    let summary = text_turn("## Goal\n- test");
    let h = harness(vec![big_step, summary, text_turn("continued")], Reply::Once, limit, None, false).await;
    let session = h.runtime.create_session(None).await.unwrap();
    let mut events = h.runtime.bus().subscribe();
    let reply =
        h.runtime.prompt(&session.id, PromptInput { text: "x".into(), ..Default::default() }).await.unwrap();
    assert_eq!(reply.finish, Some(FinishReason::Stop));
    {
        let requests = h.provider.requests.lock().unwrap();
        assert_eq!(requests.len(), 3);
        assert!(requests[1].tools.is_empty(), "the summary request has no tools");
    }
    let mut compacted = false;
    while let Ok(event) = events.try_recv() {
        compacted |= matches!(event, BusEvent::SessionCompacted { .. });
    }
    assert!(compacted);
    let messages = history(&h, &session.id).await;
    assert!(messages.iter().any(|m| matches!(&m.info, Message::Assistant(a) if a.is_summary())));
}

#[tokio::test]
async fn a_step_with_a_file_change_gets_a_patch_part() {
    let h = harness(
        vec![
            tool_turn(&[("w1", "write", json!({"filePath": "new.txt", "content": "fresh\n"}))]),
            text_turn("wrote it"),
        ],
        Reply::Once,
        BIG,
        None,
        true,
    )
    .await;
    let session = h.runtime.create_session(None).await.unwrap();
    h.runtime.prompt(&session.id, PromptInput { text: "write".into(), ..Default::default() }).await.unwrap();
    assert_eq!(std::fs::read_to_string(h.work.join("new.txt")).unwrap(), "fresh\n");
    let patches: Vec<Vec<String>> = history(&h, &session.id)
        .await
        .iter()
        .flat_map(|m| m.parts.iter())
        .filter_map(|p| match &p.kind {
            PartKind::Patch(patch) => Some(patch.files.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(patches.len(), 1, "{patches:?}");
    assert!(patches[0].iter().any(|f| f.ends_with("/new.txt")), "{patches:?}");
}

#[tokio::test]
async fn a_second_prompt_while_busy_joins_the_run_and_shares_its_end() {
    let h = Arc::new(harness(vec![Turn::Hang(vec![])], Reply::Once, BIG, None, false).await);
    let session = h.runtime.create_session(None).await.unwrap();
    let spawn_prompt = |text: &'static str| {
        let h = h.clone();
        let id = session.id.clone();
        tokio::spawn(async move {
            h.runtime.prompt(&id, PromptInput { text: text.into(), ..Default::default() }).await
        })
    };
    let first = spawn_prompt("x");
    // The run is in its step (its assistant message is stored) before the second prompt
    // comes: a cancel before any step would leave both prompts without an answer.
    let id = session.id.clone();
    eventually("the first step", async || {
        history(&h, &id).await.iter().any(|m| matches!(m.info, Message::Assistant(_)))
    })
    .await;
    assert!(h.runtime.is_busy(&session.id));
    let second = spawn_prompt("y");
    // The joined prompt's message is stored at once, for the running loop to pick up.
    eventually("the second user message", async || {
        history(&h, &id).await.iter().filter(|m| matches!(m.info, Message::User(_))).count() == 2
    })
    .await;
    assert!(h.runtime.cancel(&session.id));
    let first = first.await.unwrap().unwrap();
    let second = second.await.unwrap().unwrap();
    assert_eq!(first.id, second.id, "both prompts return the run's last message");
    assert_eq!(first.error.as_ref().map(MessageError::name), Some("MessageAbortedError"));
    assert!(!h.runtime.is_busy(&session.id));
}

#[tokio::test]
async fn the_session_records_its_folder_the_newest_prompts_agent_and_model_and_its_totals() {
    let h = harness(
        vec![tool_turn(&[("c1", "glob", json!({"pattern": "*"}))]), text_turn("done")],
        Reply::Once,
        BIG,
        None,
        true,
    )
    .await;
    let session = h.runtime.create_session(None).await.unwrap();
    // The folder is its git root: OpenCode's path is "".
    assert_eq!(session.path.as_deref(), Some(""));
    assert_eq!((session.agent.as_ref(), session.model.as_ref()), (None, None));
    let mut events = h.runtime.bus().subscribe();
    h.runtime.prompt(&session.id, PromptInput { text: "look".into(), ..Default::default() }).await.unwrap();
    let stored = h.store.get_session(&session.id).await.unwrap();
    assert_eq!(stored.agent.as_deref(), Some("build"));
    let model = stored.model.clone().unwrap();
    assert_eq!(
        (model.id.as_str(), model.provider_id.as_str(), model.variant.as_deref()),
        ("m", "test", Some("default"))
    );
    // Both steps count: 200 + 100 tokens in, 20 + 10 out.
    assert_eq!((stored.tokens.input, stored.tokens.output), (300, 30));
    // Clients hear of it: the first `session.updated` carries the agent and model.
    let mut first_update = None;
    while let Ok(event) = events.try_recv() {
        if let BusEvent::SessionUpdated { info } = event {
            first_update.get_or_insert(info);
        }
    }
    assert_eq!(first_update.and_then(|info| info.agent), Some("build".to_owned()));
}
