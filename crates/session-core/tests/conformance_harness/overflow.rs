//! Cases of `overflow.json`.

use serde_json::Value;

use crate::{Report, case_name, cases};

/// Runs every case of the file; none is mapped yet, so each one fails.
pub fn run(doc: &Value, report: &mut Report) {
    for case in cases(doc, "cases") {
        report.record(&case_name(case), Err("not mapped yet".to_owned()));
    }
}
