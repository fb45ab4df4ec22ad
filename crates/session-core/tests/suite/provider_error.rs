//! The provider error classifier (SPEC 6, provider side): recorded provider bodies, the
//! conversion into `MessageError`, and that no input makes it panic.

use std::collections::BTreeMap;

use pretty_assertions::assert_eq;
use proptest::prelude::*;
use serde_json::{Value, json};
use session_core::{
    MessageError, provider_error::ApiCallFailure, provider_error::ClassifiedError,
    provider_error::OVERFLOW_PATTERNS, provider_error::classify_stream_error,
    provider_error::parse_api_call_error, provider_error::parse_stream_error, provider_error::status_text,
    retry::RetryConfig, retry::retryable,
};

fn failure(message: &str, status: Option<u16>, body: Option<&str>) -> ApiCallFailure {
    ApiCallFailure {
        message: message.to_owned(),
        status_code: status,
        is_retryable: false,
        response_body: body.map(str::to_owned),
        response_headers: None,
        url: Some("https://api.example.invalid/v1/chat/completions".to_owned()),
    }
}

#[test]
fn openai_context_length_body_is_an_overflow() {
    // Body of OpenAI's 400 for an oversize chat request.
    let body = r#"{"error":{"message":"This model's maximum context length is 4097 tokens. However, your messages resulted in 4294 tokens. Please reduce the length of the messages.","type":"invalid_request_error","param":"messages","code":"context_length_exceeded"}}"#;
    let classified = parse_api_call_error("openai", &failure("Bad Request", Some(400), Some(body)));
    assert_eq!(
        classified,
        ClassifiedError::ContextOverflow {
            message: format!("Bad Request: {body}"),
            response_body: Some(body.to_owned()),
        }
    );
}

#[test]
fn anthropic_rate_limit_keeps_headers_and_url_for_retry() {
    let body = r#"{"type":"error","error":{"type":"rate_limit_error","message":"This request would exceed the rate limit for your organization."}}"#;
    let mut call = failure("Too Many Requests", Some(429), Some(body));
    call.is_retryable = true;
    call.response_headers = Some(BTreeMap::from([("retry-after".to_owned(), "16".to_owned())]));
    let error = MessageError::from(parse_api_call_error("anthropic", &call));
    let MessageError::ApiError {
        message,
        status_code,
        is_retryable,
        response_headers,
        response_body,
        metadata,
    } = &error
    else {
        panic!("expected an API error, got {error:?}");
    };
    // `body.error` is an object, so the raw body is appended.
    assert_eq!(message, &format!("Too Many Requests: {body}"));
    assert_eq!((*status_code, *is_retryable), (Some(429), true));
    assert_eq!(response_headers.as_ref().and_then(|h| h.get("retry-after")).map(String::as_str), Some("16"));
    assert_eq!(response_body.as_deref(), Some(body));
    assert_eq!(
        metadata.as_ref().and_then(|m| m.get("url")).map(String::as_str),
        Some("https://api.example.invalid/v1/chat/completions")
    );
    assert_eq!(retryable(&error, None).as_deref(), Some(message.as_str()));
    assert_eq!(session_core::retry::delay(1, Some(&error), 0.0, 0, None), 16_000.0);
}

#[test]
fn serialized_errors_have_opencode_shapes() {
    let overflow: MessageError = parse_api_call_error("test", &failure("", Some(413), None)).into();
    assert_eq!(
        serde_json::to_value(&overflow).unwrap(),
        json!({"name": "ContextOverflowError", "data": {"message": "Payload Too Large"}})
    );
    let api: MessageError = parse_api_call_error("openai-compatible", &failure("", Some(404), None)).into();
    assert_eq!(
        serde_json::to_value(&api).unwrap(),
        json!({"name": "APIError", "data": {
            "message": "Not Found", "statusCode": 404, "isRetryable": true,
            "metadata": {"url": "https://api.example.invalid/v1/chat/completions"}
        }})
    );
}

#[test]
fn stream_errors_classify_or_fall_back_to_unknown() {
    let chunk = json!({"type": "error", "error": {"type": "insufficient_quota", "code": "insufficient_quota",
        "message": "You exceeded your current quota"}});
    let classified = parse_stream_error(&chunk).unwrap();
    assert_eq!(classified.message(), "Quota exceeded. Check your plan and billing details.");
    assert!(!classified.is_context_overflow());
    let overloaded = json!({"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}});
    assert_eq!(parse_stream_error(&overloaded), None);
    let unknown = classify_stream_error(&overloaded);
    assert_eq!(
        unknown,
        MessageError::UnknownError {
            message: r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
                .to_owned()
        }
    );
    assert_eq!(retryable(&unknown, Some(&RetryConfig::default())).as_deref(), Some(unknown.message()));
    assert_eq!(parse_stream_error(&json!("not json")), None);
    assert_eq!(parse_stream_error(&json!(42)), None);
}

#[test]
fn lists_and_table_are_exposed() {
    assert_eq!(OVERFLOW_PATTERNS.len(), 19);
    assert_eq!(status_text(422), Some("Unprocessable Entity"));
    assert_eq!(status_text(999), None);
}

/// JavaScript's white space and line terminators (what `String.prototype.trim` removes).
fn is_js_space(c: char) -> bool {
    matches!(c, '\t'..='\r' | ' ' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}' | '\u{2028}' | '\u{2029}'
        | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}')
}

fn json_value() -> impl Strategy<Value = Value> {
    let words = prop_oneof![
        Just("error"),
        Just("context_length_exceeded"),
        Just("server_error"),
        Just("server_is_overloaded"),
        Just("invalid_prompt"),
        Just("insufficient_quota"),
        Just("usage_not_included"),
        Just("message"),
    ];
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::from),
        any::<i64>().prop_map(Value::from),
        any::<f64>().prop_filter("finite", |f| f.is_finite()).prop_map(Value::from),
        "\\PC{0,12}".prop_map(Value::from),
        words.clone().prop_map(Value::from),
    ];
    let key = prop_oneof![Just("type"), Just("error"), Just("code"), Just("message"), words]
        .prop_map(str::to_owned);
    leaf.prop_recursive(4, 40, 5, move |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
            prop::collection::vec((key.clone(), inner.clone()), 0..5)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
            // Payloads also arrive as JSON text, or as JSON text inside `message`.
            inner.clone().prop_map(|value| Value::String(value.to_string())),
            inner.prop_map(|value| json!({ "message": value.to_string() })),
        ]
    })
}

fn body() -> impl Strategy<Value = Option<String>> {
    proptest::option::of(prop_oneof![
        "\\PC{0,40}",
        json_value().prop_map(|value| value.to_string()),
        "\\s{0,3}<(!DOCTYPE|html|HTML)\\PC{0,10}",
    ])
}

proptest! {
    #[test]
    fn api_call_classification_never_panics(
        provider in "(openai|anthropic|\\PC{0,8})",
        message in prop_oneof!["\\PC{0,40}", Just("Bad Request".to_owned()), Just(String::new())],
        status in proptest::option::of(prop_oneof![any::<u16>(), 400u16..=530]),
        is_retryable: bool,
        response_body in body(),
    ) {
        let call = ApiCallFailure {
            message, status_code: status, is_retryable, response_body, response_headers: None, url: None,
        };
        let classified = parse_api_call_error(&provider, &call);
        let text = classified.message();
        prop_assert_eq!(text, text.trim_matches(is_js_space));
        if status == Some(413) {
            prop_assert!(classified.is_context_overflow());
        }
        if let ClassifiedError::Api { status_code, is_retryable: flag, .. } = &classified {
            prop_assert_eq!(*status_code, status);
            prop_assert!(*flag || !is_retryable, "the retryable flag is never cleared");
        }
        let _ = retryable(&classified.into(), None);
    }

    #[test]
    fn stream_classification_never_panics(payload in json_value()) {
        if let Some(classified) = parse_stream_error(&payload) {
            let body = match &classified {
                ClassifiedError::ContextOverflow { response_body, .. }
                | ClassifiedError::Api { response_body, .. } => response_body.clone(),
            };
            let body: Value = serde_json::from_str(&body.unwrap()).unwrap();
            prop_assert_eq!(body.get("type").and_then(Value::as_str), Some("error"));
        }
        let _ = classify_stream_error(&payload);
    }
}
