//! Markdown agents and commands: `agents/NAME.md` and `commands/NAME.md` (or the singular
//! folder names) in the user's config folder and in a project's `.opencode` and `.session`
//! folders. The YAML front matter holds the fields, the body is the prompt (agents) or the
//! template (commands); each file becomes a config layer `{"agent": {NAME: ...}}` or
//! `{"command": {NAME: ...}}`, checked like any other.

use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

use super::error::{ConfigError, ConfigWarning, WarningReason};
use super::layer::ConfigLayer;

/// The most bytes a markdown agent or command may have.
const MAX_MARKDOWN_BYTES: u64 = 1024 * 1024;

/// The project folders that hold markdown agents and commands, in layering order (ours last,
/// so it wins).
pub(crate) const PROJECT_FOLDERS: [&str; 2] = [".opencode", ".session"];

/// Which key a folder's files configure.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// `agent.<name>`; the body is `prompt`.
    Agent,
    /// `command.<name>`; the body is `template`.
    Command,
}

impl Kind {
    fn folders(self) -> [&'static str; 2] {
        match self {
            Self::Agent => ["agent", "agents"],
            Self::Command => ["command", "commands"],
        }
    }

    fn key(self) -> &'static str {
        match self {
            Self::Agent => "agent",
            Self::Command => "command",
        }
    }

    fn body_key(self) -> &'static str {
        match self {
            Self::Agent => "prompt",
            Self::Command => "template",
        }
    }
}

/// The markdown files below `base` (a config folder such as `~/.config/session` or a
/// project's `.session`), agents first, each folder's files by name.
pub(crate) fn markdown_files(base: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for kind in [Kind::Agent, Kind::Command] {
        for folder in kind.folders() {
            let Ok(entries) = std::fs::read_dir(base.join(folder)) else { continue };
            let mut found: Vec<PathBuf> = entries
                .filter_map(Result::ok)
                .map(|entry| entry.path())
                .filter(|path| path.extension().is_some_and(|ext| ext == "md") && path.is_file())
                .collect();
            found.sort();
            files.extend(found);
        }
    }
    files
}

/// The layer of one markdown file (its folder says agent or command). The file is read only
/// when it resolves inside `root` (the project, or the user's config folder); one that leads
/// out through a symlink is an empty layer with a warning, never read.
pub(crate) fn markdown_layer(path: &Path, root: &Path) -> Result<Option<ConfigLayer>, ConfigError> {
    let kind = match path.parent().and_then(Path::file_name).and_then(|name| name.to_str()) {
        Some("agent" | "agents") => Kind::Agent,
        Some("command" | "commands") => Kind::Command,
        _ => return Ok(None),
    };
    let Some(name) = path.file_stem().and_then(|stem| stem.to_str()).filter(|name| !name.is_empty()) else {
        return Ok(None);
    };
    let text = match super::substitute::read_regular_file_within(path, root, MAX_MARKDOWN_BYTES) {
        Ok(text) => text,
        // A file that vanished since the folder was listed defines nothing.
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(error) if error.kind() == std::io::ErrorKind::PermissionDenied => {
            let warning = ConfigWarning {
                path: path.to_path_buf(),
                key: error.to_string(),
                reason: WarningReason::Outside,
            };
            let empty = Value::Object(Map::new());
            return Ok(Some(ConfigLayer {
                path: path.to_path_buf(),
                value: empty,
                warnings: vec![warning],
                untrusted: false,
            }));
        }
        Err(source) => return Err(ConfigError::Read { path: path.to_path_buf(), source }),
    };
    let (fields, body) = split_front_matter(&text, path)?;
    let mut fields = fields;
    fields.insert(kind.body_key().to_owned(), Value::String(body.trim().to_owned()));
    let mut named = Map::new();
    named.insert(name.to_owned(), Value::Object(fields));
    let mut root = Map::new();
    root.insert(kind.key().to_owned(), Value::Object(named));
    ConfigLayer::from_value(path, Value::Object(root)).map(Some)
}

/// The front matter's fields and the body; a file without front matter is all body.
pub(crate) fn split_front_matter<'a>(
    text: &'a str,
    path: &Path,
) -> Result<(Map<String, Value>, &'a str), ConfigError> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text);
    let Some(rest) =
        text.strip_prefix("---").filter(|rest| rest.starts_with('\n') || rest.starts_with("\r\n"))
    else {
        return Ok((Map::new(), text));
    };
    // The front matter ends at the first line that is exactly `---`.
    let mut offset = 0;
    let mut end = None;
    for line in rest.split_inclusive('\n') {
        if line.trim_end_matches(['\r', '\n']) == "---" && offset > 0 {
            end = Some((offset, offset + line.len()));
            break;
        }
        offset += line.len();
    }
    let Some((yaml_end, body_start)) = end else {
        return Err(ConfigError::Parse {
            path: path.to_path_buf(),
            line: 1,
            column: 1,
            message: "the front matter opened by `---` is never closed".to_owned(),
        });
    };
    let yaml = &rest[..yaml_end];
    let fields = match serde_yaml_ng::from_str::<Value>(yaml) {
        Ok(Value::Object(fields)) => fields,
        Ok(Value::Null) => Map::new(),
        Ok(other) => {
            return Err(ConfigError::WrongType {
                path: path.to_path_buf(),
                key: String::new(),
                expected: "front matter of key: value fields".to_owned(),
                found: describe(&other).to_owned(),
            });
        }
        Err(error) => {
            let location = error.location();
            return Err(ConfigError::Parse {
                path: path.to_path_buf(),
                // Line 1 is the opening `---`.
                line: location.as_ref().map_or(1, |l| l.line() + 1),
                column: location.as_ref().map_or(1, serde_yaml_ng::Location::column),
                message: format!("front matter: {error}"),
            });
        }
    };
    Ok((fields, &rest[body_start..]))
}

fn describe(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn write(dir: &Path, relative: &str, text: &str) -> PathBuf {
        let path = dir.join(relative);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn an_agent_file_is_a_layer_with_its_body_as_the_prompt() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(
            dir.path(),
            "agents/review.md",
            "---\ndescription: Reviews code\nmode: subagent\nmodel: mock/m\ntools:\n  bash: false\n---\n\nYou review.\n",
        );
        let layer = markdown_layer(&path, dir.path()).unwrap().unwrap();
        assert_eq!(
            layer.value,
            json!({"agent": {"review": {
                "description": "Reviews code", "mode": "subagent", "model": "mock/m",
                "tools": {"bash": false}, "prompt": "You review."
            }}})
        );
        assert!(layer.warnings.is_empty(), "{:?}", layer.warnings);
    }

    #[test]
    fn a_command_file_without_front_matter_is_all_template() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "command/test.md", "Run the tests for $ARGUMENTS.\n");
        let layer = markdown_layer(&path, dir.path()).unwrap().unwrap();
        assert_eq!(layer.value, json!({"command": {"test": {"template": "Run the tests for $ARGUMENTS."}}}));
    }

    #[test]
    fn bad_front_matter_names_the_file_and_line() {
        let dir = tempfile::tempdir().unwrap();
        let path = write(dir.path(), "agents/x.md", "---\nmode: [primary\n---\nbody\n");
        let error = markdown_layer(&path, dir.path()).unwrap_err().to_string();
        assert!(error.starts_with(&format!("{}: front matter:", path.display())), "{error}");
        let path = write(dir.path(), "agents/y.md", "---\nmode: primary\nbody\n");
        assert!(markdown_layer(&path, dir.path()).unwrap_err().to_string().contains("never closed"));
        let path = write(dir.path(), "agents/z.md", "---\n- a\n---\nbody\n");
        assert!(markdown_layer(&path, dir.path()).unwrap_err().to_string().contains("found a list"));
        let path = write(dir.path(), "agents/w.md", "---\nsteps: many\n---\nbody\n");
        assert!(markdown_layer(&path, dir.path()).unwrap_err().to_string().contains("agent.w.steps"));
    }

    #[test]
    fn files_are_listed_by_folder_and_name() {
        let dir = tempfile::tempdir().unwrap();
        write(dir.path(), "commands/b.md", "b");
        write(dir.path(), "agent/z.md", "z");
        write(dir.path(), "agents/a.md", "a");
        write(dir.path(), "agents/notes.txt", "not markdown");
        let names: Vec<String> = markdown_files(dir.path())
            .iter()
            .map(|p| p.strip_prefix(dir.path()).unwrap().display().to_string())
            .collect();
        assert_eq!(names, ["agent/z.md", "agents/a.md", "commands/b.md"]);
    }
}
