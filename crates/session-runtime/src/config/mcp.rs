//! The `mcp` key in OpenCode's shape: `mcp.<name>` is a local server (`type: "local"`,
//! `command` as an array, `environment`, `cwd`) or a remote one (`type: "remote"`, `url`,
//! `headers`), each with `enabled` and `timeout` (ms). Secrets come in through `{env:}`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use indexmap::IndexMap;
use serde::{Deserialize, Serialize};
use session_mcp::{DEFAULT_TIMEOUT, LocalServer, RemoteServer, ServerSpec, Transport};

use super::error::ConfigError;

/// How a server is reached (`type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum McpKind {
    /// A child process on stdio.
    Local,
    /// A server over HTTP.
    Remote,
}

/// One `mcp.<name>` entry as written; [`mcp_servers`] checks that its kind has what it needs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(default)]
pub struct McpServerConfig {
    /// `local` or `remote`; may be left out only to set `enabled` on an entry of another layer.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<McpKind>,
    /// A local server's program and arguments.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub command: Option<Vec<String>>,
    /// Variables added to a local server's environment.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub environment: IndexMap<String, String>,
    /// A local server's working directory, relative to the project root.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cwd: Option<String>,
    /// A remote server's endpoint.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// Headers sent to a remote server.
    #[serde(skip_serializing_if = "IndexMap::is_empty")]
    pub headers: IndexMap<String, String>,
    /// `false` lists the server without starting it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enabled: Option<bool>,
    /// How long start-up may take, in milliseconds (default 5000).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub timeout: Option<u64>,
    /// Ours: `true` runs a local server under the command sandbox (`sandbox`), as the bash
    /// tool's commands run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sandbox: Option<bool>,
}

fn wrong(name: &str, key: &str, expected: &str, found: &str) -> ConfigError {
    ConfigError::WrongType {
        path: PathBuf::from("config"),
        key: format!("mcp.{name}.{key}"),
        expected: expected.to_owned(),
        found: found.to_owned(),
    }
}

/// Where local MCP servers start.
#[derive(Debug, Clone, Copy)]
pub struct ServerFolders<'a> {
    /// The project root: a relative `cwd` is resolved against it.
    pub project: &'a Path,
    /// The runtime's private folder (under the data folder) a server without a `cwd` starts in.
    pub private: &'a Path,
    /// True when the user trusts the project: only then may a `cwd` lie inside it.
    pub project_trusted: bool,
}

/// The servers of the `mcp` key, in written order. A local server starts in the folder its
/// `cwd` names (relative to the project root), else in `folders.private`; a `cwd` inside an
/// untrusted project is not honoured (the private folder is used, with a warning), and
/// unless the server starts inside the trusted project, the project's paths are kept out of
/// its search paths ([`LocalServer::keep_out`]). The project's files are the model's to write:
/// started there, `python3 -m x` or `npx x` would run the project's `x`.
pub fn mcp_servers(
    mcp: &IndexMap<String, McpServerConfig>,
    folders: ServerFolders<'_>,
) -> Result<Vec<ServerSpec>, ConfigError> {
    mcp.iter()
        .map(|(name, entry)| {
            let enabled = entry.enabled != Some(false);
            let timeout = match entry.timeout {
                Some(0) => return Err(wrong(name, "timeout", "a positive number of milliseconds", "0")),
                Some(ms) => Duration::from_millis(ms),
                None => DEFAULT_TIMEOUT,
            };
            let transport = match entry.kind {
                Some(McpKind::Local) => {
                    let command = entry.command.clone().unwrap_or_default();
                    if command.first().is_none_or(String::is_empty) {
                        return Err(wrong(name, "command", "a non-empty array of strings", "none"));
                    }
                    let (cwd, keep_out) = server_folder(name, entry.cwd.as_deref(), folders);
                    Transport::Local(LocalServer {
                        command,
                        environment: entry.environment.clone().into_iter().collect(),
                        cwd,
                        keep_out,
                        sandboxed: entry.sandbox == Some(true),
                    })
                }
                Some(McpKind::Remote) => {
                    let url = entry.url.clone().unwrap_or_default();
                    if !(url.starts_with("http://") || url.starts_with("https://")) {
                        return Err(wrong(name, "url", "an http:// or https:// URL", &format!("{url:?}")));
                    }
                    Transport::Remote(RemoteServer {
                        url,
                        headers: entry.headers.clone().into_iter().collect(),
                    })
                }
                None => return Err(wrong(name, "type", "\"local\" or \"remote\"", "none")),
            };
            Ok(ServerSpec { name: name.clone(), transport, enabled, timeout })
        })
        .collect()
}

/// The folder the local server `name` starts in, and the project it is kept out of (none when
/// it starts inside the trusted project, as its config asked).
fn server_folder(name: &str, cwd: Option<&str>, folders: ServerFolders<'_>) -> (PathBuf, Option<PathBuf>) {
    let project = folders.project;
    let private = (folders.private.to_path_buf(), Some(project.to_path_buf()));
    let Some(cwd) = cwd else { return private };
    let named = project.join(cwd);
    let real = |path: &Path| path.canonicalize().unwrap_or_else(|_| path.to_path_buf());
    let in_project = named.starts_with(project) || real(&named).starts_with(real(project));
    match (in_project, folders.project_trusted) {
        (true, true) => (named, None),
        (true, false) => {
            tracing::warn!(
                server = name,
                cwd = %named.display(),
                "mcp.{name}.cwd lies in a project you have not trusted; the server starts in the runtime's own folder"
            );
            private
        }
        (false, _) => (named, Some(project.to_path_buf())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pretty_assertions::assert_eq;

    fn parse(value: serde_json::Value) -> IndexMap<String, McpServerConfig> {
        serde_json::from_value(value).unwrap_or_else(|error| panic!("{error}"))
    }

    #[test]
    fn local_and_remote_servers_in_opencode_shape() {
        let mcp = parse(serde_json::json!({
            "fs": {"type": "local", "command": ["npx", "server"], "environment": {"A": "1"}, "cwd": "tools", "timeout": 900},
            "docs": {"type": "remote", "url": "https://example.invalid/mcp", "headers": {"Authorization": "Bearer t"}, "enabled": false},
        }));
        let folders =
            ServerFolders { project: Path::new("/p"), private: Path::new("/d/mcp"), project_trusted: true };
        let specs = mcp_servers(&mcp, folders).unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(specs[0].name, "fs");
        assert_eq!(specs[0].timeout, Duration::from_millis(900));
        assert_eq!(
            specs[0].transport,
            Transport::Local(LocalServer {
                command: vec!["npx".to_owned(), "server".to_owned()],
                environment: [("A".to_owned(), "1".to_owned())].into(),
                cwd: PathBuf::from("/p/tools"),
                keep_out: None,
                sandboxed: false,
            })
        );
        assert!(!specs[1].enabled);
        assert_eq!(specs[1].timeout, DEFAULT_TIMEOUT);
        assert!(
            matches!(&specs[1].transport, Transport::Remote(remote) if remote.headers["Authorization"] == "Bearer t")
        );
    }

    #[test]
    fn the_mcp_key_is_checked_unknown_keys_warn_and_wrong_types_fail() {
        use std::path::Path;
        let check = |mut value: serde_json::Value| {
            super::super::check::check_layer(&mut value, Path::new("session.json"))
        };
        let warnings = check(serde_json::json!({"mcp": {"a": {"type": "local", "command": ["x"], "comand": ["y"], "oauth": {}}}}))
            .unwrap_or_else(|error| panic!("{error}"));
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings[0].to_string().contains("mcp.a.comand"), "{}", warnings[0]);
        // OAuth is accepted and has no effect: it says so.
        assert!(warnings[1].to_string().contains("mcp.a.oauth is not supported"), "{}", warnings[1]);
        let error =
            check(serde_json::json!({"mcp": {"a": {"type": "local", "command": "x y"}}})).unwrap_err();
        assert!(error.to_string().contains("mcp.a.command"), "{error}");
    }

    #[test]
    fn a_server_missing_what_its_kind_needs_is_an_error() {
        let folders =
            ServerFolders { project: Path::new("/p"), private: Path::new("/d"), project_trusted: true };
        let error = |value| mcp_servers(&parse(value), folders).unwrap_err().to_string();
        assert!(error(serde_json::json!({"a": {"type": "local"}})).contains("mcp.a.command"));
        assert!(error(serde_json::json!({"a": {"type": "remote", "url": "ftp://x"}})).contains("mcp.a.url"));
        assert!(error(serde_json::json!({"a": {"enabled": true}})).contains("mcp.a.type"));
    }

    #[test]
    fn a_server_starts_in_the_project_only_when_its_config_says_so_and_the_project_is_trusted() {
        let mcp = parse(serde_json::json!({
            "none": {"type": "local", "command": ["x"]},
            "here": {"type": "local", "command": ["x"], "cwd": "."},
            "sub": {"type": "local", "command": ["x"], "cwd": "tools"},
            "away": {"type": "local", "command": ["x"], "cwd": "/opt/server"},
        }));
        let folders = |project_trusted| ServerFolders {
            project: Path::new("/p"),
            private: Path::new("/d/mcp"),
            project_trusted,
        };
        let places = |trusted| {
            mcp_servers(&mcp, folders(trusted))
                .unwrap_or_else(|error| panic!("{error}"))
                .into_iter()
                .map(|spec| match spec.transport {
                    Transport::Local(local) => (local.cwd, local.keep_out),
                    Transport::Remote(_) => panic!("a remote server"),
                })
                .collect::<Vec<_>>()
        };
        let kept_out = Some(PathBuf::from("/p"));
        assert_eq!(
            places(true),
            [
                (PathBuf::from("/d/mcp"), kept_out.clone()),
                (PathBuf::from("/p/."), None),
                (PathBuf::from("/p/tools"), None),
                (PathBuf::from("/opt/server"), kept_out.clone()),
            ]
        );
        assert_eq!(
            places(false),
            [
                (PathBuf::from("/d/mcp"), kept_out.clone()),
                (PathBuf::from("/d/mcp"), kept_out.clone()),
                (PathBuf::from("/d/mcp"), kept_out.clone()),
                (PathBuf::from("/opt/server"), kept_out),
            ]
        );
    }
}
