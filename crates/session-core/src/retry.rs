//! Retry policy (SPEC 7): the delay before retry n, which errors are retried, and the decision
//! that combines both with the retry budget.
//!
//! Everything here is a pure function of its arguments: the clock (`now_ms`) and the jitter draw
//! (`random`) come from the caller. Delays are f64 milliseconds returned exactly as computed (a
//! header hint may make them fractional or negative); [`clamp_delay`] turns one into something a
//! timer can sleep.

use std::collections::BTreeMap;
use std::sync::LazyLock;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::js_text::{compile_js_alternation, is_js_whitespace};
use crate::message::MessageError;

/// Delay before the first retry, in milliseconds.
pub const RETRY_INITIAL_DELAY_MS: u64 = 2_000;
/// Growth of the delay from one retry to the next.
pub const RETRY_BACKOFF_FACTOR: f64 = 2.0;
/// Largest share of the delay added (or, at a configured ceiling, removed) as jitter.
pub const RETRY_JITTER_FACTOR: f64 = 0.25;
/// Cap of the exponential delay when the error carries no response headers, in milliseconds.
pub const RETRY_MAX_DELAY_NO_HEADERS_MS: u64 = 30_000;
/// Absolute cap of every delay: the largest timer JavaScript runtimes accept, in milliseconds.
pub const RETRY_MAX_DELAY_MS: u64 = 2_147_483_647;
/// Retries allowed when neither a [`RetryLimit`] nor a [`RetryConfig`] says otherwise.
pub const RETRY_MAX_RETRIES: u32 = 5;
/// `metadata.code` of an API error that must never be retried (a tool had already started).
pub const RETRY_UNSAFE_CODE: &str = "ProviderRetryUnsafeError";
/// `metadata.code` of a connection a local address refused: no server is running there, and
/// retrying for a minute will not start one, so the error is shown at once.
pub const LOCAL_REFUSED_CODE: &str = "LocalConnectionRefused";

/// Attempts (first call included) a configured policy allows when `maxAttempts` is unset.
const DEFAULT_MAX_ATTEMPTS: u32 = RETRY_MAX_RETRIES + 1;

/// Statuses retried by a configured policy without `retryableStatuses`, besides 500..=599.
const DEFAULT_RETRYABLE_STATUSES: [u16; 2] = [408, 429];

/// The transient-failure patterns of SPEC 7.2, as JavaScript regex sources matched case-insensitively.
pub const RETRYABLE_PATTERNS: [&str; 7] = [
    r"429|500|502|503|504|524",
    r"rate increased too quickly|rate limit|rate-limit|rate_limit|too many requests",
    concat!(
        r"overloaded|service unavailable|service_unavailable|service-unavailable|internal error|internal_error",
        r"|internal server error|server error|server_error|server-error",
        r"|provider returned error|provider_returned_error|provider-returned-error",
    ),
    concat!(
        r"terminated|fetch failed|failed to fetch|network[-_\s]error|upstream connect|connection error",
        r"|connection refused|connection lost|socket connection was closed|socket hang up|reset before headers",
        r"|getaddrinfo|enotfound|eai_again|econnrefused|econnreset|etimedout",
    ),
    r"^timeout$|\b(?:request|response|connection|network|stream|read) (?:timeout|timed out|time out)\b",
    r"try your request again|retry your request|resource exhausted|resource_exhausted",
    r"\btry again (?:later|in\b)|\b(?:currently|temporarily) at capacity\b",
];

/// [`RETRYABLE_PATTERNS`] as one regex.
static RETRYABLE_REGEX: LazyLock<Option<regex_lite::Regex>> =
    LazyLock::new(|| compile_js_alternation(&RETRYABLE_PATTERNS));

/// Whether a text looks like a transient failure (any of [`RETRYABLE_PATTERNS`]).
fn matches_retryable(text: &str) -> bool {
    RETRYABLE_REGEX.as_ref().is_some_and(|regex| regex.is_match(text))
}

/// A provider's retry policy, from config `provider.<id>.options.retry` (SPEC 7.3).
///
/// Its presence alone changes the rules: status-only classification, a ceiling on every delay
/// and `maxAttempts` instead of the invocation's [`RetryLimit`], even when every field is unset.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RetryConfig {
    /// Calls allowed including the first, so retries are one fewer; unset means 6.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_attempts: Option<u32>,
    /// Delay before the first retry and floor of a header hint; unset means 2000 ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub initial_delay_ms: Option<u64>,
    /// Ceiling of every delay, hints included; unset means 30000 ms.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_delay_ms: Option<u64>,
    /// Budget of time since the first failure after which no retry is started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_elapsed_ms: Option<u64>,
    /// Growth of the delay per retry; unset means 2.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub backoff_factor: Option<f64>,
    /// Statuses that are retried; unset means 408, 429 and 500..=599.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retryable_statuses: Option<Vec<u16>>,
}

impl RetryConfig {
    /// Whether this policy retries an API error with this HTTP status.
    pub fn retries_status(&self, status: u16) -> bool {
        match &self.retryable_statuses {
            Some(statuses) => statuses.contains(&status),
            None => DEFAULT_RETRYABLE_STATUSES.contains(&status) || (500..=599).contains(&status),
        }
    }

    /// Retries this policy allows (`maxAttempts - 1`, at least 0).
    pub fn allowed_retries(&self) -> u32 {
        self.max_attempts.unwrap_or(DEFAULT_MAX_ATTEMPTS).saturating_sub(1)
    }
}

/// The invocation-local retry count used when the provider has no [`RetryConfig`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(transparent)]
pub struct RetryLimit(pub u32);

impl Default for RetryLimit {
    fn default() -> Self {
        Self(RETRY_MAX_RETRIES)
    }
}

/// Failures a turn already spent before this retry loop started, so counting continues.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RetryCarry {
    /// Failed attempts already counted.
    pub attempts: u32,
    /// Epoch milliseconds of the first of those failures.
    pub since_ms: u64,
}

/// Everything [`decide`] needs to know about one failure.
#[derive(Debug, Clone, Copy)]
pub struct RetryRequest<'a> {
    /// The failure, as it will be recorded.
    pub error: &'a MessageError,
    /// The retry about to be scheduled, 1 for the first one (not counting `carried`).
    pub attempt: u32,
    /// Milliseconds since this loop's first failure (ignored when `carried` is set).
    pub elapsed_ms: u64,
    /// The invocation's retry limit (ignored when `config` is set).
    pub limit: RetryLimit,
    /// The provider's policy, if it has one.
    pub config: Option<&'a RetryConfig>,
    /// Attempts and first-failure time carried over from earlier in the turn.
    pub carried: Option<RetryCarry>,
    /// The jitter draw, in [0, 1].
    pub random: f64,
    /// The current time in epoch milliseconds (for HTTP-date hints and `carried`).
    pub now_ms: u64,
}

impl<'a> RetryRequest<'a> {
    /// A request for retry `attempt` of `error` with the default limit, no policy and no carry.
    pub fn new(error: &'a MessageError, attempt: u32, random: f64, now_ms: u64) -> Self {
        Self {
            error,
            attempt,
            elapsed_ms: 0,
            limit: RetryLimit::default(),
            config: None,
            carried: None,
            random,
            now_ms,
        }
    }
}

/// What to do after a failure.
#[derive(Debug, Clone, PartialEq)]
pub enum RetryDecision {
    /// Wait `wait_ms` (unclamped; see [`clamp_delay`]), showing `message`, then retry.
    Retry {
        /// Delay in milliseconds, as computed.
        wait_ms: f64,
        /// The text to show in the retry status.
        message: String,
    },
    /// Give up and record the error.
    Stop,
}

impl RetryDecision {
    /// The time to sleep before retrying, or `None` to stop.
    pub fn sleep(&self) -> Option<Duration> {
        match self {
            Self::Retry { wait_ms, .. } => Some(clamp_delay(*wait_ms)),
            Self::Stop => None,
        }
    }
}

/// A computed delay as a timer duration: at least 0, at most [`RETRY_MAX_DELAY_MS`].
pub fn clamp_delay(delay_ms: f64) -> Duration {
    // NaN fails both comparisons and becomes 0, so this never panics.
    let clamped = if delay_ms > 0.0 { delay_ms.min(RETRY_MAX_DELAY_MS as f64) } else { 0.0 };
    Duration::from_secs_f64(clamped / 1000.0)
}

/// The delay in milliseconds before retry `attempt` (1 for the first), unclamped (SPEC 7.1, 7.3).
///
/// Only an API error's response headers are read; `now_ms` serves the HTTP-date form of
/// `retry-after`. A `random` outside [0, 1] (or NaN) is clamped into it.
pub fn delay(
    attempt: u32,
    error: Option<&MessageError>,
    random: f64,
    now_ms: u64,
    config: Option<&RetryConfig>,
) -> f64 {
    let random = if random.is_nan() { 0.0 } else { random.clamp(0.0, 1.0) };
    let headers = match error {
        Some(MessageError::ApiError { response_headers, .. }) => response_headers.as_ref(),
        _ => None,
    };
    let hint = headers.and_then(|headers| retry_hint(headers, now_ms));
    let exponent = f64::from(attempt) - 1.0;
    let delay = match config {
        Some(config) => {
            let ceiling = config.max_delay_ms.unwrap_or(RETRY_MAX_DELAY_NO_HEADERS_MS) as f64;
            let initial = config.initial_delay_ms.unwrap_or(RETRY_INITIAL_DELAY_MS) as f64;
            match hint {
                // The floor keeps a "retry now" answer from spinning; the ceiling bounds hints too.
                Some(hint) => hint.max(initial).min(ceiling),
                None => {
                    let factor = config.backoff_factor.unwrap_or(RETRY_BACKOFF_FACTOR);
                    let base = grow(initial, factor, exponent);
                    if base >= ceiling {
                        // Jitter downwards at the ceiling so sessions that failed together spread out.
                        (ceiling - ceiling * RETRY_JITTER_FACTOR * random).ceil()
                    } else {
                        jitter_up(base, random).min(ceiling)
                    }
                }
            }
        }
        None => {
            let exponential =
                jitter_up(grow(RETRY_INITIAL_DELAY_MS as f64, RETRY_BACKOFF_FACTOR, exponent), random);
            match (headers, hint) {
                (Some(_), Some(hint)) => hint,
                // Headers without a hint: the server answered, so the 30 s cap does not apply.
                (Some(_), None) => exponential,
                (None, _) => exponential.min(RETRY_MAX_DELAY_NO_HEADERS_MS as f64),
            }
        }
    };
    delay.min(RETRY_MAX_DELAY_MS as f64)
}

/// `initial · factor^exponent`, where a zero initial delay stays zero even if the power overflows.
fn grow(initial: f64, factor: f64, exponent: f64) -> f64 {
    if initial == 0.0 { 0.0 } else { initial * factor.powf(exponent) }
}

/// `ceil(base + base · 0.25 · random)`; an infinite base stays infinite (JavaScript would give
/// NaN for a zero draw, which no caller could use).
fn jitter_up(base: f64, random: f64) -> f64 {
    if base.is_infinite() { base } else { (base + base * RETRY_JITTER_FACTOR * random).ceil() }
}

/// The server's retry hint in milliseconds, from exact lower-case header names.
fn retry_hint(headers: &BTreeMap<String, String>, now_ms: u64) -> Option<f64> {
    if let Some(value) = headers.get("retry-after-ms").filter(|value| !value.is_empty()) {
        let millis = parse_float(value);
        if !millis.is_nan() {
            return Some(millis);
        }
    }
    let value = headers.get("retry-after").filter(|value| !value.is_empty())?;
    let seconds = parse_float(value);
    if !seconds.is_nan() {
        return Some((seconds * 1000.0).ceil());
    }
    let until = i128::from(parse_http_date(value)?) - i128::from(now_ms);
    (until > 0).then_some(until as f64)
}

/// JavaScript's `parseFloat`: the number at the start of `text`, or NaN when there is none.
pub fn parse_float(text: &str) -> f64 {
    let text = text.trim_start_matches(is_js_whitespace);
    let bytes = text.as_bytes();
    let (negative, rest) = match bytes.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if rest.starts_with("Infinity") {
        return if negative { f64::NEG_INFINITY } else { f64::INFINITY };
    }
    let rest = rest.as_bytes();
    let count_digits = |from: usize| rest.iter().skip(from).take_while(|byte| byte.is_ascii_digit()).count();
    let integral = count_digits(0);
    let mut end = integral;
    let mut fraction = 0;
    if rest.get(end) == Some(&b'.') {
        fraction = count_digits(end + 1);
        // A dot belongs to the number after digits ("1.") or before them (".5"), not alone.
        if integral > 0 || fraction > 0 {
            end += 1 + fraction;
        }
    }
    if integral == 0 && fraction == 0 {
        return f64::NAN;
    }
    let mantissa_end = end;
    let mut exponent = "";
    if matches!(rest.get(end), Some(b'e' | b'E')) {
        let signed = usize::from(matches!(rest.get(end + 1), Some(b'+' | b'-')));
        let digits = count_digits(end + 1 + signed);
        // An exponent counts only when digits follow it ("1e" is 1).
        if digits > 0 {
            exponent = std::str::from_utf8(&rest[end..end + 1 + signed + digits]).unwrap_or("");
        }
    }
    // Rebuild the literal in a form Rust's parser accepts ("1." and ".5" become "1.0" and "0.5");
    // it reads any length of digits and any exponent, rounding as JavaScript does.
    let digits = |range: std::ops::Range<usize>| std::str::from_utf8(&rest[range]).unwrap_or("");
    let literal = format!(
        "{}{}.{}{}",
        if negative { "-" } else { "" },
        if integral > 0 { digits(0..integral) } else { "0" },
        if fraction > 0 { digits(mantissa_end - fraction..mantissa_end) } else { "0" },
        exponent,
    );
    literal.parse().unwrap_or(f64::NAN)
}

const MONTHS: [&str; 12] =
    ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"];
const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
const LONG_DAYS: [&str; 7] = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"];

/// An HTTP-date (RFC 9110 5.6.7: IMF-fixdate, RFC 850 or asctime, all GMT) as epoch milliseconds.
///
/// The day name must be a valid one but is not checked against the date; any other text,
/// including ISO 8601, is `None`.
pub fn parse_http_date(text: &str) -> Option<i64> {
    parse_imf_fixdate(text).or_else(|| parse_rfc850(text)).or_else(|| parse_asctime(text))
}

/// `Sun, 06 Nov 1994 08:49:37 GMT`
fn parse_imf_fixdate(text: &str) -> Option<i64> {
    let (day_name, rest) = text.split_once(", ")?;
    DAYS.contains(&day_name).then_some(())?;
    let rest = rest.strip_suffix(" GMT")?;
    // "06 Nov 1994 08:49:37"
    let (day, rest) = split_fixed(rest, 2, ' ')?;
    let (month, rest) = split_fixed(rest, 3, ' ')?;
    let (year, time) = split_fixed(rest, 4, ' ')?;
    civil_millis(digits(year)?, month_number(month)?, digits(day)?, time)
}

/// `Sunday, 06-Nov-94 08:49:37 GMT`
fn parse_rfc850(text: &str) -> Option<i64> {
    let (day_name, rest) = text.split_once(", ")?;
    LONG_DAYS.contains(&day_name).then_some(())?;
    let rest = rest.strip_suffix(" GMT")?;
    let (day, rest) = split_fixed(rest, 2, '-')?;
    let (month, rest) = split_fixed(rest, 3, '-')?;
    let (year, time) = split_fixed(rest, 2, ' ')?;
    let year = digits(year)?;
    // RFC 9110 leaves the century to the reader; 00-49 is this century, 50-99 the last.
    let year = if year < 50 { 2000 + year } else { 1900 + year };
    civil_millis(year, month_number(month)?, digits(day)?, time)
}

/// `Sun Nov  6 08:49:37 1994`
fn parse_asctime(text: &str) -> Option<i64> {
    let (day_name, rest) = split_fixed(text, 3, ' ')?;
    DAYS.contains(&day_name).then_some(())?;
    let (month, rest) = split_fixed(rest, 3, ' ')?;
    let (day, rest) = split_fixed(rest, 2, ' ')?;
    // The day is two digits or a space and one digit.
    let day = digits(day.strip_prefix(' ').unwrap_or(day))?;
    let (time, year) = split_fixed(rest, 8, ' ')?;
    (year.len() == 4).then_some(())?;
    civil_millis(digits(year)?, month_number(month)?, day, time)
}

/// Splits `text` after exactly `len` bytes, which must be followed by `separator`.
fn split_fixed(text: &str, len: usize, separator: char) -> Option<(&str, &str)> {
    let head = text.get(..len)?;
    let rest = text.get(len..)?.strip_prefix(separator)?;
    Some((head, rest))
}

/// A non-empty run of ASCII digits as a number.
fn digits(text: &str) -> Option<i64> {
    if text.is_empty() || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

fn month_number(name: &str) -> Option<i64> {
    let index = MONTHS.iter().position(|month| *month == name)?;
    i64::try_from(index).ok().map(|index| index + 1)
}

/// Epoch milliseconds of a date and an `HH:MM:SS` time in UTC, if both are valid.
fn civil_millis(year: i64, month: i64, day: i64, time: &str) -> Option<i64> {
    let (hour, rest) = split_fixed(time, 2, ':')?;
    let (minute, second) = split_fixed(rest, 2, ':')?;
    (second.len() == 2).then_some(())?;
    let (hour, minute, second) = (digits(hour)?, digits(minute)?, digits(second)?);
    // RFC 9110 allows second 60 for a leap second.
    if hour > 23 || minute > 59 || second > 60 {
        return None;
    }
    if day < 1 || day > days_in_month(year, month) {
        return None;
    }
    let days = crate::calendar::days_from_civil(year, month, day);
    Some(((days * 24 + hour) * 60 + minute) * 60_000 + second * 1000)
}

fn days_in_month(year: i64, month: i64) -> i64 {
    let leap = (year % 4 == 0 && year % 100 != 0) || year % 400 == 0;
    match month {
        2 if leap => 29,
        2 => 28,
        4 | 6 | 9 | 11 => 30,
        _ => 31,
    }
}

/// The message to show while retrying `error`, or `None` when it must not be retried (SPEC 7.2, 7.3).
///
/// The hosted-service upsell actions of OpenCode are out of scope, so only the message is returned.
pub fn retryable(error: &MessageError, config: Option<&RetryConfig>) -> Option<String> {
    match error {
        // A blocked answer is the provider's verdict on the content: asking again gets the same.
        MessageError::ContextOverflowError { .. } | MessageError::ContentFilterError { .. } => None,
        MessageError::ApiError { message, status_code, is_retryable, response_body, metadata, .. } => {
            let code = metadata.as_ref().and_then(|metadata| metadata.get("code"));
            if code.is_some_and(|code| code == RETRY_UNSAFE_CODE || code == LOCAL_REFUSED_CODE) {
                return None;
            }
            let retried = match (config, *status_code) {
                // A configured policy classifies by status alone: a 400 is never retried, whatever its text.
                (Some(config), Some(status)) => config.retries_status(status),
                _ => {
                    *is_retryable
                        || status_code.is_some_and(|status| status >= 500)
                        || matches_retryable(message)
                        || response_body.as_deref().is_some_and(matches_retryable)
                }
            };
            if !retried {
                return None;
            }
            Some(if message.contains("Overloaded") {
                "Provider is overloaded".to_owned()
            } else {
                message.clone()
            })
        }
        // No `data.message` at all, so nothing to classify.
        MessageError::MessageOutputLengthError {} => None,
        MessageError::ProviderAuthError { message, .. }
        | MessageError::UnknownError { message }
        | MessageError::MessageAbortedError { message }
        | MessageError::StructuredOutputError { message, .. } => {
            let lower = message.to_lowercase();
            if lower.contains("too_many_requests") {
                Some("Too Many Requests".to_owned())
            } else if lower.contains("exhausted") || lower.contains("unavailable") {
                Some("Provider is overloaded".to_owned())
            } else if matches_retryable(message) {
                Some(message.clone())
            } else {
                None
            }
        }
    }
}

/// Whether to retry a failure and after how long, within the retry budget (SPEC 7.3 `decide`).
pub fn decide(request: &RetryRequest<'_>) -> RetryDecision {
    let Some(message) = retryable(request.error, request.config) else {
        return RetryDecision::Stop;
    };
    let (attempt, elapsed_ms) = match request.carried {
        Some(carried) => (
            carried.attempts.saturating_add(request.attempt),
            request.now_ms.saturating_sub(carried.since_ms),
        ),
        None => (request.attempt, request.elapsed_ms),
    };
    // A configured policy is the authority, even over a RetryLimit lowered to 0.
    let allowed = request.config.map_or(request.limit.0, RetryConfig::allowed_retries);
    if attempt > allowed {
        return RetryDecision::Stop;
    }
    let api_error = matches!(request.error, MessageError::ApiError { .. }).then_some(request.error);
    let mut wait_ms = delay(attempt, api_error, request.random, request.now_ms, request.config);
    if let Some(budget) = request.config.and_then(|config| config.max_elapsed_ms) {
        let remaining = i128::from(budget) - i128::from(elapsed_ms);
        if remaining <= 0 {
            return RetryDecision::Stop;
        }
        wait_ms = wait_ms.min(remaining as f64);
    }
    RetryDecision::Retry { wait_ms, message }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_float_follows_javascript() {
        let cases: &[(&str, f64)] = &[
            ("30abc", 30.0),
            (" 7", 7.0),
            ("\u{feff}\u{3000}\n8", 8.0),
            ("1e3", 1000.0),
            ("1.e3", 1000.0),
            (".5e1", 5.0),
            ("1e", 1.0),
            ("1e+", 1.0),
            ("1e-2x", 0.01),
            ("+2", 2.0),
            ("-5", -5.0),
            ("-.5", -0.5),
            ("1.", 1.0),
            ("2026-01-01T00:00:30Z", 2026.0),
            ("Infinity", f64::INFINITY),
            ("-Infinityx", f64::NEG_INFINITY),
            ("1e400", f64::INFINITY),
            ("1e-400", 0.0),
            ("00012", 12.0),
            ("1e99999999999999999999999", f64::INFINITY),
            ("-1e-99999999999999999999999", -0.0),
            ("0.1e1", 1.0),
        ];
        let long = format!("{}5", "0".repeat(100_000));
        assert_eq!(parse_float(&long), 5.0);
        for (text, expected) in cases {
            assert_eq!(parse_float(text), *expected, "{text:?}");
        }
        for text in ["", " ", ".", "-", "+", "inf", "infinity", "+-1", "e5", ".e1", "\u{85}1", "Infinit"] {
            assert!(parse_float(text).is_nan(), "{text:?}");
        }
    }

    #[test]
    fn http_dates_in_all_three_forms() {
        let expected = Some(784_111_777_000);
        assert_eq!(parse_http_date("Sun, 06 Nov 1994 08:49:37 GMT"), expected);
        assert_eq!(parse_http_date("Sunday, 06-Nov-94 08:49:37 GMT"), expected);
        assert_eq!(parse_http_date("Sun Nov  6 08:49:37 1994"), expected);
        assert_eq!(parse_http_date("Sun Nov 06 08:49:37 1994"), expected);
        // The day name is not checked against the date.
        assert_eq!(parse_http_date("Mon, 06 Nov 1994 08:49:37 GMT"), expected);
        assert_eq!(parse_http_date("Thursday, 01-Jan-26 00:00:00 GMT"), Some(1_767_225_600_000));
        assert_eq!(parse_http_date("Thursday, 01-Jan-50 00:00:00 GMT"), Some(-631_152_000_000));
        assert_eq!(
            parse_http_date("Sat, 28 Feb 2032 23:59:60 GMT"),
            parse_http_date("Sun, 29 Feb 2032 00:00:00 GMT")
        );
        for text in [
            "2026-01-01T00:00:30Z",
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "sun, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06 nov 1994 08:49:37 GMT",
            "Sun, 31 Nov 1994 08:49:37 GMT",
            "Sun, 29 Feb 1900 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT ",
            " Sun, 06 Nov 1994 08:49:37 GMT",
            "Sun, 06-Nov-94 08:49:37 GMT",
            "Sun Nov 6 08:49:37 1994",
            "Sun Nov  6 08:49:37 94",
            "Sunday Nov  6 08:49:37 1994",
            "Invalid Date String",
            "Sun, +6 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:+7 GMT",
        ] {
            assert_eq!(parse_http_date(text), None, "{text:?}");
        }
    }

    #[test]
    fn retryable_patterns_compile() {
        use crate::js_text::compile_js_patterns;
        assert_eq!(compile_js_patterns(&RETRYABLE_PATTERNS).len(), RETRYABLE_PATTERNS.len());
        assert!(RETRYABLE_REGEX.is_some());
    }

    #[test]
    fn the_joined_retryable_regex_matches_where_one_of_the_patterns_does() {
        let texts = [
            "500 Internal Server Error",
            "Rate limit reached for requests",
            "timeout",
            "a timeout",
            "Request timed out",
            "stream timeout!",
            "ECONNRESET",
            "network_error",
            "Please try again later.",
            "currently at capacity",
            "try again inside",
            "Bad Request",
            "",
        ];
        crate::js_text::assert_joined_agrees(&RETRYABLE_PATTERNS, RETRYABLE_REGEX.as_ref(), &texts);
    }

    #[test]
    fn clamp_delay_bounds_timer_values() {
        assert_eq!(clamp_delay(-5000.0), Duration::ZERO);
        assert_eq!(clamp_delay(f64::NAN), Duration::ZERO);
        assert_eq!(clamp_delay(1500.5), Duration::from_micros(1_500_500));
        assert_eq!(clamp_delay(f64::INFINITY), Duration::from_millis(RETRY_MAX_DELAY_MS));
    }

    #[test]
    fn carried_attempts_and_time_count() {
        let error = MessageError::UnknownError { message: "socket hang up".to_owned() };
        let config =
            RetryConfig { max_attempts: Some(4), max_elapsed_ms: Some(10_000), ..RetryConfig::default() };
        let mut request = RetryRequest::new(&error, 1, 0.0, 50_000);
        request.config = Some(&config);
        request.carried = Some(RetryCarry { attempts: 2, since_ms: 45_000 });
        // Attempt 3 overall, 5 s of the 10 s budget left: the 8 s backoff is clipped to 5 s.
        assert_eq!(
            decide(&request),
            RetryDecision::Retry { wait_ms: 5_000.0, message: "socket hang up".to_owned() }
        );
        request.attempt = 2;
        assert_eq!(decide(&request), RetryDecision::Stop);
        request.attempt = 1;
        request.carried = Some(RetryCarry { attempts: 0, since_ms: 40_000 });
        assert_eq!(decide(&request), RetryDecision::Stop);
    }

    #[test]
    fn retry_unsafe_errors_are_never_retried() {
        let error = MessageError::ApiError {
            message: "connection error 500".to_owned(),
            status_code: Some(500),
            is_retryable: true,
            response_headers: None,
            response_body: None,
            metadata: Some(BTreeMap::from([("code".to_owned(), RETRY_UNSAFE_CODE.to_owned())])),
        };
        assert_eq!(retryable(&error, None), None);
        assert_eq!(retryable(&error, Some(&RetryConfig::default())), None);
    }
}
