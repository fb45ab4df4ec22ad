//! The bench report: `<name>.md` (tables) and `<name>.json` (every sample) under the output
//! folder, with the date, the machine and its load.

use std::fmt::Write as _;
use std::path::Path;
use std::process::Command;

use anyhow::{Context, Result};
use serde::Serialize;

use super::aims::Aim;
use super::e2e::EndToEnd;
use super::load::LoadReport;
use super::load_average;
use super::micro::{Estimate, Micro};
use super::peers::Peers;

/// The peers' medians of three published in `../shared/peers/README.md` (2026-11-29, 2 cores):
/// (script, agent, wall s, CPU s, peak RSS MB, first request s, store MB).
pub(crate) const PUBLISHED: &[(&str, &str, f64, f64, f64, f64, f64)] = &[
    ("short", "OpenCode", 3.24, 4.32, 548.0, 2.39, 1.94),
    ("short", "Codex", 0.38, 0.33, 148.0, 0.28, 1.62),
    ("long", "OpenCode", 5.30, 7.19, 676.0, 2.14, 4.83),
    ("long", "Codex", 2.30, 1.44, 150.0, 0.27, 6.16),
];

/// Where and when the figures were taken.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Machine {
    /// UTC date and time.
    pub(crate) date: String,
    /// CPU model.
    pub(crate) cpu: String,
    /// Logical CPUs.
    pub(crate) cores: usize,
    /// Memory, GiB.
    pub(crate) memory_gib: f64,
    /// Kernel release.
    pub(crate) kernel: String,
    /// The workspace's commit (with `+dirty` when the tree has changes).
    pub(crate) commit: String,
    /// One-minute load average when the bench started.
    pub(crate) load_start: f64,
}

fn command_line(program: &str, args: &[&str]) -> Option<String> {
    let output = Command::new(program).args(args).output().ok()?;
    output.status.success().then(|| String::from_utf8_lossy(&output.stdout).trim().to_owned())
}

impl Machine {
    /// Reads the machine's description (empty fields where it cannot).
    pub(crate) fn probe() -> Self {
        let cpuinfo = std::fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let cpu = cpuinfo
            .lines()
            .find_map(|line| line.strip_prefix("model name").and_then(|rest| rest.split_once(':')))
            .map(|(_, name)| name.trim().to_owned())
            .unwrap_or_default();
        let meminfo = std::fs::read_to_string("/proc/meminfo").unwrap_or_default();
        let memory_kib: f64 = meminfo
            .lines()
            .find_map(|line| line.strip_prefix("MemTotal:"))
            .and_then(|rest| rest.split_whitespace().next())
            .and_then(|kib| kib.parse().ok())
            .unwrap_or(0.0);
        let dirty = command_line("git", &["status", "--porcelain"]).is_some_and(|s| !s.is_empty());
        let commit = command_line("git", &["rev-parse", "--short", "HEAD"]).unwrap_or_default();
        Self {
            date: command_line("date", &["-u", "+%Y-%m-%d %H:%M UTC"]).unwrap_or_default(),
            cpu,
            cores: std::thread::available_parallelism().map_or(0, std::num::NonZero::get),
            memory_gib: memory_kib / 1024.0 / 1024.0,
            kernel: std::fs::read_to_string("/proc/sys/kernel/osrelease")
                .map(|s| s.trim().to_owned())
                .unwrap_or_default(),
            commit: if dirty { format!("{commit}+dirty") } else { commit },
            load_start: load_average(),
        }
    }
}

/// One part of a report.
#[derive(Debug, Clone, Serialize)]
#[serde(rename_all = "snake_case")]
pub(crate) enum Section {
    /// The criterion benches.
    Micro(Micro),
    /// The runs of our binary.
    EndToEnd(EndToEnd),
    /// The side by side with the peers.
    Peers(Peers),
    /// The load runs, one per backend.
    Load(Vec<LoadReport>),
    /// The performance aims judged on the other sections, and the parts that could not run.
    Aims {
        /// Every aim.
        aims: Vec<Aim>,
        /// Parts that failed to run, with why.
        not_run: Vec<String>,
    },
}

/// Writes `<name>.md` and `<name>.json` into `out` and prints the markdown.
pub(crate) fn write(out: &Path, name: &str, machine: &Machine, sections: &[Section]) -> Result<()> {
    let mut md = String::new();
    let _ = writeln!(md, "# Benchmarks ({name})\n");
    let _ = writeln!(
        md,
        "{}; {} ({} logical CPUs, {:.0} GiB), Linux {}; commit {}; load average {:.2} at the start, {:.2} at the end.\n",
        machine.date,
        machine.cpu,
        machine.cores,
        machine.memory_gib,
        machine.kernel,
        machine.commit,
        machine.load_start,
        load_average()
    );
    for section in sections {
        match section {
            Section::Micro(micro) => micro_md(&mut md, micro),
            Section::EndToEnd(e2e) => e2e_md(&mut md, e2e),
            Section::Peers(peers) => peers_md(&mut md, peers),
            Section::Load(reports) => {
                let _ = writeln!(md, "## Load: `session serve` with concurrent sessions\n");
                md.push_str(&super::load::markdown(reports));
                md.push('\n');
            }
            Section::Aims { aims, not_run } => {
                super::aims::markdown(&mut md, aims);
                for line in not_run {
                    let _ = writeln!(md, "- not run: {line}");
                }
                if !not_run.is_empty() {
                    md.push('\n');
                }
            }
        }
    }
    let md_path = out.join(format!("{name}.md"));
    std::fs::write(&md_path, &md).with_context(|| format!("write {}", md_path.display()))?;
    let json = serde_json::json!({"machine": machine, "sections": sections});
    let json_path = out.join(format!("{name}.json"));
    std::fs::write(&json_path, serde_json::to_string_pretty(&json)?)
        .with_context(|| format!("write {}", json_path.display()))?;
    println!("{md}");
    eprintln!("wrote {} and {}", md_path.display(), json_path.display());
    Ok(())
}

/// A duration in nanoseconds, in the unit that suits it.
pub(crate) fn duration(ns: f64) -> String {
    if ns >= 1e9 {
        format!("{:.2} s", ns / 1e9)
    } else if ns >= 1e6 {
        format!("{:.2} ms", ns / 1e6)
    } else if ns >= 1e3 {
        format!("{:.2} µs", ns / 1e3)
    } else {
        format!("{ns:.1} ns")
    }
}

fn throughput(estimate: &Estimate) -> String {
    if let Some(mb) = estimate.mb_per_s() {
        return format!("{mb:.1} MB/s");
    }
    match estimate.ns_per_element() {
        Some(ns) if estimate.elements.is_some_and(|n| n > 1) => {
            format!("{} per element ({:.0}/s)", duration(ns), 1e9 / ns)
        }
        Some(ns) => format!("{:.0}/s", 1e9 / ns),
        None => String::new(),
    }
}

fn micro_md(md: &mut String, micro: &Micro) {
    let _ = writeln!(md, "## Micro benchmarks (criterion medians)\n");
    let _ = writeln!(md, "| crate | benchmark | median per iteration | throughput |\n|---|---|---|---|");
    for estimate in &micro.estimates {
        let _ = writeln!(
            md,
            "| {} | {} | {} | {} |",
            estimate.package,
            estimate.id,
            duration(estimate.median_ns),
            throughput(estimate)
        );
    }
    if !micro.notes.is_empty() {
        let _ = writeln!(md, "\nNotes:\n");
        for note in &micro.notes {
            let _ = writeln!(md, "- {note}");
        }
    }
    let _ = writeln!(md, "\nCommands:\n");
    for command in &micro.commands {
        let _ = writeln!(md, "- `{command}`");
    }
    let _ = writeln!(md);
}

fn e2e_md(md: &mut String, e2e: &EndToEnd) {
    let _ = writeln!(
        md,
        "## End to end: `session run` against the loopback provider (medians)\n\nBinary: `{}`. CPU is user+sys of `session` and its children; peak RSS is the largest of them.\n",
        e2e.binary.display()
    );
    let _ = writeln!(
        md,
        "| script | snapshots | ok | wall s | CPU s | peak RSS MB | first request ms | store MB | data MB | requests | load |\n|---|---|---|---|---|---|---|---|---|---|---|"
    );
    for row in &e2e.rows {
        let loads: Vec<String> = row.loads.iter().map(|l| format!("{l:.2}")).collect();
        let _ = writeln!(
            md,
            "| {} | {} | {}/{} | {:.3} | {:.3} | {:.1} | {:.1} | {:.3} | {:.3} | {} | {} |",
            row.script,
            if row.snapshots { "on" } else { "off" },
            row.ok,
            row.runs,
            row.wall_s,
            row.cpu_s,
            row.max_rss_mb,
            row.first_request_s * 1e3,
            row.store_mb,
            row.data_mb,
            row.requests,
            loads.join(", ")
        );
    }
    let _ =
        writeln!(md, "\nAgainst the peers' published medians (`../shared/peers/README.md`), peer ÷ ours:\n");
    let _ =
        writeln!(md, "| script | peer | wall | CPU | peak RSS | first request |\n|---|---|---|---|---|---|");
    for &(script, peer, wall, cpu, rss, first, _) in PUBLISHED {
        if let Some(ours) = e2e.rows.iter().find(|r| r.script == script && !r.snapshots) {
            let _ = writeln!(
                md,
                "| {script} | {peer} | {:.1}× | {:.1}× | {:.1}× | {:.1}× |",
                wall / ours.wall_s,
                cpu / ours.cpu_s,
                rss / ours.max_rss_mb,
                first / ours.first_request_s
            );
        }
    }
    let _ = writeln!(md, "\nCommands:\n");
    for row in &e2e.rows {
        let _ = writeln!(md, "- `{}`", row.command);
    }
    let _ = writeln!(md);
}

fn peers_md(md: &mut String, peers: &Peers) {
    let _ = writeln!(
        md,
        "## Side by side: `run_peer.sh` (Python mock, `/usr/bin/time -v`), medians\n\n| script | agent | ok | wall s | CPU s | peak RSS MB | first request s (harness) | store MB | CPU ÷ ours | RSS ÷ ours | first request ÷ ours |\n|---|---|---|---|---|---|---|---|---|---|---|"
    );
    let mut scripts: Vec<&str> = Vec::new();
    for row in &peers.rows {
        if !scripts.contains(&row.script.as_str()) {
            scripts.push(&row.script);
        }
    }
    for script in scripts {
        let ours = peers.rows.iter().find(|r| r.script == script && r.peer == "session");
        for row in peers.rows.iter().filter(|r| r.script == script) {
            let ratio = |theirs: f64, ours: Option<f64>| match ours {
                Some(ours) if ours > 0.0 => format!("{:.1}×", theirs / ours),
                _ => "–".to_owned(),
            };
            let _ = writeln!(
                md,
                "| {} | {} | {}/{} | {:.2} | {:.3} | {:.1} | {:.3} ({:.3}) | {:.2} | {} | {} | {} |",
                row.script,
                row.peer,
                row.ok,
                row.samples.len(),
                row.wall_s,
                row.cpu_s,
                row.max_rss_mb,
                row.first_request_s,
                row.first_request_harness_s,
                row.store_mb,
                ratio(row.cpu_s, ours.map(|o| o.cpu_s)),
                ratio(row.max_rss_mb, ours.map(|o| o.max_rss_mb)),
                ratio(row.first_request_s, ours.map(|o| o.first_request_s)),
            );
        }
    }
    let _ = writeln!(
        md,
        "\nFirst request: from the agent's launch (the harness's own figure, which also counts the Python starts that write the agent's config, in brackets). Ours is timed from the stamp our launcher writes as it starts the binary to the mock's receipt of the request, on one clock; the peers' is the harness's figure less the time before their start, in `/usr/bin/time`'s hundredths of a second. Our CPU includes the launcher (a bash)."
    );
    if !peers.missing.is_empty() {
        let _ = writeln!(md, "\nNot measured:\n");
        for line in &peers.missing {
            let _ = writeln!(md, "- {line}");
        }
    }
    let _ = writeln!(md, "\nCommand: `{}`\n", peers.command);
}

#[cfg(test)]
mod tests {
    use super::duration;

    #[test]
    fn durations_pick_their_unit() {
        assert_eq!(duration(12.34), "12.3 ns");
        assert_eq!(duration(1_500.0), "1.50 µs");
        assert_eq!(duration(2_500_000.0), "2.50 ms");
        assert_eq!(duration(3_000_000_000.0), "3.00 s");
    }
}
