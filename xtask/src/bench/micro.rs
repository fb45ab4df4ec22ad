//! Micro benchmarks: the crates' criterion benches, run with `cargo bench` and collected from
//! criterion's saved estimates (`CRITERION_HOME=<out>/criterion`, `*/new/estimates.json`).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result, bail};
use serde::Serialize;
use serde_json::Value;

/// The benches run: (package, bench target, criterion filter, what it measures).
const BENCHES: &[(&str, &str, Option<&str>, &str)] = &[
    ("session-core", "processor", None, "the processor over 1 million events"),
    ("session-llm", "parse", None, "SSE bytes to events per adapter"),
    ("session-store", "store", None, "part upserts and history loads per backend"),
    ("session-tools", "tools", Some("tracker"), "the tool tracker per call"),
    ("session-runtime", "steps", None, "a whole prompt in process (no snapshots), tool start latency"),
    ("session-tui", "frame", Some("frame_10k"), "one UI frame of a 10,000-line transcript"),
];

/// One criterion benchmark's result.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Estimate {
    /// The package whose bench produced it.
    pub(crate) package: String,
    /// criterion's id: `group/function[/value]`.
    pub(crate) id: String,
    /// Median time of one iteration, nanoseconds.
    pub(crate) median_ns: f64,
    /// Elements per iteration, when the bench declared them.
    pub(crate) elements: Option<u64>,
    /// Bytes per iteration, when the bench declared them.
    pub(crate) bytes: Option<u64>,
}

impl Estimate {
    /// Nanoseconds per element, for element throughput.
    pub(crate) fn ns_per_element(&self) -> Option<f64> {
        self.elements.filter(|&n| n > 0).map(|n| self.median_ns / n as f64)
    }

    /// MB (10^6 bytes) per second, for byte throughput.
    pub(crate) fn mb_per_s(&self) -> Option<f64> {
        self.bytes.map(|b| b as f64 / (self.median_ns / 1e9) / 1e6)
    }
}

/// Everything the micro benches produced.
#[derive(Debug, Clone, Serialize)]
pub(crate) struct Micro {
    /// Every estimate, in run order.
    pub(crate) estimates: Vec<Estimate>,
    /// Benches that failed or printed a notice worth keeping (skipped backends).
    pub(crate) notes: Vec<String>,
    /// The commands run.
    pub(crate) commands: Vec<String>,
}

/// Runs every bench and collects the estimates.
pub(crate) fn run(root: &Path, out: &Path) -> Result<Micro> {
    let home = out.join("criterion");
    let mut micro = Micro { estimates: Vec::new(), notes: Vec::new(), commands: Vec::new() };
    for &(package, bench, filter, what) in BENCHES {
        let dir = home.join(package);
        if dir.exists() {
            std::fs::remove_dir_all(&dir).with_context(|| format!("remove {}", dir.display()))?;
        }
        let mut args = vec!["bench", "-p", package, "--bench", bench, "--"];
        args.extend(filter);
        let shown = format!("cargo {}", args.join(" "));
        eprintln!("==> {shown}   ({what})");
        let output = Command::new("cargo")
            .args(&args)
            .current_dir(root)
            .env("CRITERION_HOME", &dir)
            .output()
            .with_context(|| format!("cannot start {shown}"))?;
        let stdout = String::from_utf8_lossy(&output.stdout);
        let stderr = String::from_utf8_lossy(&output.stderr);
        print!("{stdout}");
        eprint!("{stderr}");
        for line in stdout.lines().chain(stderr.lines()) {
            if ["skipped", "not installed", "cpu per step", "ratio (median", "tool start latency"]
                .iter()
                .any(|k| line.contains(k))
            {
                micro.notes.push(format!("{package}: {}", line.trim()));
            }
        }
        micro.commands.push(shown.clone());
        if !output.status.success() {
            micro.notes.push(format!("{shown} exited with {}", output.status));
            continue;
        }
        let mut found = Vec::new();
        collect(&dir, &mut found)?;
        if found.is_empty() {
            bail!("{shown} left no estimates under {}", dir.display());
        }
        let mut estimates: Vec<Estimate> =
            found.iter().filter_map(|path| estimate(package, path).transpose()).collect::<Result<_>>()?;
        estimates.sort_by(|a, b| a.id.cmp(&b.id));
        micro.estimates.extend(estimates);
    }
    Ok(micro)
}

/// Every `new/benchmark.json` under `dir`.
fn collect(dir: &Path, found: &mut Vec<PathBuf>) -> Result<()> {
    let Ok(entries) = std::fs::read_dir(dir) else { return Ok(()) };
    for entry in entries {
        let path = entry?.path();
        if path.is_dir() {
            collect(&path, found)?;
        } else if path.file_name().is_some_and(|n| n == "benchmark.json")
            && path.parent().and_then(Path::file_name).is_some_and(|n| n == "new")
        {
            found.push(path);
        }
    }
    Ok(())
}

/// The estimate saved next to `benchmark`, or `None` when criterion left no median.
fn estimate(package: &str, benchmark: &Path) -> Result<Option<Estimate>> {
    let read = |path: &Path| -> Result<Value> {
        let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
        serde_json::from_str(&text).with_context(|| format!("parse {}", path.display()))
    };
    let meta = read(benchmark)?;
    let Some(parent) = benchmark.parent() else { return Ok(None) };
    let estimates = read(&parent.join("estimates.json"))?;
    Ok(parse_estimate(package, &meta, &estimates))
}

/// An estimate from criterion's `benchmark.json` and `estimates.json`.
fn parse_estimate(package: &str, meta: &Value, estimates: &Value) -> Option<Estimate> {
    let id = meta.get("full_id")?.as_str()?.to_owned();
    let median_ns = estimates.get("median")?.get("point_estimate")?.as_f64()?;
    let throughput = meta.get("throughput");
    let amount = |kind: &str| throughput.and_then(|t| t.get(kind)).and_then(Value::as_u64);
    Some(Estimate {
        package: package.to_owned(),
        id,
        median_ns,
        elements: amount("Elements"),
        bytes: amount("Bytes").or_else(|| amount("BytesDecimal")),
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::parse_estimate;

    #[test]
    fn estimates_read_criterion_files() {
        let meta = json!({"group_id": "sse_to_events", "function_id": "anthropic", "value_str": null,
                          "throughput": {"Bytes": 2_000_000}, "full_id": "sse_to_events/anthropic"});
        let estimates = json!({"median": {"point_estimate": 1.0e7}, "mean": {"point_estimate": 1.1e7}});
        let estimate = parse_estimate("session-llm", &meta, &estimates);
        let estimate = estimate.unwrap_or_else(|| panic!("no estimate"));
        assert_eq!(estimate.id, "sse_to_events/anthropic");
        assert!((estimate.mb_per_s().unwrap_or_default() - 200.0).abs() < 1e-6);
        assert_eq!(estimate.ns_per_element(), None);

        let meta = json!({"full_id": "processor/1M", "throughput": {"Elements": 1_000_000}});
        let estimate = parse_estimate("session-core", &meta, &estimates);
        assert_eq!(estimate.and_then(|e| e.ns_per_element()), Some(10.0));
        assert!(parse_estimate("x", &json!({}), &estimates).is_none());
    }
}
