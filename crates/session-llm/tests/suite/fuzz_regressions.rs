//! The fuzzers' findings as ordinary tests: every input of the committed fuzz corpora
//! (`fuzz/corpus/<target>/` at the repository root) and every crash input
//! (`tests/fixtures/fuzz/<target>/`) runs through the SSE decoder and the four stream parsers
//! with the fuzz targets' own checks: no panic, and the same outcome whatever the chunking.

use std::path::{Path, PathBuf};

use serde_json::json;
use session_core::{LlmEvent, Usage};
use session_llm::{Api, EventDecoder, Replay, SseDecoder, SseEvent, replay};

/// The chunk sizes the fuzz targets feed every input in (besides the whole input at once).
const CHUNK_SIZES: [usize; 3] = [1, 7, 64];

/// The stream-parser targets and the wire format each one fuzzes.
const STREAM_TARGETS: [(&str, Api); 4] = [
    ("stream_openai_chat", Api::OpenAiChat),
    ("stream_openai_responses", Api::OpenAiResponses),
    ("stream_anthropic", Api::Anthropic),
    ("stream_gemini", Api::Gemini),
];

fn corpus_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus").join(target)
}

fn crash_dir(target: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/fuzz").join(target)
}

/// Every file of `dir` (none if it does not exist), sorted by name.
fn files(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
    let mut out: Vec<(String, Vec<u8>)> = entries
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.is_file())
        .map(|path| (path.file_name().unwrap().to_string_lossy().into_owned(), std::fs::read(&path).unwrap()))
        .collect();
    out.sort();
    out
}

/// The committed corpus of `target`, which must not be empty, and its crash inputs.
fn inputs(target: &str) -> Vec<(String, Vec<u8>)> {
    let corpus = files(&corpus_dir(target));
    assert!(!corpus.is_empty(), "no corpus at {}", corpus_dir(target).display());
    corpus.into_iter().chain(files(&crash_dir(target))).collect()
}

fn sse_events(data: &[u8], chunk: usize, limit: Option<usize>) -> Result<Vec<SseEvent>, String> {
    let mut decoder = limit.map_or_else(SseDecoder::new, SseDecoder::with_max_event_bytes);
    let mut out = Vec::new();
    for piece in data.chunks(chunk) {
        decoder.push(piece, &mut out).map_err(|e| e.to_string())?;
    }
    decoder.finish(&mut out).map_err(|e| e.to_string())?;
    Ok(out)
}

fn chunked_replay(api: Api, data: &[u8], chunk: usize) -> Replay {
    let mut decoder = EventDecoder::new(api);
    let mut events = Vec::new();
    let mut error = None;
    for piece in data.chunks(chunk) {
        if let Err(e) = decoder.push(piece, &mut events) {
            error = Some(e);
            break;
        }
    }
    if error.is_none() {
        error = decoder.finish(&mut events).err();
    }
    Replay { events, error }
}

#[test]
fn the_sse_corpus_decodes_alike_in_any_chunking() {
    for (name, data) in inputs("sse") {
        let whole = sse_events(&data, data.len().max(1), None);
        for size in CHUNK_SIZES {
            assert_eq!(sse_events(&data, size, None), whole, "sse/{name} in chunks of {size}");
        }
        for size in [data.len().max(1), 5] {
            let _ = sse_events(&data, size, Some(64));
        }
    }
}

#[test]
fn the_stream_corpora_parse_alike_in_any_chunking() {
    for (target, api) in STREAM_TARGETS {
        for (name, data) in inputs(target) {
            let whole = replay(api, &data);
            let _ = format!("{whole:?}");
            if let Some(error) = &whole.error {
                let _ = error.to_string();
            }
            for size in CHUNK_SIZES {
                assert_eq!(chunked_replay(api, &data, size), whole, "{target}/{name} in chunks of {size}");
            }
        }
    }
}

#[test]
fn every_stream_corpus_input_also_survives_the_other_parsers() {
    // A body of one format sent to another parser (a misconfigured provider) must not panic.
    for (target, _) in STREAM_TARGETS {
        for (_, data) in inputs(target) {
            for api in Api::ALL {
                let _ = replay(api, &data);
            }
        }
    }
}

fn crash_input(target: &str, name: &str) -> Vec<u8> {
    std::fs::read(crash_dir(target).join(name)).unwrap()
}

fn finish_usage(result: &Replay) -> Usage {
    assert_eq!(result.error, None);
    match result.events.last() {
        Some(LlmEvent::Finish { usage: Some(usage), .. }) => usage.clone(),
        other => panic!("no finish with usage: {other:?}"),
    }
}

#[test]
fn token_counts_whose_sums_overflow_saturate() {
    // Each of these panicked with "attempt to add with overflow" in debug builds.
    let anthropic =
        finish_usage(&replay(Api::Anthropic, &crash_input("stream_anthropic", "overflow-token-count-sum")));
    assert_eq!((anthropic.input_tokens, anthropic.total_tokens), (Some(i64::MAX), Some(i64::MAX)));
    let _ = replay(Api::Gemini, &crash_input("stream_gemini", "overflow-token-count-sum"));
    let body = r#"data: {"candidates":[{"content":{"parts":[{"text":"Hi"}]},"finishReason":"STOP"}],"usageMetadata":{"promptTokenCount":9,"candidatesTokenCount":9223372036854775807,"thoughtsTokenCount":5}}

"#;
    let gemini = finish_usage(&replay(Api::Gemini, body.as_bytes()));
    assert_eq!((gemini.input_tokens, gemini.output_tokens), (Some(9), Some(i64::MAX)));
    let chat = finish_usage(&replay(
        Api::OpenAiChat,
        &crash_input("stream_openai_chat", "overflow-token-count-sum"),
    ));
    // The total is input + output (SPEC 1.1), which saturates too; the provider's own 1 is not read.
    assert_eq!((chat.output_tokens, chat.total_tokens), (Some(i64::MAX), Some(i64::MAX)));
}

fn gemini_partial_args_body(paths: &[String]) -> String {
    let mut body = String::from(
        "data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{\"name\":\"f\",\"willContinue\":true}}]}}]}\n\n",
    );
    for path in paths {
        body.push_str(&format!(
            "data: {{\"candidates\":[{{\"content\":{{\"parts\":[{{\"functionCall\":{{\"partialArgs\":[{{\"jsonPath\":\"{path}\",\"stringValue\":\"x\"}}],\"willContinue\":true}}}}]}}}}]}}\n\n"
        ));
    }
    body.push_str("data: {\"candidates\":[{\"content\":{\"parts\":[{\"functionCall\":{}}]},\"finishReason\":\"STOP\"}]}\n\n");
    body
}

fn tool_input(result: &Replay) -> serde_json::Value {
    assert_eq!(result.error, None);
    let inputs: Vec<_> = result
        .events
        .iter()
        .filter_map(|event| match event {
            LlmEvent::ToolCall { input, .. } => Some(input.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(inputs.len(), 1, "{:?}", result.events);
    inputs[0].clone()
}

#[test]
fn a_deep_gemini_argument_path_is_skipped_instead_of_overflowing_the_stack() {
    // 400,000 levels (800 KB, well within the 16 MiB event bound) overflowed the stack.
    let deep = [format!("${}", ".a".repeat(400_000)), format!("${}", "[0]".repeat(300_000))];
    let result = replay(Api::Gemini, gemini_partial_args_body(&deep).as_bytes());
    assert_eq!(tool_input(&result), json!({}));
    // The input that crashed the fuzz binary (40,000 levels; no finish, so it ends truncated).
    let result = replay(Api::Gemini, &crash_input("stream_gemini", "stack-overflow-deep-json-path"));
    assert!(result.events.iter().any(|event| matches!(event, LlmEvent::ToolInputStart { .. })));
}

#[test]
fn gemini_argument_paths_cannot_pad_arrays_without_bound() {
    // 12 KB of `[4096]` segments allocated 1.3 GB; 40 fragments of 63 of them each, within
    // the depth bound, would take about as much.
    for name in ["oom-json-path-padding-deep", "oom-json-path-padding"] {
        let result = replay(Api::Gemini, &crash_input("stream_gemini", name));
        assert_eq!(tool_input(&result), json!({}), "{name}");
    }
    // In-order fragments and a few gaps still build the arguments.
    let paths = ["$.a[0]", "$.a[1]", "$.b[2]"].map(str::to_owned);
    let result = replay(Api::Gemini, gemini_partial_args_body(&paths).as_bytes());
    assert_eq!(tool_input(&result), json!({"a": ["x", "x"], "b": [null, null, "x"]}));
}
