//! One simple command: its assignments stripped, its wrappers unwrapped, the strings it runs
//! analysed, and its path arguments picked out.

use tree_sitter::Node;

use super::options::{
    COMMAND, DOAS, EMPTY, ENV, EXEC, IONICE, Options, SETSID, STDBUF, SUDO, Spec, TIME, TIMEOUT, WATCH,
    XARGS, assignment_name, skip_options,
};
use super::walk::{Walker, heredoc_is_quoted, operator};
use super::words::{Word, text, word};
use super::{MAX_WRAPPERS, PATH_COMMANDS, Run, Step, basename, hijacks};

/// What a command's standard input is, where the command line says.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Stdin {
    /// Nothing on the command itself redirects it: a pipe, a file or the tool's empty input.
    Inherited,
    /// A here-string or here-document whose text is literal.
    Literal(String),
    /// A file, a descriptor, or a here-document that expands.
    Other,
}

/// Where the arguments that a wrapper adds at run time come from.
#[derive(Debug, Clone)]
enum Added {
    /// None are added.
    Nothing,
    /// From the input (`xargs`).
    Input(&'static str),
    /// Files found under these starting points (`find -exec`).
    Found(Vec<Word>),
}

/// What the first word of a (possibly already unwrapped) command makes of the rest.
enum Layer {
    /// The command runs as it is.
    Run,
    /// A wrapper: its command starts after `skip` more words.
    /// `checked_always`: the wrapper changes who runs the command or its environment.
    Wrap { skip: usize, checked_always: bool, adds: Option<Added> },
    /// It runs these strings as shell code.
    Strings(Vec<String>),
    /// `find` with `-exec`: these word ranges (of the arguments) are commands.
    Find { commands: Vec<std::ops::Range<usize>>, starts: Vec<Word> },
    /// What it runs cannot be told.
    Cannot(String),
}

const SHELLS: [&str; 7] = ["sh", "bash", "dash", "zsh", "ksh", "mksh", "ash"];
const STDIN_FILES: [&str; 3] = ["/dev/stdin", "/dev/fd/0", "/proc/self/fd/0"];

fn texts(words: &[Word]) -> Vec<String> {
    words.iter().map(|word| word.text().to_owned()).collect()
}

impl Walker<'_> {
    pub(super) fn command(&mut self, node: Node<'_>, parent: Option<Node<'_>>) {
        let mut assignments = Vec::new();
        let mut words = Vec::new();
        let mut cursor = node.walk();
        for child in node.children(&mut cursor) {
            match child.kind() {
                "variable_assignment" => assignments.push(self.assignment_text(child)),
                "file_redirect" | "herestring_redirect" | "heredoc_redirect" | "comment" => {}
                _ => words.push(word(child, self.source)),
            }
        }
        let stdin = self.stdin(node, parent);
        self.resolve(&assignments, &words, &stdin, Added::Nothing, 0);
    }

    /// `NAME=value` as a pattern shows it: the value unquoted where static.
    pub(super) fn assignment_text(&self, node: Node<'_>) -> String {
        match node.child_by_field_name("value") {
            Some(value) => {
                let head = self.source.get(node.start_byte()..value.start_byte()).unwrap_or_default();
                format!("{head}{}", word(value, self.source).text())
            }
            None => text(node, self.source).to_owned(),
        }
    }

    /// The command's input as its own redirections and those of its statement set it (the
    /// last one wins, as in bash).
    fn stdin(&self, node: Node<'_>, parent: Option<Node<'_>>) -> Stdin {
        let mut redirects = Vec::new();
        let mut cursor = node.walk();
        redirects.extend(node.children(&mut cursor));
        if let Some(parent) = parent
            && parent.kind() == "redirected_statement"
            && parent.child_by_field_name("body").is_some_and(|body| body.id() == node.id())
        {
            let mut cursor = parent.walk();
            redirects.extend(parent.children(&mut cursor));
        }
        let mut stdin = Stdin::Inherited;
        for redirect in redirects {
            match redirect.kind() {
                "herestring_redirect" => {
                    let mut cursor = redirect.walk();
                    let value =
                        redirect.named_children(&mut cursor).last().and_then(|w| word(w, self.source).value);
                    stdin = value.map_or(Stdin::Other, |value| Stdin::Literal(format!("{value}\n")));
                }
                "heredoc_redirect" => {
                    stdin = self.heredoc_text(redirect).map_or(Stdin::Other, Stdin::Literal)
                }
                "file_redirect" => {
                    let descriptor = redirect.child_by_field_name("descriptor").map(|d| text(d, self.source));
                    let reads = operator(redirect, self.source).is_some_and(|op| op.starts_with('<'));
                    if descriptor.is_none_or(|d| d == "0") && reads {
                        stdin = Stdin::Other;
                    }
                }
                _ => {}
            }
        }
        stdin
    }

    /// The text of a here-document when it is literal: a quoted delimiter, or a body with
    /// nothing that expands.
    fn heredoc_text(&self, redirect: Node<'_>) -> Option<String> {
        let mut cursor = redirect.walk();
        let body = redirect.children(&mut cursor).find(|child| child.kind() == "heredoc_body")?;
        let content = text(body, self.source);
        if heredoc_is_quoted(redirect, self.source) {
            return Some(content.to_owned());
        }
        let mut cursor = body.walk();
        let plain = body.named_children(&mut cursor).all(|child| child.kind() == "heredoc_content")
            && !content.contains(['$', '`', '\\']);
        plain.then(|| content.to_owned())
    }

    /// Follows one command through its assignments and wrappers to what runs.
    /// `finds` counts the `find -exec` commands this one is inside.
    fn resolve(&mut self, assignments: &[String], words: &[Word], stdin: &Stdin, added: Added, finds: usize) {
        if finds > MAX_WRAPPERS {
            self.out.cannot(format!("`find -exec` is nested more than {MAX_WRAPPERS} deep"));
            return;
        }
        if !assignments.is_empty() && !words.is_empty() {
            // The assignments can make an allowed program run another (`GIT_SSH_COMMAND`,
            // `RUSTC_WRAPPER`, ...): the line as written is checked too.
            let mut spelled = assignments.to_vec();
            spelled.extend(texts(words));
            self.spell(spelled, true);
        }
        let mut added = added;
        let mut at = 0;
        for _ in 0..MAX_WRAPPERS {
            let Some(rest) = words.get(at..) else { return };
            let Some((first, args)) = rest.split_first() else { return };
            let Some(name) = first.plain() else {
                self.out.cannot(format!(
                    "the command name `{}` is built from an expansion, a glob or braces",
                    first.raw
                ));
                self.unknown(rest);
                return;
            };
            let base = basename(name).to_owned();
            let mut normal = vec![base.clone()];
            normal.extend(texts(args));
            if base != name {
                self.spell(texts(rest), false);
            }
            match self.layer(&base, args, stdin) {
                Layer::Run => {
                    self.run(normal, args, &added);
                    return;
                }
                Layer::Wrap { skip, .. } if skip >= args.len() => {
                    // A wrapper with no command runs only itself (`env`, `nohup`).
                    self.run(normal, args, &added);
                    return;
                }
                Layer::Wrap { skip, checked_always, adds } => {
                    self.spell(normal, checked_always);
                    if let Some(adds) = adds {
                        added = adds;
                    }
                    at += 1 + skip;
                }
                Layer::Strings(strings) => {
                    // `su -c` runs its string as another user, like `sudo`.
                    self.spell(normal, base == "su");
                    for string in strings {
                        self.nested(&string);
                    }
                    return;
                }
                Layer::Find { commands, starts } => {
                    self.run(normal, args, &added);
                    for range in commands {
                        let command = args.get(range).unwrap_or_default();
                        self.resolve(&[], command, &Stdin::Other, Added::Found(starts.clone()), finds + 1);
                    }
                    return;
                }
                Layer::Cannot(reason) => {
                    self.out.cannot(reason);
                    self.unknown(rest);
                    return;
                }
            }
        }
        self.out.cannot(format!("a command is wrapped in more than {MAX_WRAPPERS} wrappers"));
    }

    fn spell(&mut self, words: Vec<String>, checked_always: bool) {
        self.out.steps.push(Step::Spelling { words, checked_always });
    }

    /// A command the analysis could not follow, kept as written so a deny can still match.
    fn unknown(&mut self, words: &[Word]) {
        let words = words.iter().map(|word| word.raw.clone()).collect();
        self.out.steps.push(Step::Run(Run { words, paths: Vec::new(), known: false }));
    }

    /// A command that runs; a [`PATH_COMMANDS`] one also gets its path arguments.
    fn run(&mut self, words: Vec<String>, args: &[Word], added: &Added) {
        let name = words.first().map(String::as_str).unwrap_or_default();
        let mut paths = Vec::new();
        if PATH_COMMANDS.contains(&name) {
            match added {
                Added::Nothing => {}
                Added::Input(wrapper) => {
                    self.out.cannot(format!("{wrapper} gives {name} its arguments at run time"));
                }
                Added::Found(starts) => {
                    for start in starts {
                        match start.path_prefix() {
                            // A starting point is a folder: the trailing `/` says so.
                            Some(path) if path.ends_with('/') => paths.push(path.to_owned()),
                            Some(path) => paths.push(format!("{path}/")),
                            None => self
                                .out
                                .cannot(format!("find starts at `{}`, which is not static", start.raw)),
                        }
                    }
                }
            }
            let mut options = true;
            for arg in args {
                let value = arg.value.as_deref();
                if options {
                    match value {
                        Some("--") => {
                            options = false;
                            continue;
                        }
                        // `cd -` goes back to a folder the line was already in.
                        Some("-") if name == "cd" || name == "pushd" => continue,
                        // A path glued to an option: `--target-directory=/x`, `-t/x`.
                        Some(v) if v.starts_with("--") && v.contains('=') => {
                            paths.extend(v.split_once('=').map(|(_, path)| path.to_owned()));
                            continue;
                        }
                        Some(v) if v.starts_with('-') && !v.starts_with("--") && v.contains('/') => {
                            paths.extend(v.get(2..).map(str::to_owned));
                            continue;
                        }
                        Some(v) if v.len() > 1 && v.starts_with('-') => continue,
                        Some(v) if name == "chmod" && v.starts_with('+') => continue,
                        _ => {}
                    }
                }
                match arg.path_prefix() {
                    Some(path) => paths.push(path.to_owned()),
                    None => {
                        self.out.cannot(format!("the argument `{}` of {name} is not a static path", arg.raw))
                    }
                }
            }
            if name == "cd" && paths.is_empty() && args.is_empty() {
                paths.push("~".to_owned());
            }
        }
        self.out.steps.push(Step::Run(Run { words, paths, known: true }));
    }

    /// What the command `name` makes of its arguments.
    fn layer(&mut self, name: &str, args: &[Word], stdin: &Stdin) -> Layer {
        let wrap = |skip, checked_always| Layer::Wrap { skip, checked_always, adds: None };
        let options = |spec: &Spec| match skip_options(name, spec, args) {
            Ok(Options::Command(skip)) => wrap(skip, false),
            Ok(Options::NoCommand) => Layer::Run,
            Err(reason) => Layer::Cannot(reason),
        };
        match name {
            "env" => with_assignments(name, args, skip_options(name, &ENV, args), false),
            "sudo" => with_assignments(name, args, skip_options(name, &SUDO, args), true),
            "doas" => match skip_options(name, &DOAS, args) {
                Ok(Options::Command(skip)) => wrap(skip, true),
                Ok(Options::NoCommand) => Layer::Run,
                Err(reason) => Layer::Cannot(reason),
            },
            "command" => options(&COMMAND),
            "exec" => options(&EXEC),
            "time" => options(&TIME),
            "stdbuf" => options(&STDBUF),
            "setsid" => options(&SETSID),
            "nohup" | "builtin" | "coproc" => options(&EMPTY),
            "busybox" => match args.first().and_then(Word::plain) {
                Some(applet) if !applet.starts_with('-') => wrap(0, false),
                _ => Layer::Run,
            },
            "timeout" => match skip_options(name, &TIMEOUT, args) {
                // The duration comes before the command.
                Ok(Options::Command(skip)) if args.get(skip).and_then(Word::plain).is_some() => {
                    wrap(skip + 1, false)
                }
                Ok(Options::Command(skip)) if skip < args.len() => {
                    Layer::Cannot("timeout's duration is built from an expansion".into())
                }
                Ok(_) => Layer::Run,
                Err(reason) => Layer::Cannot(reason),
            },
            "nice" => nice(args),
            "ionice" => options(&IONICE),
            "su" => su(args),
            "watch" => watch(args),
            "xargs" => match skip_options(name, &XARGS, args) {
                Ok(Options::Command(skip)) => {
                    Layer::Wrap { skip, checked_always: false, adds: Some(Added::Input("xargs")) }
                }
                Ok(Options::NoCommand) => Layer::Run,
                Err(reason) => Layer::Cannot(reason),
            },
            // `eval -- rm x` runs `rm x`: the `--` only ends eval's (absent) options.
            "eval" => match args
                .iter()
                .skip(usize::from(args.first().and_then(|a| a.value.as_deref()) == Some("--")))
                .map(|arg| arg.value.clone())
                .collect::<Option<Vec<_>>>()
            {
                Some(values) if values.is_empty() => Layer::Run,
                Some(values) => Layer::Strings(vec![values.join(" ")]),
                None => Layer::Cannot("eval runs a string that is not literal".into()),
            },
            "trap" => trap(args),
            "alias" => alias(args),
            "source" | "." => source(name, args, stdin),
            "hash" | "enable" => {
                let flag = if name == "hash" { 'p' } else { 'f' };
                let loads = args
                    .iter()
                    .any(|arg| arg.value.as_deref().is_none_or(|v| v.starts_with('-') && v.contains(flag)));
                if loads {
                    Layer::Cannot(format!("`{name} -{flag}` makes a name run other code"))
                } else {
                    Layer::Run
                }
            }
            "find" => find(args),
            "read" | "mapfile" | "readarray" | "printf" | "getopts" | "let" | "export" | "declare"
            | "typeset" | "local" | "readonly" => {
                let sets = args.iter().map(Word::text).find(|arg| {
                    let name = arg.split(['=', '[', '+']).next().unwrap_or_default();
                    hijacks(name)
                });
                match sets {
                    Some(arg) => Layer::Cannot(format!(
                        "`{name} {arg}` sets a variable that changes what later commands run"
                    )),
                    None => Layer::Run,
                }
            }
            shell if SHELLS.contains(&shell) => self.shell(shell, args, stdin),
            _ => Layer::Run,
        }
    }

    /// `bash [options] -c STRING`, `bash [options] [-s]` reading its input, `bash SCRIPT`.
    fn shell(&mut self, shell: &str, args: &[Word], stdin: &Stdin) -> Layer {
        let (mut command, mut from_input, mut at) = (false, false, 0);
        while let Some(arg) = args.get(at) {
            let Some(value) = arg.plain() else { break };
            if value == "--" || value == "-" {
                at += 1;
                break;
            }
            if let Some(long) = value.strip_prefix("--") {
                at += if matches!(long, "rcfile" | "init-file") { 2 } else { 1 };
                continue;
            }
            let Some(cluster) = value.strip_prefix('-').or_else(|| value.strip_prefix('+')) else { break };
            let mut takes = 0usize;
            for flag in cluster.chars() {
                match flag {
                    'c' => command = true,
                    's' => from_input = true,
                    'o' | 'O' => takes += 1,
                    _ => {}
                }
            }
            if args.get(at + 1..at + 1 + takes).unwrap_or_default().iter().any(|value| value.splits) {
                return Layer::Cannot(format!("an option of {shell} has a value built from an expansion"));
            }
            at += 1 + takes;
        }
        let operand = args.get(at);
        if command {
            return match operand {
                Some(Word { value: Some(string), .. }) => Layer::Strings(vec![string.clone()]),
                Some(other) => {
                    Layer::Cannot(format!("{shell} -c runs `{}`, which is not literal", other.raw))
                }
                None => Layer::Cannot(format!("{shell} -c is missing its string")),
            };
        }
        match operand {
            Some(script) if !from_input => match script.plain() {
                // A script file: its contents are not seen (see the module docs).
                Some(_) => Layer::Run,
                None => Layer::Cannot(format!(
                    "{shell} runs the script `{}`, whose name is not static",
                    script.raw
                )),
            },
            _ => from_stdin(shell, stdin),
        }
    }
}

/// A shell or `source` that reads the commands it runs from its input.
fn from_stdin(name: &str, stdin: &Stdin) -> Layer {
    match stdin {
        Stdin::Literal(text) => Layer::Strings(vec![text.clone()]),
        Stdin::Inherited | Stdin::Other => Layer::Cannot(format!(
            "{name} runs the commands it reads from its input, which the command line does not show"
        )),
    }
}

fn source(name: &str, args: &[Word], stdin: &Stdin) -> Layer {
    let file = args.iter().find(|arg| arg.value.as_deref() != Some("--"));
    match file {
        None => Layer::Run,
        Some(file) => match file.plain() {
            Some(path) if STDIN_FILES.contains(&path) => from_stdin(name, stdin),
            Some(_) => Layer::Run,
            None => Layer::Cannot(format!("{name} runs `{}`, whose name is not static", file.raw)),
        },
    }
}

/// `trap ACTION SIGNAL...`: the action is shell code that runs on the signal (or at exit).
fn trap(args: &[Word]) -> Layer {
    let operands: Vec<&Word> = args.iter().filter(|arg| arg.value.as_deref() != Some("--")).collect();
    if operands.iter().any(|arg| arg.value.as_deref().is_some_and(|v| matches!(v, "-l" | "-p" | "-P"))) {
        return Layer::Run;
    }
    match operands.as_slice() {
        [action, _, ..] => match action.value.as_deref() {
            Some("" | "-") => Layer::Run,
            Some(code) => Layer::Strings(vec![code.to_owned()]),
            None => Layer::Cannot("trap runs a string that is not literal".into()),
        },
        _ => Layer::Run,
    }
}

/// `alias name=value`: the value runs wherever the name is used later in the line.
fn alias(args: &[Word]) -> Layer {
    let mut strings = Vec::new();
    for arg in args {
        match arg.value.as_deref() {
            Some(definition) => strings.extend(definition.split_once('=').map(|(_, value)| value.to_owned())),
            None => return Layer::Cannot("alias defines a name from a string that is not literal".into()),
        }
    }
    if strings.is_empty() { Layer::Run } else { Layer::Strings(strings) }
}

/// `su [options] [user] -c COMMAND`: the command string runs as another user.
fn su(args: &[Word]) -> Layer {
    let mut at = 0;
    while let Some(arg) = args.get(at) {
        let Some(value) = arg.value.as_deref() else {
            return Layer::Cannot("an argument of su is built from an expansion".into());
        };
        let command = match value {
            "-c" | "--command" | "--session-command" => args.get(at + 1),
            v if v.starts_with("--command=") || v.starts_with("--session-command=") => Some(arg),
            _ => None,
        };
        if let Some(command) = command {
            let string = command
                .value
                .as_deref()
                .map(|v| v.split_once('=').filter(|_| v.starts_with("--")).map_or(v, |(_, s)| s));
            return match string {
                Some(string) => Layer::Strings(vec![string.to_owned()]),
                None => Layer::Cannot("su -c runs a string that is not literal".into()),
            };
        }
        at += 1;
    }
    // An interactive shell, with the tool's empty input: it runs nothing.
    Layer::Run
}

/// `watch [options] COMMAND...`: the words, joined, run through `sh -c` (or as they are
/// with `-x`).
fn watch(args: &[Word]) -> Layer {
    match skip_options("watch", &WATCH, args) {
        Ok(Options::Command(skip)) if skip < args.len() => {
            let exec = args.get(..skip).unwrap_or_default().iter().any(|arg| {
                arg.value.as_deref().is_some_and(|v| {
                    v == "--exec" || (v.starts_with('-') && !v.starts_with("--") && v.contains('x'))
                })
            });
            if exec {
                return Layer::Wrap { skip, checked_always: false, adds: None };
            }
            match args
                .get(skip..)
                .unwrap_or_default()
                .iter()
                .map(|arg| arg.value.clone())
                .collect::<Option<Vec<_>>>()
            {
                Some(words) => Layer::Strings(vec![words.join(" ")]),
                None => Layer::Cannot("watch runs a command that is not literal".into()),
            }
        }
        Ok(_) => Layer::Run,
        Err(reason) => Layer::Cannot(reason),
    }
}

/// `nice [-n N | -N | --adjustment=N] COMMAND`.
fn nice(args: &[Word]) -> Layer {
    let mut at = 0;
    while let Some(arg) = args.get(at) {
        let Some(value) = arg.plain() else {
            return Layer::Cannot("an option of nice is built from an expansion".into());
        };
        match value {
            "--" => return Layer::Wrap { skip: at + 1, checked_always: false, adds: None },
            "-n" | "--adjustment" if args.get(at + 1).is_some_and(|value| value.splits) => {
                return Layer::Cannot("nice's adjustment is built from an expansion".into());
            }
            "-n" | "--adjustment" => at += 2,
            v if v.starts_with("--adjustment=") => at += 1,
            v if v.len() > 1 && v.starts_with('-') => {
                let number = v.trim_start_matches('-').trim_start_matches('n');
                if number.is_empty() || !number.chars().all(|c| c.is_ascii_digit()) {
                    return Layer::Cannot(format!("nice has an option `{v}` the analysis does not know"));
                }
                at += 1;
            }
            _ => break,
        }
    }
    Layer::Wrap { skip: at, checked_always: false, adds: None }
}

/// `find START... EXPRESSION`: each `-exec`/`-execdir`/`-ok`/`-okdir` runs the words up to
/// `;` or `+` on the files found under the starting points.
fn find(args: &[Word]) -> Layer {
    let mut at = 0;
    while let Some(value) = args.get(at).and_then(Word::plain) {
        match value {
            "-H" | "-L" | "-P" => at += 1,
            "-D" => at += 2,
            v if v.starts_with("-O") => at += 1,
            _ => break,
        }
    }
    let expression_at = args
        .iter()
        .skip(at)
        .position(|arg| {
            arg.value.as_deref().is_some_and(|v| v.starts_with('-') || matches!(v, "(" | "!" | ")" | ","))
        })
        .map_or(args.len(), |offset| at + offset);
    let starts = args.get(at..expression_at).unwrap_or_default().to_vec();
    let mut commands = Vec::new();
    let mut index = expression_at;
    while let Some(arg) = args.get(index) {
        let value = arg.value.as_deref();
        let previous = index.checked_sub(1).and_then(|i| args.get(i)).and_then(|w| w.value.as_deref());
        if arg.splits || (value.is_none() && !previous.is_some_and(|p| p.starts_with('-'))) {
            // An unquoted expansion here could split into `-exec ...` itself.
            return Layer::Cannot("find's expression has a word built from an expansion".into());
        }
        if matches!(value, Some("-exec" | "-execdir" | "-ok" | "-okdir")) {
            let end = args
                .iter()
                .skip(index + 1)
                .position(|w| matches!(w.value.as_deref(), Some(";" | "+")))
                .map_or(args.len(), |offset| index + 1 + offset);
            commands.push(index + 1..end);
            index = end + 1;
        } else {
            index += 1;
        }
    }
    Layer::Find { commands, starts }
}

/// Options, then `NAME=value` words (`env`, `sudo`), then the command.
/// `privileged`: the wrapper changes who runs the command (`sudo`).
fn with_assignments(name: &str, args: &[Word], options: Result<Options, String>, privileged: bool) -> Layer {
    let mut at = match options {
        Ok(Options::Command(at)) => at,
        Ok(Options::NoCommand) => return Layer::Run,
        Err(reason) => return Layer::Cannot(reason),
    };
    while let Some(arg) = args.get(at) {
        let Some(variable) = assignment_name(arg.text()) else { break };
        if hijacks(variable) {
            return Layer::Cannot(format!("{name} sets {variable}, which changes what the command runs"));
        }
        if arg.splits {
            // An unquoted expansion in the value could split into more words.
            return Layer::Cannot(format!("{name} sets {variable} to a value built from an expansion"));
        }
        at += 1;
    }
    let assigns = args.get(..at).unwrap_or_default().iter().any(|arg| assignment_name(arg.text()).is_some());
    Layer::Wrap { skip: at, checked_always: privileged || assigns, adds: None }
}
