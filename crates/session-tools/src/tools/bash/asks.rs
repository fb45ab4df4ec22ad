//! The permission asks of one `bash` call, built from the [`shell`](crate::shell) analysis
//! of its command: `external_directory` for path arguments and redirection targets outside
//! the workspace, `edit` for the files redirections write, and `bash` with one pattern per
//! command that would run. Every request is checked against the deny rules before the first
//! ask, so one denied command refuses the whole call without asking anything.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use serde_json::Value;
use session_core::JsonObject;
use session_core::permission::PermissionRequest;

use super::super::blocking;
use crate::context::{PathKind, ToolContext};
use crate::error::ToolError;
use crate::shell::{self, Analysis, Step};

/// Commands that only change the directory: no `bash` pattern of their own (as in
/// OpenCode); their targets are checked as directories and followed for later paths.
const CWD_COMMANDS: [&str; 3] = ["cd", "pushd", "popd"];

/// How many directories a line may have `cd`-ed into before its relative paths are no
/// longer followed (each relative path is checked against every one).
const MAX_DIRECTORIES: usize = 16;

/// Commands whose "always" pattern keeps their subcommand (`git status *`).
const SUBCOMMAND_TOOLS: [&str; 24] = [
    "git",
    "npm",
    "pnpm",
    "yarn",
    "bun",
    "npx",
    "cargo",
    "go",
    "docker",
    "kubectl",
    "pip",
    "pip3",
    "uv",
    "poetry",
    "apt",
    "apt-get",
    "brew",
    "gh",
    "dotnet",
    "deno",
    "make",
    "systemctl",
    "rustup",
    "helm",
];

/// Asks everything `command` needs before it may run in `workdir`; returns its analysis
/// when all is allowed.
pub(super) async fn authorize(
    ctx: &ToolContext,
    command: &str,
    workdir: &Path,
) -> Result<Analysis, ToolError> {
    let owned = command.to_owned();
    // Parsing a long command is CPU work: keep it off the async threads.
    let analysis = blocking(move || Ok(shell::analyse(&owned))).await?;
    let mut unanalysable = analysis.unanalysable.clone();
    let (files, edits) = file_requests(ctx, &analysis, workdir, command, &mut unanalysable);
    let named = |pattern: &str| {
        // A rule names a spelling when it is more than a catch-all (`*`).
        ctx.deciding_rule("bash", pattern)
            .is_some_and(|rule| !rule.pattern.chars().all(|c| c == '*' || c == ' '))
    };
    let mut patterns = bash_patterns(&analysis, named);
    if patterns.is_empty() {
        patterns.push(command.to_owned());
    }
    let mut metadata = JsonObject::new();
    metadata.insert("command".into(), Value::String(command.to_owned()));
    if !unanalysable.is_empty() {
        metadata.insert(
            "unanalysable".into(),
            Value::Array(unanalysable.iter().cloned().map(Value::String).collect()),
        );
    }
    let bash = PermissionRequest {
        permission: "bash".into(),
        patterns,
        always: always_patterns(&analysis),
        metadata,
    };
    for request in files.iter().chain(&edits).chain([&bash]) {
        ctx.check_denied(request)?;
    }
    for request in files.into_iter().chain(edits) {
        ctx.ask(request).await?;
    }
    if unanalysable.is_empty() { ctx.ask(bash).await } else { ctx.ask_anyway(bash).await }?;
    Ok(analysis)
}

/// One `bash` pattern per command that runs and per environment change, and the spellings
/// that a rule names (`named`) or that change who runs the command or its environment
/// (`sudo`, `FOO=1`); in source order, without repeats.
pub(crate) fn bash_patterns(analysis: &Analysis, named: impl Fn(&str) -> bool) -> Vec<String> {
    let mut patterns: Vec<String> = Vec::new();
    let mut seen = HashSet::new();
    for step in &analysis.steps {
        let pattern = match step {
            Step::Run(run) if run.known && run.name().is_some_and(|name| CWD_COMMANDS.contains(&name)) => {
                continue;
            }
            Step::Run(run) => run.pattern(),
            Step::Spelling { words, checked_always } => {
                let pattern = words.join(" ");
                if !checked_always && !named(&pattern) {
                    continue;
                }
                pattern
            }
            Step::Environment { words } => words.join(" "),
            Step::Write { .. } => continue,
        };
        if seen.insert(pattern.clone()) {
            patterns.push(pattern);
        }
    }
    patterns
}

/// The "always" patterns: each known command's name (and subcommand for tools that have
/// them) followed by ` *`; a spelling checked always (`sudo rm x`, `FOO=1 cargo test`) and an
/// environment change (`export X=1`) only exactly as asked.
pub(crate) fn always_patterns(analysis: &Analysis) -> Vec<String> {
    let mut always: Vec<String> = analysis
        .steps
        .iter()
        .filter_map(|step| match step {
            Step::Run(run) if run.known && !run.name().is_some_and(|name| CWD_COMMANDS.contains(&name)) => {
                always_pattern(&run.words)
            }
            Step::Spelling { words, checked_always: true } | Step::Environment { words } => {
                Some(words.join(" "))
            }
            _ => None,
        })
        .collect();
    always.sort();
    always.dedup();
    always
}

/// The "always" pattern of a simple command: its name (and subcommand for tools that have
/// them) followed by ` *`.
fn always_pattern(words: &[String]) -> Option<String> {
    let head = words.first()?;
    if SUBCOMMAND_TOOLS.contains(&head.as_str())
        && let Some(sub) = words.iter().skip(1).find(|w| !w.starts_with('-'))
    {
        return Some(format!("{head} {sub} *"));
    }
    Some(format!("{head} *"))
}

/// The `external_directory` asks (one per folder) for path arguments and redirection targets
/// outside the workspace, and the `edit` asks for the files redirections write. Relative
/// paths are taken against the working directory and every directory the line `cd`s into
/// before them, since a subshell or a failed `cd` leaves the shell in either.
fn file_requests(
    ctx: &ToolContext,
    analysis: &Analysis,
    workdir: &Path,
    command: &str,
    unanalysable: &mut Vec<String>,
) -> (Vec<PermissionRequest>, Vec<PermissionRequest>) {
    let mut directories = vec![workdir.to_path_buf()];
    let (mut files, mut edits): (Vec<PermissionRequest>, Vec<PermissionRequest>) = (Vec::new(), Vec::new());
    let (mut folders, mut edited) = (HashSet::new(), HashSet::new());
    let mut external = |path: &Path, kind: PathKind| {
        if let Some(request) = ctx.external_request(path, kind)
            && folders.insert(request.patterns.clone())
        {
            files.push(request);
        }
    };
    for step in &analysis.steps {
        match step {
            Step::Run(run) => {
                let changes_directory = run.name().is_some_and(|name| CWD_COMMANDS.contains(&name));
                let mut entered = Vec::new();
                for path in &run.paths {
                    // A glob cut back to `dir/` (or to nothing) names the folder it lists.
                    let folder = changes_directory || path.is_empty() || path.ends_with('/');
                    let kind = if folder { PathKind::Directory } else { PathKind::File };
                    for directory in &directories {
                        let resolved = resolve(ctx, directory, path);
                        external(&resolved, kind);
                        entered.push(resolved);
                    }
                }
                if changes_directory {
                    for directory in entered {
                        if !directories.contains(&directory) {
                            directories.push(directory);
                        }
                    }
                    if directories.len() > MAX_DIRECTORIES {
                        directories.truncate(MAX_DIRECTORIES);
                        unanalysable
                            .push(format!("the command changes directory more than {MAX_DIRECTORIES} ways"));
                    }
                }
            }
            Step::Write { path } => {
                for directory in &directories {
                    let resolved = resolve(ctx, directory, path);
                    external(&resolved, PathKind::File);
                    let shown = ctx.workspace().relative(&resolved);
                    if !edited.insert(shown.clone()) {
                        continue;
                    }
                    let mut metadata = JsonObject::new();
                    metadata
                        .insert("filepath".into(), Value::String(resolved.to_string_lossy().into_owned()));
                    metadata.insert("command".into(), Value::String(command.to_owned()));
                    edits.push(PermissionRequest {
                        permission: "edit".into(),
                        patterns: vec![shown],
                        always: vec!["*".into()],
                        metadata,
                    });
                }
            }
            Step::Spelling { .. } | Step::Environment { .. } => {}
        }
    }
    (files, edits)
}

/// A path argument as the shell would reach it from `directory`, symlinks followed; one the
/// workspace cannot place (`~` with no known home, `~user`) is kept as written, which counts
/// as outside.
fn resolve(ctx: &ToolContext, directory: &Path, path: &str) -> PathBuf {
    let joined = if path.starts_with('/') || path.starts_with('~') {
        path.to_owned()
    } else {
        directory.join(path).to_string_lossy().into_owned()
    };
    match ctx.workspace().resolve(&joined) {
        Ok(resolved) => resolved.path,
        Err(_) => PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn derive(command: &str, named: &[&str]) -> (Vec<String>, Vec<String>) {
        let analysis = shell::analyse(command);
        (bash_patterns(&analysis, |p| named.contains(&p)), always_patterns(&analysis))
    }

    #[test]
    fn one_pattern_per_command_and_arity_always_patterns() {
        let (patterns, always) = derive("cd 'a b' && git status -s | grep x; echo \"q;u\" 2>&1 &", &[]);
        assert_eq!(patterns, ["git status -s", "grep x", "echo q;u"]);
        assert_eq!(always, ["echo *", "git status *", "grep *"]);
    }

    #[test]
    fn spellings_count_where_named_and_sudo_or_assignments_always() {
        let (patterns, always) = derive("timeout 5 cargo test && sudo rm x", &[]);
        assert_eq!(patterns, ["cargo test", "sudo rm x", "rm x"]);
        assert_eq!(always, ["cargo test *", "rm *", "sudo rm x"]);
        let (patterns, _) = derive("timeout 5 cargo test", &["timeout 5 cargo test"]);
        assert_eq!(patterns, ["timeout 5 cargo test", "cargo test"]);
    }
}
