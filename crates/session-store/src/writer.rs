//! The writer: one task owns all message and part writes of a store.
//!
//! Callers send commands and wait on a oneshot for the commit. Commands that queue up while a
//! transaction runs are committed together in the next one (group commit), each caller's rows
//! still all-or-nothing: when a group fails, its commands are retried one by one so every
//! caller gets its own answer. Text and reasoning deltas are applied to an in-memory copy of
//! the streaming part and written as the whole part at most once per flush interval; the part's
//! own upsert at its end replaces that copy. Being one task, the writer never races itself:
//! a flush can never write an older text over a newer upsert.

use std::collections::HashMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use session_core::{PartId, PartKind, SessionId};
use sqlx::pool::PoolConnection;
use sqlx::{Connection, Pool};
use tokio::sync::{mpsc, oneshot};
use tokio::time::Instant;

use crate::backend::{Backend, part_columns, query};
use crate::bulk::{Plan, write_each, write_plan};
use crate::error::{StoreError, StoreResult};
use crate::model::{PartDelta, StoreStats};
use crate::rows::{self, DecodedPart, RowWrite};

/// Most commands committed in one transaction.
const MAX_GROUP: usize = 512;
/// Most times the writer yields to let a group fill before committing it.
const MAX_YIELDS: usize = 8;
/// A streaming part whose flush fails this often is dropped from the buffer (its own upsert
/// at part end still writes it).
const MAX_FLUSH_FAILURES: u32 = 3;

/// Moves the commands already queued into `group`, up to [`MAX_GROUP`].
fn drain(rx: &mut mpsc::Receiver<Command>, group: &mut Vec<Command>) {
    while group.len() < MAX_GROUP {
        match rx.try_recv() {
            Ok(command) => group.push(command),
            Err(_) => break,
        }
    }
}

/// How a written part changes the streaming buffer.
#[derive(Debug, Clone)]
pub(crate) enum CacheOp {
    /// An open text or reasoning part: deltas will grow this copy.
    Stream(Box<session_core::Part>),
    /// A finished text or reasoning part: drop the copy.
    End(PartId),
}

/// A request to the writer.
#[derive(Debug)]
pub(crate) enum Command {
    /// Write rows in one transaction.
    Write { rows: Vec<RowWrite>, cache: Vec<CacheOp>, ack: oneshot::Sender<StoreResult<()>> },
    /// Grow a streaming part (no answer: deltas are buffered anyway).
    Delta(PartDelta),
    /// Write buffered deltas now (of one session, or all), after everything queued before.
    Flush { session: Option<SessionId>, ack: oneshot::Sender<StoreResult<()>> },
    /// Drop buffered parts of these sessions (deleted, or their run released).
    Forget { sessions: Vec<SessionId>, ack: oneshot::Sender<()> },
    /// Flush everything and stop.
    Stop { ack: oneshot::Sender<()> },
}

/// Counters shared with the store.
#[derive(Debug, Default)]
pub(crate) struct Counters {
    commits: AtomicU64,
    rows_written: AtomicU64,
    deltas: AtomicU64,
    delta_flushes: AtomicU64,
}

impl Counters {
    pub(crate) fn snapshot(&self) -> StoreStats {
        StoreStats {
            commits: self.commits.load(Ordering::Relaxed),
            rows_written: self.rows_written.load(Ordering::Relaxed),
            deltas: self.deltas.load(Ordering::Relaxed),
            delta_flushes: self.delta_flushes.load(Ordering::Relaxed),
        }
    }
}

#[derive(Debug)]
struct Streaming {
    part: session_core::Part,
    dirty_since: Option<Instant>,
    failures: u32,
}

/// The writer task's state.
pub(crate) struct Writer<DB: Backend> {
    pool: Pool<DB>,
    conn: Option<PoolConnection<DB>>,
    interval: Duration,
    counters: Arc<Counters>,
    streaming: HashMap<PartId, Streaming>,
    dirty_since: Option<Instant>,
}

impl<DB: Backend> Writer<DB> {
    pub(crate) fn new(pool: Pool<DB>, interval: Duration, counters: Arc<Counters>) -> Self {
        Self { pool, conn: None, interval, counters, streaming: HashMap::new(), dirty_since: None }
    }

    /// Runs until the channel closes or a stop command arrives; buffered deltas are written
    /// before it returns.
    pub(crate) async fn run(mut self, mut rx: mpsc::Receiver<Command>) {
        let mut stop_ack = None;
        // The connection is opened now, while the store's opener recovers leases and its user
        // builds the rest, not at the first write, which is on the way to a run's first
        // request. A failure here is retried at the first write.
        if let Err(error) = self.connection().await {
            tracing::debug!(%error, "the writer's connection did not open at start");
        }
        loop {
            let received = match self.dirty_since {
                Some(since) => match tokio::time::timeout_at(since + self.interval, rx.recv()).await {
                    Ok(received) => received,
                    Err(_elapsed) => {
                        // Failures are logged inside and retried at the next interval.
                        let _ = self.flush(None).await;
                        continue;
                    }
                },
                None => rx.recv().await,
            };
            let Some(first) = received else { break };
            let mut group = vec![first];
            drain(&mut rx, &mut group);
            // Group commit needs the callers whose writes were just acknowledged to have sent
            // their next ones: they are woken but may not have run yet, and committing the
            // one command that woke the writer would leave the rest for as many more commits.
            // Yield while that brings more (a lone caller costs one yield, microseconds).
            for _ in 0..MAX_YIELDS {
                if group.len() >= MAX_GROUP {
                    break;
                }
                let before = group.len();
                tokio::task::yield_now().await;
                drain(&mut rx, &mut group);
                if group.len() == before {
                    break;
                }
            }
            if let Some(ack) = self.process(group).await {
                stop_ack = Some(ack);
                break;
            }
            // Under steady load `recv` never times out: check the deadline here too.
            if self.dirty_since.is_some_and(|since| since.elapsed() >= self.interval) {
                let _ = self.flush(None).await;
            }
        }
        let _ = self.flush(None).await;
        if let Some(ack) = stop_ack {
            let _ = ack.send(());
        }
    }

    /// Handles a group of commands in order; returns the stop acknowledgement if one came.
    async fn process(&mut self, group: Vec<Command>) -> Option<oneshot::Sender<()>> {
        let mut pending: Vec<(Vec<RowWrite>, oneshot::Sender<StoreResult<()>>)> = Vec::new();
        for command in group {
            match command {
                Command::Write { rows, cache, ack } => {
                    for op in cache {
                        self.apply_cache(op);
                    }
                    pending.push((rows, ack));
                }
                Command::Delta(delta) => {
                    // A part not in the buffer is read from the database: commit what is
                    // queued first, so that the read sees it (a late delta after the part's
                    // end then finds the part closed and is dropped).
                    if !self.streaming.contains_key(&delta.part_id) {
                        self.commit_group(std::mem::take(&mut pending)).await;
                    }
                    self.apply_delta(delta).await;
                }
                Command::Flush { session, ack } => {
                    self.commit_group(std::mem::take(&mut pending)).await;
                    let _ = ack.send(self.flush(session.as_ref()).await);
                }
                Command::Forget { sessions, ack } => {
                    self.commit_group(std::mem::take(&mut pending)).await;
                    self.streaming.retain(|_, s| !sessions.contains(&s.part.session_id));
                    let _ = ack.send(());
                }
                Command::Stop { ack } => {
                    self.commit_group(std::mem::take(&mut pending)).await;
                    return Some(ack);
                }
            }
        }
        self.commit_group(pending).await;
        None
    }

    fn apply_cache(&mut self, op: CacheOp) {
        match op {
            CacheOp::Stream(part) => {
                self.streaming
                    .insert(part.id.clone(), Streaming { part: *part, dirty_since: None, failures: 0 });
            }
            CacheOp::End(id) => {
                self.streaming.remove(&id);
            }
        }
    }

    async fn apply_delta(&mut self, delta: PartDelta) {
        self.counters.deltas.fetch_add(1, Ordering::Relaxed);
        if !self.streaming.contains_key(&delta.part_id) {
            // Not written through this store (or the store restarted): read it once.
            match Self::load_streaming(&self.pool, &delta.part_id).await {
                Ok(Some(part)) => {
                    self.streaming
                        .insert(part.id.clone(), Streaming { part, dirty_since: None, failures: 0 });
                }
                Ok(None) => {
                    tracing::warn!(part_id = %delta.part_id, message_id = %delta.message_id,
                        "delta for a part that is not streaming; dropped");
                    return;
                }
                Err(error) => {
                    tracing::warn!(part_id = %delta.part_id, %error, "cannot read the part of a delta; dropped");
                    return;
                }
            }
        }
        let Some(entry) = self.streaming.get_mut(&delta.part_id) else { return };
        match &mut entry.part.kind {
            PartKind::Text(text) => text.text.push_str(&delta.delta),
            PartKind::Reasoning(reasoning) => reasoning.text.push_str(&delta.delta),
            _ => return,
        }
        if entry.dirty_since.is_none() {
            let now = Instant::now();
            entry.dirty_since = Some(now);
            if self.dirty_since.is_none() {
                self.dirty_since = Some(now);
            }
        }
    }

    async fn load_streaming(pool: &Pool<DB>, id: &PartId) -> StoreResult<Option<session_core::Part>> {
        let row = query::<DB>(DB::sql().select_part)
            .bind(id.as_str())
            .fetch_optional(pool)
            .await
            .map_err(StoreError::from_db)?;
        let Some(row) = row else { return Ok(None) };
        Ok(match rows::decode_part(&part_columns::<DB>(&row)?) {
            DecodedPart::Known(part)
                if rows::part_is_open(&part)
                    && matches!(part.kind, PartKind::Text(_) | PartKind::Reasoning(_)) =>
            {
                Some(part)
            }
            _ => None,
        })
    }

    /// Commits the queued writes together; on failure retries them one by one.
    async fn commit_group(&mut self, pending: Vec<(Vec<RowWrite>, oneshot::Sender<StoreResult<()>>)>) {
        if pending.is_empty() {
            return;
        }
        if pending.len() > 1 {
            let groups: Vec<&[RowWrite]> = pending.iter().map(|(rows, _)| rows.as_slice()).collect();
            if let Ok(count) = self.write_fast(&groups).await {
                self.count_commit(count);
                for (_, ack) in pending {
                    let _ = ack.send(Ok(()));
                }
                return;
            }
        }
        for (rows, ack) in pending {
            let _ = ack.send(self.write(&rows).await);
        }
    }

    fn count_commit(&self, rows: usize) {
        self.counters.commits.fetch_add(1, Ordering::Relaxed);
        self.counters.rows_written.fetch_add(rows as u64, Ordering::Relaxed);
    }

    /// One caller's rows, all or none: multi-row statements, or row by row when those fail
    /// (so that the error names the row that failed).
    async fn write(&mut self, rows: &[RowWrite]) -> StoreResult<()> {
        let count = match self.write_fast(&[rows]).await {
            Ok(count) => count,
            Err(_) => {
                self.write_each(rows).await?;
                rows.len()
            }
        };
        self.count_commit(count);
        Ok(())
    }

    /// The writer's own connection, kept between transactions.
    async fn connection(&mut self) -> StoreResult<&mut PoolConnection<DB>> {
        if self.conn.is_none() {
            self.conn = Some(self.pool.acquire().await.map_err(StoreError::from_db)?);
        }
        self.conn.as_mut().ok_or(StoreError::Closed)
    }

    /// Writes groups deduplicated, with multi-row statements, in one transaction (a plan of
    /// one statement needs none). `Err(None)`: the groups cannot be deduplicated.
    async fn write_fast(&mut self, groups: &[&[RowWrite]]) -> Result<usize, Option<StoreError>> {
        let plan = Plan::of(groups).ok_or(None)?;
        if plan.len() == 0 {
            return Ok(0);
        }
        let conn = self.connection().await.map_err(Some)?;
        let result = if plan.is_one_statement() {
            write_plan::<DB>(&mut **conn, &plan).await
        } else {
            match conn.begin_with(DB::sql().begin_write).await {
                Ok(mut tx) => match write_plan::<DB>(&mut tx, &plan).await {
                    Ok(()) => tx.commit().await.map_err(StoreError::from_db),
                    Err(error) => Err(error),
                },
                Err(error) => Err(StoreError::from_db(error)),
            }
        };
        match result {
            Ok(()) => Ok(plan.len()),
            Err(error) => {
                // The connection may be what failed: take a fresh one next time.
                self.conn = None;
                Err(Some(error))
            }
        }
    }

    /// Writes rows one statement each, in order, in one transaction.
    async fn write_each(&mut self, rows: &[RowWrite]) -> StoreResult<()> {
        let conn = self.connection().await?;
        let result = match conn.begin_with(DB::sql().begin_write).await {
            Ok(mut tx) => match write_each::<DB>(&mut tx, rows).await {
                Ok(()) => tx.commit().await.map_err(StoreError::from_db),
                Err(error) => Err(error),
            },
            Err(error) => Err(StoreError::from_db(error)),
        };
        if result.is_err() {
            self.conn = None;
        }
        result
    }

    /// Writes the buffered deltas of `session` (or of every session) as whole parts.
    async fn flush(&mut self, session: Option<&SessionId>) -> StoreResult<()> {
        let mut ids = Vec::new();
        let mut rows = Vec::new();
        for (id, entry) in &self.streaming {
            if entry.dirty_since.is_none() || session.is_some_and(|s| *s != entry.part.session_id) {
                continue;
            }
            match rows::encode_part(&entry.part) {
                Ok(row) => {
                    ids.push(id.clone());
                    rows.push(RowWrite::Part(row));
                }
                Err(error) => tracing::warn!(part_id = %id, %error, "cannot encode a streaming part"),
            }
        }
        let mut outcome = Ok(());
        if !rows.is_empty() {
            match self.write_fast(&[rows.as_slice()]).await {
                Ok(count) => {
                    self.count_commit(count);
                    self.counters.delta_flushes.fetch_add(rows.len() as u64, Ordering::Relaxed);
                    for id in &ids {
                        if let Some(entry) = self.streaming.get_mut(id) {
                            entry.dirty_since = None;
                            entry.failures = 0;
                        }
                    }
                }
                Err(group_error) => {
                    if let Some(error) = group_error {
                        tracing::warn!(%error, "flushing buffered deltas failed; retrying part by part");
                    }
                    for (id, row) in ids.iter().zip(rows) {
                        match self.write(&[row]).await {
                            Ok(()) => {
                                self.counters.delta_flushes.fetch_add(1, Ordering::Relaxed);
                                if let Some(entry) = self.streaming.get_mut(id) {
                                    entry.dirty_since = None;
                                    entry.failures = 0;
                                }
                            }
                            Err(error) => {
                                // Retry after another interval, and give up after a few.
                                let drop_it = self.streaming.get_mut(id).is_some_and(|entry| {
                                    entry.failures += 1;
                                    entry.dirty_since = Some(Instant::now());
                                    entry.failures >= MAX_FLUSH_FAILURES
                                });
                                if drop_it {
                                    tracing::warn!(part_id = %id, %error,
                                        "buffered deltas could not be written; dropped until the part's own upsert");
                                    self.streaming.remove(id);
                                }
                                outcome = Err(error);
                            }
                        }
                    }
                }
            }
        }
        self.dirty_since = self.streaming.values().filter_map(|entry| entry.dirty_since).min();
        outcome
    }
}
