//! The slash commands and the keys, as `/help` lists them.

/// A built-in slash command.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Builtin {
    /// `/new`: a new session.
    New,
    /// `/sessions`: pick a session of this folder.
    Sessions,
    /// `/undo`: revert the last turn's changes.
    Undo,
    /// `/redo`: put reverted changes back.
    Redo,
    /// `/compact`: summarize the conversation now.
    Compact,
    /// `/model`: pick the model.
    Model,
    /// `/agent`: pick the agent.
    Agent,
    /// `/export`: write the session as JSON.
    Export,
    /// `/skills`: the skills the model can load, and the files skipped.
    Skills,
    /// `/help`: the commands and keys.
    Help,
    /// `/exit`: quit.
    Exit,
}

/// Every built-in: its name, what it does.
pub const BUILTINS: &[(&str, Builtin, &str)] = &[
    ("new", Builtin::New, "start a new session"),
    ("sessions", Builtin::Sessions, "switch to another session of this folder"),
    ("undo", Builtin::Undo, "revert the last prompt and the file changes after it"),
    ("redo", Builtin::Redo, "restore what /undo reverted"),
    ("compact", Builtin::Compact, "summarize the conversation to free the context"),
    ("model", Builtin::Model, "pick the model for the next prompts"),
    ("agent", Builtin::Agent, "pick the agent for the next prompts"),
    ("export", Builtin::Export, "write the session as JSON to session-<id>.json here"),
    ("skills", Builtin::Skills, "list the skills the model can load, and the files skipped"),
    ("help", Builtin::Help, "show the commands and keys"),
    ("exit", Builtin::Exit, "quit (also /quit)"),
];

/// The keys, for `/help`.
pub const KEYS: &[(&str, &str)] = &[
    ("Enter", "send the prompt (while the agent works, it joins the run)"),
    ("Alt-Enter, Ctrl-J", "new line in the prompt"),
    ("Up / Down", "prompt history (on the first / last line)"),
    ("Tab", "complete an @path"),
    ("Esc", "interrupt the run; close a list"),
    ("Ctrl-C", "clear the prompt; twice on an empty one: quit"),
    ("PgUp / PgDn, wheel", "scroll the transcript; Ctrl-End follows again"),
    ("Ctrl-O", "expand every tool call and the reasoning"),
    ("Ctrl-T, click", "expand the latest tool call (click: the one clicked)"),
    ("o / a / r / f", "permission: once, always, reject, reject with feedback"),
];

/// What a line starting with `/` asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Slash {
    /// A built-in.
    Builtin(Builtin),
    /// A configured command with its arguments.
    Configured {
        /// The command's name.
        name: String,
        /// The rest of the line.
        arguments: String,
    },
    /// Nothing by that name.
    Unknown(String),
}

/// Parses `/name arguments` against the built-ins and the configured command names.
pub fn parse(line: &str, configured: &[(String, String)]) -> Slash {
    let line = line.trim_start_matches('/');
    let (name, arguments) = line.split_once(char::is_whitespace).unwrap_or((line, ""));
    if name == "quit" {
        return Slash::Builtin(Builtin::Exit);
    }
    // A configured command of the same name wins, as in OpenCode.
    if configured.iter().any(|(n, _)| n == name) {
        return Slash::Configured { name: name.to_owned(), arguments: arguments.trim().to_owned() };
    }
    match BUILTINS.iter().find(|(n, _, _)| *n == name) {
        Some((_, builtin, _)) => Slash::Builtin(*builtin),
        None => Slash::Unknown(name.to_owned()),
    }
}

/// The help text: commands (built-in and configured) and keys.
pub fn help(configured: &[(String, String)]) -> String {
    let mut text = String::from("Commands:\n");
    for (name, _, what) in BUILTINS {
        text.push_str(&format!("  /{name:<10} {what}\n"));
    }
    for (name, what) in configured {
        text.push_str(&format!("  /{name:<10} {what}\n"));
    }
    text.push_str("  !command    run a shell command; its output goes with the next prompt\n");
    text.push_str("  @path       attach a workspace file to the prompt\nKeys:\n");
    for (key, what) in KEYS {
        text.push_str(&format!("  {key:<20} {what}\n"));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builtins_configured_and_unknown_commands_parse() {
        let configured = vec![("review".to_owned(), "review the diff".to_owned())];
        assert_eq!(parse("/undo", &configured), Slash::Builtin(Builtin::Undo));
        assert_eq!(parse("/quit", &configured), Slash::Builtin(Builtin::Exit));
        assert_eq!(
            parse("/review  src/lib.rs ", &configured),
            Slash::Configured { name: "review".into(), arguments: "src/lib.rs".into() }
        );
        assert_eq!(parse("/nope", &configured), Slash::Unknown("nope".into()));
        let help = help(&configured);
        assert!(help.contains("/review") && help.contains("/compact") && help.contains("Ctrl-C"));
    }
}
