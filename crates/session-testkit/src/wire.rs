//! What the server reads from a request body in each wire format: the facts a reply depends
//! on (mockllm's turn counting, system prompt, last user text, tool names) and the broken
//! invariants (a tool call without its result before the next model turn, a result without a
//! call).

use serde_json::{Map, Value};
use session_llm::{Api, RequestFacts, summary_marker};

/// The facts of a request body, and what it says about its history.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WireFacts {
    /// What the reply depends on.
    pub facts: RequestFacts,
    /// How many messages (items, contents) the history has.
    pub messages: usize,
    /// Broken invariants of the history.
    pub violations: Vec<String>,
}

/// Reads a request body of `api` (`body_chars` is its size in bytes).
pub fn read(api: Api, body: &Value, body_chars: usize) -> WireFacts {
    let mut facts = match api {
        Api::OpenAiChat => chat(body),
        Api::OpenAiResponses => responses(body),
        Api::Anthropic => anthropic(body),
        Api::Gemini => gemini(body),
    };
    facts.facts.body_chars = body_chars;
    facts
}

/// mockllm's `text_of`: strings as they are, lists of parts by their `text` or `content`.
fn text_of(value: Option<&Value>) -> String {
    match value {
        None | Some(Value::Null) => String::new(),
        Some(Value::String(text)) => text.clone(),
        Some(Value::Array(parts)) => parts
            .iter()
            .map(|part| match part {
                Value::Object(map) => {
                    let text = map.get("text").filter(|v| truthy(v)).or_else(|| map.get("content"));
                    text_of(text)
                }
                other => text_of(Some(other)),
            })
            .collect::<Vec<_>>()
            .join("\n"),
        Some(other) => other.to_string(),
    }
}

fn truthy(value: &Value) -> bool {
    match value {
        Value::Null => false,
        Value::Bool(b) => *b,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        Value::Number(_) => true,
    }
}

fn array<'a>(body: &'a Value, key: &str) -> &'a [Value] {
    body.get(key).and_then(Value::as_array).map_or(&[], Vec::as_slice)
}

fn str_field<'a>(value: &'a Value, key: &str) -> Option<&'a str> {
    value.get(key).and_then(Value::as_str)
}

/// The turn: model runs after the last summary marker, plus the marker's number.
fn count_turns<'a>(
    items: &'a [Value],
    text: impl Fn(&'a Value) -> String,
    is_model: impl Fn(&Value) -> bool,
) -> usize {
    let (mut offset, mut start) = (0, 0);
    for (index, item) in items.iter().enumerate() {
        if let Some(turn) = summary_marker(&text(item)) {
            (offset, start) = (turn, index + 1);
        }
    }
    let mut runs = 0usize;
    let mut in_run = false;
    for item in &items[start..] {
        let model = is_model(item);
        if model && !in_run {
            runs += 1;
        }
        in_run = model;
    }
    offset.saturating_add(runs)
}

/// Tool calls awaiting their results, reported when the next model turn starts.
#[derive(Default)]
struct Ledger {
    open: Vec<(String, String)>,
    seen: Vec<String>,
    violations: Vec<String>,
}

impl Ledger {
    fn call(&mut self, id: &str, name: &str) {
        self.seen.push(id.to_owned());
        self.open.push((id.to_owned(), name.to_owned()));
    }

    /// A result for `id`; when `by_name` (Gemini), the first open call of that name.
    fn result(&mut self, id: &str, by_name: Option<&str>) {
        let at = self.open.iter().position(|(open, _)| open == id).or_else(|| {
            by_name.and_then(|name| self.open.iter().position(|(_, open_name)| open_name == name))
        });
        match at {
            Some(at) => {
                self.open.remove(at);
            }
            None if !self.seen.iter().any(|seen| seen == id) => {
                self.violations.push(format!("tool result {id} answers no call"));
            }
            None => {}
        }
    }

    fn next_turn(&mut self) {
        for (id, name) in self.open.drain(..) {
            self.violations.push(format!("tool call {id} ({name}) has no result"));
        }
    }

    fn finish(mut self) -> Vec<String> {
        self.next_turn();
        self.violations
    }
}

fn chat(body: &Value) -> WireFacts {
    let messages = array(body, "messages");
    let role = |m: &Value| str_field(m, "role").unwrap_or_default().to_owned();
    let turn = count_turns(messages, |m| text_of(m.get("content")), |m| role(m) == "assistant");
    let system = messages
        .iter()
        .filter(|m| matches!(role(m).as_str(), "system" | "developer"))
        .map(|m| text_of(m.get("content")))
        .collect::<Vec<_>>()
        .join("\n");
    let last_user = messages.iter().rev().find(|m| role(m) == "user").map(|m| text_of(m.get("content")));
    let tool_names = array(body, "tools")
        .iter()
        .filter_map(|tool| {
            let name = tool.get("function").and_then(|f| f.get("name")).or_else(|| tool.get("name"));
            name.and_then(Value::as_str).map(str::to_owned)
        })
        .collect();
    let mut ledger = Ledger::default();
    for message in messages {
        match role(message).as_str() {
            "assistant" => {
                ledger.next_turn();
                for call in array(message, "tool_calls") {
                    let id = str_field(call, "id").unwrap_or_default();
                    let name = call.get("function").and_then(|f| str_field(f, "name")).unwrap_or_default();
                    ledger.call(id, name);
                }
            }
            "tool" => ledger.result(str_field(message, "tool_call_id").unwrap_or_default(), None),
            _ => {}
        }
    }
    WireFacts {
        facts: RequestFacts {
            turn,
            system,
            last_user: last_user.unwrap_or_default(),
            tool_names,
            body_chars: 0,
        },
        messages: messages.len(),
        violations: ledger.finish(),
    }
}

/// Output items a model produces (one run of them is one model turn).
const MODEL_ITEMS: [&str; 6] = [
    "function_call",
    "custom_tool_call",
    "local_shell_call",
    "reasoning",
    "web_search_call",
    "tool_search_call",
];

fn responses(body: &Value) -> WireFacts {
    let single;
    let items: &[Value] = match body.get("input") {
        Some(Value::String(text)) => {
            single = [serde_json::json!({"type": "message", "role": "user", "content": text})];
            &single
        }
        _ => array(body, "input"),
    };
    let kind = |item: &Value| str_field(item, "type").unwrap_or("message").to_owned();
    let is_model = |item: &Value| {
        let kind = kind(item);
        MODEL_ITEMS.contains(&kind.as_str())
            || (kind == "message" && str_field(item, "role") == Some("assistant"))
    };
    let turn = count_turns(
        items,
        |item| {
            let output = match item.get("output") {
                None => String::new(),
                Some(Value::String(text)) => text.clone(),
                Some(other) => other.to_string(),
            };
            text_of(item.get("content")) + &output
        },
        is_model,
    );
    let mut system = text_of(body.get("instructions"));
    for item in items {
        if matches!(str_field(item, "role"), Some("system" | "developer")) {
            system.push('\n');
            system.push_str(&text_of(item.get("content")));
        }
    }
    let last_user = items
        .iter()
        .rev()
        .find(|item| kind(item) == "message" && str_field(item, "role") == Some("user"))
        .map(|item| text_of(item.get("content")));
    let tool_names = array(body, "tools")
        .iter()
        .filter_map(|tool| str_field(tool, "name").or_else(|| str_field(tool, "type")).map(str::to_owned))
        .collect();
    let mut ledger = Ledger::default();
    let mut in_run = false;
    for item in items {
        let model = is_model(item);
        if model && !in_run {
            ledger.next_turn();
        }
        in_run = model;
        let call_id = str_field(item, "call_id").unwrap_or_default();
        match kind(item).as_str() {
            "function_call" | "custom_tool_call" => {
                ledger.call(call_id, str_field(item, "name").unwrap_or_default());
            }
            "function_call_output" | "custom_tool_call_output" => ledger.result(call_id, None),
            _ => {}
        }
    }
    WireFacts {
        facts: RequestFacts {
            turn,
            system,
            last_user: last_user.unwrap_or_default(),
            tool_names,
            body_chars: 0,
        },
        messages: items.len(),
        violations: ledger.finish(),
    }
}

fn anthropic(body: &Value) -> WireFacts {
    let messages = array(body, "messages");
    let role = |m: &Value| str_field(m, "role").unwrap_or_default().to_owned();
    let turn = count_turns(messages, |m| text_of(m.get("content")), |m| role(m) == "assistant");
    let system = text_of(body.get("system"));
    let last_user = messages.iter().rev().find(|m| role(m) == "user").map(|m| text_of(m.get("content")));
    let tool_names =
        array(body, "tools").iter().filter_map(|tool| str_field(tool, "name").map(str::to_owned)).collect();
    let mut ledger = Ledger::default();
    for message in messages {
        let assistant = role(message) == "assistant";
        if assistant {
            ledger.next_turn();
        }
        for block in array(message, "content") {
            match str_field(block, "type") {
                Some("tool_use") if assistant => ledger.call(
                    str_field(block, "id").unwrap_or_default(),
                    str_field(block, "name").unwrap_or_default(),
                ),
                Some("tool_result") => {
                    ledger.result(str_field(block, "tool_use_id").unwrap_or_default(), None)
                }
                _ => {}
            }
        }
    }
    WireFacts {
        facts: RequestFacts {
            turn,
            system,
            last_user: last_user.unwrap_or_default(),
            tool_names,
            body_chars: 0,
        },
        messages: messages.len(),
        violations: ledger.finish(),
    }
}

fn gemini(body: &Value) -> WireFacts {
    let contents = array(body, "contents");
    let role = |c: &Value| str_field(c, "role").unwrap_or("user").to_owned();
    let parts_text = |c: &Value| text_of(c.get("parts"));
    let turn = count_turns(contents, parts_text, |c| role(c) == "model");
    let system = body.get("systemInstruction").map(|s| text_of(s.get("parts"))).unwrap_or_default();
    let last_user = contents.iter().rev().find(|c| role(c) == "user").map(parts_text);
    let tool_names = array(body, "tools")
        .iter()
        .flat_map(|tool| array(tool, "functionDeclarations"))
        .filter_map(|declaration| str_field(declaration, "name").map(str::to_owned))
        .collect();
    let mut ledger = Ledger::default();
    let empty = Map::new();
    for content in contents {
        let model = role(content) == "model";
        if model {
            ledger.next_turn();
        }
        for part in array(content, "parts") {
            let part = part.as_object().unwrap_or(&empty);
            if let Some(call) = part.get("functionCall").filter(|_| model) {
                let name = str_field(call, "name").unwrap_or_default();
                // Calls without ids are matched by name, as Gemini matches them.
                ledger.call(str_field(call, "id").unwrap_or(name), name);
            }
            if let Some(response) = part.get("functionResponse") {
                let name = str_field(response, "name").unwrap_or_default();
                ledger.result(str_field(response, "id").unwrap_or(name), Some(name));
            }
        }
    }
    WireFacts {
        facts: RequestFacts {
            turn,
            system,
            last_user: last_user.unwrap_or_default(),
            tool_names,
            body_chars: 0,
        },
        messages: contents.len(),
        violations: ledger.finish(),
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn chat_turns_and_invariants() {
        let body = json!({"messages": [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": null, "tool_calls": [
                {"id": "a", "type": "function", "function": {"name": "read", "arguments": "{}"}},
                {"id": "b", "type": "function", "function": {"name": "list", "arguments": "{}"}}]},
            {"role": "tool", "tool_call_id": "a", "content": "x"},
            {"role": "tool", "tool_call_id": "zz", "content": "x"},
            {"role": "assistant", "content": "done"},
        ], "tools": [{"type": "function", "function": {"name": "read"}}]});
        let facts = read(Api::OpenAiChat, &body, 400);
        assert_eq!(facts.facts.turn, 2);
        assert_eq!(facts.facts.system, "sys");
        assert_eq!(facts.facts.last_user, "hi");
        assert_eq!(facts.facts.tool_names, vec!["read"]);
        assert_eq!(facts.facts.body_chars, 400);
        assert_eq!(
            facts.violations,
            vec!["tool result zz answers no call", "tool call b (list) has no result"]
        );
    }

    #[test]
    fn markers_restart_the_count() {
        let body = json!({"messages": [
            {"role": "assistant", "content": "one"},
            {"role": "assistant", "content": "[mock-summary turn=7] summary"},
            {"role": "user", "content": "continue"},
            {"role": "assistant", "content": "two"},
        ]});
        assert_eq!(read(Api::OpenAiChat, &body, 0).facts.turn, 8);
    }

    #[test]
    fn responses_count_runs_of_model_items() {
        let body = json!({"instructions": "be brief", "input": [
            {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "hi"}]},
            {"type": "reasoning", "summary": []},
            {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"},
            {"type": "function_call_output", "call_id": "c1", "output": "x"},
            {"type": "function_call", "call_id": "c2", "name": "read", "arguments": "{}"},
        ]});
        let facts = read(Api::OpenAiResponses, &body, 0);
        assert_eq!(facts.facts.turn, 2);
        assert_eq!(facts.facts.last_user, "hi");
        assert_eq!(facts.violations, vec!["tool call c2 (read) has no result"]);
        assert_eq!(read(Api::OpenAiResponses, &json!({"input": "hello"}), 0).facts.last_user, "hello");
    }

    #[test]
    fn anthropic_and_gemini_histories() {
        let body = json!({"system": [{"type": "text", "text": "sys"}], "messages": [
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "read", "input": {}}]},
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "x"}]},
        ]});
        let facts = read(Api::Anthropic, &body, 0);
        assert_eq!((facts.facts.turn, facts.facts.system.as_str()), (1, "sys"));
        assert!(facts.violations.is_empty());

        let body = json!({"contents": [
            {"role": "user", "parts": [{"text": "hi"}]},
            {"role": "model", "parts": [{"functionCall": {"name": "read", "args": {}}},
                                        {"functionCall": {"name": "list", "args": {}}}]},
            {"role": "user", "parts": [{"functionResponse": {"name": "read", "response": {}}}]},
            {"role": "model", "parts": [{"text": "ok"}]},
        ], "tools": [{"functionDeclarations": [{"name": "read"}, {"name": "list"}]}]});
        let facts = read(Api::Gemini, &body, 0);
        assert_eq!(facts.facts.turn, 2);
        assert_eq!(facts.facts.tool_names, vec!["read", "list"]);
        assert_eq!(facts.violations, vec!["tool call list (list) has no result"]);
    }
}
