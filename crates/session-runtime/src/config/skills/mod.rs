//! Skills: folders with a `SKILL.md` (YAML front matter `name`, `description`, optional
//! `license`, `allowed-tools`, `metadata`; the body is the instructions; the other files are its
//! resources), or markdown files with front matter at a skills folder's root, found where
//! OpenCode 1.18.34, Claude Code, Codex and goose keep them ([`skill_folders`]) and loaded once
//! per runtime ([`SkillSet::load`]). The model sees them through the `skill` tool
//! (session-tools) and the system prompt; `session skills list`, the TUI's `/skills` and the
//! server's `GET /skill` show them with the problems of the files that were skipped.
//!
//! A project's skill files come from whoever wrote the repository: each is read only when it
//! resolves inside the project (a link to `~/.ssh` is refused, as for instruction files), only
//! when it is a regular file of at most [`MAX_SKILL_BYTES`], and never run; the walk stops at a
//! depth and an entry count, and the set at [`MAX_SKILLS`] skills. In a folder the user has not
//! trusted, a project skill cannot take the place of one of the user's own.

mod parse;
mod walk;

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;

pub use parse::{SLASH_METADATA, check_name};
pub use session_tools::{SKILL_FILE, Skill};

use super::error::{ConfigWarning, WarningReason};

/// The most bytes a skill file may have.
pub const MAX_SKILL_BYTES: u64 = 256 * 1024;

/// The most skills one runtime loads.
pub const MAX_SKILLS: usize = 500;

/// The most bytes of instructions one runtime keeps, all skills together.
pub const MAX_SKILLS_BYTES: usize = 8 * 1024 * 1024;

/// Whose a skills folder is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum SkillScope {
    /// The user's own (their config folders, `~/.claude/skills`, `~/.agents/skills`).
    User,
    /// The project's (from the working directory up to the project root).
    Project,
}

/// One folder skills are looked for in.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillFolder {
    /// The folder (such as `<project>/.opencode/skills`).
    pub path: PathBuf,
    /// Whose it is.
    pub scope: SkillScope,
    /// Where its files must resolve: the project, or the user's home folder.
    pub root: PathBuf,
    /// False for a project folder the user has not trusted.
    pub trusted: bool,
}

/// Where to look for skills.
#[derive(Debug, Clone, Copy)]
pub struct SkillSearch<'a> {
    /// The working directory.
    pub cwd: &'a Path,
    /// The outermost project folder (the git root, the home folder, or `cwd` itself).
    pub project_root: &'a Path,
    /// The user's home folder.
    pub home: Option<&'a Path>,
    /// The user's config folders whose `skill` and `skills` folders hold skills, lowest first
    /// (OpenCode's `~/.config/opencode`, then ours).
    pub user_dirs: &'a [PathBuf],
    /// Whether the user trusts the project folder.
    pub trusted: bool,
}

/// The folders skills are loaded from, lowest first (a later skill of the same name takes an
/// earlier one's place), in OpenCode 1.18.34's order: `~/.claude/skills` and `~/.agents/skills`;
/// the project's `.claude/skills` and `.agents/skills`; the user's config folders' `skill` and
/// `skills`; the project's `.opencode` and `.session` `skill` and `skills`. Project folders go
/// from the project root down to the working directory, so the nearest wins.
pub fn skill_folders(search: &SkillSearch<'_>) -> Vec<SkillFolder> {
    let canonical = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let home = search.home.map(canonical);
    let project_root = canonical(search.project_root);
    let user_root = |dir: &Path| match &home {
        Some(home) if canonical(dir).starts_with(home) => home.clone(),
        _ => canonical(dir),
    };
    let mut folders = Vec::new();
    let user = |path: PathBuf, folders: &mut Vec<SkillFolder>| {
        let root = user_root(&path);
        folders.push(SkillFolder { path, scope: SkillScope::User, root, trusted: true });
    };
    if let Some(home) = search.home {
        for compat in [".claude", ".agents"] {
            user(home.join(compat).join("skills"), &mut folders);
        }
    }
    let mut dirs: Vec<&Path> = Vec::new();
    for dir in search.cwd.ancestors() {
        dirs.push(dir);
        if canonical(dir) == project_root {
            break;
        }
    }
    dirs.reverse();
    let project = |subfolders: &[&str], folders: &mut Vec<SkillFolder>| {
        for dir in &dirs {
            for sub in subfolders {
                let path = dir.join(sub);
                // The home folder's own `.claude/skills` is the user's, listed above.
                if folders.iter().any(|f| f.path == path) {
                    continue;
                }
                folders.push(SkillFolder {
                    path,
                    scope: SkillScope::Project,
                    root: project_root.clone(),
                    trusted: search.trusted,
                });
            }
        }
    };
    project(&[".claude/skills", ".agents/skills"], &mut folders);
    for dir in search.user_dirs {
        for sub in ["skill", "skills"] {
            user(dir.join(sub), &mut folders);
        }
    }
    project(&[".opencode/skill", ".opencode/skills", ".session/skill", ".session/skills"], &mut folders);
    folders
}

/// A loaded skill and what else its file said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LoadedSkill {
    /// What the model sees and the tool returns.
    pub skill: Skill,
    /// Whose folder it came from.
    pub scope: SkillScope,
    /// `license`, as written.
    pub license: Option<String>,
    /// `allowed-tools`, as written: shown, never applied (it grants no permission).
    pub allowed_tools: Vec<String>,
    /// `metadata`, every value as text.
    pub metadata: BTreeMap<String, String>,
    /// True when `metadata` has `opencode/slash: true`: the skill is also a slash command.
    pub slash: bool,
}

impl LoadedSkill {
    /// The prompt the skill makes as a slash command: its instructions and its base directory,
    /// as OpenCode 1.18.34 makes a skill's command template.
    pub fn command_template(&self) -> String {
        format!(
            "{}\n\nBase directory for this skill: {}\nRelative paths in this skill (e.g., scripts/, references/) are relative to this base directory.",
            self.skill.content,
            self.skill.base_dir().display()
        )
    }
}

/// A file that was not loaded as a skill, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SkillProblem {
    /// The file or folder.
    pub path: PathBuf,
    /// What is wrong with it.
    pub message: String,
}

impl SkillProblem {
    /// A problem of `path`.
    pub fn new(path: &Path, message: impl Into<String>) -> Self {
        Self { path: path.to_path_buf(), message: message.into() }
    }
}

impl std::fmt::Display for SkillProblem {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path.display(), self.message)
    }
}

/// The skills of a runtime, by name, and the problems met loading them.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SkillSet {
    skills: Vec<LoadedSkill>,
    problems: Vec<SkillProblem>,
    tool: Arc<[Skill]>,
}

impl SkillSet {
    /// A set built in code (an embedder's own skills): `skills` by name (of two with one name,
    /// the later), and `problems` as given.
    pub fn new(skills: Vec<LoadedSkill>, problems: Vec<SkillProblem>) -> Self {
        let by_name: BTreeMap<String, LoadedSkill> =
            skills.into_iter().map(|loaded| (loaded.skill.name.clone(), loaded)).collect();
        let skills: Vec<LoadedSkill> = by_name.into_values().collect();
        let tool = skills.iter().map(|loaded| loaded.skill.clone()).collect();
        Self { skills, problems, tool }
    }

    /// Loads the skills of `folders` (lowest first). Nothing here fails: a file that cannot be
    /// a skill is a [`SkillProblem`] and is skipped.
    pub fn load(folders: &[SkillFolder]) -> Self {
        let mut problems = Vec::new();
        let mut loaded: BTreeMap<String, LoadedSkill> = BTreeMap::new();
        let mut seen = HashSet::new();
        let mut bytes = 0usize;
        'folders: for folder in folders {
            for candidate in walk::skill_files(&folder.path, &folder.root, &mut problems) {
                // The same file through two names (`skill` linked to `skills`) counts once.
                if !seen.insert(candidate.path.canonicalize().unwrap_or_else(|_| candidate.path.clone())) {
                    continue;
                }
                let text =
                    match super::read_regular_file_within(&candidate.path, &folder.root, MAX_SKILL_BYTES) {
                        Ok(text) => text,
                        Err(error) => {
                            problems.push(SkillProblem::new(&candidate.path, format!("not read: {error}")));
                            continue;
                        }
                    };
                let parsed = match parse::parse(&text, &candidate.path, candidate.kind) {
                    Ok(Some(parsed)) => parsed,
                    Ok(None) => continue,
                    Err(problem) => {
                        problems.push(SkillProblem::new(&candidate.path, problem));
                        continue;
                    }
                };
                if let Some(existing) = loaded.get(&parsed.name) {
                    if !folder.trusted && existing.scope == SkillScope::User {
                        problems.push(SkillProblem::new(
                            &candidate.path,
                            format!(
                                "not loaded: this folder is not trusted, and your own skill {:?} ({}) keeps the name",
                                parsed.name,
                                existing.skill.location.display()
                            ),
                        ));
                        continue;
                    }
                    problems.push(SkillProblem::new(
                        &existing.skill.location,
                        format!(
                            "not loaded: {} defines skill {:?} again and takes its place",
                            candidate.path.display(),
                            parsed.name
                        ),
                    ));
                } else if loaded.len() >= MAX_SKILLS {
                    problems.push(SkillProblem::new(
                        &folder.path,
                        format!("more than {MAX_SKILLS} skills: the rest are not loaded"),
                    ));
                    break 'folders;
                }
                bytes += parsed.body.len();
                if bytes > MAX_SKILLS_BYTES {
                    problems.push(SkillProblem::new(
                        &candidate.path,
                        format!("not loaded: the skills together hold more than {MAX_SKILLS_BYTES} bytes"),
                    ));
                    break 'folders;
                }
                let slash = parsed.is_slash();
                let skill = LoadedSkill {
                    skill: Skill {
                        name: parsed.name.clone(),
                        description: parsed.description,
                        location: candidate.path,
                        content: Arc::from(parsed.body),
                    },
                    scope: folder.scope,
                    license: parsed.license,
                    allowed_tools: parsed.allowed_tools,
                    metadata: parsed.metadata,
                    slash,
                };
                loaded.insert(parsed.name, skill);
            }
        }
        // The caller reports the problems (`session run` prints each once); the log only notes them.
        for problem in &problems {
            tracing::debug!(%problem, "skill not loaded");
        }
        Self::new(loaded.into_values().collect(), problems)
    }

    /// The skills, by name.
    pub fn skills(&self) -> &[LoadedSkill] {
        &self.skills
    }

    /// The files that were skipped, and why, in the order they were met.
    pub fn problems(&self) -> &[SkillProblem] {
        &self.problems
    }

    /// The skill called `name`.
    pub fn get(&self, name: &str) -> Option<&LoadedSkill> {
        self.skills
            .binary_search_by(|loaded| loaded.skill.name.as_str().cmp(name))
            .ok()
            .and_then(|i| self.skills.get(i))
    }

    /// The skills as the `skill` tool serves them, by name.
    pub fn tool_skills(&self) -> Arc<[Skill]> {
        self.tool.clone()
    }

    /// The skills that are slash commands, by name.
    pub fn commands(&self) -> impl Iterator<Item = &LoadedSkill> {
        self.skills.iter().filter(|loaded| loaded.slash)
    }

    /// Globs of the skills' folders (`<folder>/*`), which agents may read without an
    /// `external_directory` ask, as OpenCode's agents may.
    pub fn folder_globs(&self) -> Vec<String> {
        let mut globs: Vec<String> =
            self.skills.iter().map(|loaded| format!("{}/*", loaded.skill.base_dir().display())).collect();
        globs.sort();
        globs.dedup();
        globs
    }

    /// Each problem as a configuration warning (`session run` prints them once).
    pub fn warnings(&self) -> Vec<ConfigWarning> {
        self.problems
            .iter()
            .map(|problem| ConfigWarning {
                path: problem.path.clone(),
                key: problem.message.clone(),
                reason: WarningReason::Skill,
            })
            .collect()
    }

    /// The skills and the problems as `session skills list` and the TUI's `/skills` show them.
    pub fn report(&self) -> String {
        let mut text = String::new();
        if self.skills.is_empty() {
            text.push_str("No skills.\n");
        }
        for loaded in &self.skills {
            let scope = match loaded.scope {
                SkillScope::User => "yours",
                SkillScope::Project => "project",
            };
            let slash = if loaded.slash { format!(", /{}", loaded.skill.name) } else { String::new() };
            let _ = writeln!(text, "{} ({scope}{slash})", loaded.skill.name);
            let _ = writeln!(text, "  {}", loaded.skill.description);
            let _ = writeln!(text, "  {}", loaded.skill.location.display());
        }
        if !self.problems.is_empty() {
            let _ = writeln!(text, "Problems:");
            for problem in &self.problems {
                let _ = writeln!(text, "  {problem}");
            }
        }
        text
    }
}

#[cfg(test)]
mod tests;
