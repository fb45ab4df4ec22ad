//! Events for clients: the runtime's bus turned into the events OpenCode 1.18's clients read
//! (each with an `id`), the `GET /event` and `GET /global/event` streams, and the statuses of
//! the sessions that run.

use std::collections::{BTreeMap, HashMap};
use std::convert::Infallible;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::State;
use axum::response::sse::{Event, KeepAlive, Sse};
use futures_util::Stream;
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use session_core::permission::{PermissionAsk, PermissionRequest, ToolCallRef};
use session_core::{Identifier as _, JsonObject, MessageId, PermissionId, SessionId};
use session_runtime::{BusEvent, Clock as _, SessionStatus, SystemClock};
use tokio::sync::broadcast;
use tokio_util::sync::CancellationToken;

use crate::AppState;
use crate::cluster::Outbox;
use crate::session_info::SessionInfo;

/// How many events a slow `/event` client may fall behind before it loses the oldest.
const HUB_CAPACITY: usize = 4096;

/// The events every `/event` client receives, already serialized as
/// `{"id", "type", "properties"}`.
#[derive(Debug, Clone)]
pub(crate) struct Hub {
    sender: broadcast::Sender<Arc<str>>,
    ids: Arc<EventIds>,
    /// The served project's folder: `/global/event` names it in every event.
    directory: Arc<str>,
}

impl Hub {
    /// A hub nobody listens to yet, for the project in `directory`.
    pub(crate) fn new(directory: &str) -> Self {
        let (sender, _) = broadcast::channel(HUB_CAPACITY);
        Self { sender, ids: Arc::new(EventIds::new(SystemClock.now_ms())), directory: Arc::from(directory) }
    }

    /// Publishes `{"id", "type": kind, "properties": properties}` to every client.
    pub(crate) fn publish(&self, kind: &str, properties: Value) {
        let event = json!({"id": self.ids.next(), "type": kind, "properties": properties});
        // Nobody listening is fine.
        let _ = self.sender.send(Arc::from(event.to_string()));
    }

    /// Publishes every client event `event` stands for.
    pub(crate) fn publish_bus(&self, event: &BusEvent) {
        for (kind, properties) in wire_events(event, SystemClock.now_ms()) {
            self.publish(kind, properties);
        }
    }

    /// A new client's subscription.
    pub(crate) fn subscribe(&self) -> broadcast::Receiver<Arc<str>> {
        self.sender.subscribe()
    }
}

/// Event ids (`evt_...`), ascending within a process; the start time and a random tag keep
/// two instances (or two runs) from giving the same id.
#[derive(Debug)]
struct EventIds {
    prefix: String,
    next: AtomicU64,
}

impl EventIds {
    fn new(now_ms: u64) -> Self {
        let tag = session_core::Entropy::next_u64(&mut session_runtime::random_entropy(now_ms)) & 0xffff;
        Self { prefix: format!("evt_{now_ms:012x}{tag:04x}"), next: AtomicU64::new(0) }
    }

    fn next(&self) -> String {
        format!("{}{:010x}", self.prefix, self.next.fetch_add(1, Ordering::Relaxed))
    }
}

/// The client events (type and properties) of one bus event, in OpenCode 1.18's shapes:
/// messages, parts and sessions carry their `sessionID`, text grows by `message.part.delta`,
/// asks are `permission.asked` and answers `permission.replied {sessionID, requestID, reply}`.
pub(crate) fn wire_events(event: &BusEvent, now_ms: u64) -> Vec<(&'static str, Value)> {
    let properties = match event {
        BusEvent::SessionCreated { info } | BusEvent::SessionUpdated { info } => {
            json!({"sessionID": info.id, "info": SessionInfo::new(info)})
        }
        BusEvent::MessageUpdated { info } => json!({"sessionID": info.session_id(), "info": info}),
        BusEvent::PartUpdated { part } => json!({"sessionID": part.session_id, "part": part, "time": now_ms}),
        BusEvent::PermissionReplied { session_id, permission_id, response } => {
            json!({"sessionID": session_id, "requestID": permission_id, "reply": response})
        }
        other => match serde_json::to_value(other) {
            Ok(Value::Object(mut object)) => object.remove("properties").unwrap_or_else(|| json!({})),
            Ok(_) | Err(_) => return Vec::new(),
        },
    };
    vec![(event.name(), properties)]
}

/// Carries the runtime's bus to the hub (and to the other instances) until shutdown.
pub(crate) fn spawn_translator(
    mut bus: broadcast::Receiver<BusEvent>,
    hub: Hub,
    statuses: Statuses,
    cluster: Option<Arc<Outbox>>,
    shutdown: CancellationToken,
) -> tokio::task::JoinHandle<()> {
    tokio::spawn(async move {
        loop {
            let event = tokio::select! {
                () = shutdown.cancelled() => break,
                event = bus.recv() => event,
            };
            match event {
                Ok(event) => {
                    statuses.observe(&event);
                    hub.publish_bus(&event);
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

/// The sessions that are not idle, with their status, and the asks waiting for an answer,
/// as this server has seen them on the bus and from other instances (`GET /session/status`,
/// and which session an ask answered by its id alone belongs to).
#[derive(Debug, Clone, Default)]
pub(crate) struct Statuses(Arc<Mutex<Seen>>);

#[derive(Debug, Default)]
struct Seen {
    statuses: HashMap<SessionId, SessionStatus>,
    asks: HashMap<PermissionId, SessionId>,
}

/// Sessions tracked at most; past it the oldest knowledge is dropped (a leak guard, far above
/// any real number of sessions running at once).
const MAX_TRACKED_STATUSES: usize = 100_000;

impl Statuses {
    fn seen(&self) -> std::sync::MutexGuard<'_, Seen> {
        self.0.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Notes a status change, an ask or an answer carried by `event`.
    pub(crate) fn observe(&self, event: &BusEvent) {
        match event {
            BusEvent::SessionStatus { session_id, status } => {
                let mut seen = self.seen();
                if *status == SessionStatus::Idle {
                    seen.statuses.remove(session_id);
                    // Asks end with their run.
                    seen.asks.retain(|_, session| session != session_id);
                } else {
                    if seen.statuses.len() >= MAX_TRACKED_STATUSES {
                        seen.statuses.clear();
                    }
                    seen.statuses.insert(session_id.clone(), status.clone());
                }
            }
            BusEvent::PermissionAsked(ask) => {
                let mut seen = self.seen();
                if seen.asks.len() >= MAX_TRACKED_STATUSES {
                    seen.asks.clear();
                }
                seen.asks.insert(ask.id.clone(), ask.session_id.clone());
            }
            BusEvent::PermissionReplied { permission_id, .. } => {
                self.seen().asks.remove(permission_id);
            }
            _ => {}
        }
    }

    /// Every session that is busy or waiting to retry.
    pub(crate) fn snapshot(&self) -> BTreeMap<String, SessionStatus> {
        self.seen().statuses.iter().map(|(id, status)| (id.to_string(), status.clone())).collect()
    }

    /// The session an ask that waits for an answer belongs to.
    pub(crate) fn ask_session(&self, ask: &PermissionId) -> Option<SessionId> {
        self.seen().asks.get(ask).cloned()
    }
}

/// An ask as it travels between instances (OpenCode's older `Permission` shape; its
/// metadata stays behind).
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
    /// The ask this stands for (an "always" reply approves exactly the asked patterns, the
    /// list of "always" patterns not travelling).
    pub fn to_ask(&self) -> PermissionAsk {
        PermissionAsk {
            id: self.id.clone(),
            session_id: self.session_id.clone(),
            request: PermissionRequest {
                permission: self.kind.clone(),
                patterns: self.pattern.clone(),
                always: Vec::new(),
                metadata: self.metadata.clone(),
            },
            tool: self.call_id.as_ref().and_then(|call_id| {
                let message_id = MessageId::parse(&self.message_id).ok()?;
                Some(ToolCallRef { message_id, call_id: call_id.clone() })
            }),
        }
    }

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
    sse(&state.hub, state.shutdown.clone(), None)
}

/// `GET /global/event`: the same events, each wrapped as `{"directory", "payload"}` the way
/// OpenCode's terminal UI reads them.
pub(crate) async fn global_stream(
    State(state): State<Arc<AppState>>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>>> {
    let directory = serde_json::to_string(&*state.hub.directory).unwrap_or_else(|_| "\"\"".to_owned());
    sse(&state.hub, state.shutdown.clone(), Some(directory))
}

/// The event stream of `hub` until `shutdown`; `wrap` is the JSON string of the directory
/// each event is wrapped with, for `/global/event`.
fn sse(
    hub: &Hub,
    shutdown: CancellationToken,
    wrap: Option<String>,
) -> Sse<impl Stream<Item = Result<Event, Infallible>> + use<>> {
    let receiver = hub.subscribe();
    let connected = json!({"id": hub.ids.next(), "type": "server.connected", "properties": {}}).to_string();
    let shape = move |data: &str| match &wrap {
        Some(directory) => format!(r#"{{"directory":{directory},"payload":{data}}}"#),
        None => data.to_owned(),
    };
    let events = futures_util::stream::unfold(
        (Some(connected), receiver, shutdown, shape),
        |(first, mut receiver, shutdown, shape)| async move {
            if let Some(first) = first {
                let event = Event::default().data(shape(&first));
                return Some((Ok(event), (None, receiver, shutdown, shape)));
            }
            loop {
                let next = tokio::select! {
                    () = shutdown.cancelled() => return None,
                    next = receiver.recv() => next,
                };
                match next {
                    Ok(data) => {
                        let event = Event::default().data(shape(&data));
                        return Some((Ok(event), (None, receiver, shutdown, shape)));
                    }
                    Err(broadcast::error::RecvError::Lagged(lost)) => {
                        // Lost events are not replayed: say so where an operator will see it.
                        tracing::warn!(lost, "an event stream client fell behind and lost events");
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
    use session_core::permission::{PermissionRequest, ToolCallRef};
    use session_core::{FileDiff, FileStatus, Part, PartKind, PartTime, TextPart};

    use super::*;

    fn id<T: session_core::Identifier>(value: &str) -> T {
        T::parse(value).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn spec_14_session_diff_has_opencodes_event_shape() {
        let event = BusEvent::SessionDiff {
            session_id: id("ses_1"),
            diff: vec![FileDiff {
                file: "src/a.rs".into(),
                additions: 2,
                deletions: 1,
                status: Some(FileStatus::Modified),
                patch: None,
            }],
        };
        assert_eq!(
            wire_events(&event, 5),
            vec![(
                "session.diff",
                json!({"sessionID": "ses_1", "diff": [
                {"file": "src/a.rs", "additions": 2, "deletions": 1, "status": "modified"}]})
            )]
        );
    }

    #[test]
    fn spec_14_parts_carry_their_session_and_time_and_text_grows_by_deltas() {
        let part = Part {
            id: id("prt_1"),
            session_id: id("ses_1"),
            message_id: id("msg_1"),
            kind: PartKind::Text(TextPart {
                text: "Hel".into(),
                synthetic: None,
                ignored: None,
                time: Some(PartTime { start: 1, end: None }),
                metadata: None,
            }),
        };
        let updated = wire_events(&BusEvent::PartUpdated { part: Box::new(part) }, 7);
        assert_eq!(updated.len(), 1);
        assert_eq!(updated[0].0, "message.part.updated");
        assert_eq!(updated[0].1["sessionID"], "ses_1");
        assert_eq!(updated[0].1["time"], 7);
        assert_eq!(updated[0].1["part"]["text"], "Hel");
        let delta = BusEvent::PartDelta {
            session_id: id("ses_1"),
            message_id: id("msg_1"),
            part_id: id("prt_1"),
            field: "text".into(),
            delta: "lo".into(),
        };
        assert_eq!(
            wire_events(&delta, 8),
            vec![(
                "message.part.delta",
                json!({"sessionID": "ses_1", "messageID": "msg_1",
                "partID": "prt_1", "field": "text", "delta": "lo"})
            )]
        );
    }

    #[test]
    fn spec_14_asks_and_answers_have_opencode_1_18_shapes() {
        let ask = PermissionAsk {
            id: id("per_1"),
            session_id: id("ses_1"),
            request: PermissionRequest {
                permission: "bash".into(),
                patterns: vec!["ls".into()],
                always: vec!["ls *".into()],
                metadata: JsonObject::new(),
            },
            tool: Some(ToolCallRef { message_id: id("msg_1"), call_id: "call_1".into() }),
        };
        assert_eq!(
            wire_events(&BusEvent::PermissionAsked(Box::new(ask)), 1),
            vec![(
                "permission.asked",
                json!({"id": "per_1", "sessionID": "ses_1", "permission": "bash",
                "patterns": ["ls"], "always": ["ls *"], "metadata": {},
                "tool": {"messageID": "msg_1", "callID": "call_1"}})
            )]
        );
        let replied = BusEvent::PermissionReplied {
            session_id: id("ses_1"),
            permission_id: id("per_1"),
            response: session_core::permission::Reply::Always,
        };
        assert_eq!(
            wire_events(&replied, 1),
            vec![(
                "permission.replied",
                json!({"sessionID": "ses_1", "requestID": "per_1", "reply": "always"})
            )]
        );
    }

    #[test]
    fn a_notified_ask_keeps_its_tool_call() {
        let permission = Permission {
            id: id("per_1"),
            kind: "edit".into(),
            pattern: vec!["a.rs".into()],
            session_id: id("ses_1"),
            message_id: "msg_1".into(),
            title: "edit a.rs".into(),
            metadata: JsonObject::new(),
            time: PermissionTime { created: 1 },
            call_id: Some("call_1".into()),
        };
        let ask = permission.to_ask();
        assert_eq!(ask.request.patterns, vec!["a.rs".to_owned()]);
        assert_eq!(ask.tool, Some(ToolCallRef { message_id: id("msg_1"), call_id: "call_1".into() }));
    }

    /// Each bus event as `/event` sends it (`id` aside), byte for byte.
    #[test]
    fn every_bus_event_has_its_pinned_wire_json() {
        let lines: Vec<String> = crate::testdata::bus_events::every_bus_event()
            .iter()
            .flat_map(|event| wire_lines(event, 7))
            .collect();
        insta::assert_snapshot!("bus_events_on_the_wire", lines.join("\n"));
    }

    fn wire_lines(event: &BusEvent, now_ms: u64) -> Vec<String> {
        wire_events(event, now_ms)
            .into_iter()
            .map(|(kind, properties)| json!({"id": "evt_1", "type": kind, "properties": properties}).to_string())
            .collect()
    }

    #[test]
    fn event_ids_are_distinct_and_ascend() {
        let ids = EventIds::new(1_700_000_000_000);
        let first = ids.next();
        let second = ids.next();
        assert!(first.starts_with("evt_"));
        assert!(second > first, "{second} after {first}");
    }

    #[test]
    fn statuses_forget_idle_sessions_and_answered_asks() {
        let statuses = Statuses::default();
        let session: SessionId = id("ses_1");
        statuses
            .observe(&BusEvent::SessionStatus { session_id: session.clone(), status: SessionStatus::Busy });
        assert_eq!(statuses.snapshot().get("ses_1"), Some(&SessionStatus::Busy));
        let ask = PermissionAsk {
            id: id("per_1"),
            session_id: session.clone(),
            request: PermissionRequest {
                permission: "bash".into(),
                patterns: vec![],
                always: vec![],
                metadata: JsonObject::new(),
            },
            tool: None,
        };
        statuses.observe(&BusEvent::PermissionAsked(Box::new(ask)));
        assert_eq!(statuses.ask_session(&id("per_1")), Some(session.clone()));
        statuses.observe(&BusEvent::SessionStatus { session_id: session, status: SessionStatus::Idle });
        assert!(statuses.snapshot().is_empty());
        assert_eq!(statuses.ask_session(&id("per_1")), None);
    }
}
