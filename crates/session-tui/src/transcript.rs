//! The transcript: the session's messages and parts as the bus changes them, local notes
//! (shell output, command results, errors), and their laid-out lines, cached per entry and
//! width so that a frame lays out only what changed and copies only the visible rows.

use std::collections::HashSet;
use std::path::PathBuf;

use ratatui::text::{Line, Span};
use session_core::{Message, MessageId, MessageWithParts, Part, PartId, PartKind, SessionId, ToolState};
use session_runtime::BusEvent;
use session_runtime::sessions::RevertRecord;

use crate::render::parts::{RenderContext, Row, message_rows};
use crate::render::wrap::{sanitize, wrap_line};
use crate::theme::Theme;

/// What a local note is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NoteKind {
    /// Information (a command's result, the help).
    Info,
    /// Something failed.
    Error,
    /// A `!command` and its output.
    Shell,
}

/// One block of the transcript.
#[derive(Debug, Clone)]
enum Body {
    Message { info: Box<Message>, parts: Vec<Part> },
    Note { kind: NoteKind, text: String },
}

/// Laid-out rows of an entry for one width and version.
#[derive(Debug, Clone)]
struct Cached {
    key: (u16, u64, bool, u64),
    rows: Vec<Row>,
}

#[derive(Debug, Clone)]
struct Entry {
    body: Body,
    /// Bumped on every change, so the cache knows it is stale.
    version: u64,
    cache: Option<Cached>,
}

impl Entry {
    fn new(body: Body) -> Self {
        Self { body, version: 0, cache: None }
    }

    fn message_id(&self) -> Option<&MessageId> {
        match &self.body {
            Body::Message { info, .. } => Some(info.id()),
            Body::Note { .. } => None,
        }
    }

    /// True while a tool of the message runs: its elapsed time changes every second.
    fn animated(&self) -> bool {
        match &self.body {
            Body::Message { parts, .. } => parts.iter().any(|p| {
                matches!(&p.kind, PartKind::Tool(t) if matches!(t.state, ToolState::Running { .. } | ToolState::Pending { .. }))
            }),
            Body::Note { .. } => false,
        }
    }
}

/// The messages of the session being shown, in id order, with notes where they happened.
#[derive(Debug, Clone)]
pub struct Transcript {
    session: SessionId,
    root: PathBuf,
    entries: Vec<Entry>,
    /// Parts the user expanded (click or keys).
    expanded: HashSet<PartId>,
    /// The session's pending revert: what it covers is hidden.
    revert: Option<RevertRecord>,
    /// Row count of each entry at the last layout, for scrolling without laying out again.
    heights: Vec<usize>,
    width: u16,
}

impl Transcript {
    /// An empty transcript of `session` in the workspace `root`.
    pub fn new(session: SessionId, root: PathBuf) -> Self {
        Self {
            session,
            root,
            entries: Vec::new(),
            expanded: HashSet::new(),
            revert: None,
            heights: Vec::new(),
            width: 0,
        }
    }

    /// The session shown.
    pub fn session(&self) -> &SessionId {
        &self.session
    }

    /// Replaces everything with a stored history (a session opened or switched to).
    pub fn load(&mut self, history: Vec<MessageWithParts>, revert: Option<RevertRecord>) {
        self.entries = history
            .into_iter()
            .map(|m| Entry::new(Body::Message { info: Box::new(m.info), parts: m.parts }))
            .collect();
        self.revert = revert;
    }

    /// Sets the pending revert (from the session's record).
    pub fn set_revert(&mut self, revert: Option<RevertRecord>) {
        if self.revert != revert {
            self.revert = revert;
            for entry in &mut self.entries {
                entry.version += 1;
            }
        }
    }

    /// The pending revert.
    pub fn revert(&self) -> Option<&RevertRecord> {
        self.revert.as_ref()
    }

    /// Adds a note after everything so far.
    pub fn note(&mut self, kind: NoteKind, text: impl Into<String>) {
        self.entries.push(Entry::new(Body::Note { kind, text: text.into() }));
    }

    /// The messages (not notes), in order.
    pub fn messages(&self) -> impl DoubleEndedIterator<Item = (&Message, &[Part])> {
        self.entries.iter().filter_map(|e| match &e.body {
            Body::Message { info, parts } => Some((info.as_ref(), parts.as_slice())),
            Body::Note { .. } => None,
        })
    }

    /// True while any tool runs (the frame must be redrawn for its elapsed time).
    pub fn animated(&self) -> bool {
        self.entries.iter().any(Entry::animated)
    }

    fn find(&mut self, id: &MessageId) -> Option<&mut Entry> {
        self.entries.iter_mut().rev().find(|e| e.message_id() == Some(id))
    }

    fn upsert_message(&mut self, info: Message) {
        if let Some(entry) = self.find(info.id()) {
            if let Body::Message { info: old, .. } = &mut entry.body {
                **old = info;
            }
            entry.version += 1;
            return;
        }
        // Newer ids sort later: a message goes after every message with a smaller id.
        // Notes added after that message stay before the new one.
        let end = self.entries.len();
        let at = match self.entries.iter().rposition(|e| e.message_id().is_some_and(|m| m < info.id())) {
            Some(i) => (i + 1..end).find(|&j| self.entries[j].message_id().is_some()).unwrap_or(end),
            None => self.entries.iter().position(|e| e.message_id().is_some()).unwrap_or(end),
        };
        self.entries.insert(at, Entry::new(Body::Message { info: Box::new(info), parts: Vec::new() }));
    }

    fn upsert_part(&mut self, part: Part) {
        let Some(entry) = self.find(&part.message_id) else {
            tracing::debug!(part = %part.id, "a part of a message not shown yet; skipped");
            return;
        };
        if let Body::Message { parts, .. } = &mut entry.body {
            match parts.binary_search_by(|p| p.id.cmp(&part.id)) {
                Ok(i) => parts[i] = part,
                Err(i) => parts.insert(i, part),
            }
        }
        entry.version += 1;
    }

    /// Applies one bus event; true when it changed what is shown. Events of other sessions
    /// (subagents' included) are ignored.
    pub fn apply(&mut self, event: &BusEvent) -> bool {
        match event {
            BusEvent::MessageUpdated { info } if info.session_id() == &self.session => {
                self.upsert_message(info.as_ref().clone());
                true
            }
            BusEvent::PartUpdated { part } if part.session_id == self.session => {
                self.upsert_part(part.as_ref().clone());
                true
            }
            BusEvent::PartDelta { session_id, message_id, part_id, field, delta }
                if session_id == &self.session =>
            {
                let Some(entry) = self.find(message_id) else { return false };
                let Body::Message { parts, .. } = &mut entry.body else { return false };
                let Some(part) = parts.iter_mut().find(|p| &p.id == part_id) else { return false };
                match (&mut part.kind, field.as_str()) {
                    (PartKind::Text(text), "text") => text.text.push_str(delta),
                    (PartKind::Reasoning(reasoning), "text") => reasoning.text.push_str(delta),
                    _ => return false,
                }
                entry.version += 1;
                true
            }
            BusEvent::MessageRemoved { session_id, message_id } if session_id == &self.session => {
                let before = self.entries.len();
                self.entries.retain(|e| e.message_id() != Some(message_id));
                before != self.entries.len()
            }
            BusEvent::PartRemoved { session_id, message_id, part_id } if session_id == &self.session => {
                let Some(entry) = self.find(message_id) else { return false };
                if let Body::Message { parts, .. } = &mut entry.body {
                    parts.retain(|p| &p.id != part_id);
                }
                entry.version += 1;
                true
            }
            BusEvent::SessionUpdated { info } if info.id == self.session => {
                self.set_revert(info.revert.clone());
                true
            }
            _ => false,
        }
    }

    /// Expands or collapses a part (a tool call or reasoning).
    pub fn toggle(&mut self, part: &PartId) {
        if !self.expanded.remove(part) {
            self.expanded.insert(part.clone());
        }
        for entry in &mut self.entries {
            if let Body::Message { parts, .. } = &entry.body
                && parts.iter().any(|p| &p.id == part)
            {
                entry.version += 1;
            }
        }
    }

    /// The newest tool call or reasoning part, for the key that expands the latest one.
    pub fn last_expandable(&self) -> Option<PartId> {
        self.messages().flat_map(|(_, parts)| parts.iter()).rev().find_map(|p| match p.kind {
            PartKind::Tool(_) | PartKind::Reasoning(_) => Some(p.id.clone()),
            _ => None,
        })
    }

    /// Lays every entry out for `width` (reusing cached rows) and returns the total row count.
    pub fn layout(&mut self, width: u16, theme: &Theme, now_ms: u64, details: bool) -> usize {
        self.width = width;
        let revert = self.revert.clone();
        let root = self.root.clone();
        let cx = RenderContext { theme, root: &root, now_ms, details };
        let mut heights = Vec::with_capacity(self.entries.len());
        for entry in &mut self.entries {
            let hidden = match (&revert, entry.message_id()) {
                (Some(revert), Some(id)) => {
                    id > &revert.message_id || (id == &revert.message_id && revert.part_id.is_none())
                }
                _ => false,
            };
            if hidden {
                heights.push(0);
                continue;
            }
            // A running tool's elapsed time is part of its key: it changes once a second.
            let tick = if entry.animated() { now_ms / 1000 } else { 0 };
            let key = (width, entry.version, details, tick);
            if entry.cache.as_ref().is_none_or(|c| c.key != key) {
                let rows = layout_entry(entry, &self.expanded, &cx, revert.as_ref(), width);
                entry.cache = Some(Cached { key, rows });
            }
            heights.push(entry.cache.as_ref().map_or(0, |c| c.rows.len()));
        }
        self.heights = heights;
        self.heights.iter().sum()
    }

    /// The rows from `start` (0 is the top of the whole transcript), at most `height` of them,
    /// from the last layout.
    pub fn rows(&self, start: usize, height: usize) -> Vec<Row> {
        let mut out = Vec::with_capacity(height);
        let mut offset = 0;
        for (entry, &rows) in self.entries.iter().zip(&self.heights) {
            if out.len() >= height {
                break;
            }
            if offset + rows <= start {
                offset += rows;
                continue;
            }
            if let Some(cache) = &entry.cache {
                let from = start.saturating_sub(offset);
                out.extend(cache.rows.iter().skip(from).take(height - out.len()).cloned());
            }
            offset += rows;
        }
        out
    }
}

/// An entry's rows wrapped to `width`, with a blank line after it.
fn layout_entry(
    entry: &Entry,
    expanded: &HashSet<PartId>,
    cx: &RenderContext<'_>,
    revert: Option<&RevertRecord>,
    width: u16,
) -> Vec<Row> {
    let theme = cx.theme;
    let rows: Vec<Row> = match &entry.body {
        Body::Message { info, parts } => {
            // A revert inside this message hides its parts from the revert's part on.
            let shown: Vec<Part> = match revert {
                Some(r) if &r.message_id == info.id() => r
                    .part_id
                    .as_ref()
                    .map_or_else(Vec::new, |cut| parts.iter().filter(|p| &p.id < cut).cloned().collect()),
                _ => parts.clone(),
            };
            message_rows(info, &shown, expanded, cx)
        }
        Body::Note { kind, text } => {
            let style = match kind {
                NoteKind::Info => theme.dim(),
                NoteKind::Error => theme.error(),
                NoteKind::Shell => theme.text(),
            };
            sanitize(text).lines().map(|l| (Line::from(Span::styled(l.to_owned(), style)), None)).collect()
        }
    };
    if rows.is_empty() {
        return rows;
    }
    let mut out: Vec<Row> = Vec::with_capacity(rows.len() + 1);
    for (line, part) in rows {
        out.extend(wrap_line(&line, usize::from(width)).into_iter().map(|l| (l, part.clone())));
    }
    out.push((Line::default(), None));
    out
}

/// How many reverted messages there are (for the note under a revert).
pub fn reverted_count(transcript: &Transcript) -> usize {
    let Some(revert) = transcript.revert() else { return 0 };
    transcript
        .messages()
        .filter(|(m, _)| matches!(m, Message::User(_)) && m.id() >= &revert.message_id)
        .count()
}

/// Maps ids to the user messages in order, for undo.
pub fn user_messages(transcript: &Transcript) -> Vec<(MessageId, String)> {
    transcript
        .messages()
        .filter(|(m, _)| matches!(m, Message::User(_)))
        .map(|(m, parts)| {
            let text = parts
                .iter()
                .filter_map(|p| match &p.kind {
                    PartKind::Text(t) if t.synthetic != Some(true) => Some(t.text.as_str()),
                    _ => None,
                })
                .collect::<Vec<_>>()
                .join("\n");
            (m.id().clone(), text)
        })
        .collect()
}
