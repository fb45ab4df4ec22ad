//! Every fault kind, observed by session-llm's HTTP provider over real HTTP: the classification
//! is checked end to end.

use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use pretty_assertions::assert_eq;
use serde_json::json;
use session_llm::{Api, Fault, FaultKind, FaultScope, LlmError};
use session_testkit::TestServer;

use super::support::{collect, http_provider, request, script, text_of, user};

const ANSWER: &str = r#"{"turns": [{"text": "A first answer that takes several chunks to stream."},
                                    {"text": "A second answer."}]}"#;

/// Serves `ANSWER` with `fault` on the first request; returns the first request's outcome.
async fn first_request(
    api: Api,
    fault: Fault,
) -> (TestServer, Vec<session_core::LlmEvent>, Option<LlmError>) {
    let server = TestServer::start(script(ANSWER).with_fault(fault)).await.unwrap();
    let provider = http_provider(&server, api);
    let (events, error) = collect(&provider, request(vec![user("go")])).await;
    (server, events, error)
}

fn now_ms() -> u64 {
    u64::try_from(SystemTime::now().duration_since(UNIX_EPOCH).unwrap().as_millis()).unwrap()
}

/// The retry delay session-core derives from the error, without jitter.
fn retry_delay(error: &LlmError) -> f64 {
    session_core::retry::delay(1, Some(&error.to_message_error()), 0.0, now_ms(), None)
}

#[tokio::test]
async fn rate_limits_carry_their_retry_hints() {
    for api in Api::ALL {
        let mut fault = Fault::new(1, FaultKind::RateLimited);
        fault.retry_after_ms = Some(1500);
        let (server, _, error) = first_request(api, fault).await;
        let error = error.unwrap();
        let LlmError::Api(api_error) = &error else { panic!("{api}: {error:?}") };
        assert_eq!(api_error.status, Some(429), "{api}");
        assert_eq!(api_error.headers.get("retry-after-ms").map(String::as_str), Some("1500"), "{api}");
        assert!(api_error.retryable(), "{api}");
        assert_eq!(retry_delay(&error), 1500.0, "{api}");
        assert_eq!(server.requests()[0].status, Some(429));

        let mut fault = Fault::new(1, FaultKind::RateLimited);
        fault.retry_after = Some("2".to_owned());
        let (_, _, error) = first_request(api, fault).await;
        let error = error.unwrap();
        let LlmError::Api(api_error) = &error else { panic!("{api}: {error:?}") };
        assert_eq!(api_error.headers.get("retry-after").map(String::as_str), Some("2"));
        assert_eq!(retry_delay(&error), 2000.0, "{api}");
    }
}

#[tokio::test]
async fn rate_limits_with_an_http_date() {
    let until = SystemTime::now() + Duration::from_secs(5);
    let mut fault = Fault::new(1, FaultKind::RateLimited);
    fault.retry_after = Some(httpdate::fmt_http_date(until));
    let (_, _, error) = first_request(Api::OpenAiChat, fault).await;
    let error = error.unwrap();
    let delay = retry_delay(&error);
    // The date has a resolution of one second.
    assert!((3000.0..=5000.0).contains(&delay), "{delay}");
}

#[tokio::test]
async fn server_errors_are_retryable_api_errors() {
    for api in Api::ALL {
        for (kind, status) in [
            (FaultKind::ServerError, 500),
            (FaultKind::BadGateway, 502),
            (FaultKind::Unavailable, 503),
            (FaultKind::Overloaded, 529),
        ] {
            let (server, events, error) = first_request(api, Fault::new(1, kind)).await;
            assert!(events.is_empty());
            let error = error.unwrap();
            let LlmError::Api(api_error) = &error else { panic!("{api} {status}: {error:?}") };
            assert_eq!(api_error.status, Some(status), "{api}");
            assert!(api_error.retryable(), "{api} {status}");
            assert!(api_error.url.as_deref().unwrap().starts_with(&server.base_url(api)), "{api}");
        }
    }
}

#[tokio::test]
async fn overflow_bodies_are_context_overflows() {
    for api in Api::ALL {
        let (server, _, error) = first_request(api, Fault::new(1, FaultKind::Overflow)).await;
        let error = error.unwrap();
        assert!(error.is_context_overflow(), "{api}: {error:?}");
        assert_eq!(error.name(), "ContextOverflowError");
        assert_eq!(server.requests()[0].status, Some(400));
    }
}

#[tokio::test]
async fn any_status_and_body() {
    let mut fault = Fault::new(1, FaultKind::Status);
    fault.status = Some(401);
    fault.body = Some(json!({"error": {"message": "invalid x-api-key", "type": "authentication_error"}}));
    let (_, _, error) = first_request(Api::Anthropic, fault).await;
    let error = error.unwrap();
    let LlmError::Api(api_error) = &error else { panic!("{error:?}") };
    assert_eq!(api_error.status, Some(401));
    assert!(!api_error.retryable());
    assert_eq!(error.to_string(), "invalid x-api-key");
}

#[tokio::test]
async fn a_reset_before_the_response_is_a_transport_error() {
    for api in Api::ALL {
        let server =
            TestServer::start(script(ANSWER).with_fault(Fault::new(1, FaultKind::Reset))).await.unwrap();
        let provider = http_provider(&server, api);
        let (events, error) = collect(&provider, request(vec![user("go")])).await;
        assert!(events.is_empty(), "{api}");
        assert!(matches!(error, Some(LlmError::Transport(_))), "{api}: {error:?}");
        // The server lives on: the retry is answered, at the same turn.
        let (events, error) = collect(&provider, request(vec![user("go")])).await;
        assert_eq!(error, None, "{api}");
        assert!(text_of(&events).starts_with("A first answer"));
        let log = server.requests();
        assert_eq!(log.iter().map(|r| r.status).collect::<Vec<_>>(), vec![None, Some(200)]);
        assert_eq!(log[0].turn, log[1].turn);
    }
}

#[tokio::test]
async fn a_reset_mid_stream_is_a_transport_error() {
    for api in Api::ALL {
        let script = script(ANSWER).with_chunk_delay(Duration::from_millis(10));
        let fault = Fault::new(1, FaultKind::Reset).after_chunks(3);
        let server = TestServer::start(script.with_fault(fault)).await.unwrap();
        let (events, error) = collect(&http_provider(&server, api), request(vec![user("go")])).await;
        assert!(matches!(error, Some(LlmError::Transport(_))), "{api}: {error:?}");
        assert!(!events.is_empty(), "{api}: the first chunks arrive before the reset");
        // A reset is transient: SPEC 7.2 retries it (by its Node name, ECONNRESET).
        let error = error.map(|e| e.to_message_error()).unwrap();
        assert!(session_core::retry::retryable(&error, None).is_some(), "{api}: {error:?}");
        assert_eq!(server.requests()[0].status, Some(200));
    }
}

#[tokio::test]
async fn a_stall_hits_the_idle_timeout() {
    for api in Api::ALL {
        let fault = Fault::new(1, FaultKind::Stall).after_chunks(1);
        let started = Instant::now();
        let (server, events, error) = first_request(api, fault).await;
        assert_eq!(error, Some(LlmError::IdleTimeout { after: Duration::from_millis(300) }), "{api}");
        assert!(started.elapsed() >= Duration::from_millis(300));
        assert!(events.iter().all(|event| !matches!(event, session_core::LlmEvent::Finish { .. })));
        // Shutting down ends the stalled stream instead of waiting for it.
        let started = Instant::now();
        server.shutdown().await;
        assert!(started.elapsed() < Duration::from_secs(2), "{:?}", started.elapsed());
    }
}

#[tokio::test]
async fn a_stall_before_any_chunk_also_times_out() {
    let (_, events, error) = first_request(Api::Anthropic, Fault::new(1, FaultKind::Stall)).await;
    assert!(events.is_empty());
    assert!(matches!(error, Some(LlmError::IdleTimeout { .. })), "{error:?}");
}

#[tokio::test]
async fn a_malformed_event_is_named() {
    for api in Api::ALL {
        let (_, _, error) = first_request(api, Fault::new(1, FaultKind::Malformed)).await;
        assert!(matches!(error, Some(LlmError::MalformedEvent { .. })), "{api}: {error:?}");
    }
}

#[tokio::test]
async fn a_cut_stream_is_truncated() {
    for api in Api::ALL {
        for after in [1, 4, 10_000] {
            let (_, _, error) = first_request(api, Fault::new(1, FaultKind::Cut).after_chunks(after)).await;
            assert!(matches!(error, Some(LlmError::Truncated { .. })), "{api} after {after}: {error:?}");
        }
    }
}

#[tokio::test]
async fn faults_fire_on_the_chosen_request_only() {
    let mut fault = Fault::new(2, FaultKind::ServerError);
    fault.at = vec![2, 3];
    let server = TestServer::start(script(ANSWER).with_fault(fault)).await.unwrap();
    let provider = http_provider(&server, Api::OpenAiChat);
    let mut outcomes = Vec::new();
    for _ in 0..4 {
        let (_, error) = collect(&provider, request(vec![user("go")])).await;
        outcomes.push(error.map(|e| e.name()));
    }
    assert_eq!(outcomes, vec![None, Some("APIError"), Some("APIError"), None]);
    let faults: Vec<Option<FaultKind>> =
        server.requests().iter().map(|r| r.fault.as_ref().map(|f| f.kind)).collect();
    assert_eq!(faults, vec![None, Some(FaultKind::ServerError), Some(FaultKind::ServerError), None]);
}

#[tokio::test]
async fn side_requests_count_only_for_faults_of_all() {
    let mut fault = Fault::new(1, FaultKind::ServerError);
    fault.of = FaultScope::All;
    let mut main_only = Fault::new(1, FaultKind::Unavailable);
    main_only.of = FaultScope::Main;
    let server = TestServer::start(script(ANSWER).with_fault(fault).with_fault(main_only)).await.unwrap();
    let provider = http_provider(&server, Api::OpenAiChat);
    // A title request first: request 1 of all, no main request yet.
    let mut title = request(vec![user("Generate a title for this conversation.")]);
    title.tools.clear();
    title.system = vec!["You are a title generator.".to_owned()];
    let (_, error) = collect(&provider, title).await;
    assert_eq!(error.map(|e| e.to_string()), Some("Internal server error (mock)".to_owned()));
    // Then main request 1 (request 2 of all): the main-only fault.
    let (_, error) = collect(&provider, request(vec![user("go")])).await;
    let LlmError::Api(api_error) = error.unwrap() else { panic!() };
    assert_eq!(api_error.status, Some(503));
    let log = server.requests();
    assert_eq!((log[0].main_index, log[1].main_index), (None, Some(1)));
}
