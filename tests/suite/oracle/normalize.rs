//! What makes two runs comparable: ids, times, hashes and temporary paths replaced by
//! placeholders, prompt wording (product text, not behaviour) hidden, and a field-by-field diff.

use serde_json::{Map, Value};

/// The temporary folders of one agent's run, replaced by placeholders wherever they appear.
pub(crate) struct Places {
    /// The project folder (`<project>`).
    pub project: String,
    /// The agent's home folder, data and config included (`<home>`).
    pub home: String,
    /// The scripted server's address, `http://127.0.0.1:<port>` (`<provider>`).
    pub provider: String,
}

/// Id prefixes both agents mint (OpenCode's `Identifier` kinds; `tool_` names a saved output).
const ID_PREFIXES: [&str; 6] = ["ses_", "msg_", "prt_", "per_", "que_", "tool_"];

/// Each agent's data folder under `<home>` (where saved outputs go): the same place, named
/// after each program.
const DATA_FOLDERS: [&str; 2] = ["<home>/.local/share/opencode/", "<home>/.local/share/session/"];

/// The value with ids, times, snapshot hashes and the run's folders replaced.
pub(crate) fn normalize(value: &Value, places: &Places) -> Value {
    walk(value, places, None)
}

fn walk(value: &Value, places: &Places, key: Option<&str>) -> Value {
    match value {
        Value::Object(map) => {
            let timed = key.is_some_and(|k| k == "time");
            let mut out = Map::new();
            for (k, v) in map {
                // Every number inside a `time` object is a clock reading.
                let v = if (timed || k == "timestamp") && v.is_number() {
                    Value::from(0)
                } else if matches!(k.as_str(), "snapshot" | "hash") && v.is_string() {
                    Value::from("<hash>")
                } else if k == "date" && v.is_string() {
                    Value::from("<date>")
                } else if matches!(k.as_str(), "slug") && v.is_string() {
                    Value::from("<slug>")
                } else if k == "projectID" && v.is_string() {
                    Value::from("<project-id>")
                } else {
                    walk(v, places, Some(k))
                };
                out.insert(k.clone(), v);
            }
            Value::Object(out)
        }
        Value::Array(items) => Value::Array(items.iter().map(|v| walk(v, places, key)).collect()),
        Value::String(text) => Value::String(text_of(text, places)),
        other => other.clone(),
    }
}

/// A string with the run's folders and minted ids replaced.
pub(crate) fn text_of(text: &str, places: &Places) -> String {
    let mut text = text
        .replace(&places.project, "<project>")
        .replace(&places.home, "<home>")
        .replace(&places.provider, "<provider>");
    for folder in DATA_FOLDERS {
        text = text.replace(folder, "<data>/");
    }
    for prefix in ID_PREFIXES {
        text = replace_ids(&text, prefix);
    }
    text
}

/// Every `prefix` followed by id characters becomes `<prefix>`.
fn replace_ids(text: &str, prefix: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find(prefix) {
        let boundary = at == 0 || !rest[..at].ends_with(|c: char| c.is_ascii_alphanumeric());
        out.push_str(&rest[..at]);
        let after = &rest[at + prefix.len()..];
        let len = after.find(|c: char| !c.is_ascii_alphanumeric()).unwrap_or(after.len());
        if boundary && len >= 10 {
            out.push('<');
            out.push_str(&prefix[..prefix.len() - 1]);
            out.push('>');
            rest = &after[len..];
        } else {
            out.push_str(prefix);
            rest = after;
        }
    }
    out.push_str(rest);
    out
}

/// A request body as the comparison sees it: the wording of system prompts and tool
/// descriptions hidden, the system messages counted and the skills they list kept (by name:
/// description and location), the other messages in order, each tool's parameters by the
/// tool's name.
pub(crate) fn request_body(body: &Value) -> Value {
    let mut body = body.clone();
    if let Some(messages) = body.get("messages").and_then(Value::as_array).cloned() {
        let (system, rest): (Vec<Value>, Vec<Value>) =
            messages.into_iter().partition(|m| m["role"] == "system");
        body["messages"] = Value::from(rest);
        body["system_messages"] = Value::from(system.len());
        let text: String = system.iter().filter_map(|m| m["content"].as_str()).collect();
        body["skills"] = Value::Object(listed_skills(&text));
    }
    if let Some(tools) = body.get_mut("tools").and_then(Value::as_array_mut) {
        let mut by_name = Map::new();
        for tool in tools.iter_mut() {
            hide_descriptions(tool);
            let name = tool["function"]["name"].as_str().unwrap_or_default().to_owned();
            by_name.insert(name, tool["function"]["parameters"].take());
        }
        let mut names: Vec<String> = by_name.keys().cloned().collect();
        names.sort();
        body["tool_names"] = Value::from(names.join(","));
        body["tools"] = Value::Object(by_name);
    }
    body
}

/// The skills a system prompt lists in its `<available_skills>` block, by name.
fn listed_skills(system: &str) -> Map<String, Value> {
    let field = |block: &str, tag: &str| {
        let open = format!("<{tag}>");
        let start = block.find(&open)? + open.len();
        let end = block[start..].find(&format!("</{tag}>"))? + start;
        Some(block[start..end].to_owned())
    };
    let mut skills = Map::new();
    let Some(start) = system.find("<available_skills>") else { return skills };
    let end = system[start..].find("</available_skills>").map_or(system.len(), |e| start + e);
    for block in system[start..end].split("<skill>").skip(1) {
        let Some(name) = field(block, "name") else { continue };
        let entry = serde_json::json!({
            "description": field(block, "description"),
            "location": field(block, "location"),
        });
        skills.insert(name, entry);
    }
    skills
}

fn hide_descriptions(value: &mut Value) {
    match value {
        Value::Object(map) => {
            for (key, v) in map.iter_mut() {
                if key == "description" && v.is_string() {
                    *v = Value::from("<description>");
                } else {
                    hide_descriptions(v);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(hide_descriptions),
        _ => {}
    }
}

/// The printed runs with each run of consecutive `tool_use` lines in call-id order: parallel
/// calls print as they finish, which is a race in either agent.
pub(crate) fn printed_in_call_order(printed: &[Value]) -> Value {
    let mut printed = printed.to_vec();
    for run in &mut printed {
        let Some(lines) = run.get_mut("lines").and_then(Value::as_array_mut) else { continue };
        let mut start = 0;
        while start < lines.len() {
            let mut end = start;
            while end < lines.len() && lines[end]["type"] == "tool_use" {
                end += 1;
            }
            if end > start {
                lines[start..end]
                    .sort_by(|a, b| a["part"]["callID"].as_str().cmp(&b["part"]["callID"].as_str()));
                start = end;
            } else {
                start += 1;
            }
        }
    }
    Value::from(printed)
}

/// One place where the two runs differ.
#[derive(Debug, Clone)]
pub(crate) struct Difference {
    /// Where, as `channel/key/0/key` (`stored`, `sent` or `printed` first).
    pub path: String,
    /// OpenCode's value (`null` where it has none).
    pub opencode: Value,
    /// Ours.
    pub session: Value,
}

/// Every leaf where `opencode` and `session` differ; arrays of different lengths are one
/// difference (their elements would all shift).
pub(crate) fn diff(path: &str, opencode: &Value, session: &Value, out: &mut Vec<Difference>) {
    match (opencode, session) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let path = format!("{path}/{key}");
                diff(&path, a.get(key).unwrap_or(&Value::Null), b.get(key).unwrap_or(&Value::Null), out);
            }
        }
        (Value::Array(a), Value::Array(b)) if a.len() == b.len() => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                diff(&format!("{path}/{i}"), x, y, out);
            }
        }
        (a, b) if a != b => {
            out.push(Difference { path: path.to_owned(), opencode: a.clone(), session: b.clone() })
        }
        _ => {}
    }
}

/// Whether `path` matches `pattern`: segments split at `/`, `*` matches one segment, a final
/// `**` the rest (or nothing).
pub(crate) fn path_matches(pattern: &str, path: &str) -> bool {
    let mut want = pattern.split('/');
    let mut have = path.split('/');
    loop {
        match (want.next(), have.next()) {
            (Some("**"), _) => return true,
            (Some(w), Some(h)) if w == "*" || w == h => continue,
            (None, None) => return true,
            _ => return false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn places() -> Places {
        Places {
            project: "/tmp/x/project".into(),
            home: "/tmp/x/home".into(),
            provider: "http://127.0.0.1:9".into(),
        }
    }

    #[test]
    fn ids_times_hashes_and_folders_become_placeholders() {
        let raw = json!({
            "id": "ses_dbd7e2bd1ffeP8eSy0xBQ9QHFz",
            "time": {"created": 17, "updated": 18},
            "parts": [{"snapshot": "abc", "text": "see /tmp/x/project/a.txt in msg_24281dba3001NPjkKwesUJmNjX"}],
            "timestamp": 5,
            "tokens": {"input": 3},
            "callID": "call_0_0",
            "other": "ses_short"
        });
        let got = normalize(&raw, &places());
        assert_eq!(
            got,
            json!({
                "id": "<ses>",
                "time": {"created": 0, "updated": 0},
                "parts": [{"snapshot": "<hash>", "text": "see <project>/a.txt in <msg>"}],
                "timestamp": 0,
                "tokens": {"input": 3},
                "callID": "call_0_0",
                "other": "ses_short"
            })
        );
    }

    #[test]
    fn prompt_wording_is_hidden_but_schemas_and_counts_are_kept() {
        let body = json!({
            "messages": [{"role": "system", "content": "long"}, {"role": "user", "content": "hi"}],
            "tools": [
                {"type": "function", "function": {"name": "read", "description": "Reads", "parameters": {
                    "properties": {"filePath": {"type": "string", "description": "the path"}}}}},
                {"type": "function", "function": {"name": "bash", "description": "Runs", "parameters": {
                    "properties": {"description": {"type": "string", "description": "what"}}}}}
            ]
        });
        let got = request_body(&body);
        assert_eq!(got["system_messages"], 1);
        assert_eq!(got["messages"], json!([{"role": "user", "content": "hi"}]));
        assert_eq!(got["tool_names"], "bash,read");
        assert_eq!(got["tools"]["bash"]["properties"]["description"]["type"], "string");
        assert_eq!(got["tools"]["read"]["properties"]["filePath"]["description"], "<description>");
    }

    #[test]
    fn diff_reports_leaves_and_length_changes_once() {
        let mut out = Vec::new();
        diff(
            "stored",
            &json!({"a": [1, 2], "b": {"c": 1}, "d": [1]}),
            &json!({"a": [1, 3], "b": {}, "d": [1, 2]}),
            &mut out,
        );
        let paths: Vec<&str> = out.iter().map(|d| d.path.as_str()).collect();
        assert_eq!(paths, ["stored/a/1", "stored/b/c", "stored/d"]);
        assert_eq!(out[1].session, Value::Null);
    }

    #[test]
    fn parallel_tool_lines_compare_in_call_order() {
        let tool = |id: &str| json!({"type": "tool_use", "part": {"callID": id}});
        let printed = [
            json!({"lines": [json!({"type": "text"}), tool("b"), tool("a"), json!({"type": "step_finish"}), tool("d"), tool("c")]}),
        ];
        let got = printed_in_call_order(&printed);
        let ids: Vec<&str> = got[0]["lines"]
            .as_array()
            .unwrap()
            .iter()
            .map(|l| l["part"]["callID"].as_str().unwrap_or("-"))
            .collect();
        assert_eq!(ids, ["-", "a", "b", "-", "c", "d"]);
    }

    #[test]
    fn patterns_match_one_segment_per_star_and_the_rest_with_two() {
        assert!(path_matches("stored/messages/*/info/finish", "stored/messages/2/info/finish"));
        assert!(!path_matches("stored/messages/*/info/finish", "stored/messages/2/info/tokens"));
        assert!(path_matches("sent/*/headers/**", "sent/0/headers/user-agent"));
        assert!(path_matches("sent/**", "sent"));
        assert!(!path_matches("sent/*", "sent/0/body"));
    }
}
