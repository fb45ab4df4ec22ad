//! Finding the config files of the three layers.

use std::path::{Path, PathBuf};

/// The config files to load, lowest layer first; [`discover`] finds them, embedders may build
/// the value themselves.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigSources {
    /// The user's files: `~/.config/session/config.json`, then `config.jsonc`.
    pub user: Vec<PathBuf>,
    /// The project's `session.json` and `session.jsonc` files, outermost directory first (or,
    /// where there are none, OpenCode's `opencode.json`, `opencode.jsonc` and the same in
    /// `.opencode/`).
    pub project: Vec<PathBuf>,
    /// The file named by `SESSION_CONFIG`; it must exist.
    pub explicit: Option<PathBuf>,
    /// The outermost folder the project files were looked for in (the git root, the home
    /// folder, or the start folder): what is trusted, and where an untrusted layer's
    /// `{file:...}` references must stay.
    pub project_root: Option<PathBuf>,
    /// The folders the user trusts (see [`super::TrustList`]): a project file in one of them
    /// applies in full; any other is restricted by [`super::restrict_untrusted`].
    pub trusted: Vec<PathBuf>,
    /// Markdown agents and commands of the user's config folder, layered after its files.
    pub user_markdown: Vec<PathBuf>,
    /// Markdown agents and commands of the project's `.opencode` and `.session` folders,
    /// outermost first, layered after the project's files.
    pub project_markdown: Vec<PathBuf>,
}

impl ConfigSources {
    /// True when the project file `path` lies in a trusted folder.
    pub fn is_trusted(&self, path: &Path) -> bool {
        let folder = path.parent().unwrap_or(path);
        let folder = folder.canonicalize().unwrap_or_else(|_| folder.to_path_buf());
        self.trusted.iter().any(|trusted| folder.starts_with(trusted))
    }

    /// Every file in load order, lowest first.
    pub fn files(&self) -> impl Iterator<Item = &Path> {
        self.user
            .iter()
            .chain(&self.user_markdown)
            .chain(&self.project)
            .chain(&self.project_markdown)
            .chain(&self.explicit)
            .map(PathBuf::as_path)
    }

    /// True when `path` is a project file (JSON or markdown), which trust restricts.
    pub fn is_project(&self, path: &Path) -> bool {
        self.project.iter().chain(&self.project_markdown).any(|p| p == path)
    }
}

/// The file names a directory may hold, in the order they are layered.
const USER_FILES: [&str; 2] = ["config.json", "config.jsonc"];
const PROJECT_FILES: [&str; 2] = ["session.json", "session.jsonc"];
/// OpenCode's project files, read in a project without any of [`PROJECT_FILES`].
const OPENCODE_FILES: [&str; 4] =
    ["opencode.json", "opencode.jsonc", ".opencode/opencode.json", ".opencode/opencode.jsonc"];

/// The directory of the user's config files below the home directory.
pub fn user_config_dir(home: &Path) -> PathBuf {
    home.join(".config").join("session")
}

/// Finds the config files for a run in `start_dir`.
///
/// - the user layer: `config.json` and `config.jsonc` in [`user_config_dir`] of `home_dir`;
/// - the project layer: `session.json` and `session.jsonc` in `start_dir` and each directory
///   above it, up to and including the git root (the first directory holding `.git`) or the
///   home folder, whichever comes first; outside both, `start_dir` alone (a walk up to `/tmp`
///   or `/` would read other people's files). Outer directories come first, so the one
///   nearest to `start_dir` wins;
///   Where no directory of the walk holds either, OpenCode's files are read in their place:
///   `opencode.json`, `opencode.jsonc`, `.opencode/opencode.json` and `.opencode/opencode.jsonc`;
/// - the explicit layer: `session_config` (the value of `SESSION_CONFIG`, which the caller
///   reads), relative to `start_dir`.
///
/// Where a directory holds both spellings, both load and `.jsonc` wins.
pub fn discover(start_dir: &Path, home_dir: Option<&Path>, session_config: Option<PathBuf>) -> ConfigSources {
    let user_dir = home_dir.map(user_config_dir);
    discover_from(start_dir, home_dir, user_dir.as_deref(), session_config)
}

/// Like [`discover`], with the user layer read from `user_dir` itself (for example
/// `$XDG_CONFIG_HOME/session`, which the caller resolves from the environment).
pub fn discover_in(
    start_dir: &Path,
    user_dir: Option<&Path>,
    session_config: Option<PathBuf>,
) -> ConfigSources {
    discover_from(start_dir, None, user_dir, session_config)
}

/// Like [`discover_in`], with the home folder that stops the walk up.
pub fn discover_from(
    start_dir: &Path,
    home_dir: Option<&Path>,
    user_dir: Option<&Path>,
    session_config: Option<PathBuf>,
) -> ConfigSources {
    let user = user_dir.map(|dir| existing(dir, &USER_FILES)).unwrap_or_default();

    let mut dirs = Vec::new();
    let mut stopped = false;
    for dir in start_dir.ancestors() {
        dirs.push(dir);
        if dir.join(".git").exists() || home_dir.is_some_and(|home| dir == home) {
            stopped = true;
            break;
        }
    }
    if !stopped {
        dirs.truncate(1);
    }
    let project_root = dirs.last().map(|dir| dir.to_path_buf());
    let mut project: Vec<PathBuf> = dirs.iter().rev().flat_map(|dir| existing(dir, &PROJECT_FILES)).collect();
    if project.is_empty() {
        // An OpenCode project keeps its config: its files are read when no session.json is.
        project = dirs.iter().rev().flat_map(|dir| existing(dir, &OPENCODE_FILES)).collect();
    }

    let project_markdown = dirs
        .iter()
        .rev()
        .flat_map(|dir| super::markdown::PROJECT_FOLDERS.map(|folder| dir.join(folder)))
        .flat_map(|folder| super::markdown::markdown_files(&folder))
        .collect();
    let user_markdown = user_dir.map(super::markdown::markdown_files).unwrap_or_default();

    let explicit = session_config.map(|path| start_dir.join(path));
    ConfigSources {
        user,
        project,
        explicit,
        project_root,
        trusted: Vec::new(),
        user_markdown,
        project_markdown,
    }
}

/// The folder `session trust` in `cwd` trusts: the git root above it, else `cwd` itself (never
/// the whole home folder).
pub fn trust_root(cwd: &Path) -> PathBuf {
    cwd.ancestors().find(|dir| dir.join(".git").exists()).unwrap_or(cwd).to_path_buf()
}

fn existing(dir: &Path, names: &[&str]) -> Vec<PathBuf> {
    names.iter().map(|name| dir.join(name)).filter(|path| path.is_file()).collect()
}
