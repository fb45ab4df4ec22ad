//! What a bash command line would run, found with a real bash grammar (tree-sitter-bash), for
//! the `bash` tool's permission patterns.
//!
//! [`analyse`] is pure: it reads only the text. It lists every command that would run, in
//! source order — in lists and pipelines, `$(...)` and backticks (quoted or not, inside
//! `${x:-...}` and unquoted heredoc bodies), `<(...)`/`>(...)`, subshells, groups, the bodies
//! and conditions of `if`/`for`/`while`/`until`/`case`, function bodies — after stripping
//! variable assignments (`FOO=1 rm x` runs `rm x`), through wrappers (`env`, `command`,
//! `builtin`, `exec`, `nohup`, `time`, `timeout`, `nice`, `xargs`, `sudo`, `doas`, `stdbuf`,
//! `setsid`, `coproc`, `busybox`, `find -exec`), and into the strings that `bash -c`,
//! `sh -c`, `zsh -c`, `eval`, `trap`, `alias` and a shell or `source` reading a literal
//! here-document run. It also lists the files redirections write.
//!
//! What it cannot see it says so: a command name built from an expansion (`$CMD x`,
//! `$(echo rm) x`), a string that `eval` or `bash -c` would run but that is not literal, a
//! redirection or path argument whose target is not static, text that does not parse, and
//! assignments that change what later names mean (`PATH`, `HOME`, `BASH_ENV`, `LD_*`, ...).
//! Such a line is [`Analysis::unanalysable`]; the tool then asks the user whatever the rules
//! say (a matching deny still refuses).
//!
//! It is not a sandbox: an allowed program can do anything (`make`, scripts, interpreters),
//! and functions or aliases that bash reads from rc files are not seen. See
//! `docs/security.md`, "Bash permission patterns".

mod commands;
mod options;
mod walk;
mod words;

/// Commands longer than this are not parsed: they are unanalysable (the parser's error
/// recovery on large malformed input costs seconds).
pub const MAX_ANALYSED_BYTES: usize = 128 * 1024;
/// How deep strings run by `bash -c`, `eval` and the like are followed.
pub const MAX_NESTED_STRINGS: usize = 6;
/// How deep the syntax tree of one string is followed.
pub const MAX_TREE_DEPTH: usize = 128;
/// How many wrappers one command may be wrapped in (`nohup nice timeout 5 ...`).
pub const MAX_WRAPPERS: usize = 16;

/// Commands whose path arguments are checked against the workspace: OpenCode's list (`cd`,
/// `rm`, `cp`, `mv`, `mkdir`, `touch`, `chmod`, `chown`) and a few more that change files.
pub const PATH_COMMANDS: [&str; 16] = [
    "cd", "rm", "cp", "mv", "mkdir", "touch", "chmod", "chown", "pushd", "rmdir", "ln", "tee", "truncate",
    "unlink", "chgrp", "shred",
];

/// What a command line would do, as far as its text tells.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Analysis {
    /// What would happen, in source order.
    pub steps: Vec<Step>,
    /// Why the line cannot be fully analysed; empty when it can.
    pub unanalysable: Vec<String>,
}

/// One thing a command line does.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Step {
    /// A command that runs.
    Run(Run),
    /// Another spelling of a command that runs: the words as written, with the wrapper
    /// (`sudo rm x`), the assignments (`FOO=1 rm x`) or the path (`/bin/rm x`) that the
    /// matching [`Step::Run`] leaves out.
    Spelling {
        /// The words as written, quotes removed where static.
        words: Vec<String>,
        /// True when the spelling changes who runs the command (`sudo`, `doas`) or its
        /// environment (assignments, which can make an allowed program run another): it is
        /// checked even where no rule names it.
        checked_always: bool,
    },
    /// An assignment that reaches the environment of the commands after it: `export X=1`,
    /// `declare -x`, or a standalone assignment to an all-capitals name (which may already
    /// be exported). Checked like a command.
    Environment {
        /// The assignment's words, quotes removed where static.
        words: Vec<String>,
    },
    /// A file that a redirection writes (`>`, `>>`, `&>`, `>|`; not `/dev/null` and the like).
    Write {
        /// The target as written, quotes removed; cut before its first glob character.
        path: String,
    },
}

/// A command that runs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Run {
    /// The command and its arguments, quotes removed where static (the source text of words
    /// built from expansions); a path-qualified name is reduced to its last component
    /// (`/bin/rm` → `rm`).
    pub words: Vec<String>,
    /// The arguments of a [`PATH_COMMANDS`] command that name paths.
    pub paths: Vec<String>,
    /// False when the analysis could not tell what runs here (its words are the source text).
    pub known: bool,
}

impl Run {
    /// The command's permission pattern: its words joined by spaces.
    pub fn pattern(&self) -> String {
        self.words.join(" ")
    }

    /// The command name (`rm`), if any.
    pub fn name(&self) -> Option<&str> {
        self.words.first().map(String::as_str)
    }
}

impl Step {
    /// The step's permission pattern (`bash`), if it has one.
    pub fn pattern(&self) -> Option<String> {
        match self {
            Self::Run(run) => Some(run.pattern()),
            Self::Spelling { words, .. } | Self::Environment { words } => Some(words.join(" ")),
            Self::Write { .. } => None,
        }
    }
}

impl Analysis {
    /// True when every command that would run is known.
    pub fn is_complete(&self) -> bool {
        self.unanalysable.is_empty()
    }

    /// The commands that run.
    pub fn runs(&self) -> impl Iterator<Item = &Run> {
        self.steps.iter().filter_map(|step| match step {
            Step::Run(run) => Some(run),
            _ => None,
        })
    }

    /// Records why the line cannot be analysed (once per reason).
    fn cannot(&mut self, reason: String) {
        if !self.unanalysable.contains(&reason) {
            self.unanalysable.push(reason);
        }
    }
}

/// Analyses a command line as bash would run it (see the module docs).
pub fn analyse(command: &str) -> Analysis {
    let mut analysis = Analysis::default();
    walk::analyse_source(command, 0, &mut analysis);
    analysis
}

/// The last component of a path-qualified command name (`/usr/bin/rm` → `rm`); a rule names
/// a program, wherever it is installed.
pub(crate) fn basename(name: &str) -> &str {
    name.rsplit('/').find(|part| !part.is_empty()).unwrap_or(name)
}

/// Variables whose value changes what later command names, paths or shells mean: a line that
/// sets one cannot be analysed from its text.
pub(crate) fn hijacks(variable: &str) -> bool {
    matches!(variable, "PATH" | "HOME" | "CDPATH" | "BASH_ENV" | "ENV" | "SHELLOPTS" | "BASHOPTS")
        || ["LD_", "DYLD_", "BASH_FUNC_"].iter().any(|prefix| variable.starts_with(prefix))
}

#[cfg(test)]
mod tests {
    use std::fmt::Write as _;

    use super::*;

    /// One line per step: `run`, `spell`, `spell!` (checked always), `env`, `write`, `?`
    /// (unknown), and
    /// `!` for each reason the line cannot be analysed.
    fn render(command: &str) -> String {
        let analysis = analyse(command);
        let mut out = format!("{command:?}\n");
        for step in &analysis.steps {
            let line = match step {
                Step::Run(run) if !run.known => format!("?      {:?}", run.words),
                Step::Run(run) if run.paths.is_empty() => format!("run    {:?}", run.words),
                Step::Run(run) => format!("run    {:?} paths {:?}", run.words, run.paths),
                Step::Spelling { words, checked_always: true } => format!("spell! {words:?}"),
                Step::Environment { words } => format!("env    {words:?}"),
                Step::Spelling { words, .. } => format!("spell  {words:?}"),
                Step::Write { path } => format!("write  {path:?}"),
            };
            let _ = writeln!(out, "    {line}");
        }
        for reason in &analysis.unanalysable {
            let _ = writeln!(out, "    !      {reason}");
        }
        out
    }

    #[test]
    fn what_runs_and_what_is_written() {
        let lines = [
            "git status -s && ls -la | wc -l; echo \"q;u\" 2>&1 &",
            "FOO=1 BAR=\"a b\" /bin/rm -rf -- x 'y z' src/*.o",
            "env -i -u HOME A=1 nice -n 5 timeout -k 1 5 stdbuf -oL setsid -w sudo -u root -- rm x",
            "xargs -0 -n1 rm < list; xargs -I{} cp {} dest",
            "find . /tmp -name '*.o' -exec rm {} + -o -execdir mv {} x \\;",
            "bash -o pipefail -ec 'rm a; sh -c \"rm b\"' arg0 arg1",
            "bash script.sh; . ./env.sh; source <(echo x)",
            "eval 'rm a' \"rm b\"; trap 'rm c' EXIT; trap - INT; alias l='ls -l' r='rm d'",
            "command -v rm; command -p rm x; builtin cd /tmp; exec 3>&1; exec rm y",
            "cat <<EOF > out.txt\n$(rm a) `rm b` ${x:-`rm c`}\nEOF",
            "cat <<'EOF' >> log\n$(rm a) `rm b`\nEOF",
            "sh <<< 'rm x'; bash < script.sh",
            "echo x > /dev/null 2> err.log &> both.log >| forced >&2 >& all.log 3<&0",
            "cd sub && rm ../x; cd; cd -; pushd /tmp",
            "PATH=/tmp:$PATH cargo test; LD_PRELOAD=x.so ls; env BASH_ENV=x bash -c ls",
            "x='$(rm y)'; declare -n ref=PATH; echo ${x@P}",
            "hash -p /tmp/evil ls; enable -f ./x.so x; printf -v PATH %s /tmp",
            "sudo -D /tmp rm x; env -C /tmp rm x; nice --weird rm x; timeout $T rm x",
            "sudo -u $USER rm x; env A=$B rm x",
            "$'\\x72m' a; r''m b; \\rm c; \"r\"m d; r{m,} e; /bin/r? f",
        ];
        let rendered: String = lines.iter().map(|line| render(line)).collect();
        insta::assert_snapshot!(rendered);
    }
}
