//! The instruction files of the system prompt, as OpenCode's `instruction.ts` finds them:
//! `AGENTS.md` in every folder from the project root down to the working directory (`CLAUDE.md`
//! where a folder has none), the user's global `AGENTS.md` (else `~/.claude/CLAUDE.md`), and
//! the files and globs of the `instructions` key; each file once, each under its path.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use super::ComposeError;

/// The most bytes one instruction file may have; a larger one is an error naming it.
const MAX_INSTRUCTION_BYTES: u64 = 256 * 1024;

/// The most files a glob of the `instructions` key may add.
const MAX_GLOB_FILES: usize = 200;

/// Where to look for instruction files.
#[derive(Debug, Clone)]
pub struct InstructionSources<'a> {
    /// The working directory.
    pub cwd: &'a Path,
    /// The project root (the git root above `cwd`, else `cwd`): the walk up stops there, and
    /// relative `instructions` entries are relative to it.
    pub root: &'a Path,
    /// The user's config folder, holding the global `AGENTS.md`.
    pub user_dir: Option<&'a Path>,
    /// The home folder, for `~/` and `~/.claude/CLAUDE.md`.
    pub home: Option<&'a Path>,
    /// The `instructions` key.
    pub instructions: &'a [String],
}

/// The instruction files in prompt order: the project's from the root down, the global one,
/// then the key's in written order (each glob's matches by path); no file twice.
pub fn instruction_files(sources: &InstructionSources<'_>) -> Vec<PathBuf> {
    let mut files = Vec::new();
    let mut dirs: Vec<&Path> = sources.cwd.ancestors().collect();
    match dirs.iter().position(|dir| *dir == sources.root) {
        Some(index) => dirs.truncate(index + 1),
        None => dirs.truncate(1),
    }
    for dir in dirs.into_iter().rev() {
        let agents = dir.join("AGENTS.md");
        let claude = dir.join("CLAUDE.md");
        if agents.is_file() {
            files.push(agents);
        } else if claude.is_file() {
            files.push(claude);
        }
    }
    let global = sources.user_dir.map(|dir| dir.join("AGENTS.md")).filter(|path| path.is_file());
    let claude = sources.home.map(|home| home.join(".claude/CLAUDE.md")).filter(|path| path.is_file());
    files.extend(global.or(claude));
    for entry in sources.instructions {
        files.extend(expand(entry, sources));
    }
    let mut seen = HashSet::new();
    files.retain(|path| seen.insert(path.canonicalize().unwrap_or_else(|_| path.clone())));
    files
}

/// The files one `instructions` entry names: a path, or a glob (`*`, `?`, `[`, `{`).
fn expand(entry: &str, sources: &InstructionSources<'_>) -> Vec<PathBuf> {
    let path = match (entry.strip_prefix("~/"), sources.home) {
        (Some(rest), Some(home)) => home.join(rest),
        (Some(_), None) => return Vec::new(),
        (None, _) => sources.root.join(entry),
    };
    let text = path.to_string_lossy();
    let Some(magic) = text.find(['*', '?', '[', '{']) else {
        if path.is_file() {
            return vec![path];
        }
        tracing::warn!(path = %path.display(), "an instructions entry names no file");
        return Vec::new();
    };
    // The folder before the first glob character is walked; the rest is matched below it.
    let base = text[..magic]
        .rfind('/')
        .map_or_else(|| sources.root.to_path_buf(), |slash| PathBuf::from(&text[..slash]));
    let pattern = format!("/{}", text[base.to_string_lossy().len()..].trim_start_matches('/'));
    let mut overrides = ignore::overrides::OverrideBuilder::new(&base);
    let matcher = match overrides.add(&pattern).map(|_| ()).and_then(|()| overrides.build()) {
        Ok(matcher) => matcher,
        Err(error) => {
            tracing::warn!(entry, %error, "an instructions glob is not valid");
            return Vec::new();
        }
    };
    let mut found: Vec<PathBuf> = ignore::WalkBuilder::new(&base)
        .overrides(matcher)
        .build()
        .filter_map(Result::ok)
        .filter(|item| item.file_type().is_some_and(|kind| kind.is_file()))
        .map(ignore::DirEntry::into_path)
        .take(MAX_GLOB_FILES)
        .collect();
    found.sort();
    found
}

/// The system prompt's instruction block: each file's text under `Instructions from: PATH`;
/// `None` when there are none.
///
/// A file is read only when it resolves, every symlink followed, inside the folder it belongs
/// to: the project root for the project's files (its `AGENTS.md`/`CLAUDE.md` and relative
/// `instructions` entries), the user's config folder for the global `AGENTS.md`, `~/.claude`
/// for `~/.claude/CLAUDE.md`. A committed `AGENTS.md` that links to `~/.ssh/id_rsa` is left out
/// with a warning. Files the user's config names by an absolute or `~/` path are read as named.
pub fn instructions_text(
    files: &[PathBuf],
    sources: &InstructionSources<'_>,
) -> Result<Option<String>, ComposeError> {
    let claude = sources.home.map(|home| home.join(".claude"));
    let mut blocks = Vec::new();
    for path in files {
        let root = if path.starts_with(sources.root) {
            sources.root
        } else if let Some(user) = sources.user_dir.filter(|user| path.starts_with(user)) {
            user
        } else if let Some(claude) = claude.as_deref().filter(|claude| path.starts_with(claude)) {
            claude
        } else {
            Path::new("/")
        };
        let text = match crate::config::read_regular_file_within(path, root, MAX_INSTRUCTION_BYTES) {
            Ok(text) => text,
            // A file removed since it was found adds nothing.
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => continue,
            Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => {
                tracing::warn!(path = %path.display(), %error, "an instruction file was not read");
                continue;
            }
            Err(source) => {
                return Err(ComposeError::Instructions { path: path.display().to_string(), source });
            }
        };
        if text.trim().is_empty() {
            continue;
        }
        blocks.push(format!("Instructions from: {}\n{}", path.display(), text.trim()));
    }
    Ok((!blocks.is_empty()).then(|| blocks.join("\n\n")))
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    #[test]
    fn files_come_from_the_root_down_then_global_then_the_key() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().join("repo");
        let cwd = root.join("pkg/app");
        std::fs::create_dir_all(&cwd).unwrap();
        write(&root.join("AGENTS.md"), "root rules");
        write(&root.join("CLAUDE.md"), "not read: the folder has AGENTS.md");
        write(&root.join("pkg/CLAUDE.md"), "pkg rules");
        write(&cwd.join("AGENTS.md"), "app rules");
        write(&dir.path().join("AGENTS.md"), "above the root: not read");
        let user = dir.path().join("xdg/session");
        write(&user.join("AGENTS.md"), "global rules");
        write(&root.join("docs/style.md"), "style");
        write(&root.join("docs/api.md"), "api");
        write(&dir.path().join("home/notes.md"), "home notes");
        let instructions = ["docs/*.md".to_owned(), "~/notes.md".to_owned(), "AGENTS.md".to_owned()];
        let home = dir.path().join("home");
        let sources = InstructionSources {
            cwd: &cwd,
            root: &root,
            user_dir: Some(&user),
            home: Some(&home),
            instructions: &instructions,
        };
        let files = instruction_files(&sources);
        let relative: Vec<String> =
            files.iter().map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string()).collect();
        assert_eq!(
            relative,
            [
                "repo/AGENTS.md",
                "repo/pkg/CLAUDE.md",
                "repo/pkg/app/AGENTS.md",
                "xdg/session/AGENTS.md",
                "repo/docs/api.md",
                "repo/docs/style.md",
                "home/notes.md"
            ]
        );
        let text = instructions_text(&files, &sources).unwrap().unwrap();
        assert!(
            text.starts_with(&format!("Instructions from: {}\nroot rules", root.join("AGENTS.md").display()))
        );
        assert!(text.contains("pkg rules") && text.contains("global rules") && text.contains("home notes"));
        assert!(!text.contains("not read"));
    }

    #[test]
    fn no_files_no_block() {
        let dir = tempfile::tempdir().unwrap();
        let sources = InstructionSources {
            cwd: dir.path(),
            root: dir.path(),
            user_dir: None,
            home: None,
            instructions: &[],
        };
        assert!(instruction_files(&sources).is_empty());
        assert_eq!(instructions_text(&[], &sources).unwrap(), None);
    }
}
