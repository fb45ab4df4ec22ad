//! The note appended to a confined command's output when it shows signs of a sandbox denial,
//! so the model knows the refusal came from the sandbox, not from file modes, and can adapt.
//!
//! The output is a child's: untrusted text. It is only searched for the usual messages of
//! `EACCES`, `EPERM`, `EROFS` and `EXDEV`; the paths quoted in those lines are repeated (at
//! most [`MAX_NAMED`], each cut to [`MAX_NAME_CHARS`]) and nothing else of it.

use super::{Confined, SandboxMode};

/// Messages that a sandbox denial produces.
const SIGNS: [&str; 4] =
    ["Permission denied", "Operation not permitted", "Read-only file system", "Invalid cross-device link"];
/// Words of a line that make an `EPERM` a refused socket.
const SOCKET_WORDS: [&str; 6] = ["socket", "connect", "/dev/tcp", "/dev/udp", "network", "Network"];
/// How many denied paths the note names.
const MAX_NAMED: usize = 5;
/// How long a named path may be.
const MAX_NAME_CHARS: usize = 200;

/// The note for `output` of a command confined as `confined`, or `None` when the output has no
/// sign of a denial.
pub fn denial_note(output: &str, confined: &Confined) -> Option<String> {
    let mut paths: Vec<String> = Vec::new();
    let mut socket = false;
    let mut any = false;
    // A traceback names the socket call on another line than the error.
    let mentions_sockets = SOCKET_WORDS.iter().any(|word| output.contains(word));
    for line in output.lines() {
        let Some(sign) = SIGNS.iter().find(|sign| line.contains(*sign)) else { continue };
        any = true;
        let path = named_path(line, sign);
        // Bash's network redirections name a socket, not a file.
        let socket_path =
            path.as_deref().is_some_and(|p| p.starts_with("/dev/tcp/") || p.starts_with("/dev/udp/"));
        if !confined.network
            && *sign == "Operation not permitted"
            && mentions_sockets
            && (path.is_none() || socket_path)
        {
            socket = true;
            continue;
        }
        if let Some(path) = path
            && paths.len() < MAX_NAMED
            && !paths.contains(&path)
        {
            paths.push(path);
        }
    }
    if !any {
        return None;
    }
    let mut note = format!("\n\n(Sandbox: this command ran in the {} sandbox", confined.mode);
    match confined.mode {
        SandboxMode::WorkspaceWrite => {
            let folders: Vec<String> = confined.writable.iter().map(|p| p.display().to_string()).collect();
            note.push_str(&format!("; it may write only in {}", folders.join(", ")));
            if let Some(git) = &confined.git_read_only {
                note.push_str(&format!(" (but {} is read-only)", git.display()));
            }
        }
        SandboxMode::ReadOnly | SandboxMode::Off => note.push_str("; it may not write any file"),
    }
    if !confined.network {
        note.push_str("; network sockets are off (Unix sockets allowed)");
    }
    note.push('.');
    let mut denied: Vec<String> = paths.iter().map(|p| format!("write to {p}")).collect();
    if socket {
        denied.push("a network socket".to_owned());
    }
    if !denied.is_empty() {
        note.push_str(&format!(" Refused: {}.", denied.join(", ")));
    }
    note.push_str(
        " Work inside the writable folders; the user can let a command run outside the sandbox with sandbox.exclude.)",
    );
    Some(note)
}

/// The path a denial line names: the last quoted text before or after the sign
/// (`touch: cannot touch '/x': ...`, `PermissionError: [Errno 13] Permission denied: '/x'`),
/// else the field before it (`bash: /x: Permission denied`).
fn named_path(line: &str, sign: &str) -> Option<String> {
    let (before, after) = line.split_once(sign)?;
    let quoted = |text: &str, last: bool| {
        for quote in ['\'', '"', '‘', '“'] {
            let close = match quote {
                '‘' => '’',
                '“' => '”',
                other => other,
            };
            let found = if last { text.rfind(close) } else { text.find(quote) };
            let Some(index) = found else { continue };
            let inner = if last {
                let head = &text[..index];
                head.rfind(quote).map(|start| &head[start + quote.len_utf8()..])
            } else {
                let tail = &text[index + quote.len_utf8()..];
                tail.find(close).map(|end| &tail[..end])
            };
            if let Some(inner) = inner.filter(|s| s.contains('/')) {
                return Some(inner.to_owned());
            }
        }
        None
    };
    let found = quoted(after, false).or_else(|| quoted(before, true)).or_else(|| {
        let field = before.trim_end().trim_end_matches(':').rsplit(": ").next()?.trim();
        field.contains('/').then(|| field.to_owned())
    })?;
    Some(found.chars().take(MAX_NAME_CHARS).collect())
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;

    fn confined() -> Confined {
        Confined {
            mode: SandboxMode::WorkspaceWrite,
            writable: vec![PathBuf::from("/ws"), PathBuf::from("/tmp")],
            network: false,
            git_read_only: Some(PathBuf::from("/ws/.git")),
        }
    }

    #[test]
    fn names_the_paths_of_the_usual_messages() {
        for (line, path) in [
            ("bash: line 1: /out/f: Permission denied", "/out/f"),
            ("touch: cannot touch '/out/f': Permission denied", "/out/f"),
            ("PermissionError: [Errno 13] Permission denied: '/out/f'", "/out/f"),
            ("find: cannot delete ‘/out/x’: Permission denied", "/out/x"),
            ("bash: /ws/.git/hooks/pre-commit: Read-only file system", "/ws/.git/hooks/pre-commit"),
        ] {
            let note = denial_note(line, &confined()).unwrap_or_default();
            assert!(note.contains(&format!("Refused: write to {path}.")), "{line}: {note}");
        }
    }

    #[test]
    fn names_a_refused_socket_and_says_nothing_without_signs() {
        let note = denial_note("bash: socket: Operation not permitted", &confined()).unwrap_or_default();
        assert!(note.contains("Refused: a network socket."), "{note}");
        let traceback =
            "    sock = socket(af, socktype, proto)\nPermissionError: [Errno 1] Operation not permitted";
        let note = denial_note(traceback, &confined()).unwrap_or_default();
        assert!(note.contains("Refused: a network socket."), "{note}");
        assert!(note.contains("it may write only in /ws, /tmp (but /ws/.git is read-only)"), "{note}");
        assert_eq!(denial_note("all good\n", &confined()), None);
    }
}
