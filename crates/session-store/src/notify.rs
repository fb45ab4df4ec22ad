//! Notices between instances sharing one PostgreSQL database (LISTEN/NOTIFY).
//!
//! A notice names what happened and the ids to read it by; the bodies (messages, parts,
//! sessions) stay in the store and each receiver reads them from there. That keeps every
//! payload small: PostgreSQL refuses payloads of 8,000 bytes or more, and a part's text can
//! be far larger. SQLite has a single instance per file in practice, so it has no notices:
//! the in-process bus is enough there.

use std::collections::BTreeMap;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};

use crate::config::PgConfig;

/// The largest payload a notice may have, in bytes (PostgreSQL's limit is just above).
pub const MAX_NOTICE_BYTES: usize = 8000;

/// The channel name's stem; a configured schema is appended so that databases in separate
/// schemas of one server do not hear each other.
const CHANNEL_STEM: &str = "session_events";

/// One notice: the sending instance, what happened, and ids.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Notice {
    /// The sending instance (its store owner id); receivers skip their own notices.
    pub origin: String,
    /// What happened (an event type such as `message.part.updated`) or what is asked of the
    /// instance running the session (such as `session.abort`).
    pub kind: String,
    /// The session.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub session: Option<String>,
    /// The message, if the notice is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
    /// The part, if the notice is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub part: Option<String>,
    /// The permission ask, if the notice is about one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub permission: Option<String>,
    /// Small values that are not stored anywhere (a status, a reply); never bodies.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub detail: BTreeMap<String, Value>,
}

impl Notice {
    /// A notice of `kind` about `session` from `origin`.
    pub fn new(origin: impl Into<String>, kind: impl Into<String>, session: impl Into<String>) -> Self {
        Self { origin: origin.into(), kind: kind.into(), session: Some(session.into()), ..Self::default() }
    }

    /// The payload sent, or an error when it would exceed [`MAX_NOTICE_BYTES`].
    pub fn encode(&self) -> Result<String, NotifyError> {
        let payload = serde_json::to_string(self).map_err(|e| NotifyError::Encode(e.to_string()))?;
        if payload.len() > MAX_NOTICE_BYTES {
            return Err(NotifyError::TooLarge { bytes: payload.len() });
        }
        Ok(payload)
    }

    /// Reads a received payload.
    pub fn decode(payload: &str) -> Result<Self, NotifyError> {
        serde_json::from_str(payload).map_err(|e| NotifyError::Decode(e.to_string()))
    }
}

/// Why a notice could not be sent or received.
#[derive(Debug, thiserror::Error)]
pub enum NotifyError {
    /// The payload would be too large for PostgreSQL.
    #[error("notice payload of {bytes} bytes exceeds the {MAX_NOTICE_BYTES}-byte cap")]
    TooLarge {
        /// The payload's size.
        bytes: usize,
    },
    /// The notice could not be serialized.
    #[error("cannot encode a notice: {0}")]
    Encode(String),
    /// A received payload is not a notice.
    #[error("cannot decode a notice: {0}")]
    Decode(String),
    /// The configuration is unusable (bad URL or schema).
    #[error("notice configuration: {0}")]
    Config(String),
    /// The database failed.
    #[error("notice database error: {0}")]
    Database(#[from] sqlx::Error),
}

/// Sends notices to, and listens for notices from, the other instances on a database.
#[derive(Debug, Clone)]
pub struct Notifier {
    pool: PgPool,
    options: PgConnectOptions,
    channel: String,
}

impl Notifier {
    /// Connects to the database `config` names (a small pool of its own, apart from the
    /// store's, so that notices never wait behind writes).
    pub async fn connect(config: &PgConfig) -> Result<Self, NotifyError> {
        let schema = config.checked_schema().map_err(|e| NotifyError::Config(e.to_string()))?;
        let options = PgConnectOptions::from_str(&config.url)
            .map_err(|e| NotifyError::Config(format!("PostgreSQL URL: {e}")))?;
        let pool = PgPoolOptions::new()
            .max_connections(3)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options.clone())
            .await?;
        let channel = match schema {
            Some(schema) => format!("{CHANNEL_STEM}_{schema}"),
            None => CHANNEL_STEM.to_owned(),
        };
        // Channel names are identifiers: at most 63 bytes.
        let channel: String = channel.chars().take(63).collect();
        Ok(Self { pool, options, channel })
    }

    /// The channel notices travel on.
    pub fn channel(&self) -> &str {
        &self.channel
    }

    /// Sends a notice to every listening instance (this one included).
    pub async fn notify(&self, notice: &Notice) -> Result<(), NotifyError> {
        let payload = notice.encode()?;
        sqlx::query("SELECT pg_notify($1, $2)").bind(&self.channel).bind(payload).execute(&self.pool).await?;
        Ok(())
    }

    /// Starts listening; notices sent from now on arrive through [`NoticeListener::recv`].
    pub async fn listen(&self) -> Result<NoticeListener, NotifyError> {
        // A connection of its own, apart from the sending pool, so that closing the notifier
        // does not wait for listeners to be dropped (and the other way round).
        let pool = PgPoolOptions::new()
            .max_connections(1)
            .max_lifetime(None)
            .idle_timeout(None)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(self.options.clone())
            .await?;
        let mut listener = PgListener::connect_with(&pool).await?;
        listener.listen(&self.channel).await?;
        Ok(NoticeListener { listener })
    }

    /// Closes the connections.
    pub async fn close(&self) {
        self.pool.close().await;
    }
}

/// Notices arriving on a channel.
#[derive(Debug)]
pub struct NoticeListener {
    listener: PgListener,
}

impl NoticeListener {
    /// The next notice. A lost connection is re-established (notices sent meanwhile are
    /// lost); a payload that is not a notice is skipped with a debug log.
    pub async fn recv(&mut self) -> Result<Notice, NotifyError> {
        loop {
            let notification = self.listener.recv().await?;
            match Notice::decode(notification.payload()) {
                Ok(notice) => return Ok(notice),
                Err(error) => tracing::debug!(%error, "skipping a notification that is not a notice"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn notices_round_trip_and_oversized_ones_are_refused() {
        let mut notice = Notice::new("owner-a", "message.part.updated", "ses_1");
        notice.part = Some("prt_1".into());
        let payload = notice.encode().unwrap_or_default();
        assert_eq!(Notice::decode(&payload).ok(), Some(notice.clone()));
        notice.detail.insert("message".into(), Value::String("x".repeat(MAX_NOTICE_BYTES)));
        assert!(matches!(notice.encode(), Err(NotifyError::TooLarge { .. })));
        assert!(Notice::decode("not json").is_err());
    }
}
