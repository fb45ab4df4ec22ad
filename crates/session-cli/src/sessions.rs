//! `session sessions ...`: list, show, export, import, delete, revert and unrevert stored
//! sessions.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use anyhow::{Context, Result, anyhow};
use session_core::{Identifier as _, Message, MessageId, ModelRef, PartId, PartKind, SessionId};
use session_runtime::snapshot::{GitSnapshotter, SnapshotRetention, SnapshotStoreReport};
use session_runtime::{Runtime, RuntimeSettings};
use session_store::{ListSessions, Session, SessionDocument, Store};
use session_tools::{
    PermissionAnswer, PermissionAsker, PermissionEngine, ToolExecutor, ToolRegistry, Workspace,
};

use crate::terminal::clean;

fn parse_id(id: &str) -> Result<SessionId> {
    SessionId::parse(id).map_err(|error| anyhow!("{error}"))
}

/// Lists sessions, newest first, one per line, tab-separated: id, title, the lines the session
/// added and deleted in the working tree (`+12 -3`, or `-` before any step changed a file
/// under snapshots), directory. A subagent's child session follows its parent, its id indented
/// by two spaces.
pub async fn list(store: &dyn Store, out: &mut impl Write) -> Result<()> {
    let mut query = ListSessions { limit: 100, ..ListSessions::default() };
    let mut sessions = Vec::new();
    loop {
        let page = store.list_sessions(&query).await?;
        sessions.extend(page.sessions);
        for skipped in &page.skipped {
            eprintln!("session: skipped an unreadable session row {}: {}", skipped.id, skipped.reason);
        }
        match page.next {
            Some(cursor) => query.after = Some(cursor),
            None => break,
        }
    }
    let ids: std::collections::HashSet<_> = sessions.iter().map(|session| session.id.clone()).collect();
    let is_root = |session: &session_store::Session| {
        session.parent_id.as_ref().is_none_or(|parent| !ids.contains(parent))
    };
    for root in sessions.iter().filter(|session| is_root(session)) {
        write_session(out, root, "")?;
        for child in sessions.iter().filter(|session| session.parent_id.as_ref() == Some(&root.id)) {
            write_session(out, child, "  ")?;
        }
    }
    Ok(())
}

fn write_session(out: &mut impl Write, session: &session_store::Session, indent: &str) -> Result<()> {
    let changes = match &session.summary {
        Some(summary) => format!("+{} -{}", summary.additions, summary.deletions),
        None => "-".to_owned(),
    };
    // A title is one line (the store may hold anything): tabs and newlines would break the
    // columns.
    let title = clean(&session.title).replace(['\t', '\n'], " ");
    writeln!(out, "{indent}{}\t{}\t{}\t{}", session.id, title, changes, clean(&session.directory))?;
    Ok(())
}

/// Shows a session's messages as readable text, after a line on its folder's snapshot store
/// (under `data_dir`).
pub async fn show(store: &dyn Store, data_dir: &Path, id: &str, out: &mut impl Write) -> Result<()> {
    let id = parse_id(id)?;
    let session = store.get_session(&id).await?;
    writeln!(out, "{} {}", session.id, clean(&session.title))?;
    let retention = SnapshotRetention::default();
    let snapshots = GitSnapshotter::existing_store(Path::new(&session.directory), data_dir, retention).await;
    writeln!(out, "{}\n", snapshot_line(snapshots.as_ref()))?;
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
                PartKind::Text(text) => writeln!(out, "{}", clean(&text.text))?,
                PartKind::Tool(tool) => {
                    writeln!(out, "[{} {}]", clean(&tool.tool), tool.state.status().as_str())?
                }
                PartKind::Compaction(_) => writeln!(out, "[compaction]")?,
                PartKind::Patch(patch) => writeln!(out, "[changed {}]", clean(&patch.files.join(", ")))?,
                _ => {}
            }
        }
        // An errored message says why it is empty, instead of a bare heading.
        if let Message::Assistant(assistant) = &message.info
            && let Some(error) = &assistant.error
        {
            writeln!(out, "[error {}: {}]", error.name(), clean(error.message()))?;
        }
        writeln!(out)?;
    }
    for skipped in &history.skipped {
        eprintln!("session: skipped an unreadable row {} ({}): {}", skipped.id, skipped.kind, skipped.reason);
    }
    Ok(())
}

/// The snapshot store's line of `show`: where, how big against its cap, when housekept.
fn snapshot_line(report: Option<&SnapshotStoreReport>) -> String {
    let Some(report) = report else {
        return "snapshots: none for this folder (off, or no step ran here)".to_owned();
    };
    let mib = |bytes: u64| bytes as f64 / (1024.0 * 1024.0);
    let housekept = match report.last_housekeeping_ms {
        Some(ms) => format!("last housekeeping {}", session_core::calendar::iso_time(ms)),
        None => "no housekeeping pass yet".to_owned(),
    };
    format!(
        "snapshots: {:.1} MiB of a {:.0} MiB cap (default; `snapshot_retention` in the config), kept {} days, {housekept}, in {}",
        mib(report.bytes),
        mib(report.max_bytes),
        report.max_age.as_secs() / 86_400,
        report.git_dir.display()
    )
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

/// Reverts the files a session changed after `message` (or its part `part`) and records the
/// revert; the messages go when the session continues, and `unrevert` undoes it. `cwd` must be
/// the session's folder: the stored folder (perhaps from an import) is acted on only when the
/// user runs the command there.
pub async fn revert(
    store: Arc<dyn Store>,
    data_dir: &Path,
    cwd: &Path,
    id: &str,
    message: &str,
    part: Option<&str>,
    out: &mut impl Write,
) -> Result<()> {
    let session = store.get_session(&parse_id(id)?).await?;
    let message = MessageId::parse(message).map_err(|error| anyhow!("message id: {error}"))?;
    let part = part.map(PartId::parse).transpose().map_err(|error| anyhow!("--part: {error}"))?;
    let runtime = maintenance_runtime(store, data_dir, cwd, &session).await?;
    let reverted = runtime.revert(&session.id, &message, part.as_ref()).await?;
    let Some(record) = &reverted.revert else {
        return Err(anyhow!("the revert left no record on session {}", session.id));
    };
    writeln!(out, "reverted session {} to before message {}", session.id, record.message_id)?;
    for file in changed_files(record.diff.as_deref().unwrap_or_default()) {
        writeln!(out, "  restored {file}")?;
    }
    writeln!(
        out,
        "the messages after that point are removed when the session continues; undo with: session sessions unrevert {}",
        session.id
    )?;
    Ok(())
}

/// Puts back what [`revert`] took away and clears the revert record; `cwd` must be the
/// session's folder, as for [`revert`].
pub async fn unrevert(
    store: Arc<dyn Store>,
    data_dir: &Path,
    cwd: &Path,
    id: &str,
    out: &mut impl Write,
) -> Result<()> {
    let session = store.get_session(&parse_id(id)?).await?;
    if session.revert.is_none() {
        writeln!(out, "session {} has no revert to undo", session.id)?;
        return Ok(());
    }
    let runtime = maintenance_runtime(store, data_dir, cwd, &session).await?;
    runtime.unrevert(&session.id).await?;
    writeln!(out, "unreverted session {}: the files are as they were before the revert", session.id)?;
    Ok(())
}

/// The files named in a unified diff's `diff --git a/X b/X` headers.
fn changed_files(diff: &str) -> Vec<&str> {
    diff.lines()
        .filter_map(|line| line.strip_prefix("diff --git a/"))
        .filter_map(|rest| rest.split_once(" b/").map(|(file, _)| file))
        .collect()
}

/// A runtime over the session's own worktree that can revert and unrevert but not prompt:
/// no provider, no tools, every permission ask refused.
async fn maintenance_runtime(
    store: Arc<dyn Store>,
    data_dir: &Path,
    cwd: &Path,
    session: &Session,
) -> Result<Runtime> {
    let worktree = PathBuf::from(&session.directory);
    let same = match (worktree.canonicalize(), cwd.canonicalize()) {
        (Ok(stored), Ok(here)) => stored == here,
        _ => false,
    };
    if !same {
        return Err(anyhow!(
            "session {} belongs to the folder {}; run this command from that folder to change its files",
            session.id,
            clean(&worktree.display().to_string())
        ));
    }
    let snapshots = GitSnapshotter::open(&worktree, data_dir).await.ok_or_else(|| {
        anyhow!(
            "snapshots are off for {}: it is the filesystem root or the home folder, or its snapshot store cannot be opened, so session {} has no file changes to revert",
            worktree.display(),
            session.id
        )
    })?;
    let permissions = Arc::new(PermissionEngine::new(Arc::new(RefuseAsks)));
    let workspace = Workspace::new(&worktree)
        .with_context(|| format!("the session's folder {} cannot be opened", worktree.display()))?;
    let tools = Arc::new(ToolExecutor::new(ToolRegistry::new(), workspace, permissions));
    // No agents and no providers: this runtime refuses prompts; the default model is never used.
    let default_model = ModelRef { provider_id: String::new(), model_id: String::new(), variant: None };
    Ok(Runtime::builder(store, tools, RuntimeSettings::new(default_model, worktree))
        .snapshots(Arc::new(snapshots))
        .agents(BTreeMap::new())
        .build())
}

/// Refuses every ask: the maintenance runtime runs no tools.
struct RefuseAsks;

#[async_trait::async_trait]
impl PermissionAsker for RefuseAsks {
    async fn ask(&self, _ask: &session_core::permission::PermissionAsk) -> Option<PermissionAnswer> {
        Some(PermissionAnswer { reply: session_core::permission::Reply::Reject, message: None })
    }
}

#[cfg(test)]
mod tests {
    use super::changed_files;

    #[test]
    fn changed_files_come_from_the_diff_headers() {
        let diff = "diff --git a/src/x.rs b/src/x.rs\nindex 1..2\n--- a/src/x.rs\n+++ b/src/x.rs\n@@ -1 +1 @@\n-a\n+b\ndiff --git a/new.txt b/new.txt\n";
        assert_eq!(changed_files(diff), ["src/x.rs", "new.txt"]);
        assert!(changed_files("").is_empty());
    }
}
