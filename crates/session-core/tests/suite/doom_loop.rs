//! The doom-loop check over the current message's parts.

use pretty_assertions::assert_eq;
use rust_decimal::Decimal;
use serde_json::{Value, json};
use session_core::{
    CompletedTime, FinishReason, JsonObject, MessageId, Part, PartId, PartKind, SessionId, StepFinishPart,
    TextPart, TokenUsage, ToolPart, ToolState, message::normalize_tool_input,
    permission::DOOM_LOOP_THRESHOLD, permission::check_doom_loop, permission::doom_loop_request,
};

fn part(index: usize, kind: PartKind) -> Part {
    Part {
        id: PartId::new_unchecked(format!("prt_{index:04}")),
        session_id: SessionId::new_unchecked("ses_1"),
        message_id: MessageId::new_unchecked("msg_1"),
        kind,
    }
}

fn object(value: Value) -> JsonObject {
    normalize_tool_input(value)
}

fn completed(tool: &str, input: Value) -> PartKind {
    PartKind::Tool(ToolPart {
        call_id: "c".into(),
        tool: tool.into(),
        state: ToolState::Completed {
            input: object(input),
            output: String::new(),
            title: String::new(),
            metadata: JsonObject::new(),
            time: CompletedTime { start: 1, end: 2, compacted: None },
            attachments: None,
        },
        metadata: None,
    })
}

fn running(tool: &str, input: Value) -> PartKind {
    let mut state = ToolState::pending();
    state.start(object(input), 1).unwrap_or_else(|e| panic!("{e}"));
    PartKind::Tool(ToolPart { call_id: "c".into(), tool: tool.into(), state, metadata: None })
}

fn pending(tool: &str) -> PartKind {
    PartKind::Tool(ToolPart {
        call_id: "c".into(),
        tool: tool.into(),
        state: ToolState::pending(),
        metadata: None,
    })
}

fn parts(kinds: Vec<PartKind>) -> Vec<Part> {
    kinds.into_iter().enumerate().map(|(i, k)| part(i, k)).collect()
}

#[test]
fn three_identical_calls_trigger_with_the_doom_loop_request() {
    let input = json!({"filePath": "/a.ts"});
    let message = parts(vec![
        completed("read", input.clone()),
        completed("read", input.clone()),
        running("read", input.clone()),
    ]);
    let request = check_doom_loop(&message, "read", &object(input.clone())).unwrap();
    assert_eq!(
        serde_json::to_value(&request).unwrap(),
        json!({"permission": "doom_loop", "patterns": ["read"], "always": ["read"],
               "metadata": {"tool": "read", "input": input}})
    );
    assert_eq!(request, doom_loop_request("read", &object(json!({"filePath": "/a.ts"}))));
    assert_eq!(DOOM_LOOP_THRESHOLD, 3);
}

#[test]
fn streak_breakers_and_non_matches() {
    let input = json!({"command": "ls"});
    let call = object(input.clone());
    let text = PartKind::Text(TextPart::default());
    let step_finish = PartKind::StepFinish(StepFinishPart {
        reason: FinishReason::ToolCalls,
        snapshot: None,
        cost: Decimal::ZERO,
        tokens: TokenUsage::default(),
    });
    let table: Vec<(&str, Vec<PartKind>)> = vec![
        ("two calls", vec![completed("bash", input.clone()), running("bash", input.clone())]),
        (
            "text between",
            vec![
                completed("bash", input.clone()),
                text,
                completed("bash", input.clone()),
                running("bash", input.clone()),
            ],
        ),
        (
            "step-finish last",
            vec![completed("bash", input.clone()), completed("bash", input.clone()), step_finish],
        ),
        (
            "pending one",
            vec![pending("bash"), completed("bash", input.clone()), running("bash", input.clone())],
        ),
        (
            "other tool",
            vec![
                completed("read", input.clone()),
                completed("bash", input.clone()),
                running("bash", input.clone()),
            ],
        ),
        (
            "other input",
            vec![
                completed("bash", json!({"command": "pwd"})),
                completed("bash", input.clone()),
                running("bash", input.clone()),
            ],
        ),
        (
            "key order differs",
            vec![
                completed("bash", json!({"command": "ls", "timeout": 5})),
                completed("bash", json!({"timeout": 5, "command": "ls"})),
                running("bash", json!({"timeout": 5, "command": "ls"})),
            ],
        ),
    ];
    for (name, kinds) in table {
        let call = if name == "key order differs" {
            object(serde_json::from_str(r#"{"timeout": 5, "command": "ls"}"#).unwrap())
        } else {
            call.clone()
        };
        assert_eq!(check_doom_loop(&parts(kinds), "bash", &call), None, "{name}");
    }
}

#[test]
fn numbers_compare_as_javascript_prints_them() {
    let one: Value = serde_json::from_str(r#"{"n": 1}"#).unwrap();
    let one_point_zero: Value = serde_json::from_str(r#"{"n": 1.0}"#).unwrap();
    let message = parts(vec![
        completed("x", one.clone()),
        completed("x", one_point_zero.clone()),
        running("x", one_point_zero.clone()),
    ]);
    assert!(check_doom_loop(&message, "x", &object(one)).is_some());
}

#[test]
fn only_the_last_three_parts_count() {
    let input = json!({"a": 1});
    let message = parts(vec![
        PartKind::Text(TextPart::default()),
        completed("other", json!({})),
        completed("x", input.clone()),
        completed("x", input.clone()),
        running("x", input.clone()),
    ]);
    assert!(check_doom_loop(&message, "x", &object(input)).is_some());
    assert_eq!(check_doom_loop(&[], "x", &JsonObject::new()), None);
}
