//! `cargo xtask release VERSION [--execute] [--profile NAME]`: one workspace version for every
//! crate, a changelog section from the commits since the last tag, `cargo package` of every
//! publishable crate (each verified against the others at the new version), the `session`
//! binary in an archive with its SHA-256 under `target/dist/`, and the tag to push.
//!
//! A dry run (the default) does all of it and then puts `Cargo.toml`, `Cargo.lock` and
//! `CHANGELOG.md` back as they were; `--execute` keeps them. Either way the tree must be clean
//! first, and nothing is committed, tagged or pushed: the release steps are printed.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{Context, Result, bail, ensure};
use sha2::{Digest, Sha256};

/// The binary the archive carries.
const BINARY: &str = "session";
/// The package that builds it.
const BINARY_PACKAGE: &str = "session-cli";
/// Files of the repository root copied into the archive beside the binary, when present.
const ARCHIVE_EXTRAS: &[&str] = &["README.md", "CHANGELOG.md", "LICENSE-MIT", "LICENSE-APACHE"];
/// Files a release edits; a dry run restores them.
const EDITED: &[&str] = &["Cargo.toml", "Cargo.lock", "CHANGELOG.md"];

/// What `cargo xtask release` was asked to do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseOptions {
    /// The new version, without the `v`.
    pub version: String,
    /// Keep the edited files (a dry run restores them).
    pub execute: bool,
    /// The cargo profile the binary is built with.
    pub profile: String,
    /// Build each package as `cargo publish` would (`--no-verify` skips it).
    pub verify: bool,
    /// The cargo target directory; `None` asks cargo (`CARGO_TARGET_DIR`, config, `target/`).
    pub target_dir: Option<PathBuf>,
}

impl ReleaseOptions {
    /// Parses `VERSION [--execute] [--profile NAME] [--no-verify]`.
    pub fn parse(args: &[String]) -> Result<Self> {
        let mut version = None;
        let mut execute = false;
        let mut profile = "release".to_owned();
        let mut verify = true;
        let mut args = args.iter();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--execute" => execute = true,
                "--dry-run" => execute = false,
                "--no-verify" => verify = false,
                "--profile" => profile = args.next().context("--profile needs a profile name")?.clone(),
                flag if flag.starts_with('-') => bail!("unknown flag {flag}"),
                value if version.is_none() => version = Some(value.trim_start_matches('v').to_owned()),
                extra => bail!("unexpected argument {extra}"),
            }
        }
        let version = version
            .context("usage: cargo xtask release VERSION [--execute] [--profile NAME] [--no-verify]")?;
        check_version(&version)?;
        Ok(Self { version, execute, profile, verify, target_dir: None })
    }

    /// The tag of this release.
    pub fn tag(&self) -> String {
        format!("v{}", self.version)
    }
}

/// What a release run produced.
#[derive(Debug, Clone)]
pub struct ReleaseReport {
    /// The archive under `target/dist/`.
    pub archive: PathBuf,
    /// Its checksum file (`sha256sum -c` format).
    pub checksum: PathBuf,
    /// One `.crate` per publishable crate, copied to `target/dist/crates/`.
    pub crates: Vec<PathBuf>,
    /// The changelog section that was written.
    pub changelog: String,
    /// The tag to push.
    pub tag: String,
}

/// Runs `cargo xtask release` with these arguments from the workspace at `root`.
pub fn main(root: &Path, args: &[String]) -> Result<()> {
    let options = ReleaseOptions::parse(args)?;
    let report = release(root, &options)?;
    println!("archive:  {}", report.archive.display());
    println!("checksum: {}", report.checksum.display());
    for file in &report.crates {
        println!("crate:    {}", file.display());
    }
    println!();
    print!("{}", report.changelog);
    println!();
    if options.execute {
        println!("Cargo.toml, Cargo.lock and CHANGELOG.md now say {}. To publish:", options.version);
        println!("  git commit -am \"Release {}\"", report.tag);
        println!("  git tag -a {0} -m {0}", report.tag);
        println!("  git push origin HEAD {}", report.tag);
        println!("  cargo publish --workspace");
    } else {
        println!("dry run: Cargo.toml, Cargo.lock and CHANGELOG.md were put back; --execute keeps them.");
    }
    println!("tag to push: {}", report.tag);
    Ok(())
}

/// Makes the release (or its dry run) in the workspace at `root`.
pub fn release(root: &Path, options: &ReleaseOptions) -> Result<ReleaseReport> {
    check_version(&options.version)?;
    check_clean(root)?;
    let tag = options.tag();
    if git(root, &["tag", "--list", &tag])?.trim() == tag {
        bail!("tag {tag} already exists");
    }
    let workspace = Workspace::read(root, options)?;
    let last_tag = last_tag(root)?;
    let commits = commits_since(root, last_tag.as_deref())?;
    let changelog = changelog_section(&options.version, &today(), last_tag.as_deref(), &commits);

    let mut restore = Restore::capture(root, !options.execute)?;
    let manifest_path = root.join("Cargo.toml");
    let manifest = read(&manifest_path)?;
    write(&manifest_path, &bump_manifest(&manifest, &workspace.members, &options.version)?)?;
    let changelog_path = root.join("CHANGELOG.md");
    let previous = std::fs::read_to_string(&changelog_path).unwrap_or_default();
    write(&changelog_path, &insert_changelog(&previous, &changelog))?;

    let crates = package(root, options, &workspace)?;
    let binary = build_binary(root, options, &workspace)?;
    let (archive, checksum) = make_archive(root, options, &binary, &crates)?;
    if options.execute {
        restore.disarm();
    }
    drop(restore);
    let crates = crates.iter().map(|file| root.join("target/dist/crates").join(file_name(file))).collect();
    Ok(ReleaseReport { archive, checksum, crates, changelog, tag })
}

/// The workspace as `cargo metadata` sees it.
struct Workspace {
    /// Every member's package name.
    members: Vec<String>,
    /// The members that are published (no `publish = false`).
    publishable: Vec<String>,
    /// The cargo target directory.
    target_dir: PathBuf,
}

impl Workspace {
    fn read(root: &Path, options: &ReleaseOptions) -> Result<Self> {
        let mut command = cargo(options);
        command.args(["metadata", "--no-deps", "--format-version", "1"]).current_dir(root);
        let output = command.output().context("cannot run cargo metadata")?;
        ensure!(output.status.success(), "cargo metadata: {}", String::from_utf8_lossy(&output.stderr));
        let metadata: serde_json::Value = serde_json::from_slice(&output.stdout)?;
        let target_dir = metadata["target_directory"].as_str().context("no target_directory")?;
        let mut members = Vec::new();
        let mut publishable = Vec::new();
        for package in metadata["packages"].as_array().context("no packages")? {
            let name = package["name"].as_str().context("a package without a name")?.to_owned();
            let manifest = PathBuf::from(package["manifest_path"].as_str().context("no manifest_path")?);
            if manifest != root.join("Cargo.toml") {
                // One workspace version: a member that sets its own would not be bumped.
                let text = read(&manifest)?;
                ensure!(
                    text.lines().any(|line| line.trim() == "version.workspace = true"),
                    "{} must say `version.workspace = true`",
                    manifest.display()
                );
            }
            // `publish = false` reads as an empty list of registries.
            if package["publish"].as_array().is_none_or(|registries| !registries.is_empty()) {
                publishable.push(name.clone());
            }
            members.push(name);
        }
        ensure!(publishable.iter().any(|name| name == BINARY_PACKAGE), "{BINARY_PACKAGE} is not publishable");
        Ok(Self { members, publishable, target_dir: PathBuf::from(target_dir) })
    }
}

/// `cargo` with the release's target directory.
fn cargo(options: &ReleaseOptions) -> Command {
    let mut command = Command::new(std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into()));
    if let Some(dir) = &options.target_dir {
        command.env("CARGO_TARGET_DIR", dir);
    }
    command
}

/// Puts the edited files back when dropped, unless disarmed.
struct Restore {
    saved: Vec<(PathBuf, Option<Vec<u8>>)>,
    armed: bool,
}

impl Restore {
    fn capture(root: &Path, armed: bool) -> Result<Self> {
        let mut saved = Vec::new();
        for name in EDITED {
            let path = root.join(name);
            let content = match std::fs::read(&path) {
                Ok(content) => Some(content),
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => None,
                Err(error) => return Err(error).with_context(|| format!("read {}", path.display())),
            };
            saved.push((path, content));
        }
        Ok(Self { saved, armed })
    }

    fn disarm(&mut self) {
        self.armed = false;
    }
}

impl Drop for Restore {
    fn drop(&mut self) {
        if !self.armed {
            return;
        }
        for (path, content) in &self.saved {
            let result = match content {
                Some(content) => std::fs::write(path, content),
                None => std::fs::remove_file(path),
            };
            if let Err(error) = result {
                eprintln!("release: could not restore {}: {error}", path.display());
            }
        }
    }
}

/// Checks `MAJOR.MINOR.PATCH`, with an optional `-pre` suffix of letters, digits, `.` and `-`.
pub fn check_version(version: &str) -> Result<()> {
    let (core, pre) = match version.split_once('-') {
        Some((core, pre)) => (core, Some(pre)),
        None => (version, None),
    };
    let numbers: Vec<&str> = core.split('.').collect();
    let numeric = |part: &&str| {
        !part.is_empty()
            && part.bytes().all(|b| b.is_ascii_digit())
            && (part.len() == 1 || !part.starts_with('0'))
    };
    let pre_ok = pre.is_none_or(|pre| {
        !pre.is_empty()
            && pre
                .split('.')
                .all(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-'))
    });
    ensure!(
        numbers.len() == 3 && numbers.iter().all(numeric) && pre_ok,
        "{version:?} is not a version: expected MAJOR.MINOR.PATCH, for example 1.2.0"
    );
    Ok(())
}

/// Fails unless `git status` shows nothing to commit (untracked files included).
pub fn check_clean(root: &Path) -> Result<()> {
    let status = git(root, &["status", "--porcelain", "--untracked-files=normal"])?;
    if !status.trim().is_empty() {
        bail!(
            "the working tree has uncommitted changes; commit or stash them before a release:\n{}",
            status.trim_end()
        );
    }
    Ok(())
}

fn git(root: &Path, args: &[&str]) -> Result<String> {
    let output = Command::new("git")
        .args(args)
        .current_dir(root)
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .output()
        .context("cannot run git")?;
    ensure!(
        output.status.success(),
        "git {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&output.stderr).trim()
    );
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// The newest release tag reachable from HEAD, if any.
fn last_tag(root: &Path) -> Result<Option<String>> {
    let output = Command::new("git")
        .args(["describe", "--tags", "--abbrev=0", "--match", "v[0-9]*"])
        .current_dir(root)
        .output()
        .context("cannot run git describe")?;
    let tag = String::from_utf8_lossy(&output.stdout).trim().to_owned();
    Ok((output.status.success() && !tag.is_empty()).then_some(tag))
}

/// One commit for the changelog.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Commit {
    /// Abbreviated hash.
    pub hash: String,
    /// First line of the message.
    pub subject: String,
}

/// The commits after `tag` (every commit without one), oldest first, merges left out.
fn commits_since(root: &Path, tag: Option<&str>) -> Result<Vec<Commit>> {
    let range = tag.map_or_else(|| "HEAD".to_owned(), |tag| format!("{tag}..HEAD"));
    let log = git(root, &["log", &range, "--no-merges", "--reverse", "--format=%h%x09%s"])?;
    Ok(log
        .lines()
        .filter_map(|line| line.split_once('\t'))
        .map(|(hash, subject)| Commit { hash: hash.to_owned(), subject: subject.trim().to_owned() })
        .collect())
}

/// The changelog section of a release.
pub fn changelog_section(version: &str, date: &str, since: Option<&str>, commits: &[Commit]) -> String {
    let mut text = format!("## {version} ({date})\n\n");
    match since {
        Some(tag) => {
            let _ = writeln!(text, "Changes since {tag}:\n");
        }
        None => text.push_str("The first release. Changes:\n\n"),
    }
    if commits.is_empty() {
        text.push_str("- No changes.\n");
    }
    for commit in commits {
        let _ = writeln!(text, "- {} ({})", commit.subject, commit.hash);
    }
    text
}

/// The heading of the changes written by hand since the last release.
const UNRELEASED: &str = "## Unreleased";

/// `previous` with `section` placed above the newest release (a title is added when absent).
/// When the newest section is `## Unreleased` (the changes written by hand, grouped by kind),
/// it becomes this release's: its entries follow the release's heading, then the commit list,
/// and an empty `## Unreleased` stays on top for the next changes.
pub fn insert_changelog(previous: &str, section: &str) -> String {
    const TITLE: &str =
        "# Changelog\n\nEvery release of the workspace, newest first; the crates share one version.\n";
    let previous = if previous.trim().is_empty() { TITLE } else { previous };
    let Some(at) = previous.find("\n## ") else {
        return format!("{}\n\n{}", previous.trim_end(), section);
    };
    let (head, newest) = (previous[..at].trim_end(), &previous[at + 1..]);
    let Some(rest) = newest.strip_prefix(UNRELEASED).filter(|rest| rest.starts_with('\n')) else {
        return format!("{head}\n{section}\n{newest}");
    };
    let (entries, older) = match rest.find("\n## ") {
        Some(end) => (&rest[..end], &rest[end + 1..]),
        None => (rest, ""),
    };
    let (heading, commits) = section.split_once('\n').unwrap_or((section, ""));
    let mut text = format!("{head}\n\n{UNRELEASED}\n\n{heading}\n");
    if !entries.trim().is_empty() {
        let _ = write!(text, "\n{}\n\n### Commits\n", entries.trim());
    }
    let _ = write!(text, "\n{}\n", commits.trim());
    if !older.is_empty() {
        let _ = write!(text, "\n{older}");
    }
    text
}

/// The root manifest with `[workspace.package] version` and every member's entry in
/// `[workspace.dependencies]` set to `version`.
pub fn bump_manifest(manifest: &str, members: &[String], version: &str) -> Result<String> {
    let mut section = String::new();
    let mut package_version = false;
    let mut out = String::with_capacity(manifest.len());
    for line in manifest.split_inclusive('\n') {
        let trimmed = line.trim();
        if trimmed.starts_with('[') {
            section = trimmed.to_owned();
        }
        let key = trimmed.split(['=', ' ']).next().unwrap_or("");
        let replaced = if section == "[workspace.package]" && key == "version" {
            package_version = true;
            Some(format!("version = \"{version}\""))
        } else if section == "[workspace.dependencies]" && members.iter().any(|m| m == key) {
            replace_inline_version(trimmed, version)
        } else {
            None
        };
        match replaced {
            Some(text) => {
                out.push_str(&text);
                if line.ends_with('\n') {
                    out.push('\n');
                }
            }
            None => out.push_str(line),
        }
    }
    ensure!(package_version, "the root Cargo.toml has no [workspace.package] version");
    Ok(out)
}

/// `name = { path = "...", version = "old" }` with the new version; `None` without a version
/// (a path-only entry such as session-testkit's, which packaging leaves out).
fn replace_inline_version(line: &str, version: &str) -> Option<String> {
    let start = line.find("version = \"")? + "version = \"".len();
    let end = start + line[start..].find('"')?;
    Some(format!("{}{version}{}", &line[..start], &line[end..]))
}

/// Packages every publishable crate (each verified by a build against the others at the new
/// version); returns the `.crate` files.
fn package(root: &Path, options: &ReleaseOptions, workspace: &Workspace) -> Result<Vec<PathBuf>> {
    let package_dir = workspace.target_dir.join("package");
    let crates: Vec<PathBuf> = workspace
        .publishable
        .iter()
        .map(|name| package_dir.join(format!("{name}-{}.crate", options.version)))
        .collect();
    for file in &crates {
        // A leftover from an earlier run must not pass for this one's.
        let _ = std::fs::remove_file(file);
    }
    let mut command = cargo(options);
    command.args(["package", "--workspace", "--allow-dirty"]).current_dir(root);
    if !options.verify {
        // Still resolves each package's dependencies on the others at the new version (its
        // lockfile), but builds nothing.
        command.arg("--no-verify");
    }
    for name in workspace.members.iter().filter(|name| !workspace.publishable.contains(name)) {
        command.args(["--exclude", name]);
    }
    run_timed(&mut command, "cargo package")?;
    for file in &crates {
        ensure!(file.is_file(), "cargo package did not produce {}", file.display());
    }
    Ok(crates)
}

/// Builds the binary with the release's profile; returns its path.
fn build_binary(root: &Path, options: &ReleaseOptions, workspace: &Workspace) -> Result<PathBuf> {
    let mut command = cargo(options);
    command
        .args(["build", "--profile", &options.profile, "-p", BINARY_PACKAGE, "--bin", BINARY])
        .current_dir(root);
    run_timed(&mut command, "cargo build")?;
    let folder = match options.profile.as_str() {
        "dev" | "test" => "debug",
        "bench" => "release",
        other => other,
    };
    let binary = workspace.target_dir.join(folder).join(format!("{BINARY}{}", std::env::consts::EXE_SUFFIX));
    ensure!(binary.is_file(), "no binary at {}", binary.display());
    Ok(binary)
}

fn run_timed(command: &mut Command, what: &str) -> Result<()> {
    let started = Instant::now();
    eprintln!("release: {what}");
    let status = command.status().with_context(|| format!("cannot run {what}"))?;
    ensure!(status.success(), "{what} failed ({status})");
    eprintln!("release: {what} done in {:.0?}", started.elapsed());
    Ok(())
}

/// `target/dist/session-VERSION-TRIPLE.tar.gz` (binary, README, changelog), its `.sha256`, and
/// the `.crate` files under `target/dist/crates/`.
fn make_archive(
    root: &Path,
    options: &ReleaseOptions,
    binary: &Path,
    crates: &[PathBuf],
) -> Result<(PathBuf, PathBuf)> {
    let dist = root.join("target/dist");
    let name = format!("{BINARY}-{}-{}", options.version, host_triple()?);
    let stage = dist.join(&name);
    let _ = std::fs::remove_dir_all(&stage);
    std::fs::create_dir_all(&stage).with_context(|| format!("create {}", stage.display()))?;
    copy(binary, &stage.join(file_name(binary)))?;
    // The man page and the completion scripts, from the binary itself (clap_mangen,
    // clap_complete), so they always match its flags.
    write_generated(binary, &["man"], &stage.join(format!("{BINARY}.1")))?;
    let completions = stage.join("completions");
    std::fs::create_dir_all(&completions).with_context(|| format!("create {}", completions.display()))?;
    for (shell, file) in COMPLETIONS {
        write_generated(binary, &["completion", shell], &completions.join(file))?;
    }
    for extra in ARCHIVE_EXTRAS {
        let source = root.join(extra);
        if source.is_file() {
            copy(&source, &stage.join(extra))?;
        }
    }
    let archive = dist.join(format!("{name}.tar.gz"));
    let status = Command::new("tar")
        .arg("-czf")
        .arg(&archive)
        .arg("-C")
        .arg(&dist)
        .arg(&name)
        .status()
        .context("cannot run tar")?;
    ensure!(status.success(), "tar failed ({status})");
    std::fs::remove_dir_all(&stage).with_context(|| format!("remove {}", stage.display()))?;
    let checksum = dist.join(format!("{name}.tar.gz.sha256"));
    write(&checksum, &checksum_line(&std::fs::read(&archive)?, &format!("{name}.tar.gz")))?;

    let crate_dir = dist.join("crates");
    std::fs::create_dir_all(&crate_dir).with_context(|| format!("create {}", crate_dir.display()))?;
    for file in crates {
        copy(file, &crate_dir.join(file_name(file)))?;
    }
    Ok((archive, checksum))
}

/// The completion scripts in the archive's `completions/`: (shell, file name).
const COMPLETIONS: [(&str, &str); 4] =
    [("bash", "session.bash"), ("zsh", "_session"), ("fish", "session.fish"), ("powershell", "_session.ps1")];

/// Writes what `binary ARGS` prints to `path`.
fn write_generated(binary: &Path, args: &[&str], path: &Path) -> Result<()> {
    let output = Command::new(binary)
        .args(args)
        .output()
        .with_context(|| format!("cannot run {}", binary.display()))?;
    ensure!(
        output.status.success(),
        "{} {args:?}: {}",
        binary.display(),
        String::from_utf8_lossy(&output.stderr)
    );
    ensure!(!output.stdout.is_empty(), "{} {args:?} printed nothing", binary.display());
    std::fs::write(path, &output.stdout).with_context(|| format!("write {}", path.display()))
}

/// A line of `sha256sum` output: the hex digest, two spaces, the file name.
pub fn checksum_line(content: &[u8], file_name: &str) -> String {
    let digest = Sha256::digest(content);
    let mut hex = String::with_capacity(64);
    for byte in digest {
        let _ = write!(hex, "{byte:02x}");
    }
    format!("{hex}  {file_name}\n")
}

/// The host's target triple, as rustc states it.
fn host_triple() -> Result<String> {
    let output = Command::new("rustc").arg("-vV").output().context("cannot run rustc -vV")?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .find_map(|line| line.strip_prefix("host: "))
        .map(str::to_owned)
        .context("rustc -vV names no host")
}

/// Today's date in UTC, `YYYY-MM-DD`.
fn today() -> String {
    let seconds = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|elapsed| elapsed.as_secs())
        .unwrap_or(0);
    session_core::calendar::utc_date(seconds.saturating_mul(1000))
}

fn file_name(path: &Path) -> String {
    path.file_name().map(|name| name.to_string_lossy().into_owned()).unwrap_or_default()
}

fn read(path: &Path) -> Result<String> {
    std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))
}

fn write(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).with_context(|| format!("write {}", path.display()))
}

fn copy(from: &Path, to: &Path) -> Result<()> {
    std::fs::copy(from, to).with_context(|| format!("copy {} to {}", from.display(), to.display()))?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::path::{Path, PathBuf};
    use std::process::Command;
    use std::time::Instant;

    use pretty_assertions::assert_eq;

    use super::*;

    #[test]
    fn arguments_default_to_a_dry_run_of_a_release_build() {
        let args = |list: &[&str]| list.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>();
        let options = ReleaseOptions::parse(&args(&["v1.2.3"])).unwrap();
        assert_eq!(
            options,
            ReleaseOptions {
                version: "1.2.3".into(),
                execute: false,
                profile: "release".into(),
                verify: true,
                target_dir: None
            }
        );
        assert_eq!(options.tag(), "v1.2.3");
        let options =
            ReleaseOptions::parse(&args(&["2.0.0-rc.1", "--execute", "--profile", "dev", "--no-verify"]))
                .unwrap();
        assert!(options.execute && !options.verify);
        assert_eq!(options.profile, "dev");
        for bad in [&[][..], &["1.2"], &["1.2.3", "4.5.6"], &["01.2.3"], &["1.2.3", "--push"], &["1.2.3-"]] {
            assert!(ReleaseOptions::parse(&args(bad)).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_bump_touches_the_workspace_version_and_members_only() {
        let manifest = "[workspace.package]\nversion = \"0.1.0\"\nedition = \"2024\"\n\n\
            [workspace.dependencies]\nsession-core = { path = \"crates/session-core\", version = \"0.1.0\" }\n\
            session-testkit = { path = \"crates/session-testkit\" }\nserde = { version = \"1\" }\n\
            tokio = { version = \"1\", default-features = false }\n";
        let members = vec!["session-core".to_owned(), "session-testkit".to_owned()];
        let bumped = bump_manifest(manifest, &members, "9.9.9").unwrap();
        assert_eq!(
            bumped,
            "[workspace.package]\nversion = \"9.9.9\"\nedition = \"2024\"\n\n\
            [workspace.dependencies]\nsession-core = { path = \"crates/session-core\", version = \"9.9.9\" }\n\
            session-testkit = { path = \"crates/session-testkit\" }\nserde = { version = \"1\" }\n\
            tokio = { version = \"1\", default-features = false }\n"
        );
        assert!(bump_manifest("[package]\nversion = \"1.0.0\"\n", &members, "9.9.9").is_err());
    }

    #[test]
    fn the_changelog_section_goes_above_the_newest_release() {
        let commits = vec![
            Commit { hash: "abc1234".into(), subject: "session-core: the processor".into() },
            Commit { hash: "def5678".into(), subject: "xtask: release".into() },
        ];
        let first = changelog_section("0.2.0", "2026-05-01", None, &commits);
        assert_eq!(
            first,
            "## 0.2.0 (2026-05-01)\n\nThe first release. Changes:\n\n\
             - session-core: the processor (abc1234)\n- xtask: release (def5678)\n"
        );
        let changelog = insert_changelog("", &first);
        assert!(changelog.starts_with("# Changelog\n\n"));
        assert!(changelog.ends_with(&first));
        let second = changelog_section("0.3.0", "2026-06-01", Some("v0.2.0"), &[]);
        let changelog = insert_changelog(&changelog, &second);
        let newer = changelog.find("## 0.3.0").unwrap();
        let older = changelog.find("## 0.2.0").unwrap();
        assert!(newer < older, "{changelog}");
        assert!(changelog.contains("Changes since v0.2.0:\n\n- No changes.\n\n## 0.2.0"), "{changelog}");
    }

    #[test]
    fn the_unreleased_entries_become_the_release() {
        let commits = [Commit { hash: "abc1234".into(), subject: "store: faster".into() }];
        let section = changelog_section("0.3.0", "2026-06-01", Some("v0.2.0"), &commits);
        let previous = "# Changelog\n\nIntro.\n\n## Unreleased\n\n### Added\n\n- A tool. (#7)\n\n\
                        ## 0.2.0 (2026-05-01)\n\n- Older.\n";
        assert_eq!(
            insert_changelog(previous, &section),
            "# Changelog\n\nIntro.\n\n## Unreleased\n\n## 0.3.0 (2026-06-01)\n\n### Added\n\n\
             - A tool. (#7)\n\n### Commits\n\nChanges since v0.2.0:\n\n- store: faster (abc1234)\n\n\
             ## 0.2.0 (2026-05-01)\n\n- Older.\n"
        );
        // An empty Unreleased section gives the commit list alone; none at all, the section on top.
        let empty = insert_changelog("# Changelog\n\n## Unreleased\n", &section);
        assert_eq!(
            empty,
            "# Changelog\n\n## Unreleased\n\n## 0.3.0 (2026-06-01)\n\nChanges since v0.2.0:\n\n\
             - store: faster (abc1234)\n"
        );
        // The next release finds the empty Unreleased section and leaves the older ones alone.
        let next = changelog_section("0.4.0", "2026-07-01", Some("v0.3.0"), &[]);
        let again = insert_changelog(&empty, &next);
        assert!(again.starts_with("# Changelog\n\n## Unreleased\n\n## 0.4.0 (2026-07-01)\n"), "{again}");
        assert!(
            again
                .ends_with("\n## 0.3.0 (2026-06-01)\n\nChanges since v0.2.0:\n\n- store: faster (abc1234)\n")
        );
    }

    #[test]
    fn checksums_are_in_sha256sum_format() {
        assert_eq!(
            checksum_line(b"abc", "x.tar.gz"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad  x.tar.gz\n"
        );
    }

    #[test]
    fn a_dirty_tree_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let git = |args: &[&str]| {
            let status = Command::new("git").args(args).current_dir(dir.path()).output().unwrap().status;
            assert!(status.success(), "git {args:?}");
        };
        git(&["init", "--quiet"]);
        std::fs::write(dir.path().join("a.txt"), "a").unwrap();
        let error = check_clean(dir.path()).unwrap_err().to_string();
        assert!(error.contains("uncommitted changes") && error.contains("a.txt"), "{error}");
        git(&["add", "a.txt"]);
        git(&["-c", "user.name=t", "-c", "user.email=t@t", "commit", "--quiet", "-m", "a"]);
        check_clean(dir.path()).unwrap();
        let options = ReleaseOptions::parse(&["1.0.0".to_owned()]).unwrap();
        std::fs::write(dir.path().join("a.txt"), "b").unwrap();
        let error = release(dir.path(), &options).unwrap_err().to_string();
        assert!(error.contains("uncommitted changes"), "{error}");
    }

    /// A clone of `root` with its history and, committed on top, its working tree as it is now
    /// (tracked and untracked files that git does not ignore): what `cargo test` is testing.
    fn clone_working_tree(root: &Path, clone: &Path) {
        let git = |dir: &Path, args: &[&str]| {
            let output = Command::new("git").args(args).current_dir(dir).output().unwrap();
            assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
            output.stdout
        };
        git(root, &["clone", "--quiet", root.to_str().unwrap(), clone.to_str().unwrap()]);
        let listed = git(root, &["ls-files", "-z", "--cached", "--others", "--exclude-standard"]);
        for name in listed.split(|b| *b == 0).filter(|name| !name.is_empty()) {
            let name = std::str::from_utf8(name).unwrap();
            let (from, to) = (root.join(name), clone.join(name));
            if from.is_file() {
                std::fs::create_dir_all(to.parent().unwrap()).unwrap();
                std::fs::copy(&from, &to).unwrap();
            } else if !from.exists() {
                let _ = std::fs::remove_file(&to);
            }
        }
        git(clone, &["add", "--all"]);
        git(
            clone,
            &[
                "-c",
                "user.name=xtask",
                "-c",
                "user.email=xtask@localhost",
                "commit",
                "--quiet",
                "--allow-empty",
                "-m",
                "The working tree",
            ],
        );
    }

    /// The target directory this test binary was built in (`<target>/debug/deps/xtask-*`).
    fn own_target_dir() -> PathBuf {
        let exe = std::env::current_exe().unwrap();
        exe.ancestors().nth(3).unwrap().to_path_buf()
    }

    /// `cargo xtask release 9.9.9 --profile dev --no-verify` as a dry run in a fresh clone of
    /// this repository with its working tree, building in a target directory of its own beside
    /// this build's (kept between runs, so dependencies compile once): sharing this build's would
    /// replace the developer's `target/debug/session` with the clone's 9.9.9 build. Bounded on purpose: the release profile would compile every
    /// dependency again, and verifying six packages builds six dependency graphs of their own
    /// (each package is its own workspace, with its own features and profile), about an hour
    /// on a cold 2-core machine. Without verification `cargo package` still resolves each
    /// package against the others at 9.9.9.
    #[test]
    fn a_dry_run_in_a_clone_packages_every_crate_and_archives_the_binary() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR")).parent().unwrap();
        if !root.join(".git").exists() {
            eprintln!("not a git checkout: the release dry run is skipped");
            return;
        }
        let started = Instant::now();
        let own = own_target_dir();
        // Fixed places, so a later run overwrites this one's artifacts instead of adding more.
        let clone = own.join("xtask-release-test");
        let target_dir = own.join("xtask-release-target");
        let _ = std::fs::remove_dir_all(&clone);
        clone_working_tree(root, &clone);
        let developer_binary = own.join("debug").join(format!("{BINARY}{}", std::env::consts::EXE_SUFFIX));
        let options = ReleaseOptions {
            version: "9.9.9".into(),
            execute: false,
            profile: "dev".into(),
            verify: false,
            target_dir: Some(target_dir.clone()),
        };
        let before = std::fs::read_to_string(clone.join("Cargo.toml")).unwrap();
        let report = release(&clone, &options).unwrap();

        // The archive and its checksum.
        let triple = host_triple().unwrap();
        let name = format!("session-9.9.9-{triple}.tar.gz");
        assert_eq!(report.archive, clone.join("target/dist").join(&name));
        assert_eq!(report.checksum, clone.join("target/dist").join(format!("{name}.sha256")));
        let archive = std::fs::read(&report.archive).unwrap();
        assert_eq!(std::fs::read_to_string(&report.checksum).unwrap(), checksum_line(&archive, &name));
        let listing = Command::new("tar").arg("-tzf").arg(&report.archive).output().unwrap();
        let listing = String::from_utf8(listing.stdout).unwrap();
        let folder = format!("session-9.9.9-{triple}");
        for entry in [
            "session",
            "session.1",
            "completions/session.bash",
            "completions/_session",
            "completions/session.fish",
            "completions/_session.ps1",
            "README.md",
            "CHANGELOG.md",
            "LICENSE-MIT",
            "LICENSE-APACHE",
        ] {
            assert!(
                listing.lines().any(|line| line == format!("{folder}/{entry}")),
                "{entry} in:\n{listing}"
            );
        }

        // Every publishable crate, and none of the others.
        let mut packaged: Vec<String> = report.crates.iter().map(|file| file_name(file)).collect();
        packaged.sort();
        assert_eq!(
            packaged,
            [
                "session-cli-9.9.9.crate",
                "session-core-9.9.9.crate",
                "session-llm-9.9.9.crate",
                "session-mcp-9.9.9.crate",
                "session-runtime-9.9.9.crate",
                "session-server-9.9.9.crate",
                "session-store-9.9.9.crate",
                "session-tools-9.9.9.crate",
                "session-tui-9.9.9.crate",
            ]
        );
        for file in &report.crates {
            assert!(file.is_file(), "{}", file.display());
        }
        assert!(report.changelog.starts_with("## 9.9.9 ("), "{}", report.changelog);
        assert_eq!(report.tag, "v9.9.9");

        // A dry run leaves the manifests and the changelog as they were.
        assert_eq!(std::fs::read_to_string(clone.join("Cargo.toml")).unwrap(), before);
        let status =
            Command::new("git").args(["status", "--porcelain"]).current_dir(&clone).output().unwrap();
        assert_eq!(String::from_utf8_lossy(&status.stdout), "");
        // The developer's own build is untouched: its binary (which a build of the developer's
        // may have replaced meanwhile, legitimately) is not the clone's 9.9.9.
        assert!(report.archive.starts_with(&clone));
        if developer_binary.is_file() {
            let version = Command::new(&developer_binary).arg("--version").output().unwrap();
            let version = String::from_utf8_lossy(&version.stdout);
            assert!(
                !version.contains("9.9.9"),
                "the dry run replaced {}: {version}",
                developer_binary.display()
            );
        }
        eprintln!("release dry run in a clone: {:.1?}", started.elapsed());
        let _ = std::fs::remove_dir_all(&clone);
    }
}
