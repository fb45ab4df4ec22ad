//! The one function that builds a local server's process (a sandbox lays itself on it).

use std::path::PathBuf;
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

/// The command that starts the local server `name`: its program and arguments, the inherited
/// environment plus `environment`, its working directory, stdin and stdout piped for MCP,
/// stderr piped (to the log, never to our stdout), and killed when dropped.
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
            sandboxed: true,
        };
        let error = local_command("x", &spec, None).err().map(|e| e.to_string()).unwrap_or_default();
        assert!(error.contains("asks for the sandbox"), "{error}");
    }
}
