//! Local MCP servers do not run the project's code: a cloned repository
//! holding `./mcp_evil/__main__.py`, or a `node_modules` copy of a package, is not what
//! `python3 -m mcp_evil` or `npx --no-install <pkg>` from the user's own config starts.
//! Every server here goes through the real path: the user's config file, `mcp_manager`, the
//! manager's start. Each attack writes a marker file when it runs; the controls start the
//! same server in the (trusted) project, as the config may ask, and the marker appears.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use session_runtime::RuntimeSetup;
use session_runtime::config::{TRUST_FILE, TrustList};
use session_runtime::mcp::mcp_manager;

/// A user (home, config folder, data folder) and a cloned project whose code writes
/// `marker` when run, as a Python module `mcp_evil` and as the npm package `mcp-evil-pkg`
/// installed in its `node_modules`.
struct Clone {
    _root: tempfile::TempDir,
    project: PathBuf,
    config: PathBuf,
    setup: RuntimeSetup,
    marker: PathBuf,
}

fn write(path: &Path, text: &str) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
}

fn clone() -> Clone {
    let root = tempfile::tempdir().unwrap();
    let base = root.path().canonicalize().unwrap();
    let (project, home, xdg, data) =
        (base.join("project"), base.join("home"), base.join("xdg"), base.join("data"));
    let marker = base.join("marker");
    for dir in [&project, &home, &xdg, &data] {
        std::fs::create_dir_all(dir).unwrap();
    }
    let write_marker = format!("open({:?}, 'a').write('python ran\\n')\n", marker.display().to_string());
    write(&project.join("mcp_evil/__init__.py"), "");
    write(&project.join("mcp_evil/__main__.py"), &write_marker);
    let js = format!(
        "#!/usr/bin/env node\nrequire('fs').appendFileSync({:?}, 'node ran\\n');\n",
        marker.display().to_string()
    );
    let package = project.join("node_modules/mcp-evil-pkg");
    write(
        &package.join("package.json"),
        r#"{"name": "mcp-evil-pkg", "version": "1.0.0", "bin": {"mcp-evil-pkg": "index.js"}}"#,
    );
    write(&package.join("index.js"), &js);
    write(
        &project.join("package.json"),
        r#"{"name": "cloned", "version": "1.0.0", "dependencies": {"mcp-evil-pkg": "1.0.0"}}"#,
    );
    std::fs::create_dir_all(project.join("node_modules/.bin")).unwrap();
    {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(package.join("index.js"), std::fs::Permissions::from_mode(0o755)).unwrap();
        std::os::unix::fs::symlink(
            "../mcp-evil-pkg/index.js",
            project.join("node_modules/.bin/mcp-evil-pkg"),
        )
        .unwrap();
    }
    let env: HashMap<String, String> = [("XDG_CONFIG_HOME".to_owned(), xdg.display().to_string())].into();
    let setup = RuntimeSetup {
        cwd: project.clone(),
        home: Some(home),
        data_dir: data,
        env,
        model: None,
        base_url: None,
        db: None,
        store_options: Default::default(),
    };
    Clone { _root: root, project, config: xdg.join("session"), setup, marker }
}

impl Clone {
    /// Writes the user's config with the one local server `command` (and `cwd` when given).
    fn user_config(&self, command: &[&str], cwd: Option<&str>) {
        let mut server = serde_json::json!({
            "type": "local",
            "command": command,
            "timeout": 20_000,
            // npm must not reach the network, nor write the real user's cache.
            "environment": {"npm_config_offline": "true", "npm_config_cache": self.config.join("npm-cache").display().to_string()},
        });
        if let Some(cwd) = cwd {
            server["cwd"] = serde_json::json!(cwd);
        }
        write(&self.config.join("config.json"), &serde_json::json!({"mcp": {"evil": server}}).to_string());
    }

    fn trust_project(&self) {
        let mut trust = TrustList::default();
        trust.trust(&self.project);
        trust.save(&self.config).unwrap();
        assert!(self.config.join(TRUST_FILE).exists());
    }

    /// Starts the configured server as a runtime does; true when the project's code ran.
    async fn project_code_ran(&self) -> bool {
        let manager = mcp_manager(&self.setup).unwrap();
        tokio::time::timeout(Duration::from_secs(60), manager.start_all()).await.unwrap();
        let status = manager.status();
        manager.shutdown().await;
        // None of these is a real MCP server: the start fails either way.
        assert!(status[0].error.is_some(), "{status:?}");
        self.marker.exists()
    }
}

#[tokio::test]
async fn python_m_from_the_user_config_does_not_run_the_projects_module() {
    let clone = clone();
    clone.user_config(&["python3", "-m", "mcp_evil"], None);
    assert!(!clone.project_code_ran().await, "the project's mcp_evil ran");
}

#[tokio::test]
async fn control_python_m_started_in_the_trusted_project_runs_its_module() {
    let clone = clone();
    clone.user_config(&["python3", "-m", "mcp_evil"], Some("."));
    clone.trust_project();
    assert!(clone.project_code_ran().await, "the module did not run: the attack's setup is wrong");
}

#[tokio::test]
async fn a_cwd_in_an_untrusted_project_is_not_honoured() {
    let clone = clone();
    clone.user_config(&["python3", "-m", "mcp_evil"], Some("."));
    assert!(!clone.project_code_ran().await, "the untrusted project's mcp_evil ran");
}

#[tokio::test]
async fn npx_from_the_user_config_does_not_run_the_projects_node_modules() {
    let clone = clone();
    clone.user_config(&["npx", "--no-install", "mcp-evil-pkg"], None);
    assert!(!clone.project_code_ran().await, "the project's node_modules copy ran");
}

#[tokio::test]
async fn control_npx_started_in_the_trusted_project_runs_its_node_modules() {
    let clone = clone();
    clone.user_config(&["npx", "--no-install", "mcp-evil-pkg"], Some("."));
    clone.trust_project();
    assert!(clone.project_code_ran().await, "npx did not run the local package: the attack's setup is wrong");
}
