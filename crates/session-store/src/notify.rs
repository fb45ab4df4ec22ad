//! Notices between instances sharing one PostgreSQL database (LISTEN/NOTIFY).
//!
//! The store carries notices of any serde type; the server defines what they say. A notice
//! names what happened and the ids to read it by; the bodies (messages, parts,
//! sessions) stay in the store and each receiver reads them from there. That keeps every
//! payload small: PostgreSQL refuses payloads of 8,000 bytes or more, and a part's text can
//! be far larger. SQLite has a single instance per file in practice, so it has no notices:
//! the in-process bus is enough there.

use std::str::FromStr;
use std::time::Duration;

use serde::Serialize;
use serde::de::DeserializeOwned;
use sqlx::postgres::{PgConnectOptions, PgListener, PgPool, PgPoolOptions};

use crate::config::PgConfig;

/// The largest payload a notice may have, in bytes (PostgreSQL's limit is just above).
pub const MAX_NOTICE_BYTES: usize = 8000;

/// The channel name's stem; a configured schema is appended so that databases in separate
/// schemas of one server do not hear each other.
const CHANNEL_STEM: &str = "session_events";

/// The payload of a notice, or an error when it would exceed [`MAX_NOTICE_BYTES`].
pub fn encode_notice<N: Serialize>(notice: &N) -> Result<String, NotifyError> {
    let payload = serde_json::to_string(notice).map_err(|e| NotifyError::Encode(e.to_string()))?;
    if payload.len() > MAX_NOTICE_BYTES {
        return Err(NotifyError::TooLarge { bytes: payload.len() });
    }
    Ok(payload)
}

/// Reads a received payload as a notice of type `N`.
pub fn decode_notice<N: DeserializeOwned>(payload: &str) -> Result<N, NotifyError> {
    serde_json::from_str(payload).map_err(|e| NotifyError::Decode(e.to_string()))
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
    pub async fn notify<N: Serialize>(&self, notice: &N) -> Result<(), NotifyError> {
        let payload = encode_notice(notice)?;
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
    /// The next notice of type `N`. A lost connection is re-established (notices sent
    /// meanwhile are lost); a payload that is not such a notice is skipped with a debug log.
    pub async fn recv<N: DeserializeOwned>(&mut self) -> Result<N, NotifyError> {
        loop {
            let notification = self.listener.recv().await?;
            match decode_notice(notification.payload()) {
                Ok(notice) => return Ok(notice),
                Err(error) => tracing::debug!(%error, "skipping a notification that is not a notice"),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeMap;

    use serde::Deserialize;
    use serde_json::Value;

    use super::*;

    /// A notice shaped like a server's: ids and small details.
    #[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
    struct Notice {
        origin: String,
        kind: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        part: Option<String>,
        #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
        detail: BTreeMap<String, Value>,
    }

    #[test]
    fn notices_round_trip_and_oversized_ones_are_refused() {
        let mut notice =
            Notice { origin: "owner-a".into(), kind: "message.part.updated".into(), ..Notice::default() };
        notice.part = Some("prt_1".into());
        let payload = encode_notice(&notice).unwrap_or_default();
        assert_eq!(decode_notice::<Notice>(&payload).ok(), Some(notice.clone()));
        notice.detail.insert("message".into(), Value::String("x".repeat(MAX_NOTICE_BYTES)));
        assert!(matches!(encode_notice(&notice), Err(NotifyError::TooLarge { .. })));
        assert!(decode_notice::<Notice>("not json").is_err());
    }
}
