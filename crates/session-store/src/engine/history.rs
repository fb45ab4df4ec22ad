//! Messages and parts: writes through the writer task (upserts, batches, deltas) and reads of
//! a session's history, and revert cleanup (`remove_from`).

use std::collections::HashMap;

use session_core::{Message, MessageId, MessageWithParts, Part, PartId, PartKind, SessionId};

use super::sessions::{read_session, write_session};
use super::{Engine, report_skipped};
use crate::backend::{Backend, HistoryRow, Target, history_row, query};
use crate::error::{EntityKind, StoreError, StoreResult};
use crate::model::{
    HistoryTail, PartDelta, RawPart, Removed, RevertPoint, SessionHistory, SkippedRow, WriteBatch,
};
use crate::rows::{self, DecodedPart, RowWrite};
use crate::usage::recount;
use crate::writer::{CacheOp, Command};

/// Where a part row of a loaded session went.
#[expect(
    clippy::large_enum_variant,
    reason = "nearly every row is a known part: boxing would allocate per part"
)]
pub(super) enum Placed {
    Known(Part),
    Unknown(RawPart),
}

/// A session's rows, decoded.
pub(super) struct Loaded {
    pub(super) messages: Vec<Message>,
    /// Parts per message index, in id order.
    pub(super) parts: Vec<Vec<Placed>>,
    pub(super) skipped: Vec<SkippedRow>,
}

/// How writing `part` changes the writer's streaming buffer: text and reasoning stream while
/// open.
fn cache_op(part: &Part) -> Option<CacheOp> {
    match &part.kind {
        PartKind::Text(_) | PartKind::Reasoning(_) => Some(if rows::part_is_open(part) {
            CacheOp::Stream(Box::new(part.clone()))
        } else {
            CacheOp::End(part.id.clone())
        }),
        _ => None,
    }
}

impl<DB: Backend> Engine<DB> {
    pub(crate) async fn upsert_message(&self, message: &Message) -> StoreResult<()> {
        let row = rows::encode_message(message)?;
        self.write(vec![RowWrite::Message(row, self.now())], Vec::new()).await
    }

    pub(crate) async fn upsert_part(&self, part: &Part) -> StoreResult<()> {
        let row = rows::encode_part(part)?;
        self.write(vec![RowWrite::Part(row)], cache_op(part).into_iter().collect()).await
    }

    pub(crate) async fn commit(&self, batch: &WriteBatch) -> StoreResult<()> {
        if batch.is_empty() {
            return Ok(());
        }
        let now = self.now();
        let mut rows = Vec::with_capacity(batch.messages.len() + batch.parts.len());
        for message in &batch.messages {
            rows.push(RowWrite::Message(rows::encode_message(message)?, now));
        }
        let mut cache = Vec::new();
        for part in &batch.parts {
            rows.push(RowWrite::Part(rows::encode_part(part)?));
            cache.extend(cache_op(part));
        }
        self.write(rows, cache).await
    }

    pub(crate) async fn append_delta(&self, delta: PartDelta) -> StoreResult<()> {
        if delta.field != "text" {
            return Err(StoreError::UnsupportedDelta { field: delta.field });
        }
        self.send(Command::Delta(delta)).await
    }

    pub(crate) async fn flush(&self) -> StoreResult<()> {
        self.flush_session(None).await
    }

    pub(crate) async fn load_history(&self, session_id: &SessionId) -> StoreResult<SessionHistory> {
        self.flush_session(Some(session_id)).await?;
        let mut conn = self.conn().await?;
        let result = load::<DB>(conn.get()?, session_id, None).await;
        let (loaded, _) = conn.check(result)?;
        Ok(assemble(loaded))
    }

    pub(crate) async fn load_history_tail(
        &self,
        session_id: &SessionId,
        from: &MessageId,
    ) -> StoreResult<HistoryTail> {
        self.flush_session(Some(session_id)).await?;
        let mut conn = self.conn().await?;
        let result = load::<DB>(conn.get()?, session_id, Some(from)).await;
        let (loaded, total_messages) = conn.check(result)?;
        Ok(HistoryTail { history: assemble(loaded), total_messages })
    }

    pub(crate) async fn remove_from(
        &self,
        session_id: &SessionId,
        point: &RevertPoint,
    ) -> StoreResult<Removed> {
        let sql = DB::sql();
        let mut tx = self.begin_write().await?;
        let mut session = read_session::<DB>(&mut tx, session_id).await?;
        let mut removed = Removed::default();
        let later = match &point.part_id {
            None => sql.message_ids_from,
            Some(part_id) => {
                let parts = query::<DB>(sql.part_ids_from)
                    .bind(session_id.as_str())
                    .bind(point.message_id.as_str())
                    .bind(part_id.as_str())
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(StoreError::from_db)?;
                for row in &parts {
                    removed.parts.push(PartId::new_unchecked(DB::text(row, 0)?));
                }
                query::<DB>(sql.delete_parts_from)
                    .bind(session_id.as_str())
                    .bind(point.message_id.as_str())
                    .bind(part_id.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(StoreError::from_db)?;
                sql.message_ids_after
            }
        };
        let messages = query::<DB>(later)
            .bind(session_id.as_str())
            .bind(point.message_id.as_str())
            .fetch_all(&mut *tx)
            .await
            .map_err(StoreError::from_db)?;
        for row in &messages {
            let id = DB::text(row, 0)?;
            query::<DB>(sql.delete_message).bind(id).execute(&mut *tx).await.map_err(StoreError::from_db)?;
            removed.messages.push(MessageId::new_unchecked(id));
        }
        if !removed.messages.is_empty() || !removed.parts.is_empty() {
            // The removed step-finish parts no longer count in the session's totals.
            recount::<DB>(&mut tx, session_id).await?;
        }
        if session.revert.is_some() {
            session.revert = None;
            session.time.updated = session.time.updated.max(self.now());
            write_session::<DB>(&mut tx, &session).await?;
        }
        tx.commit().await.map_err(StoreError::from_db)?;
        Ok(removed)
    }
}

/// The decoded rows as a history: known parts under their messages, unknown ones apart.
fn assemble(loaded: Loaded) -> SessionHistory {
    let mut history = SessionHistory {
        messages: Vec::with_capacity(loaded.messages.len()),
        unknown_parts: Vec::new(),
        skipped: loaded.skipped,
    };
    for (info, placed) in loaded.messages.into_iter().zip(loaded.parts) {
        let mut parts = Vec::with_capacity(placed.len());
        for part in placed {
            match part {
                Placed::Known(part) => parts.push(part),
                Placed::Unknown(raw) => history.unknown_parts.push(raw),
            }
        }
        history.messages.push(MessageWithParts { info, parts });
    }
    history
}

/// Reads and decodes a session's messages and parts (those from the message `from` on, when
/// given) in one statement, with the count of all its messages; columns are read in place,
/// without copies.
pub(super) async fn load<'e, DB: Backend>(
    on: impl Into<Target<'e, DB>>,
    session_id: &SessionId,
    from: Option<&MessageId>,
) -> StoreResult<(Loaded, u64)> {
    let mut loaded = Loaded { messages: Vec::new(), parts: Vec::new(), skipped: Vec::new() };
    let mut index: HashMap<&str, usize> = HashMap::new();
    // Fetched whole, then decoded: decoding while rows stream in makes SQLite's worker
    // thread and the reader hand every row over one by one, which is slower.
    let rows = query::<DB>(DB::sql().select_history)
        .bind(session_id.as_str())
        .bind(from.map_or("", MessageId::as_str))
        .fetch_all(on)
        .await
        .map_err(StoreError::from_db)?;
    let mut total_messages = None;
    for row in &rows {
        match history_row::<DB>(row)? {
            Some(HistoryRow::Session { total_messages: total }) => total_messages = Some(total),
            Some(HistoryRow::Message(stored)) => match rows::decode_message(&stored) {
                Ok(message) => {
                    index.insert(stored.id, loaded.messages.len());
                    loaded.messages.push(message);
                    loaded.parts.push(Vec::new());
                }
                Err(skipped) => loaded.skipped.push(skipped),
            },
            Some(HistoryRow::Part(stored)) => {
                let Some(&at) = index.get(stored.message_id) else {
                    loaded.skipped.push(SkippedRow {
                        kind: EntityKind::Part,
                        id: stored.id.to_owned(),
                        session_id: stored.session_id.to_owned(),
                        message_id: Some(stored.message_id.to_owned()),
                        reason: "its message is unreadable".to_owned(),
                    });
                    continue;
                };
                match rows::decode_part(&stored) {
                    DecodedPart::Known(part) => loaded.parts[at].push(Placed::Known(part)),
                    DecodedPart::Unknown(raw) => loaded.parts[at].push(Placed::Unknown(raw)),
                    DecodedPart::Bad(skipped) => loaded.skipped.push(skipped),
                }
            }
            None => {}
        }
    }
    let total_messages =
        total_messages.ok_or_else(|| StoreError::not_found(EntityKind::Session, session_id))?;
    report_skipped(&loaded.skipped);
    Ok((loaded, total_messages))
}
