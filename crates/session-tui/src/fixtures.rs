//! Sample sessions built from the runtime's types: the frames in the snapshot tests, the
//! frame-cost bench's 10,000-line transcript and the example use them.

use std::path::PathBuf;

use rust_decimal::Decimal;
use serde_json::{Map, Value, json};
use session_core::{
    AssistantMessage, AssistantTime, CompletedTime, CreatedTime, Message, MessageId, MessagePath,
    MessageWithParts, ModelRef, Part, PartId, PartKind, PatchPart, ReasoningPart, RunningTime, SessionId,
    StepFinishPart, TextPart, TokenUsage, ToolPart, ToolState, UserMessage,
};

/// The workspace the samples' paths are in.
pub const ROOT: &str = "/work/project";
/// The time the samples are shown at (epoch ms).
pub const NOW: u64 = 1_767_000_000_000;

/// The samples' session.
pub fn session_id() -> SessionId {
    SessionId::new_unchecked("ses_sample")
}

/// A message id sorting by `n`.
pub fn message_id(n: usize) -> MessageId {
    MessageId::new_unchecked(format!("msg_{n:06}"))
}

/// A part id sorting by `message` then `n`.
pub fn part_id(message: usize, n: usize) -> PartId {
    PartId::new_unchecked(format!("prt_{message:06}_{n:03}"))
}

/// A part of message `message`.
pub fn part(message: usize, n: usize, kind: PartKind) -> Part {
    Part { id: part_id(message, n), session_id: session_id(), message_id: message_id(message), kind }
}

/// A user message with one text part.
pub fn user(n: usize, text: &str) -> MessageWithParts {
    let info = Message::User(UserMessage {
        id: message_id(n),
        session_id: session_id(),
        time: CreatedTime { created: NOW - 60_000 },
        format: None,
        summary: None,
        agent: "build".to_owned(),
        model: ModelRef { provider_id: "mock".to_owned(), model_id: "m".to_owned(), variant: None },
        system: None,
        tools: None,
    });
    MessageWithParts { info, parts: vec![part(n, 0, text_kind(text))] }
}

/// The assistant message answering user message `parent`, with `cost`.
pub fn assistant_info(n: usize, parent: usize, cost: Decimal) -> AssistantMessage {
    AssistantMessage {
        id: message_id(n),
        session_id: session_id(),
        time: AssistantTime { created: NOW - 50_000, completed: None },
        error: None,
        parent_id: message_id(parent),
        model_id: "m".to_owned(),
        provider_id: "mock".to_owned(),
        mode: "build".to_owned(),
        agent: "build".to_owned(),
        path: MessagePath { cwd: ROOT.to_owned(), root: ROOT.to_owned() },
        summary: None,
        cost,
        tokens: TokenUsage::default(),
        structured: None,
        variant: None,
        finish: None,
    }
}

/// A text part's kind.
pub fn text_kind(text: &str) -> PartKind {
    PartKind::Text(TextPart { text: text.to_owned(), ..TextPart::default() })
}

/// A reasoning part's kind.
pub fn reasoning_kind(text: &str) -> PartKind {
    PartKind::Reasoning(ReasoningPart { text: text.to_owned(), ..ReasoningPart::default() })
}

fn object(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// A bash call running since `started`.
pub fn running_bash(command: &str, started: u64) -> PartKind {
    PartKind::Tool(ToolPart {
        call_id: "call_run".to_owned(),
        tool: "bash".to_owned(),
        state: ToolState::Running {
            input: object(json!({"command": command})),
            title: None,
            metadata: None,
            time: RunningTime { start: started },
        },
        metadata: None,
    })
}

/// A completed call of `tool` with `input`, `output` and `metadata`.
pub fn completed(tool: &str, input: Value, output: &str, metadata: Value) -> PartKind {
    PartKind::Tool(ToolPart {
        call_id: format!("call_{tool}"),
        tool: tool.to_owned(),
        state: ToolState::Completed {
            input: object(input),
            output: output.to_owned(),
            title: String::new(),
            metadata: object(metadata),
            time: CompletedTime { start: NOW - 40_000, end: NOW - 38_800, compacted: None },
            attachments: None,
        },
        metadata: None,
    })
}

/// An edit of `src/lib.rs` with its diff.
pub fn edit_with_diff() -> PartKind {
    let diff = "Index: src/lib.rs\n===================================================================\n--- src/lib.rs\n+++ src/lib.rs\n@@ -1,3 +1,3 @@\n fn answer() -> u32 {\n-    41\n+    42\n }\n";
    completed(
        "edit",
        json!({"filePath": format!("{ROOT}/src/lib.rs"), "oldString": "41", "newString": "42"}),
        "Edit applied successfully.",
        json!({"diff": diff}),
    )
}

/// A step's settlement with `context` tokens read.
pub fn step_finish(context: u64) -> PartKind {
    PartKind::StepFinish(StepFinishPart {
        reason: session_core::FinishReason::Stop,
        snapshot: None,
        cost: Decimal::new(12, 4),
        tokens: TokenUsage { input: context, output: 120, ..TokenUsage::default() },
    })
}

/// A patch part naming `files` (relative to [`ROOT`]).
pub fn patch(files: &[&str]) -> PartKind {
    PartKind::Patch(PatchPart {
        hash: "abc123".to_owned(),
        files: files.iter().map(|f| format!("{ROOT}/{f}")).collect(),
    })
}

/// The markdown answer of the samples: a heading, a list, code and a table.
pub const ANSWER: &str = "## The fix\n\nThe function returned **41**; it now returns `42`:\n\n- changed `src/lib.rs`\n- ran the tests\n\n```rust\nfn answer() -> u32 {\n    42\n}\n```\n\n| test | result |\n|------|--------|\n| unit | ok |\n";

/// A session: a question, an answer with reasoning, a finished read, an edit with its diff, a
/// patch summary and markdown.
pub fn sample_history() -> Vec<MessageWithParts> {
    let mut answer = assistant_info(2, 1, Decimal::new(123, 4));
    answer.finish = Some(session_core::FinishReason::Stop);
    vec![
        user(1, "Fix the answer in src/lib.rs"),
        MessageWithParts {
            info: Message::Assistant(answer),
            parts: vec![
                part(2, 0, reasoning_kind("The test expects 42.\nLook at the function first.")),
                part(
                    2,
                    1,
                    completed(
                        "read",
                        json!({"filePath": format!("{ROOT}/src/lib.rs")}),
                        "fn answer() -> u32 {\n    41\n}",
                        json!({}),
                    ),
                ),
                part(2, 2, edit_with_diff()),
                part(2, 3, patch(&["src/lib.rs"])),
                part(2, 4, text_kind(ANSWER)),
                part(2, 5, step_finish(9_600)),
            ],
        },
    ]
}

/// A transcript of about `lines` rows: turns of a question and a long markdown answer.
pub fn long_history(lines: usize) -> Vec<MessageWithParts> {
    let mut history = Vec::new();
    let per_answer = 100;
    for turn in 0..lines.div_ceil(per_answer) {
        let (u, a) = (turn * 2 + 1, turn * 2 + 2);
        history.push(user(u, &format!("Question {turn}: explain the module")));
        let mut text = format!("## Part {turn}\n\n");
        for i in 0..per_answer / 2 {
            text.push_str(&format!("- item {i}: the function `f{i}` reads the file and returns its lines\n"));
        }
        text.push_str("\n```rust\n");
        for i in 0..per_answer / 2 - 6 {
            text.push_str(&format!("let value_{i} = compute({i}) + offset;\n"));
        }
        text.push_str("```\n");
        history.push(MessageWithParts {
            info: Message::Assistant(assistant_info(a, u, Decimal::ZERO)),
            parts: vec![part(a, 0, text_kind(&text)), part(a, 1, step_finish(1_000))],
        });
    }
    history
}

/// The samples' workspace.
pub fn root() -> PathBuf {
    PathBuf::from(ROOT)
}
