//! A session on a temporary SQLite file: create it, write a prompt and a streamed answer the
//! way the runtime does (part upserts and coalesced deltas), read the history back, and
//! export it as a document.
//!
//! Run with `cargo run -p session-store --example basic`.

use std::time::{SystemTime, UNIX_EPOCH};

use rust_decimal::Decimal;
use session_core::{
    AssistantMessage, AssistantTime, CreatedTime, Entropy, IdGenerator, Message, MessageId, MessagePath,
    ModelRef, Part, PartId, PartKind, PartTime, TextPart, TokenUsage, UserMessage,
};
use session_store::{NewSession, PartDelta, SqliteConfig, SqliteStore, Store, StoreOptions, WriteBatch};

/// Entropy for ids; a real runtime uses a proper random source.
struct Counter(u64);

impl Entropy for Counter {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        self.0 >> 11
    }
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> anyhow::Result<()> {
    let folder = std::env::temp_dir().join(format!("session-store-example-{}", std::process::id()));
    let store =
        SqliteStore::open(&SqliteConfig::new(folder.join("sessions.db")), StoreOptions::default()).await?;

    let session = store.create_session(NewSession::new("demo", "/work/demo")).await?;
    store.acquire_lease(&session.id).await?;
    let now = SystemTime::now().duration_since(UNIX_EPOCH)?.as_millis() as u64;
    let (mut ids, mut entropy) = (IdGenerator::new(), Counter(now));

    // The prompt and its text, in one transaction.
    let user_id: MessageId = ids.next(now, &mut entropy);
    let user = Message::User(UserMessage {
        id: user_id.clone(),
        session_id: session.id.clone(),
        time: CreatedTime { created: now },
        format: None,
        summary: None,
        agent: "build".into(),
        model: ModelRef { provider_id: "demo".into(), model_id: "scripted".into(), variant: None },
        system: None,
        tools: None,
    });
    let prompt = Part {
        id: ids.next(now, &mut entropy),
        session_id: session.id.clone(),
        message_id: user_id.clone(),
        kind: PartKind::Text(TextPart { text: "Say hello.".into(), ..TextPart::default() }),
    };
    store.commit(&WriteBatch::new().message(user).part(prompt)).await?;

    // The answer streams: an open text part, deltas, then the part's end.
    let mut answer = AssistantMessage {
        id: ids.next(now, &mut entropy),
        session_id: session.id.clone(),
        time: AssistantTime { created: now, completed: None },
        error: None,
        parent_id: user_id,
        model_id: "scripted".into(),
        provider_id: "demo".into(),
        mode: "build".into(),
        agent: "build".into(),
        path: MessagePath { cwd: "/work/demo".into(), root: "/work/demo".into() },
        summary: None,
        cost: Decimal::ZERO,
        tokens: TokenUsage::default(),
        structured: None,
        variant: None,
        finish: None,
    };
    store.upsert_message(&Message::Assistant(answer.clone())).await?;
    let text_id: PartId = ids.next(now, &mut entropy);
    let mut text = Part {
        id: text_id.clone(),
        session_id: session.id.clone(),
        message_id: answer.id.clone(),
        kind: PartKind::Text(TextPart {
            time: Some(PartTime { start: now, end: None }),
            ..TextPart::default()
        }),
    };
    store.upsert_part(&text).await?;
    for chunk in ["Hel", "lo, ", "world!"] {
        store
            .append_delta(PartDelta {
                session_id: session.id.clone(),
                message_id: answer.id.clone(),
                part_id: text_id.clone(),
                field: "text".into(),
                delta: chunk.into(),
            })
            .await?;
    }
    text.kind = PartKind::Text(TextPart {
        text: "Hello, world!".into(),
        time: Some(PartTime { start: now, end: Some(now + 30) }),
        ..TextPart::default()
    });
    answer.time.completed = Some(now + 30);
    answer.cost = Decimal::new(21, 5);
    store.commit(&WriteBatch::new().message(Message::Assistant(answer)).part(text)).await?;
    store.release_lease(&session.id).await?;

    let history = store.load_history(&session.id).await?;
    for message in &history.messages {
        for part in &message.parts {
            if let PartKind::Text(text) = &part.kind {
                println!(
                    "{:>9}: {}",
                    if matches!(message.info, Message::User(_)) { "user" } else { "assistant" },
                    text.text
                );
            }
        }
    }
    let document = store.export_session(&session.id).await?;
    println!(
        "exported {} messages as version {} ({} bytes of JSON)",
        document.messages.len(),
        document.version,
        serde_json::to_string(&document)?.len()
    );

    store.close().await?;
    std::fs::remove_dir_all(folder)?;
    Ok(())
}
