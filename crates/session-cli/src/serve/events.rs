//! Events for clients: the runtime's bus turned into the events OpenCode's v1 client reads,
//! the permission asker that publishes asks, and the `GET /event` stream.

use std::collections::HashMap;
use std::convert::Infallible;
use std::sync::{Arc, OnceLock};
use std::time::Duration;

use async_trait::async_trait;
use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use serde_json::{Value, json};
use session_core::{Part, PartKind, permission::PermissionAsk, permission::Reply, permission::Resolution};
use session_runtime::{BusEvent, Clock as _, SystemClock};
use session_tools::{PermissionAnswer, PermissionAsker};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use super::AppState;
use super::cluster::Cluster;

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
            other => serde_json::to_value(other).ok(),
        }
    }
}

/// Carries the runtime's bus to the hub (and to the other instances) until shutdown.
pub(crate) fn spawn_translator(
    mut bus: broadcast::Receiver<BusEvent>,
    hub: Hub,
    cluster: Option<Arc<Cluster>>,
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

/// The v1 client's `Permission` for an ask.
pub(crate) fn permission_json(ask: &PermissionAsk) -> Value {
    let request = &ask.request;
    let title = if request.patterns.is_empty() {
        request.permission.clone()
    } else {
        format!("{} {}", request.permission, request.patterns.join(", "))
    };
    let mut value = json!({
        "id": ask.id,
        "type": request.permission,
        "pattern": request.patterns,
        "sessionID": ask.session_id,
        "messageID": ask.tool.as_ref().map(|t| t.message_id.to_string()).unwrap_or_default(),
        "title": title,
        "metadata": request.metadata,
        "time": {"created": SystemClock.now_ms()},
    });
    if let (Some(tool), Some(object)) = (&ask.tool, value.as_object_mut()) {
        object.insert("callID".into(), Value::String(tool.call_id.clone()));
    }
    value
}

/// The reply's name in `permission.replied`.
pub(crate) fn reply_name(reply: Reply) -> &'static str {
    match reply {
        Reply::Once => "once",
        Reply::Always => "always",
        Reply::Reject => "reject",
    }
}

/// Publishes asks as `permission.updated` and lets them wait for the HTTP reply.
#[derive(Debug)]
pub(crate) struct HttpAsker {
    hub: Hub,
    cluster: OnceLock<Arc<Cluster>>,
}

impl HttpAsker {
    pub(crate) fn new(hub: Hub) -> Self {
        Self { hub, cluster: OnceLock::new() }
    }

    /// Also tell the other instances about asks and replies.
    pub(crate) fn attach(&self, cluster: Arc<Cluster>) {
        let _ = self.cluster.set(cluster);
    }
}

#[async_trait]
impl PermissionAsker for HttpAsker {
    async fn ask(&self, ask: &PermissionAsk) -> Option<PermissionAnswer> {
        let permission = permission_json(ask);
        self.hub.publish("permission.updated", permission.clone());
        if let Some(cluster) = self.cluster.get() {
            cluster.permission_asked(ask, permission);
        }
        // The answer comes through `PermissionEngine::reply` (the HTTP route).
        None
    }

    fn replied(&self, resolution: &Resolution) {
        let properties = json!({
            "sessionID": resolution.session_id,
            "permissionID": resolution.request_id,
            "response": reply_name(resolution.reply),
        });
        self.hub.publish("permission.replied", properties.clone());
        if let Some(cluster) = self.cluster.get() {
            cluster.permission_replied(resolution);
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
