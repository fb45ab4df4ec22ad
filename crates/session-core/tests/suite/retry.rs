//! Retry policy (SPEC 7): delays within their jitter bounds and caps, JavaScript's parseFloat,
//! HTTP-dates, classification and the retry decision.

use std::collections::BTreeMap;
use std::time::{Duration, UNIX_EPOCH};

use pretty_assertions::assert_eq;
use proptest::prelude::*;
use session_core::{
    MessageError, retry::RETRY_MAX_DELAY_MS, retry::RETRY_MAX_DELAY_NO_HEADERS_MS, retry::RETRY_UNSAFE_CODE,
    retry::RetryCarry, retry::RetryConfig, retry::RetryDecision, retry::RetryLimit, retry::RetryRequest,
    retry::clamp_delay, retry::decide, retry::delay, retry::parse_float, retry::parse_http_date,
    retry::retryable,
};

const NOW: u64 = 1_767_225_600_000;

fn api_error(status: Option<u16>, headers: Option<&[(&str, &str)]>) -> MessageError {
    MessageError::ApiError {
        message: "boom".to_owned(),
        status_code: status,
        is_retryable: true,
        response_headers: headers.map(|headers| {
            headers
                .iter()
                .map(|(name, value)| ((*name).to_owned(), (*value).to_owned()))
                .collect::<BTreeMap<_, _>>()
        }),
        response_body: None,
        metadata: None,
    }
}

/// The jittered exponential's bounds `[b, ceil(1.25 b)]` for the default policy.
fn default_bounds(attempt: u32) -> (f64, f64) {
    let base = 2000.0 * 2f64.powf(f64::from(attempt) - 1.0);
    (base, (base + base * 0.25).ceil())
}

#[test]
fn default_policy_doubles_and_caps_without_headers() {
    let waits: Vec<f64> = (1..=6).map(|attempt| delay(attempt, None, 0.0, NOW, None)).collect();
    assert_eq!(waits, vec![2000.0, 4000.0, 8000.0, 16000.0, 30000.0, 30000.0]);
    assert_eq!(delay(1, None, 1.0, NOW, None), 2500.0);
}

#[test]
fn header_hints_win_and_are_returned_unclamped() {
    let hinted =
        |headers: &[(&str, &str)]| delay(3, Some(&api_error(Some(429), Some(headers))), 0.0, NOW, None);
    assert_eq!(hinted(&[("retry-after-ms", "1500.7")]), 1500.7);
    assert_eq!(hinted(&[("retry-after", "-5")]), -5000.0);
    assert_eq!(hinted(&[("retry-after", "Thu, 01 Jan 2026 00:01:30 GMT")]), 90_000.0);
    assert_eq!(hinted(&[("retry-after", "Thursday, 01-Jan-26 00:01:30 GMT")]), 90_000.0);
    assert_eq!(hinted(&[("retry-after", "Thu Jan  1 00:01:30 2026")]), 90_000.0);
    // An empty retry-after-ms falls through to retry-after.
    assert_eq!(hinted(&[("retry-after-ms", ""), ("retry-after", "2")]), 2000.0);
    // Headers without a hint: no 30 s cap.
    assert_eq!(hinted(&[("content-type", "text/plain")]), 8000.0);
    assert_eq!(hinted(&[("retry-after-ms", "1e300")]), RETRY_MAX_DELAY_MS as f64);
}

#[test]
fn runtime_clamps_only_when_sleeping() {
    let decision = RetryDecision::Retry { wait_ms: -5000.0, message: "x".to_owned() };
    assert_eq!(decision.sleep(), Some(Duration::ZERO));
    assert_eq!(RetryDecision::Stop.sleep(), None);
    assert_eq!(clamp_delay(1e300), Duration::from_millis(RETRY_MAX_DELAY_MS));
}

#[test]
fn retry_config_reads_camel_case() {
    let config: RetryConfig = serde_json::from_value(serde_json::json!({
        "maxAttempts": 3, "initialDelayMs": 100, "maxDelayMs": 1000, "maxElapsedMs": 5000,
        "backoffFactor": 1.5, "retryableStatuses": [503]
    }))
    .unwrap();
    assert_eq!(
        config,
        RetryConfig {
            max_attempts: Some(3),
            initial_delay_ms: Some(100),
            max_delay_ms: Some(1000),
            max_elapsed_ms: Some(5000),
            backoff_factor: Some(1.5),
            retryable_statuses: Some(vec![503]),
        }
    );
    assert!(config.retries_status(503));
    assert!(!config.retries_status(500));
    assert_eq!(config.allowed_retries(), 2);
    assert_eq!(RetryConfig::default().allowed_retries(), 5);
}

#[test]
fn classification_follows_the_rules() {
    let unknown = |message: &str| MessageError::UnknownError { message: message.to_owned() };
    assert_eq!(retryable(&unknown("RESOURCE_EXHAUSTED"), None).as_deref(), Some("Provider is overloaded"));
    assert_eq!(retryable(&unknown("Request timed out"), None).as_deref(), Some("Request timed out"));
    assert_eq!(retryable(&unknown("the request was slow"), None), None);
    assert_eq!(retryable(&unknown("read timeout"), None).as_deref(), Some("read timeout"));
    assert_eq!(retryable(&unknown("Timeout"), None).as_deref(), Some("Timeout"));
    assert_eq!(retryable(&MessageError::MessageOutputLengthError {}, None), None);
    let overflow =
        MessageError::ContextOverflowError { message: "rate limit".to_owned(), response_body: None };
    assert_eq!(retryable(&overflow, Some(&RetryConfig::default())), None);
}

#[test]
fn decide_counts_carried_failures_and_the_budget() {
    let error = api_error(Some(503), None);
    let config =
        RetryConfig { max_attempts: Some(3), max_elapsed_ms: Some(60_000), ..RetryConfig::default() };
    let request = RetryRequest {
        error: &error,
        attempt: 1,
        elapsed_ms: 0,
        limit: RetryLimit(0),
        config: Some(&config),
        carried: Some(RetryCarry { attempts: 1, since_ms: NOW - 59_000 }),
        random: 0.0,
        now_ms: NOW,
    };
    assert_eq!(decide(&request), RetryDecision::Retry { wait_ms: 1000.0, message: "boom".to_owned() });
    assert_eq!(decide(&RetryRequest { attempt: 2, ..request }), RetryDecision::Stop);
    assert_eq!(decide(&RetryRequest { config: None, carried: None, ..request }), RetryDecision::Stop);
    let default = RetryRequest::new(&error, 5, 0.0, NOW);
    assert!(matches!(decide(&default), RetryDecision::Retry { .. }));
    assert_eq!(decide(&RetryRequest { attempt: 6, ..default }), RetryDecision::Stop);
}

fn config_strategy() -> impl Strategy<Value = RetryConfig> {
    (
        proptest::option::of(0u32..300),
        proptest::option::of(0u64..200_000),
        proptest::option::of(0u64..10_000_000_000_000),
        proptest::option::of(0u64..10_000_000),
        proptest::option::of(1.0f64..8.0),
    )
        .prop_map(|(max_attempts, initial_delay_ms, max_delay_ms, max_elapsed_ms, backoff_factor)| {
            RetryConfig {
                max_attempts,
                initial_delay_ms,
                max_delay_ms,
                max_elapsed_ms,
                backoff_factor,
                retryable_statuses: None,
            }
        })
}

proptest! {
    #[test]
    fn default_delays_lie_within_jitter_and_caps(attempt in 1u32..2000, random in 0.0f64..=1.0, headers: bool) {
        let (low, high) = default_bounds(attempt);
        let error = api_error(Some(500), headers.then_some(&[("x-request-id", "1")][..]));
        let got = delay(attempt, Some(&error), random, NOW, None);
        let cap = if headers { RETRY_MAX_DELAY_MS } else { RETRY_MAX_DELAY_NO_HEADERS_MS } as f64;
        prop_assert!(got >= low.min(cap) && got <= high.min(cap), "attempt {attempt} random {random}: {got}");
        prop_assert_eq!(got, got.ceil());
    }

    #[test]
    fn configured_delays_lie_within_jitter_and_ceiling(
        attempt in 1u32..2000,
        random in 0.0f64..=1.0,
        config in config_strategy(),
    ) {
        let got = delay(attempt, Some(&api_error(Some(503), Some(&[]))), random, NOW, Some(&config));
        let ceiling = config.max_delay_ms.unwrap_or(30_000) as f64;
        let initial = config.initial_delay_ms.unwrap_or(2000) as f64;
        let growth = config.backoff_factor.unwrap_or(2.0).powf(f64::from(attempt) - 1.0);
        let base = if initial == 0.0 { 0.0 } else { initial * growth };
        let (low, high) = if base >= ceiling {
            ((ceiling - ceiling * 0.25).ceil(), ceiling)
        } else {
            (base, (base + base * 0.25).ceil().min(ceiling))
        };
        let max = RETRY_MAX_DELAY_MS as f64;
        prop_assert!(got >= low.min(max) && got <= high.min(max), "{config:?} attempt {attempt}: {got}");
    }

    #[test]
    fn configured_hints_lie_between_floor_and_ceiling(
        hint in "-?[0-9]{0,15}(\\.[0-9]{0,3})?|\\PC{0,12}",
        config in config_strategy()) {
        let error = api_error(Some(429), Some(&[("retry-after-ms", hint.as_str())]));
        let got = delay(1, Some(&error), 0.5, NOW, Some(&config));
        let ceiling = (config.max_delay_ms.unwrap_or(30_000) as f64).min(RETRY_MAX_DELAY_MS as f64);
        prop_assert!(got >= 0.0 && got <= ceiling, "{hint:?} {config:?}: {got}");
    }

    #[test]
    fn decide_never_exceeds_the_budget(
        attempt in 0u32..20,
        elapsed in 0u64..20_000_000,
        random in 0.0f64..=1.0,
        config in proptest::option::of(config_strategy()),
        limit in 0u32..10,
    ) {
        let error = api_error(Some(503), Some(&[("retry-after", "3600")]));
        let request = RetryRequest {
            error: &error, attempt, elapsed_ms: elapsed, limit: RetryLimit(limit),
            config: config.as_ref(), carried: None, random, now_ms: NOW,
        };
        let allowed = config.as_ref().map_or(limit, RetryConfig::allowed_retries);
        match decide(&request) {
            RetryDecision::Retry { wait_ms, .. } => {
                prop_assert!(attempt <= allowed);
                if let Some(budget) = config.as_ref().and_then(|config| config.max_elapsed_ms) {
                    prop_assert!(elapsed < budget && wait_ms <= (budget - elapsed) as f64);
                }
            }
            RetryDecision::Stop => {
                let exhausted = config.as_ref().and_then(|c| c.max_elapsed_ms).is_some_and(|b| elapsed >= b);
                prop_assert!(attempt > allowed || exhausted);
            }
        }
    }

    #[test]
    fn parse_float_never_panics(text in "\\PC*", raw: String) {
        let _ = parse_float(&text);
        let _ = parse_float(&raw);
        let _ = parse_http_date(&text);
        let _ = parse_http_date(&raw);
    }

    #[test]
    fn parse_float_reads_plain_decimals(text in "[+-]?[0-9]{1,25}(\\.[0-9]{1,25})?([eE][+-]?[0-9]{1,3})?", tail in "[a-zA-Z :]{0,5}") {
        let expected: f64 = text.parse().unwrap();
        let got = parse_float(&format!(" \t{text}{tail}"));
        prop_assert!(got == expected || (got.is_nan() && expected.is_nan()), "{text:?}: {got} != {expected}");
    }

    #[test]
    fn http_dates_match_httpdate_formatting(seconds in 0u64..253_402_300_799) {
        let formatted = httpdate::fmt_http_date(UNIX_EPOCH + Duration::from_secs(seconds));
        prop_assert_eq!(parse_http_date(&formatted), Some(seconds as i64 * 1000));
    }

    #[test]
    fn unsafe_or_overflowing_errors_are_never_retried(message in "\\PC{0,40}", status in proptest::option::of(100u16..700)) {
        let unsafe_error = MessageError::ApiError {
            message: message.clone(),
            status_code: status,
            is_retryable: true,
            response_headers: None,
            response_body: None,
            metadata: Some(BTreeMap::from([("code".to_owned(), RETRY_UNSAFE_CODE.to_owned())])),
        };
        prop_assert_eq!(retryable(&unsafe_error, None), None);
        prop_assert_eq!(retryable(&unsafe_error, Some(&RetryConfig::default())), None);
        let overflow = MessageError::ContextOverflowError { message, response_body: None };
        prop_assert_eq!(retryable(&overflow, None), None);
    }
}
