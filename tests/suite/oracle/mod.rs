//! The differential suite: OpenCode 1.18.34 is the oracle.
//!
//! Each case ([`cases::all`]) runs through `opencode run --format json` and through
//! `session run --format json`, each in its own temporary home and git project against its own
//! copy of one scripted OpenAI-compatible server, then compares, after normalising ids, times,
//! hashes and folders ([`normalize`]):
//!
//! - `stored`: `opencode export` against `session sessions export` (parts, tool states, inputs,
//!   outputs, errors, metadata, tokens, cost, finish);
//! - `sent`: every request (its kind, the headers that matter and, for the agent's own
//!   requests, the body: messages, tool results as the model sees them, tools and their
//!   parameter schemas; the wording of system prompts and tool descriptions is hidden);
//! - `printed`: the JSON lines and the exit status of each run.
//!
//! A case that needs the HTTP API ([`cases::Case::serve`]) runs through `opencode serve` and
//! `session serve` instead ([`serve`]); its `printed` is then the JSON of each HTTP response.
//!
//! A difference passes only when [`allow`] lists it: [`allow::KEPT`], the differences kept on
//! purpose (each names its docs/SPEC.md §17 entry), [`allow::OPEN`], differences found and not
//! fixed yet, or [`allow::RACES`], values OpenCode's run can exit before writing (these pass
//! only when OpenCode's side is empty). An entry of the first two that no run shows fails the
//! suite, so the lists never go stale. `ORACLE_CASES=a,b` runs only those cases (stale entries
//! are then checked for those cases only); the report of every run is written to `$CARGO_TARGET_TMPDIR/oracle-report.txt`
//! and its captures to `oracle-captures.json` there, which `ORACLE_REPLAY=<file>` compares again
//! without running the agents.

mod agents;
mod allow;
mod cases;
mod normalize;
mod serve;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use futures_util::StreamExt as _;
use serde_json::Value;

use agents::{Agent, Capture, capture};
use allow::{Allowed, Why};
use normalize::{Difference, diff, path_matches};

/// Cases run at once (each runs both agents at once; OpenCode takes a few seconds of CPU).
const PARALLEL: usize = 3;

/// The three things compared, in report order.
const CHANNELS: [&str; 3] = ["stored", "sent", "printed"];

/// How one behaviour (a case's channel) came out.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Outcome {
    /// No difference at all.
    Same,
    /// Only differences kept on purpose.
    Kept,
    /// Only differences where OpenCode lost a race with its own exit.
    Race,
    /// Differences still open.
    Open,
    /// Differences nobody listed: the suite fails.
    Unexplained,
}

struct CaseResult {
    name: &'static str,
    about: &'static str,
    exact: Vec<&'static str>,
    differences: Vec<Difference>,
    opencode: Capture,
    session: Capture,
}

async fn run_case(case: cases::Case, saved: Option<&Value>) -> CaseResult {
    let (opencode, session) = match saved.map(|all| &all[case.name]).filter(|v| v.is_object()) {
        Some(saved) => (Capture::from_value(&saved["opencode"]), Capture::from_value(&saved["session"])),
        None => tokio::join!(capture(Agent::OpenCode, &case), capture(Agent::Session, &case)),
    };
    let mut differences = Vec::new();
    diff("stored", &opencode.stored, &session.stored, &mut differences);
    diff("sent", &opencode.sent, &session.sent, &mut differences);
    let printed = |capture: &Capture| normalize::printed_in_call_order(&capture.printed);
    diff("printed", &printed(&opencode), &printed(&session), &mut differences);
    CaseResult { name: case.name, about: case.about, exact: case.exact, differences, opencode, session }
}

/// The first entry of `lists` that explains `difference` in `case`; none for a path the case
/// wants exact.
fn explain<'a>(
    lists: &'a [&'a [Allowed]],
    case: &str,
    exact: &[&str],
    difference: &Difference,
) -> Option<&'a Allowed> {
    if exact.iter().any(|pattern| path_matches(pattern, &difference.path)) {
        return None;
    }
    lists.iter().flat_map(|list| list.iter()).find(|entry| {
        (entry.case == "*" || entry.case == case)
            && path_matches(entry.path, &difference.path)
            && (!matches!(entry.why, Why::Race(_)) || allow::empty(&difference.opencode))
    })
}

fn short(value: &Value) -> String {
    let text = value.to_string();
    if text.chars().count() > 300 {
        format!("{}…", text.chars().take(300).collect::<String>())
    } else {
        text
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn opencode_and_session_differ_only_where_the_lists_say() {
    let only: Option<Vec<String>> =
        std::env::var("ORACLE_CASES").ok().map(|v| v.split(',').map(|s| s.trim().to_owned()).collect());
    let selected: Vec<cases::Case> = cases::all()
        .into_iter()
        .filter(|case| only.as_ref().is_none_or(|names| names.iter().any(|n| n == case.name)))
        .collect();
    assert!(!selected.is_empty(), "ORACLE_CASES names no case");
    let names: Vec<&'static str> = selected.iter().map(|c| c.name).collect();
    // `ORACLE_REPLAY=<captures.json>` compares the captures of an earlier run instead of running
    // the agents (to work on the lists); every normal run saves its captures for that.
    let saved: Option<Value> = std::env::var_os("ORACLE_REPLAY")
        .map(|path| serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap());
    let mut results: Vec<CaseResult> = futures_util::stream::iter(selected)
        .map(|case| run_case(case, saved.as_ref()))
        .buffer_unordered(PARALLEL)
        .collect()
        .await;
    results.sort_by_key(|r| names.iter().position(|n| *n == r.name));

    let lists: [&[Allowed]; 3] = [allow::KEPT, allow::OPEN, allow::RACES];
    let mut used = vec![false; allow::KEPT.len() + allow::OPEN.len() + allow::RACES.len()];
    let all_entries: Vec<&Allowed> = lists.iter().flat_map(|l| l.iter()).collect();
    let mut report = String::new();
    let mut unexplained = String::new();
    let mut outcomes: BTreeMap<Outcome, usize> = BTreeMap::new();
    for result in &results {
        let mut per_channel = [Outcome::Same; 3];
        for difference in &result.differences {
            let channel = CHANNELS.iter().position(|c| difference.path.starts_with(c)).unwrap_or(0);
            let outcome = match explain(&lists, result.name, &result.exact, difference) {
                Some(entry) => {
                    let index = all_entries.iter().position(|e| std::ptr::eq(*e, entry)).unwrap();
                    used[index] = true;
                    match entry.why {
                        Why::Kept(_) => Outcome::Kept,
                        Why::Open(_) => Outcome::Open,
                        Why::Race(_) => Outcome::Race,
                    }
                }
                None => {
                    let _ = writeln!(
                        unexplained,
                        "{} {}\n    opencode: {}\n    session:  {}",
                        result.name,
                        difference.path,
                        short(&difference.opencode),
                        short(&difference.session)
                    );
                    Outcome::Unexplained
                }
            };
            per_channel[channel] = per_channel[channel].max(outcome);
        }
        for (channel, outcome) in CHANNELS.iter().zip(per_channel) {
            *outcomes.entry(outcome).or_default() += 1;
            let _ = writeln!(
                report,
                "{:<28} {:<8} {:<12} {}",
                result.name,
                channel,
                format!("{outcome:?}"),
                result.about
            );
        }
    }
    let stale: Vec<String> = all_entries
        .iter()
        .zip(&used)
        .filter(|(entry, used)| {
            !**used
                && !matches!(entry.why, Why::Race(_))
                && (entry.case == "*" && only.is_none() || names.contains(&entry.case))
        })
        .map(|(entry, _)| format!("{} {}: {}", entry.case, entry.path, entry.why))
        .collect();
    let _ = writeln!(report, "\nlisted differences seen:");
    for (entry, used) in all_entries.iter().zip(&used).filter(|(_, used)| **used) {
        let _ = (used, writeln!(report, "  {} {}: {}", entry.case, entry.path, entry.why));
    }
    let behaviours = results.len() * CHANNELS.len();
    let _ = writeln!(
        report,
        "\n{} cases, {behaviours} behaviours: {} the same, {} differ only on purpose, {} where OpenCode lost its own race, {} open, {} unexplained",
        results.len(),
        outcomes.get(&Outcome::Same).unwrap_or(&0),
        outcomes.get(&Outcome::Kept).unwrap_or(&0),
        outcomes.get(&Outcome::Race).unwrap_or(&0),
        outcomes.get(&Outcome::Open).unwrap_or(&0),
        outcomes.get(&Outcome::Unexplained).unwrap_or(&0),
    );
    let tmp = std::path::Path::new(env!("CARGO_TARGET_TMPDIR"));
    if saved.is_none() {
        let captures: serde_json::Map<String, Value> = results
            .iter()
            .map(|r| {
                (
                    r.name.to_owned(),
                    serde_json::json!({"opencode": r.opencode.to_value(), "session": r.session.to_value()}),
                )
            })
            .collect();
        std::fs::write(tmp.join("oracle-captures.json"), Value::Object(captures).to_string()).unwrap();
    }
    let path = tmp.join("oracle-report.txt");
    let mut full = report.clone();
    for result in &results {
        let _ = writeln!(
            full,
            "\n=== {}\n--- opencode stored\n{}\n--- session stored\n{}\n--- opencode sent\n{}\n--- session sent\n{}\n--- opencode printed\n{}\n--- session printed\n{}\n--- logs\n{}{}",
            result.name,
            serde_json::to_string_pretty(&result.opencode.stored).unwrap_or_default(),
            serde_json::to_string_pretty(&result.session.stored).unwrap_or_default(),
            serde_json::to_string_pretty(&result.opencode.sent).unwrap_or_default(),
            serde_json::to_string_pretty(&result.session.sent).unwrap_or_default(),
            serde_json::to_string_pretty(&result.opencode.printed).unwrap_or_default(),
            serde_json::to_string_pretty(&result.session.printed).unwrap_or_default(),
            result.opencode.log,
            result.session.log,
        );
    }
    let _ = writeln!(full, "\n=== unexplained\n{unexplained}");
    std::fs::write(&path, &full).unwrap();
    eprintln!("{report}\n(details in {})", path.display());
    assert!(
        unexplained.is_empty(),
        "differences no list explains:\n{unexplained}\n(details in {})",
        path.display()
    );
    assert!(stale.is_empty(), "listed differences no run showed (remove them):\n{}", stale.join("\n"));
}

#[test]
fn every_kept_difference_names_an_entry_of_spec_section_17() {
    let spec = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../docs/SPEC.md")).unwrap();
    let section = spec.split("## 17.").nth(1).expect("docs/SPEC.md has a §17");
    let section = section.split("\n## ").next().unwrap_or(section);
    for entry in allow::KEPT {
        let Why::Kept(title) = entry.why else {
            panic!("{} {} is in KEPT but not kept", entry.case, entry.path)
        };
        assert!(
            section.contains(&format!("**{title}**")),
            "§17 has no entry **{title}** for {} {}",
            entry.case,
            entry.path
        );
    }
    for entry in allow::OPEN {
        assert!(matches!(entry.why, Why::Open(_)), "{} {} is in OPEN but kept", entry.case, entry.path);
    }
    for entry in allow::RACES {
        assert!(
            matches!(entry.why, Why::Race(_)),
            "{} {} is in RACES but not a race",
            entry.case,
            entry.path
        );
    }
}

#[test]
fn every_listed_difference_names_a_case() {
    let names: Vec<&str> = cases::all().iter().map(|c| c.name).collect();
    for entry in allow::KEPT.iter().chain(allow::OPEN).chain(allow::RACES) {
        assert!(entry.case == "*" || names.contains(&entry.case), "no case {}", entry.case);
        assert!(CHANNELS.iter().any(|c| entry.path.starts_with(c)), "{} names no channel", entry.path);
    }
}
