//! One skill file: its YAML front matter (`name`, `description`, `license`, `allowed-tools`,
//! `metadata`) and its body, the instructions; and the naming rules a name must meet.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::Value;

/// The longest name a skill may have.
pub(crate) const MAX_NAME_CHARS: usize = 64;

/// The longest description a skill may have.
pub(crate) const MAX_DESCRIPTION_CHARS: usize = 1024;

/// The metadata key that makes a skill a slash command.
pub const SLASH_METADATA: &str = "opencode/slash";

/// A skill file's fields, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Parsed {
    pub(crate) name: String,
    pub(crate) description: String,
    pub(crate) license: Option<String>,
    pub(crate) allowed_tools: Vec<String>,
    pub(crate) metadata: BTreeMap<String, String>,
    pub(crate) body: String,
}

/// What a file is, before it is parsed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum FileKind {
    /// A folder's `SKILL.md`: front matter required.
    Folder,
    /// A markdown file at a source's root: a skill only when it has front matter (a README
    /// beside the skill folders is not one); its name defaults to the file's stem.
    Loose,
}

/// Why a file is not a skill; `None` from [`parse`] means it is not one and says nothing.
pub(crate) type Problem = String;

/// Checks `name` against the rules of the Agent Skills format: 1 to 64 characters, lowercase
/// letters, digits and hyphens, neither starting nor ending with a hyphen nor holding two in a
/// row. (So a name never holds a path separator, a dot, markup or white space.)
pub fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("the name is empty".to_owned());
    }
    if name.chars().count() > MAX_NAME_CHARS {
        return Err(format!("the name is longer than {MAX_NAME_CHARS} characters"));
    }
    if !name.chars().all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-') {
        return Err(format!(
            "the name {name:?} may hold only lowercase letters, digits and hyphens (a-z, 0-9, -)"
        ));
    }
    if name.starts_with('-') || name.ends_with('-') || name.contains("--") {
        return Err(format!(
            "the name {name:?} may not start or end with a hyphen or hold two hyphens in a row"
        ));
    }
    Ok(())
}

/// The skill in `text`, read from `path`; `Ok(None)` when the file is not meant as a skill.
pub(crate) fn parse(text: &str, path: &Path, kind: FileKind) -> Result<Option<Parsed>, Problem> {
    let has_front_matter = text.strip_prefix('\u{feff}').unwrap_or(text).starts_with("---");
    if !has_front_matter {
        return match kind {
            FileKind::Folder => Err("no front matter: a SKILL.md starts with `---`, then `name:` and \
                                     `description:`, then `---`"
                .to_owned()),
            FileKind::Loose => Ok(None),
        };
    }
    let (fields, body) = crate::config::markdown::split_front_matter(text, path).map_err(|error| {
        // The error names the file; the problem is reported with the file already.
        let text = error.to_string();
        let prefix = format!("{}: ", path.display());
        text.strip_prefix(&prefix).map(str::to_owned).unwrap_or(text)
    })?;
    let name = match fields.get("name") {
        Some(Value::String(name)) => name.trim().to_owned(),
        Some(other) => return Err(format!("`name` must be text, not {}", kind_of(other))),
        None if kind == FileKind::Loose => {
            path.file_stem().and_then(|stem| stem.to_str()).unwrap_or_default().to_owned()
        }
        None => return Err("no `name` in the front matter".to_owned()),
    };
    check_name(&name)?;
    let description = match fields.get("description") {
        Some(Value::String(text)) if !text.trim().is_empty() => text.trim().to_owned(),
        Some(Value::String(_)) | None => {
            return Err(format!("skill {name:?} has no `description` (when to use it)"));
        }
        Some(other) => return Err(format!("`description` must be text, not {}", kind_of(other))),
    };
    if description.chars().count() > MAX_DESCRIPTION_CHARS {
        return Err(format!("the description of {name:?} is longer than {MAX_DESCRIPTION_CHARS} characters"));
    }
    let license = match fields.get("license") {
        Some(Value::String(license)) => Some(license.clone()),
        Some(Value::Null) | None => None,
        Some(other) => return Err(format!("`license` must be text, not {}", kind_of(other))),
    };
    let allowed_tools = match fields.get("allowed-tools") {
        // The format writes a space-separated list; Claude Code also takes a YAML list.
        Some(Value::String(tools)) => {
            tools.split([' ', ',']).filter(|t| !t.is_empty()).map(str::to_owned).collect()
        }
        Some(Value::Array(tools)) => tools.iter().filter_map(Value::as_str).map(str::to_owned).collect(),
        Some(Value::Null) | None => Vec::new(),
        Some(other) => return Err(format!("`allowed-tools` must be text or a list, not {}", kind_of(other))),
    };
    let metadata = match fields.get("metadata") {
        Some(Value::Object(map)) => map
            .iter()
            .map(|(key, value)| {
                let value = match value {
                    Value::String(text) => text.clone(),
                    other => other.to_string(),
                };
                (key.clone(), value)
            })
            .collect(),
        Some(Value::Null) | None => BTreeMap::new(),
        Some(other) => return Err(format!("`metadata` must be key: value pairs, not {}", kind_of(other))),
    };
    Ok(Some(Parsed { name, description, license, allowed_tools, metadata, body: body.to_owned() }))
}

impl Parsed {
    /// True when the skill's metadata makes it a slash command (`opencode/slash: true`).
    pub(crate) fn is_slash(&self) -> bool {
        self.metadata.get(SLASH_METADATA).is_some_and(|value| value.trim() == "true")
    }
}

fn kind_of(value: &Value) -> &'static str {
    match value {
        Value::Null => "nothing",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "text",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;

    use super::*;

    fn folder(text: &str) -> Result<Option<Parsed>, Problem> {
        parse(text, Path::new("/p/skills/x/SKILL.md"), FileKind::Folder)
    }

    #[test]
    fn the_front_matter_gives_the_fields_and_the_body_the_instructions() {
        let parsed = folder(
            "---\nname: pdf-tools\ndescription: Fills PDF forms\nlicense: MIT\nallowed-tools: Bash Read\n\
             metadata:\n  opencode/slash: true\n  version: 2\n---\n\n# PDF\n\nSteps.\n",
        )
        .unwrap()
        .unwrap();
        assert_eq!(parsed.name, "pdf-tools");
        assert_eq!(parsed.description, "Fills PDF forms");
        assert_eq!(parsed.license.as_deref(), Some("MIT"));
        assert_eq!(parsed.allowed_tools, ["Bash", "Read"]);
        assert_eq!(parsed.metadata.get("version").map(String::as_str), Some("2"));
        assert!(parsed.is_slash());
        assert_eq!(parsed.body, "\n# PDF\n\nSteps.\n");
    }

    #[test]
    fn names_follow_the_rules() {
        for good in ["a", "pdf", "pdf-tools-2", &"a".repeat(64)] {
            assert_eq!(check_name(good), Ok(()), "{good}");
        }
        for bad in
            ["", "PDF", "pdf_tools", "-pdf", "pdf-", "pdf--x", "../etc", "a/b", "a b", "ä", &"a".repeat(65)]
        {
            assert!(check_name(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn a_skill_without_name_or_description_is_a_problem() {
        assert!(folder("no front matter").unwrap_err().contains("no front matter"));
        assert!(folder("---\ndescription: x\n---\n").unwrap_err().contains("no `name`"));
        assert!(folder("---\nname: x\n---\n").unwrap_err().contains("no `description`"));
        assert!(folder("---\nname: x\ndescription: \"\"\n---\n").unwrap_err().contains("no `description`"));
        assert!(folder("---\nname: ../../x\ndescription: d\n---\n").unwrap_err().contains("may hold only"));
        assert!(folder("---\nname: [x\n---\n").unwrap_err().starts_with("front matter:"));
        assert!(folder("---\nname: x\ndescription: d\n").unwrap_err().contains("never closed"));
        let long = format!("---\nname: x\ndescription: {}\n---\n", "d".repeat(1025));
        assert!(folder(&long).unwrap_err().contains("longer than 1024"));
    }

    #[test]
    fn a_loose_markdown_file_is_a_skill_only_with_front_matter() {
        let path = Path::new("/p/skills/review.md");
        assert_eq!(parse("# Notes\n", path, FileKind::Loose), Ok(None));
        let parsed = parse("---\ndescription: Reviews\n---\nBody\n", path, FileKind::Loose).unwrap().unwrap();
        assert_eq!(parsed.name, "review");
        assert!(!parsed.is_slash());
    }
}
