//! `replay` over every recorded stream: one insta snapshot of the replay JSON per fixture.

use std::path::{Path, PathBuf};

use serde_json::Value;
use session_cli::{ReplayModel, replay};
use session_core::{Entropy, ModelCost, PartKind, ToolStatus, overflow::ModelLimit};
use session_llm::Api;

struct Lcg(u64);

impl Entropy for Lcg {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        self.0 >> 17
    }
}

fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../session-llm/tests/fixtures/providers")
}

fn api_of(dir: &str) -> Option<Api> {
    match dir {
        "openai-chat" => Some(Api::OpenAiChat),
        "openai-responses" => Some(Api::OpenAiResponses),
        "anthropic" => Some(Api::Anthropic),
        "gemini" => Some(Api::Gemini),
        _ => None,
    }
}

fn run(api: Api, body: &[u8], model: Option<&ReplayModel>) -> session_cli::ReplayOutput {
    let mut now = 1_767_225_600_000u64;
    let mut clock = move || {
        now += 1;
        now
    };
    replay(api, body, model, &mut clock, Box::new(Lcg(11)))
}

#[test]
fn every_stream_fixture_replays_to_a_stable_document() {
    let mut count = 0;
    for dir in ["openai-chat", "openai-responses", "anthropic", "gemini"] {
        let api = api_of(dir).expect("known dir");
        let mut files: Vec<PathBuf> = std::fs::read_dir(fixtures().join(dir))
            .expect("fixture dir")
            .map(|entry| entry.expect("entry").path())
            .filter(|path| path.extension().is_some_and(|ext| ext == "sse"))
            .collect();
        files.sort();
        for file in files {
            let body = std::fs::read(&file).expect("fixture");
            let output = run(api, &body, None);
            let stem = file.file_stem().and_then(|s| s.to_str()).expect("stem").to_owned();
            // After replay nothing may be left open: cleanup ran with no grace.
            for part in &output.parts {
                if let PartKind::Tool(tool) = &part.kind {
                    assert!(
                        !matches!(tool.state.status(), ToolStatus::Pending | ToolStatus::Running),
                        "{dir}/{stem}: tool part left open"
                    );
                }
            }
            insta::assert_json_snapshot!(format!("replay__{dir}__{stem}"), output.to_json());
            count += 1;
        }
    }
    assert!(count >= 30, "expected every fixture, saw {count}");
}

#[test]
fn a_known_model_prices_the_steps() {
    let body = std::fs::read(fixtures().join("anthropic/prompt-cache-read-write-server-tools.sse"))
        .expect("fixture");
    let cost: ModelCost = serde_json::from_value(
        serde_json::json!({"input": 3, "output": 15, "cache": {"read": 0.3, "write": 3.75}}),
    )
    .expect("cost");
    let model = ReplayModel {
        provider_id: "anthropic".into(),
        model_id: "claude-sonnet-4-5".into(),
        cost,
        limit: ModelLimit { context: 200_000, input: None, output: 64_000 },
    };
    let output = run(Api::Anthropic, &body, Some(&model));
    let json = output.to_json();
    let cost = json["message"]["cost"].as_f64().expect("cost number");
    assert!(cost > 0.0, "priced replay must cost something: {json}");
    let unpriced = run(Api::Anthropic, &body, None);
    assert_eq!(unpriced.to_json()["message"]["cost"], Value::from(0));
}

#[test]
fn a_cut_stream_is_an_error_and_a_length_finish_is_not() {
    let text = std::fs::read(fixtures().join("openai-chat/text-gpt4o.sse")).expect("fixture");
    let cut = &text[..text.len() / 2];
    let output = run(Api::OpenAiChat, cut, None);
    assert!(output.failed());
    let error = output.error.clone().expect("error");
    assert!(error.message.contains("stream ended before"), "{error:?}");

    let length = std::fs::read(fixtures().join("openai-chat/finish-length-gpt4o.sse")).expect("fixture");
    let output = run(Api::OpenAiChat, &length, None);
    assert!(!output.failed(), "{:?}", output.error);
    assert_eq!(output.to_json()["message"]["finish"], "length");
}

#[test]
fn text_rendering_marks_tools_as_not_executed() {
    let body = std::fs::read(fixtures().join("openai-chat/tool-calls-parallel-gpt4o.sse")).expect("fixture");
    let text = run(Api::OpenAiChat, &body, None).render_text();
    assert!(text.contains("not executed"), "{text}");
    assert!(text.contains("[step finished: tool-calls]"), "{text}");
}
