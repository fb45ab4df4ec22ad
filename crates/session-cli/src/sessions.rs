//! `session sessions ...`: list, show, export, import and delete stored sessions.

use std::io::Write;
use std::path::Path;

use anyhow::{Context, Result, anyhow};
use session_core::{Identifier as _, Message, PartKind, SessionId};
use session_store::{ListSessions, SessionDocument, Store};

fn parse_id(id: &str) -> Result<SessionId> {
    SessionId::parse(id).map_err(|error| anyhow!("{error}"))
}

/// Lists sessions, newest first, one per line: id, title, directory.
pub async fn list(store: &dyn Store, out: &mut impl Write) -> Result<()> {
    let mut query = ListSessions { limit: 100, ..ListSessions::default() };
    loop {
        let page = store.list_sessions(&query).await?;
        for session in &page.sessions {
            writeln!(out, "{}\t{}\t{}", session.id, session.title, session.directory)?;
        }
        for skipped in &page.skipped {
            eprintln!("session: skipped an unreadable session row {}: {}", skipped.id, skipped.reason);
        }
        match page.next {
            Some(cursor) => query.after = Some(cursor),
            None => return Ok(()),
        }
    }
}

/// Shows a session's messages as readable text.
pub async fn show(store: &dyn Store, id: &str, out: &mut impl Write) -> Result<()> {
    let id = parse_id(id)?;
    let session = store.get_session(&id).await?;
    writeln!(out, "{} {}\n", session.id, session.title)?;
    let history = store.load_history(&id).await?;
    for message in &history.messages {
        match &message.info {
            Message::User(_) => writeln!(out, "## user")?,
            Message::Assistant(assistant) => writeln!(
                out,
                "## assistant ({}/{}, ${})",
                assistant.provider_id,
                assistant.model_id,
                assistant.cost.round_dp(6).normalize()
            )?,
        }
        for part in &message.parts {
            match &part.kind {
                PartKind::Text(text) => writeln!(out, "{}", text.text)?,
                PartKind::Tool(tool) => writeln!(out, "[{} {}]", tool.tool, tool.state.status().as_str())?,
                PartKind::Compaction(_) => writeln!(out, "[compaction]")?,
                PartKind::Patch(patch) => writeln!(out, "[changed {}]", patch.files.join(", "))?,
                _ => {}
            }
        }
        writeln!(out)?;
    }
    for skipped in &history.skipped {
        eprintln!("session: skipped an unreadable row {} ({}): {}", skipped.id, skipped.kind, skipped.reason);
    }
    Ok(())
}

/// Writes a session as one versioned JSON document.
pub async fn export(store: &dyn Store, id: &str, out: &mut impl Write) -> Result<()> {
    let document = store.export_session(&parse_id(id)?).await?;
    serde_json::to_writer_pretty(&mut *out, &document)?;
    writeln!(out)?;
    Ok(())
}

/// Reads an exported document and stores it; returns the session id.
pub async fn import(store: &dyn Store, file: &Path) -> Result<SessionId> {
    let text = std::fs::read_to_string(file).with_context(|| format!("cannot read {}", file.display()))?;
    let document: SessionDocument =
        serde_json::from_str(&text).with_context(|| format!("{} is not a session export", file.display()))?;
    Ok(store.import_session(&document).await?.id)
}

/// Deletes a session and everything under it; returns the deleted ids.
pub async fn delete(store: &dyn Store, id: &str) -> Result<Vec<SessionId>> {
    Ok(store.delete_session(&parse_id(id)?).await?)
}
