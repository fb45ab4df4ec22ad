//! Layering: a deep merge of JSON values, higher layers winning.

use serde_json::Value;

/// Merges `higher` over `lower`: objects merge key by key, recursively; anything else in
/// `higher` (scalars, arrays, `null`, or an object over a non-object) replaces what `lower` had.
///
/// Keys keep the position they first had in `lower`, and new keys follow in `higher`'s order,
/// as OpenCode's merge does; the written order matters for permission rules.
pub fn merge(lower: Value, higher: Value) -> Value {
    match (lower, higher) {
        (Value::Object(mut base), Value::Object(over)) => {
            for (key, value) in over {
                match base.get_mut(&key) {
                    // Replacing in place keeps the key where `lower` had it.
                    Some(slot) => {
                        let old = std::mem::take(slot);
                        *slot = merge(old, value);
                    }
                    None => {
                        base.insert(key, value);
                    }
                }
            }
            Value::Object(base)
        }
        (_, higher) => higher,
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn objects_merge_deeply_and_the_rest_is_replaced() {
        let lower = json!({
            "model": "a/b",
            "provider": {"openai": {"options": {"apiKey": "k", "headers": {"x": "1"}}}},
            "list": [1, 2, 3],
            "permission": "allow",
        });
        let higher = json!({
            "provider": {"openai": {"options": {"headers": {"y": "2"}}}},
            "list": [4],
            "permission": {"bash": "ask"},
            "small_model": "c/d",
        });
        assert_eq!(
            merge(lower, higher),
            json!({
                "model": "a/b",
                "provider": {"openai": {"options": {"apiKey": "k", "headers": {"x": "1", "y": "2"}}}},
                "list": [4],
                "permission": {"bash": "ask"},
                "small_model": "c/d",
            })
        );
    }

    #[test]
    fn keys_keep_their_first_position_and_new_keys_follow() {
        let lower = json!({"*": "allow", "bash": {"*": "ask"}, "edit": "ask"});
        let higher = json!({"edit": "deny", "read": "allow", "bash": {"git *": "allow"}});
        let merged = merge(lower, higher);
        let keys: Vec<&String> = merged.as_object().unwrap().keys().collect();
        assert_eq!(keys, ["*", "bash", "edit", "read"]);
        let bash: Vec<&String> = merged["bash"].as_object().unwrap().keys().collect();
        assert_eq!(bash, ["*", "git *"]);
        assert_eq!(merged["edit"], json!("deny"));
    }
}
