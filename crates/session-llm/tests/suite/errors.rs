//! Every `errors/` fixture through the adapters' error path and session-core's classifier.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use serde::Deserialize;
use serde_json::{Value, json};
use session_llm::{Api, LlmError, api_failure, replay};

use super::support::{error_json, fixtures_dir};

/// The `{status, headers, body}` envelope of an `errors/*.json` file.
#[derive(Deserialize)]
struct Envelope {
    status: Option<u16>,
    headers: Option<BTreeMap<String, String>>,
    body: Option<String>,
}

fn envelope(name: &str) -> Envelope {
    let text = std::fs::read_to_string(fixtures_dir().join("errors").join(name)).unwrap();
    serde_json::from_str(&text).unwrap()
}

/// The provider id the classifier is given, from the file's prefix.
fn provider_of(name: &str) -> &'static str {
    if name.starts_with("anthropic") {
        "anthropic"
    } else if name.starts_with("gemini") {
        "google"
    } else {
        "openai"
    }
}

/// Classifies one HTTP error fixture as the adapters' HTTP call does.
fn classify_http(name: &str) -> LlmError {
    let envelope = envelope(name);
    let status = envelope.status.unwrap();
    let headers = envelope
        .headers
        .unwrap_or_default()
        .into_iter()
        .map(|(name, value)| (name.to_ascii_lowercase(), value))
        .collect();
    api_failure(provider_of(name), status, headers, envelope.body, Some("https://example.invalid".into()))
}

fn expect_api(err: &LlmError, status: u16, retryable: bool, message: &str) {
    let LlmError::Api(api) = err else { panic!("expected an API error, got {err:?}") };
    assert_eq!((api.status, api.retryable(), api.message()), (Some(status), retryable, message));
}

fn expect_overflow(err: &LlmError, message: &str) {
    let LlmError::ContextOverflow { message: got, .. } = err else {
        panic!("expected an overflow, got {err:?}")
    };
    assert_eq!(got, message);
}

#[test]
fn anthropic_errors() {
    let overloaded = classify_http("anthropic-529-overloaded.json");
    expect_api(&overloaded, 529, true, "Overloaded");
    let LlmError::Api(api) = &overloaded else { unreachable!() };
    assert_eq!(api.headers.get("x-should-retry").map(String::as_str), Some("true"));
    assert_eq!(api.headers.get("request-id").map(String::as_str), Some("req_01RCc7MbLyQNtGKzBTv8VCep"));
    assert!(api.provider_retryable);

    expect_api(&classify_http("anthropic-529-overloaded-request-id.json"), 529, true, "Overloaded");
    expect_overflow(
        &classify_http("anthropic-400-prompt-too-long.json"),
        "prompt is too long: 219898 tokens > 200000 maximum",
    );
    // SPEC 6's patterns do not cover "input length and `max_tokens` exceed context limit":
    // OpenCode reports it as a fatal 400, and so does the classifier.
    let input_plus_max = classify_http("anthropic-400-input-plus-max-tokens-exceed-context.json");
    let LlmError::Api(api) = &input_plus_max else { panic!("{input_plus_max:?}") };
    assert_eq!((api.status, api.retryable()), (Some(400), false));
    assert!(
        api.message()
            .starts_with("input length and `max_tokens` exceed context limit: 143653 + 64000 > 200000")
    );

    let rate_limited = classify_http("anthropic-429-rate-limit.json");
    let LlmError::Api(api) = &rate_limited else { panic!("{rate_limited:?}") };
    assert_eq!((api.status, api.retryable()), (Some(429), true));
    assert_eq!(api.headers.get("retry-after").map(String::as_str), Some("16"));

    // No body at all: the status text is the message.
    expect_api(
        &classify_http("anthropic-429-headers-without-retry-after-2024.json"),
        429,
        true,
        "Too Many Requests",
    );
}

#[test]
fn openai_errors() {
    expect_overflow(
        &classify_http("openai-400-context-length-exceeded-chat.json"),
        "This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. \
         Please reduce the length of the messages.",
    );
    let tpm = classify_http("openai-429-rate-limit-reached-tpm.json");
    let LlmError::Api(api) = &tpm else { panic!("{tpm:?}") };
    assert_eq!((api.status, api.retryable()), (Some(429), true));
    assert!(api.message().contains("Please try again in 174ms"), "{}", api.message());

    // A 429 for an exhausted quota carries the code `insufficient_quota`: not retryable.
    let quota = classify_http("openai-429-insufficient-quota.json");
    let LlmError::Api(api) = &quota else { panic!("{quota:?}") };
    assert_eq!((api.status, api.provider_retryable, api.retryable()), (Some(429), false, false));
    assert_eq!(session_core::retry::retryable(&quota.to_message_error(), None), None);

    // A request larger than the TPM limit is a plain 429 with the rate-limit code; only its
    // message tells it apart, so the transport's flag stays true.
    let too_large = classify_http("openai-429-request-too-large-tpm.json");
    let LlmError::Api(api) = &too_large else { panic!("{too_large:?}") };
    assert_eq!((api.status, api.provider_retryable), (Some(429), true));
}

#[test]
fn openai_in_stream_errors() {
    // The Responses API reports an overflow inside the stream, as an `error` event or in a
    // failed response; the fixture holds the error object.
    let body = envelope("openai-responses-context-length-exceeded.json").body.unwrap();
    assert!(envelope("openai-responses-context-length-exceeded.json").status.is_none());
    let error_event = format!(
        "event: response.created\ndata: {{\"type\":\"response.created\",\"response\":{{}}}}\n\n\
         event: error\ndata: {{\"type\":\"error\",\"error\":{body}}}\n\n"
    );
    let result = replay(Api::OpenAiResponses, error_event.as_bytes());
    expect_overflow(result.error.as_ref().unwrap(), "Input exceeds context window of this model");

    let failed = format!(
        "event: response.failed\ndata: {{\"type\":\"response.failed\",\"response\":{{\"status\":\"failed\",\"error\":{body}}}}}\n\n"
    );
    let result = replay(Api::OpenAiResponses, failed.as_bytes());
    expect_overflow(result.error.as_ref().unwrap(), "Input exceeds context window of this model");

    let chat = std::fs::read(fixtures_dir().join("errors/openai-chat-in-stream-server-error.sse")).unwrap();
    let result = replay(Api::OpenAiChat, &chat);
    let err = result.error.unwrap();
    let LlmError::Api(api) = &err else { panic!("{err:?}") };
    assert_eq!(api.status, None);
    assert!(api.retryable());
    assert!(api.message().starts_with("The server had an error processing your request."));
}

#[test]
fn gemini_errors() {
    expect_overflow(
        &classify_http("gemini-400-input-token-count-exceeded.json"),
        "The input token count (132478) exceeds the maximum number of tokens allowed (131072).",
    );
    expect_overflow(
        &classify_http("gemini-400-input-token-count-exceeded-array.json"),
        "The input token count (1200293) exceeds the maximum number of tokens allowed (1048576).",
    );
    for name in ["gemini-429-quota-retry-info.json", "gemini-429-resource-exhausted-vertex.json"] {
        let err = classify_http(name);
        let LlmError::Api(api) = &err else { panic!("{name}: {err:?}") };
        assert_eq!((api.status, api.retryable()), (Some(429), true), "{name}");
    }
    expect_api(
        &classify_http("gemini-503-overloaded.json"),
        503,
        true,
        "The model is overloaded. Please try again later.",
    );
    let high_demand = classify_http("gemini-503-high-demand.json");
    let LlmError::Api(api) = &high_demand else { panic!("{high_demand:?}") };
    assert_eq!((api.status, api.retryable()), (Some(503), true));
    assert!(api.message().starts_with("This model is currently experiencing high demand."));
    expect_api(
        &classify_http("gemini-500-internal.json"),
        500,
        true,
        "An internal error has occurred. Please retry or report in \
         https://developers.generativeai.google/guide/troubleshooting",
    );
}

#[test]
fn gemini_in_stream_error_uses_its_code_as_status() {
    let body = envelope("gemini-503-overloaded.json").body.unwrap();
    let stream = format!("data: {}\r\n\r\n", body.replace('\n', ""));
    let err = replay(Api::Gemini, stream.as_bytes()).error.unwrap();
    expect_api(&err, 503, true, "The model is overloaded. Please try again later.");
}

#[test]
fn every_error_file_is_classified_and_snapshotted() {
    let mut names: Vec<String> = std::fs::read_dir(fixtures_dir().join("errors"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().into_string().unwrap())
        .filter(|name| name.ends_with(".json"))
        .collect();
    names.sort();
    assert_eq!(names.len(), 18);
    let mut all = serde_json::Map::new();
    for name in names {
        let envelope = envelope(&name);
        let value: Value = match envelope.status {
            Some(_) => {
                let err = classify_http(&name);
                // Every HTTP failure keeps what the provider sent.
                if let LlmError::Api(api) = &err {
                    assert_eq!(api.body, envelope.body, "{name}");
                    assert_eq!(api.url.as_deref(), Some("https://example.invalid"));
                }
                error_json(&err)
            }
            None => json!("in-stream: see openai_in_stream_errors"),
        };
        all.insert(name, value);
    }
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../snapshots");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| insta::assert_json_snapshot!("error_classification", all));
}
