//! Instruction files, markdown agents and commands that are symlinks out of the project (a
//! committed `AGENTS.md` linking to `~/.ssh/id_rsa`): never read, so the secret never reaches
//! the system prompt or an agent's prompt. The controls: the same files as regular files in the
//! project are read.

use std::collections::HashMap;
use std::os::unix::fs::symlink;
use std::path::{Path, PathBuf};

use session_runtime::RuntimeSetup;
use session_runtime::agents::configured_agents;
use session_runtime::config::load_layers;
use session_runtime::setup::{InstructionSources, instruction_files, instructions_text, load_config};

/// The text of the secret outside the project.
const SECRET: &str = "-----BEGIN OPENSSH PRIVATE KEY----- SECRET-KEY-MATERIAL";

/// A home with an `.ssh/id_rsa` secret, the user's config folder, and a git project.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        let home = Self { dir: tempfile::tempdir().unwrap() };
        write(&home.path(".ssh/id_rsa"), SECRET);
        write(&home.path(".ssh/agent/leak.md"), SECRET);
        write(&home.path(".ssh/command/leak.md"), SECRET);
        std::fs::create_dir_all(home.project().join(".git")).unwrap();
        std::fs::create_dir_all(home.path(".config/session")).unwrap();
        home
    }

    fn path(&self, relative: &str) -> PathBuf {
        self.dir.path().join(relative)
    }

    fn project(&self) -> PathBuf {
        self.path("project")
    }

    fn secret(&self) -> PathBuf {
        self.path(".ssh/id_rsa")
    }

    fn setup(&self) -> RuntimeSetup {
        RuntimeSetup {
            cwd: self.project(),
            home: Some(self.dir.path().to_path_buf()),
            data_dir: self.path("data"),
            env: HashMap::new(),
            model: Some("mock/m".into()),
            base_url: None,
            db: None,
            store_options: session_store::StoreOptions::default(),
        }
    }

    /// The instruction block of the system prompt, as `assemble` builds it.
    fn instructions(&self, entries: &[String]) -> String {
        let user = self.path(".config/session");
        let home = self.dir.path();
        let project = self.project();
        let sources = InstructionSources {
            cwd: &project,
            root: &project,
            user_dir: Some(&user),
            home: Some(home),
            instructions: entries,
        };
        let files = instruction_files(&sources);
        instructions_text(&files, &sources).unwrap().unwrap_or_default()
    }

    /// Every agent's prompt and every command's template, and the warnings of the load.
    fn prompts(&self) -> (String, String) {
        let loaded = load_config(&self.setup()).unwrap();
        let agents = configured_agents(&loaded.config, None).unwrap();
        let mut text: Vec<String> = agents.values().map(|agent| agent.prompt.clone()).collect();
        text.extend(loaded.config.command.values().map(|command| command.template.clone()));
        let warnings = loaded.warnings.iter().map(ToString::to_string).collect::<Vec<_>>().join("\n");
        (text.join("\n"), warnings)
    }
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn link(target: &Path, at: &Path) {
    std::fs::create_dir_all(at.parent().unwrap()).unwrap();
    symlink(target, at).unwrap();
}

#[test]
fn an_agents_md_linking_out_of_the_project_is_not_read() {
    let home = Home::new();
    link(&home.secret(), &home.project().join("AGENTS.md"));
    let text = home.instructions(&[]);
    assert!(!text.contains("SECRET-KEY-MATERIAL"), "{text}");
    // The link is there and readable: only the guard keeps it out.
    assert!(std::fs::read_to_string(home.project().join("AGENTS.md")).unwrap().contains("SECRET"));
}

#[test]
fn an_instructions_glob_through_a_linked_folder_is_not_read() {
    let home = Home::new();
    link(&home.path(".ssh"), &home.project().join("docs"));
    let entries = ["docs/*".to_owned(), "docs/id_rsa".to_owned()];
    let text = home.instructions(&entries);
    assert!(!text.contains("SECRET-KEY-MATERIAL"), "{text}");
    // The entries do name the linked files: only the read refuses them.
    let project = home.project();
    let sources = InstructionSources {
        cwd: &project,
        root: &project,
        user_dir: None,
        home: None,
        instructions: &entries,
    };
    assert!(instruction_files(&sources).iter().any(|file| file.ends_with("docs/id_rsa")));
}

#[test]
fn control_regular_instruction_files_in_the_project_are_read() {
    let home = Home::new();
    write(&home.project().join("AGENTS.md"), "PROJECT-RULES");
    write(&home.project().join("docs/style.md"), "STYLE-RULES");
    let text = home.instructions(&["docs/*.md".to_owned()]);
    assert!(text.contains("PROJECT-RULES") && text.contains("STYLE-RULES"), "{text}");
}

#[test]
fn markdown_agents_and_commands_linking_out_are_not_read() {
    let home = Home::new();
    link(&home.secret(), &home.project().join(".opencode/agent/evil.md"));
    link(&home.secret(), &home.project().join(".session/commands/evil.md"));
    let (text, warnings) = home.prompts();
    assert!(!text.contains("SECRET-KEY-MATERIAL"), "{text}");
    assert!(warnings.contains("evil.md: not read: it resolves to"), "{warnings}");
    assert!(
        std::fs::read_to_string(home.project().join(".opencode/agent/evil.md")).unwrap().contains("SECRET")
    );
}

#[test]
fn a_linked_opencode_folder_is_not_read() {
    let home = Home::new();
    link(&home.path(".ssh"), &home.project().join(".opencode"));
    let (text, warnings) = home.prompts();
    assert!(!text.contains("SECRET-KEY-MATERIAL"), "{text}");
    assert!(warnings.contains("leak.md: not read"), "{warnings}");
    // The files were found through the link: only the read refused them.
    let (sources, resolver) = session_runtime::setup::config_sources(&home.setup());
    let layers = load_layers(&sources, &resolver).unwrap();
    assert!(layers.iter().any(|layer| layer.path.ends_with(".opencode/agent/leak.md")));
}

#[test]
fn control_regular_markdown_agents_and_commands_are_read() {
    let home = Home::new();
    write(&home.project().join(".opencode/agent/review.md"), "---\nmode: subagent\n---\nREVIEW-PROMPT");
    write(&home.project().join(".session/commands/ship.md"), "SHIP-TEMPLATE");
    write(&home.path(".config/session/agents/mine.md"), "MY-AGENT");
    let (text, warnings) = home.prompts();
    assert!(text.contains("REVIEW-PROMPT") && text.contains("SHIP-TEMPLATE"), "{text}");
    assert!(text.contains("MY-AGENT"), "{text}");
    assert!(!warnings.contains("not read"), "{warnings}");
}
