//! The cut every tool result goes through unless the tool said itself whether it cut its
//! output (`metadata.truncated`), as OpenCode 1.18.34's tool wrapper does: an output past
//! [`MAX_OUTPUT_LINES`] lines or [`MAX_OUTPUT_BYTES`] bytes keeps its head, the whole of it is
//! saved in the `tool-output` folder ([`ToolOutputDir`]) and the model is told where; the
//! metadata says `truncated` either way (and `outputPath` when saved).

use std::io::Write as _;
use std::path::PathBuf;

use serde_json::Value;
use session_core::permission::{Action, Rule, evaluate};

use crate::tool::ToolSuccess;
use crate::tool_output::ToolOutputDir;
use crate::tools::{MAX_OUTPUT_BYTES, MAX_OUTPUT_LINES};

/// Gives `success` its `truncated` flag, cutting its output when it is too long, unless the
/// tool set the flag itself. `rules` are the calling agent's: one that may start subagents is
/// told to have the `explore` agent read a saved output, as OpenCode tells it.
pub(crate) fn settle(success: &mut ToolSuccess, saved_in: Option<&ToolOutputDir>, rules: &[Rule]) {
    if success.metadata.contains_key("truncated") {
        return;
    }
    let Some(head) = head(&success.output, MAX_OUTPUT_LINES, MAX_OUTPUT_BYTES) else {
        success.metadata.insert("truncated".to_owned(), Value::Bool(false));
        return;
    };
    let saved = saved_in.and_then(|dir| save(dir, &success.output));
    let delegate = evaluate("task", "*", &[rules]) != Action::Deny;
    let hint = hint(saved.as_ref().map(|path| path.display().to_string()), delegate);
    success.output = format!("{}\n\n...{} {} truncated...\n\n{hint}", head.text, head.removed, head.unit);
    success.metadata.insert("truncated".to_owned(), Value::Bool(true));
    if let Some(path) = saved {
        success.metadata.insert("outputPath".to_owned(), Value::String(path.display().to_string()));
    }
}

/// Whether [`settle`] may cut the output (and write a file): false when the tool said
/// whether it cut, or the output is short enough to see at once.
pub(crate) fn may_cut(success: &ToolSuccess) -> bool {
    !success.metadata.contains_key("truncated")
        && (success.output.len() > MAX_OUTPUT_BYTES
            || success.output.bytes().filter(|b| *b == b'\n').count() >= MAX_OUTPUT_LINES)
}

/// What the model is told after a cut output.
fn hint(path: Option<String>, delegate: bool) -> String {
    let Some(path) = path else {
        return "The tool call succeeded but the output was truncated.".to_owned();
    };
    let next = if delegate {
        "Use the Task tool to have explore agent process this file with Grep and Read (with offset/limit). \
         Do NOT read the full file yourself - delegate to save context."
    } else {
        "Use Grep to search the full content or Read with offset/limit to view specific sections."
    };
    format!("The tool call succeeded but the output was truncated. Full output saved to: {path}\n{next}")
}

/// Writes the whole output to a new file of `dir`; none when that fails (the cut output says
/// so without a path).
fn save(dir: &ToolOutputDir, output: &str) -> Option<PathBuf> {
    let saved = dir.create().and_then(|(mut file, path)| file.write_all(output.as_bytes()).map(|()| path));
    match saved {
        Ok(path) => Some(path),
        Err(error) => {
            tracing::warn!(%error, "a long tool output could not be saved whole");
            None
        }
    }
}

/// The head of a cut output and what was left out.
#[derive(Debug, PartialEq, Eq)]
struct Head {
    text: String,
    /// How many lines, or bytes, were left out.
    removed: usize,
    /// `lines`, or `bytes` when a line did not fit the byte limit.
    unit: &'static str,
}

/// The first lines of `text` within `max_lines` and `max_bytes` (newlines counted), or none
/// when all of it fits. A line that would pass the byte limit ends the head and the rest is
/// counted in bytes, else in lines.
fn head(text: &str, max_lines: usize, max_bytes: usize) -> Option<Head> {
    let lines: Vec<&str> = text.split('\n').collect();
    if lines.len() <= max_lines && text.len() <= max_bytes {
        return None;
    }
    let mut kept = 0;
    let mut bytes = 0;
    let mut over_bytes = false;
    for (index, line) in lines.iter().take(max_lines).enumerate() {
        let size = line.len() + usize::from(index > 0);
        if bytes + size > max_bytes {
            over_bytes = true;
            break;
        }
        bytes += size;
        kept += 1;
    }
    let text_kept = lines[..kept].join("\n");
    Some(if over_bytes {
        Head { text: text_kept, removed: text.len() - bytes, unit: "bytes" }
    } else {
        Head { text: text_kept, removed: lines.len() - kept, unit: "lines" }
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn success(output: &str) -> ToolSuccess {
        ToolSuccess::new("t", output, session_core::JsonObject::new())
    }

    #[test]
    fn a_short_output_is_marked_uncut() {
        let mut short = success("one\ntwo");
        settle(&mut short, None, &[]);
        assert_eq!(short.output, "one\ntwo");
        assert_eq!(short.metadata.get("truncated"), Some(&Value::Bool(false)));
    }

    #[test]
    fn a_tool_that_said_it_keeps_its_word() {
        let mut said = success(&"x\n".repeat(5000));
        said.metadata.insert("truncated".into(), Value::Bool(false));
        settle(&mut said, None, &[]);
        assert_eq!(said.output.len(), 10_000);
    }

    #[test]
    fn too_many_lines_keep_the_head_and_the_whole_is_saved() {
        let dir = tempfile::tempdir().unwrap_or_else(|e| panic!("{e}"));
        let store = ToolOutputDir::in_data_dir(dir.path());
        let text: String = (1..=2500).map(|i| format!("line {i}\n")).collect();
        let mut long = success(&text);
        settle(&mut long, Some(&store), &[Rule::new("task", "*", Action::Deny)]);
        let path = long.metadata.get("outputPath").and_then(Value::as_str).unwrap_or_default().to_owned();
        assert_eq!(std::fs::read_to_string(&path).unwrap_or_default(), text);
        assert!(long.output.starts_with("line 1\nline 2\n"), "{}", &long.output[..20]);
        // 2,501 pieces (the last one empty after the final newline), 2,000 kept.
        assert!(long.output.contains("line 2000\n\n...501 lines truncated...\n\n"), "{}", long.output);
        assert!(long.output.ends_with(&format!(
            "Full output saved to: {path}\nUse Grep to search the full content or Read with offset/limit to view specific sections."
        )));
        assert_eq!(long.metadata.get("truncated"), Some(&Value::Bool(true)));
    }

    #[test]
    fn a_byte_limit_counts_bytes_left_out() {
        let text = format!("{}\n{}", "a".repeat(10), "b".repeat(100));
        let cut = head(&text, 2000, 50).unwrap_or_else(|| panic!("cut"));
        assert_eq!(cut, Head { text: "a".repeat(10), removed: 101, unit: "bytes" });
        assert_eq!(head("short", 2000, 50), None);
    }

    #[test]
    fn an_agent_that_may_start_subagents_is_told_to_delegate() {
        assert!(hint(Some("/d/tool_1".into()), true).contains("Use the Task tool"));
        assert!(!hint(Some("/d/tool_1".into()), false).contains("Task tool"));
        assert!(!hint(None, true).contains("saved"));
    }
}
