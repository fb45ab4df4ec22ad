//! `skill`: loads one of the skills the system prompt lists (OpenCode 1.18.34's `tool/skill.ts`):
//! the skill's instructions, its base directory and a sample of the files beside it.
//!
//! The skills themselves are found and checked when the runtime starts (session-runtime's
//! `skills` module: folders, name rules, size caps, symlinks); this tool only serves what was
//! loaded, asks the `skill` permission for the name, and lists the folder's files without
//! reading them.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use async_trait::async_trait;
use schemars::JsonSchema;
use serde::Deserialize;
use serde_json::Value;
use session_core::permission::{Action, PermissionRequest, evaluate};

use super::{blocking, object};
use crate::context::ToolContext;
use crate::error::ToolError;
use crate::tool::{ToolSuccess, TypedTool};

/// The tool's name, and the permission it asks.
pub const SKILL_TOOL: &str = "skill";

/// The file that makes a folder a skill.
pub const SKILL_FILE: &str = "SKILL.md";

/// How many of a skill's files the output lists, as OpenCode samples them.
pub const SKILL_FILES_LISTED: usize = 10;

/// How many files of a skill's folder are looked at before the sample is taken: a folder of a
/// cloned repository may hold any number.
const SKILL_FILES_SCANNED: usize = 1_000;

const DESCRIPTION: &str = "Loads one of the skills the system prompt lists under available_skills: \
its instructions for a kind of task, the folder they were written for and some of the files there (scripts, \
references, templates). Load a skill as soon as the task matches its description, then follow it; paths in it \
are relative to its base directory. Give the name exactly as listed.";

/// One loaded skill: what the system prompt lists and what the tool returns.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skill {
    /// Its name (checked against the naming rules when it was loaded).
    pub name: String,
    /// When to use it, as the system prompt lists it.
    pub description: String,
    /// The file it was read from: a folder's `SKILL.md`, or a markdown file at a source's root.
    pub location: PathBuf,
    /// The instructions: the file's body after its front matter.
    pub content: Arc<str>,
}

impl Skill {
    /// The folder relative paths in the instructions start from.
    pub fn base_dir(&self) -> &Path {
        self.location.parent().unwrap_or(&self.location)
    }

    /// True for a folder's `SKILL.md` (whose other files are its resources), false for a
    /// markdown file at a source's root (whose neighbours are other skills).
    pub fn has_folder(&self) -> bool {
        self.location.file_name().is_some_and(|name| name == SKILL_FILE)
    }
}

// The arguments, as OpenCode's skill tool takes them (a doc comment here would be the schema's
// description, which OpenCode's schema has none of).
#[derive(Debug, Deserialize, JsonSchema)]
pub(crate) struct SkillArgs {
    /// The skill's name, exactly as available_skills lists it
    name: String,
}

/// The `skill` tool over the skills a runtime loaded.
#[derive(Debug, Clone, Default)]
pub struct SkillTool {
    skills: Arc<[Skill]>,
}

impl SkillTool {
    /// The tool serving `skills`.
    pub fn new(skills: Arc<[Skill]>) -> Self {
        Self { skills }
    }

    /// The skills it serves.
    pub fn skills(&self) -> &[Skill] {
        &self.skills
    }
}

#[async_trait]
impl TypedTool for SkillTool {
    const NAME: &'static str = SKILL_TOOL;
    const DESCRIPTION: &'static str = DESCRIPTION;
    type Input = SkillArgs;

    async fn run(&self, input: SkillArgs, ctx: &ToolContext) -> Result<ToolSuccess, ToolError> {
        let Some(skill) = self.skills.iter().find(|skill| skill.name == input.name) else {
            // A skill the rules deny is not named here either: it is as if it did not exist.
            let mut available: Vec<&str> = self
                .skills
                .iter()
                .filter(|skill| {
                    ctx.deciding_rule(SKILL_TOOL, &skill.name).is_none_or(|r| r.action != Action::Deny)
                })
                .map(|skill| skill.name.as_str())
                .collect();
            available.sort_unstable();
            let available = if available.is_empty() { "none".to_owned() } else { available.join(", ") };
            return Err(ToolError::Failed {
                message: format!("Skill \"{}\" not found. Available skills: {available}", input.name),
            });
        };
        ctx.ask(PermissionRequest {
            permission: SKILL_TOOL.to_owned(),
            patterns: vec![skill.name.clone()],
            always: vec![skill.name.clone()],
            metadata: session_core::JsonObject::new(),
        })
        .await?;
        let files = match skill.has_folder() {
            true => {
                let dir = skill.base_dir().to_path_buf();
                let cancel = ctx.abort().clone();
                blocking(move || Ok(sample_files(&dir, &cancel))).await?
            }
            false => Vec::new(),
        };
        let dir = skill.base_dir().display().to_string();
        Ok(ToolSuccess::new(
            format!("Loaded skill: {}", skill.name),
            skill_output(skill, &files),
            object([("name", Value::String(skill.name.clone())), ("dir", Value::String(dir))]),
        ))
    }
}

/// The tool's output, worded as OpenCode 1.18.34 words it.
pub fn skill_output(skill: &Skill, files: &[PathBuf]) -> String {
    let files: Vec<String> = files.iter().map(|file| format!("<file>{}</file>", file.display())).collect();
    [
        format!("<skill_content name=\"{}\">", skill.name),
        format!("# Skill: {}", skill.name),
        String::new(),
        skill.content.trim().to_owned(),
        String::new(),
        format!("Base directory for this skill: {}", skill.base_dir().display()),
        "Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory."
            .to_owned(),
        "Note: file list is sampled.".to_owned(),
        String::new(),
        "<skill_files>".to_owned(),
        files.join("\n"),
        "</skill_files>".to_owned(),
        "</skill_content>".to_owned(),
    ]
    .join("\n")
}

/// Up to [`SKILL_FILES_LISTED`] files below `dir` other than `SKILL.md` files, by path: as
/// ripgrep lists them for OpenCode (hidden files included, `.gitignore` respected, `.git`
/// skipped, links neither followed nor listed), in a fixed order. Nothing is read.
fn sample_files(dir: &Path, cancel: &tokio_util::sync::CancellationToken) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for entry in super::search::walker(dir, None).build() {
        if cancel.is_cancelled() || files.len() >= SKILL_FILES_SCANNED {
            break;
        }
        let Ok(entry) = entry else { continue };
        if !entry.file_type().is_some_and(|kind| kind.is_file()) || entry.file_name() == SKILL_FILE {
            continue;
        }
        files.push(entry.into_path());
    }
    files.sort();
    files.truncate(SKILL_FILES_LISTED);
    files
}

/// The skills of `skills` that `ruleset` does not deny, by name: what the system prompt lists.
pub fn available_skills<'a>(
    skills: &'a [Skill],
    ruleset: &[session_core::permission::Rule],
) -> Vec<&'a Skill> {
    let mut listed: Vec<&Skill> =
        skills.iter().filter(|skill| evaluate(SKILL_TOOL, &skill.name, &[ruleset]) != Action::Deny).collect();
    listed.sort_by(|a, b| a.name.cmp(&b.name));
    listed
}

/// The system prompt's part about skills, laid out as OpenCode 1.18.34 lays it out (its own
/// wording): every skill the rules leave, by name, with its description and file.
pub fn skills_prompt(skills: &[&Skill]) -> String {
    let mut lines = vec![
        "Skills are instructions written for particular kinds of tasks.".to_owned(),
        "When a task matches a skill's description, load the skill with the skill tool and follow it."
            .to_owned(),
    ];
    if skills.is_empty() {
        lines.push("There are no skills to load.".to_owned());
        return lines.join("\n");
    }
    lines.push("<available_skills>".to_owned());
    for skill in skills {
        lines.push("  <skill>".to_owned());
        lines.push(format!("    <name>{}</name>", skill.name));
        lines.push(format!("    <description>{}</description>", skill.description));
        lines.push(format!("    <location>{}</location>", escape(&skill.location.display().to_string())));
        lines.push("  </skill>".to_owned());
    }
    lines.push("</available_skills>".to_owned());
    lines.join("\n")
}

/// XML escaping of the five special characters, as OpenCode escapes a location.
fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
        .replace('\'', "&#39;")
}

#[cfg(test)]
mod tests {
    use pretty_assertions::assert_eq;
    use session_core::permission::Rule;

    use super::*;
    use crate::tool::Tool as _;

    fn skill(dir: &Path, name: &str) -> Skill {
        Skill {
            name: name.to_owned(),
            description: format!("Does {name}"),
            location: dir.join(name).join(SKILL_FILE),
            content: Arc::from("\n# Title\n\nSteps.\n\n"),
        }
    }

    #[test]
    fn the_schema_is_opencodes_and_compiles() {
        let tool = SkillTool::default();
        let schema = tool.parameters();
        assert_eq!(
            schema,
            serde_json::json!({
                "type": "object",
                "properties": {"name": {"type": "string", "description": "The skill's name, exactly as available_skills lists it"}},
                "required": ["name"]
            })
        );
        assert!(jsonschema::draft7::meta::validate(&schema).is_ok());
        assert!(jsonschema::meta::validate(&schema).is_ok());
    }

    #[test]
    fn the_output_names_the_base_directory_and_the_files() {
        let dir = Path::new("/p/.opencode/skills");
        let skill = skill(dir, "alpha");
        let files = [dir.join("alpha/REF.md"), dir.join("alpha/scripts/run.sh")];
        assert_eq!(
            skill_output(&skill, &files),
            "<skill_content name=\"alpha\">\n# Skill: alpha\n\n# Title\n\nSteps.\n\n\
             Base directory for this skill: /p/.opencode/skills/alpha\n\
             Relative paths in this skill (e.g., scripts/, reference/) are relative to this base directory.\n\
             Note: file list is sampled.\n\n<skill_files>\n\
             <file>/p/.opencode/skills/alpha/REF.md</file>\n<file>/p/.opencode/skills/alpha/scripts/run.sh</file>\n\
             </skill_files>\n</skill_content>"
        );
        // No files: the list's line is empty, as OpenCode joins it.
        assert!(skill_output(&skill, &[]).ends_with("<skill_files>\n\n</skill_files>\n</skill_content>"));
    }

    #[test]
    fn the_prompt_lists_what_the_rules_leave_by_name() {
        let dir = Path::new("/p/a&b");
        let skills = [skill(dir, "zeta"), skill(dir, "alpha"), skill(dir, "secret")];
        let rules = vec![Rule::new("*", "*", Action::Allow), Rule::new("skill", "secret", Action::Deny)];
        let listed = available_skills(&skills, &rules);
        assert_eq!(listed.iter().map(|s| s.name.as_str()).collect::<Vec<_>>(), ["alpha", "zeta"]);
        let prompt = skills_prompt(&listed);
        assert!(prompt.starts_with(
            "Skills are instructions written for particular kinds of tasks.\n\
             When a task matches a skill's description, load the skill with the skill tool and follow it.\n<available_skills>\n  <skill>\n    <name>alpha</name>\n    <description>Does alpha</description>\n    <location>/p/a&amp;b/alpha/SKILL.md</location>\n  </skill>"
        ));
        assert!(prompt.ends_with("</available_skills>"));
        assert!(skills_prompt(&[]).ends_with("\nThere are no skills to load."));
    }

    #[test]
    fn the_sample_leaves_out_skill_files_links_and_ignored_files_and_is_capped() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        std::fs::write(root.join(SKILL_FILE), "x").unwrap();
        std::fs::create_dir_all(root.join("nested")).unwrap();
        std::fs::write(root.join("nested").join(SKILL_FILE), "x").unwrap();
        std::fs::write(root.join(".hidden"), "x").unwrap();
        std::fs::write(root.join(".gitignore"), "ignored.txt\n").unwrap();
        std::fs::write(root.join("ignored.txt"), "x").unwrap();
        std::os::unix::fs::symlink("/etc/passwd", root.join("link")).unwrap();
        for i in 0..12 {
            std::fs::write(root.join(format!("f{i:02}")), "x").unwrap();
        }
        let files = sample_files(root, &tokio_util::sync::CancellationToken::new());
        let names: Vec<String> =
            files.iter().map(|f| f.strip_prefix(root).unwrap().display().to_string()).collect();
        assert_eq!(names, [".gitignore", ".hidden", "f00", "f01", "f02", "f03", "f04", "f05", "f06", "f07"]);
    }
}
