//! The records the store keeps besides core's messages and parts: sessions, leases, history
//! reports and write batches.

use rust_decimal::Decimal;
use serde::{Deserialize, Serialize};
use serde_json::Value;
use session_core::permission::Rule;
use session_core::{
    CacheTokens, FileDiff, JsonObject, Message, MessageId, MessageWithParts, Part, PartId, PartKind,
    SessionId, TokenUsage,
};

/// Line counts of the changes a session made (OpenCode's `summary`): from the first step's
/// snapshot to the last one (SPEC 13 summary diffs).
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SessionSummary {
    /// Lines added.
    pub additions: u64,
    /// Lines deleted.
    pub deletions: u64,
    /// Files changed.
    pub files: u64,
    /// Per-file diffs, when a writer stored them (the runtime keeps them on user messages and
    /// in `session.diff` events, not on the session row, which every list reads).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diffs: Option<Vec<FileDiff>>,
}

/// The point a session was reverted to (OpenCode's `revert`), cleared by unrevert or cleanup.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RevertRecord {
    /// The first message taken back.
    #[serde(rename = "messageID")]
    pub message_id: MessageId,
    /// The first part taken back, when the revert is inside a message.
    #[serde(rename = "partID", default, skip_serializing_if = "Option::is_none")]
    pub part_id: Option<PartId>,
    /// Snapshot of the working tree taken before reverting.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub snapshot: Option<String>,
    /// The diff that was reverted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub diff: Option<String>,
}

/// Times of a session (epoch ms).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionTime {
    /// When it was created.
    pub created: u64,
    /// When it, or one of its messages, last changed.
    pub updated: u64,
    /// When a compaction started, while one runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub compacting: Option<u64>,
    /// When it was archived.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub archived: Option<u64>,
}

/// The model a session runs with (OpenCode's session `model`): the one its newest prompt named.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionModel {
    /// Model id.
    pub id: String,
    /// Provider id.
    #[serde(rename = "providerID")]
    pub provider_id: String,
    /// Model variant; `default` when the prompt named none, as OpenCode stores it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub variant: Option<String>,
}

impl SessionModel {
    /// The session model of a prompt's model reference (`default` for no variant).
    pub fn of(model: &session_core::ModelRef) -> Self {
        Self {
            id: model.model_id.clone(),
            provider_id: model.provider_id.clone(),
            variant: Some(model.variant.clone().unwrap_or_else(|| DEFAULT_VARIANT.to_owned())),
        }
    }

    /// Whether `other` is the same model, a missing variant being `default` (as OpenCode
    /// compares a session's model with a prompt's).
    pub fn same_as(&self, other: &SessionModel) -> bool {
        let variant = |m: &SessionModel| m.variant.as_deref().unwrap_or(DEFAULT_VARIANT).to_owned();
        self.id == other.id && self.provider_id == other.provider_id && variant(self) == variant(other)
    }
}

/// The variant OpenCode records for a prompt that named none.
pub const DEFAULT_VARIANT: &str = "default";

/// Token totals of a session's steps (OpenCode's session `tokens`: no provider total).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionTokens {
    /// Input tokens net of cache reads and writes.
    pub input: u64,
    /// Output tokens net of reasoning.
    pub output: u64,
    /// Reasoning tokens.
    pub reasoning: u64,
    /// Cache reads and writes.
    pub cache: CacheTokens,
}

impl From<&TokenUsage> for SessionTokens {
    fn from(tokens: &TokenUsage) -> Self {
        Self { input: tokens.input, output: tokens.output, reasoning: tokens.reasoning, cache: tokens.cache }
    }
}

/// A session record, with OpenCode's JSON names.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Session {
    /// Session id (newest sorts first).
    pub id: SessionId,
    /// A short name for lists and URLs (`adjective-noun`, minted at creation); a session stored
    /// before slugs were kept reads with the tail of its id.
    #[serde(default)]
    pub slug: String,
    /// The project the session belongs to.
    #[serde(rename = "projectID")]
    pub project_id: String,
    /// The working directory.
    pub directory: String,
    /// The working directory relative to its project's root (`""` at the root), as OpenCode
    /// records it; absent for sessions stored before it was kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The session this one was forked or spawned from.
    #[serde(rename = "parentID", default, skip_serializing_if = "Option::is_none")]
    pub parent_id: Option<SessionId>,
    /// Change counts.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub summary: Option<SessionSummary>,
    /// What the session's steps cost so far, in US dollars (the sum of its step-finish parts,
    /// kept by the store as they are written and removed).
    #[serde(default, with = "session_core::usage::price")]
    pub cost: Decimal,
    /// The tokens of the session's steps so far (kept with `cost`).
    #[serde(default)]
    pub tokens: SessionTokens,
    /// Title.
    pub title: String,
    /// The agent of the session's newest prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The model of the session's newest prompt.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<SessionModel>,
    /// Version of the runtime that created it.
    pub version: String,
    /// Times.
    pub time: SessionTime,
    /// The session's own permission rules (OpenCode's `permission`), evaluated after its
    /// agent's (last match wins), so a client can set what one session may do.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub permission: Vec<Rule>,
    /// Pending revert.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revert: Option<RevertRecord>,
    /// Fields of other or newer versions, kept as they were.
    #[serde(flatten)]
    pub extra: JsonObject,
}

impl Session {
    /// True while the session has the title the store gave it (`New session - <created>` or
    /// `Child session - <created>`, at its own creation time) or an empty one: a title a user
    /// gave, at creation or later, is anything else.
    pub fn has_default_title(&self) -> bool {
        self.title.trim().is_empty()
            || self.title == crate::util::default_title(self.parent_id.is_some(), self.time.created)
    }
}

/// What a new session starts with; the store fills the rest.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct NewSession {
    /// A caller-chosen id; the store makes one when absent.
    pub id: Option<SessionId>,
    /// The project.
    pub project_id: String,
    /// The working directory.
    pub directory: String,
    /// Title; absent gives OpenCode's `New session - <ISO time>` (or `Child session - ...`).
    pub title: Option<String>,
    /// The parent session.
    pub parent_id: Option<SessionId>,
    /// Runtime version; absent gives this crate's version.
    pub version: Option<String>,
    /// The session's own permission rules.
    pub permission: Vec<Rule>,
    /// The directory relative to its project's root (OpenCode's `path`).
    pub path: Option<String>,
    /// The agent it starts with (a client may name one; a prompt sets it otherwise).
    pub agent: Option<String>,
    /// The model it starts with.
    pub model: Option<SessionModel>,
}

impl NewSession {
    /// A session in `directory` of `project_id` with defaults for everything else.
    pub fn new(project_id: impl Into<String>, directory: impl Into<String>) -> Self {
        Self { project_id: project_id.into(), directory: directory.into(), ..Self::default() }
    }
}

/// Changes to a session; `None` leaves a field as it is, `Some(None)` clears an optional one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SessionPatch {
    /// New title.
    pub title: Option<String>,
    /// With `title`: change it only while the session [has its default
    /// title](Session::has_default_title), checked in the same transaction as the write, so a
    /// generated title never replaces one a user gave meanwhile.
    pub title_only_if_default: bool,
    /// New change counts.
    pub summary: Option<Option<SessionSummary>>,
    /// New revert record.
    pub revert: Option<Option<RevertRecord>>,
    /// Compaction start time.
    pub compacting: Option<Option<u64>>,
    /// Archive time.
    pub archived: Option<Option<u64>>,
    /// The agent and model of a new prompt (OpenCode's `setAgentModel`): written only when
    /// either differs from the session's, and then the session's updated time is `.1`'s
    /// time, the prompt's; the same pair changes nothing.
    pub agent_model: Option<AgentModel>,
}

/// The agent and model a prompt runs with, and when it was written.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct AgentModel {
    /// The agent's name.
    pub agent: String,
    /// The model.
    pub model: SessionModel,
    /// When the prompt was written (epoch ms).
    pub time: u64,
}

/// Where a page of sessions continues: the last session of the previous page.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SessionCursor {
    /// Its update time.
    pub updated: u64,
    /// Its id.
    pub id: SessionId,
}

/// A query for one page of sessions, most recently updated first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListSessions {
    /// Page size (1 to 1000).
    pub limit: u32,
    /// Continue after this cursor.
    pub after: Option<SessionCursor>,
    /// Only sessions in this directory.
    pub directory: Option<String>,
    /// Only sessions without a parent.
    pub roots_only: bool,
}

impl Default for ListSessions {
    fn default() -> Self {
        Self { limit: 50, after: None, directory: None, roots_only: false }
    }
}

/// One page of sessions.
#[derive(Debug, Clone, PartialEq)]
pub struct SessionPage {
    /// The sessions, most recently updated first.
    pub sessions: Vec<Session>,
    /// The cursor of the next page; absent on the last page.
    pub next: Option<SessionCursor>,
    /// Rows that no longer parse, skipped.
    pub skipped: Vec<SkippedRow>,
}

/// A part whose kind this version does not know, kept as its raw JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct RawPart {
    /// Part id.
    pub id: PartId,
    /// Owning session.
    pub session_id: SessionId,
    /// Owning message.
    pub message_id: MessageId,
    /// The `type` it was stored with.
    pub part_type: String,
    /// The whole stored JSON object.
    pub json: Value,
}

/// A stored row that could not be read, reported with its ids and skipped.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkippedRow {
    /// What the row held.
    pub kind: crate::EntityKind,
    /// The row's own id.
    pub id: String,
    /// Its session.
    pub session_id: String,
    /// Its message, for a part.
    pub message_id: Option<String>,
    /// Why it was skipped.
    pub reason: String,
}

/// A session's messages with their parts, in id order, and what could not be read.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct SessionHistory {
    /// Messages oldest first, each with its known parts in id order.
    pub messages: Vec<MessageWithParts>,
    /// Parts of kinds from a newer version, in id order; they are kept, not lost.
    pub unknown_parts: Vec<RawPart>,
    /// Rows whose JSON no longer parses.
    pub skipped: Vec<SkippedRow>,
}

/// The newest part of a session's history and the size of the whole, read in one snapshot
/// ([`crate::Store::load_history_tail`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct HistoryTail {
    /// The messages from the asked id on, with their parts, as [`SessionHistory`] holds them.
    pub history: SessionHistory,
    /// How many message rows the session has in all (unreadable ones included).
    pub total_messages: u64,
}

/// Where revert cleanup starts removing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RevertPoint {
    /// Without a part: this message and every later one go. With a part: the message stays
    /// with its parts before that part, and every later message goes.
    pub message_id: MessageId,
    /// The first part to remove inside `message_id`.
    pub part_id: Option<PartId>,
}

impl From<&RevertRecord> for RevertPoint {
    fn from(record: &RevertRecord) -> Self {
        Self { message_id: record.message_id.clone(), part_id: record.part_id.clone() }
    }
}

/// What a revert cleanup removed, for `message.removed` and `message.part.removed` events.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Removed {
    /// Removed messages (their parts went with them).
    pub messages: Vec<MessageId>,
    /// Parts removed from the message that stayed.
    pub parts: Vec<PartId>,
}

/// A session's ownership by one running process.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Lease {
    /// The session.
    pub session_id: SessionId,
    /// The holding store's owner id.
    pub owner: String,
    /// When it ends unless the heartbeat renews it (epoch ms).
    pub expires_at: u64,
}

/// What crash recovery changed.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RecoveryReport {
    /// Sessions whose expired lease was cleared (they are idle now).
    pub sessions: Vec<SessionId>,
    /// Tool parts aborted and text or reasoning parts closed.
    pub parts: usize,
    /// Assistant messages completed with an aborted error.
    pub messages: usize,
}

impl RecoveryReport {
    pub(crate) fn absorb(&mut self, other: RecoveryReport) {
        self.sessions.extend(other.sessions);
        self.parts += other.parts;
        self.messages += other.messages;
    }
}

/// Messages and parts written in one transaction: all of them or none.
///
/// Messages are written first, then parts, each in the order given; a step-finish part and
/// the message totals it changes belong in one batch.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct WriteBatch {
    /// Messages to upsert.
    pub messages: Vec<Message>,
    /// Parts to upsert.
    pub parts: Vec<Part>,
}

impl WriteBatch {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a message.
    pub fn message(mut self, message: Message) -> Self {
        self.messages.push(message);
        self
    }

    /// Adds a part.
    pub fn part(mut self, part: Part) -> Self {
        self.parts.push(part);
        self
    }

    /// True when there is nothing to write.
    pub fn is_empty(&self) -> bool {
        self.messages.is_empty() && self.parts.is_empty()
    }
}

/// Text appended to a streaming text or reasoning part (the processor's `PartDelta` effect).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PartDelta {
    /// The session of the part.
    pub session_id: SessionId,
    /// The message of the part.
    pub message_id: MessageId,
    /// The part grown.
    pub part_id: PartId,
    /// The field grown; only `text` is accepted.
    pub field: String,
    /// The appended text.
    pub delta: String,
}

/// Counters of the store's writer, for tests and diagnostics.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StoreStats {
    /// Write transactions committed by the writer.
    pub commits: u64,
    /// Message and part rows written by the writer (deltas' flushes included).
    pub rows_written: u64,
    /// Deltas received.
    pub deltas: u64,
    /// Part rows written to persist buffered deltas.
    pub delta_flushes: u64,
}

/// What steps cost and used: one step-finish part's, or a session's sum.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(crate) struct Usage {
    /// US dollars.
    pub cost: Decimal,
    /// Tokens.
    pub tokens: SessionTokens,
}

impl Usage {
    /// A step-finish part's usage; none for other parts.
    pub(crate) fn of_part(part: &Part) -> Option<Self> {
        match &part.kind {
            PartKind::StepFinish(step) => {
                Some(Self { cost: step.cost, tokens: SessionTokens::from(&step.tokens) })
            }
            _ => None,
        }
    }

    /// A session's totals as the session record carries them.
    pub(crate) fn of_session(session: &Session) -> Self {
        Self { cost: session.cost, tokens: session.tokens }
    }

    /// Puts these totals on `session`.
    pub(crate) fn set_on(&self, session: &mut Session) {
        session.cost = self.cost;
        session.tokens = self.tokens;
    }

    /// `self + add - remove`; token counts never go below zero.
    pub(crate) fn moved(&self, add: &Self, remove: &Self) -> Self {
        let count = |total: u64, plus: u64, minus: u64| total.saturating_add(plus).saturating_sub(minus);
        let (t, a, r) = (&self.tokens, &add.tokens, &remove.tokens);
        Self {
            cost: self.cost + add.cost - remove.cost,
            tokens: SessionTokens {
                input: count(t.input, a.input, r.input),
                output: count(t.output, a.output, r.output),
                reasoning: count(t.reasoning, a.reasoning, r.reasoning),
                cache: session_core::CacheTokens {
                    read: count(t.cache.read, a.cache.read, r.cache.read),
                    write: count(t.cache.write, a.cache.write, r.cache.write),
                },
            },
        }
    }
}
