//! Several `session serve` instances on one PostgreSQL database: every instance tells the
//! others what changed (ids only, through LISTEN/NOTIFY), and each turns the notices of the
//! others into client events by reading the bodies from the store. Requests that only the
//! instance running a session can carry out (abort, a permission reply) travel the same way.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use session_core::{
    Identifier as _, Message, PermissionId, SessionId, permission::PermissionAsk, permission::Reply,
    permission::Resolution,
};
use session_runtime::{BusEvent, Runtime};
use session_store::{Notice, Notifier, NotifyError, Store};
use session_tools::PermissionEngine;
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use super::events::{Hub, reply_name};

/// Streaming text reaches the other instances as a re-read part at most this often per part
/// (the store writes deltas in batches anyway).
const DELTA_INTERVAL: Duration = Duration::from_millis(250);

/// This instance's side of the cluster: the queue of notices to send.
#[derive(Debug)]
pub(crate) struct Cluster {
    origin: String,
    outbox: mpsc::UnboundedSender<Notice>,
}

/// What a notice from another instance needs to be carried out here.
pub(crate) struct Receiver {
    pub(crate) runtime: Arc<Runtime>,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) permissions: Arc<PermissionEngine>,
    pub(crate) hub: Hub,
}

impl Cluster {
    /// Starts sending this instance's notices on `notifier`; `origin` tells them apart.
    pub(crate) fn start(notifier: Notifier, origin: String, shutdown: CancellationToken) -> Arc<Self> {
        let (outbox, mut queue) = mpsc::unbounded_channel::<Notice>();
        tokio::spawn(async move {
            loop {
                let notice = tokio::select! {
                    () = shutdown.cancelled() => break,
                    notice = queue.recv() => match notice {
                        Some(notice) => notice,
                        None => break,
                    },
                };
                if let Err(error) = notifier.notify(&notice).await {
                    tracing::warn!(%error, kind = %notice.kind, "cannot notify the other instances");
                }
            }
            notifier.close().await;
        });
        Arc::new(Self { origin, outbox })
    }

    fn send(&self, notice: Notice) {
        // The sender task is gone only at shutdown.
        let _ = self.outbox.send(notice);
    }

    fn notice(&self, kind: &str, session: &SessionId) -> Notice {
        Notice::new(self.origin.clone(), kind, session.to_string())
    }

    /// Tells the others about a local bus event (deltas are thinned by [`Self::throttle`]).
    pub(crate) fn forward(&self, event: &BusEvent) {
        if let Some(notice) = self.notice_for(event) {
            self.send(notice);
        }
    }

    fn notice_for(&self, event: &BusEvent) -> Option<Notice> {
        let notice = match event {
            BusEvent::SessionCreated { info } | BusEvent::SessionUpdated { info } => {
                self.notice(event.name(), &info.id)
            }
            BusEvent::SessionStatus { session_id, status } => {
                let mut notice = self.notice(event.name(), session_id);
                let mut status = serde_json::to_value(status).ok()?;
                // A retry's message is the only text; keep it short.
                if let Some(message) = status.get_mut("message")
                    && let Some(text) = message.as_str()
                {
                    *message = Value::String(text.chars().take(500).collect());
                }
                notice.detail.insert("status".into(), status);
                notice
            }
            BusEvent::SessionIdle { session_id }
            | BusEvent::SessionError { session_id, .. }
            | BusEvent::SessionCompacted { session_id } => self.notice(event.name(), session_id),
            BusEvent::MessageUpdated { info } => {
                let mut notice = self.notice(event.name(), info.session_id());
                notice.message = Some(info.id().to_string());
                notice
            }
            BusEvent::MessageRemoved { session_id, message_id } => {
                let mut notice = self.notice(event.name(), session_id);
                notice.message = Some(message_id.to_string());
                notice
            }
            BusEvent::PartRemoved { session_id, message_id, part_id } => {
                let mut notice = self.notice(event.name(), session_id);
                notice.message = Some(message_id.to_string());
                notice.part = Some(part_id.to_string());
                notice
            }
            BusEvent::PartUpdated { part } => {
                let mut notice = self.notice(event.name(), &part.session_id);
                notice.message = Some(part.message_id.to_string());
                notice.part = Some(part.id.to_string());
                notice
            }
            BusEvent::PartDelta { session_id, message_id, part_id, .. } => {
                // Sent as a part update; the receiver reads the text written so far.
                let mut notice = self.notice("message.part.updated", session_id);
                notice.message = Some(message_id.to_string());
                notice.part = Some(part_id.to_string());
                notice.detail.insert("streaming".into(), Value::Bool(true));
                notice
            }
            // Asks and replies come through the asker, with what they need.
            BusEvent::PermissionAsked(_) | BusEvent::PermissionReplied(_) => return None,
        };
        Some(notice)
    }

    /// Tells the others about an ask: its small fields travel along because an ask is not
    /// stored anywhere; its metadata (which may be large) does not.
    pub(crate) fn permission_asked(&self, ask: &PermissionAsk, mut permission: Value) {
        let mut notice = self.notice("permission.updated", &ask.session_id);
        notice.permission = Some(ask.id.to_string());
        if let Some(object) = permission.as_object_mut() {
            object.insert("metadata".into(), json!({}));
        }
        notice.detail.insert("permission".into(), permission);
        if let Err(NotifyError::TooLarge { .. }) = notice.encode() {
            // Patterns too long to carry: the others see the ask without them.
            if let Some(Value::Object(object)) = notice.detail.get_mut("permission") {
                object.insert("pattern".into(), json!([]));
                object.insert("title".into(), Value::String(ask.request.permission.clone()));
            }
        }
        self.send(notice);
    }

    /// Tells the others that an ask was settled.
    pub(crate) fn permission_replied(&self, resolution: &Resolution) {
        let mut notice = self.notice("permission.replied", &resolution.session_id);
        notice.permission = Some(resolution.request_id.to_string());
        notice.detail.insert("response".into(), Value::String(reply_name(resolution.reply).into()));
        self.send(notice);
    }

    /// Asks the instance running `session` to abort it.
    pub(crate) fn request_abort(&self, session: &SessionId) {
        self.send(self.notice("session.abort", session));
    }

    /// Passes a permission reply to the instance where the ask waits.
    pub(crate) fn request_reply(&self, session: &SessionId, permission: &PermissionId, reply: Reply) {
        let mut notice = self.notice("permission.reply", session);
        notice.permission = Some(permission.to_string());
        notice.detail.insert("response".into(), Value::String(reply_name(reply).into()));
        self.send(notice);
    }

    /// Listens for the others' notices and carries them out here until shutdown.
    pub(crate) async fn listen(
        self: Arc<Self>,
        notifier: &Notifier,
        receiver: Receiver,
        shutdown: CancellationToken,
    ) -> Result<tokio::task::JoinHandle<()>, NotifyError> {
        let mut listener = notifier.listen().await?;
        let origin = self.origin.clone();
        Ok(tokio::spawn(async move {
            let mut last_streamed: HashMap<String, Instant> = HashMap::new();
            loop {
                let notice = tokio::select! {
                    () = shutdown.cancelled() => break,
                    notice = listener.recv() => notice,
                };
                let notice = match notice {
                    Ok(notice) => notice,
                    Err(error) => {
                        tracing::warn!(%error, "listening for the other instances failed; retrying");
                        tokio::time::sleep(Duration::from_millis(500)).await;
                        continue;
                    }
                };
                if notice.origin == origin {
                    continue;
                }
                if notice.detail.contains_key("streaming")
                    && let Some(part) = &notice.part
                {
                    let now = Instant::now();
                    if last_streamed.get(part).is_some_and(|at| now.duration_since(*at) < DELTA_INTERVAL) {
                        continue;
                    }
                    if last_streamed.len() > 1024 {
                        last_streamed.clear();
                    }
                    last_streamed.insert(part.clone(), now);
                }
                receiver.carry_out(notice).await;
            }
        }))
    }
}

impl Receiver {
    /// Carries out one notice from another instance; unknown kinds are skipped.
    async fn carry_out(&self, notice: Notice) {
        let Some(session) = notice.session.as_deref().and_then(|id| SessionId::parse(id).ok()) else {
            tracing::debug!(kind = %notice.kind, "skipping a notice without a valid session id");
            return;
        };
        let session_json = Value::String(session.to_string());
        match notice.kind.as_str() {
            "session.abort" => {
                // Only the instance running the session acts on it.
                if self.runtime.is_busy(&session) {
                    self.runtime.cancel(&session);
                }
            }
            "permission.reply" => {
                let reply = notice
                    .detail
                    .get("response")
                    .and_then(|r| serde_json::from_value::<Reply>(r.clone()).ok());
                let id = notice.permission.as_deref().and_then(|id| PermissionId::parse(id).ok());
                if let (Some(reply), Some(id)) = (reply, id) {
                    self.permissions.reply(&id, reply, None);
                }
            }
            "session.created" | "session.updated" => match self.store.get_session(&session).await {
                Ok(info) => self.hub.publish(&notice.kind, json!({"info": info})),
                Err(error) => tracing::debug!(%error, "a notified session is not readable"),
            },
            "session.status" => {
                if let Some(status) = notice.detail.get("status") {
                    self.hub.publish("session.status", json!({"sessionID": session_json, "status": status}));
                }
            }
            "session.idle" | "session.compacted" => {
                self.hub.publish(&notice.kind, json!({"sessionID": session_json}));
            }
            "session.error" => {
                // The error is the one the newest failed assistant message carries.
                let error = match self.store.load_history(&session).await {
                    Ok(history) => history.messages.iter().rev().find_map(|m| match &m.info {
                        Message::Assistant(a) => a.error.clone(),
                        Message::User(_) => None,
                    }),
                    Err(_) => None,
                };
                let mut properties = json!({"sessionID": session_json});
                if let (Some(error), Some(object)) = (error, properties.as_object_mut()) {
                    object.insert("error".into(), serde_json::to_value(error).unwrap_or(Value::Null));
                }
                self.hub.publish("session.error", properties);
            }
            "message.updated" => {
                if let Some(message) = self.read_message(&session, notice.message.as_deref()).await {
                    self.hub.publish("message.updated", json!({"info": message}));
                }
            }
            "message.part.updated" => {
                if let Some(part) = self.read_part(&session, notice.part.as_deref()).await {
                    self.hub.publish("message.part.updated", json!({"part": part}));
                }
            }
            "message.removed" => {
                self.hub.publish(
                    "message.removed",
                    json!({"sessionID": session_json, "messageID": notice.message}),
                );
            }
            "message.part.removed" => self.hub.publish(
                "message.part.removed",
                json!({"sessionID": session_json, "messageID": notice.message, "partID": notice.part}),
            ),
            "permission.updated" => {
                if let Some(permission) = notice.detail.get("permission") {
                    self.hub.publish("permission.updated", permission.clone());
                }
            }
            "permission.replied" => self.hub.publish(
                "permission.replied",
                json!({
                    "sessionID": session_json,
                    "permissionID": notice.permission,
                    "response": notice.detail.get("response"),
                }),
            ),
            other => tracing::debug!(kind = other, "skipping a notice of an unknown kind"),
        }
    }

    async fn read_message(&self, session: &SessionId, id: Option<&str>) -> Option<Message> {
        let id = id?;
        let history = self.store.load_history(session).await.ok()?;
        history.messages.into_iter().find(|m| m.info.id().as_str() == id).map(|m| m.info)
    }

    async fn read_part(&self, session: &SessionId, id: Option<&str>) -> Option<session_core::Part> {
        let id = id?;
        let history = self.store.load_history(session).await.ok()?;
        history.messages.into_iter().flat_map(|m| m.parts).find(|p| p.id.as_str() == id)
    }
}
