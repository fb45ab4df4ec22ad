//! Writing rows with few statements. A group of writes is deduplicated by id and sent as
//! multi-row upserts of up to [`MAX_ROWS`] rows; a group of parts alone is then a single
//! statement, atomic without a transaction. Statements are counted because each one costs
//! thread hand-offs (SQLite) or a network round trip (PostgreSQL).
//!
//! A message row carries when the store wrote it (`touched`): a trigger moves its session's
//! updated time in the same statement (migration 0003), so a group of messages alone is one
//! statement too.
//!
//! The ownership guard of an upsert (a message stays in its session, a part in its message)
//! fails loudly: on a mismatch the conflict clause sets the owner column to NULL, which the
//! NOT NULL constraint refuses, so the whole statement fails instead of skipping a row.

use std::collections::HashMap;

use crate::backend::{Backend, query};
use crate::error::{EntityKind, StoreError, StoreResult};
use crate::rows::{MessageRow, PartRow, RowWrite};
use crate::sql::MAX_ROWS;
use crate::usage::count_steps;
use crate::util::to_db;

/// A group of writes, deduplicated: the last write of an id wins, as it would in order.
#[derive(Debug, Default)]
pub(crate) struct Plan<'a> {
    /// Messages, each with when it was written (which touches its session).
    pub messages: Vec<(&'a MessageRow, u64)>,
    pub parts: Vec<&'a PartRow>,
}

impl<'a> Plan<'a> {
    /// Plans `groups`; `None` when an id is written twice with different owners (only writing
    /// in order gives the right answer then).
    pub(crate) fn of(groups: &[&'a [RowWrite]]) -> Option<Self> {
        let mut plan = Plan::default();
        let mut messages: HashMap<&str, usize> = HashMap::new();
        let mut parts: HashMap<&str, usize> = HashMap::new();
        for row in groups.iter().flat_map(|rows| rows.iter()) {
            match row {
                RowWrite::Message(m, touched) => match messages.get(m.id.as_str()) {
                    Some(&at) if plan.messages[at].0.session_id != m.session_id => return None,
                    // The session's time never moves back: the latest touch of the id wins.
                    Some(&at) => plan.messages[at] = (m, plan.messages[at].1.max(*touched)),
                    None => {
                        messages.insert(&m.id, plan.messages.len());
                        plan.messages.push((m, *touched));
                    }
                },
                RowWrite::Part(p) => match parts.get(p.id.as_str()) {
                    Some(&at) if plan.parts[at].message_id != p.message_id => return None,
                    Some(&at) => plan.parts[at] = p,
                    None => {
                        parts.insert(&p.id, plan.parts.len());
                        plan.parts.push(p);
                    }
                },
            }
        }
        Some(plan)
    }

    /// True when the plan is one statement, atomic by itself: messages only or parts only,
    /// few enough, and no step-finish part (whose write moves its session's totals too).
    pub(crate) fn is_one_statement(&self) -> bool {
        if self.parts.iter().any(|part| part.usage.is_some()) {
            return false;
        }
        match (self.messages.len(), self.parts.len()) {
            (0, parts) => (1..=MAX_ROWS).contains(&parts),
            (messages, 0) => messages <= MAX_ROWS,
            _ => false,
        }
    }

    /// How many rows it writes.
    pub(crate) fn len(&self) -> usize {
        self.messages.len() + self.parts.len()
    }
}

fn chunk_sizes(len: usize) -> impl Iterator<Item = (usize, usize)> {
    (0..len).step_by(MAX_ROWS).map(move |start| (start, MAX_ROWS.min(len - start)))
}

/// Writes a plan: messages (touching their sessions), then parts, the step-finish parts
/// among them moving their sessions' totals ([`count_steps`]). A failure names the first row
/// of the statement that failed; write one by one to learn the exact row.
pub(crate) async fn write_plan<DB: Backend>(conn: &mut DB::Connection, plan: &Plan<'_>) -> StoreResult<()> {
    let bulk = DB::bulk();
    if plan.parts.iter().any(|part| part.usage.is_some()) {
        count_steps::<DB>(conn, &plan.parts).await?;
    }
    for (start, size) in chunk_sizes(plan.messages.len()) {
        let rows = &plan.messages[start..start + size];
        let mut statement = query::<DB>(bulk.messages(size));
        for (m, touched) in rows {
            statement = statement.bind_message(m).bind(to_db(*touched));
        }
        let first = &rows[0].0.id;
        let result = statement
            .execute(&mut *conn)
            .await
            .map_err(|e| StoreError::on_write(e, EntityKind::Message, first))?;
        // Rows changed by the statement itself (the triggers' session updates do not count).
        if DB::rows_affected(&result) != size as u64 {
            return Err(StoreError::AlreadyExists { kind: EntityKind::Message, id: first.clone() });
        }
    }
    for (start, size) in chunk_sizes(plan.parts.len()) {
        let rows = &plan.parts[start..start + size];
        let mut statement = query::<DB>(bulk.parts(size));
        for p in rows {
            statement = statement.bind_part(p);
        }
        let result = statement
            .execute(&mut *conn)
            .await
            .map_err(|e| StoreError::on_write(e, EntityKind::Part, &rows[0].id))?;
        if DB::rows_affected(&result) != size as u64 {
            return Err(StoreError::AlreadyExists { kind: EntityKind::Part, id: rows[0].id.clone() });
        }
    }
    Ok(())
}

/// Writes rows one statement each, in order, so that an error names its row.
pub(crate) async fn write_each<DB: Backend>(conn: &mut DB::Connection, rows: &[RowWrite]) -> StoreResult<()> {
    for row in rows {
        let plan = match row {
            RowWrite::Message(m, touched) => Plan { messages: vec![(m, *touched)], parts: Vec::new() },
            RowWrite::Part(p) => Plan { messages: Vec::new(), parts: vec![p] },
        };
        write_plan::<DB>(conn, &plan).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn part(id: &str, message: &str) -> RowWrite {
        RowWrite::Part(PartRow {
            id: id.into(),
            session_id: "ses_1".into(),
            message_id: message.into(),
            kind: "text".into(),
            open: false,
            cost: None,
            data: format!("{{\"id\": \"{id}\"}}"),
            usage: None,
        })
    }

    #[test]
    fn chunks_cover_every_row_once() {
        for len in 0..200 {
            let sizes: Vec<(usize, usize)> = chunk_sizes(len).collect();
            assert_eq!(sizes.iter().map(|(_, size)| size).sum::<usize>(), len);
            assert!(sizes.iter().all(|(_, size)| (1..=MAX_ROWS).contains(size)));
        }
        assert_eq!(chunk_sizes(70).collect::<Vec<_>>(), vec![(0, 64), (64, 6)]);
    }

    #[test]
    fn the_last_write_of_an_id_wins() {
        let first = [part("prt_1", "msg_1"), part("prt_2", "msg_1")];
        let second = [part("prt_1", "msg_1")];
        let plan = Plan::of(&[&first, &second]).unwrap_or_default();
        assert_eq!(plan.parts.len(), 2);
        let RowWrite::Part(last) = &second[0] else { unreachable!() };
        assert!(std::ptr::eq(plan.parts[0], last));
        assert!(plan.is_one_statement());
        // An id moving to another message is only decided by writing in order.
        let moved = [part("prt_1", "msg_2")];
        assert!(Plan::of(&[&first, &moved]).is_none());
    }
}
