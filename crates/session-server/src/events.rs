//! Events for clients: the runtime's bus turned into the events OpenCode's v1 client reads,
//! and the `GET /event` stream.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use session_core::{JsonObject, Part, PartKind, PermissionId, SessionId, permission::PermissionAsk};
use session_runtime::{BusEvent, Clock as _, SystemClock};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::AppState;
use crate::cluster::Outbox;

/// How many events a slow `/event` client may fall behind before it loses the oldest.
const HUB_CAPACITY: usize = 4096;

/// Streaming parts kept to grow with deltas; a part that never ends is dropped past this.
const MAX_STREAMING_PARTS: usize = 1024;

/// The events every `/event` client receives, already serialized as `{"type", "properties"}`.
#[derive(Debug, Clone)]
pub(crate) struct Hub {
    sender: broadcast::Sender<Arc<str>>,
}

impl Hub {
    /// A hub nobody listens to yet.
    pub(crate) fn new() -> Self {
        let (sender, _) = broadcast::channel(HUB_CAPACITY);
        Self { sender }
    }

    /// Publishes `{"type": kind, "properties": properties}` to every client.
    pub(crate) fn publish(&self, kind: &str, properties: Value) {
        let event = json!({"type": kind, "properties": properties});
        self.publish_value(&event);
    }

    /// Publishes an event that is already `{"type", "properties"}`.
    pub(crate) fn publish_value(&self, event: &Value) {
        // Nobody listening is fine.
        let _ = self.sender.send(Arc::from(event.to_string()));
    }

    /// A new client's subscription.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<str>> {
        self.sender.subscribe()
    }
}

/// Turns bus events into client events: `message.part.delta` becomes the v1 client's
/// `message.part.updated` carrying the whole part so far and the `delta`.
#[derive(Debug, Default)]
pub(crate) struct Translator {
    streaming: HashMap<String, Part>,
}

impl Translator {
    /// The client event for a bus event.
    pub(crate) fn translate(&mut self, event: &BusEvent) -> Option<Value> {
        match event {
            BusEvent::PartUpdated { part } => {
                let streaming = match &part.kind {
                    PartKind::Text(text) => text.time.as_ref().is_some_and(|t| t.end.is_none()),
                    PartKind::Reasoning(reasoning) => reasoning.time.end.is_none(),
                    _ => false,
                };
                if streaming {
                    if self.streaming.len() >= MAX_STREAMING_PARTS {
                        self.streaming.clear();
                    }
                    self.streaming.insert(part.id.to_string(), (**part).clone());
                } else {
                    self.streaming.remove(part.id.as_str());
                }
                serde_json::to_value(event).ok()
            }
            BusEvent::PartDelta { part_id, field, delta, .. } => {
                let Some(part) = self.streaming.get_mut(part_id.as_str()) else {
                    // A delta for a part this server never saw start: pass it on as it is.
                    return serde_json::to_value(event).ok();
                };
                if field == "text" {
                    match &mut part.kind {
                        PartKind::Text(text) => text.text.push_str(delta),
                        PartKind::Reasoning(reasoning) => reasoning.text.push_str(delta),
                        _ => {}
                    }
                }
                Some(json!({"type": "message.part.updated", "properties": {"part": part, "delta": delta}}))
            }
            BusEvent::PermissionAsked(ask) => Some(json!({
                "type": "permission.updated",
                "properties": Permission::new(ask, SystemClock.now_ms()),
            })),
            other => serde_json::to_value(other).ok(),
        }
    }
}

/// Carries the runtime's bus to the hub (and to the other instances) until shutdown.
pub(crate) fn spawn_translator(
    mut bus: broadcast::Receiver<BusEvent>,
    hub: Hub,
    cluster: Option<Arc<Outbox>>,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        let mut translator = Translator::default();
        loop {
            let event = tokio::select! {
                () = shutdown.cancelled() => break,
                event = bus.recv() => event,
            };
            match event {
                Ok(event) => {
                    if let Some(value) = translator.translate(&event) {
                        hub.publish_value(&value);
                    }
                    if let Some(cluster) = &cluster {
                        cluster.forward(&event);
                    }
                }
                Err(broadcast::error::RecvError::Lagged(lost)) => {
                    tracing::warn!(lost, "the event translator fell behind; events were lost");
                }
                Err(broadcast::error::RecvError::Closed) => break,
            }
        }
    })
}

/// The v1 client's `Permission`: an ask as `permission.updated` carries it.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Permission {
    /// The ask's id.
    pub id: PermissionId,
    /// The permission asked for (`read`, `edit`, `bash`, ...).
    #[serde(rename = "type")]
    pub kind: String,
    /// The values asked for.
    pub pattern: Vec<String>,
    /// The asking session.
    #[serde(rename = "sessionID")]
    pub session_id: SessionId,
    /// The assistant message of the asking tool call (empty when no tool asks).
    #[serde(rename = "messageID")]
    pub message_id: String,
    /// The permission and its patterns, for display.
    pub title: String,
    /// Details shown to the user.
    pub metadata: JsonObject,
    /// When the ask was published.
    pub time: PermissionTime,
    /// The asking tool call.
    #[serde(rename = "callID", default, skip_serializing_if = "Option::is_none")]
    pub call_id: Option<String>,
}

/// When an ask was published.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct PermissionTime {
    /// Epoch milliseconds.
    pub created: u64,
}

impl Permission {
    /// The client's view of `ask`, published at `created` (epoch ms).
    pub fn new(ask: &PermissionAsk, created: u64) -> Self {
        let request = &ask.request;
        let title = if request.patterns.is_empty() {
            request.permission.clone()
        } else {
            format!("{} {}", request.permission, request.patterns.join(", "))
        };
        Self {
            id: ask.id.clone(),
            kind: request.permission.clone(),
            pattern: request.patterns.clone(),
            session_id: ask.session_id.clone(),
            message_id: ask.tool.as_ref().map(|t| t.message_id.to_string()).unwrap_or_default(),
            title,
            metadata: request.metadata.clone(),
            time: PermissionTime { created },
            call_id: ask.tool.as_ref().map(|t| t.call_id.clone()),
        }
    }
}

/// `GET /event`: server-sent events, `server.connected` first, then every event.
pub(crate) async fn stream(
    State(state): State<Arc<AppState>>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let receiver = state.hub.subscribe();
    let shutdown = state.shutdown.clone();
    let connected = json!({"type": "server.connected", "properties": {}}).to_string();
    let events = futures_util::stream::unfold(
        (Some(connected), receiver, shutdown),
        |(first, mut receiver, shutdown)| async move {
            if let Some(first) = first {
                return Some((Ok(Event::default().data(first)), (None, receiver, shutdown)));
            }
            loop {
                let next = tokio::select! {
                    () = shutdown.cancelled() => return None,
                    next = receiver.recv() => next,
                };
                match next {
                    Ok(data) => return Some((Ok(Event::default().data(&*data)), (None, receiver, shutdown))),
                    Err(broadcast::error::RecvError::Lagged(lost)) => {
                        // Lost events are not replayed: say so where an operator will see it.
                        tracing::warn!(lost, "an /event client fell behind and lost events");
                    }
                    Err(broadcast::error::RecvError::Closed) => return None,
                }
            }
        },
    );
    Sse::new(events).keep_alive(KeepAlive::new().interval(Duration::from_secs(10)))
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use session_core::{FileDiff, FileStatus, Identifier as _};

    use super::*;

    #[test]
    fn spec_14_session_diff_has_opencodes_event_shape() {
        let event = BusEvent::SessionDiff {
            session_id: SessionId::parse("ses_1").unwrap_or_else(|e| panic!("{e}")),
            diff: vec![FileDiff {
                file: "src/a.rs".into(),
                additions: 2,
                deletions: 1,
                status: Some(FileStatus::Modified),
                patch: None,
            }],
        };
        assert_eq!(
            Translator::default().translate(&event),
            Some(json!({"type": "session.diff", "properties": {"sessionID": "ses_1", "diff": [
                {"file": "src/a.rs", "additions": 2, "deletions": 1, "status": "modified"}]}}))
        );
    }
}
