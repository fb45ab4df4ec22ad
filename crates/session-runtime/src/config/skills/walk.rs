//! Walking one skills folder for its skill files, without trusting what a cloned repository put
//! there: links that lead out of the folder's root are not followed, nothing but folders and
//! regular files is opened, and the walk stops at a depth and an entry count.

use std::collections::HashSet;
use std::io;
use std::path::{Path, PathBuf};

use super::parse::FileKind;
use super::{SKILL_FILE, SkillProblem};

/// How deep below a skills folder a `SKILL.md` is looked for (`skills/<group>/<name>/SKILL.md`
/// is depth 2).
pub(crate) const MAX_DEPTH: usize = 6;

/// How many entries of one skills folder are looked at before the walk stops.
pub(crate) const MAX_ENTRIES: usize = 10_000;

/// A file that may be a skill, in the order found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Candidate {
    pub(crate) path: PathBuf,
    pub(crate) kind: FileKind,
}

/// The skill files of the folder `base`: its root's markdown files, then every `SKILL.md`
/// below it, each folder's entries by name. Every folder entered resolves inside `root` (a link
/// that leads out is a problem, not followed); a missing `base` is no folder and no problem.
pub(crate) fn skill_files(base: &Path, root: &Path, problems: &mut Vec<SkillProblem>) -> Vec<Candidate> {
    let mut found = Vec::new();
    let Ok(meta) = std::fs::symlink_metadata(base) else { return found };
    let Some(real) = inside(base, root, problems) else { return found };
    if !real.is_dir() {
        let what = if meta.file_type().is_symlink() { "a link to something else" } else { "not a folder" };
        problems.push(SkillProblem::new(base, format!("not read: {what}")));
        return found;
    }
    let mut visited = HashSet::from([real]);
    let mut entries = 0;
    let mut stack = vec![(base.to_path_buf(), 0usize)];
    while let Some((dir, depth)) = stack.pop() {
        let mut listed = match list(&dir) {
            Ok(listed) => listed,
            Err(error) => {
                problems.push(SkillProblem::new(&dir, format!("not read: {error}")));
                continue;
            }
        };
        entries += listed.len();
        if entries > MAX_ENTRIES {
            problems.push(SkillProblem::new(
                base,
                format!("more than {MAX_ENTRIES} entries: the skills beyond them are not loaded"),
            ));
            break;
        }
        listed.sort();
        let mut folders = Vec::new();
        for path in listed {
            let Some(name) = path.file_name().and_then(|name| name.to_str()) else { continue };
            let Ok(meta) = std::fs::symlink_metadata(&path) else { continue };
            if name == SKILL_FILE {
                found.push(Candidate { path, kind: FileKind::Folder });
            } else if depth == 0 && name.ends_with(".md") && !meta.is_dir() {
                found.push(Candidate { path, kind: FileKind::Loose });
            } else if name != ".git" && depth < MAX_DEPTH && is_folder(&path, &meta) {
                folders.push(path);
            }
        }
        // Last pushed, first walked: push in reverse to walk each folder's subfolders by name.
        for folder in folders.into_iter().rev() {
            let Some(real) = inside(&folder, root, problems) else { continue };
            // A link back to a folder already walked would loop.
            if visited.insert(real) {
                stack.push((folder, depth + 1));
            }
        }
    }
    // Each folder's entries by name, whatever the order of the walk: markdown at the root
    // first, then the SKILL.md files by path.
    found.sort_by(|a, b| (a.kind == FileKind::Folder, &a.path).cmp(&(b.kind == FileKind::Folder, &b.path)));
    found
}

/// The entries of `dir`, paths only.
fn list(dir: &Path) -> io::Result<Vec<PathBuf>> {
    std::fs::read_dir(dir)?.map(|entry| entry.map(|entry| entry.path())).collect()
}

/// True for a folder, or a link to one (where it leads is checked before it is entered).
fn is_folder(path: &Path, meta: &std::fs::Metadata) -> bool {
    meta.is_dir() || (meta.file_type().is_symlink() && path.is_dir())
}

/// The real path of `path` when it lies inside `root`; else `None`, and a problem when it
/// exists but leads out.
fn inside(path: &Path, root: &Path, problems: &mut Vec<SkillProblem>) -> Option<PathBuf> {
    let real = path.canonicalize().ok()?;
    if real.starts_with(root) {
        return Some(real);
    }
    problems.push(SkillProblem::new(
        path,
        format!("not read: it resolves to {}, outside {}", real.display(), root.display()),
    ));
    None
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn write(path: &Path, text: &str) {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    fn names(found: &[Candidate], base: &Path) -> Vec<String> {
        found.iter().map(|c| c.path.strip_prefix(base).unwrap().display().to_string()).collect()
    }

    #[test]
    fn skill_files_are_found_at_any_depth_and_loose_markdown_at_the_root() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let base = root.join("skills");
        write(&base.join("b/SKILL.md"), "x");
        write(&base.join("a/SKILL.md"), "x");
        write(&base.join("group/c/SKILL.md"), "x");
        write(&base.join("a/notes.md"), "not a skill: not at the root");
        write(&base.join("loose.md"), "x");
        write(&base.join(".git/SKILL.md"), "x");
        let mut problems = Vec::new();
        let found = skill_files(&base, &root, &mut problems);
        assert_eq!(names(&found, &base), ["loose.md", "a/SKILL.md", "b/SKILL.md", "group/c/SKILL.md"]);
        assert!(problems.is_empty(), "{problems:?}");
        assert!(skill_files(&root.join("missing"), &root, &mut problems).is_empty());
        assert!(problems.is_empty(), "a missing folder is no problem");
    }

    #[test]
    fn links_out_of_the_root_are_not_followed_and_loops_end() {
        let dir = tempfile::tempdir().unwrap();
        let outside = tempfile::tempdir().unwrap();
        write(&outside.path().join("evil/SKILL.md"), "x");
        let root = dir.path().canonicalize().unwrap();
        let base = root.join("skills");
        write(&base.join("ok/SKILL.md"), "x");
        std::os::unix::fs::symlink(outside.path().join("evil"), base.join("evil")).unwrap();
        std::os::unix::fs::symlink(&base, base.join("ok/again")).unwrap();
        std::os::unix::fs::symlink(base.join("ok"), base.join("alias")).unwrap();
        let mut problems = Vec::new();
        let found = skill_files(&base, &root, &mut problems);
        // `alias` leads to `ok`, which is walked once; the loop back to `skills` is not walked.
        assert_eq!(names(&found, &base).len(), 1, "{found:?}");
        assert_eq!(problems.len(), 1, "{problems:?}");
        assert!(problems[0].message.contains("outside"), "{problems:?}");
        // A skills folder that is itself a link out is not read at all.
        let linked = root.join("linked");
        std::os::unix::fs::symlink(outside.path(), &linked).unwrap();
        let mut problems = Vec::new();
        assert!(skill_files(&linked, &root, &mut problems).is_empty());
        assert!(problems[0].message.contains("outside"), "{problems:?}");
    }

    #[test]
    fn a_fifo_where_a_folder_should_be_is_a_problem_and_does_not_block() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path().canonicalize().unwrap();
        let fifo = root.join("skills");
        assert!(std::process::Command::new("mkfifo").arg(&fifo).status().unwrap().success());
        let mut problems = Vec::new();
        assert!(skill_files(&fifo, &root, &mut problems).is_empty());
        assert!(problems[0].message.contains("not a folder"), "{problems:?}");
    }
}
