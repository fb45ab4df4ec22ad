//! The one function that builds a local server's process (a sandbox lays itself on it).

use std::process::Stdio;

use crate::error::McpError;
use crate::spec::LocalServer;

/// The command that starts the local server `name`: its program and arguments, the inherited
/// environment plus `environment`, its working directory, stdin and stdout piped for MCP,
/// stderr piped (to the log, never to our stdout), and killed when dropped.
///
/// Every local server is spawned through this function and nothing else, so confining local
/// servers (a sandbox) means changing this one place.
pub fn local_command(name: &str, spec: &LocalServer) -> Result<tokio::process::Command, McpError> {
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
    Ok(command)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_empty_command_is_refused() {
        let spec = LocalServer { command: Vec::new(), environment: Default::default(), cwd: ".".into() };
        assert_eq!(local_command("x", &spec).err(), Some(McpError::EmptyCommand { name: "x".to_owned() }));
    }

    #[test]
    fn the_command_carries_program_arguments_environment_and_folder() {
        let spec = LocalServer {
            command: vec!["node".to_owned(), "server.js".to_owned()],
            environment: [("TOKEN".to_owned(), "t".to_owned())].into(),
            cwd: "/tmp".into(),
        };
        let command = local_command("x", &spec).unwrap_or_else(|error| panic!("{error}"));
        let std = command.as_std();
        assert_eq!(std.get_program(), "node");
        assert_eq!(std.get_args().collect::<Vec<_>>(), ["server.js"]);
        assert_eq!(std.get_current_dir(), Some(std::path::Path::new("/tmp")));
        assert!(std.get_envs().any(|(k, v)| k == "TOKEN" && v == Some(std::ffi::OsStr::new("t"))));
    }
}
