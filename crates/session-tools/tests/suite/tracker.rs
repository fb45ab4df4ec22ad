//! The call tracker on its own and driving session-core's processor the way the runtime does:
//! `Effect::ExecuteTool` spawns, updates are fed back in order, cleanup waits 250 ms and then
//! gives up on what still runs.

use std::sync::Arc;
use std::time::{Duration, Instant};

use async_trait::async_trait;
use serde_json::{Value, json};
use session_core::{
    AssistantMessage, Entropy, FinishReason, JsonObject, LlmEvent, PartKind, ToolState, processor::Effect,
    processor::Input, processor::Outcome, processor::Processor, processor::ProcessorConfig,
    processor::ToolSettlement, processor::Waiting,
};
use session_tools::{
    CLEANUP_GRACE, CallScope, CallTracker, PermissionEngine, Tool, ToolContext, ToolError, ToolExecutor,
    ToolInvocation, ToolSuccess, ToolUpdate, Workspace, builtin_registry,
};
use tokio_util::sync::CancellationToken;

use super::support::{Fixture, ScriptedAsker, build_rules, obj};

/// Sleeps `ms` milliseconds, reporting progress first; ignores cancellation when `stubborn`.
struct Sleepy;

#[async_trait]
impl Tool for Sleepy {
    fn name(&self) -> &str {
        "sleepy"
    }
    fn description(&self) -> &str {
        "Sleeps"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {"ms": {"type": "integer"}, "stubborn": {"type": "boolean"}}, "required": ["ms"]})
    }
    async fn execute(&self, args: JsonObject, ctx: &ToolContext) -> Result<ToolSuccess, ToolError> {
        let ms = args["ms"].as_u64().unwrap_or(0);
        ctx.metadata(Some("sleeping".into()), Some(obj(json!({"output": "so far"}))));
        if args.get("stubborn") == Some(&json!(true)) {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        } else {
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(ms)) => {}
                () = ctx.abort().cancelled() => return Err(ToolError::Aborted),
            }
        }
        Ok(ToolSuccess::new("slept", format!("slept {ms}"), JsonObject::new()))
    }
}

struct Panicky;

#[async_trait]
impl Tool for Panicky {
    fn name(&self) -> &str {
        "panicky"
    }
    fn description(&self) -> &str {
        "Panics"
    }
    fn parameters(&self) -> Value {
        json!({"type": "object"})
    }
    async fn execute(&self, _args: JsonObject, _ctx: &ToolContext) -> Result<ToolSuccess, ToolError> {
        panic!("tool bug")
    }
}

fn executor(fx: &Fixture) -> Arc<ToolExecutor> {
    let mut registry = builtin_registry().unwrap();
    registry.register(Arc::new(Sleepy)).unwrap();
    registry.register(Arc::new(Panicky)).unwrap();
    let engine = Arc::new(PermissionEngine::new(ScriptedAsker::rejecting()));
    Arc::new(ToolExecutor::new(registry, Workspace::new(&fx.root).unwrap(), engine))
}

fn call(id: &str, tool: &str, input: Value) -> ToolInvocation {
    ToolInvocation { call_id: id.into(), tool: tool.into(), input: obj(input) }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn calls_of_one_step_run_concurrently() {
    let fx = Fixture::new();
    let executor = executor(&fx);
    let scope = fx.scope();
    let mut tracker = CallTracker::new();
    let started = Instant::now();
    for id in ["a", "b", "c", "d"] {
        assert!(tracker.spawn(executor.clone(), call(id, "sleepy", json!({"ms": 300})), scope.clone()));
    }
    assert!(
        !tracker.spawn(executor.clone(), call("a", "sleepy", json!({"ms": 1})), scope.clone()),
        "duplicate id"
    );
    let mut finished = Vec::new();
    while let Some(update) = tracker.next().await {
        if let ToolUpdate::Finished(done) = update {
            assert_eq!(done.result.unwrap().output, "slept 300");
            finished.push(done.call_id);
        }
    }
    finished.sort();
    assert_eq!(finished, vec!["a", "b", "c", "d"]);
    assert!(started.elapsed() < Duration::from_millis(900), "took {:?}", started.elapsed());
    assert!(tracker.is_empty());
}

#[tokio::test]
async fn progress_comes_before_the_completion_and_maps_to_processor_inputs() {
    let mut tracker = CallTracker::new();
    let handle = tracker.track("c1", "custom", &CancellationToken::new()).unwrap();
    assert!(tracker.track("c1", "custom", &CancellationToken::new()).is_none());
    handle.progress().report(Some("working".into()), None);
    assert!(handle.complete(Ok(ToolSuccess::new("t", "o", JsonObject::new()))));
    let first = tracker.next().await.unwrap().into_input();
    assert_eq!(
        first,
        Input::ToolProgress { call_id: "c1".into(), title: Some("working".into()), metadata: None }
    );
    let second = tracker.next().await.unwrap().into_input();
    assert!(
        matches!(second, Input::ToolSettled(ToolSettlement::Completed { ref call_id, ref output })
            if call_id == "c1" && output.output == "o"),
        "{second:?}"
    );
    assert!(tracker.next().await.is_none());
}

#[tokio::test]
async fn the_grace_gives_up_on_stuck_calls_and_ignores_their_late_completion() {
    let mut tracker = CallTracker::new();
    let quick = tracker.track("quick", "custom", &CancellationToken::new()).unwrap();
    let stuck = tracker.track("stuck", "custom", &CancellationToken::new()).unwrap();
    stuck.progress().report(None, Some(obj(json!({"output": "partial"}))));
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(50)).await;
        quick.complete(Ok(ToolSuccess::default()));
    });
    let started = Instant::now();
    let settlement = tracker.wait_all(CLEANUP_GRACE).await;
    let waited = started.elapsed();
    assert!(waited >= Duration::from_millis(240) && waited < Duration::from_millis(600), "waited {waited:?}");
    assert_eq!(settlement.unsettled, vec!["stuck"]);
    let ids: Vec<&str> = settlement.updates.iter().map(ToolUpdate::call_id).collect();
    assert_eq!(ids, vec!["stuck", "quick"], "the stuck call's progress, then the quick completion");
    assert!(stuck.abort().is_cancelled(), "cleanup cancels what it gives up on");
    assert!(!stuck.complete(Ok(ToolSuccess::default())), "a late completion is ignored");
    assert!(tracker.next().await.is_none());
}

#[tokio::test]
async fn a_panicking_tool_still_settles_its_call() {
    let fx = Fixture::new();
    let mut tracker = CallTracker::new();
    tracker.spawn(executor(&fx), call("p", "panicky", json!({})), fx.scope());
    let Some(ToolUpdate::Finished(done)) = tracker.next().await else { panic!("no completion") };
    assert_eq!(done.result.unwrap_err().to_string(), "the tool stopped without a result");
}

// ----------------------------------------------------------------------------------------
// Driving the processor

struct Lcg(u64);

impl Entropy for Lcg {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        self.0 >> 17
    }
}

fn processor() -> Processor {
    let message: AssistantMessage = serde_json::from_value(json!({
        "id": "msg_a", "sessionID": "ses_test", "time": {"created": 1}, "parentID": "msg_u",
        "modelID": "m", "providerID": "p", "mode": "build", "agent": "build",
        "path": {"cwd": "/", "root": "/"}, "cost": 0,
        "tokens": {"input": 0, "output": 0, "reasoning": 0, "cache": {"read": 0, "write": 0}}
    }))
    .unwrap();
    Processor::new(message, ProcessorConfig::default(), Box::new(Lcg(7)))
}

fn now() -> u64 {
    std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_millis() as u64
}

/// The runtime's loop in miniature: carries out effects until none is left.
struct Driver {
    processor: Processor,
    tracker: CallTracker,
    executor: Arc<ToolExecutor>,
    scope: CallScope,
    outcome: Option<Outcome>,
    unsettled: Vec<String>,
}

impl Driver {
    async fn feed(&mut self, input: Input) {
        self.processor.handle(input, now()).unwrap();
        while let Some(effect) = self.processor.poll_effect() {
            match effect {
                Effect::TakeSnapshot(_) => self.processor.handle(Input::Snapshot(None), now()).unwrap(),
                Effect::ComputePatch { .. } => {
                    self.processor.handle(Input::Patch(Vec::new()), now()).unwrap()
                }
                effect @ Effect::ExecuteTool { .. } => {
                    let call = ToolInvocation::from_effect(&effect).unwrap();
                    self.tracker.spawn(self.executor.clone(), call, self.scope.clone());
                }
                Effect::AwaitToolCalls { .. } => {
                    let settlement = self.tracker.wait_all(CLEANUP_GRACE).await;
                    for update in settlement.updates {
                        self.processor.handle(update.into_input(), now()).unwrap();
                    }
                    self.unsettled = settlement.unsettled;
                    if self.processor.waiting() == Waiting::ToolCalls {
                        self.processor.handle(Input::GraceElapsed, now()).unwrap();
                    }
                }
                Effect::Done(outcome) => self.outcome = Some(outcome),
                _ => {}
            }
        }
    }

    /// Feeds tool updates until the calls are done (the provider stream has ended).
    async fn drain(&mut self) {
        while let Some(update) = self.tracker.next().await {
            Box::pin(self.feed(update.into_input())).await;
        }
    }

    fn tool_states(&self) -> Vec<ToolState> {
        self.processor
            .parts()
            .iter()
            .filter_map(|part| match &part.kind {
                PartKind::Tool(tool) => Some(tool.state.clone()),
                _ => None,
            })
            .collect()
    }
}

fn tool_call(id: &str, name: &str, input: Value) -> Input {
    Input::Event(LlmEvent::ToolCall {
        id: id.into(),
        name: name.into(),
        input,
        provider_executed: false,
        provider_metadata: None,
    })
}

async fn driver(fx: &Fixture) -> Driver {
    let mut driver = Driver {
        processor: processor(),
        tracker: CallTracker::new(),
        executor: executor(fx),
        scope: CallScope {
            session_id: fx.session.clone(),
            message_id: session_core::MessageId::new_unchecked("msg_a"),
            agent: "build".into(),
            ruleset: Arc::new(build_rules()),
            abort: CancellationToken::new(),
        },
        outcome: None,
        unsettled: Vec::new(),
    };
    // The snapshot taken before the stream starts.
    while let Some(effect) = driver.processor.poll_effect() {
        if let Effect::TakeSnapshot(_) = effect {
            driver.processor.handle(Input::Snapshot(None), now()).unwrap();
        }
    }
    driver.feed(Input::Event(LlmEvent::StepStart { index: 0 })).await;
    driver
}

#[tokio::test]
async fn results_reach_the_processor_and_the_step_continues() {
    let fx = Fixture::new();
    fx.write("a.txt", "hello\n");
    let mut d = driver(&fx).await;
    d.feed(tool_call("c1", "read", json!({"filePath": "a.txt"}))).await;
    d.feed(tool_call("c2", "bash", json!({"command": "echo hi", "description": "Greets"}))).await;
    d.feed(tool_call("c3", "read", json!({"offset": "x"}))).await;
    d.feed(Input::Event(LlmEvent::StepFinish {
        index: 0,
        reason: FinishReason::ToolCalls,
        usage: None,
        provider_metadata: None,
    }))
    .await;
    d.drain().await;
    d.feed(Input::EndOfStream).await;
    assert_eq!(d.outcome, Some(Outcome::Continue));
    let states = d.tool_states();
    let ToolState::Completed { output, title, .. } = &states[0] else { panic!("{:?}", states[0]) };
    assert!(output.contains("1: hello"), "{output}");
    assert_eq!(title, "a.txt");
    let ToolState::Completed { output, metadata, .. } = &states[1] else { panic!("{:?}", states[1]) };
    assert_eq!(output, "hi\n");
    assert_eq!(metadata["exit"], json!(0));
    let ToolState::Error { error, .. } = &states[2] else { panic!("{:?}", states[2]) };
    assert!(error.starts_with("The read tool was called with invalid arguments"), "{error}");
}

#[tokio::test]
async fn an_interrupted_bash_call_keeps_its_partial_output() {
    let fx = Fixture::new();
    let mut d = driver(&fx).await;
    d.feed(tool_call("c1", "bash", json!({"command": "echo partial; sleep 30", "description": "Waits"})))
        .await;
    // Wait until the output is in the running part.
    loop {
        let update = d.tracker.next().await.unwrap();
        let seen = matches!(&update, ToolUpdate::Progress { metadata: Some(m), .. } if m["output"] == json!("partial\n"));
        d.feed(update.into_input()).await;
        if seen {
            break;
        }
    }
    d.scope.abort.cancel();
    let started = Instant::now();
    d.feed(Input::Interrupt).await;
    assert!(started.elapsed() < Duration::from_secs(2));
    assert_eq!(d.outcome, Some(Outcome::Stop));
    match &d.tool_states()[0] {
        ToolState::Completed { output, .. } => {
            assert!(output.starts_with("partial\n") && output.ends_with("(Command was aborted)"), "{output}");
        }
        ToolState::Error { metadata: Some(metadata), .. } => {
            assert_eq!(metadata["interrupted"], json!(true));
            assert_eq!(metadata["output"], json!("partial\n"));
        }
        other => panic!("unexpected state {other:?}"),
    }
}

#[tokio::test]
async fn a_call_that_outlives_the_grace_is_aborted_with_its_progress_kept() {
    let fx = Fixture::new();
    let mut d = driver(&fx).await;
    d.feed(tool_call("c1", "sleepy", json!({"ms": 5000, "stubborn": true}))).await;
    let update = d.tracker.next().await.unwrap();
    assert!(matches!(update, ToolUpdate::Progress { .. }));
    d.feed(update.into_input()).await;
    d.scope.abort.cancel();
    d.feed(Input::Interrupt).await;
    assert_eq!(d.unsettled, vec!["c1"]);
    assert_eq!(d.outcome, Some(Outcome::Stop));
    let ToolState::Error { error, metadata: Some(metadata), title, .. } = &d.tool_states()[0] else {
        panic!("{:?}", d.tool_states())
    };
    assert_eq!(error, session_core::message::TOOL_ABORTED_TEXT);
    assert_eq!(metadata["interrupted"], json!(true));
    assert_eq!(metadata["output"], json!("so far"));
    assert_eq!(title.as_deref(), Some("sleeping"));
    assert!(d.tracker.next().await.is_none());
}
