//! Finding the config files of the three layers.

use std::path::{Path, PathBuf};

/// The config files to load, lowest layer first; [`discover`] finds them, embedders may build
/// the value themselves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigSources {
    /// The user's files: `~/.config/session/config.json`, then `config.jsonc`.
    pub user: Vec<PathBuf>,
    /// The project's `session.json` and `session.jsonc` files, outermost directory first.
    pub project: Vec<PathBuf>,
    /// The file named by `SESSION_CONFIG`; it must exist.
    pub explicit: Option<PathBuf>,
}

impl ConfigSources {
    /// Every file in load order, lowest first.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.user.iter().chain(&self.project).chain(&self.explicit).map(PathBuf::as_path)
    }
}

/// The file names a directory may hold, in the order they are layered.
const USER_FILES: [&str; 2] = ["config.json", "config.jsonc"];
const PROJECT_FILES: [&str; 2] = ["session.json", "session.jsonc"];

/// The directory of the user's config files below the home directory.
pub fn user_config_dir(home: &Path) -> PathBuf {
    home.join(".config").join("session")
}

/// Finds the config files for a run in `start_dir`.
///
/// - the user layer: `config.json` and `config.jsonc` in [`user_config_dir`] of `home_dir`;
/// - the project layer: `session.json` and `session.jsonc` in `start_dir` and each directory
///   above it, up to and including the git root (the first directory holding `.git`), or up to
///   the filesystem root outside a repository, as OpenCode walks up to its worktree. Outer
///   directories come first, so the one nearest to `start_dir` wins;
/// - the explicit layer: `session_config` (the value of `SESSION_CONFIG`, which the caller
///   reads), relative to `start_dir`.
///
/// Where a directory holds both spellings, both load and `.jsonc` wins.
pub fn discover(start_dir: &Path, home_dir: Option<&Path>, session_config: Option<PathBuf>) -> ConfigSources {
    let user_dir = home_dir.map(user_config_dir);
    discover_in(start_dir, user_dir.as_deref(), session_config)
}

/// Like [`discover`], with the user layer read from `user_dir` itself (for example
/// `$XDG_CONFIG_HOME/session`, which the caller resolves from the environment).
pub fn discover_in(
    start_dir: &Path,
    user_dir: Option<&Path>,
    session_config: Option<PathBuf>,
) -> ConfigSources {
    let user = user_dir.map(|dir| existing(dir, &USER_FILES)).unwrap_or_default();

    let mut dirs = Vec::new();
    for dir in start_dir.ancestors() {
        dirs.push(dir);
        if dir.join(".git").exists() {
            break;
        }
    }
    let project = dirs.iter().rev().flat_map(|dir| existing(dir, &PROJECT_FILES)).collect();

    let explicit = session_config.map(|path| start_dir.join(path));
    ConfigSources { user, project, explicit }
}

fn existing(dir: &Path, names: &[&str]) -> Vec<PathBuf> {
    names.iter().map(|name| dir.join(name)).filter(|path| path.is_file()).collect()
}
