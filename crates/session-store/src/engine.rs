//! The store's logic, written once for both backends.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;
use session_core::{Message, MessageId, MessageWithParts, Part, PartId, PartKind, SessionId};
use sqlx::{ColumnIndex, Decode, Encode, Executor, IntoArguments, Pool, Row, Type};
use tokio::sync::{mpsc, oneshot};
use tokio::task::JoinHandle;

use crate::backend::Backend;
use crate::config::StoreOptions;
use crate::document::{DOCUMENT_VERSION, DocumentMessage, DocumentPart, SessionDocument};
use crate::error::{EntityKind, StoreError, StoreResult};
use crate::liveness;
use crate::model::{
    Lease, ListSessions, NewSession, PartDelta, RawPart, RecoveryReport, Removed, RevertPoint, Session,
    SessionCursor, SessionHistory, SessionPage, SessionPatch, SessionTime, SkippedRow, StoreStats,
    WriteBatch,
};
use crate::rows::{self, DecodedPart, StoredMessageRow, StoredPartRow};
use crate::util::{Ids, default_title, forked_title, from_db, to_db};
use crate::writer::{CacheOp, Command, Counters, RowWrite, Writer};

/// Capacity of the writer's queue; senders wait when it is full.
const QUEUE: usize = 4096;

/// One store on one backend: the pool, the writer task and the lease heartbeat.
pub(crate) struct Engine<DB: Backend> {
    pool: Pool<DB>,
    commands: mpsc::Sender<Command>,
    options: StoreOptions,
    owner: String,
    ids: Ids,
    counters: Arc<Counters>,
    held: Mutex<HashSet<SessionId>>,
    tasks: Mutex<Tasks>,
}

#[derive(Default)]
struct Tasks {
    writer: Option<JoinHandle<()>>,
    heartbeat: Option<JoinHandle<()>>,
    heartbeat_stop: Option<oneshot::Sender<()>>,
}

impl<DB: Backend> std::fmt::Debug for Engine<DB> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Engine")
            .field("backend", &DB::NAME)
            .field("owner", &self.owner)
            .finish_non_exhaustive()
    }
}

/// A session row's columns.
struct SessionColumns {
    id: String,
    parent_id: Option<String>,
    title: String,
    created: i64,
    updated: i64,
    data: String,
}

fn decode_session(cols: SessionColumns) -> Result<Session, SkippedRow> {
    let mut session = serde_json::from_str::<Session>(&cols.data).map_err(|e| SkippedRow {
        kind: EntityKind::Session,
        id: cols.id.clone(),
        session_id: cols.id.clone(),
        message_id: None,
        reason: e.to_string(),
    })?;
    // Columns are the truth for what queries and message writes change.
    session.id = SessionId::new_unchecked(cols.id.as_str());
    session.parent_id = cols.parent_id.map(SessionId::new_unchecked);
    session.title = cols.title;
    session.time.created = from_db(cols.created);
    session.time.updated = from_db(cols.updated);
    Ok(session)
}

fn encode_session(session: &Session) -> StoreResult<String> {
    serde_json::to_string(session).map_err(|source| StoreError::Encode {
        kind: EntityKind::Session,
        id: session.id.to_string(),
        source,
    })
}

fn corrupt(row: SkippedRow) -> StoreError {
    StoreError::Corrupt { kind: row.kind, id: row.id, reason: row.reason }
}

fn report_skipped(rows: &[SkippedRow]) {
    for row in rows {
        tracing::warn!(kind = %row.kind, id = %row.id, session_id = %row.session_id,
            message_id = row.message_id.as_deref().unwrap_or(""), reason = %row.reason,
            "skipped a stored row that no longer parses");
    }
}

/// Where a part row of a loaded session went.
#[expect(
    clippy::large_enum_variant,
    reason = "nearly every row is a known part: boxing would allocate per part"
)]
enum Placed {
    Known(Part),
    Unknown(RawPart),
}

/// A session's rows, decoded.
struct Loaded {
    messages: Vec<Message>,
    /// Parts per message index, in id order.
    parts: Vec<Vec<Placed>>,
    skipped: Vec<SkippedRow>,
}

impl<DB> Engine<DB>
where
    DB: Backend,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> String: Encode<'q, DB> + Type<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> Option<&'q str>: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
    for<'q> Option<i64>: Encode<'q, DB> + Type<DB>,
    for<'q> bool: Encode<'q, DB> + Type<DB>,
    for<'r> String: Decode<'r, DB> + Type<DB>,
    for<'r> i64: Decode<'r, DB> + Type<DB>,
    for<'r> &'r str: Decode<'r, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
{
    /// Starts the writer and the heartbeat on a migrated pool, then recovers expired leases.
    pub(crate) async fn start(pool: Pool<DB>, options: StoreOptions) -> StoreResult<Self> {
        let now = options.clock.now_ms();
        let ids = Ids::new(now);
        let owner = match &options.owner {
            Some(owner) => owner.clone(),
            // The suffix lets a later process see that this one died (see `liveness`).
            None => format!("pid{}-{}{}", std::process::id(), ids.token(), liveness::owner_suffix()),
        };
        let counters = Arc::new(Counters::default());
        let (commands, rx) = mpsc::channel(QUEUE);
        let writer = Writer::new(pool.clone(), options.flush_interval, Arc::clone(&counters));
        let writer = tokio::spawn(writer.run(rx));
        let (stop, stopped) = oneshot::channel();
        let heartbeat = tokio::spawn(heartbeat::<DB>(pool.clone(), owner.clone(), options.clone(), stopped));
        let engine = Self {
            pool,
            commands,
            options,
            owner,
            ids,
            counters,
            held: Mutex::new(HashSet::new()),
            tasks: Mutex::new(Tasks {
                writer: Some(writer),
                heartbeat: Some(heartbeat),
                heartbeat_stop: Some(stop),
            }),
        };
        if engine.options.recover_on_open {
            let report = engine.recover_expired().await?;
            if !report.sessions.is_empty() {
                tracing::info!(
                    sessions = report.sessions.len(),
                    parts = report.parts,
                    messages = report.messages,
                    "recovered sessions whose lease had expired"
                );
            }
        }
        Ok(engine)
    }

    fn now(&self) -> u64 {
        self.options.clock.now_ms()
    }

    pub(crate) fn owner(&self) -> &str {
        &self.owner
    }

    pub(crate) fn stats(&self) -> StoreStats {
        self.counters.snapshot()
    }

    async fn send(&self, command: Command) -> StoreResult<()> {
        self.commands.send(command).await.map_err(|_| StoreError::Closed)
    }

    async fn write(&self, rows: Vec<RowWrite>, cache: Vec<CacheOp>) -> StoreResult<()> {
        let (ack, done) = oneshot::channel();
        self.send(Command::Write { rows, cache, ack }).await?;
        done.await.map_err(|_| StoreError::Closed)?
    }

    async fn flush_session(&self, session: Option<&SessionId>) -> StoreResult<()> {
        let (ack, done) = oneshot::channel();
        self.send(Command::Flush { session: session.cloned(), ack }).await?;
        done.await.map_err(|_| StoreError::Closed)?
    }

    async fn forget(&self, sessions: Vec<SessionId>) -> StoreResult<()> {
        let (ack, done) = oneshot::channel();
        self.send(Command::Forget { sessions, ack }).await?;
        done.await.map_err(|_| StoreError::Closed)
    }

    async fn begin_write(&self) -> StoreResult<sqlx::Transaction<'static, DB>> {
        self.pool.begin_with(DB::sql().begin_write).await.map_err(StoreError::from_db)
    }

    async fn begin_read(&self) -> StoreResult<sqlx::Transaction<'static, DB>> {
        self.pool.begin_with(DB::sql().begin_read).await.map_err(StoreError::from_db)
    }

    // ----- sessions -----

    pub(crate) async fn create_session(&self, new: NewSession) -> StoreResult<Session> {
        let now = self.now();
        if let Some(parent) = &new.parent_id {
            self.require_session(parent).await?;
        }
        let id = new.id.unwrap_or_else(|| self.ids.next(now));
        let session = Session {
            id,
            project_id: new.project_id,
            directory: new.directory,
            title: new.title.unwrap_or_else(|| default_title(new.parent_id.is_some(), now)),
            parent_id: new.parent_id,
            version: new.version.unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned()),
            summary: None,
            revert: None,
            time: SessionTime { created: now, updated: now, compacting: None, archived: None },
            extra: serde_json::Map::new(),
        };
        let mut conn = self.pool.acquire().await.map_err(StoreError::from_db)?;
        self.insert_session(&mut conn, &session).await?;
        Ok(session)
    }

    async fn insert_session(&self, conn: &mut DB::Connection, session: &Session) -> StoreResult<()> {
        let data = encode_session(session)?;
        sqlx::query::<DB>(DB::sql().insert_session)
            .bind(session.id.as_str())
            .bind(session.project_id.as_str())
            .bind(session.directory.as_str())
            .bind(session.parent_id.as_ref().map(SessionId::as_str))
            .bind(session.title.as_str())
            .bind(to_db(session.time.created))
            .bind(to_db(session.time.updated))
            .bind(data)
            .execute(&mut *conn)
            .await
            .map_err(|e| StoreError::on_write(e, EntityKind::Session, session.id.as_str()))?;
        Ok(())
    }

    async fn require_session(&self, id: &SessionId) -> StoreResult<()> {
        let row = sqlx::query::<DB>(DB::sql().session_exists)
            .bind(id.as_str())
            .fetch_optional(&self.pool)
            .await
            .map_err(StoreError::from_db)?;
        row.map(|_| ()).ok_or_else(|| StoreError::not_found(EntityKind::Session, id))
    }

    fn session_columns(row: &DB::Row) -> Result<SessionColumns, sqlx::Error> {
        Ok(SessionColumns {
            id: row.try_get(0)?,
            parent_id: row.try_get(1)?,
            title: row.try_get(2)?,
            created: row.try_get(3)?,
            updated: row.try_get(4)?,
            data: row.try_get(5)?,
        })
    }

    async fn read_session(&self, conn: &mut DB::Connection, id: &SessionId) -> StoreResult<Session> {
        let row = sqlx::query::<DB>(DB::sql().select_session)
            .bind(id.as_str())
            .fetch_optional(&mut *conn)
            .await
            .map_err(StoreError::from_db)?
            .ok_or_else(|| StoreError::not_found(EntityKind::Session, id))?;
        decode_session(Self::session_columns(&row)?).map_err(corrupt)
    }

    pub(crate) async fn get_session(&self, id: &SessionId) -> StoreResult<Session> {
        let mut conn = self.pool.acquire().await.map_err(StoreError::from_db)?;
        self.read_session(&mut conn, id).await
    }

    pub(crate) async fn list_sessions(&self, query: &ListSessions) -> StoreResult<SessionPage> {
        let limit = query.limit.clamp(1, 1000);
        let rows = sqlx::query::<DB>(DB::sql().list_sessions)
            .bind(query.directory.as_deref())
            .bind(query.roots_only)
            .bind(query.after.as_ref().map(|c| to_db(c.updated)))
            .bind(query.after.as_ref().map(|c| c.id.as_str()).unwrap_or(""))
            .bind(i64::from(limit))
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::from_db)?;
        let mut page =
            SessionPage { sessions: Vec::with_capacity(rows.len()), next: None, skipped: Vec::new() };
        let full = rows.len() == limit as usize;
        let mut last = None;
        for row in &rows {
            let cols = Self::session_columns(row)?;
            last = Some(SessionCursor {
                updated: from_db(cols.updated),
                id: SessionId::new_unchecked(&cols.id),
            });
            match decode_session(cols) {
                Ok(session) => page.sessions.push(session),
                Err(skipped) => page.skipped.push(skipped),
            }
        }
        report_skipped(&page.skipped);
        if full {
            page.next = last;
        }
        Ok(page)
    }

    pub(crate) async fn update_session(&self, id: &SessionId, patch: SessionPatch) -> StoreResult<Session> {
        let mut tx = self.begin_write().await?;
        let mut session = self.read_session(&mut tx, id).await?;
        if let Some(title) = patch.title {
            session.title = title;
        }
        if let Some(summary) = patch.summary {
            session.summary = summary;
        }
        if let Some(revert) = patch.revert {
            session.revert = revert;
        }
        if let Some(compacting) = patch.compacting {
            session.time.compacting = compacting;
        }
        if let Some(archived) = patch.archived {
            session.time.archived = archived;
        }
        session.time.updated = session.time.updated.max(self.now());
        self.write_session(&mut tx, &session).await?;
        tx.commit().await.map_err(StoreError::from_db)?;
        Ok(session)
    }

    async fn write_session(&self, conn: &mut DB::Connection, session: &Session) -> StoreResult<()> {
        sqlx::query::<DB>(DB::sql().update_session)
            .bind(session.id.as_str())
            .bind(session.title.as_str())
            .bind(to_db(session.time.updated))
            .bind(encode_session(session)?)
            .execute(&mut *conn)
            .await
            .map_err(StoreError::from_db)?;
        Ok(())
    }

    pub(crate) async fn delete_session(&self, id: &SessionId) -> StoreResult<Vec<SessionId>> {
        let mut tx = self.begin_write().await?;
        let exists = sqlx::query::<DB>(DB::sql().session_exists)
            .bind(id.as_str())
            .fetch_optional(&mut *tx)
            .await
            .map_err(StoreError::from_db)?;
        if exists.is_none() {
            return Err(StoreError::not_found(EntityKind::Session, id));
        }
        // The session and every session spawned or forked from it, recursively.
        let mut doomed = vec![id.clone()];
        let mut index = 0;
        while index < doomed.len() {
            let children = sqlx::query::<DB>(DB::sql().child_sessions)
                .bind(doomed[index].as_str())
                .fetch_all(&mut *tx)
                .await
                .map_err(StoreError::from_db)?;
            for child in children {
                let child = SessionId::new_unchecked(child.try_get::<String, _>(0)?);
                if !doomed.contains(&child) {
                    doomed.push(child);
                }
            }
            index += 1;
        }
        for session in doomed.iter().rev() {
            sqlx::query::<DB>(DB::sql().delete_session)
                .bind(session.as_str())
                .execute(&mut *tx)
                .await
                .map_err(StoreError::from_db)?;
        }
        tx.commit().await.map_err(StoreError::from_db)?;
        self.forget(doomed.clone()).await?;
        {
            let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
            for session in &doomed {
                held.remove(session);
            }
        }
        Ok(doomed)
    }

    // ----- messages and parts -----

    pub(crate) async fn upsert_message(&self, message: &Message) -> StoreResult<()> {
        let row = rows::encode_message(message)?;
        self.write(vec![RowWrite::Message(row, self.now())], Vec::new()).await
    }

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

    pub(crate) async fn upsert_part(&self, part: &Part) -> StoreResult<()> {
        let row = rows::encode_part(part)?;
        self.write(vec![RowWrite::Part(row)], Self::cache_op(part).into_iter().collect()).await
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
            cache.extend(Self::cache_op(part));
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

    /// Reads and decodes a session's messages and parts; columns are read in place, without
    /// copies.
    async fn load(&self, conn: &mut DB::Connection, session_id: &SessionId) -> StoreResult<Loaded> {
        let mut loaded = Loaded { messages: Vec::new(), parts: Vec::new(), skipped: Vec::new() };
        let mut index: HashMap<String, usize> = HashMap::new();
        let message_rows = sqlx::query::<DB>(DB::sql().select_messages)
            .bind(session_id.as_str())
            .fetch_all(&mut *conn)
            .await
            .map_err(StoreError::from_db)?;
        for row in &message_rows {
            match rows::decode_message(&message_columns::<DB>(row)?) {
                Ok(message) => {
                    index.insert(message.id().to_string(), loaded.messages.len());
                    loaded.messages.push(message);
                    loaded.parts.push(Vec::new());
                }
                Err(skipped) => loaded.skipped.push(skipped),
            }
        }
        // Fetched whole, then decoded: decoding while rows stream in makes SQLite's worker
        // thread and the reader hand every row over one by one, which is slower.
        let rows = sqlx::query::<DB>(DB::sql().select_parts)
            .bind(session_id.as_str())
            .fetch_all(&mut *conn)
            .await
            .map_err(StoreError::from_db)?;
        for row in &rows {
            let stored = part_columns::<DB>(row)?;
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
        report_skipped(&loaded.skipped);
        Ok(loaded)
    }

    async fn session_exists_in(&self, conn: &mut DB::Connection, id: &SessionId) -> StoreResult<()> {
        sqlx::query::<DB>(DB::sql().session_exists)
            .bind(id.as_str())
            .fetch_optional(&mut *conn)
            .await
            .map_err(StoreError::from_db)?
            .map(|_| ())
            .ok_or_else(|| StoreError::not_found(EntityKind::Session, id))
    }

    pub(crate) async fn load_history(&self, session_id: &SessionId) -> StoreResult<SessionHistory> {
        self.flush_session(Some(session_id)).await?;
        let mut tx = self.begin_read().await?;
        self.session_exists_in(&mut tx, session_id).await?;
        let loaded = self.load(&mut tx, session_id).await?;
        tx.commit().await.map_err(StoreError::from_db)?;
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
        Ok(history)
    }

    pub(crate) async fn remove_from(
        &self,
        session_id: &SessionId,
        point: &RevertPoint,
    ) -> StoreResult<Removed> {
        let sql = DB::sql();
        let mut tx = self.begin_write().await?;
        let mut session = self.read_session(&mut tx, session_id).await?;
        let mut removed = Removed::default();
        let later = match &point.part_id {
            None => sql.message_ids_from,
            Some(part_id) => {
                let parts = sqlx::query::<DB>(sql.part_ids_from)
                    .bind(point.message_id.as_str())
                    .bind(part_id.as_str())
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(StoreError::from_db)?;
                for row in &parts {
                    removed.parts.push(PartId::new_unchecked(row.try_get::<String, _>(0)?));
                }
                sqlx::query::<DB>(sql.delete_parts_from)
                    .bind(point.message_id.as_str())
                    .bind(part_id.as_str())
                    .execute(&mut *tx)
                    .await
                    .map_err(StoreError::from_db)?;
                sql.message_ids_after
            }
        };
        let messages = sqlx::query::<DB>(later)
            .bind(session_id.as_str())
            .bind(point.message_id.as_str())
            .fetch_all(&mut *tx)
            .await
            .map_err(StoreError::from_db)?;
        for row in &messages {
            let id: String = row.try_get(0)?;
            sqlx::query::<DB>(sql.delete_message)
                .bind(id.as_str())
                .execute(&mut *tx)
                .await
                .map_err(StoreError::from_db)?;
            removed.messages.push(MessageId::new_unchecked(id));
        }
        if session.revert.is_some() {
            session.revert = None;
            session.time.updated = session.time.updated.max(self.now());
            self.write_session(&mut tx, &session).await?;
        }
        tx.commit().await.map_err(StoreError::from_db)?;
        Ok(removed)
    }

    pub(crate) async fn fork_session(&self, id: &SessionId, at: Option<&MessageId>) -> StoreResult<Session> {
        self.flush_session(Some(id)).await?;
        let now = self.now();
        let mut tx = self.begin_write().await?;
        let source = self.read_session(&mut tx, id).await?;
        let loaded = self.load(&mut tx, id).await?;
        if let Some(at) = at
            && !loaded.messages.iter().any(|m| m.id() == at)
        {
            return Err(StoreError::not_found(EntityKind::Message, at));
        }
        let fork = Session {
            id: self.ids.next(now),
            project_id: source.project_id.clone(),
            directory: source.directory.clone(),
            parent_id: Some(source.id.clone()),
            title: forked_title(&source.title),
            version: source.version.clone(),
            summary: None,
            revert: None,
            time: SessionTime { created: now, updated: now, compacting: None, archived: None },
            extra: serde_json::Map::new(),
        };
        self.insert_session(&mut tx, &fork).await?;
        let mut map: HashMap<MessageId, MessageId> = HashMap::new();
        let mut rows = Vec::new();
        for (message, parts) in loaded.messages.into_iter().zip(loaded.parts) {
            if at.is_some_and(|at| message.id() >= at) {
                break;
            }
            let new_id: MessageId = self.ids.next(now);
            map.insert(message.id().clone(), new_id.clone());
            let copy = match message {
                Message::User(mut m) => {
                    m.id = new_id.clone();
                    m.session_id = fork.id.clone();
                    Message::User(m)
                }
                Message::Assistant(mut m) => {
                    m.id = new_id.clone();
                    m.session_id = fork.id.clone();
                    if let Some(parent) = map.get(&m.parent_id) {
                        m.parent_id = parent.clone();
                    }
                    Message::Assistant(m)
                }
            };
            rows.push(RowWrite::Message(rows::encode_message(&copy)?, now));
            for placed in parts {
                let part_id: PartId = self.ids.next(now);
                match placed {
                    Placed::Known(mut part) => {
                        part.id = part_id;
                        part.session_id = fork.id.clone();
                        part.message_id = new_id.clone();
                        if let PartKind::Compaction(compaction) = &mut part.kind
                            && let Some(tail) = compaction.tail_start_id.as_ref().and_then(|t| map.get(t))
                        {
                            compaction.tail_start_id = Some(tail.clone());
                        }
                        rows.push(RowWrite::Part(rows::encode_part(&part)?));
                    }
                    Placed::Unknown(mut raw) => {
                        if let Value::Object(object) = &mut raw.json {
                            object.insert("id".to_owned(), Value::String(part_id.to_string()));
                            object.insert("sessionID".to_owned(), Value::String(fork.id.to_string()));
                            object.insert("messageID".to_owned(), Value::String(new_id.to_string()));
                        }
                        raw.id = part_id;
                        raw.session_id = fork.id.clone();
                        raw.message_id = new_id.clone();
                        rows.push(RowWrite::Part(rows::encode_raw_part(&raw)?));
                    }
                }
            }
        }
        match crate::bulk::Plan::of(&[rows.as_slice()]) {
            Some(plan) => crate::bulk::write_plan::<DB>(&mut tx, &plan, DB::bulk()).await?,
            None => crate::bulk::write_each::<DB>(&mut tx, &rows).await?,
        }
        tx.commit().await.map_err(StoreError::from_db)?;
        Ok(fork)
    }

    // ----- export and import -----

    pub(crate) async fn export_session(&self, id: &SessionId) -> StoreResult<SessionDocument> {
        self.flush_session(Some(id)).await?;
        let mut tx = self.begin_read().await?;
        let info = self.read_session(&mut tx, id).await?;
        let loaded = self.load(&mut tx, id).await?;
        tx.commit().await.map_err(StoreError::from_db)?;
        let messages = loaded
            .messages
            .into_iter()
            .zip(loaded.parts)
            .map(|(info, parts)| DocumentMessage {
                info,
                parts: parts
                    .into_iter()
                    .map(|placed| match placed {
                        Placed::Known(part) => DocumentPart::from(part),
                        Placed::Unknown(raw) => DocumentPart::from(raw),
                    })
                    .collect(),
            })
            .collect();
        Ok(SessionDocument { version: DOCUMENT_VERSION, info, messages })
    }

    pub(crate) async fn import_session(&self, document: &SessionDocument) -> StoreResult<Session> {
        if document.version > DOCUMENT_VERSION {
            return Err(StoreError::UnsupportedVersion {
                found: document.version,
                supported: DOCUMENT_VERSION,
            });
        }
        if document.version == 0 {
            return Err(StoreError::InvalidDocument("version 0 does not exist".to_owned()));
        }
        let session = &document.info;
        let mut rows = Vec::new();
        let mut seen = HashSet::new();
        for message in &document.messages {
            let message_id = message.info.id();
            if message.info.session_id() != &session.id {
                return Err(StoreError::InvalidDocument(format!(
                    "message {message_id} belongs to session {}, not {}",
                    message.info.session_id(),
                    session.id
                )));
            }
            if !seen.insert(message_id.to_string()) {
                return Err(StoreError::InvalidDocument(format!("message {message_id} appears twice")));
            }
            rows.push(RowWrite::Message(rows::encode_message(&message.info)?, session.time.updated));
            for part in &message.parts {
                let row = match part {
                    DocumentPart::Known(part) => {
                        if &part.message_id != message_id || part.session_id != session.id {
                            return Err(StoreError::InvalidDocument(format!(
                                "part {} does not belong to message {message_id}",
                                part.id
                            )));
                        }
                        rows::encode_part(part)?
                    }
                    DocumentPart::Raw(json) => {
                        rows::encode_raw_part(&raw_part(json, &session.id, message_id)?)?
                    }
                };
                if !seen.insert(row.id.clone()) {
                    return Err(StoreError::InvalidDocument(format!("part {} appears twice", row.id)));
                }
                rows.push(RowWrite::Part(row));
            }
        }
        let mut tx = self.begin_write().await?;
        self.insert_session(&mut tx, session).await?;
        let sql = DB::sql();
        for row in &rows {
            match row {
                RowWrite::Message(m, _) => {
                    sqlx::query::<DB>(sql.insert_message)
                        .bind(m.id.as_str())
                        .bind(m.session_id.as_str())
                        .bind(m.role)
                        .bind(m.open)
                        .bind(m.cost.as_deref())
                        .bind(m.data.as_str())
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| StoreError::on_write(e, EntityKind::Message, &m.id))?;
                }
                RowWrite::Part(p) => {
                    sqlx::query::<DB>(sql.insert_part)
                        .bind(p.id.as_str())
                        .bind(p.session_id.as_str())
                        .bind(p.message_id.as_str())
                        .bind(p.kind.as_str())
                        .bind(p.open)
                        .bind(p.cost.as_deref())
                        .bind(p.data.as_str())
                        .execute(&mut *tx)
                        .await
                        .map_err(|e| StoreError::on_write(e, EntityKind::Part, &p.id))?;
                }
            }
        }
        tx.commit().await.map_err(StoreError::from_db)?;
        Ok(session.clone())
    }

    // ----- leases and recovery -----

    pub(crate) async fn acquire_lease(&self, session_id: &SessionId) -> StoreResult<Lease> {
        let now = self.now();
        let expires_at = now.saturating_add(ttl_ms(&self.options));
        let mut tx = self.begin_write().await?;
        let (owner, expires) = self.read_lease(&mut tx, session_id).await?;
        if let (Some(owner), Some(expires)) = (&owner, expires)
            && owner != &self.owner
            && expires >= now
            && !liveness::owner_is_dead(owner)
        {
            return Err(StoreError::Leased {
                session_id: session_id.clone(),
                owner: owner.clone(),
                expires_at: expires,
            });
        }
        sqlx::query::<DB>(DB::sql().set_lease)
            .bind(session_id.as_str())
            .bind(self.owner.as_str())
            .bind(to_db(expires_at))
            .execute(&mut *tx)
            .await
            .map_err(StoreError::from_db)?;
        // A previous run by anyone else is over: close what it left open.
        let report = if owner.as_deref() != Some(self.owner.as_str()) {
            Some(self.recover_rows(&mut tx, session_id, now).await?)
        } else {
            None
        };
        tx.commit().await.map_err(StoreError::from_db)?;
        if let Some(report) = report.filter(|r| r.parts + r.messages > 0) {
            tracing::info!(session_id = %session_id, parts = report.parts, messages = report.messages,
                "closed what an earlier run left open");
        }
        self.held.lock().unwrap_or_else(PoisonError::into_inner).insert(session_id.clone());
        Ok(Lease { session_id: session_id.clone(), owner: self.owner.clone(), expires_at })
    }

    async fn read_lease(
        &self,
        conn: &mut DB::Connection,
        session_id: &SessionId,
    ) -> StoreResult<(Option<String>, Option<u64>)> {
        let row = sqlx::query::<DB>(DB::sql().select_lease)
            .bind(session_id.as_str())
            .fetch_optional(&mut *conn)
            .await
            .map_err(StoreError::from_db)?
            .ok_or_else(|| StoreError::not_found(EntityKind::Session, session_id))?;
        let owner: Option<String> = row.try_get(0)?;
        let expires: Option<i64> = row.try_get(1)?;
        Ok((owner, expires.map(from_db)))
    }

    pub(crate) async fn release_lease(&self, session_id: &SessionId) -> StoreResult<()> {
        self.flush_session(Some(session_id)).await?;
        // The run is over: parts it left streaming need no buffer any more.
        self.forget(vec![session_id.clone()]).await?;
        sqlx::query::<DB>(DB::sql().release_lease)
            .bind(session_id.as_str())
            .bind(self.owner.as_str())
            .execute(&self.pool)
            .await
            .map_err(StoreError::from_db)?;
        self.held.lock().unwrap_or_else(PoisonError::into_inner).remove(session_id);
        Ok(())
    }

    pub(crate) async fn lease(&self, session_id: &SessionId) -> StoreResult<Option<Lease>> {
        let mut conn = self.pool.acquire().await.map_err(StoreError::from_db)?;
        let (owner, expires) = self.read_lease(&mut conn, session_id).await?;
        Ok(match (owner, expires) {
            (Some(owner), Some(expires_at))
                if expires_at >= self.now() && !liveness::owner_is_dead(&owner) =>
            {
                Some(Lease { session_id: session_id.clone(), owner, expires_at })
            }
            _ => None,
        })
    }

    pub(crate) async fn recover_expired(&self) -> StoreResult<RecoveryReport> {
        let now = self.now();
        let expired = sqlx::query::<DB>(DB::sql().expired_leases)
            .bind(to_db(now))
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::from_db)?;
        let mut candidates = Vec::with_capacity(expired.len());
        for row in &expired {
            candidates.push(row.try_get::<String, _>(0)?);
        }
        // Leases still running their time-to-live whose owner died on this machine (a run
        // killed with SIGKILL) are recovered now rather than when they expire.
        let held = sqlx::query::<DB>(DB::sql().held_leases)
            .bind(to_db(now))
            .fetch_all(&self.pool)
            .await
            .map_err(StoreError::from_db)?;
        for row in &held {
            let owner: String = row.try_get(1)?;
            if owner != self.owner && liveness::owner_is_dead(&owner) {
                candidates.push(row.try_get::<String, _>(0)?);
            }
        }
        let mut report = RecoveryReport::default();
        for id in candidates {
            let session_id = SessionId::new_unchecked(id);
            let mut tx = self.begin_write().await?;
            // Re-check under the write lock: a live process may have taken it meanwhile.
            let (owner, expires) = match self.read_lease(&mut tx, &session_id).await {
                Ok(lease) => lease,
                Err(StoreError::NotFound { .. }) => continue,
                Err(error) => return Err(error),
            };
            // This store is alive: its own sessions are not recovered, even late.
            let still_expired = owner.as_deref().is_some_and(|o| {
                o != self.owner && (expires.is_some_and(|e| e < now) || liveness::owner_is_dead(o))
            });
            if !still_expired {
                continue;
            }
            sqlx::query::<DB>(DB::sql().set_lease)
                .bind(session_id.as_str())
                .bind(None::<&str>)
                .bind(None::<i64>)
                .execute(&mut *tx)
                .await
                .map_err(StoreError::from_db)?;
            let mut single = self.recover_rows(&mut tx, &session_id, now).await?;
            tx.commit().await.map_err(StoreError::from_db)?;
            single.sessions.push(session_id);
            report.absorb(single);
        }
        Ok(report)
    }

    /// Closes a dead run's open parts and messages (SPEC 8 texts), inside `conn`'s transaction.
    async fn recover_rows(
        &self,
        conn: &mut DB::Connection,
        session_id: &SessionId,
        now: u64,
    ) -> StoreResult<RecoveryReport> {
        let sql = DB::sql();
        let mut report = RecoveryReport::default();
        let parts = sqlx::query::<DB>(sql.open_parts)
            .bind(session_id.as_str())
            .fetch_all(&mut *conn)
            .await
            .map_err(StoreError::from_db)?;
        for row in &parts {
            let stored = part_columns::<DB>(row)?;
            let (id, original) = (stored.id, stored.data);
            let data = match rows::decode_part(&stored) {
                DecodedPart::Known(mut part) => {
                    if rows::close_part(&mut part, now) {
                        report.parts += 1;
                    }
                    rows::encode_part(&part)?.data
                }
                DecodedPart::Unknown(_) | DecodedPart::Bad(_) => {
                    tracing::warn!(part_id = %id, "an open part is unreadable; kept as it is");
                    original.to_owned()
                }
            };
            sqlx::query::<DB>(sql.close_part)
                .bind(id)
                .bind(data)
                .execute(&mut *conn)
                .await
                .map_err(StoreError::from_db)?;
        }
        let messages = sqlx::query::<DB>(sql.open_messages)
            .bind(session_id.as_str())
            .fetch_all(&mut *conn)
            .await
            .map_err(StoreError::from_db)?;
        for row in &messages {
            let stored = message_columns::<DB>(row)?;
            let data = match rows::decode_message(&stored) {
                Ok(mut message) => {
                    if rows::close_message(&mut message, now) {
                        report.messages += 1;
                    }
                    rows::encode_message(&message)?.data
                }
                Err(_) => {
                    tracing::warn!(message_id = %stored.id, "an open message is unreadable; kept as it is");
                    stored.data.to_owned()
                }
            };
            sqlx::query::<DB>(sql.close_message)
                .bind(stored.id)
                .bind(data)
                .execute(&mut *conn)
                .await
                .map_err(StoreError::from_db)?;
        }
        Ok(report)
    }

    /// Writes what is buffered, stops the tasks, releases this store's leases, closes the pool.
    pub(crate) async fn close(&self) -> StoreResult<()> {
        let (ack, done) = oneshot::channel();
        if self.commands.send(Command::Stop { ack }).await.is_ok() {
            let _ = done.await;
        }
        let (writer, heartbeat, stop) = {
            let mut tasks = self.tasks.lock().unwrap_or_else(PoisonError::into_inner);
            (tasks.writer.take(), tasks.heartbeat.take(), tasks.heartbeat_stop.take())
        };
        drop(stop);
        if let Some(heartbeat) = heartbeat {
            let _ = heartbeat.await;
        }
        if let Some(writer) = writer {
            let _ = writer.await;
        }
        let held: Vec<SessionId> = self.held.lock().unwrap_or_else(PoisonError::into_inner).drain().collect();
        for session_id in held {
            let result = sqlx::query::<DB>(DB::sql().release_lease)
                .bind(session_id.as_str())
                .bind(self.owner.as_str())
                .execute(&self.pool)
                .await;
            if let Err(error) = result {
                tracing::warn!(session_id = %session_id, %error, "cannot release a lease on close");
            }
        }
        self.pool.close().await;
        Ok(())
    }
}

/// The columns of a message row as selected: id, session_id, cost, data.
pub(crate) fn message_columns<DB>(row: &DB::Row) -> Result<StoredMessageRow<'_>, sqlx::Error>
where
    DB: Backend,
    for<'r> &'r str: Decode<'r, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
{
    Ok(StoredMessageRow {
        id: row.try_get(0)?,
        session_id: row.try_get(1)?,
        cost: row.try_get(2)?,
        data: row.try_get(3)?,
    })
}

/// The columns of a part row as selected: id, session_id, message_id, type, cost, data.
pub(crate) fn part_columns<DB>(row: &DB::Row) -> Result<StoredPartRow<'_>, sqlx::Error>
where
    DB: Backend,
    for<'r> &'r str: Decode<'r, DB> + Type<DB>,
    usize: ColumnIndex<DB::Row>,
{
    Ok(StoredPartRow {
        id: row.try_get(0)?,
        session_id: row.try_get(1)?,
        message_id: row.try_get(2)?,
        kind: row.try_get(3)?,
        cost: row.try_get(4)?,
        data: row.try_get(5)?,
    })
}

fn ttl_ms(options: &StoreOptions) -> u64 {
    u64::try_from(options.lease_ttl.as_millis()).unwrap_or(u64::MAX)
}

/// A raw document part, checked: it needs an `id` and a `type`, and belongs to its message.
fn raw_part(json: &Value, session_id: &SessionId, message_id: &MessageId) -> StoreResult<RawPart> {
    let field = |name: &str| json.get(name).and_then(Value::as_str);
    let (Some(id), Some(part_type)) = (field("id"), field("type")) else {
        return Err(StoreError::InvalidDocument(format!("a part of message {message_id} has no id or type")));
    };
    if field("sessionID").is_some_and(|s| s != session_id.as_str())
        || field("messageID").is_some_and(|m| m != message_id.as_str())
    {
        return Err(StoreError::InvalidDocument(format!(
            "part {id} does not belong to message {message_id}"
        )));
    }
    Ok(RawPart {
        id: PartId::new_unchecked(id),
        session_id: session_id.clone(),
        message_id: message_id.clone(),
        part_type: part_type.to_owned(),
        json: json.clone(),
    })
}

/// Renews every lease this owner holds, every third of the lease time, until stopped.
async fn heartbeat<DB>(pool: Pool<DB>, owner: String, options: StoreOptions, mut stop: oneshot::Receiver<()>)
where
    DB: Backend,
    for<'c> &'c mut DB::Connection: Executor<'c, Database = DB>,
    DB::Arguments: IntoArguments<DB>,
    for<'q> &'q str: Encode<'q, DB> + Type<DB>,
    for<'q> i64: Encode<'q, DB> + Type<DB>,
{
    let period = (options.lease_ttl / 3).max(std::time::Duration::from_millis(10));
    loop {
        if tokio::time::timeout(period, &mut stop).await.is_ok() {
            return;
        }
        let expires_at = options.clock.now_ms().saturating_add(ttl_ms(&options));
        let result = sqlx::query::<DB>(DB::sql().renew_leases)
            .bind(owner.as_str())
            .bind(to_db(expires_at))
            .execute(&pool)
            .await;
        if let Err(error) = result {
            tracing::warn!(%error, "lease heartbeat failed");
        }
    }
}
