//! Several servers on one PostgreSQL database: every instance tells the others what changed
//! (ids only, through LISTEN/NOTIFY), and each turns the notices of the others into client
//! events by reading the bodies from the store. Requests that only the instance running a
//! session can carry out (abort, a permission reply) travel the same way.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

use session_core::{Message, PermissionId, SessionId, permission::Reply};
use session_runtime::clock::{Clock as _, SystemClock};
use session_runtime::cluster::{NoticeListener, Notifier, NotifyError, PgConfig, encode_notice};
use session_runtime::permissions::PermissionEngine;
use session_runtime::sessions::SessionStatus;
use session_runtime::sessions::Store;
use session_runtime::wire::{Event, SessionFailure};
use session_runtime::{BusEvent, Runtime};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

use crate::events::{Hub, Statuses};
use crate::notice::{Notice, NoticeBody, Permission};

/// Streaming text reaches the other instances as a re-read part at most this often per part
/// (the store writes deltas in batches anyway).
const DELTA_INTERVAL: Duration = Duration::from_millis(250);

/// A retry's message is the only free text a status carries; it travels cut to this length.
const MAX_STATUS_MESSAGE_CHARS: usize = 500;

/// The connection to the other instances on one PostgreSQL database, listening already.
#[derive(Debug)]
pub struct ClusterLink {
    notifier: Notifier,
    listener: NoticeListener,
}

impl ClusterLink {
    /// Connects to the database `config` names and starts listening for notices.
    pub async fn connect(config: &PgConfig) -> Result<Self, NotifyError> {
        let notifier = Notifier::connect(config).await?;
        let listener = notifier.listen().await?;
        Ok(Self { notifier, listener })
    }
}

/// This instance's side of the cluster: the queue of notices to send.
#[derive(Debug)]
pub(crate) struct Outbox {
    origin: String,
    queue: mpsc::UnboundedSender<Notice>,
}

/// What a notice from another instance needs to be carried out here.
pub(crate) struct Receiver {
    pub(crate) runtime: Arc<Runtime>,
    pub(crate) store: Arc<dyn Store>,
    pub(crate) permissions: Arc<PermissionEngine>,
    pub(crate) hub: Hub,
    pub(crate) statuses: Statuses,
    /// How much of each streaming part's text this instance's clients have, so that a
    /// re-read part reaches them as `message.part.delta` of what is new, as local text does.
    pub(crate) streamed: std::sync::Mutex<HashMap<session_core::PartId, usize>>,
}

/// Starts sending this instance's notices (`origin` tells them apart) and carrying out the
/// others' through `receiver`, both until shutdown.
pub(crate) fn start(
    link: ClusterLink,
    origin: String,
    receiver: Receiver,
    shutdown: &CancellationToken,
) -> Arc<Outbox> {
    let ClusterLink { notifier, listener } = link;
    let (queue, outgoing) = mpsc::unbounded_channel::<Notice>();
    tokio::spawn(send_all(notifier, outgoing, shutdown.clone()));
    tokio::spawn(receive_all(listener, origin.clone(), receiver, shutdown.clone()));
    Arc::new(Outbox { origin, queue })
}

async fn send_all(
    notifier: Notifier,
    mut outgoing: mpsc::UnboundedReceiver<Notice>,
    shutdown: CancellationToken,
) {
    loop {
        let notice = tokio::select! {
            () = shutdown.cancelled() => break,
            notice = outgoing.recv() => match notice {
                Some(notice) => notice,
                None => break,
            },
        };
        if let Err(error) = notifier.notify(&notice).await {
            tracing::warn!(%error, kind = notice.body.kind(), "cannot notify the other instances");
        }
    }
    notifier.close().await;
}

async fn receive_all(
    mut listener: NoticeListener,
    origin: String,
    receiver: Receiver,
    shutdown: CancellationToken,
) {
    let mut last_streamed: HashMap<String, Instant> = HashMap::new();
    loop {
        let notice = tokio::select! {
            () = shutdown.cancelled() => break,
            notice = listener.recv::<Notice>() => notice,
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
        if let NoticeBody::PartUpdated { part, streaming: true, .. } = &notice.body {
            let now = Instant::now();
            if last_streamed.get(part.as_str()).is_some_and(|at| now.duration_since(*at) < DELTA_INTERVAL) {
                continue;
            }
            if last_streamed.len() > 1024 {
                last_streamed.clear();
            }
            last_streamed.insert(part.to_string(), now);
        }
        receiver.carry_out(notice).await;
    }
}

impl Outbox {
    fn send(&self, session: &SessionId, body: NoticeBody) {
        self.send_notice(self.notice(session, body));
    }

    fn send_notice(&self, notice: Notice) {
        // The sender task is gone only at shutdown.
        let _ = self.queue.send(notice);
    }

    fn notice(&self, session: &SessionId, body: NoticeBody) -> Notice {
        Notice { origin: self.origin.clone(), session: session.clone(), body }
    }

    /// Tells the others about a local bus event (deltas are thinned by the receivers).
    pub(crate) fn forward(&self, event: &BusEvent) {
        let (session, body) = match event {
            BusEvent::SessionCreated { info } => (&info.id, NoticeBody::SessionCreated),
            BusEvent::SessionUpdated { info } => (&info.id, NoticeBody::SessionUpdated),
            BusEvent::SessionDiff { session_id, diff } => {
                // The session's file list is in no row the others could read: it travels, and
                // as much of it as fits one notice (the totals are on the session row).
                let mut notice = self.notice(session_id, NoticeBody::SessionDiff { diff: diff.clone() });
                while let Err(NotifyError::TooLarge { .. }) = encode_notice(&notice)
                    && let NoticeBody::SessionDiff { diff } = &mut notice.body
                    && !diff.is_empty()
                {
                    diff.truncate(diff.len() / 2);
                }
                self.send_notice(notice);
                return;
            }
            BusEvent::SessionStatus { session_id, status } => {
                (session_id, NoticeBody::SessionStatus { status: short_status(status) })
            }
            BusEvent::SessionIdle { session_id } => (session_id, NoticeBody::SessionIdle),
            BusEvent::SessionError { session_id, .. } => (session_id, NoticeBody::SessionError),
            BusEvent::SessionCompacted { session_id } => (session_id, NoticeBody::SessionCompacted),
            BusEvent::MessageUpdated { info } => {
                (info.session_id(), NoticeBody::MessageUpdated { message: info.id().clone() })
            }
            BusEvent::MessageRemoved { session_id, message_id } => {
                (session_id, NoticeBody::MessageRemoved { message: message_id.clone() })
            }
            BusEvent::PartRemoved { session_id, message_id, part_id } => {
                (session_id, NoticeBody::PartRemoved { message: message_id.clone(), part: part_id.clone() })
            }
            BusEvent::PartUpdated { part } => (
                &part.session_id,
                NoticeBody::PartUpdated {
                    message: part.message_id.clone(),
                    part: part.id.clone(),
                    streaming: false,
                },
            ),
            // Sent as a part update; the receiver reads the text written so far.
            BusEvent::PartDelta { session_id, message_id, part_id, .. } => (
                session_id,
                NoticeBody::PartUpdated {
                    message: message_id.clone(),
                    part: part_id.clone(),
                    streaming: true,
                },
            ),
            BusEvent::PermissionAsked(ask) => {
                let mut permission = Permission::new(ask, SystemClock.now_ms());
                permission.metadata.clear();
                let mut notice = self.notice(&ask.session_id, NoticeBody::PermissionUpdated { permission });
                if let Err(NotifyError::TooLarge { .. }) = encode_notice(&notice)
                    && let NoticeBody::PermissionUpdated { permission } = &mut notice.body
                {
                    // Patterns too long to carry: the others see the ask without them.
                    permission.pattern.clear();
                    permission.title.clone_from(&ask.request.permission);
                }
                self.send_notice(notice);
                return;
            }
            // Todo lists live in the process that runs the session's tools; the others read
            // them from no shared store, so there is nothing to tell them.
            BusEvent::TodoUpdated { .. } => return,
            // Questions wait in the process whose tool asked them; another instance can
            // neither list nor answer them.
            BusEvent::QuestionAsked(_)
            | BusEvent::QuestionReplied { .. }
            | BusEvent::QuestionRejected { .. } => {
                return;
            }
            BusEvent::PermissionReplied { session_id, permission_id, response } => (
                session_id,
                NoticeBody::PermissionReplied { permission: permission_id.clone(), response: *response },
            ),
        };
        self.send(session, body);
    }

    /// Asks the instance running `session` to abort it.
    pub(crate) fn request_abort(&self, session: &SessionId) {
        self.send(session, NoticeBody::Abort);
    }

    /// Passes a permission reply to the instance where the ask waits.
    pub(crate) fn request_reply(&self, session: &SessionId, permission: &PermissionId, reply: Reply) {
        self.send(session, NoticeBody::Reply { permission: permission.clone(), response: reply });
    }
}

/// The status as it travels: a retry's message cut short.
fn short_status(status: &SessionStatus) -> SessionStatus {
    match status {
        SessionStatus::Retry { attempt, message, next } => SessionStatus::Retry {
            attempt: *attempt,
            message: message.chars().take(MAX_STATUS_MESSAGE_CHARS).collect(),
            next: *next,
        },
        other => other.clone(),
    }
}

impl Receiver {
    /// Publishes an event of another instance to this one's clients, noting statuses and asks.
    fn emit(&self, event: &BusEvent) {
        self.statuses.observe(event);
        self.hub.publish_bus(event);
    }

    /// Carries out one notice from another instance.
    async fn carry_out(&self, notice: Notice) {
        let session = notice.session;
        match notice.body {
            NoticeBody::Abort => {
                // Only the instance running the session acts on it.
                if self.runtime.is_busy(&session) {
                    self.runtime.cancel(&session);
                }
            }
            NoticeBody::Reply { permission, response } => {
                self.permissions.reply(&permission, response, None);
            }
            NoticeBody::SessionCreated | NoticeBody::SessionUpdated => {
                match self.store.get_session(&session).await {
                    Ok(info) => {
                        let info = Box::new(info);
                        self.emit(&if matches!(notice.body, NoticeBody::SessionCreated) {
                            BusEvent::SessionCreated { info }
                        } else {
                            BusEvent::SessionUpdated { info }
                        });
                    }
                    Err(error) => tracing::debug!(%error, "a notified session is not readable"),
                }
            }
            NoticeBody::SessionStatus { status } => {
                self.emit(&BusEvent::SessionStatus { session_id: session, status });
            }
            NoticeBody::SessionDiff { diff } => {
                self.emit(&BusEvent::SessionDiff { session_id: session, diff });
            }
            NoticeBody::SessionIdle => self.emit(&BusEvent::SessionIdle { session_id: session }),
            NoticeBody::SessionCompacted => {
                self.emit(&BusEvent::SessionCompacted { session_id: session });
            }
            NoticeBody::SessionError => {
                // The error is the one the newest failed assistant message carries.
                let error = match self.store.load_history(&session).await {
                    Ok(history) => history.messages.iter().rev().find_map(|m| match &m.info {
                        Message::Assistant(a) => a.error.clone(),
                        Message::User(_) => None,
                    }),
                    Err(_) => None,
                };
                match error {
                    Some(error) => self.emit(&BusEvent::SessionError { session_id: session, error }),
                    None => {
                        self.hub.publish(Event::SessionError(SessionFailure {
                            session_id: &session,
                            error: None,
                        }));
                    }
                }
            }
            NoticeBody::MessageUpdated { message } => {
                if let Some(message) = self.read_message(&session, message.as_str()).await {
                    self.emit(&BusEvent::MessageUpdated { info: Box::new(message) });
                }
            }
            NoticeBody::PartUpdated { part, streaming, .. } => {
                if let Some(part) = self.read_part(&session, part.as_str()).await {
                    self.emit_part(part, streaming);
                }
            }
            NoticeBody::MessageRemoved { message } => {
                self.emit(&BusEvent::MessageRemoved { session_id: session, message_id: message });
            }
            NoticeBody::PartRemoved { message, part } => {
                self.emit(&BusEvent::PartRemoved { session_id: session, message_id: message, part_id: part })
            }
            NoticeBody::PermissionUpdated { permission } => {
                self.emit(&BusEvent::PermissionAsked(Box::new(permission.to_ask())));
            }
            NoticeBody::PermissionReplied { permission, response } => {
                self.emit(&BusEvent::PermissionReplied {
                    session_id: session,
                    permission_id: permission,
                    response,
                });
            }
        }
    }

    /// Publishes a part read back from the store: while it streams, the text clients lack as a
    /// delta (the whole part the first time, or when its text no longer extends what they
    /// have); once it is done, the whole part.
    fn emit_part(&self, part: session_core::Part, streaming: bool) {
        let text = match &part.kind {
            session_core::PartKind::Text(text) => Some(text.text.as_str()),
            session_core::PartKind::Reasoning(reasoning) => Some(reasoning.text.as_str()),
            _ => None,
        };
        let Some(text) = text else {
            self.emit(&BusEvent::PartUpdated { part: Box::new(part) });
            return;
        };
        let mut streamed = self.streamed.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        // Parts that stream at once are few; a bound keeps ended ones from piling up.
        if streamed.len() > 4096 {
            streamed.clear();
        }
        if !streaming {
            // A whole part: clients now have all of its text.
            streamed.insert(part.id.clone(), text.len());
            drop(streamed);
            self.emit(&BusEvent::PartUpdated { part: Box::new(part) });
            return;
        }
        match streamed.get(&part.id).copied() {
            Some(sent) if text.len() >= sent && text.is_char_boundary(sent) => {
                if text.len() > sent {
                    let delta = BusEvent::PartDelta {
                        session_id: part.session_id.clone(),
                        message_id: part.message_id.clone(),
                        part_id: part.id.clone(),
                        field: "text".to_owned(),
                        delta: text[sent..].to_owned(),
                    };
                    streamed.insert(part.id.clone(), text.len());
                    drop(streamed);
                    self.emit(&delta);
                }
            }
            _ => {
                streamed.insert(part.id.clone(), text.len());
                drop(streamed);
                self.emit(&BusEvent::PartUpdated { part: Box::new(part) });
            }
        }
    }

    async fn read_message(&self, session: &SessionId, id: &str) -> Option<Message> {
        let history = self.store.load_history(session).await.ok()?;
        history.messages.into_iter().find(|m| m.info.id().as_str() == id).map(|m| m.info)
    }

    async fn read_part(&self, session: &SessionId, id: &str) -> Option<session_core::Part> {
        let history = self.store.load_history(session).await.ok()?;
        history.messages.into_iter().flat_map(|m| m.parts).find(|p| p.id.as_str() == id)
    }
}
