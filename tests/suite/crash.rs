//! The crash loop in CI: `session run` on the long script, killed with SIGKILL five times at
//! random moments; after each kill the store opens, nothing is left pending or running, no
//! finished part is lost, and `session run --session ID` carries the session to its end.
//! `cargo xtask bench --crash N` runs the same loop with more kills.

use session_e2e::crash::{self, CrashOptions};
use session_e2e::session_binary;

#[test]
fn sigkill_at_random_moments_loses_nothing() {
    let options = CrashOptions::new(session_binary().unwrap(), 5);
    let report = crash::run(&options, &mut |line| eprintln!("crash: {line}")).unwrap();
    eprintln!("crash: {report}");
    assert_eq!(report.kills, 5);
    assert!(report.sessions_finished >= 1, "{report}");
    assert!(report.parts_checked > 0, "the kills landed after the runs had written parts: {report}");
}
