//! Bash permission patterns: every spelling below goes through the real
//! `bash` tool's ask path — the analysis, the deny pre-check, the permission engine with the
//! rules, an asker that records every ask and answers "once" — with a shell that runs nothing
//! (`/bin/true -c ...`), and its verdict is compared with the table. A second test runs the
//! real bash with the denied spellings and checks that a marker file survives.

use std::fmt::Write as _;
use std::sync::Arc;

use serde_json::{Value, json};
use session_core::permission::{PermissionAsk, PermissionError, Rule, rules_from_config};
use session_tools::{
    BashTool, PermissionAnswer, PermissionEngine, ToolError, ToolExecutor, Workspace, builtin_registry,
};

use super::support::{Fixture, ScriptedAsker, build_rules};

/// `{"bash": {"*": "ask", "cargo test*": "allow", "git status*": "allow", "rm *": "deny"}}`
/// after the build agent's rules.
fn table_rules() -> Vec<Rule> {
    let config =
        json!({"bash": {"*": "ask", "cargo test*": "allow", "git status*": "allow", "rm *": "deny"}});
    let mut rules = build_rules();
    rules.extend(rules_from_config(&config, None).unwrap());
    rules
}

/// A fixture whose `bash` tool runs `shell -c command` (with `/bin/true`, nothing runs).
fn fixture(rules: Vec<Rule>, shell: &str) -> Fixture {
    let asker = ScriptedAsker::new(|_| Some(PermissionAnswer::once()));
    let mut fx = Fixture::with(asker.clone(), rules, Some("home"));
    let mut registry = builtin_registry().unwrap();
    registry.register(Arc::new(BashTool::with_shell(shell))).unwrap();
    let workspace = Workspace::new(&fx.root).unwrap().with_home(fx.outside.join("home"));
    fx.executor = Arc::new(ToolExecutor::new(registry, workspace, Arc::new(PermissionEngine::new(asker))));
    fx
}

/// What the tool did with a command: `allow` (ran, nothing asked), `deny` (refused, nothing
/// asked), `cannot` (the bash ask was made whatever the rules say: the analysis could not
/// follow the command), or `ask <permissions>` (what was asked, in order).
async fn verdict(fx: &Fixture, command: &str) -> (String, Vec<PermissionAsk>) {
    fx.asker.asks.lock().unwrap().clear();
    let result = fx.run("bash", json!({"command": command, "description": "table row"})).await;
    let asks = fx.asker.asked();
    let verdict = match result {
        Err(ToolError::Permission(PermissionError::Denied { .. })) if asks.is_empty() => "deny".to_owned(),
        Err(other) => format!("error {other}"),
        Ok(_) if asks.is_empty() => "allow".to_owned(),
        Ok(_) if asks.iter().any(|ask| ask.request.metadata.contains_key("unanalysable")) => {
            "cannot".to_owned()
        }
        Ok(_) => format!(
            "ask {}",
            asks.iter().map(|a| a.request.permission.as_str()).collect::<Vec<_>>().join(",")
        ),
    };
    (verdict, asks)
}

/// Spellings that run `rm` (on `x`, `y`, `list`'s lines), all refused by `"rm *": "deny"`, or
/// asked when the analysis cannot see the command name.
const RM_SPELLINGS: &[(&str, &str)] = &[
    ("rm x", "deny"),
    ("rm -rf x", "deny"),
    ("FOO=1 rm x", "deny"),
    ("env rm x", "deny"),
    ("env -i FOO=1 rm x", "deny"),
    ("/usr/bin/env rm x", "deny"),
    ("command rm x", "deny"),
    ("builtin command rm x", "deny"),
    ("\\rm x", "deny"),
    ("'rm' x", "deny"),
    ("\"r\"m x", "deny"),
    ("r''m x", "deny"),
    ("$'\\x72m' x", "deny"),
    ("$(echo rm) x", "cannot"),
    ("`echo rm` x", "cannot"),
    ("$RM x", "cannot"),
    ("r\\\nm x", "cannot"),
    ("cargo test \"$(rm x)\"", "deny"),
    ("cargo test `rm x`", "deny"),
    ("cargo test ${x:-$(rm y)}", "deny"),
    ("cargo test ${x:-`rm y`}", "deny"),
    ("echo `echo \\`rm x\\``", "deny"),
    ("echo \"$(echo \"$(rm x)\")\"", "deny"),
    ("(rm x)", "deny"),
    ("{ rm x; }", "deny"),
    ("if true; then rm x; fi", "deny"),
    ("if rm x; then :; fi", "deny"),
    ("for f in x; do rm $f; done", "deny"),
    ("while rm x; do break; done", "deny"),
    ("until rm x; do :; done", "deny"),
    ("case a in a) rm x;; esac", "deny"),
    ("f() { rm x; }; f", "deny"),
    ("! rm x", "deny"),
    ("echo ok && rm x", "deny"),
    ("false || rm x", "deny"),
    ("echo x | rm x", "deny"),
    ("xargs rm < list", "deny"),
    ("echo x | xargs -I{} rm {}", "deny"),
    ("sudo rm x", "deny"),
    ("sudo -u root rm x", "deny"),
    ("doas rm x", "deny"),
    ("nohup rm x &", "deny"),
    ("timeout 5 rm x", "deny"),
    ("timeout -s KILL 5 rm x", "deny"),
    ("nice -n 5 rm x", "deny"),
    ("nice rm x", "deny"),
    ("exec rm x", "deny"),
    ("time rm x", "deny"),
    ("stdbuf -oL rm x", "deny"),
    ("setsid -w rm x", "deny"),
    ("coproc rm x", "deny"),
    ("busybox rm x", "deny"),
    ("bash -c 'rm x'", "deny"),
    ("sh -c \"rm x\"", "deny"),
    ("zsh -c 'rm x'", "deny"),
    ("bash -lc 'rm x'", "deny"),
    ("bash -c \"bash -c 'rm x'\"", "deny"),
    ("eval \"rm x\"", "deny"),
    ("eval rm x", "deny"),
    ("eval -- rm x", "deny"),
    ("su -c 'rm x'", "deny"),
    ("watch -n 1 rm x", "deny"),
    ("ionice -c 3 rm x", "deny"),
    ("cat <(rm x)", "deny"),
    ("echo >(rm x)", "deny"),
    ("/bin/rm x", "deny"),
    ("cat <<EOF\n$(rm x)\nEOF", "deny"),
    ("cat <<EOF\n`rm x`\nEOF", "deny"),
    ("bash <<'EOF'\nrm x\nEOF", "deny"),
    ("bash <<< 'rm x'", "deny"),
    ("source /dev/stdin <<< 'rm x'", "deny"),
    ("trap 'rm x' EXIT", "deny"),
    ("shopt -s expand_aliases\nalias r='rm x'\nr", "deny"),
    ("find . -name x -exec rm {} \\;", "deny"),
    ("echo rm x | bash", "cannot"),
    ("eval \"$CMD\"", "cannot"),
];

/// Everything else under the same rules.
const OTHER_ROWS: &[(&str, &str)] = &[
    ("cargo test", "allow"),
    ("cargo test --all -- --nocapture", "allow"),
    ("git status", "allow"),
    ("git status -s && cargo test", "allow"),
    ("x=1; cargo test", "allow"),
    ("timeout 60 cargo test", "allow"),
    ("nohup cargo test &", "allow"),
    ("cargo test 2>&1", "allow"),
    ("cargo test > /dev/null 2>&1", "allow"),
    ("cargo test > out.txt", "allow"),
    ("x=$(git status) && cargo test", "allow"),
    ("cd sub && cargo test", "allow"),
    ("ls", "ask bash"),
    ("git status; ls", "ask bash"),
    ("cargo build", "ask bash"),
    ("cargo test \"$(touch x)\"", "ask bash"),
    ("cargo test `touch x`", "ask bash"),
    ("cargo test $(touch x)", "ask bash"),
    ("cargo test <(touch x)", "ask bash"),
    ("sudo cargo test", "ask bash"),
    // Assignments can make an allowed program run another: the line as written is checked.
    ("RUST_LOG=debug cargo test", "ask bash"),
    ("GIT_CONFIG_PARAMETERS=\"'core.fsmonitor=touch x'\" git status", "ask bash"),
    ("env GIT_SSH_COMMAND=evil git status", "ask bash"),
    ("export RUSTC_WRAPPER=./evil; cargo test", "ask bash"),
    ("RUSTFLAGS=-Clinker=./evil; cargo test", "ask bash"),
    ("command -v rm", "ask bash"),
    ("bash script.sh", "ask bash"),
    ("echo x > /dev/null", "ask bash"),
    ("cargo test > {OUT}/log", "ask external_directory"),
    ("cargo test > ~/.bashrc", "ask external_directory"),
    ("$CMD", "cannot"),
    ("bash -c \"$x\"", "cannot"),
    ("echo \"unterminated", "cannot"),
    ("cargo test \"x", "cannot"),
    ("PATH=/tmp cargo test", "cannot"),
    ("export PATH=/tmp:$PATH; cargo test", "cannot"),
    ("cargo test > \"$LOG\"", "cannot"),
    ("echo x <> f", "cannot"),
];

/// Path arguments and redirections outside the workspace under the build agent's rules
/// (everything allowed, `external_directory` asks).
const EXTERNAL_ROWS: &[(&str, &str)] = &[
    ("rm {OUT}/f", "ask external_directory"),
    ("FOO=1 rm {OUT}/f", "ask external_directory"),
    ("env FOO=1 rm {OUT}/f", "ask external_directory"),
    ("sudo rm {OUT}/f", "ask external_directory"),
    ("nohup timeout 5 rm {OUT}/f", "ask external_directory"),
    ("bash -c 'rm {OUT}/f'", "ask external_directory"),
    ("/bin/rm -- {OUT}/f", "ask external_directory"),
    ("find {OUT} -exec rm {} +", "ask external_directory"),
    ("echo x | tee {OUT}/f", "ask external_directory"),
    ("cp -t {OUT} x", "ask external_directory"),
    ("cp --target-directory={OUT} x", "ask external_directory"),
    ("echo x > {OUT}/f", "ask external_directory"),
    ("echo x >> ~/.bashrc", "ask external_directory"),
    ("echo x &> {OUT}/f", "ask external_directory"),
    ("cd {OUT} && rm f", "ask external_directory"),
    // Relative paths count from the line's folder and from every folder it `cd`s into.
    ("cd sub; rm ../f", "ask external_directory"),
    ("rm ../*", "ask external_directory"),
    ("rm \"$HOME/f\"", "cannot"),
    ("cp \"$(echo ~/.gitconfig)\" .", "cannot"),
    ("rm inside.txt", "allow"),
    ("echo x > inside.txt && cd sub && rm -f inside.txt", "allow"),
];

fn render_request(ask: &PermissionAsk, fx: &Fixture) -> String {
    let shown = |value: &Value| {
        let tmp = fx.outside.parent().unwrap().to_str().unwrap();
        let text = value.to_string().replace(fx.outside.to_str().unwrap(), "{OUT}");
        text.replace(fx.root.to_str().unwrap(), "{ROOT}").replace(&format!("\"{tmp}/"), "\"{TMP}/")
    };
    let mut line = format!(
        "{}: {} always {}",
        ask.request.permission,
        shown(&json!(ask.request.patterns)),
        shown(&json!(ask.request.always))
    );
    if let Some(reasons) = ask.request.metadata.get("unanalysable") {
        write!(line, " unanalysable {}", shown(reasons)).unwrap();
    }
    line
}

async fn check(fx: &Fixture, rows: &[(&str, &str)], rendered: &mut String) -> Vec<String> {
    let mut wrong = Vec::new();
    for (command, expected) in rows {
        let command = command.replace("{OUT}", fx.outside.to_str().unwrap());
        let (verdict, asks) = verdict(fx, &command).await;
        if verdict != *expected {
            wrong.push(format!("{command:?}: expected {expected}, got {verdict} ({asks:#?})"));
        }
        let shown = command.replace(fx.outside.to_str().unwrap(), "{OUT}");
        writeln!(rendered, "{shown:?} => {verdict}").unwrap();
        for ask in &asks {
            writeln!(rendered, "    {}", render_request(ask, fx)).unwrap();
        }
    }
    wrong
}

#[tokio::test]
async fn spellings_of_commands_get_the_verdict_of_what_runs() {
    assert!(RM_SPELLINGS.len() >= 30 && RM_SPELLINGS.len() + OTHER_ROWS.len() + EXTERNAL_ROWS.len() >= 60);
    let mut rendered = String::new();
    let fx = fixture(table_rules(), "/bin/true");
    std::fs::create_dir_all(fx.root.join("sub")).unwrap();
    let mut wrong = check(&fx, RM_SPELLINGS, &mut rendered).await;
    wrong.extend(check(&fx, OTHER_ROWS, &mut rendered).await);
    let fx = fixture(build_rules(), "/bin/true");
    std::fs::create_dir_all(fx.root.join("sub")).unwrap();
    wrong.extend(check(&fx, EXTERNAL_ROWS, &mut rendered).await);
    assert!(wrong.is_empty(), "{} rows differ:\n{}", wrong.len(), wrong.join("\n"));
    insta::assert_snapshot!("bash_pattern_verdicts", rendered);
}

/// Rows whose `rm` runs in the background or needs a program this machine may lack: the
/// sanity run below skips them (the refusal run does not).
fn runs_rm_reliably(command: &str) -> bool {
    // `watch` runs its command until it is killed.
    let background = ["nohup rm x &", "coproc rm x", "echo >(rm x)", "watch -n 1 rm x"];
    let missing = ["sudo", "doas", "busybox", "zsh", "su", "ionice"].into_iter().any(|program| {
        command.split_whitespace().any(|word| word == program)
            && !std::process::Command::new("sh")
                .arg("-c")
                .arg(format!("command -v {program}"))
                .output()
                .is_ok_and(|out| out.status.success())
    });
    let no_rm = ["$RM x", "eval \"$CMD\""];
    !background.contains(&command) && !no_rm.contains(&command) && !missing
}

/// Puts fresh `x`, `y` and `list` (naming `x`) in the workspace.
fn markers(fx: &Fixture) {
    fx.write("x", "marker");
    fx.write("y", "marker");
    fx.write("list", "x\n");
}

#[tokio::test]
async fn denied_and_unanalysable_spellings_run_nothing_with_the_real_shell() {
    // The real bash, the table's rules, and an asker that rejects: nothing may run.
    let asker = ScriptedAsker::rejecting();
    let fx = Fixture::with(asker, table_rules(), Some("home"));
    for (command, expected) in RM_SPELLINGS {
        markers(&fx);
        let input = json!({"command": command, "description": "refused", "timeout": 10_000});
        let result = fx.run("bash", input).await;
        assert!(result.is_err(), "{command:?} ({expected}) ran: {result:?}");
        for marker in ["x", "y"] {
            assert!(fx.root.join(marker).exists(), "{command:?} removed {marker}");
        }
    }
    // The same spellings, allowed, do remove a marker: they are real spellings of rm (the
    // outer `cargo test` swapped for `echo`, which runs the same substitutions).
    let asker = ScriptedAsker::new(|_| Some(PermissionAnswer::once()));
    let fx = Fixture::with(asker, build_rules(), Some("home"));
    for (command, _) in RM_SPELLINGS.iter().filter(|(command, _)| runs_rm_reliably(command)) {
        markers(&fx);
        let command = command.replace("cargo test", "echo");
        let input = json!({"command": command, "description": "allowed", "timeout": 10_000});
        fx.run("bash", input).await.unwrap();
        let removed = ["x", "y"].iter().any(|marker| !fx.root.join(marker).exists());
        assert!(removed, "{command:?} removed nothing: not a spelling of rm");
    }
}

#[tokio::test]
async fn one_denied_command_refuses_the_whole_line_before_anything_runs() {
    let fx = Fixture::with(ScriptedAsker::rejecting(), table_rules(), Some("home"));
    for command in
        ["echo hi > created; rm x", "touch created && FOO=1 rm x", "cargo test > created \"$(env rm x)\""]
    {
        markers(&fx);
        let error = fx.run("bash", json!({"command": command, "description": "denied"})).await.unwrap_err();
        assert!(
            matches!(error, ToolError::Permission(PermissionError::Denied { .. })),
            "{command:?}: {error:?}"
        );
        assert!(fx.asker.asked().is_empty(), "{command:?} asked before the deny");
        assert!(!fx.root.join("created").exists(), "{command:?} ran a part of the line");
        assert!(fx.root.join("x").exists());
    }
    // Outside the workspace behind an assignment or a wrapper: asked, rejected, kept.
    let fx = Fixture::with(ScriptedAsker::rejecting(), build_rules(), Some("home"));
    let target = fx.write_outside("keep.txt", "keep");
    for command in ["FOO=1 rm {}", "env -i nohup rm -f {}", "bash -c 'cd / && rm {}'"] {
        let command = command.replace("{}", target.to_str().unwrap());
        let result = fx.run("bash", json!({"command": command, "description": "outside"})).await;
        assert!(result.is_err(), "{command:?} ran");
        assert_eq!(fx.asker.permissions().last().map(String::as_str), Some("external_directory"));
        assert!(target.exists(), "{command:?} removed the outside file");
    }
}
