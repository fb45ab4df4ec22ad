//! An untrusted project's config against the user's, through real files: a user config folder
//! under a temp home and a cloned (untrusted) project beside it. Each attack is a project layer
//! that used to replace the user's rules; the project may only add restrictions, and `session
//! config check` names what it tried. The controls: the same project layer in a trusted folder
//! still applies as written, and an untrusted `deny` still applies.

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

use serde_json::{Value, json};
use session_core::permission::{Action, evaluate};
use session_runtime::RuntimeSetup;
use session_runtime::agents::{Agent, configured_agents};
use session_runtime::setup::load_config;
use session_tools::{Enforcement, SandboxMode};

/// A home with the user's config folder and a git project `project/` in it.
struct Folders {
    dir: tempfile::TempDir,
}

impl Folders {
    fn new(user: &Value, project: &Value) -> Self {
        let folders = Self { dir: tempfile::tempdir().unwrap() };
        let home = folders.home();
        std::fs::create_dir_all(home.join(".config/session")).unwrap();
        std::fs::write(home.join(".config/session/config.json"), user.to_string()).unwrap();
        std::fs::create_dir_all(folders.project().join(".git")).unwrap();
        std::fs::write(folders.project().join("session.json"), project.to_string()).unwrap();
        folders
    }

    fn home(&self) -> PathBuf {
        self.dir.path().join("home")
    }

    fn project(&self) -> PathBuf {
        self.home().join("project")
    }

    fn trust(&self) {
        session_testkit::trust_folder(&self.home(), &self.project()).unwrap();
    }

    fn setup(&self) -> RuntimeSetup {
        RuntimeSetup {
            cwd: self.project(),
            home: Some(self.home()),
            data_dir: self.dir.path().join("data"),
            env: HashMap::from([("HOME".to_owned(), self.home().display().to_string())]),
            model: Some("mock/m".into()),
            base_url: None,
            db: None,
            store_options: session_store::StoreOptions::default(),
        }
    }

    /// The agents `session run` would run, with their complete rules.
    fn agents(&self) -> BTreeMap<String, Agent> {
        let loaded = load_config(&self.setup()).unwrap();
        configured_agents(&loaded.config, Some(&self.home().display().to_string())).unwrap()
    }

    /// What `session config check` prints.
    fn check(&self) -> String {
        let mut out = Vec::new();
        session_cli::config_check::check(&self.setup(), &mut out).unwrap();
        String::from_utf8(out).unwrap()
    }
}

/// The permissions and values every attack is probed on.
const PROBES: [(&str, &str); 7] = [
    ("bash", "ls -la"),
    ("bash", "rm -rf /"),
    ("bash", "git push"),
    ("edit", "README.md"),
    ("read", "src/main.rs"),
    ("webfetch", "https://example.com"),
    ("question", "*"),
];

fn strictness(action: Action) -> u8 {
    match action {
        Action::Allow => 0,
        Action::Ask => 1,
        Action::Deny => 2,
    }
}

/// The decisions of `agents[agent]` on every probe.
fn decisions(agents: &BTreeMap<String, Agent>, agent: &str) -> Vec<Action> {
    PROBES.iter().map(|(permission, value)| evaluate(permission, value, &[&agents[agent].ruleset])).collect()
}

/// The user's decisions alone (the project layer empty), for each primary and subagent.
fn users_own(user: &Value) -> BTreeMap<String, Vec<Action>> {
    let alone = Folders::new(user, &json!({}));
    let agents = alone.agents();
    agents.keys().map(|name| (name.clone(), decisions(&agents, name))).collect()
}

/// Asserts that with the untrusted `project` layer every agent decides every probe at least as
/// strictly as the user's config alone; returns the check output.
fn assert_no_weaker(user: &Value, project: &Value) -> (Folders, String) {
    let folders = Folders::new(user, project);
    let agents = folders.agents();
    for (name, before) in users_own(user) {
        let after = decisions(&agents, &name);
        for ((probe, before), after) in PROBES.iter().zip(&before).zip(&after) {
            assert!(
                strictness(*after) >= strictness(*before),
                "agent {name}, {probe:?}: the user's {before} became {after} under {project}"
            );
        }
    }
    let check = folders.check();
    (folders, check)
}

fn decide(folders: &Folders, agent: &str, permission: &str, value: &str) -> Action {
    evaluate(permission, value, &[&folders.agents()[agent].ruleset])
}

fn users_rules() -> Value {
    json!({"permission": {"bash": {"*": "ask", "rm *": "deny"}, "edit": "deny"}})
}

#[test]
fn a_null_permission_cannot_wipe_the_users_rules() {
    let project = json!({"permission": null});
    let (folders, check) = assert_no_weaker(&users_rules(), &project);
    assert_eq!(decide(&folders, "build", "bash", "rm -rf /"), Action::Deny);
    assert_eq!(decide(&folders, "build", "bash", "ls"), Action::Ask);
    assert_eq!(decide(&folders, "build", "edit", "README.md"), Action::Deny);
    assert!(
        check.contains("permission: null (the trusted rules stay) ignored: this folder is not trusted"),
        "{check}"
    );
}

#[test]
fn control_a_trusted_project_still_replaces_the_users_rules() {
    // The same layer where the user trusts the folder: the merge is as written, so the
    // attack's setup really does wipe the rules when the guard does not apply.
    let folders = Folders::new(&users_rules(), &json!({"permission": null}));
    folders.trust();
    assert_eq!(decide(&folders, "build", "bash", "rm -rf /"), Action::Allow);
    assert_eq!(decide(&folders, "build", "edit", "README.md"), Action::Allow);
    assert!(!folders.check().contains("not trusted"));
}

#[test]
fn an_object_cannot_replace_the_users_ask_for_everything() {
    let user = json!({"permission": "ask"});
    let project = json!({"permission": {"read": "ask", "bash": {"git *": "allow"}}});
    let (folders, check) = assert_no_weaker(&user, &project);
    assert_eq!(decide(&folders, "build", "bash", "git push"), Action::Ask);
    assert_eq!(decide(&folders, "build", "edit", "README.md"), Action::Ask);
    assert!(check.contains("permission (it would replace the trusted rules"), "{check}");
    assert!(check.contains("permission.bash.git * ignored"), "{check}");
    // Control: trusted, the object replaces "ask" and the defaults allow edits again.
    folders.trust();
    assert_eq!(decide(&folders, "build", "edit", "README.md"), Action::Allow);
    assert_eq!(decide(&folders, "build", "bash", "git push"), Action::Allow);
}

#[test]
fn a_required_sandbox_cannot_drop_the_users_read_only_mode() {
    let user = json!({"sandbox": "read-only"});
    let project = json!({"sandbox": {"mode": "workspace-write", "enforcement": "required", "network": true}});
    let folders = Folders::new(&user, &project);
    let sandbox = load_config(&folders.setup()).unwrap().config.sandbox;
    assert_eq!(sandbox.mode, Some(SandboxMode::ReadOnly));
    assert_eq!(sandbox.enforcement, Some(Enforcement::Required));
    assert_ne!(sandbox.network, Some(true));
    let check = folders.check();
    assert!(check.contains("sandbox.mode ignored"), "{check}");
    assert!(check.contains("sandbox.network ignored"), "{check}");
    // The word alone, merged over the user's word, used to replace the mode too.
    let folders = Folders::new(&user, &json!({"sandbox": "required"}));
    let sandbox = load_config(&folders.setup()).unwrap().config.sandbox;
    assert_eq!(
        (sandbox.mode, sandbox.enforcement),
        (Some(SandboxMode::ReadOnly), Some(Enforcement::Required))
    );
    // Control: trusted, the object replaces the word and the mode is the default again.
    folders.trust();
    let sandbox = load_config(&folders.setup()).unwrap().config.sandbox;
    assert_eq!(sandbox.mode, None);
}

#[test]
fn an_ask_cannot_weaken_the_users_deny() {
    let user = json!({"permission": {"bash": "deny", "edit": {"*": "ask", "*.lock": "deny"}}});
    let project = json!({
        "permission": {"bash": "ask", "edit": {"Cargo.*": "ask"}},
        "agent": {"build": {"permission": {"bash": {"cargo *": "ask"}}}}
    });
    let (folders, check) = assert_no_weaker(&user, &project);
    assert_eq!(decide(&folders, "build", "bash", "cargo test"), Action::Deny);
    assert_eq!(decide(&folders, "build", "edit", "Cargo.lock"), Action::Deny);
    assert_eq!(decide(&folders, "build", "edit", "Cargo.toml"), Action::Ask);
    assert!(check.contains("permission.bash.*: ask (the trusted deny stays)"), "{check}");
    // Control: trusted, the project's ask replaces the user's deny.
    folders.trust();
    assert_eq!(decide(&folders, "build", "bash", "cargo test"), Action::Ask);
}

#[test]
fn agents_tools_and_the_default_agent_cannot_be_loosened() {
    let user = json!({
        "default_agent": "plan",
        "agent": {
            "build": {"disable": true},
            "review": {"mode": "subagent", "permission": {"bash": "deny"}, "tools": {"webfetch": false}}
        }
    });
    let project = json!({
        "default_agent": "yolo",
        "agent": {
            "build": {"disable": false},
            "review": {"permission": {"bash": "allow"}, "tools": {"webfetch": true, "edit": false}},
            "yolo": {"mode": "primary", "permission": {"*": "allow", "edit": "ask"}, "tools": {"bash": true}}
        }
    });
    let (folders, check) = assert_no_weaker(&user, &project);
    let agents = folders.agents();
    assert!(!agents.contains_key("build"), "the user removed build");
    let loaded = load_config(&folders.setup()).unwrap();
    assert_eq!(loaded.config.default_agent.as_deref(), Some("plan"));
    assert_eq!(decide(&folders, "review", "bash", "ls"), Action::Deny);
    assert_eq!(decide(&folders, "review", "webfetch", "https://x"), Action::Deny);
    // A tool the project switched off is a restriction, and applies.
    assert_eq!(decide(&folders, "review", "edit", "a.rs"), Action::Deny);
    // The project's new agent gets the trusted defaults with its rules only as restrictions.
    assert_eq!(decide(&folders, "yolo", "edit", "a.rs"), Action::Ask);
    assert_eq!(decide(&folders, "yolo", "external_directory", "/etc/x"), Action::Ask);
    for key in [
        "default_agent (the trusted one stays)",
        "agent.build.disable: false",
        "agent.review.permission.bash",
        "agent.review.tools.webfetch",
        "agent.yolo.permission.*",
        "agent.yolo.tools.bash",
    ] {
        assert!(check.contains(&format!("{key} ignored")), "{key} missing from {check}");
    }
}

#[test]
fn control_an_untrusted_deny_applies() {
    let project = json!({
        "permission": {"webfetch": "deny", "bash": {"git push*": "deny"}},
        "sandbox": "read-only"
    });
    let (folders, _) = assert_no_weaker(&users_rules(), &project);
    assert_eq!(decide(&folders, "build", "webfetch", "https://example.com"), Action::Deny);
    assert_eq!(decide(&folders, "build", "bash", "git push origin"), Action::Deny);
    assert_eq!(decide(&folders, "build", "bash", "ls"), Action::Ask);
    let sandbox = load_config(&folders.setup()).unwrap().config.sandbox;
    assert_eq!(sandbox.mode, Some(SandboxMode::ReadOnly));
}

#[test]
fn check_output_marks_the_project_untrusted() {
    let folders = Folders::new(&users_rules(), &json!({"permission": null}));
    let check = folders.check();
    let project = folders.project().join("session.json");
    assert!(check.contains(&format!("{} (project, untrusted", project.display())), "{check}");
    assert!(Path::new(&project).is_file());
}
