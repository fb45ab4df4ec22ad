//! Session records: create, read, list (newest first, keyset pages), update and delete with
//! their children.

use std::sync::PoisonError;

use session_core::SessionId;

use super::{Engine, begin_write_on, report_skipped};
use crate::backend::{Backend, query};
use crate::error::{EntityKind, StoreError, StoreResult};
use crate::model::{
    AgentModel, ListSessions, NewSession, Session, SessionCursor, SessionPage, SessionPatch, SessionTime,
    SessionTokens, SkippedRow,
};
use crate::usage::{Usage, count, parse_money};
use crate::util::{default_title, from_db, slug_of_id, to_db};

/// A session row's columns, borrowed from the row as read.
struct SessionColumns<'r> {
    id: &'r str,
    parent_id: Option<&'r str>,
    title: &'r str,
    created: i64,
    updated: i64,
    data: &'r str,
    /// The totals of its steps, which the store keeps in columns of their own.
    usage: Usage,
}

/// The columns of a session row as selected: id, parent_id, title, times, data, cost and the
/// five token counts.
fn session_columns<DB: Backend>(row: &DB::Row) -> Result<SessionColumns<'_>, sqlx::Error> {
    Ok(SessionColumns {
        id: DB::text(row, 0)?,
        parent_id: DB::optional_text(row, 1)?,
        title: DB::text(row, 2)?,
        created: DB::integer(row, 3)?,
        updated: DB::integer(row, 4)?,
        data: DB::text(row, 5)?,
        usage: Usage {
            cost: parse_money(DB::text(row, 6)?),
            tokens: SessionTokens {
                input: count(DB::integer(row, 7)?),
                output: count(DB::integer(row, 8)?),
                reasoning: count(DB::integer(row, 9)?),
                cache: session_core::CacheTokens {
                    read: count(DB::integer(row, 10)?),
                    write: count(DB::integer(row, 11)?),
                },
            },
        },
    })
}

fn decode_session(cols: SessionColumns<'_>) -> Result<Session, SkippedRow> {
    let mut session = serde_json::from_str::<Session>(cols.data).map_err(|e| SkippedRow {
        kind: EntityKind::Session,
        id: cols.id.to_owned(),
        session_id: cols.id.to_owned(),
        message_id: None,
        reason: e.to_string(),
    })?;
    // Columns are the truth for what queries and message writes change.
    session.id = SessionId::new_unchecked(cols.id);
    session.parent_id = cols.parent_id.map(SessionId::new_unchecked);
    session.title = cols.title.to_owned();
    session.time.created = from_db(cols.created);
    session.time.updated = from_db(cols.updated);
    cols.usage.set_on(&mut session);
    if session.slug.is_empty() {
        session.slug = slug_of_id(cols.id);
    }
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

impl<DB: Backend> Engine<DB> {
    pub(crate) async fn create_session(&self, new: NewSession) -> StoreResult<Session> {
        let now = self.now();
        let mut conn = self.conn().await?;
        let result = self.create_session_on(conn.get()?, new, now).await;
        conn.check(result)
    }

    async fn create_session_on(
        &self,
        conn: &mut DB::Connection,
        new: NewSession,
        now: u64,
    ) -> StoreResult<Session> {
        if let Some(parent) = &new.parent_id {
            require_session::<DB>(conn, parent).await?;
        }
        let id = new.id.unwrap_or_else(|| self.ids.next(now));
        let session = Session {
            id,
            slug: self.ids.slug(),
            project_id: new.project_id,
            directory: new.directory,
            path: new.path,
            title: new.title.unwrap_or_else(|| default_title(new.parent_id.is_some(), now)),
            parent_id: new.parent_id,
            version: new.version.unwrap_or_else(|| env!("CARGO_PKG_VERSION").to_owned()),
            summary: None,
            cost: rust_decimal::Decimal::ZERO,
            tokens: SessionTokens::default(),
            agent: new.agent,
            model: new.model,
            revert: None,
            time: SessionTime { created: now, updated: now, compacting: None, archived: None },
            permission: new.permission,
            extra: serde_json::Map::new(),
        };
        insert_session::<DB>(conn, &session).await?;
        Ok(session)
    }

    pub(crate) async fn get_session(&self, id: &SessionId) -> StoreResult<Session> {
        let mut conn = self.conn().await?;
        let result = read_session::<DB>(conn.get()?, id).await;
        conn.check(result)
    }

    pub(crate) async fn list_sessions(&self, list: &ListSessions) -> StoreResult<SessionPage> {
        let limit = list.limit.clamp(1, 1000);
        let mut conn = self.conn().await?;
        let rows = query::<DB>(DB::sql().list_sessions)
            .bind(list.directory.as_deref())
            .bind(list.roots_only)
            .bind(list.after.as_ref().map(|c| to_db(c.updated)))
            .bind(list.after.as_ref().map(|c| c.id.as_str()).unwrap_or(""))
            .bind(i64::from(limit))
            .fetch_all(conn.get()?)
            .await
            .map_err(StoreError::from_db);
        let rows = conn.check(rows)?;
        let mut page =
            SessionPage { sessions: Vec::with_capacity(rows.len()), next: None, skipped: Vec::new() };
        let full = rows.len() == limit as usize;
        let mut last = None;
        for row in &rows {
            let cols = session_columns::<DB>(row)?;
            last =
                Some(SessionCursor { updated: from_db(cols.updated), id: SessionId::new_unchecked(cols.id) });
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
        let mut conn = self.conn().await?;
        let result = self.update_session_on(conn.get()?, id, patch).await;
        conn.check(result)
    }

    async fn update_session_on(
        &self,
        conn: &mut DB::Connection,
        id: &SessionId,
        patch: SessionPatch,
    ) -> StoreResult<Session> {
        let mut tx = begin_write_on::<DB>(conn).await?;
        let mut session = read_session::<DB>(&mut tx, id).await?;
        // The agent and model are written only when they change (OpenCode's `setAgentModel`):
        // a patch of them alone that changes nothing writes nothing. Any other patch writes,
        // an empty one included (it moves the updated time).
        let others = patch.title.is_some()
            || patch.summary.is_some()
            || patch.revert.is_some()
            || patch.compacting.is_some()
            || patch.archived.is_some();
        let mut updated = self.now();
        let mut changed = others || patch.agent_model.is_none();
        if let Some(AgentModel { agent, model, time }) = patch.agent_model
            && (session.agent.as_deref() != Some(agent.as_str())
                || !session.model.as_ref().is_some_and(|stored| stored.same_as(&model)))
        {
            session.agent = Some(agent);
            session.model = Some(model);
            // The session changed when the prompt was written, as OpenCode dates it.
            updated = time;
            changed = true;
        }
        if !changed {
            tx.commit().await.map_err(StoreError::from_db)?;
            return Ok(session);
        }
        if let Some(title) = patch.title
            && (!patch.title_only_if_default || session.has_default_title())
        {
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
        session.time.updated = session.time.updated.max(updated);
        write_session::<DB>(&mut tx, &session).await?;
        tx.commit().await.map_err(StoreError::from_db)?;
        Ok(session)
    }

    pub(crate) async fn delete_session(&self, id: &SessionId) -> StoreResult<Vec<SessionId>> {
        let mut tx = self.begin_write().await?;
        require_session::<DB>(&mut tx, id).await?;
        // The session and every session spawned or forked from it, recursively.
        let mut doomed = vec![id.clone()];
        let mut index = 0;
        while index < doomed.len() {
            let children = query::<DB>(DB::sql().child_sessions)
                .bind(doomed[index].as_str())
                .fetch_all(&mut *tx)
                .await
                .map_err(StoreError::from_db)?;
            for child in &children {
                let child = SessionId::new_unchecked(DB::text(child, 0)?);
                if !doomed.contains(&child) {
                    doomed.push(child);
                }
            }
            index += 1;
        }
        for session in doomed.iter().rev() {
            query::<DB>(DB::sql().delete_session)
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
}

pub(super) async fn insert_session<DB: Backend>(
    conn: &mut DB::Connection,
    session: &Session,
) -> StoreResult<()> {
    let data = encode_session(session)?;
    let cost = session.cost.to_string();
    let tokens = &session.tokens;
    let column = |count: u64| i64::try_from(count).unwrap_or(i64::MAX);
    query::<DB>(DB::sql().insert_session)
        .bind(session.id.as_str())
        .bind(session.project_id.as_str())
        .bind(session.directory.as_str())
        .bind(session.parent_id.as_ref().map(SessionId::as_str))
        .bind(session.title.as_str())
        .bind(to_db(session.time.created))
        .bind(to_db(session.time.updated))
        .bind(&data)
        .bind(&cost)
        .bind(column(tokens.input))
        .bind(column(tokens.output))
        .bind(column(tokens.reasoning))
        .bind(column(tokens.cache.read))
        .bind(column(tokens.cache.write))
        .execute(&mut *conn)
        .await
        .map_err(|e| StoreError::on_write(e, EntityKind::Session, session.id.as_str()))?;
    Ok(())
}

/// Fails with `NotFound` unless the session exists.
pub(super) async fn require_session<DB: Backend>(
    conn: &mut DB::Connection,
    id: &SessionId,
) -> StoreResult<()> {
    query::<DB>(DB::sql().session_exists)
        .bind(id.as_str())
        .fetch_optional(&mut *conn)
        .await
        .map_err(StoreError::from_db)?
        .map(|_| ())
        .ok_or_else(|| StoreError::not_found(EntityKind::Session, id))
}

pub(super) async fn read_session<DB: Backend>(
    conn: &mut DB::Connection,
    id: &SessionId,
) -> StoreResult<Session> {
    let row = query::<DB>(DB::sql().select_session)
        .bind(id.as_str())
        .fetch_optional(&mut *conn)
        .await
        .map_err(StoreError::from_db)?
        .ok_or_else(|| StoreError::not_found(EntityKind::Session, id))?;
    decode_session(session_columns::<DB>(&row)?).map_err(corrupt)
}

pub(super) async fn write_session<DB: Backend>(
    conn: &mut DB::Connection,
    session: &Session,
) -> StoreResult<()> {
    query::<DB>(DB::sql().update_session)
        .bind(session.id.as_str())
        .bind(session.title.as_str())
        .bind(to_db(session.time.updated))
        .bind(&encode_session(session)?)
        .execute(&mut *conn)
        .await
        .map_err(StoreError::from_db)?;
    Ok(())
}
