//! `sandbox` (ours): how the commands the runtime starts on the model's behalf are confined.
//!
//! A string sets one field — `"off"`, `"read-only"` or `"workspace-write"` the mode,
//! `"best-effort"` or `"required"` the enforcement — and an object sets any of `mode`,
//! `enforcement`, `network`, `writable`, `exclude` and `git_writable`. Unset fields take the
//! defaults: `workspace-write`, `best-effort`, no network, no extra writable path, no
//! exclusion, `.git` read-only.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::de::{self, Deserializer, MapAccess, Visitor};
use serde::{Deserialize, Serialize};
use session_tools::{Enforcement, SandboxMode, SandboxSettings};

/// `sandbox`, as written (a string is read as the one field it names).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct SandboxConfig {
    /// `off`, `read-only` or `workspace-write` (the default).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<SandboxMode>,
    /// `best-effort` (the default: run unconfined where the kernel cannot confine, after a
    /// warning) or `required` (refuse to run commands there).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub enforcement: Option<Enforcement>,
    /// `true` lets commands open network sockets.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub network: Option<bool>,
    /// Paths writable besides the workspace and the temp dirs (`~/` is the home folder,
    /// a relative path is under the project folder).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub writable: Vec<String>,
    /// `bash` permission wildcards of command lines that run outside the sandbox.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// `true` leaves the workspace's `.git` writable.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub git_writable: Option<bool>,
}

/// The object form, field by field.
#[derive(Deserialize, Default)]
#[serde(default)]
struct Fields {
    mode: Option<SandboxMode>,
    enforcement: Option<Enforcement>,
    network: Option<bool>,
    writable: Vec<String>,
    exclude: Vec<String>,
    git_writable: Option<bool>,
}

/// The string spellings, for error messages.
const WORDS: &str = "\"off\", \"read-only\", \"workspace-write\", \"best-effort\" or \"required\"";

impl SandboxConfig {
    /// The config a single word sets, or `None` for an unknown word.
    pub fn from_word(word: &str) -> Option<Self> {
        let mut config = Self::default();
        match word {
            "off" => config.mode = Some(SandboxMode::Off),
            "read-only" => config.mode = Some(SandboxMode::ReadOnly),
            "workspace-write" => config.mode = Some(SandboxMode::WorkspaceWrite),
            "best-effort" => config.enforcement = Some(Enforcement::BestEffort),
            "required" => config.enforcement = Some(Enforcement::Required),
            _ => return None,
        }
        Some(config)
    }

    /// The settings the tools apply: `writable` paths made absolute (`~/` under `home`,
    /// relative ones under `project`).
    pub fn settings(&self, project: &Path, home: Option<&Path>) -> SandboxSettings {
        let writable = self
            .writable
            .iter()
            .map(|path| match (path.strip_prefix("~/"), home) {
                (Some(rest), Some(home)) => home.join(rest),
                _ if path == "~" => home.map_or_else(|| project.join(path), Path::to_path_buf),
                _ => project.join(path),
            })
            .collect::<Vec<PathBuf>>();
        SandboxSettings {
            mode: self.mode.unwrap_or_default(),
            enforcement: self.enforcement.unwrap_or_default(),
            network: self.network.unwrap_or(false),
            writable,
            exclude: self.exclude.clone(),
            git_writable: self.git_writable.unwrap_or(false),
        }
    }
}

impl<'de> Deserialize<'de> for SandboxConfig {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct WordOrObject;

        impl<'de> Visitor<'de> for WordOrObject {
            type Value = SandboxConfig;

            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                write!(f, "{WORDS}, or an object")
            }

            fn visit_str<E: de::Error>(self, word: &str) -> Result<SandboxConfig, E> {
                SandboxConfig::from_word(word)
                    .ok_or_else(|| E::invalid_value(de::Unexpected::Str(word), &WORDS))
            }

            fn visit_map<A: MapAccess<'de>>(self, map: A) -> Result<SandboxConfig, A::Error> {
                let fields = Fields::deserialize(de::value::MapAccessDeserializer::new(map))?;
                Ok(SandboxConfig {
                    mode: fields.mode,
                    enforcement: fields.enforcement,
                    network: fields.network,
                    writable: fields.writable,
                    exclude: fields.exclude,
                    git_writable: fields.git_writable,
                })
            }
        }

        deserializer.deserialize_any(WordOrObject)
    }
}

/// Removes from an untrusted project layer's `sandbox` whatever could loosen it; returns the
/// dotted key paths removed. Kept: `read-only`, `required`, `network: false` and
/// `git_writable: false`; a kept word becomes the object it stands for, so that it merges
/// field by field with the user's settings instead of replacing them.
pub(crate) fn restrict_untrusted_sandbox(
    root: &mut serde_json::Map<String, serde_json::Value>,
) -> Vec<String> {
    use serde_json::Value;
    let mut removed = Vec::new();
    let tightening = |key: &str, value: &Value| match (key, value) {
        ("mode", Value::String(mode)) => mode == "read-only",
        ("enforcement", Value::String(enforcement)) => enforcement == "required",
        ("network" | "git_writable", Value::Bool(on)) => !on,
        ("writable" | "exclude" | "mode" | "enforcement" | "network" | "git_writable", _) => false,
        // Unknown keys do nothing; the check warns about them.
        _ => true,
    };
    match root.get_mut("sandbox") {
        Some(slot @ Value::String(_)) => {
            let word = slot.as_str().unwrap_or_default();
            let kept = match word {
                "read-only" => Some(serde_json::json!({"mode": "read-only"})),
                "required" => Some(serde_json::json!({"enforcement": "required"})),
                _ => None,
            };
            match kept {
                Some(object) => *slot = object,
                None => {
                    root.remove("sandbox");
                    removed.push("sandbox".to_owned());
                }
            }
        }
        Some(Value::Object(fields)) => fields.retain(|key, value| {
            let keep = tightening(key, value);
            if !keep {
                removed.push(format!("sandbox.{key}"));
            }
            keep
        }),
        _ => {}
    }
    removed
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use serde_json::json;

    use super::*;

    #[test]
    fn a_word_sets_one_field_and_an_object_any() {
        let word: SandboxConfig = serde_json::from_value(json!("required")).unwrap();
        assert_eq!(word, SandboxConfig { enforcement: Some(Enforcement::Required), ..Default::default() });
        let object: SandboxConfig = serde_json::from_value(json!({
            "mode": "read-only", "network": true, "writable": ["~/.cache", "build"], "exclude": ["git push*"],
            "git_writable": true
        }))
        .unwrap();
        let settings = object.settings(Path::new("/p"), Some(Path::new("/home/me")));
        assert_eq!(settings.mode, SandboxMode::ReadOnly);
        assert_eq!(settings.enforcement, Enforcement::BestEffort);
        assert!(settings.network && settings.git_writable);
        assert_eq!(settings.writable, vec![PathBuf::from("/home/me/.cache"), PathBuf::from("/p/build")]);
        assert_eq!(settings.exclude, vec!["git push*".to_owned()]);
        let defaults = SandboxConfig::default().settings(Path::new("/p"), None);
        assert_eq!(defaults, SandboxSettings::default());
    }

    #[test]
    fn an_untrusted_layer_cannot_loosen_the_sandbox() {
        for (written, kept, removed) in [
            (json!("off"), None, vec!["sandbox"]),
            (json!("best-effort"), None, vec!["sandbox"]),
            (json!("workspace-write"), None, vec!["sandbox"]),
            (json!("read-only"), Some(json!({"mode": "read-only"})), vec![]),
            (json!("required"), Some(json!({"enforcement": "required"})), vec![]),
            (
                json!({"mode": "off", "network": true, "writable": ["/"], "exclude": ["*"], "git_writable": true,
                       "enforcement": "best-effort"}),
                Some(json!({})),
                vec![
                    "sandbox.mode",
                    "sandbox.network",
                    "sandbox.writable",
                    "sandbox.exclude",
                    "sandbox.git_writable",
                    "sandbox.enforcement",
                ],
            ),
            (
                json!({"mode": "read-only", "network": false, "enforcement": "required", "git_writable": false}),
                Some(
                    json!({"mode": "read-only", "network": false, "enforcement": "required", "git_writable": false}),
                ),
                vec![],
            ),
        ] {
            let serde_json::Value::Object(mut root) = json!({"sandbox": written.clone()}) else {
                unreachable!()
            };
            let mut got = restrict_untrusted_sandbox(&mut root);
            got.sort();
            let mut want: Vec<String> = removed.iter().map(|s| (*s).to_owned()).collect();
            want.sort();
            assert_eq!(got, want, "{written}");
            assert_eq!(root.get("sandbox").cloned(), kept, "{written}");
        }
    }

    #[test]
    fn bad_values_are_refused_with_the_spellings() {
        let error = serde_json::from_value::<SandboxConfig>(json!("loose")).unwrap_err().to_string();
        assert!(error.contains("\"workspace-write\""), "{error}");
        assert!(serde_json::from_value::<SandboxConfig>(json!(["off"])).is_err());
        assert!(serde_json::from_value::<SandboxConfig>(json!({"mode": "open"})).is_err());
    }
}
