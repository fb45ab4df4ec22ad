//! `{env:VAR}` and `{file:path}` substitutions, as OpenCode applies them to a config file's
//! text before parsing it.
//!
//! The outside world comes in through [`Resolver`], so the rules are testable without touching
//! the process environment: the binary builds an [`FsResolver`] from the environment it read once.

use std::collections::HashMap;
use std::io;
use std::path::{Path, PathBuf};

use super::error::ConfigError;

/// What substitutions and config loading read from the outside world.
pub trait Resolver {
    /// The value of environment variable `name`, if it is set.
    fn env_var(&self, name: &str) -> Option<String>;
    /// The user's home directory, which `~/` in a `{file:...}` reference stands for.
    fn home_dir(&self) -> Option<PathBuf>;
    /// The whole text of the file at `path`.
    fn read_to_string(&self, path: &Path) -> io::Result<String>;
}

/// A [`Resolver`] over the real filesystem and an environment handed in by the caller.
#[derive(Debug, Clone, Default)]
pub struct FsResolver {
    env: HashMap<String, String>,
    home: Option<PathBuf>,
    /// The variables asked for that were unset or empty, so an error can name them (an
    /// `{env:VAR}` API key that came out empty).
    unset: std::cell::RefCell<std::collections::BTreeSet<String>>,
}

impl FsResolver {
    /// A resolver that sees exactly these variables and this home directory.
    pub fn new(env: impl IntoIterator<Item = (String, String)>, home: Option<PathBuf>) -> Self {
        Self { env: env.into_iter().collect(), home, unset: Default::default() }
    }

    /// The variables substitutions asked for that were unset or empty, sorted.
    pub fn unset_variables(&self) -> Vec<String> {
        self.unset.borrow().iter().cloned().collect()
    }
}

impl Resolver for FsResolver {
    fn env_var(&self, name: &str) -> Option<String> {
        let value = self.env.get(name).cloned();
        if value.as_deref().is_none_or(str::is_empty) {
            self.unset.borrow_mut().insert(name.to_owned());
        }
        value
    }

    fn home_dir(&self) -> Option<PathBuf> {
        self.home.clone()
    }

    fn read_to_string(&self, path: &Path) -> io::Result<String> {
        read_regular_file(path, MAX_REFERENCED_BYTES)
    }
}

/// The largest config file or `{file:...}` target read, in bytes.
pub const MAX_REFERENCED_BYTES: u64 = 4 * 1024 * 1024;

/// The text of the regular file at `path`, refused when it is anything else (`{file:/dev/zero}`
/// would never end, a FIFO would block) or larger than `cap` bytes.
pub fn read_regular_file(path: &Path, cap: u64) -> io::Result<String> {
    let (file, meta) = open_regular(path)?;
    read_open(file, &meta, cap)
}

/// Like [`read_regular_file`], but only when the file opened lies inside `root` with every
/// symlink resolved, of the file and of every folder above it (a committed `AGENTS.md` that
/// links to `~/.ssh/id_rsa`, or a `.opencode` folder that links out of the project, is
/// refused with [`io::ErrorKind::PermissionDenied`]). The file is opened first and its device
/// and inode compared with those of the resolved path, so a link swapped in between is caught.
pub fn read_regular_file_within(path: &Path, root: &Path, cap: u64) -> io::Result<String> {
    use std::os::unix::fs::MetadataExt as _;
    let root = root.canonicalize()?;
    let (file, meta) = open_regular(path)?;
    let real = path.canonicalize()?;
    let outside = |why: &str| {
        io::Error::new(io::ErrorKind::PermissionDenied, format!("{why}, outside {}", root.display()))
    };
    if !real.starts_with(&root) {
        return Err(outside(&format!("it resolves to {}", real.display())));
    }
    let named = std::fs::metadata(&real)?;
    if (named.dev(), named.ino()) != (meta.dev(), meta.ino()) {
        return Err(outside("it changed while it was opened"));
    }
    read_open(file, &meta, cap)
}

fn open_regular(path: &Path) -> io::Result<(std::fs::File, std::fs::Metadata)> {
    use std::os::unix::fs::OpenOptionsExt as _;
    // Non-blocking, so opening a FIFO returns at once; the type check below refuses it.
    let file = std::fs::OpenOptions::new().read(true).custom_flags(nix::libc::O_NONBLOCK).open(path)?;
    let meta = file.metadata()?;
    if !meta.is_file() {
        return Err(io::Error::new(io::ErrorKind::InvalidInput, "not a regular file"));
    }
    Ok((file, meta))
}

fn read_open(file: std::fs::File, meta: &std::fs::Metadata, cap: u64) -> io::Result<String> {
    use std::io::Read as _;
    if meta.len() > cap {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("larger than {cap} bytes")));
    }
    let mut text = String::new();
    // The length can change after the check: the cap holds whatever the file does.
    file.take(cap.saturating_add(1)).read_to_string(&mut text)?;
    if text.len() as u64 > cap {
        return Err(io::Error::new(io::ErrorKind::InvalidData, format!("larger than {cap} bytes")));
    }
    Ok(text)
}

const ENV_OPEN: &str = "{env:";
const FILE_OPEN: &str = "{file:";

/// Applies the substitutions to the text of the config file at `path`.
///
/// As in OpenCode:
/// - `{env:VAR}` becomes the variable's value verbatim (not JSON-escaped, so it may also supply
///   a number or a whole JSON fragment); an unset or empty variable becomes the empty string.
///   Every occurrence is replaced, comments included.
/// - `{file:path}` then becomes the file's content, trimmed and escaped for a JSON string.
///   `~/` starts at the home directory and a relative path at the config file's directory. A
///   reference on a line whose text before it starts with `//` is left as written. A missing
///   file is an error.
pub fn substitute(text: &str, path: &Path, resolver: &dyn Resolver) -> Result<String, ConfigError> {
    let text = replace_tokens(text, ENV_OPEN, |_, name| Ok(resolver.env_var(name).unwrap_or_default()))?;
    let dir = path.parent().unwrap_or_else(|| Path::new(""));
    replace_tokens(&text, FILE_OPEN, |before, reference| {
        let line = before.rfind('\n').map_or(before, |newline| &before[newline + 1..]);
        let token = format!("{FILE_OPEN}{reference}}}");
        if line.trim_start().starts_with("//") {
            return Ok(token);
        }
        let resolved = resolve_reference(reference, dir, resolver);
        let content = resolver.read_to_string(&resolved).map_err(|source| ConfigError::FileReference {
            path: path.to_path_buf(),
            token,
            resolved,
            source,
        })?;
        Ok(json_string_body(content.trim()))
    })
}

/// Replaces every `{open}NAME}` token (NAME non-empty, without `}`), as OpenCode's
/// `/\{env:([^}]+)\}/g` does; `replace` gets the text before the token and NAME.
fn replace_tokens(
    text: &str,
    open: &str,
    mut replace: impl FnMut(&str, &str) -> Result<String, ConfigError>,
) -> Result<String, ConfigError> {
    let mut out = String::with_capacity(text.len());
    let mut done = 0;
    let mut search = 0;
    while let Some(found) = text[search..].find(open) {
        let start = search + found;
        let name_start = start + open.len();
        match text[name_start..].find('}') {
            Some(len) if len > 0 => {
                out.push_str(&text[done..start]);
                out.push_str(&replace(&text[..start], &text[name_start..name_start + len])?);
                done = name_start + len + 1;
                search = done;
            }
            // `{env:}` or an unclosed token is no match; look again after the opening text.
            _ => search = name_start,
        }
    }
    out.push_str(&text[done..]);
    Ok(out)
}

fn resolve_reference(reference: &str, dir: &Path, resolver: &dyn Resolver) -> PathBuf {
    if let Some(rest) = reference.strip_prefix("~/")
        && let Some(home) = resolver.home_dir()
    {
        return home.join(rest);
    }
    let path = Path::new(reference);
    if path.is_absolute() { path.to_path_buf() } else { dir.join(path) }
}

/// The text as it appears between the quotes of a JSON string.
fn json_string_body(text: &str) -> String {
    let quoted = serde_json::Value::from(text).to_string();
    // The serialised string always starts and ends with a quote.
    quoted[1..quoted.len() - 1].to_owned()
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use pretty_assertions::assert_eq;

    use super::*;

    struct Fake {
        env: HashMap<&'static str, &'static str>,
        files: HashMap<PathBuf, &'static str>,
    }

    impl Resolver for Fake {
        fn env_var(&self, name: &str) -> Option<String> {
            self.env.get(name).map(|v| (*v).to_owned())
        }
        fn home_dir(&self) -> Option<PathBuf> {
            Some(PathBuf::from("/home/me"))
        }
        fn read_to_string(&self, path: &Path) -> io::Result<String> {
            self.files
                .get(path)
                .map(|v| (*v).to_owned())
                .ok_or_else(|| io::Error::from(io::ErrorKind::NotFound))
        }
    }

    fn fake() -> Fake {
        Fake {
            env: HashMap::from([("KEY", "sk-1"), ("EMPTY", ""), ("NUM", "42")]),
            files: HashMap::from([
                (PathBuf::from("/proj/prompts/build.txt"), "  line one\n\"quoted\"\tend\n\n"),
                (PathBuf::from("/home/me/.secrets/key"), "sk-file\n"),
                (PathBuf::from("/abs/key"), "abs"),
            ]),
        }
    }

    fn run(text: &str) -> Result<String, ConfigError> {
        substitute(text, Path::new("/proj/session.json"), &fake())
    }

    #[test]
    fn env_values_are_inserted_verbatim_and_missing_ones_are_empty() {
        assert_eq!(
            run(r#"{"a": "{env:KEY}", "b": "{env:MISSING}", "c": "{env:EMPTY}", "n": {env:NUM}}"#).unwrap(),
            r#"{"a": "sk-1", "b": "", "c": "", "n": 42}"#
        );
    }

    #[test]
    fn the_resolver_names_the_variables_that_were_unset_or_empty() {
        let resolver =
            FsResolver::new([("SET".to_owned(), "v".to_owned()), ("EMPTY".to_owned(), String::new())], None);
        let text = substitute(
            r#"{"a": "{env:SET}", "b": "{env:EMPTY}", "c": "{env:GONE}"}"#,
            Path::new("x.json"),
            &resolver,
        )
        .unwrap();
        assert_eq!(text, r#"{"a": "v", "b": "", "c": ""}"#);
        assert_eq!(resolver.unset_variables(), ["EMPTY", "GONE"]);
    }

    #[test]
    fn malformed_tokens_are_left_alone() {
        assert_eq!(run(r#"{"a": "{env:}"}"#).unwrap(), r#"{"a": "{env:}"}"#);
        assert_eq!(run(r#""{env:KEY"#).unwrap(), r#""{env:KEY"#);
        // As with OpenCode's `[^}]+`, a name runs to the first `}`, whatever it holds.
        assert_eq!(run("{env:{env:KEY}}").unwrap(), "}");
    }

    #[test]
    fn file_content_is_trimmed_and_escaped() {
        assert_eq!(
            run(r#"{"prompt": "{file:./prompts/build.txt}"}"#).unwrap(),
            r#"{"prompt": "line one\n\"quoted\"\tend"}"#
        );
        assert_eq!(run(r#""{file:prompts/build.txt}""#).unwrap(), r#""line one\n\"quoted\"\tend""#);
    }

    #[test]
    fn file_paths_resolve_against_home_and_absolute_paths() {
        assert_eq!(run(r#""{file:~/.secrets/key}" "{file:/abs/key}""#).unwrap(), r#""sk-file" "abs""#);
    }

    #[test]
    fn env_runs_before_file_so_a_file_path_may_use_a_variable() {
        let mut resolver = fake();
        resolver.env.insert("DIR", "prompts");
        let text = substitute(r#""{file:{env:DIR}/build.txt}""#, Path::new("/proj/session.json"), &resolver);
        assert_eq!(text.unwrap(), r#""line one\n\"quoted\"\tend""#);
    }

    #[test]
    fn file_references_on_comment_lines_are_left_as_written() {
        let text = "{\n  // \"prompt\": \"{file:missing.txt}\"\n  \"a\": 1 // {file:/abs/key}\n}";
        assert_eq!(run(text).unwrap(), "{\n  // \"prompt\": \"{file:missing.txt}\"\n  \"a\": 1 // abs\n}");
    }

    #[test]
    fn a_missing_file_names_the_reference_and_the_resolved_path() {
        let err = run(r#""{file:nope.txt}""#).unwrap_err();
        assert_eq!(
            err.to_string(),
            r#"/proj/session.json: bad file reference: "{file:nope.txt}" /proj/nope.txt does not exist"#
        );
    }

    #[test]
    fn references_read_regular_files_only_and_within_the_cap() {
        let dir = std::env::temp_dir().join(format!("session-subst-{}", std::process::id()));
        let _ = std::fs::create_dir_all(&dir);
        let small = dir.join("small.txt");
        let _ = std::fs::write(&small, "ok");
        assert_eq!(read_regular_file(&small, 8).ok().as_deref(), Some("ok"));
        assert!(read_regular_file(&small, 1).is_err(), "over the cap");
        let zero = read_regular_file(Path::new("/dev/zero"), MAX_REFERENCED_BYTES);
        assert_eq!(
            zero.map_err(|e| e.to_string()),
            Err("not a regular file".to_owned()),
            "a device never ends"
        );
        let _ = std::fs::remove_dir_all(&dir);
    }
}
