//! Loading skills from real folders, the attacks of a hostile repository among them.

use pretty_assertions::assert_eq;

use super::*;

struct Places {
    _dir: tempfile::TempDir,
    home: PathBuf,
    project: PathBuf,
}

fn places() -> Places {
    let dir = tempfile::tempdir().unwrap();
    let root = dir.path().canonicalize().unwrap();
    let home = root.join("home");
    let project = root.join("work/project");
    std::fs::create_dir_all(home.join(".config/session")).unwrap();
    std::fs::create_dir_all(project.join(".git")).unwrap();
    Places { _dir: dir, home, project }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn skill_md(name: &str, description: &str) -> String {
    format!("---\nname: {name}\ndescription: {description}\n---\n\nInstructions of {name}.\n")
}

fn load(places: &Places, cwd: &Path, trusted: bool) -> SkillSet {
    let user_dirs = [places.home.join(".config/opencode"), places.home.join(".config/session")];
    let search = SkillSearch {
        cwd,
        project_root: &places.project,
        home: Some(&places.home),
        user_dirs: &user_dirs,
        trusted,
    };
    SkillSet::load(&skill_folders(&search))
}

fn names(set: &SkillSet) -> Vec<&str> {
    set.skills().iter().map(|s| s.skill.name.as_str()).collect()
}

#[test]
fn folders_come_in_opencodes_order_nearest_project_folder_last() {
    let places = places();
    let cwd = places.project.join("src");
    std::fs::create_dir_all(&cwd).unwrap();
    let user_dirs = [places.home.join(".config/opencode"), places.home.join(".config/session")];
    let search = SkillSearch {
        cwd: &cwd,
        project_root: &places.project,
        home: Some(&places.home),
        user_dirs: &user_dirs,
        trusted: true,
    };
    let folders: Vec<String> = skill_folders(&search)
        .iter()
        .map(|f| {
            let scope = format!("{:?}", f.scope);
            let path = f.path.strip_prefix(places.home.parent().unwrap()).unwrap().display().to_string();
            format!("{scope} {path}")
        })
        .collect();
    assert_eq!(
        folders,
        [
            "User home/.claude/skills",
            "User home/.agents/skills",
            "Project work/project/.claude/skills",
            "Project work/project/.agents/skills",
            "Project work/project/src/.claude/skills",
            "Project work/project/src/.agents/skills",
            "User home/.config/opencode/skill",
            "User home/.config/opencode/skills",
            "User home/.config/session/skill",
            "User home/.config/session/skills",
            "Project work/project/.opencode/skill",
            "Project work/project/.opencode/skills",
            "Project work/project/.session/skill",
            "Project work/project/.session/skills",
            "Project work/project/src/.opencode/skill",
            "Project work/project/src/.opencode/skills",
            "Project work/project/src/.session/skill",
            "Project work/project/src/.session/skills",
        ]
    );
}

#[test]
fn every_folder_kind_loads_and_a_later_skill_of_a_name_wins() {
    let places = places();
    write(&places.home.join(".claude/skills/shared/SKILL.md"), &skill_md("shared", "The user's"));
    write(&places.home.join(".agents/skills/agents/SKILL.md"), &skill_md("agents", "From .agents"));
    write(&places.home.join(".config/session/skills/mine/SKILL.md"), &skill_md("mine", "Ours"));
    write(&places.project.join(".claude/skills/claude/SKILL.md"), &skill_md("claude", "From .claude"));
    write(&places.project.join(".opencode/skills/shared/SKILL.md"), &skill_md("shared", "The project's"));
    write(&places.project.join(".session/skill/loose.md"), "---\ndescription: A loose one\n---\nBody\n");
    write(&places.project.join(".session/skill/README.md"), "# About these skills\n");
    let set = load(&places, &places.project, true);
    assert_eq!(names(&set), ["agents", "claude", "loose", "mine", "shared"]);
    let shared = set.get("shared").unwrap();
    assert_eq!(shared.skill.description, "The project's");
    assert_eq!(shared.scope, SkillScope::Project);
    assert_eq!(&*shared.skill.content, "\nInstructions of shared.\n");
    // The duplicate is reported once, on the file that lost.
    assert_eq!(set.problems().len(), 1, "{:?}", set.problems());
    assert!(set.problems()[0].path.starts_with(&places.home));
    assert!(set.problems()[0].message.contains("takes its place"));
    assert_eq!(set.tool_skills().len(), 5);
}

#[test]
fn an_untrusted_project_cannot_take_the_place_of_the_users_skill() {
    let places = places();
    write(&places.home.join(".config/session/skills/deploy/SKILL.md"), &skill_md("deploy", "Deploys safely"));
    write(&places.project.join(".opencode/skills/deploy/SKILL.md"), &skill_md("deploy", "Deploys elsewhere"));
    write(&places.project.join(".opencode/skills/lint/SKILL.md"), &skill_md("lint", "Lints"));
    let set = load(&places, &places.project, false);
    assert_eq!(names(&set), ["deploy", "lint"]);
    assert_eq!(set.get("deploy").unwrap().skill.description, "Deploys safely");
    assert!(set.problems()[0].message.contains("not trusted"), "{:?}", set.problems());
    // Control: trusted, the project's takes its place.
    let set = load(&places, &places.project, true);
    assert_eq!(set.get("deploy").unwrap().skill.description, "Deploys elsewhere");
}

#[test]
fn a_skill_file_linked_to_the_users_keys_is_not_read() {
    let places = places();
    write(&places.home.join(".ssh/id_rsa"), "---\nname: keys\ndescription: SECRET KEY\n---\nSECRET\n");
    let folder = places.project.join(".claude/skills/keys");
    std::fs::create_dir_all(&folder).unwrap();
    std::os::unix::fs::symlink(places.home.join(".ssh/id_rsa"), folder.join(SKILL_FILE)).unwrap();
    // And a whole skill folder linked to ~/.ssh.
    std::os::unix::fs::symlink(places.home.join(".ssh"), places.project.join(".claude/skills/ssh")).unwrap();
    let set = load(&places, &places.project, true);
    assert!(set.skills().is_empty(), "{:?}", set.skills());
    assert_eq!(set.problems().len(), 2, "{:?}", set.problems());
    for problem in set.problems() {
        assert!(problem.message.contains("outside"), "{problem}");
        assert!(!problem.message.contains("SECRET"), "{problem}");
    }
    // Control: the same file inside the project loads.
    std::fs::remove_file(folder.join(SKILL_FILE)).unwrap();
    write(&folder.join(SKILL_FILE), &skill_md("keys", "Inside"));
    assert_eq!(names(&load(&places, &places.project, true)), ["keys"]);
}

#[test]
fn a_huge_skill_file_is_refused_unread() {
    let places = places();
    let path = places.project.join(".opencode/skills/huge/SKILL.md");
    write(&path, &skill_md("huge", "Fifty megabytes"));
    // 50 MB, sparse: the size alone refuses it.
    std::fs::OpenOptions::new().write(true).open(&path).unwrap().set_len(50 * 1024 * 1024).unwrap();
    let started = std::time::Instant::now();
    let set = load(&places, &places.project, true);
    assert!(started.elapsed() < std::time::Duration::from_secs(2));
    assert!(set.skills().is_empty());
    assert!(set.problems()[0].message.contains("larger than"), "{:?}", set.problems());
}

#[test]
fn names_with_path_separators_or_capitals_are_refused() {
    let places = places();
    for (folder, name) in [("a", "../../etc/passwd"), ("b", "a/b"), ("c", "Bad_Name"), ("d", "\"x\" onload")]
    {
        write(
            &places.project.join(format!(".opencode/skills/{folder}/SKILL.md")),
            &format!("---\nname: '{}'\ndescription: d\n---\nBody\n", name.replace('\'', "''")),
        );
    }
    let set = load(&places, &places.project, true);
    assert!(set.skills().is_empty(), "{:?}", set.skills());
    assert_eq!(set.problems().len(), 4, "{:?}", set.problems());
}

#[test]
fn fifos_where_skill_folders_or_files_should_be_do_not_block() {
    let places = places();
    let mkfifo = |path: &Path| {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        assert!(std::process::Command::new("mkfifo").arg(path).status().unwrap().success());
    };
    mkfifo(&places.project.join(".claude/skills"));
    mkfifo(&places.project.join(".opencode/skills/pipe"));
    mkfifo(&places.project.join(".opencode/skills/file/SKILL.md"));
    write(&places.project.join(".opencode/skills/ok/SKILL.md"), &skill_md("ok", "Fine"));
    let set = load(&places, &places.project, true);
    assert_eq!(names(&set), ["ok"]);
    let messages: Vec<String> = set.problems().iter().map(ToString::to_string).collect();
    assert_eq!(messages.len(), 2, "{messages:?}");
    assert!(messages.iter().any(|m| m.contains("not a folder")), "{messages:?}");
    assert!(messages.iter().any(|m| m.contains("not a regular file")), "{messages:?}");
}

#[test]
fn invalid_skills_are_reported_and_skipped_never_fatal() {
    let places = places();
    write(&places.project.join(".opencode/skills/a/SKILL.md"), "---\nname: a\n---\nNo description\n");
    write(&places.project.join(".opencode/skills/b/SKILL.md"), "---\nname: [b\n---\nBad YAML\n");
    write(&places.project.join(".opencode/skills/c/SKILL.md"), "No front matter at all\n");
    write(&places.project.join(".opencode/skills/d/SKILL.md"), &skill_md("d", "Good"));
    let set = load(&places, &places.project, true);
    assert_eq!(names(&set), ["d"]);
    assert_eq!(set.problems().len(), 3, "{:?}", set.problems());
    assert_eq!(set.warnings().len(), 3);
    let warning = set.warnings()[0].to_string();
    assert!(warning.contains("/.opencode/skills/a/SKILL.md: skill: "), "{warning}");
    assert!(set.report().contains("Problems:"));
}

#[test]
fn a_skill_marked_for_it_is_a_slash_command() {
    let places = places();
    write(
        &places.project.join(".opencode/skills/release/SKILL.md"),
        "---\nname: release\ndescription: Releases\nmetadata:\n  opencode/slash: true\n---\nCut a release.\n",
    );
    write(&places.project.join(".opencode/skills/plain/SKILL.md"), &skill_md("plain", "Not a command"));
    let set = load(&places, &places.project, true);
    let commands: Vec<&str> = set.commands().map(|s| s.skill.name.as_str()).collect();
    assert_eq!(commands, ["release"]);
    let template = set.get("release").unwrap().command_template();
    let base = places.project.join(".opencode/skills/release");
    assert_eq!(
        template,
        format!(
            "Cut a release.\n\n\nBase directory for this skill: {}\nRelative paths in this skill (e.g., scripts/, references/) are relative to this base directory.",
            base.display()
        )
    );
    assert_eq!(
        set.folder_globs(),
        [
            format!("{}/*", places.project.join(".opencode/skills/plain").display()),
            format!("{}/*", base.display())
        ]
    );
}
