//! Drives the processor over a short scripted stream, answering its requests as a driver
//! would, and prints the parts it made as JSON.
//!
//! Run with `cargo run -p session-core --example process_events`.

use rust_decimal::Decimal;
use serde_json::json;
use session_core::{
    AssistantMessage, AssistantTime, LlmEvent, MessageId, MessagePath, ModelCost, SessionId, SplitMix,
    TokenUsage, ToolResultKind, ToolResultValue, processor::Effect, processor::Input, processor::Processor,
    processor::ProcessorConfig,
};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let message = AssistantMessage {
        id: MessageId::new_unchecked("msg_example"),
        session_id: SessionId::new_unchecked("ses_example"),
        time: AssistantTime { created: 0, completed: None },
        error: None,
        parent_id: MessageId::new_unchecked("msg_user"),
        model_id: "claude-sonnet-4-5".into(),
        provider_id: "anthropic".into(),
        mode: "build".into(),
        agent: "build".into(),
        path: MessagePath { cwd: "/work".into(), root: "/work".into() },
        summary: None,
        cost: Decimal::ZERO,
        tokens: TokenUsage::default(),
        structured: None,
        variant: None,
        finish: None,
    };
    let cost: ModelCost =
        serde_json::from_value(json!({"input": 3, "output": 15, "cache": {"read": 0.3, "write": 3.75}}))?;
    let config = ProcessorConfig { cost, ..ProcessorConfig::default() };
    let mut processor = Processor::new(message, config, Box::new(SplitMix::new(1)));

    let events: Vec<LlmEvent> = serde_json::from_value(json!([
        {"type": "step-start", "index": 0},
        {"type": "text-start", "id": "t"},
        {"type": "text-delta", "id": "t", "text": "Reading the file."},
        {"type": "text-end", "id": "t"},
        {"type": "tool-call", "id": "call_1", "name": "read", "input": {"filePath": "/work/README.md"}},
        {"type": "step-finish", "index": 0, "reason": "tool-calls",
         "usage": {"inputTokens": 1200, "outputTokens": 40, "totalTokens": 1240}},
        {"type": "finish", "reason": "tool-calls"}
    ]))?;

    let mut now = 1_000;
    let mut queue: std::collections::VecDeque<Input> = events.into_iter().map(Input::Event).collect();
    queue.push_back(Input::EndOfStream);
    loop {
        // Carry out effects first: answers go to the front of the queue.
        while let Some(effect) = processor.poll_effect() {
            match effect {
                Effect::TakeSnapshot(_) => queue.push_front(Input::Snapshot(None)),
                Effect::ExecuteTool { call_id, tool, .. } => {
                    queue.push_front(Input::Event(LlmEvent::ToolResult {
                        id: call_id,
                        name: tool,
                        result: ToolResultValue {
                            kind: ToolResultKind::Text,
                            value: json!("# session runtime"),
                        },
                        provider_executed: false,
                    }))
                }
                Effect::AwaitToolCalls { .. } => queue.push_front(Input::GraceElapsed),
                Effect::Done(outcome) => println!("outcome: {outcome:?}"),
                _ => {}
            }
        }
        let Some(input) = queue.pop_front() else { break };
        now += 1;
        if let Err(error) = processor.handle(input, now) {
            println!("refused: {error}");
        }
    }
    // The processor shares its parts with the effects (`Arc<Part>`); print the parts themselves.
    let parts: Vec<&session_core::message::Part> = processor.parts().iter().map(|part| &**part).collect();
    println!("{}", serde_json::to_string_pretty(&parts)?);
    println!("cost: {} USD", processor.message().cost);
    Ok(())
}
