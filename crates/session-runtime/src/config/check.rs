//! Checks of one layer's JSON against the schema: wrong types fail with the key path, unknown
//! keys become warnings, and OpenCode's per-file normalisations are applied.

use std::collections::HashSet;
use std::path::Path;

use serde_json::{Map, Value};

use super::agent::AgentConfig;
use super::error::{ConfigError, ConfigWarning, describe};
use super::permission::check_permission;
use super::types::Config;

/// OpenCode keys accepted without a warning: the schema link, listening settings the command's
/// flags decide, and the models.dev fields that describe rather than
/// configure. `*` stands for any one key or index. A pattern covers everything below it, since
/// an ignored value is reported once, at its own path. OpenCode keys with no effect here warn
/// (see `unsupported.rs`).
const ACCEPTED: &[&[&str]] = &[
    &["$schema"],
    &["server", "port"],
    &["server", "hostname"],
    &["server", "mdns"],
    &["server", "mdnsDomain"],
    // Providers: catalog identity.
    &["provider", "*", "id"],
    // Models: the rest of the models.dev shape.
    &["provider", "*", "models", "*", "family"],
    &["provider", "*", "models", "*", "release_date"],
    &["provider", "*", "models", "*", "last_updated"],
    &["provider", "*", "models", "*", "knowledge"],
    &["provider", "*", "models", "*", "open_weights"],
    &["provider", "*", "models", "*", "structured_output"],
    &["provider", "*", "models", "*", "interleaved"],
    &["provider", "*", "models", "*", "modalities"],
    &["provider", "*", "models", "*", "experimental"],
    &["provider", "*", "models", "*", "status"],
    &["provider", "*", "models", "*", "provider"],
    &["provider", "*", "models", "*", "variants"],
    // Prices models.dev lists that the cost rules deliberately ignore (SPEC 5).
    &["provider", "*", "models", "*", "cost", "reasoning"],
    &["provider", "*", "models", "*", "cost", "cached_input"],
    &["provider", "*", "models", "*", "cost", "input_audio"],
    &["provider", "*", "models", "*", "cost", "output_audio"],
    &["provider", "*", "models", "*", "cost", "tiers", "*", "reasoning"],
    &["provider", "*", "models", "*", "cost", "context_over_200k", "reasoning"],
];

/// Where the schema has a struct. serde would also fill a struct from an array, by position,
/// so arrays there are refused before deserialising.
const OBJECTS: &[&[&str]] = &[
    &[],
    &["provider", "*"],
    &["provider", "*", "options"],
    &["provider", "*", "options", "retry"],
    &["provider", "*", "models", "*"],
    &["provider", "*", "models", "*", "limit"],
    &["provider", "*", "models", "*", "cost"],
    &["provider", "*", "models", "*", "cost", "context_over_200k"],
    &["provider", "*", "models", "*", "cost", "tiers", "*"],
    &["provider", "*", "models", "*", "cost", "tiers", "*", "tier"],
    &["agent", "*"],
    &["command", "*"],
    &["compaction"],
    &["experimental"],
    &["server"],
];

/// Checks one layer and applies OpenCode's per-file normalisations; returns its warnings.
///
/// Normalisations, as OpenCode's agent schema applies them to each file before merging:
/// unknown agent keys move into the agent's `options`, and `maxSteps` becomes `steps` when
/// `steps` is unset (so a later file's `maxSteps` overrides an earlier file's `steps`).
pub(crate) fn check_layer(value: &mut Value, path: &Path) -> Result<Vec<ConfigWarning>, ConfigError> {
    if value.is_null() {
        // An empty file (or one holding only comments) configures nothing.
        *value = Value::Object(Map::new());
    }
    for pattern in OBJECTS {
        if let Some(keys) = array_at(value, pattern, &mut Vec::new()) {
            return Err(ConfigError::WrongType {
                path: path.to_path_buf(),
                key: keys.join("."),
                expected: "an object".to_owned(),
                found: "an array".to_owned(),
            });
        }
    }
    move_agent_options(value);

    let mut ignored: Vec<Vec<String>> = Vec::new();
    let mut record = |ignored_path: serde_ignored::Path<'_>| ignored.push(segments(&ignored_path));
    // The permission values are checked after every other key, with errors of their own: they
    // are out of the way of the typed check, then put back.
    let permissions = take_permissions(value);
    let deserializer = serde_ignored::Deserializer::new(&*value, &mut record);
    let typed: Result<Config, _> = serde_path_to_error::deserialize(deserializer);
    put_back_permissions(value, permissions);
    let typed = typed.map_err(|error| type_error(path, value, &error))?;

    check_permission(path, value.get("permission"), "permission")?;
    for name in typed.agent.keys() {
        let permission = value.get("agent").and_then(|a| a.get(name)).and_then(|a| a.get("permission"));
        check_permission(path, permission, &format!("agent.{name}.permission"))?;
    }

    normalise_steps(value);

    // Price tiers are read in OpenCode's shape but have no effect (SPEC 5 "Configured models").
    for (provider, config) in &typed.provider {
        for (model, config) in &config.models {
            for key in config.cost.iter().flat_map(|cost| cost.ineffective_keys()) {
                let path = ["provider", provider, "models", model, "cost", key];
                ignored.push(path.iter().map(|segment| (*segment).to_owned()).collect());
            }
        }
    }

    let mut seen = HashSet::new();
    Ok(ignored
        .into_iter()
        .filter(|segments| !accepted(segments))
        .map(|segments| match super::unsupported::unsupported_key(&segments) {
            Some(key) => ConfigWarning::unsupported(path, key),
            None => ConfigWarning::unknown(path, segments.join(".")),
        })
        .filter(|warning| seen.insert(warning.key.clone()))
        .collect())
}

/// The path of the first array found where `pattern` points (`*` is any key or index).
fn array_at(value: &Value, pattern: &[&str], keys: &mut Vec<String>) -> Option<Vec<String>> {
    let Some((first, rest)) = pattern.split_first() else {
        return value.is_array().then(|| keys.clone());
    };
    let children: Vec<(String, &Value)> = match (value, *first) {
        (Value::Object(map), "*") => map.iter().map(|(k, v)| (k.clone(), v)).collect(),
        (Value::Array(items), "*") => items.iter().enumerate().map(|(i, v)| (i.to_string(), v)).collect(),
        (Value::Object(map), key) => map.get(key).map(|v| (key.to_owned(), v)).into_iter().collect(),
        _ => Vec::new(),
    };
    for (key, child) in children {
        keys.push(key);
        let found = array_at(child, rest, keys);
        keys.pop();
        if found.is_some() {
            return found;
        }
    }
    None
}

/// Takes the `permission` values (top-level and per agent object) out of `value`, with where
/// each was.
fn take_permissions(value: &mut Value) -> Vec<(Option<String>, Value)> {
    let mut taken = Vec::new();
    let Value::Object(root) = value else { return taken };
    if let Some(permission) = root.get_mut("permission") {
        taken.push((None, permission.take()));
    }
    if let Some(Value::Object(agents)) = root.get_mut("agent") {
        for (name, agent) in agents.iter_mut() {
            if let Some(permission) = agent.as_object_mut().and_then(|fields| fields.get_mut("permission")) {
                taken.push((Some(name.clone()), permission.take()));
            }
        }
    }
    taken
}

/// Puts back what [`take_permissions`] took, in place (the keys never left).
fn put_back_permissions(value: &mut Value, taken: Vec<(Option<String>, Value)>) {
    for (agent, permission) in taken {
        let slot = match &agent {
            None => value.get_mut("permission"),
            Some(name) => value
                .get_mut("agent")
                .and_then(|agents| agents.get_mut(name))
                .and_then(|a| a.get_mut("permission")),
        };
        if let Some(slot) = slot {
            *slot = permission;
        }
    }
}

fn move_agent_options(value: &mut Value) {
    let Some(Value::Object(agents)) = value.get_mut("agent") else { return };
    for agent in agents.values_mut() {
        let Value::Object(fields) = agent else { continue };
        let unknown: Vec<String> =
            fields.keys().filter(|k| !AgentConfig::KEYS.contains(&k.as_str())).cloned().collect();
        if unknown.is_empty() {
            continue;
        }
        let mut options = match fields.get("options") {
            Some(Value::Object(options)) => options.clone(),
            None | Some(Value::Null) => Map::new(),
            // A non-object `options` is a type error the typed check reports; leave it be.
            Some(_) => continue,
        };
        for key in unknown {
            if let Some(moved) = fields.shift_remove(&key) {
                options.insert(key, moved);
            }
        }
        fields.insert("options".to_owned(), Value::Object(options));
    }
}

fn normalise_steps(value: &mut Value) {
    let Some(Value::Object(agents)) = value.get_mut("agent") else { return };
    for agent in agents.values_mut() {
        let Value::Object(fields) = agent else { continue };
        let Some(max_steps) = fields.shift_remove("maxSteps") else { continue };
        if fields.get("steps").is_none_or(Value::is_null) {
            fields.insert("steps".to_owned(), max_steps);
        }
    }
}

fn accepted(segments: &[String]) -> bool {
    ACCEPTED.iter().any(|pattern| {
        pattern.len() <= segments.len()
            && pattern.iter().zip(segments).all(|(want, got)| *want == "*" || *want == got.as_str())
    })
}

fn segments(path: &serde_ignored::Path<'_>) -> Vec<String> {
    use serde_ignored::Path as P;
    match path {
        P::Root => Vec::new(),
        P::Seq { parent, index } => {
            let mut out = segments(parent);
            out.push(index.to_string());
            out
        }
        P::Map { parent, key } => {
            let mut out = segments(parent);
            out.push(key.clone());
            out
        }
        P::Some { parent } | P::NewtypeStruct { parent } | P::NewtypeVariant { parent } => segments(parent),
    }
}

/// What errors name when the value is the merge of several layers.
const MERGED: &str = "<merged config>";

/// A type error of the merged layers.
pub(crate) fn type_error_merged(
    value: &Value,
    error: &serde_path_to_error::Error<serde_json::Error>,
) -> ConfigError {
    type_error(Path::new(MERGED), value, error)
}

/// The type error of a failed deserialisation, with the key path and the value found there.
fn type_error(
    path: &Path,
    value: &Value,
    error: &serde_path_to_error::Error<serde_json::Error>,
) -> ConfigError {
    let mut keys: Vec<String> = Vec::new();
    let mut known = true;
    for segment in error.path().iter() {
        match segment {
            serde_path_to_error::Segment::Seq { index } => keys.push(index.to_string()),
            serde_path_to_error::Segment::Map { key } => keys.push(key.clone()),
            serde_path_to_error::Segment::Enum { variant } => keys.push(variant.clone()),
            serde_path_to_error::Segment::Unknown => known = false,
        }
    }
    let message = error.inner().to_string();
    // serde says "missing field `x`" of the object that lacks it.
    if let Some(field) = message.strip_prefix("missing field `").and_then(|rest| rest.strip_suffix('`')) {
        keys.push(field.to_owned());
        return ConfigError::WrongType {
            path: path.to_path_buf(),
            key: keys.join("."),
            expected: "a value".to_owned(),
            found: "nothing".to_owned(),
        };
    }
    let found = if known { lookup(value, &keys).map(describe) } else { None };
    let (serde_found, expected) = match message.rsplit_once(", expected ") {
        Some((found, expected)) => (found, expected),
        None => (message.as_str(), ""),
    };
    let found = found.unwrap_or_else(|| strip_serde_prefix(serde_found).to_owned());
    ConfigError::WrongType {
        path: path.to_path_buf(),
        key: keys.join("."),
        expected: plain_expected(expected),
        found,
    }
}

fn strip_serde_prefix(text: &str) -> &str {
    ["invalid type: ", "invalid value: "].iter().find_map(|prefix| text.strip_prefix(prefix)).unwrap_or(text)
}

/// serde's names for what it expected, in the words of a JSON config.
fn plain_expected(expected: &str) -> String {
    match expected {
        "" => "a valid value".to_owned(),
        "u8" | "u16" | "u32" | "u64" | "usize" => "a non-negative integer".to_owned(),
        "i8" | "i16" | "i32" | "i64" | "isize" => "an integer".to_owned(),
        "f32" | "f64" => "a number".to_owned(),
        "a nonzero u32" | "a nonzero u64" => "a positive integer".to_owned(),
        "a sequence" => "an array".to_owned(),
        "a map" => "an object".to_owned(),
        other => other.to_owned(),
    }
}

fn lookup<'a>(value: &'a Value, keys: &[String]) -> Option<&'a Value> {
    keys.iter().try_fold(value, |current, key| match current {
        Value::Object(map) => map.get(key),
        Value::Array(items) => key.parse::<usize>().ok().and_then(|index| items.get(index)),
        _ => None,
    })
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    fn warnings(mut value: Value) -> Vec<String> {
        check_layer(&mut value, Path::new("session.json")).unwrap().iter().map(ToString::to_string).collect()
    }

    fn error(mut value: Value) -> String {
        check_layer(&mut value, Path::new("session.json")).unwrap_err().to_string()
    }

    #[test]
    fn opencode_keys_without_effect_warn_once_each_and_the_rest_load_silently() {
        let value = json!({
            "$schema": "https://opencode.ai/config.json",
            "theme": "tokyonight",
            "autoupdate": "notify",
            "keybinds": {"leader": "ctrl+x", "quit": "ctrl+c"},
            "mcp": {"fs": {"type": "local", "command": ["mcp-fs"]}},
            "lsp": {"rust": {"command": ["rust-analyzer"]}},
            "instructions": ["AGENTS.md"],
            "default_agent": "plan",
            "plugin": ["opencode-wakatime"],
            "command": {"test": {"template": "run the tests", "subtask": true}},
            "experimental": {"batch_tool": true, "mcp_timeout": 1000},
            "agent": {"plan": {"color": "#FF5733", "hidden": false, "tools": {"bash": false}, "variant": "high"}},
            "provider": {"x": {"id": "x", "whitelist": ["m"], "models": {"m": {
                "family": "gpt", "release_date": "2025-01-01", "modalities": {"input": ["text"]},
                "cost": {"input": 1, "output": 2, "reasoning": 3},
            }}}},
        });
        let unsupported = |key: &str| {
            format!(
                "session.json: {key} is not supported here and has no effect (\"warn_unsupported\": false hides this)"
            )
        };
        assert_eq!(
            warnings(value),
            [
                "theme",
                "autoupdate",
                "keybinds",
                "lsp",
                "plugin",
                "experimental.batch_tool",
                "experimental.mcp_timeout",
                "provider.x.whitelist"
            ]
            .map(unsupported)
        );
    }

    #[test]
    fn unknown_keys_warn_once_each_with_their_path() {
        let value = json!({
            "modle": "openai/gpt-4.1",
            "provider": {"openai": {"foo": 1, "options": {"retry": {"maxAttempt": 3}}}},
            "compaction": {"auto": true, "keep": 3},
            "experimental": {"continue_loop_on_denied": true},
        });
        assert_eq!(
            warnings(value),
            [
                "session.json: unknown key modle",
                "session.json: unknown key provider.openai.foo",
                "session.json: unknown key provider.openai.options.retry.maxAttempt",
                "session.json: unknown key compaction.keep",
                "session.json: unknown key experimental.continue_loop_on_denied",
            ]
        );
    }

    #[test]
    fn provider_options_take_any_extra_key_as_opencode_hands_them_to_the_sdk() {
        let mut value =
            json!({"provider": {"openai": {"options": {"organization": "org-1", "setCacheKey": true}}}});
        assert_eq!(check_layer(&mut value, Path::new("s.json")).unwrap(), vec![]);
    }

    #[test]
    fn unknown_agent_keys_become_options_and_max_steps_becomes_steps() {
        let mut value = json!({"agent": {"build": {
            "reasoningEffort": "high",
            "options": {"store": false},
            "maxSteps": 7,
            "model": "openai/o3",
        }}});
        assert_eq!(check_layer(&mut value, Path::new("s.json")).unwrap(), vec![]);
        assert_eq!(
            value,
            json!({"agent": {"build": {
                "options": {"store": false, "reasoningEffort": "high"},
                "model": "openai/o3",
                "steps": 7,
            }}})
        );
    }

    #[test]
    fn steps_wins_over_max_steps_in_the_same_file() {
        let mut value = json!({"agent": {"build": {"steps": 3, "maxSteps": 7}}});
        check_layer(&mut value, Path::new("s.json")).unwrap();
        assert_eq!(value, json!({"agent": {"build": {"steps": 3}}}));
    }

    #[test]
    fn wrong_types_name_the_file_the_key_the_expectation_and_the_finding() {
        let cases = [
            (json!({"model": 5}), "session.json: model: expected a string, found number 5"),
            (json!([1]), "session.json: the whole file: expected an object, found an array"),
            (json!({"snapshot": "yes"}), r#"session.json: snapshot: expected a boolean, found string "yes""#),
            (
                json!({"agent": {"build": {"steps": "ten"}}}),
                r#"session.json: agent.build.steps: expected a positive integer, found string "ten""#,
            ),
            (
                json!({"agent": {"build": {"steps": 0}}}),
                "session.json: agent.build.steps: expected a positive integer, found number 0",
            ),
            (
                json!({"agent": {"review": {"mode": "sidekick"}}}),
                r#"session.json: agent.review.mode: expected one of `subagent`, `primary`, `all`, found string "sidekick""#,
            ),
            (
                json!({"provider": {"openai": {"options": {"baseURL": 8080}}}}),
                "session.json: provider.openai.options.baseURL: expected a string, found number 8080",
            ),
            (
                json!({"provider": {"openai": {"options": {"retry": {"maxAttempts": -1}}}}}),
                "session.json: provider.openai.options.retry.maxAttempts: expected a non-negative integer, found number -1",
            ),
            (
                json!({"provider": {"openai": {"options": {"timeout": true}}}}),
                "session.json: provider.openai.options.timeout: expected a positive number of milliseconds or false, found boolean true",
            ),
            (
                json!({"provider": {"ollama": {"models": {"llama3": {"limit": {"context": "8k"}}}}}}),
                r#"session.json: provider.ollama.models.llama3.limit.context: expected a non-negative integer, found string "8k""#,
            ),
            (
                json!({"provider": {"x": {"models": {"m": {"cost": {"tiers": [{"input": 1}]}}}}}}),
                "session.json: provider.x.models.m.cost.tiers.0.tier: expected a value, found nothing",
            ),
            (
                json!({"compaction": {"reserved": 1.5}}),
                "session.json: compaction.reserved: expected a non-negative integer, found number 1.5",
            ),
            (json!({"provider": []}), "session.json: provider: expected an object, found an array"),
            (
                json!({"permission": {"bash": {"git *": "yes"}}}),
                r#"session.json: permission.bash.git *: expected "allow", "ask" or "deny", found string "yes""#,
            ),
            (
                json!({"agent": {"plan": {"permission": {"edit": 1}}}}),
                r#"session.json: agent.plan.permission.edit: expected "allow", "ask" or "deny" or an object of pattern to action, found number 1"#,
            ),
            (
                json!({"permission": true}),
                r#"session.json: permission: expected "allow", "ask" or "deny" or an object of permission to rule, found boolean true"#,
            ),
        ];
        for (value, expected) in cases {
            assert_eq!(error(value), expected);
        }
    }

    #[test]
    fn an_empty_file_is_an_empty_config() {
        let mut value = Value::Null;
        assert_eq!(check_layer(&mut value, Path::new("s.json")).unwrap(), vec![]);
        assert_eq!(value, json!({}));
    }
}
