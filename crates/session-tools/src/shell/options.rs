//! The options of wrappers (`env`, `sudo`, `timeout`, ...): enough of each one's syntax to
//! find where the command it runs starts.

use super::words::Word;

/// The option syntax of a wrapper, enough to find where its command starts.
pub(super) struct Spec {
    /// Short options without a value.
    pub(super) flags: &'static str,
    /// Short options with a value (glued, `-n5`, or the next word).
    pub(super) valued: &'static str,
    /// Short options whose value, if any, is glued (`xargs -i{}`).
    pub(super) glued: &'static str,
    /// Long options without a value (or with an optional `=value`).
    pub(super) long_flags: &'static [&'static str],
    /// Long options with a value (`--user=x` or `--user x`).
    pub(super) long_valued: &'static [&'static str],
    /// Options after which the wrapper runs no command (`command -v`, `sudo -e`).
    pub(super) no_exec: &'static [&'static str],
    /// Options that change the directory or root the command runs in, or split a string
    /// into words: what runs cannot be told.
    pub(super) refused: &'static [&'static str],
}

pub(super) enum Options {
    /// The command starts at this argument index.
    Command(usize),
    /// An option says no command runs.
    NoCommand,
}

/// `NAME=value` with a shell variable name.
pub(super) fn assignment_name(text: &str) -> Option<&str> {
    let (name, _) = text.split_once('=')?;
    let name = name.strip_suffix('+').unwrap_or(name);
    let mut chars = name.chars();
    let first = chars.next()?;
    ((first.is_ascii_alphabetic() || first == '_') && chars.all(|c| c.is_ascii_alphanumeric() || c == '_'))
        .then_some(name)
}

/// Skips a wrapper's options; `Err` when one cannot be read (not static, unknown, refused).
pub(super) fn skip_options(wrapper: &str, spec: &Spec, args: &[Word]) -> Result<Options, String> {
    let mut at = 0;
    while let Some(arg) = args.get(at) {
        // A word that is not plain is where the command starts: the next layer finds that
        // its name is not static.
        let Some(value) = arg.plain() else { return Ok(Options::Command(at)) };
        if value == "--" {
            return Ok(Options::Command(at + 1));
        }
        if spec.no_exec.contains(&value) {
            return Ok(Options::NoCommand);
        }
        let mut next = at + 1;
        if let Some(long) = value.strip_prefix("--") {
            let (option, has_value) =
                long.split_once('=').map_or((long, false), |(option, _)| (option, true));
            let dashed = format!("--{option}");
            if spec.refused.contains(&dashed.as_str()) {
                return Err(format!("`{wrapper} {dashed}` changes where or how the command runs"));
            }
            if spec.no_exec.contains(&dashed.as_str()) {
                return Ok(Options::NoCommand);
            }
            if spec.long_valued.contains(&option) && !has_value {
                next += 1;
            } else if !spec.long_flags.contains(&option) && !spec.long_valued.contains(&option) {
                return Err(format!("{wrapper} has an option `{dashed}` the analysis does not know"));
            }
        } else {
            let Some(cluster) = value.strip_prefix('-').filter(|c| !c.is_empty()) else {
                return Ok(Options::Command(at));
            };
            for (offset, flag) in cluster.char_indices() {
                let single = format!("-{flag}");
                if spec.refused.contains(&single.as_str()) {
                    return Err(format!("`{wrapper} {single}` changes where or how the command runs"));
                }
                if spec.no_exec.contains(&single.as_str()) {
                    return Ok(Options::NoCommand);
                }
                let glued = cluster.len() > offset + flag.len_utf8();
                if spec.valued.contains(flag) {
                    if !glued {
                        next += 1;
                    }
                    break;
                }
                if spec.glued.contains(flag) {
                    break;
                }
                if !spec.flags.contains(flag) {
                    return Err(format!("{wrapper} has an option `{single}` the analysis does not know"));
                }
            }
        }
        if args.get(at + 1..next).unwrap_or_default().iter().any(|value| value.splits) {
            // An unquoted expansion as an option's value could split into the command itself.
            return Err(format!("an option of {wrapper} has a value built from an expansion"));
        }
        at = next;
    }
    Ok(Options::Command(at))
}

pub(super) const ENV: Spec = Spec {
    flags: "i0v",
    valued: "u",
    glued: "",
    long_flags: &["ignore-environment", "null", "debug"],
    long_valued: &["unset"],
    no_exec: &[],
    refused: &["-C", "-S", "-P", "--chdir", "--split-string"],
};
pub(super) const SUDO: Spec = Spec {
    flags: "AbEHiKklnPSsVvBN",
    valued: "CghprTtUu",
    glued: "",
    long_flags: &[
        "askpass",
        "background",
        "preserve-env",
        "set-home",
        "login",
        "remove-timestamp",
        "reset-timestamp",
        "list",
        "non-interactive",
        "preserve-groups",
        "stdin",
        "shell",
        "version",
        "validate",
        "help",
    ],
    long_valued: &[
        "close-from",
        "group",
        "host",
        "prompt",
        "role",
        "type",
        "command-timeout",
        "other-user",
        "user",
    ],
    no_exec: &["-e", "--edit"],
    refused: &["-D", "-R", "--chdir", "--chroot"],
};
pub(super) const DOAS: Spec = Spec { flags: "Lns", valued: "Cu", ..EMPTY };
pub(super) const COMMAND: Spec = Spec { flags: "p", no_exec: &["-v", "-V"], ..EMPTY };
pub(super) const EXEC: Spec = Spec { flags: "cl", valued: "a", ..EMPTY };
pub(super) const TIME: Spec = Spec {
    flags: "pavq",
    valued: "fo",
    long_flags: &["portability", "append", "verbose", "quiet"],
    long_valued: &["format", "output"],
    ..EMPTY
};
pub(super) const STDBUF: Spec = Spec { valued: "ioe", long_valued: &["input", "output", "error"], ..EMPTY };
pub(super) const SETSID: Spec = Spec { flags: "cfw", long_flags: &["ctty", "fork", "wait"], ..EMPTY };
pub(super) const TIMEOUT: Spec = Spec {
    flags: "v",
    valued: "sk",
    long_flags: &["preserve-status", "foreground", "verbose"],
    long_valued: &["signal", "kill-after"],
    ..EMPTY
};
pub(super) const XARGS: Spec = Spec {
    flags: "0rtpxo",
    valued: "adEILnPs",
    glued: "eil",
    long_flags: &[
        "null",
        "no-run-if-empty",
        "verbose",
        "interactive",
        "exit",
        "open-tty",
        "show-limits",
        "eof",
        "replace",
        "max-lines",
    ],
    long_valued: &["arg-file", "delimiter", "max-args", "max-procs", "max-chars", "process-slot-var"],
    ..EMPTY
};
pub(super) const IONICE: Spec = Spec {
    flags: "t",
    valued: "cnPpu",
    long_flags: &["ignore"],
    long_valued: &["class", "classdata", "pid", "pgid", "uid"],
    ..EMPTY
};
pub(super) const WATCH: Spec = Spec {
    flags: "bcCdegprtwx",
    valued: "nq",
    long_flags: &[
        "beep",
        "color",
        "no-color",
        "differences",
        "errexit",
        "chgexit",
        "precise",
        "no-rerun",
        "no-title",
        "no-wrap",
        "exec",
    ],
    long_valued: &["interval", "equexit"],
    ..EMPTY
};
pub(super) const EMPTY: Spec =
    Spec { flags: "", valued: "", glued: "", long_flags: &[], long_valued: &[], no_exec: &[], refused: &[] };
