//! Events for clients: the runtime's bus turned into the events OpenCode 1.18's clients read
//! (each with an `id`), and the statuses of the sessions that run. The streams that carry them
//! are `handlers::event`'s.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use session_core::{PermissionId, SessionId};
use session_runtime::BusEvent;
use session_runtime::clock::{Clock as _, SystemClock};
use session_runtime::sessions::SessionStatus;
use session_runtime::wire::{Connected, Event, Stamped};
use tokio::sync::broadcast;

use crate::session_info::project_id;

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

    /// Publishes `event`, with the next id, to every client.
    pub(crate) fn publish(&self, event: Event<'_>) {
        let id = self.ids.next();
        match serde_json::to_string(&Stamped { id: &id, event }) {
            // Nobody listening is fine.
            Ok(text) => drop(self.sender.send(Arc::from(text))),
            Err(error) => tracing::warn!(%error, "an event could not be serialized"),
        }
    }

    /// Publishes the client event `event` stands for, in OpenCode 1.18's shape: messages,
    /// parts and sessions carry their `sessionID`, text grows by `message.part.delta`, asks are
    /// `permission.asked` and answers `permission.replied {sessionID, requestID, reply}`.
    pub(crate) fn publish_bus(&self, event: &BusEvent) {
        self.publish(Event::opencode(event, SystemClock.now_ms(), &project_id));
    }

    /// The `server.connected` event a new stream begins with, serialized, with the next id.
    pub(crate) fn connected(&self) -> String {
        let id = self.ids.next();
        let event = Stamped { id: &id, event: Event::ServerConnected(Connected {}) };
        serde_json::to_string(&event).unwrap_or_default()
    }

    /// The served project's folder.
    pub(crate) fn directory(&self) -> &str {
        &self.directory
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
        let tag =
            session_core::Entropy::next_u64(&mut session_runtime::clock::random_entropy(now_ms)) & 0xffff;
        Self { prefix: format!("evt_{now_ms:012x}{tag:04x}"), next: AtomicU64::new(0) }
    }

    fn next(&self) -> String {
        format!("{}{:010x}", self.prefix, self.next.fetch_add(1, Ordering::Relaxed))
    }
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

#[cfg(test)]
mod tests {
    use serde_json::json;
    use session_core::JsonObject;
    use session_core::permission::{PermissionAsk, PermissionRequest, ToolCallRef};
    use session_core::{FileDiff, FileStatus, Part, PartKind, PartTime, TextPart};

    use super::*;

    /// The type and properties of the client event of `event`, sent at `now_ms`.
    fn wire_events(event: &BusEvent, now_ms: u64) -> Vec<(&'static str, serde_json::Value)> {
        let event = Event::opencode(event, now_ms, &project_id);
        let value = serde_json::to_value(&event).unwrap_or_default();
        vec![(event.name(), value["properties"].clone())]
    }

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
        let event = Event::opencode(event, now_ms, &project_id);
        vec![serde_json::to_string(&Stamped { id: "evt_1", event }).unwrap_or_default()]
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
