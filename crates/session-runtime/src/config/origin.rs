//! Where each key of the merged configuration came from: the highest layer that set it.

use std::path::PathBuf;

use serde_json::Value;

use super::layer::ConfigLayer;

/// One key of the merged configuration and the file that set it last.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyOrigin {
    /// The key: a top-level key, or `key.member` for each member of an object value (such as
    /// `provider.ollama` or `server.cors`).
    pub key: String,
    /// The layer whose value is the one in effect.
    pub path: PathBuf,
}

/// The origin of every key `layers` (lowest first) set, sorted by key; a higher layer that
/// sets a key again takes it over, as merging does.
pub fn key_origins(layers: &[ConfigLayer]) -> Vec<KeyOrigin> {
    let mut origins = std::collections::BTreeMap::new();
    for layer in layers {
        let Value::Object(map) = &layer.value else { continue };
        for (key, value) in map {
            match value {
                Value::Object(members) if !members.is_empty() => {
                    for member in members.keys() {
                        origins.insert(format!("{key}.{member}"), layer.path.clone());
                    }
                }
                _ => {
                    origins.insert(key.clone(), layer.path.clone());
                }
            }
        }
    }
    origins.into_iter().map(|(key, path)| KeyOrigin { key, path }).collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn layer(path: &str, value: Value) -> ConfigLayer {
        ConfigLayer { path: PathBuf::from(path), value, warnings: Vec::new(), untrusted: false }
    }

    #[test]
    fn the_highest_layer_that_sets_a_key_is_its_origin() {
        let layers = [
            layer("user.json", json!({"model": "a/b", "provider": {"x": {}, "y": {}}, "share": "manual"})),
            layer("session.json", json!({"model": "c/d", "provider": {"y": {"npm": "p"}}})),
        ];
        let origins: Vec<(String, String)> = key_origins(&layers)
            .into_iter()
            .map(|origin| (origin.key, origin.path.display().to_string()))
            .collect();
        let expected = [
            ("model", "session.json"),
            ("provider.x", "user.json"),
            ("provider.y", "session.json"),
            ("share", "user.json"),
        ];
        assert_eq!(origins, expected.map(|(k, p)| (k.to_owned(), p.to_owned())));
    }
}
