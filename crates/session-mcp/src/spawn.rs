//! The one function that builds a local server's process (a sandbox lays itself on it).

use std::collections::BTreeMap;
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Stdio;

use session_tools::{Sandbox, SandboxTarget};

use crate::error::McpError;
use crate::spec::LocalServer;

/// The sandbox a runtime confines the local servers that ask for it with, and the workspace
/// it is laid over.
#[derive(Debug, Clone)]
pub struct SandboxAt {
    /// The runtime's command sandbox (its mode, network and writable paths).
    pub sandbox: Sandbox,
    /// The workspace root, writable under `workspace-write`.
    pub workspace: PathBuf,
}

/// Variables holding a list of folders (or files) a program searches for code to run.
const SEARCH_PATH_LISTS: [&str; 10] = [
    "PATH",
    "PYTHONPATH",
    "NODE_PATH",
    "PERL5LIB",
    "PERLLIB",
    "RUBYLIB",
    "GEM_PATH",
    "CLASSPATH",
    "LD_LIBRARY_PATH",
    "DYLD_LIBRARY_PATH",
];

/// Variables naming one folder or file whose code a program loads or whose folder it starts
/// from (`LD_PRELOAD` is dropped whole when any of its libraries is the project's).
const SEARCH_PATH_SINGLES: [&str; 9] = [
    "VIRTUAL_ENV",
    "CONDA_PREFIX",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONUSERBASE",
    "GEM_HOME",
    "INIT_CWD",
    "OLDPWD",
    "LD_PRELOAD",
];

/// True when `path` (absolute) is `project` or inside it, as written or once resolved.
fn inside(path: &Path, project: &Path) -> bool {
    if !path.is_absolute() {
        return false;
    }
    let real_project = std::fs::canonicalize(project).unwrap_or_else(|_| project.to_path_buf());
    let real_path = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    [path, real_path.as_path()].iter().any(|p| p.starts_with(project) || p.starts_with(&real_project))
}

/// The changes to `inherited` (a process environment) that keep `project` out of a server's
/// search paths: each variable of [`SEARCH_PATH_LISTS`] without its entries inside the
/// project (removed when none is left), each of [`SEARCH_PATH_SINGLES`] that points inside it
/// removed. Variables the server's config sets (`set_by_config`) are the user's choice and
/// left alone. `None` removes the variable.
pub(crate) fn keep_project_out(
    inherited: impl IntoIterator<Item = (OsString, OsString)>,
    project: &Path,
    set_by_config: &BTreeMap<String, String>,
) -> Vec<(OsString, Option<OsString>)> {
    let mut changes = Vec::new();
    for (key, value) in inherited {
        let name = key.to_string_lossy();
        if set_by_config.contains_key(name.as_ref()) {
            continue;
        }
        if SEARCH_PATH_LISTS.contains(&name.as_ref()) {
            let entries: Vec<PathBuf> = std::env::split_paths(&value).collect();
            let kept: Vec<&PathBuf> = entries.iter().filter(|entry| !inside(entry, project)).collect();
            if kept.len() == entries.len() {
                continue;
            }
            let joined = if kept.is_empty() { None } else { std::env::join_paths(kept).ok() };
            changes.push((key, joined));
        } else if SEARCH_PATH_SINGLES.contains(&name.as_ref()) {
            let points_inside = value
                .to_string_lossy()
                .split([':', ' '])
                .any(|part| !part.is_empty() && inside(Path::new(part), project));
            if points_inside {
                changes.push((key, None));
            }
        }
    }
    changes
}

/// Creates the runtime's private working folder for servers (readable by the user alone).
fn private_folder(dir: &Path) -> std::io::Result<()> {
    let mut builder = std::fs::DirBuilder::new();
    builder.recursive(true);
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir)
}

/// The command that starts the local server `name`: its program and arguments, the inherited
/// environment plus `environment`, its working directory, stdin and stdout piped for MCP,
/// stderr piped (to the log, never to our stdout), and killed when dropped.
///
/// Without a `cwd` in its config a server starts in the runtime's private folder, with the
/// project's paths taken out of its inherited search paths (`keep_project_out`): a
/// repository is the model's to write, and `python3 -m pkg` or `npx pkg` started in it would
/// run the repository's `./pkg` or `node_modules` copy instead of the user's server.
///
/// Every local server is spawned through this function and nothing else. A server whose
/// config asks for the sandbox is confined here by `sandbox` (in the child, before exec); one
/// that asks for it when the runtime has none is refused rather than run unconfined.
pub fn local_command(
    name: &str,
    spec: &LocalServer,
    sandbox: Option<&SandboxAt>,
) -> Result<tokio::process::Command, McpError> {
    let (program, args) =
        spec.command.split_first().ok_or_else(|| McpError::EmptyCommand { name: name.to_owned() })?;
    if program.is_empty() {
        return Err(McpError::EmptyCommand { name: name.to_owned() });
    }
    let mut command = tokio::process::Command::new(program);
    if let Some(project) = &spec.keep_out {
        private_folder(&spec.cwd).map_err(|error| McpError::Spawn {
            name: name.to_owned(),
            reason: format!("its working folder {} could not be made: {error}", spec.cwd.display()),
        })?;
        for (key, value) in keep_project_out(std::env::vars_os(), project, &spec.environment) {
            match value {
                Some(value) => command.env(key, value),
                None => command.env_remove(key),
            };
        }
        // A shell or tool that trusts `$PWD` over the real folder finds the same one.
        command.env("PWD", &spec.cwd);
    }
    command
        .args(args)
        .envs(&spec.environment)
        .current_dir(&spec.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    if spec.sandboxed {
        let at = sandbox.ok_or_else(|| McpError::Spawn {
            name: name.to_owned(),
            reason: "its config asks for the sandbox, and this runtime has none".to_owned(),
        })?;
        let target = SandboxTarget { workspace: at.workspace.clone(), tmpdir: None };
        let confinement = at
            .sandbox
            .confine_tokio(&mut command, &target, false)
            .map_err(|error| McpError::Spawn { name: name.to_owned(), reason: error.to_string() })?;
        tracing::debug!(server = name, ?confinement, "MCP server sandbox");
    }
    Ok(command)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_command_is_refused() {
        let spec = LocalServer {
            command: Vec::new(),
            environment: Default::default(),
            cwd: ".".into(),
            keep_out: None,
            sandboxed: false,
        };
        assert_eq!(
            local_command("x", &spec, None).err(),
            Some(McpError::EmptyCommand { name: "x".to_owned() })
        );
    }

    #[test]
    fn the_command_carries_program_arguments_environment_and_folder() {
        let spec = LocalServer {
            command: vec!["node".to_owned(), "server.js".to_owned()],
            environment: [("TOKEN".to_owned(), "t".to_owned())].into(),
            cwd: "/tmp".into(),
            keep_out: None,
            sandboxed: false,
        };
        let command = local_command("x", &spec, None).unwrap_or_else(|error| panic!("{error}"));
        let std = command.as_std();
        assert_eq!(std.get_program(), "node");
        assert_eq!(std.get_args().collect::<Vec<_>>(), ["server.js"]);
        assert_eq!(std.get_current_dir(), Some(std::path::Path::new("/tmp")));
        assert!(std.get_envs().any(|(k, v)| k == "TOKEN" && v == Some(std::ffi::OsStr::new("t"))));
    }

    #[test]
    fn a_server_asking_for_the_sandbox_is_refused_without_one() {
        let spec = LocalServer {
            command: vec!["node".to_owned()],
            environment: Default::default(),
            cwd: "/tmp".into(),
            keep_out: None,
            sandboxed: true,
        };
        let error = local_command("x", &spec, None).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("asks for the sandbox"), "{error}");
    }

    #[test]
    fn the_project_is_taken_out_of_inherited_search_paths_only() {
        let project = Path::new("/home/u/project");
        let inherited = [
            ("PATH", "/home/u/project/node_modules/.bin:/usr/bin:/home/u/project/.venv/bin:/bin"),
            ("PYTHONPATH", "/home/u/project"),
            ("NODE_PATH", "/usr/lib/node_modules"),
            ("VIRTUAL_ENV", "/home/u/project/.venv"),
            ("LD_PRELOAD", "/usr/lib/a.so /home/u/project/evil.so"),
            ("GEM_HOME", "/home/u/.gem"),
            ("HOME", "/home/u/project"),
            ("RUBYLIB", "/home/u/project/lib"),
        ]
        .map(|(k, v)| (OsString::from(k), OsString::from(v)));
        let config: BTreeMap<String, String> = [("RUBYLIB".to_owned(), "x".to_owned())].into();
        let mut changes = keep_project_out(inherited, project, &config);
        changes.sort();
        assert_eq!(
            changes,
            [
                (OsString::from("LD_PRELOAD"), None),
                (OsString::from("PATH"), Some(OsString::from("/usr/bin:/bin"))),
                (OsString::from("PYTHONPATH"), None),
                (OsString::from("VIRTUAL_ENV"), None),
            ]
        );
    }

    #[test]
    fn a_server_without_a_cwd_starts_in_the_private_folder_with_pwd_set() {
        let dir = tempfile::tempdir().unwrap_or_else(|error| panic!("{error}"));
        let private = dir.path().join("data/mcp");
        let spec = LocalServer {
            command: vec!["node".to_owned()],
            environment: Default::default(),
            cwd: private.clone(),
            keep_out: Some(dir.path().join("project")),
            sandboxed: false,
        };
        let command = local_command("x", &spec, None).unwrap_or_else(|error| panic!("{error}"));
        assert!(private.is_dir());
        assert_eq!(command.as_std().get_current_dir(), Some(private.as_path()));
        assert!(command.as_std().get_envs().any(|(k, v)| k == "PWD" && v == Some(private.as_os_str())));
    }
}
