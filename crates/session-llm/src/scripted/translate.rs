//! Agent-neutral ops to the tools a request offers, as mockllm's `translate()` does: OpenCode's
//! tools (`read{filePath}`, `list{path}`, `glob{pattern}`, `grep{pattern}`,
//! `bash{command,description}`, `write{filePath,content}`) get native calls, agents with only a
//! shell tool get a shell command doing the same thing.

use std::path::{Component, Path, PathBuf};

use serde_json::{Map, Value, json};

use super::script::{OpKind, ScriptCall, ScriptOp};

/// Shell tools in mockllm's order of preference after the named ones.
const SHELL_TOOLS: [&str; 6] =
    ["exec_command", "shell_command", "shell", "bash", "run_shell", "execute_command"];

/// The tool name and input for one scripted call, given the tools the request offers.
pub(crate) fn translate(call: &ScriptCall, tools: &[String], workdir: Option<&Path>) -> (String, Value) {
    let op = match call {
        ScriptCall::Raw { name, arguments } => {
            return (name.clone(), subst(&Value::Object(arguments.clone()), workdir));
        }
        ScriptCall::Op(op) => substituted(op, workdir),
    };
    let offered = |name: &str| tools.iter().any(|tool| tool == name);
    let path_or_dot = || op.path.clone().unwrap_or_else(|| ".".to_owned());
    // OpenCode-like tool sets.
    if offered("read") && offered("bash") {
        let native = match op.op {
            OpKind::Read => {
                let mut input = Map::new();
                input.insert("filePath".into(), json!(absolute(&path_or_dot(), workdir)));
                for (key, value) in [("offset", &op.offset), ("limit", &op.limit)] {
                    if let Some(value) = value {
                        input.insert(key.into(), value.clone());
                    }
                }
                Some(("read", Value::Object(input)))
            }
            OpKind::List if offered("list") => {
                Some(("list", json!({"path": absolute(&path_or_dot(), workdir)})))
            }
            OpKind::List => Some((
                "bash",
                json!({"command": format!("ls -la {}", quote(&path_or_dot())), "description": "List directory"}),
            )),
            OpKind::Glob | OpKind::Grep if offered(op.op.as_str()) => {
                let mut input = Map::new();
                input.insert("pattern".into(), json!(op.pattern.clone().unwrap_or_default()));
                if let Some(path) = &op.path {
                    input.insert("path".into(), json!(absolute(path, workdir)));
                }
                if op.op == OpKind::Grep
                    && let Some(include) = &op.include
                {
                    input.insert("include".into(), json!(include));
                }
                Some((op.op.as_str(), Value::Object(input)))
            }
            OpKind::Write if offered("write") => Some((
                "write",
                json!({
                    "filePath": absolute(&path_or_dot(), workdir),
                    "content": op.content.clone().unwrap_or_default(),
                }),
            )),
            _ => None,
        };
        if let Some((name, input)) = native {
            return (name.to_owned(), input);
        }
        let description = op.description.clone().unwrap_or_else(|| format!("Run {}", op.op.as_str()));
        return ("bash".to_owned(), json!({"command": to_shell(&op), "description": description}));
    }
    if offered(op.op.as_str()) && op.op != OpKind::Bash {
        // A tool named like the op takes the op's own fields.
        return (op.op.as_str().to_owned(), op_fields(&op));
    }
    let command = to_shell(&op);
    if offered("exec_command") {
        return ("exec_command".to_owned(), json!({"cmd": command}));
    }
    if offered("shell_command") {
        return ("shell_command".to_owned(), json!({"command": command}));
    }
    if offered("shell") {
        return ("shell".to_owned(), json!({"command": ["bash", "-lc", command]}));
    }
    if let Some(name) = SHELL_TOOLS.iter().find(|name| offered(name)) {
        return ((*name).to_owned(), json!({"command": command}));
    }
    let name = tools.first().cloned().unwrap_or_else(|| "bash".to_owned());
    (name, json!({"command": command}))
}

/// The op's fields as mockllm passes them to a tool named like the op.
fn op_fields(op: &ScriptOp) -> Value {
    let mut map = Map::new();
    let strings = [
        ("path", &op.path),
        ("pattern", &op.pattern),
        ("include", &op.include),
        ("content", &op.content),
        ("command", &op.command),
        ("description", &op.description),
    ];
    for (key, value) in strings {
        if let Some(value) = value {
            map.insert(key.to_owned(), json!(value));
        }
    }
    for (key, value) in [("offset", &op.offset), ("limit", &op.limit)] {
        if let Some(value) = value {
            map.insert(key.to_owned(), value.clone());
        }
    }
    Value::Object(map)
}

/// The op with `{cwd}` replaced in its text fields.
fn substituted(op: &ScriptOp, workdir: Option<&Path>) -> ScriptOp {
    let sub = |text: &Option<String>| text.as_ref().map(|t| subst_text(t, workdir));
    ScriptOp {
        op: op.op,
        path: sub(&op.path),
        pattern: sub(&op.pattern),
        include: sub(&op.include),
        content: sub(&op.content),
        command: sub(&op.command),
        description: sub(&op.description),
        offset: op.offset.clone(),
        limit: op.limit.clone(),
    }
}

/// `{cwd}` in every string of `value`.
fn subst(value: &Value, workdir: Option<&Path>) -> Value {
    match value {
        Value::String(text) => Value::String(subst_text(text, workdir)),
        Value::Array(items) => Value::Array(items.iter().map(|item| subst(item, workdir)).collect()),
        Value::Object(map) => {
            Value::Object(map.iter().map(|(key, item)| (key.clone(), subst(item, workdir))).collect())
        }
        other => other.clone(),
    }
}

/// Without a workdir `{cwd}` becomes `.`: the library never asks the process where it is.
fn subst_text(text: &str, workdir: Option<&Path>) -> String {
    if !text.contains("{cwd}") {
        return text.to_owned();
    }
    let cwd = workdir.map_or_else(|| ".".to_owned(), |dir| dir.display().to_string());
    text.replace("{cwd}", &cwd)
}

/// `path` joined to the workdir and normalised lexically; relative when there is no workdir.
fn absolute(path: &str, workdir: Option<&Path>) -> String {
    let joined = match workdir {
        Some(dir) if !Path::new(path).is_absolute() => dir.join(path),
        _ => PathBuf::from(path),
    };
    normalize(&joined).display().to_string()
}

/// Python's `os.path.normpath`, lexically: `.` dropped, `..` folded.
fn normalize(path: &Path) -> PathBuf {
    let mut out: Vec<Component<'_>> = Vec::new();
    for component in path.components() {
        match component {
            Component::CurDir => {}
            Component::ParentDir => match out.last() {
                Some(Component::Normal(_)) => {
                    out.pop();
                }
                Some(Component::RootDir | Component::Prefix(_)) => {}
                _ => out.push(component),
            },
            other => out.push(other),
        }
    }
    if out.is_empty() {
        return PathBuf::from(".");
    }
    out.iter().collect()
}

/// A single-quoted shell word.
fn quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', r"'\''"))
}

/// The shell command doing what the op does (mockllm's `op_to_shell`).
fn to_shell(op: &ScriptOp) -> String {
    let path = op.path.clone().unwrap_or_else(|| ".".to_owned());
    let pattern = op.pattern.clone().unwrap_or_default();
    match op.op {
        OpKind::Read => format!("cat -n {}", quote(&path)),
        OpKind::List => format!("ls -la {}", quote(&path)),
        OpKind::Glob => {
            format!("cd {} && bash -O globstar -c {}", quote(&path), quote(&format!("ls -d {pattern}")))
        }
        OpKind::Grep => format!("grep -rn {} {}", quote(&pattern), quote(&path)),
        OpKind::Write => {
            format!(
                "cat > {} <<'MOCK_EOF'\n{}\nMOCK_EOF",
                quote(&path),
                op.content.clone().unwrap_or_default()
            )
        }
        OpKind::Bash => op.command.clone().unwrap_or_default(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(value: Value) -> ScriptCall {
        serde_json::from_value(value).unwrap()
    }

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|name| (*name).to_owned()).collect()
    }

    #[test]
    fn opencode_tools_get_native_calls() {
        let tools = names(&["bash", "read", "glob", "grep", "list", "write", "edit"]);
        let dir = Some(Path::new("/work/p"));
        let cases = [
            (
                json!({"op": "read", "path": "src/a.py", "offset": 1, "limit": 50}),
                ("read", json!({"filePath": "/work/p/src/a.py", "offset": 1, "limit": 50})),
            ),
            (json!({"op": "list", "path": "."}), ("list", json!({"path": "/work/p"}))),
            (json!({"op": "glob", "pattern": "src/*.py"}), ("glob", json!({"pattern": "src/*.py"}))),
            (
                json!({"op": "grep", "pattern": "def f", "path": "src"}),
                ("grep", json!({"pattern": "def f", "path": "/work/p/src"})),
            ),
            (
                json!({"op": "bash", "command": "wc -l x"}),
                ("bash", json!({"command": "wc -l x", "description": "Run bash"})),
            ),
            (
                json!({"op": "write", "path": "../p/N.md", "content": "hi"}),
                ("write", json!({"filePath": "/work/p/N.md", "content": "hi"})),
            ),
        ];
        for (call, (name, input)) in cases {
            assert_eq!(translate(&op(call), &tools, dir), (name.to_owned(), input));
        }
    }

    #[test]
    fn relative_paths_stay_relative_without_a_workdir() {
        let tools = names(&["bash", "read", "list"]);
        assert_eq!(
            translate(&op(json!({"op": "read", "path": "./README.md"})), &tools, None),
            ("read".to_owned(), json!({"filePath": "README.md"}))
        );
        assert_eq!(
            translate(&op(json!({"op": "list"})), &tools, None),
            ("list".to_owned(), json!({"path": "."}))
        );
    }

    #[test]
    fn missing_native_tools_fall_back_to_the_shell() {
        let tools = names(&["bash", "read"]);
        assert_eq!(
            translate(&op(json!({"op": "grep", "pattern": "it's", "path": "src"})), &tools, None),
            ("bash".to_owned(), json!({"command": r"grep -rn 'it'\''s' 'src'", "description": "Run grep"}))
        );
        assert_eq!(
            translate(&op(json!({"op": "list"})), &tools, None),
            ("bash".to_owned(), json!({"command": "ls -la '.'", "description": "List directory"}))
        );
    }

    #[test]
    fn shell_only_agents_get_commands() {
        let call = op(json!({"op": "read", "path": "README.md"}));
        assert_eq!(
            translate(&call, &names(&["exec_command"]), None),
            ("exec_command".to_owned(), json!({"cmd": "cat -n 'README.md'"}))
        );
        assert_eq!(
            translate(&call, &names(&["shell"]), None),
            ("shell".to_owned(), json!({"command": ["bash", "-lc", "cat -n 'README.md'"]}))
        );
        assert_eq!(
            translate(&call, &[], None),
            ("bash".to_owned(), json!({"command": "cat -n 'README.md'"}))
        );
    }

    #[test]
    fn raw_calls_pass_through_with_cwd() {
        let call = op(json!({"name": "custom", "arguments": {"dir": "{cwd}/x", "n": [1, "{cwd}"]}}));
        assert_eq!(
            translate(&call, &[], Some(Path::new("/w"))),
            ("custom".to_owned(), json!({"dir": "/w/x", "n": [1, "/w"]}))
        );
    }
}
