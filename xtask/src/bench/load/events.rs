//! The load driver's `/event` client: the stamped deltas, idles and errors it reads.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use futures_util::StreamExt as _;
use serde_json::Value;
use session_testkit::SENT_US;

use super::unix_us;

/// Whether `token` is a stamp: 16 ASCII digits.
pub(super) fn is_stamp(token: &str) -> bool {
    token.len() == 16 && token.bytes().all(|b| b.is_ascii_digit())
}

/// The stamps in a text, in order.
pub(super) fn stamps(text: &str) -> impl Iterator<Item = u64> + '_ {
    text.split_whitespace().filter(|token| is_stamp(token)).filter_map(|token| token.parse().ok())
}

/// The text with its stamps put back to the placeholder: equal to the script's text when
/// nothing was lost.
pub(super) fn unstamped(text: &str) -> String {
    text.split(' ').map(|token| if is_stamp(token) { SENT_US } else { token }).collect::<Vec<_>>().join(" ")
}

/// The `q` quantile (nearest rank) of sorted values, 0 for none.
pub(super) fn quantile(sorted: &[f64], q: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (q * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// What the `/event` client has seen so far.
#[derive(Debug, Default)]
pub(super) struct Seen {
    /// Provider-to-client latencies, microseconds.
    pub(super) latencies_us: Vec<f64>,
    /// The deltas of each part, concatenated, by part id.
    pub(super) part_text: HashMap<String, String>,
    /// Sessions that went idle.
    pub(super) idle: HashSet<String>,
    /// `session.error` events, as text.
    pub(super) errors: Vec<String>,
    /// Events received.
    pub(super) events: usize,
}

/// Folds one event, received at `at_us`, into `seen`.
pub(super) fn observe(seen: &mut Seen, event: &Value, at_us: u64) {
    seen.events += 1;
    let properties = &event["properties"];
    match event["type"].as_str().unwrap_or_default() {
        "message.part.delta" => {
            let Some(delta) = properties["delta"].as_str() else { return };
            for stamp in stamps(delta) {
                seen.latencies_us.push(at_us.saturating_sub(stamp) as f64);
            }
            if let Some(part) = properties["partID"].as_str() {
                seen.part_text.entry(part.to_owned()).or_default().push_str(delta);
            }
        }
        "session.idle" => {
            if let Some(session) = properties["sessionID"].as_str() {
                seen.idle.insert(session.to_owned());
            }
        }
        "session.error" => seen.errors.push(properties.to_string()),
        _ => {}
    }
}

/// Whether an event's data may be a delta, an idle or an error (the server writes `id`, then
/// `type`, first).
pub(super) fn worth_parsing(data: &str) -> bool {
    let head = data.get(..96).unwrap_or(data);
    head.contains("\"message.part.delta\"")
        || head.contains("\"session.idle\"")
        || head.contains("\"session.error\"")
}

/// Reads `/event` into `seen` until the stream ends.
pub(super) async fn follow_events(response: reqwest::Response, seen: Arc<Mutex<Seen>>) {
    let mut stream = response.bytes_stream();
    let mut buffer = String::new();
    while let Some(Ok(chunk)) = stream.next().await {
        let at = unix_us();
        buffer.push_str(&String::from_utf8_lossy(&chunk));
        while let Some(end) = buffer.find("\n\n") {
            let block: String = buffer.drain(..end + 2).collect();
            let data: Vec<&str> =
                block.lines().filter_map(|line| line.strip_prefix("data:")).map(str::trim_start).collect();
            if data.is_empty() {
                continue; // a keep-alive comment
            }
            let data = data.join("\n");
            let mut seen = seen.lock().unwrap_or_else(PoisonError::into_inner);
            // Only deltas, idles and errors are read: parsing every event would make this
            // client, not the server, the slow part.
            if !worth_parsing(&data) {
                seen.events += 1;
                continue;
            }
            if let Ok(event) = serde_json::from_str::<Value>(&data) {
                observe(&mut seen, &event, at);
            }
        }
    }
}
