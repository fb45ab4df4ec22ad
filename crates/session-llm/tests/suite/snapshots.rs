//! Every stream fixture's events, as insta snapshots.

use session_llm::replay;

use super::support::{replay_json, stream_fixtures};

#[test]
fn every_stream_fixture_has_a_snapshot_of_its_events() {
    let mut settings = insta::Settings::clone_current();
    settings.set_snapshot_path("../snapshots/events");
    settings.set_prepend_module_to_snapshot(false);
    settings.bind(|| {
        for fixture in stream_fixtures() {
            let replay = replay(fixture.api, &fixture.bytes);
            insta::assert_json_snapshot!(fixture.snapshot_name(), replay_json(&replay));
        }
    });
}
