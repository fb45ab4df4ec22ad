//! Any chunking of a body gives the same events; no input makes a parser panic.

use proptest::prelude::*;
use session_llm::{Api, EventDecoder, Replay, SseDecoder, SseEvent, replay};

use super::support::{StreamFixture, stream_fixtures};

/// Decodes `bytes` fed in the pieces that `cuts` (sorted offsets) delimit.
fn replay_in_pieces(api: Api, bytes: &[u8], cuts: &[usize]) -> Replay {
    let mut decoder = EventDecoder::new(api);
    let mut events = Vec::new();
    let mut start = 0;
    let mut error = None;
    for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
        let cut = cut.clamp(start, bytes.len());
        if let Err(err) = decoder.push(&bytes[start..cut], &mut events) {
            error = Some(err);
            break;
        }
        start = cut;
    }
    if error.is_none() {
        error = decoder.finish(&mut events).err();
    }
    Replay { events, error }
}

#[test]
fn every_single_split_point_of_small_fixtures_gives_the_same_events() {
    let small: Vec<&StreamFixture> = stream_fixtures().iter().filter(|f| f.bytes.len() < 8 * 1024).collect();
    assert!(small.len() >= 25, "only {} fixtures under 8 KB", small.len());
    for fixture in small {
        let whole = replay(fixture.api, &fixture.bytes);
        assert!(!whole.events.is_empty() || whole.error.is_some(), "{} gave nothing", fixture.name);
        for cut in 0..=fixture.bytes.len() {
            let split = replay_in_pieces(fixture.api, &fixture.bytes, &[cut]);
            assert_eq!(split, whole, "{} split at byte {cut}", fixture.name);
        }
    }
}

#[test]
fn byte_by_byte_feeding_of_every_fixture_gives_the_same_events() {
    for fixture in stream_fixtures() {
        let whole = replay(fixture.api, &fixture.bytes);
        let cuts: Vec<usize> = (1..fixture.bytes.len()).collect();
        assert_eq!(replay_in_pieces(fixture.api, &fixture.bytes, &cuts), whole, "{}", fixture.name);
    }
}

/// Serialises events with one line-end style.
fn encode(events: &[(Option<String>, Vec<String>)], line_end: &str) -> Vec<u8> {
    let mut out = String::new();
    for (name, lines) in events {
        if let Some(name) = name {
            out.push_str(&format!("event: {name}{line_end}"));
        }
        out.push_str(&format!(": comment{line_end}"));
        for line in lines {
            out.push_str(&format!("data: {line}{line_end}"));
        }
        out.push_str(line_end);
    }
    out.into_bytes()
}

fn decode_sse(bytes: &[u8], cuts: &[usize]) -> Vec<SseEvent> {
    let mut decoder = SseDecoder::new();
    let mut out = Vec::new();
    let mut start = 0;
    for &cut in cuts.iter().chain(std::iter::once(&bytes.len())) {
        let cut = cut.clamp(start, bytes.len());
        decoder.push(&bytes[start..cut], &mut out).unwrap();
        start = cut;
    }
    decoder.finish(&mut out).unwrap();
    out
}

fn sorted_cuts(len: usize) -> impl Strategy<Value = Vec<usize>> {
    prop::collection::vec(0..=len, 0..24).prop_map(|mut cuts| {
        cuts.sort_unstable();
        cuts
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 128, ..ProptestConfig::default() })]

    #[test]
    fn random_multi_splits_of_every_fixture_give_the_same_events(
        (index, cuts) in (0..35usize).prop_flat_map(|index| {
            let fixtures = stream_fixtures();
            let len = fixtures[index % fixtures.len()].bytes.len();
            (Just(index), sorted_cuts(len))
        })
    ) {
        let fixtures = stream_fixtures();
        let fixture = &fixtures[index % fixtures.len()];
        let whole = replay(fixture.api, &fixture.bytes);
        prop_assert_eq!(replay_in_pieces(fixture.api, &fixture.bytes, &cuts), whole);
    }

    #[test]
    fn line_ends_and_chunking_do_not_change_sse_events(
        events in prop::collection::vec(
            (prop::option::of("[a-z_.]{1,12}"), prop::collection::vec("[^\r\n]{0,20}", 1..4)),
            1..8,
        ),
        style in 0..3usize,
        cuts in sorted_cuts(600),
    ) {
        let line_end = ["\n", "\r\n", "\r"][style];
        let bytes = encode(&events, line_end);
        let expected: Vec<SseEvent> = events
            .iter()
            .map(|(name, lines)| SseEvent { event: name.clone(), data: lines.join("\n"), id: None, retry: None })
            .collect();
        prop_assert_eq!(decode_sse(&bytes, &cuts), expected);
    }

    #[test]
    fn random_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..2048), cuts in sorted_cuts(2048)) {
        for api in Api::ALL {
            let _ = replay_in_pieces(api, &bytes, &cuts);
        }
    }

    #[test]
    fn random_sse_framed_json_never_panics(
        lines in prop::collection::vec(
            prop_oneof![
                Just("data: [DONE]".to_owned()),
                Just(String::new()),
                "data: \\{\"type\":\"[a-z_.]{0,30}\"(,\"index\":[0-9])?\\}",
                "data: \\{\"choices\":\\[\\{\"delta\":\\{\"content\":\"[a-z]{0,5}\"\\}\\}\\]\\}",
                "event: [a-z_]{0,20}",
                "data: [ -~]{0,40}",
            ],
            0..40,
        )
    ) {
        let bytes = lines.join("\n").into_bytes();
        for api in Api::ALL {
            let _ = replay(api, &bytes);
        }
    }

    #[test]
    fn mutated_fixtures_never_panic(
        index in 0..35usize,
        edits in prop::collection::vec((any::<prop::sample::Index>(), any::<u8>(), 0..3u8), 1..16),
    ) {
        let fixtures = stream_fixtures();
        let fixture = &fixtures[index % fixtures.len()];
        let mut bytes = fixture.bytes.clone();
        for (at, byte, kind) in edits {
            if bytes.is_empty() {
                break;
            }
            let at = at.index(bytes.len());
            match kind {
                0 => bytes[at] = byte,
                1 => bytes.insert(at, byte),
                _ => {
                    bytes.remove(at);
                }
            }
        }
        for api in Api::ALL {
            let _ = replay(api, &bytes);
        }
    }
}
