//! Cases of `overflow.json`: `max_output_tokens`, `usable` and `is_overflow` of one input.

use serde_json::{Map, Value, json};
use session_core::{
    TokenUsage, config::CompactionConfig, overflow::ModelLimit, overflow::OUTPUT_TOKEN_MAX,
    overflow::is_overflow, overflow::max_output_tokens, overflow::usable,
};

use crate::{Report, case_name, cases, json_equal};

/// Runs every case of the file.
pub fn run(doc: &Value, report: &mut Report) {
    for case in cases(doc, "cases") {
        let name = case_name(case);
        match map_case(case) {
            Ok((cfg, limit, tokens, output_token_max, expected)) => {
                let actual = json!({
                    "maxOutputTokens": max_output_tokens(&limit, output_token_max),
                    "usable": usable(&cfg, &limit, output_token_max),
                    "isOverflow": is_overflow(&cfg, &tokens, &limit, output_token_max),
                });
                report.compare(&name, &expected, &actual);
            }
            Err(detail) => report.record(&name, Err(detail)),
        }
    }
}

type Mapped = (CompactionConfig, ModelLimit, TokenUsage, u64, Value);

/// Turns a case's JSON into the arguments of the three functions and the expected object.
fn map_case(case: &Value) -> Result<Mapped, String> {
    let input = object(case.get("input"), "input")?;
    only_keys(input, &["cfg", "model", "tokens", "outputTokenMax"], "input")?;

    let cfg = object(input.get("cfg"), "input.cfg")?;
    only_keys(cfg, &["compaction"], "input.cfg")?;
    let compaction = match cfg.get("compaction") {
        None => CompactionConfig::default(),
        Some(c) => read_exactly(c, "cfg.compaction")?,
    };

    let model = object(input.get("model"), "input.model")?;
    only_keys(model, &["limit"], "input.model")?;
    let limit_json = object(model.get("limit"), "model.limit")?;
    only_keys(limit_json, &["context", "input", "output"], "model.limit")?;
    let limit: ModelLimit = serde_json::from_value(Value::Object(limit_json.clone()))
        .map_err(|e| format!("cannot map model.limit: {e}"))?;

    let tokens: TokenUsage = read_exactly(input.get("tokens").ok_or("input.tokens is missing")?, "tokens")?;

    let output_token_max = match input.get("outputTokenMax") {
        None => OUTPUT_TOKEN_MAX,
        Some(v) => v.as_u64().ok_or_else(|| format!("cannot map outputTokenMax {v}"))?,
    };
    let expected = case.get("expected").ok_or("expected is missing")?.clone();
    Ok((compaction, limit, tokens, output_token_max, expected))
}

// The helpers below are shared with `usage.rs`; main.rs, which would be their home, is not ours.

/// Reads `value` as `T` and fails unless `T` writes it back unchanged (no field dropped).
pub(crate) fn read_exactly<T: serde::de::DeserializeOwned + serde::Serialize>(
    value: &Value,
    what: &str,
) -> Result<T, String> {
    let parsed: T = serde_json::from_value(value.clone()).map_err(|e| format!("cannot map {what}: {e}"))?;
    let read_back = serde_json::to_value(&parsed).map_err(|e| e.to_string())?;
    if json_equal(value, &read_back) {
        Ok(parsed)
    } else {
        Err(format!("cannot map {what} {value}: it reads as {read_back}"))
    }
}

/// The JSON object at `value`, or why it is not one.
pub(crate) fn object<'a>(value: Option<&'a Value>, what: &str) -> Result<&'a Map<String, Value>, String> {
    match value {
        Some(Value::Object(o)) => Ok(o),
        Some(other) => Err(format!("{what} is not an object: {other}")),
        None => Err(format!("{what} is missing")),
    }
}

/// Fails on a key the mapping does not know, so no input is silently ignored.
pub(crate) fn only_keys(object: &Map<String, Value>, known: &[&str], what: &str) -> Result<(), String> {
    match object.keys().find(|k| !known.contains(&k.as_str())) {
        Some(key) => Err(format!("cannot map {what}.{key}")),
        None => Ok(()),
    }
}
