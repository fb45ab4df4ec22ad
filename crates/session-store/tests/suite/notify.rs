//! Notices between instances on PostgreSQL: what one sends, every listener on the same
//! database and schema receives; other schemas hear nothing; oversized notices are refused.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::Value;
use session_store::{MAX_NOTICE_BYTES, Notifier, NotifyError, PgConfig};

use super::support::pg_url;

/// A notice shaped like a server's: the sender, what happened, ids and small details.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
struct Notice {
    origin: String,
    kind: String,
    session: Option<String>,
    message: Option<String>,
    part: Option<String>,
    detail: BTreeMap<String, Value>,
}

impl Notice {
    fn new(origin: &str, kind: &str, session: &str) -> Self {
        Self { origin: origin.into(), kind: kind.into(), session: Some(session.into()), ..Self::default() }
    }
}

fn config(schema: &str) -> PgConfig {
    PgConfig::new(pg_url()).with_schema(schema)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_notice_reaches_every_listener_of_its_schema_only() {
    let pid = std::process::id();
    let here = Notifier::connect(&config(&format!("nt_a_{pid}"))).await.unwrap();
    let there = Notifier::connect(&config(&format!("nt_a_{pid}"))).await.unwrap();
    let elsewhere = Notifier::connect(&config(&format!("nt_b_{pid}"))).await.unwrap();
    assert_ne!(here.channel(), elsewhere.channel());
    let mut listening = there.listen().await.unwrap();
    let mut other = elsewhere.listen().await.unwrap();

    let mut notice = Notice::new("owner-1", "message.part.updated", "ses_1");
    notice.message = Some("msg_1".into());
    notice.part = Some("prt_1".into());
    notice.detail.insert("status".into(), serde_json::json!({"type": "busy"}));
    here.notify(&notice).await.unwrap();
    let received =
        tokio::time::timeout(Duration::from_secs(30), listening.recv::<Notice>()).await.unwrap().unwrap();
    assert_eq!(received, notice);
    // Another schema's channel stays silent.
    assert!(tokio::time::timeout(Duration::from_millis(300), other.recv::<Notice>()).await.is_err());

    // Too large to send: refused before it reaches the database; the next one still goes.
    let mut huge = Notice::new("owner-1", "session.status", "ses_1");
    huge.detail.insert("text".into(), Value::String("x".repeat(MAX_NOTICE_BYTES)));
    assert!(matches!(here.notify(&huge).await, Err(NotifyError::TooLarge { .. })));
    let small = Notice::new("owner-1", "session.idle", "ses_1");
    here.notify(&small).await.unwrap();
    let received =
        tokio::time::timeout(Duration::from_secs(30), listening.recv::<Notice>()).await.unwrap().unwrap();
    assert_eq!(received, small);

    for notifier in [here, there, elsewhere] {
        notifier.close().await;
    }
}
