//! Throughput of the processor over one million events: 80% text deltas, 20% tool-call
//! lifecycle events (input start, input end, call, result), effects drained as a driver would.

#![expect(missing_docs, reason = "criterion_group! generates public functions that cannot carry docs")]

use criterion::{BatchSize, Criterion, Throughput, criterion_group, criterion_main};
use rust_decimal::Decimal;
use serde_json::json;
use session_core::{
    AssistantMessage, AssistantTime, Entropy, FinishReason, LlmEvent, MessageId, MessagePath, SessionId,
    TokenUsage, ToolResultKind, ToolResultValue, Usage, processor::Effect, processor::Input,
    processor::Processor, processor::ProcessorConfig,
};

const EVENTS: usize = 1_000_000;

struct Lcg(u64);

impl Entropy for Lcg {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
        self.0 >> 17
    }
}

fn message() -> AssistantMessage {
    AssistantMessage {
        id: MessageId::new_unchecked("msg_bench"),
        session_id: SessionId::new_unchecked("ses_bench"),
        time: AssistantTime { created: 0, completed: None },
        error: None,
        parent_id: MessageId::new_unchecked("msg_user"),
        model_id: "m".into(),
        provider_id: "p".into(),
        mode: "build".into(),
        agent: "build".into(),
        path: MessagePath::default(),
        summary: None,
        cost: Decimal::ZERO,
        tokens: TokenUsage::default(),
        structured: None,
        variant: None,
        finish: None,
    }
}

/// Blocks of 20 events: 16 text deltas (inside an open text part) and one tool lifecycle.
fn events() -> Vec<LlmEvent> {
    let mut events = Vec::with_capacity(EVENTS + 8);
    events.push(LlmEvent::StepStart { index: 0 });
    let mut call = 0u64;
    while events.len() < EVENTS {
        events.push(LlmEvent::TextStart { id: "t".into(), provider_metadata: None });
        for _ in 0..15 {
            events.push(LlmEvent::TextDelta {
                id: "t".into(),
                text: "token ".into(),
                provider_metadata: None,
            });
        }
        events.push(LlmEvent::TextEnd { id: "t".into(), provider_metadata: None });
        call += 1;
        let id = format!("call_{call}");
        events.push(LlmEvent::ToolInputStart {
            id: id.clone(),
            name: "read".into(),
            provider_executed: false,
        });
        events.push(LlmEvent::ToolCall {
            id: id.clone(),
            name: "read".into(),
            input: json!({"filePath": format!("/work/{call}.rs")}),
            provider_executed: false,
            provider_metadata: None,
        });
        events.push(LlmEvent::ToolResult {
            id,
            name: "read".into(),
            result: ToolResultValue { kind: ToolResultKind::Text, value: json!("contents") },
            provider_executed: false,
        });
    }
    events.truncate(EVENTS - 2);
    events.push(LlmEvent::StepFinish {
        index: 0,
        reason: FinishReason::Stop,
        usage: Some(Usage { input_tokens: Some(1000), output_tokens: Some(100), ..Usage::default() }),
        provider_metadata: None,
    });
    events.push(LlmEvent::Finish { reason: FinishReason::Stop, usage: None });
    events
}

fn run(events: Vec<LlmEvent>) -> usize {
    let mut processor = Processor::new(message(), ProcessorConfig::default(), Box::new(Lcg(7)));
    let mut effects = 0usize;
    let answer = |processor: &mut Processor, effects: &mut usize| {
        while let Some(effect) = processor.poll_effect() {
            *effects += 1;
            let reply = match effect {
                Effect::TakeSnapshot(_) => Input::Snapshot(None),
                Effect::ComputePatch { .. } => Input::Patch(Vec::new()),
                Effect::AwaitToolCalls { .. } => Input::GraceElapsed,
                _ => continue,
            };
            let _ = processor.handle(reply, 1);
        }
    };
    answer(&mut processor, &mut effects);
    for event in events {
        let _ = processor.handle(Input::Event(event), 1);
        answer(&mut processor, &mut effects);
    }
    let _ = processor.handle(Input::EndOfStream, 2);
    answer(&mut processor, &mut effects);
    effects
}

fn bench(c: &mut Criterion) {
    let events = events();
    let mut group = c.benchmark_group("processor");
    group.throughput(Throughput::Elements(events.len() as u64));
    group.sample_size(10);
    group.bench_function("1M events, 80% text deltas", |b| {
        b.iter_batched(|| events.clone(), run, BatchSize::LargeInput);
    });
    group.finish();
}

criterion_group!(benches, bench);
criterion_main!(benches);
