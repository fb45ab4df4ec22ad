//! The processor: snapshots of the parts it makes for event scripts, and properties.

use proptest::prelude::*;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use session_core::{
    AssistantMessage, AssistantTime, Entropy, FinishReason, LlmEvent, MessageError, MessageId, MessagePath,
    ModelCost, Part, PartKind, SessionId, TokenUsage, ToolFailure, ToolResultKind, ToolResultValue,
    ToolStatus, Usage, config::CompactionConfig, overflow::ModelLimit, processor::Effect, processor::Input,
    processor::Outcome, processor::Processor, processor::ProcessorConfig, processor::ProcessorError,
    processor::ToolSettlement,
};

/// A deterministic entropy source so part ids are stable in snapshots.
struct Lcg(u64);

impl Entropy for Lcg {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 17
    }
}

fn assistant(summary: bool) -> AssistantMessage {
    AssistantMessage {
        id: MessageId::new_unchecked("msg_assistant"),
        session_id: SessionId::new_unchecked("ses_test"),
        time: AssistantTime { created: 1_000, completed: None },
        error: None,
        parent_id: MessageId::new_unchecked("msg_user"),
        model_id: "test-model".into(),
        provider_id: "test".into(),
        mode: "build".into(),
        agent: "build".into(),
        path: MessagePath { cwd: "/work".into(), root: "/work".into() },
        summary: summary.then_some(true),
        cost: Decimal::ZERO,
        tokens: TokenUsage::default(),
        structured: None,
        variant: None,
        finish: None,
    }
}

fn priced_config() -> ProcessorConfig {
    let cost: ModelCost = serde_json::from_value(json!({
        "input": 3, "output": 15, "cache": {"read": 0.3, "write": 3.75}
    }))
    .expect("cost shape");
    ProcessorConfig {
        cost,
        limit: ModelLimit { context: 200_000, input: None, output: 32_000 },
        compaction: CompactionConfig::default(),
        continue_loop_on_deny: false,
        offered_tools: None,
    }
}

/// One step of a script: an event, or a driver action.
enum Step {
    Event(LlmEvent),
    /// A tool the driver runs settles now, whatever the processor is reading.
    Settle(String, String),
    Interrupt,
    End,
}

/// What a scripted tool returns: its output, or an error text with its typed failure.
type ToolReply = Result<String, (String, Option<ToolFailure>)>;

/// How the scripted driver answers the processor's requests.
struct Answers {
    snapshots: bool,
    patch_files: Vec<String>,
    permission: Result<(), String>,
    /// Results the driver's tools produce, by call id; calls without one stay running.
    tool_results: Vec<(String, ToolReply)>,
}

impl Default for Answers {
    fn default() -> Self {
        Self { snapshots: true, patch_files: Vec::new(), permission: Ok(()), tool_results: Vec::new() }
    }
}

/// Runs a script the way the runtime's driver would, recording a readable effect log.
fn drive(config: ProcessorConfig, summary: bool, script: Vec<Step>, answers: Answers) -> Value {
    drive_keeping(config, summary, script, answers).1
}

/// [`drive`], handing back the processor as the script left it.
fn drive_keeping(
    config: ProcessorConfig,
    summary: bool,
    script: Vec<Step>,
    answers: Answers,
) -> (Processor, Value) {
    let mut processor = Processor::new(assistant(summary), config, Box::new(Lcg(42)));
    let mut now = 1_000;
    let mut log = Vec::new();
    let mut snapshot_counter = 0;
    let mut outcome = None;
    let mut pending: std::collections::VecDeque<Input> = std::collections::VecDeque::new();
    let mut steps = script.into_iter();
    loop {
        // Drain effects, answering those that need an answer.
        while let Some(effect) = processor.poll_effect() {
            match effect {
                Effect::UpsertPart(part) => {
                    log.push(format!("upsert {} {}", part.kind.type_name(), status(&part)))
                }
                Effect::PartDelta { delta, .. } => log.push(format!("delta {delta:?}")),
                Effect::UpsertMessage(_) => log.push("upsert message".into()),
                Effect::TakeSnapshot(purpose) => {
                    log.push(format!("snapshot {purpose:?}"));
                    snapshot_counter += 1;
                    let hash = answers.snapshots.then(|| format!("tree{snapshot_counter}"));
                    pending.push_back(Input::Snapshot(hash));
                }
                Effect::ComputePatch { hash, .. } => {
                    log.push(format!("patch against {hash}"));
                    pending.push_back(Input::Patch(answers.patch_files.clone()));
                }
                Effect::AskPermission { request, .. } => {
                    log.push(format!("ask {}", serde_json::to_string(&request).unwrap_or_default()));
                    pending.push_back(Input::PermissionReply(answers.permission.clone()));
                }
                Effect::ExecuteTool { call_id, tool, .. } => {
                    log.push(format!("execute {tool} {call_id}"));
                    if let Some((_, result)) = answers.tool_results.iter().find(|(id, _)| *id == call_id) {
                        let event = match result {
                            Ok(output) => LlmEvent::ToolResult {
                                id: call_id.clone(),
                                name: tool.clone(),
                                result: ToolResultValue {
                                    kind: ToolResultKind::Json,
                                    value: json!({"output": output, "title": format!("ran {tool}"), "metadata": {"exit": 0}}),
                                },
                                provider_executed: false,
                            },
                            Err((message, failure)) => LlmEvent::ToolError {
                                id: call_id.clone(),
                                name: tool.clone(),
                                message: message.clone(),
                                error: failure.clone(),
                            },
                        };
                        pending.push_back(Input::Event(event));
                    }
                }
                Effect::StepSettled => log.push("step settled".into()),
                Effect::AwaitToolCalls { call_ids } => {
                    log.push(format!("await {call_ids:?}"));
                    pending.push_back(Input::GraceElapsed);
                }
                Effect::SessionError(error) => log.push(format!("session.error {}", error.name())),
                Effect::SetIdle => log.push("idle".into()),
                Effect::Done(result) => outcome = Some(result),
            }
        }
        let input = if let Some(input) = pending.pop_front() {
            input
        } else if outcome.is_some() {
            break;
        } else {
            match steps.next() {
                Some(Step::Event(event)) if processor.wants_events() => Input::Event(event),
                Some(Step::Event(_)) => continue,
                Some(Step::Settle(call_id, output)) => Input::ToolSettled(ToolSettlement::Completed {
                    call_id,
                    output: session_core::ToolOutput {
                        title: "ran".into(),
                        output,
                        metadata: session_core::JsonObject::new(),
                        attachments: None,
                    },
                }),
                Some(Step::Interrupt) => Input::Interrupt,
                Some(Step::End) | None => Input::EndOfStream,
            }
        };
        now += 1;
        match processor.handle(input, now) {
            Ok(()) => {}
            Err(ProcessorError::Stream(error)) => {
                log.push(format!("stream failed: {}", error.message()));
                pending.push_back(Input::Halt(error));
            }
            Err(other) => log.push(format!("refused: {other}")),
        }
    }
    let parts: Vec<Value> =
        processor.parts().iter().map(|p| serde_json::to_value(&**p).unwrap_or_default()).collect();
    let out = json!({
        "outcome": outcome,
        "message": processor.message(),
        "parts": parts,
        "effects": log,
    });
    (processor, out)
}

fn status(part: &Part) -> String {
    match &part.kind {
        PartKind::Tool(tool) => tool.state.status().as_str().to_owned(),
        _ => String::new(),
    }
}

fn ev(value: Value) -> Step {
    Step::Event(serde_json::from_value(value).expect("event json"))
}

fn usage(input: i64, output: i64) -> Value {
    json!({"inputTokens": input, "outputTokens": output, "totalTokens": input + output})
}

fn text_step(text: &[&str]) -> Vec<Step> {
    let mut steps =
        vec![ev(json!({"type": "step-start", "index": 0})), ev(json!({"type": "text-start", "id": "t1"}))];
    for piece in text {
        steps.push(ev(json!({"type": "text-delta", "id": "t1", "text": piece})));
    }
    steps.push(ev(json!({"type": "text-end", "id": "t1"})));
    steps
}

fn tool_call(id: &str, name: &str, input: Value) -> Vec<Step> {
    vec![
        ev(json!({"type": "tool-input-start", "id": id, "name": name})),
        ev(json!({"type": "tool-input-delta", "id": id, "name": name, "text": "{}"})),
        ev(json!({"type": "tool-input-end", "id": id, "name": name})),
        ev(json!({"type": "tool-call", "id": id, "name": name, "input": input})),
    ]
}

fn finish(reason: &str, usage_value: Value) -> Vec<Step> {
    vec![
        ev(json!({"type": "step-finish", "index": 0, "reason": reason, "usage": usage_value})),
        ev(json!({"type": "finish", "reason": reason})),
    ]
}

fn script(parts: Vec<Vec<Step>>) -> Vec<Step> {
    parts.into_iter().flatten().collect()
}

#[test]
fn snapshot_text_only() {
    let out = drive(
        priced_config(),
        false,
        script(vec![text_step(&["Hello", ", world"]), finish("stop", usage(1000, 500))]),
        Answers::default(),
    );
    insta::assert_json_snapshot!("text_only", out);
}

#[test]
fn snapshot_reasoning_and_text() {
    let out = drive(
        priced_config(),
        false,
        script(vec![
            vec![
                ev(json!({"type": "step-start", "index": 0})),
                ev(
                    json!({"type": "reasoning-start", "id": "r1", "providerMetadata": {"anthropic": {"signature": ""}}}),
                ),
                ev(json!({"type": "reasoning-delta", "id": "r1", "text": "Let me think"})),
                ev(
                    json!({"type": "reasoning-delta", "id": "r1", "text": "...", "providerMetadata": {"anthropic": {"signature": "sig"}}}),
                ),
                ev(json!({"type": "reasoning-end", "id": "r1"})),
                ev(json!({"type": "text-start", "id": "t1"})),
                ev(json!({"type": "text-delta", "id": "t1", "text": "Answer"})),
                ev(json!({"type": "text-end", "id": "t1"})),
            ],
            finish("stop", json!({"inputTokens": 100, "outputTokens": 50, "reasoningTokens": 30})),
        ]),
        Answers::default(),
    );
    insta::assert_json_snapshot!("reasoning_and_text", out);
}

#[test]
fn snapshot_reasoning_inside_an_open_text_block() {
    // The events of a Chat stream of reasoning, text, reasoning, text: the text block
    // stays open across the second reasoning, so the step has one text part between two
    // reasoning parts, as OpenCode 1.18.34 stores it.
    let out = drive(
        priced_config(),
        false,
        script(vec![
            vec![
                ev(json!({"type": "step-start", "index": 0})),
                ev(json!({"type": "reasoning-start", "id": "reasoning-0"})),
                ev(json!({"type": "reasoning-delta", "id": "reasoning-0", "text": "First thought. "})),
                ev(json!({"type": "reasoning-end", "id": "reasoning-0"})),
                ev(json!({"type": "text-start", "id": "text-1"})),
                ev(json!({"type": "text-delta", "id": "text-1", "text": "Part one. "})),
                ev(json!({"type": "reasoning-start", "id": "reasoning-2"})),
                ev(json!({"type": "reasoning-delta", "id": "reasoning-2", "text": "Second thought."})),
                ev(json!({"type": "reasoning-end", "id": "reasoning-2"})),
                ev(json!({"type": "text-delta", "id": "text-1", "text": "Part two."})),
                ev(json!({"type": "text-end", "id": "text-1"})),
            ],
            finish("stop", usage(1000, 20)),
        ]),
        Answers::default(),
    );
    let parts: Vec<(&str, &str)> = out["parts"]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|part| Some((part["type"].as_str()?, part["text"].as_str()?)))
        .collect();
    assert_eq!(
        parts,
        [("reasoning", "First thought. "), ("text", "Part one. Part two."), ("reasoning", "Second thought.")]
    );
    insta::assert_json_snapshot!("reasoning_inside_open_text", out);
}

#[test]
fn snapshot_orphan_reasoning_delta_and_open_reasoning_closed_at_step_finish() {
    let out = drive(
        priced_config(),
        false,
        script(vec![
            vec![
                ev(json!({"type": "step-start", "index": 0})),
                ev(json!({"type": "reasoning-delta", "id": "ghost", "text": "dropped"})),
                ev(json!({"type": "reasoning-start", "id": "r1"})),
                ev(json!({"type": "reasoning-start", "id": "r1"})),
                ev(json!({"type": "reasoning-delta", "id": "r1", "text": "kept"})),
            ],
            finish("stop", usage(10, 5)),
        ]),
        Answers::default(),
    );
    insta::assert_json_snapshot!("orphan_reasoning", out);
}

#[test]
fn snapshot_parallel_tool_calls() {
    let out = drive(
        priced_config(),
        false,
        script(vec![
            vec![ev(json!({"type": "step-start", "index": 0}))],
            tool_call("call_a", "read", json!({"filePath": "/work/a.rs"})),
            tool_call("call_b", "grep", json!({"pattern": "fn main"})),
            finish("tool-calls", usage(2000, 80)),
        ]),
        Answers {
            tool_results: vec![
                ("call_a".into(), Ok("fn a() {}".into())),
                ("call_b".into(), Ok("main.rs:1".into())),
            ],
            ..Answers::default()
        },
    );
    insta::assert_json_snapshot!("parallel_tool_calls", out);
}

#[test]
fn snapshot_tool_error() {
    let out = drive(
        priced_config(),
        false,
        script(vec![
            vec![ev(json!({"type": "step-start", "index": 0}))],
            tool_call("call_1", "bash", json!({"command": "false"})),
            finish("tool-calls", usage(500, 20)),
        ]),
        Answers {
            tool_results: vec![("call_1".into(), Err(("exit status 1".into(), None)))],
            ..Answers::default()
        },
    );
    insta::assert_json_snapshot!("tool_error", out);
}

#[test]
fn snapshot_permission_rejected_tool_blocks_the_loop() {
    let out = drive(
        priced_config(),
        false,
        script(vec![
            vec![ev(json!({"type": "step-start", "index": 0}))],
            tool_call("call_1", "bash", json!({"command": "rm -rf /"})),
            finish("tool-calls", usage(500, 20)),
        ]),
        Answers {
            tool_results: vec![(
                "call_1".into(),
                Err((
                    "The user rejected permission to use this specific tool call.".into(),
                    Some(ToolFailure::PermissionRejected),
                )),
            )],
            ..Answers::default()
        },
    );
    insta::assert_json_snapshot!("permission_rejected_blocks", out);
}

fn doom_script() -> Vec<Step> {
    let input = json!({"filePath": "/work/a.rs"});
    script(vec![
        vec![ev(json!({"type": "step-start", "index": 0}))],
        tool_call("call_1", "read", input.clone()),
        tool_call("call_2", "read", input.clone()),
        tool_call("call_3", "read", input),
        finish("tool-calls", usage(900, 30)),
    ])
}

fn doom_results() -> Vec<(String, ToolReply)> {
    vec![
        ("call_1".into(), Ok("same".into())),
        ("call_2".into(), Ok("same".into())),
        ("call_3".into(), Ok("same".into())),
    ]
}

#[test]
fn snapshot_doom_loop_answered_once() {
    let out = drive(
        priced_config(),
        false,
        doom_script(),
        Answers { tool_results: doom_results(), ..Answers::default() },
    );
    insta::assert_json_snapshot!("doom_loop_once", out);
}

#[test]
fn snapshot_doom_loop_answered_always() {
    // "always" continues exactly like "once" inside the processor; the approved rule lives in
    // the permission service. The snapshot pins that the call then runs.
    let out = drive(
        priced_config(),
        false,
        doom_script(),
        Answers { tool_results: doom_results(), ..Answers::default() },
    );
    insta::assert_json_snapshot!("doom_loop_always", out);
}

#[test]
fn snapshot_doom_loop_rejected() {
    let out = drive(
        priced_config(),
        false,
        doom_script(),
        Answers {
            tool_results: doom_results(),
            permission: Err("The user rejected permission to use this specific tool call.".into()),
            ..Answers::default()
        },
    );
    insta::assert_json_snapshot!("doom_loop_rejected", out);
}

#[test]
fn snapshot_overflow_cut() {
    let mut config = priced_config();
    config.limit = ModelLimit { context: 10_000, input: None, output: 2_000 };
    let out = drive(
        config,
        false,
        script(vec![
            text_step(&["big"]),
            vec![ev(
                json!({"type": "step-finish", "index": 0, "reason": "stop", "usage": usage(9_000, 100)}),
            )],
            // Cut: nothing after the triggering step-finish is processed.
            text_step(&["never seen"]),
            vec![ev(json!({"type": "finish", "reason": "stop"}))],
        ]),
        Answers::default(),
    );
    insta::assert_json_snapshot!("overflow_cut", out);
}

/// A step whose tool is still running when the step-finish arrives, then `after`.
fn slow_tool_step(finish_usage: Value, after: Vec<Step>) -> Vec<Step> {
    let mut steps = script(vec![
        vec![ev(json!({"type": "step-start", "index": 0}))],
        tool_call("call_1", "bash", json!({"command": "sleep 1; echo late > late.txt"})),
        finish("tool-calls", finish_usage),
    ]);
    steps.extend(after);
    steps
}

/// The effects logged between the step-finish part and the closing snapshot, in order.
fn effects(out: &Value) -> Vec<String> {
    out["effects"].as_array().into_iter().flatten().filter_map(|e| e.as_str().map(str::to_owned)).collect()
}

#[test]
fn spec_4_1_the_closing_snapshot_waits_for_the_steps_running_tools() {
    let out = drive(
        priced_config(),
        false,
        slow_tool_step(usage(2000, 80), vec![Step::Settle("call_1".into(), "done".into())]),
        Answers::default(),
    );
    let log = effects(&out);
    let completed = log.iter().position(|e| e == "upsert tool completed").expect("the tool completed");
    let closing = log.iter().position(|e| e == "snapshot StepFinish").expect("a closing snapshot");
    assert!(completed < closing, "the tool settles before the closing snapshot: {log:?}");
    assert_eq!(out["outcome"], json!("continue"));
    insta::assert_json_snapshot!("closing_snapshot_after_tools", out);
}

#[test]
fn spec_8_a_tool_settling_after_an_overflowing_step_finish_is_completed() {
    let mut config = priced_config();
    config.limit = ModelLimit { context: 10_000, input: None, output: 2_000 };
    let out = drive(
        config,
        false,
        slow_tool_step(usage(9_000, 100), vec![Step::Settle("call_1".into(), "done late".into())]),
        Answers::default(),
    );
    assert_eq!(out["outcome"], json!("compact"));
    let tool = out["parts"].as_array().into_iter().flatten().find(|p| p["type"] == "tool").cloned();
    let state = tool.map(|t| t["state"].clone()).unwrap_or_default();
    assert_eq!((state["status"].as_str(), state["output"].as_str()), (Some("completed"), Some("done late")));
}

#[test]
fn spec_8_an_interrupt_while_the_step_waits_for_tools_keeps_its_usage() {
    let out = drive(
        priced_config(),
        false,
        slow_tool_step(usage(2000, 80), vec![Step::Interrupt]),
        Answers::default(),
    );
    assert_eq!(out["message"]["tokens"]["input"], json!(2000), "the step's usage is recorded");
    assert_eq!(out["message"]["finish"], json!("tool-calls"));
    assert_eq!(out["message"]["error"]["name"], json!("MessageAbortedError"));
    let log = effects(&out);
    let aborted = log.iter().position(|e| e == "upsert tool error").expect("the unsettled tool is aborted");
    let patch = log.iter().position(|e| e.starts_with("patch against")).expect("cleanup's patch");
    assert!(aborted < patch, "cleanup's patch comes after the grace: {log:?}");
}

#[test]
fn snapshot_abort_mid_tool() {
    let out = drive(
        priced_config(),
        false,
        script(vec![
            text_step(&["Running it"]),
            tool_call("call_1", "bash", json!({"command": "sleep 100"})),
            vec![ev(json!({"type": "tool-input-start", "id": "call_2", "name": "write"}))],
            vec![Step::Interrupt],
        ]),
        Answers::default(),
    );
    insta::assert_json_snapshot!("abort_mid_tool", out);
}

#[test]
fn snapshot_provider_error() {
    let out = drive(
        priced_config(),
        false,
        script(vec![
            vec![ev(json!({"type": "step-start", "index": 0})), ev(json!({"type": "text-start", "id": "t"}))],
            vec![ev(json!({"type": "text-delta", "id": "t", "text": "partial"}))],
            vec![ev(json!({"type": "provider-error", "message": "Overloaded"}))],
        ]),
        Answers::default(),
    );
    insta::assert_json_snapshot!("provider_error", out);
}

#[test]
fn snapshot_step_with_patch() {
    let out = drive(
        priced_config(),
        false,
        script(vec![
            vec![ev(json!({"type": "step-start", "index": 0}))],
            tool_call("call_1", "write", json!({"filePath": "/work/new.rs", "content": "fn x() {}"})),
            finish("tool-calls", usage(1200, 40)),
        ]),
        Answers {
            patch_files: vec!["/work/new.rs".into()],
            tool_results: vec![("call_1".into(), Ok("Wrote file".into()))],
            ..Answers::default()
        },
    );
    insta::assert_json_snapshot!("step_with_patch", out);
}

#[test]
fn spec_13_the_closing_snapshot_is_the_last_step_finishs_when_no_step_started_after_it() {
    let closed = script(vec![text_step(&["done"]), finish("stop", usage(10, 2))]);
    let (processor, out) = drive_keeping(priced_config(), false, closed, Answers::default());
    // tree1 is the start snapshot, tree2 the step's closing one.
    assert_eq!(effects(&out).iter().filter(|e| e.starts_with("snapshot")).count(), 2);
    assert_eq!(processor.closing_snapshot(), Some("tree2"));

    let reopened = script(vec![
        text_step(&["one"]),
        vec![ev(json!({"type": "step-finish", "index": 0, "reason": "stop", "usage": usage(10, 2)}))],
        vec![ev(json!({"type": "step-start", "index": 1}))],
    ]);
    let (processor, _) = drive_keeping(priced_config(), false, reopened, Answers::default());
    assert_eq!(processor.closing_snapshot(), None, "a step started after the last finish");

    let off = script(vec![text_step(&["done"]), finish("stop", usage(10, 2))]);
    let (processor, _) =
        drive_keeping(priced_config(), false, off, Answers { snapshots: false, ..Answers::default() });
    assert_eq!(processor.closing_snapshot(), None, "snapshots off");

    let unfinished = script(vec![vec![ev(json!({"type": "step-start", "index": 0}))]]);
    let (processor, _) = drive_keeping(priced_config(), false, unfinished, Answers::default());
    assert_eq!(processor.closing_snapshot(), None, "the stream ended inside the step");
}

#[test]
fn snapshot_two_steps_accumulate_cost_and_replace_tokens() {
    let out = drive(
        priced_config(),
        false,
        script(vec![
            text_step(&["one"]),
            vec![ev(
                json!({"type": "step-finish", "index": 0, "reason": "tool-calls", "usage": usage(1000, 100)}),
            )],
            text_step(&["two"]),
            vec![ev(json!({"type": "step-finish", "index": 1, "reason": "stop", "usage": usage(3000, 10)}))],
            vec![ev(json!({"type": "finish", "reason": "stop"}))],
        ]),
        Answers::default(),
    );
    insta::assert_json_snapshot!("two_steps", out);
}

#[test]
fn snapshot_summary_refuses_tool_calls() {
    let out = drive(
        priced_config(),
        true,
        script(vec![
            text_step(&["## Goal"]),
            vec![ev(json!({"type": "tool-input-start", "id": "c", "name": "read"}))],
        ]),
        Answers::default(),
    );
    insta::assert_json_snapshot!("summary_refuses_tools", out);
}

#[test]
fn snapshot_provider_executed_tool() {
    let out = drive(
        priced_config(),
        false,
        script(vec![
            vec![
                ev(json!({"type": "step-start", "index": 0})),
                ev(
                    json!({"type": "tool-input-start", "id": "srv_1", "name": "web_search", "providerExecuted": true}),
                ),
                ev(
                    json!({"type": "tool-call", "id": "srv_1", "name": "web_search", "input": {"query": "rust"}, "providerExecuted": true}),
                ),
                ev(
                    json!({"type": "tool-result", "id": "srv_1", "name": "web_search", "result": {"type": "json", "value": {"hits": 3}}, "providerExecuted": true}),
                ),
            ],
            text_step(&["Found it"]),
            finish("stop", json!({"inputTokens": 400, "outputTokens": 20, "cacheReadInputTokens": 100})),
        ]),
        Answers::default(),
    );
    insta::assert_json_snapshot!("provider_executed_tool", out);
}

#[test]
fn snapshot_length_finish_and_snapshots_disabled() {
    let out = drive(
        priced_config(),
        false,
        script(vec![text_step(&["cut off"]), finish("length", usage(100, 4096))]),
        Answers { snapshots: false, ..Answers::default() },
    );
    insta::assert_json_snapshot!("length_no_snapshots", out);
}

#[test]
fn snapshot_stream_ends_with_pending_call() {
    let out = drive(
        priced_config(),
        false,
        script(vec![
            vec![ev(json!({"type": "step-start", "index": 0}))],
            vec![ev(json!({"type": "tool-input-start", "id": "c1", "name": "edit"}))],
            vec![Step::End],
        ]),
        Answers::default(),
    );
    insta::assert_json_snapshot!("pending_call_at_end", out);
}

#[test]
fn snapshot_context_overflow_halt_with_auto_off() {
    let mut config = priced_config();
    config.compaction.auto = Some(false);
    let mut processor = Processor::new(assistant(false), config, Box::new(Lcg(1)));
    let mut log = Vec::new();
    let _ = processor.handle(Input::Snapshot(None), 1);
    let _ = processor.handle(
        Input::Halt(MessageError::ContextOverflowError {
            message: "prompt is too long".into(),
            response_body: None,
        }),
        2,
    );
    while let Some(effect) = processor.poll_effect() {
        log.push(format!("{effect:?}"));
    }
    insta::assert_json_snapshot!(
        "overflow_halt_auto_off",
        json!({"message": processor.message(), "effects": log})
    );
}

#[test]
fn context_overflow_halt_with_auto_on_compacts_without_error() {
    let mut processor = Processor::new(assistant(false), priced_config(), Box::new(Lcg(1)));
    processor.handle(Input::Snapshot(None), 1).expect("snapshot");
    processor
        .handle(
            Input::Halt(MessageError::ContextOverflowError {
                message: "prompt is too long".into(),
                response_body: None,
            }),
            2,
        )
        .expect("halt");
    let effects: Vec<Effect> = std::iter::from_fn(|| processor.poll_effect()).collect();
    assert!(processor.message().error.is_none());
    assert!(!effects.contains(&Effect::SetIdle));
    assert_eq!(effects.last(), Some(&Effect::Done(Outcome::Compact)));
}

#[test]
fn inputs_that_do_not_fit_are_refused_without_change() {
    let mut processor = Processor::new(assistant(false), priced_config(), Box::new(Lcg(1)));
    // Waiting for the start snapshot: an event is refused.
    let refused =
        processor.handle(Input::Event(LlmEvent::Finish { reason: FinishReason::Stop, usage: None }), 1);
    assert!(matches!(refused, Err(ProcessorError::Unexpected { .. })));
    assert!(processor.handle(Input::Patch(vec![]), 1).is_err());
    assert!(processor.handle(Input::PermissionReply(Ok(())), 1).is_err());
    processor.handle(Input::Snapshot(Some("tree".into())), 2).expect("start snapshot");
    // A result for an unknown call is a documented no-op.
    let result = LlmEvent::ToolResult {
        id: "nobody".into(),
        name: "read".into(),
        result: ToolResultValue { kind: ToolResultKind::Text, value: json!("x") },
        provider_executed: false,
    };
    processor.handle(Input::Event(result), 3).expect("no-op");
    assert!(processor.parts().is_empty());
}

/// The processor after a step-start and one `read` call, ready for its result.
fn with_open_call() -> Processor {
    let mut processor = Processor::new(assistant(false), priced_config(), Box::new(Lcg(1)));
    processor.handle(Input::Snapshot(Some("tree".into())), 1).expect("start snapshot");
    processor.handle(Input::Event(LlmEvent::StepStart { index: 0 }), 2).expect("step start");
    while processor.poll_effect().is_some() {}
    let call = LlmEvent::ToolCall {
        id: "c1".into(),
        name: "read".into(),
        input: json!({"path": "a"}),
        provider_executed: false,
        provider_metadata: None,
    };
    processor.handle(Input::Event(call), 3).expect("tool call");
    while processor.poll_effect().is_some() {}
    processor
}

#[test]
fn a_typed_settlement_records_what_the_equivalent_event_records() {
    let mut metadata = session_core::JsonObject::new();
    metadata.insert("lines".into(), json!(3));
    let mut by_event = with_open_call();
    let event = LlmEvent::ToolResult {
        id: "c1".into(),
        name: "read".into(),
        result: ToolResultValue {
            kind: ToolResultKind::Json,
            value: json!({"output": "three lines", "title": "a", "metadata": {"lines": 3}}),
        },
        provider_executed: false,
    };
    by_event.handle(Input::Event(event), 4).expect("result event");
    let mut typed = with_open_call();
    let output = session_core::ToolOutput {
        title: "a".into(),
        output: "three lines".into(),
        metadata,
        attachments: None,
    };
    typed
        .handle(Input::ToolSettled(ToolSettlement::Completed { call_id: "c1".into(), output }), 4)
        .expect("typed");
    assert_eq!(typed.parts(), by_event.parts());
    assert_eq!(status(&typed.parts()[typed.parts().len() - 1]), "completed");

    let mut failed = with_open_call();
    let settlement =
        ToolSettlement::Failed { call_id: "c1".into(), message: "no such file".into(), failure: None };
    failed.handle(Input::ToolSettled(settlement), 4).expect("typed failure");
    assert_eq!(status(&failed.parts()[failed.parts().len() - 1]), "error");
}

/// Open calls are tracked by the id their part holds: listed in part order, settled by id,
/// and an id used again after its call settled starts a new part.
#[test]
fn open_calls_are_listed_in_part_order_and_an_id_can_be_used_again() {
    let mut processor = with_open_call();
    let start =
        |id: &str| LlmEvent::ToolInputStart { id: id.into(), name: "read".into(), provider_executed: false };
    let result = |id: &str| LlmEvent::ToolResult {
        id: id.into(),
        name: "read".into(),
        result: ToolResultValue { kind: ToolResultKind::Text, value: json!("done") },
        provider_executed: false,
    };
    for id in ["c2", "c3"] {
        processor.handle(Input::Event(start(id)), 4).expect("input start");
    }
    assert_eq!(processor.open_calls(), vec!["c1", "c2", "c3"]);
    let call = LlmEvent::ToolCall {
        id: "c2".into(),
        name: "read".into(),
        input: json!({"path": "b"}),
        provider_executed: false,
        provider_metadata: None,
    };
    processor.handle(Input::Event(call), 5).expect("tool call");
    processor.handle(Input::Event(result("c2")), 5).expect("result");
    assert_eq!(processor.open_calls(), vec!["c1", "c3"]);
    // The settled call's part stays as it is; its id starts a new pending part.
    processor.handle(Input::Event(start("c2")), 6).expect("input start again");
    assert_eq!(processor.open_calls(), vec!["c1", "c3", "c2"]);
    let statuses: Vec<(String, String)> = processor
        .parts()
        .iter()
        .filter_map(|part| part.as_tool().map(|tool| (tool.call_id.clone(), status(part))))
        .collect();
    let expected = [("c1", "running"), ("c2", "completed"), ("c3", "pending"), ("c2", "pending")];
    assert_eq!(statuses, expected.map(|(id, status)| (id.to_owned(), status.to_owned())));
    // A result for an unknown id changes nothing.
    let before = processor.parts().to_vec();
    processor.handle(Input::Event(result("c9")), 7).expect("unknown result");
    assert_eq!(processor.parts(), before.as_slice());
}

// ---- properties -------------------------------------------------------------------------

fn arb_id() -> impl Strategy<Value = String> {
    prop_oneof![Just("a".to_owned()), Just("b".to_owned()), Just("c".to_owned())]
}

fn arb_event() -> impl Strategy<Value = LlmEvent> {
    let name = prop_oneof![Just("read".to_owned()), Just("bash".to_owned())];
    prop_oneof![
        (0u32..3).prop_map(|index| LlmEvent::StepStart { index }),
        arb_id().prop_map(|id| LlmEvent::TextStart { id, provider_metadata: None }),
        (arb_id(), ".{0,4}").prop_map(|(id, text)| LlmEvent::TextDelta { id, text, provider_metadata: None }),
        arb_id().prop_map(|id| LlmEvent::TextEnd { id, provider_metadata: None }),
        arb_id().prop_map(|id| LlmEvent::ReasoningStart { id, provider_metadata: None }),
        (arb_id(), ".{0,4}").prop_map(|(id, text)| LlmEvent::ReasoningDelta {
            id,
            text,
            provider_metadata: None
        }),
        arb_id().prop_map(|id| LlmEvent::ReasoningEnd { id, provider_metadata: None }),
        (arb_id(), name.clone(), any::<bool>()).prop_map(|(id, name, provider_executed)| {
            LlmEvent::ToolInputStart { id, name, provider_executed }
        }),
        (arb_id(), name.clone()).prop_map(|(id, name)| LlmEvent::ToolInputEnd { id, name }),
        (arb_id(), name.clone(), prop_oneof![Just(json!({"p": 1})), Just(json!([1])), Just(Value::Null)])
            .prop_map(|(id, name, input)| LlmEvent::ToolCall {
                id,
                name,
                input,
                provider_executed: false,
                provider_metadata: None
            }),
        (arb_id(), name.clone()).prop_map(|(id, name)| LlmEvent::ToolResult {
            id,
            name,
            result: ToolResultValue { kind: ToolResultKind::Text, value: json!("ok") },
            provider_executed: false,
        }),
        (arb_id(), name).prop_map(|(id, name)| LlmEvent::ToolError {
            id,
            name,
            message: "bad".into(),
            error: None
        }),
        (0u32..3, 0i64..50_000).prop_map(|(index, input)| LlmEvent::StepFinish {
            index,
            reason: FinishReason::ToolCalls,
            usage: Some(Usage { input_tokens: Some(input), output_tokens: Some(10), ..Usage::default() }),
            provider_metadata: None,
        }),
        Just(LlmEvent::Finish { reason: FinishReason::Stop, usage: None }),
        Just(LlmEvent::ProviderError { message: "boom".into(), retryable: None }),
    ]
}

#[derive(Debug, Clone)]
enum Action {
    Event(LlmEvent),
    Interrupt,
    Retry,
}

fn arb_action() -> impl Strategy<Value = Action> {
    prop_oneof![
        20 => arb_event().prop_map(Action::Event),
        1 => Just(Action::Interrupt),
        1 => Just(Action::Retry),
    ]
}

/// Answers every request so the processor keeps taking input; returns the outcome if done.
fn settle(processor: &mut Processor, now: u64, permission_ok: bool) -> Option<Outcome> {
    let mut outcome = None;
    for _ in 0..10_000 {
        let Some(effect) = processor.poll_effect() else { break };
        let input = match effect {
            Effect::TakeSnapshot(_) => Input::Snapshot(Some("tree".into())),
            Effect::ComputePatch { .. } => Input::Patch(vec!["/f".into()]),
            Effect::AskPermission { .. } => {
                Input::PermissionReply(if permission_ok { Ok(()) } else { Err("rejected".into()) })
            }
            Effect::AwaitToolCalls { .. } => Input::GraceElapsed,
            Effect::Done(result) => {
                outcome = Some(result);
                continue;
            }
            _ => continue,
        };
        if let Err(ProcessorError::Stream(error)) = processor.handle(input, now) {
            let _ = processor.handle(Input::Halt(error), now);
        }
    }
    outcome
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, ..ProptestConfig::default() })]

    #[test]
    fn never_panics_and_leaves_no_open_call(actions in proptest::collection::vec(arb_action(), 0..60), permission_ok in any::<bool>(), small_context in any::<bool>()) {
        let mut config = priced_config();
        if small_context {
            config.limit = ModelLimit { context: 40_000, input: None, output: 8_000 };
        }
        let mut processor = Processor::new(assistant(false), config, Box::new(Lcg(9)));
        let mut now = 10;
        let mut outcome = settle(&mut processor, now, permission_ok);
        for action in actions {
            if outcome.is_some() {
                break;
            }
            now += 1;
            let result = match action {
                Action::Event(event) => processor.handle(Input::Event(event), now),
                Action::Interrupt => processor.handle(Input::Interrupt, now),
                Action::Retry => {
                    processor.begin_attempt();
                    Ok(())
                }
            };
            if let Err(ProcessorError::Stream(error)) = result {
                let _ = processor.handle(Input::Halt(error), now);
            }
            outcome = settle(&mut processor, now, permission_ok);
        }
        if outcome.is_none() {
            now += 1;
            let _ = processor.handle(Input::EndOfStream, now);
            outcome = settle(&mut processor, now, permission_ok);
        }
        prop_assert!(outcome.is_some(), "processing must end");
        prop_assert!(processor.message().time.completed.is_some());
        for part in processor.parts() {
            if let PartKind::Tool(tool) = &part.kind {
                let open = matches!(tool.state.status(), ToolStatus::Pending | ToolStatus::Running);
                prop_assert!(!open, "part {} left {:?}", part.id, tool.state.status());
            }
        }
        let ids: Vec<&str> = processor.parts().iter().map(|p| p.id.as_str()).collect();
        prop_assert!(ids.windows(2).all(|w| w[0] < w[1]), "part ids must ascend");
        prop_assert!(processor.message().cost >= Decimal::ZERO);
    }
}
