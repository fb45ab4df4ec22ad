//! `session trust`: the project folders whose config applies in full, and the one-time question
//! on a terminal when an untrusted folder's config was cut down.

use std::collections::HashMap;
use std::io::{BufRead, IsTerminal as _, Write};
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, anyhow};
use session_runtime::config::{TrustList, WarningReason};
use session_runtime::setup::{project_root, user_dir};

use crate::terminal::clean;

/// What `session trust` does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TrustAction {
    /// Trust this folder's project (its git root or the folder).
    Add(PathBuf),
    /// Stop trusting it.
    Remove(PathBuf),
    /// Print the trusted folders.
    List,
}

/// Carries out `action` on the trust list in the user's config folder.
pub fn trust(
    action: &TrustAction,
    env: &HashMap<String, String>,
    home: Option<&Path>,
    out: &mut impl Write,
) -> Result<()> {
    let dir = user_dir(env, home).ok_or_else(|| anyhow!("no config folder: set HOME or XDG_CONFIG_HOME"))?;
    let mut list = TrustList::load(&dir);
    match action {
        TrustAction::List => {
            for folder in &list.trusted {
                writeln!(out, "{}", clean(&folder.display().to_string()))?;
            }
            return Ok(());
        }
        TrustAction::Add(folder) => {
            let root = project_root(folder);
            list.trust(&root);
            writeln!(out, "trusted {}: its session.json applies in full", root.display())?;
        }
        TrustAction::Remove(folder) => {
            let root = project_root(folder);
            if !list.untrust(&root) {
                writeln!(out, "{} was not trusted", root.display())?;
                return Ok(());
            }
            writeln!(out, "no longer trusted: {}", root.display())?;
        }
    }
    list.save(&dir).with_context(|| format!("cannot write the trust list in {}", dir.display()))
}

/// After a config load that cut an untrusted project's config down: on a terminal, asks once
/// whether to trust the folder, and records the answer. Returns true when the user trusted it
/// (the caller loads the config again).
pub fn ask_once(
    warnings: &[session_runtime::config::ConfigWarning],
    cwd: &Path,
    env: &HashMap<String, String>,
    home: Option<&Path>,
) -> bool {
    if !warnings.iter().any(|w| w.reason == WarningReason::Untrusted)
        || !std::io::stdin().is_terminal()
        || !std::io::stderr().is_terminal()
    {
        return false;
    }
    let Some(dir) = user_dir(env, home) else { return false };
    let root = project_root(cwd);
    let mut list = TrustList::load(&dir);
    if list.is_declined(&root) {
        return false;
    }
    eprint!(
        "session: {} has a project config that sets endpoints, keys or permissions. Trust this folder and apply it in full? [y/N] ",
        root.display()
    );
    let mut answer = String::new();
    if std::io::stdin().lock().read_line(&mut answer).is_err() {
        return false;
    }
    let yes = matches!(answer.trim().to_lowercase().as_str(), "y" | "yes");
    if yes {
        list.trust(&root)
    } else {
        list.decline(&root)
    }
    if let Err(error) = list.save(&dir) {
        eprintln!("session: warning: cannot write the trust list in {}: {error}", dir.display());
    }
    yes
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn add_list_and_remove_a_folder() {
        let dir = tempfile::tempdir().unwrap_or_else(|_| unreachable!("a temp dir"));
        let home = dir.path().join("home");
        let project = home.join("code/app");
        std::fs::create_dir_all(project.join(".git")).unwrap_or_default();
        let env = HashMap::new();
        let mut out = Vec::new();
        assert!(trust(&TrustAction::Add(project.join(".git")), &env, Some(&home), &mut out).is_ok());
        let listed = {
            let mut out = Vec::new();
            assert!(trust(&TrustAction::List, &env, Some(&home), &mut out).is_ok());
            String::from_utf8(out).unwrap_or_default()
        };
        let canonical = project.canonicalize().unwrap_or_default();
        assert_eq!(listed.trim(), canonical.display().to_string(), "the git root is what is trusted");
        assert!(trust(&TrustAction::Remove(project.clone()), &env, Some(&home), &mut out).is_ok());
        assert!(!TrustList::load(&home.join(".config/session")).is_trusted(&project));
    }
}
