//! The scripted provider: the peers' scripts replay deterministically in every wire format,
//! faults come out as the typed errors an HTTP provider gives, pacing and cancellation hold.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use pretty_assertions::assert_eq;
use serde_json::{Map, Value, json};
use session_core::{
    FinishReason, LlmEvent, history::AssistantContent, history::ModelMessage, history::ToolCall,
    history::ToolResult, history::ToolResultOutput, history::UserContent,
};
use session_llm::{
    Api, Fault, FaultKind, LlmError, LlmRequest, Provider, RequestKind, Script, ScriptCall, ScriptedProvider,
    StreamLimits, ToolSpec, replay, turn_from_history,
};

fn scripts_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts")
}

fn peer_script(name: &str) -> Script {
    Script::load(&scripts_dir().join("peers").join(format!("{name}.json"))).unwrap()
}

const PEER_SCRIPTS: [&str; 8] =
    ["doom", "doom_par", "err500", "long", "overflow", "overflow_err", "retry", "short"];

/// OpenCode's tool set, which the ops translate to natively.
fn opencode_tools() -> Vec<ToolSpec> {
    ["bash", "read", "glob", "grep", "list", "write", "edit"]
        .into_iter()
        .map(|name| ToolSpec {
            name: name.to_owned(),
            description: format!("the {name} tool"),
            input_schema: json!({"type": "object"}).into(),
        })
        .collect()
}

fn user(text: &str) -> ModelMessage {
    ModelMessage::User { content: vec![UserContent::Text { text: text.to_owned() }] }
}

fn request(messages: Vec<ModelMessage>) -> LlmRequest {
    LlmRequest {
        model: "mock-model".to_owned(),
        system: vec!["You are a coding agent.".to_owned()],
        messages,
        tools: opencode_tools(),
        ..LlmRequest::default()
    }
}

/// Every event of one call, and the error that ended it.
async fn collect(provider: &ScriptedProvider, request: LlmRequest) -> (Vec<LlmEvent>, Option<LlmError>) {
    let mut stream = provider.stream(request);
    let mut events = Vec::new();
    while let Some(item) = stream.next().await {
        match item {
            Ok(event) => events.push(event),
            Err(error) => return (events, Some(error)),
        }
    }
    (events, None)
}

fn text_of(events: &[LlmEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            LlmEvent::TextDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

fn reasoning_of(events: &[LlmEvent]) -> String {
    events
        .iter()
        .filter_map(|event| match event {
            LlmEvent::ReasoningDelta { text, .. } => Some(text.as_str()),
            _ => None,
        })
        .collect()
}

/// `(id, name, input)` of each tool call.
fn calls_of(events: &[LlmEvent]) -> Vec<(String, String, Value)> {
    events
        .iter()
        .filter_map(|event| match event {
            LlmEvent::ToolCall { id, name, input, .. } => Some((id.clone(), name.clone(), input.clone())),
            _ => None,
        })
        .collect()
}

fn finish_of(events: &[LlmEvent]) -> Option<(FinishReason, Option<session_core::Usage>)> {
    events.iter().find_map(|event| match event {
        LlmEvent::Finish { reason, usage } => Some((*reason, usage.clone())),
        _ => None,
    })
}

/// The assistant message and tool results a runtime would append after `events`.
fn step_messages(events: &[LlmEvent]) -> Vec<ModelMessage> {
    let mut content = Vec::new();
    let text = text_of(events);
    if !text.is_empty() {
        content.push(AssistantContent::Text { text, provider_options: None });
    }
    let calls = calls_of(events);
    for (id, name, input) in &calls {
        let input: Map<String, Value> = input.as_object().cloned().unwrap_or_default();
        content.push(AssistantContent::ToolCall(ToolCall {
            tool_call_id: id.clone(),
            tool_name: name.clone(),
            input,
            provider_options: None,
            provider_executed: false,
        }));
    }
    let mut out = vec![ModelMessage::Assistant { content }];
    if !calls.is_empty() {
        out.push(ModelMessage::Tool {
            content: calls
                .iter()
                .map(|(id, name, _)| ToolResult {
                    tool_call_id: id.clone(),
                    tool_name: name.clone(),
                    output: ToolResultOutput::Text(format!("output of {id}")),
                    provider_options: None,
                    provider_executed: false,
                })
                .collect(),
        });
    }
    out
}

/// What a driver saw: per step the events, or the error (then the step is retried, or the
/// history compacted on an overflow).
#[derive(Debug, PartialEq)]
enum Step {
    Events(Vec<LlmEvent>),
    Failed(String),
}

/// Drives a script as an agent loop would, up to `max` requests.
async fn drive(provider: &ScriptedProvider, max: usize) -> Vec<Step> {
    let prompt = provider.script().prompt.clone().unwrap_or_else(|| "Go.".to_owned());
    let mut history = vec![user(&prompt)];
    let mut steps = Vec::new();
    for _ in 0..max {
        let (events, error) = collect(provider, request(history.clone())).await;
        if let Some(error) = error {
            steps.push(Step::Failed(error.name().to_owned()));
            if error.is_context_overflow() {
                // Compaction: a summary request without tools, then the summary and a continue.
                let mut summary = request(history.clone());
                summary.tools.clear();
                summary.system = vec!["Summarize the conversation so far.".to_owned()];
                let (events, error) = collect(provider, summary).await;
                assert_eq!(error, None);
                history = vec![
                    user(&prompt),
                    ModelMessage::Assistant {
                        content: vec![AssistantContent::Text {
                            text: text_of(&events),
                            provider_options: None,
                        }],
                    },
                    user("Continue if you have next steps."),
                ];
            }
            continue;
        }
        let done = finish_of(&events).map(|(reason, _)| reason) == Some(FinishReason::Stop);
        history.extend(step_messages(&events));
        steps.push(Step::Events(events));
        if done {
            break;
        }
    }
    steps
}

#[tokio::test]
async fn every_peer_script_replays_to_its_end_deterministically() {
    for name in PEER_SCRIPTS {
        let script = peer_script(name);
        let first = ScriptedProvider::new(script.clone());
        let steps = drive(&first, 100).await;
        let second = drive(&ScriptedProvider::new(script.clone()), 100).await;
        assert_eq!(steps, second, "{name} differs between runs");

        let answered: Vec<&Vec<LlmEvent>> = steps
            .iter()
            .filter_map(|step| match step {
                Step::Events(events) => Some(events),
                Step::Failed(_) => None,
            })
            .collect();
        let last = answered.last().unwrap();
        let final_turn = script.turns.last().unwrap();
        assert_eq!(text_of(last), final_turn.text, "{name}");
        assert_eq!(finish_of(last).unwrap().0, FinishReason::Stop, "{name}");
        if let Some(usage) = &final_turn.usage {
            let got = finish_of(last).unwrap().1.unwrap();
            assert_eq!(got.input_tokens, usage.prompt_tokens.map(|n| n as i64), "{name}");
            assert_eq!(got.output_tokens, usage.completion_tokens.map(|n| n as i64), "{name}");
            assert_eq!(got.cache_read_input_tokens, usage.cached_tokens.map(|n| n as i64), "{name}");
        }
        // Every scripted call came out with OpenCode's tool names, in order.
        let expected_calls: usize = script.turns.iter().map(|turn| turn.calls.len()).sum();
        let got_calls: usize = answered.iter().map(|events| calls_of(events).len()).sum();
        assert_eq!(got_calls, expected_calls, "{name}");
        assert!(first.violations().is_empty(), "{name}: {:?}", first.violations());
        let failures = steps.iter().filter(|step| matches!(step, Step::Failed(_))).count();
        assert_eq!(failures, script.faults.len(), "{name}");
    }
}

#[tokio::test]
async fn ops_become_opencode_calls() {
    let provider = ScriptedProvider::new(peer_script("long").with_workdir("/proj"));
    let steps = drive(&provider, 100).await;
    let calls: Vec<(String, Value)> = steps
        .iter()
        .flat_map(|step| match step {
            Step::Events(events) => {
                calls_of(events).into_iter().map(|(_, name, input)| (name, input)).collect()
            }
            Step::Failed(_) => Vec::new(),
        })
        .take(5)
        .collect();
    assert_eq!(
        calls,
        vec![
            ("read".to_owned(), json!({"filePath": "/proj/src/mod1.py"})),
            ("glob".to_owned(), json!({"pattern": "src/*.py"})),
            ("grep".to_owned(), json!({"pattern": "def f3", "path": "/proj/src"})),
            ("bash".to_owned(), json!({"command": "grep -n 'def ' src/mod4.py", "description": "Run bash"})),
            ("read".to_owned(), json!({"filePath": "/proj/src/util.py", "offset": 1, "limit": 50})),
        ]
    );
    let ids: Vec<String> = match &steps[0] {
        Step::Events(events) => calls_of(events).into_iter().map(|(id, _, _)| id).collect(),
        Step::Failed(error) => panic!("{error}"),
    };
    assert_eq!(ids, vec!["call_0_0"]);
}

#[tokio::test]
async fn the_turn_comes_from_the_history_not_from_a_counter() {
    let provider = ScriptedProvider::new(peer_script("short"));
    // The same first request twice: the same first turn twice.
    let (a, _) = collect(&provider, request(vec![user("hi")])).await;
    let (b, _) = collect(&provider, request(vec![user("hi")])).await;
    assert_eq!(a, b);
    // A history with three model turns is answered with the fourth.
    let mut history = vec![user("hi")];
    for n in 0..3 {
        history.push(ModelMessage::Assistant {
            content: vec![AssistantContent::Text { text: format!("step {n}"), provider_options: None }],
        });
    }
    assert_eq!(turn_from_history(&history), 3);
    let (events, error) = collect(&provider, request(history)).await;
    assert_eq!(error, None);
    assert!(text_of(&events).starts_with("The project is a tiny CLI"));
    let turns: Vec<usize> = provider.requests().iter().map(|r| r.turn).collect();
    assert_eq!(turns, vec![0, 0, 3]);
}

/// A turn with everything: reasoning, text, two calls, full usage.
fn rich_script() -> Script {
    Script::from_json(
        r#"{"name": "rich", "chunk_chars": 5, "turns": [
            {"reasoning": "Think first, then act.", "text": "Reading two files.",
             "calls": [{"op": "read", "path": "a.txt"}, {"name": "custom", "arguments": {"x": [1, 2]}}],
             "usage": {"prompt_tokens": 1000, "completion_tokens": 50, "cached_tokens": 600,
                       "reasoning_tokens": 10}},
            {"text": "Done."}]}"#,
    )
    .unwrap()
}

#[tokio::test]
async fn every_api_carries_the_same_turn() {
    for api in Api::ALL {
        let provider = ScriptedProvider::new(rich_script().with_api(api));
        assert_eq!(provider.api(), api);
        let (events, error) = collect(&provider, request(vec![user("go")])).await;
        assert_eq!(error, None, "{api}");
        assert_eq!(reasoning_of(&events), "Think first, then act.", "{api}");
        assert_eq!(text_of(&events), "Reading two files.", "{api}");
        assert_eq!(
            calls_of(&events),
            vec![
                ("call_0_0".to_owned(), "read".to_owned(), json!({"filePath": "a.txt"})),
                ("call_0_1".to_owned(), "custom".to_owned(), json!({"x": [1, 2]})),
            ],
            "{api}"
        );
        let (reason, usage) = finish_of(&events).unwrap();
        assert_eq!(reason, FinishReason::ToolCalls, "{api}");
        let usage = usage.unwrap();
        assert_eq!(usage.input_tokens, Some(1000), "{api}");
        assert_eq!(usage.output_tokens, Some(50), "{api}");
        assert_eq!(usage.cache_read_input_tokens, Some(600), "{api}");
        assert_eq!(usage.reasoning_tokens, Some(10), "{api}");
        assert!(matches!(events.first(), Some(LlmEvent::StepStart { .. })), "{api}");
    }
}

#[tokio::test]
async fn missing_usage_is_estimated_as_mockllm_does() {
    let script = Script::from_json(r#"{"turns": [{"text": "abcdefgh"}]}"#).unwrap();
    let provider = ScriptedProvider::new(script);
    let (events, _) = collect(&provider, request(vec![user("hello")])).await;
    let usage = finish_of(&events).unwrap().1.unwrap();
    // A quarter of the characters: 8 characters of text are 2 tokens.
    assert_eq!(usage.output_tokens, Some(2));
    assert!(usage.input_tokens.unwrap() > 10, "{usage:?}");
    assert_eq!(usage.cache_read_input_tokens, Some(0));
}

fn fault_script(fault: Fault, api: Api) -> Script {
    Script::from_json(r#"{"turns": [{"text": "a fairly long first answer, in several chunks"}]}"#)
        .unwrap()
        .with_api(api)
        .with_fault(fault)
}

async fn first_error(script: Script) -> (Vec<LlmEvent>, LlmError) {
    let limits = StreamLimits { idle_timeout: Duration::from_millis(150), ..StreamLimits::default() };
    let provider = ScriptedProvider::new(script).with_limits(limits);
    let (events, error) = collect(&provider, request(vec![user("go")])).await;
    (events, error.expect("the fault fires on the first request"))
}

#[tokio::test]
async fn http_faults_are_classified_like_http_answers() {
    for api in Api::ALL {
        let mut rate = Fault::new(1, FaultKind::RateLimited);
        rate.retry_after_ms = Some(1500);
        rate.retry_after = Some("2".to_owned());
        let (_, error) = first_error(fault_script(rate, api)).await;
        let LlmError::Api(api_error) = &error else { panic!("{api}: {error:?}") };
        assert_eq!(api_error.status, Some(429), "{api}");
        assert_eq!(api_error.headers.get("retry-after-ms").map(String::as_str), Some("1500"));
        assert_eq!(api_error.headers.get("retry-after").map(String::as_str), Some("2"));
        assert!(api_error.retryable(), "{api}");
        let delay = session_core::retry::delay(1, Some(&error.to_message_error()), 0.0, 0, None);
        assert_eq!(delay, 1500.0, "{api}");

        for (kind, status) in [
            (FaultKind::ServerError, 500),
            (FaultKind::BadGateway, 502),
            (FaultKind::Unavailable, 503),
            (FaultKind::Overloaded, 529),
        ] {
            let (_, error) = first_error(fault_script(Fault::new(1, kind), api)).await;
            let LlmError::Api(api_error) = &error else { panic!("{api} {status}: {error:?}") };
            assert_eq!(api_error.status, Some(status), "{api}");
            assert!(api_error.retryable(), "{api} {status}");
        }

        let (_, error) = first_error(fault_script(Fault::new(1, FaultKind::Overflow), api)).await;
        assert!(error.is_context_overflow(), "{api}: {error:?}");

        let mut teapot = Fault::new(1, FaultKind::Status);
        teapot.status = Some(418);
        teapot.body = Some(json!({"error": {"message": "short and stout"}}));
        let (_, error) = first_error(fault_script(teapot, api)).await;
        let LlmError::Api(api_error) = &error else { panic!("{api}: {error:?}") };
        assert_eq!(api_error.status, Some(418));
        assert!(!api_error.retryable());
        assert_eq!(error.to_string(), "short and stout");
    }
}

#[tokio::test]
async fn stream_faults_are_typed() {
    for api in Api::ALL {
        let (events, error) = first_error(fault_script(Fault::new(1, FaultKind::Reset), api)).await;
        assert!(events.is_empty());
        assert!(matches!(error, LlmError::Transport(_)), "{api}: {error:?}");

        let reset = Fault::new(1, FaultKind::Reset).after_chunks(2);
        let (events, error) = first_error(fault_script(reset, api)).await;
        assert!(!events.is_empty(), "{api}");
        assert!(matches!(error, LlmError::Transport(_)), "{api}: {error:?}");

        let started = Instant::now();
        let stall = Fault::new(1, FaultKind::Stall).after_chunks(1);
        let (_, error) = first_error(fault_script(stall, api)).await;
        assert_eq!(error, LlmError::IdleTimeout { after: Duration::from_millis(150) }, "{api}");
        assert!(started.elapsed() >= Duration::from_millis(150));

        let (_, error) = first_error(fault_script(Fault::new(1, FaultKind::Malformed), api)).await;
        assert!(matches!(error, LlmError::MalformedEvent { .. }), "{api}: {error:?}");

        // However late the cut is asked for, the stream is cut before its terminal event.
        for after in [1, 3, 1000] {
            let cut = Fault::new(1, FaultKind::Cut).after_chunks(after);
            let (_, error) = first_error(fault_script(cut, api)).await;
            assert!(matches!(error, LlmError::Truncated { .. }), "{api} after {after}: {error:?}");
        }
    }
}

#[tokio::test]
async fn faults_fire_on_their_request_number_only() {
    let provider = ScriptedProvider::new(peer_script("err500"));
    let steps = drive(&provider, 20).await;
    assert!(matches!(&steps[1], Step::Failed(name) if name == "APIError"), "{steps:?}");
    let log = provider.requests();
    let faults: Vec<Option<u64>> =
        log.iter().map(|r| r.fault.as_ref().and(r.main_index)).filter(Option::is_some).collect();
    assert_eq!(faults, vec![Some(2)]);
    // The retried request asks for the same turn again.
    assert_eq!(log[1].turn, log[2].turn);
}

#[tokio::test]
async fn overflow_compaction_resumes_from_the_summary_marker() {
    let provider = ScriptedProvider::new(peer_script("overflow_err"));
    let steps = drive(&provider, 20).await;
    assert!(steps.iter().any(|step| matches!(step, Step::Failed(name) if name == "ContextOverflowError")));
    let log = provider.requests();
    let kinds: Vec<(RequestKind, usize)> = log.iter().map(|r| (r.kind, r.turn)).collect();
    // Turns 0 and 1 answered, turn 2 overflows, the summary (at turn 2) resumes the count.
    assert_eq!(
        kinds,
        vec![
            (RequestKind::Main, 0),
            (RequestKind::Main, 1),
            (RequestKind::Main, 2),
            (RequestKind::Summary, 2),
            (RequestKind::Main, 2),
            (RequestKind::Main, 3),
        ]
    );
}

#[tokio::test]
async fn title_requests_get_the_title() {
    let mut script = peer_script("short");
    script.title = Some("A title".to_owned());
    let provider = ScriptedProvider::new(script);
    let mut title = request(vec![user("Generate a title for this conversation: hello")]);
    title.tools.clear();
    title.system = vec!["You are a title generator.".to_owned()];
    let (events, _) = collect(&provider, title).await;
    assert_eq!(text_of(&events), "A title");
    assert_eq!(provider.requests()[0].kind, RequestKind::Title);
    assert_eq!(provider.requests()[0].main_index, None);
}

#[tokio::test]
async fn exhausted_scripts_answer_with_the_exhausted_text() {
    let provider = ScriptedProvider::new(Script::empty());
    let (events, error) = collect(&provider, request(vec![user("hi")])).await;
    assert_eq!(error, None);
    assert_eq!(text_of(&events), "[mock] script exhausted; done.");
}

#[tokio::test]
async fn recorded_turns_replay_through_the_parser() {
    let script = Script::load(&scripts_dir().join("recorded.json")).unwrap();
    assert_eq!(script.api, Api::Anthropic);
    let provider = ScriptedProvider::new(script.clone());
    let (events, error) = collect(&provider, request(vec![user("weather?")])).await;
    assert_eq!(error, None);
    let expected = replay(Api::Anthropic, script.turns[0].recorded.as_ref().unwrap());
    assert_eq!(events, expected.events);
    // The recorded call is answered, and the next turn is the scripted text.
    let mut history = vec![user("weather?")];
    history.extend(step_messages(&events));
    let (events, _) = collect(&provider, request(history)).await;
    assert_eq!(text_of(&events), "It is sunny in Paris.");
    assert!(
        Script::from_json(&std::fs::read_to_string(scripts_dir().join("recorded.json")).unwrap()).is_err()
    );
}

#[tokio::test]
async fn chunk_delays_pace_the_stream() {
    let script =
        Script::from_json(r#"{"chunk_delay": 0.01, "chunk_chars": 4, "turns": [{"text": "0123456789ab"}]}"#)
            .unwrap();
    let provider = ScriptedProvider::new(script);
    let started = Instant::now();
    let (events, error) = collect(&provider, request(vec![user("go")])).await;
    assert_eq!(error, None);
    assert_eq!(text_of(&events), "0123456789ab");
    // Role chunk, three text chunks, finish, usage, [DONE]: seven pauses.
    assert!(started.elapsed() >= Duration::from_millis(70), "{:?}", started.elapsed());
}

#[tokio::test]
async fn cancellation_ends_the_stream_with_aborted() {
    let script =
        Script::from_json(r#"{"chunk_delay": 0.05, "chunk_chars": 1, "turns": [{"text": "a long answer"}]}"#)
            .unwrap();
    let provider = ScriptedProvider::new(script);
    let req = request(vec![user("go")]);
    let cancel = req.cancel.clone();
    let mut stream = provider.stream(req);
    let first = stream.next().await.unwrap();
    assert!(first.is_ok());
    let started = Instant::now();
    cancel.cancel();
    let mut last = None;
    while let Some(item) = stream.next().await {
        last = Some(item);
    }
    assert_eq!(last, Some(Err(LlmError::Aborted)));
    assert!(started.elapsed() < Duration::from_millis(40), "{:?}", started.elapsed());

    // A cancellation during a turn's initial delay.
    let script = Script::from_json(r#"{"turns": [{"text": "late", "delay": 5}]}"#).unwrap();
    let provider = ScriptedProvider::new(script);
    let req = request(vec![user("go")]);
    let cancel = req.cancel.clone();
    let stream = provider.stream(req);
    tokio::spawn(async move {
        tokio::time::sleep(Duration::from_millis(20)).await;
        cancel.cancel();
    });
    let started = Instant::now();
    let items: Vec<_> = stream.collect().await;
    assert_eq!(items, vec![Err(LlmError::Aborted)]);
    assert!(started.elapsed() < Duration::from_secs(1));
}

#[tokio::test]
async fn a_tool_call_without_result_is_a_violation() {
    let provider = ScriptedProvider::new(peer_script("short"));
    let call = ToolCall {
        tool_call_id: "call_0_0".to_owned(),
        tool_name: "list".to_owned(),
        input: Map::new(),
        provider_options: None,
        provider_executed: false,
    };
    let history = vec![
        user("hi"),
        ModelMessage::Assistant { content: vec![AssistantContent::ToolCall(call)] },
        user("where is the result?"),
    ];
    let _ = collect(&provider, request(history)).await;
    assert_eq!(provider.violations(), vec!["request 1: tool call call_0_0 (list) has no result".to_owned()]);
}

#[test]
fn the_demo_script_is_bundled_and_valid() {
    let demo = Script::demo();
    let file = Script::load(&Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/demo.json")).unwrap();
    assert_eq!(demo, file);
    assert_eq!(demo.name, "demo");
    let ops: Vec<&str> = demo
        .turns
        .iter()
        .flat_map(|turn| &turn.calls)
        .map(|call| match call {
            ScriptCall::Op(op) => op.op.as_str(),
            ScriptCall::Raw { name, .. } => name.as_str(),
        })
        .collect();
    assert_eq!(ops, vec!["list", "read", "grep", "write", "bash"]);
    assert!(demo.turns.last().unwrap().calls.is_empty());
}

#[tokio::test]
async fn the_demo_runs_to_its_answer() {
    let provider = ScriptedProvider::new(Script::demo().with_chunk_delay(Duration::ZERO));
    let steps = drive(&provider, 20).await;
    assert_eq!(steps.len(), 6);
    let Some(Step::Events(last)) = steps.last() else { panic!("{steps:?}") };
    assert!(text_of(last).ends_with("Done."));
    assert_eq!(reasoning_of(last), "The line counts are in; time to summarise.");
}

#[test]
fn bad_scripts_are_errors_not_panics() {
    let cases = [
        (r#"{"turns": [{"calls": [{"op": "grep"}]}]}"#, "needs `pattern`"),
        (r#"{"turns": [{"calls": [{"op": "fly"}]}]}"#, "unknown variant `fly`"),
        (r#"{"turns": [{"calls": [{"name": "x", "arguments": 3}]}]}"#, "must be an object"),
        (r#"{"turns": [{"delay": -1}]}"#, "not a duration"),
        (r#"{"faults": [{"at": 1, "kind": "418"}]}"#, "unknown fault kind"),
        (r#"{"api": "cobol"}"#, "unknown API"),
        (r#"{"chunk_chars": 0}"#, "chunk_chars"),
        (r#"{"faults": [{"at": 1, "kind": "status", "status": 1000}]}"#, "not an HTTP status"),
        ("[", "EOF"),
    ];
    for (text, expected) in cases {
        let error = Script::from_json(text).unwrap_err().to_string();
        assert!(error.contains(expected), "{text}: {error}");
    }
    let error = Script::load(Path::new("/nonexistent/script.json")).unwrap_err();
    assert!(error.to_string().starts_with("cannot read /nonexistent/script.json"), "{error}");
}

#[test]
fn faults_take_one_number_or_a_list_and_a_scope() {
    let script =
        Script::from_json(r#"{"faults": [{"at": [2, 4], "of": "all", "kind": "429", "retry_after": 3}]}"#)
            .unwrap();
    let fault = &script.faults[0];
    assert_eq!(fault.at, vec![2, 4]);
    assert_eq!(fault.retry_after.as_deref(), Some("3"));
    assert!(fault.fires(4, 1, false));
    assert!(!fault.fires(3, 2, true));
}
