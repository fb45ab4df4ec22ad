//! SSE-to-event parsing throughput per wire format: every recorded stream of the format, from
//! bytes to `LlmEvent`s (SSE decoding, JSON parsing, the adapter's state machine), reported in
//! bytes per second.

#![expect(missing_docs, reason = "criterion_group! generates public functions that cannot carry docs")]
#![expect(
    clippy::unwrap_used,
    reason = "a bench that cannot read its fixtures has nothing to measure, so it may stop there"
)]

use std::path::Path;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use session_llm::{Api, EventDecoder, replay};

/// The fixtures of one format, each as bytes.
fn fixtures(api: Api) -> Vec<Vec<u8>> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/providers").join(api.as_str());
    let mut names: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|entry| entry.unwrap().path())
        .filter(|path| path.extension().is_some_and(|ext| ext == "sse"))
        .collect();
    names.sort();
    names.iter().map(|path| std::fs::read(path).unwrap()).collect()
}

fn parse(c: &mut Criterion) {
    let mut group = c.benchmark_group("sse_to_events");
    for api in Api::ALL {
        let streams = fixtures(api);
        let bytes: usize = streams.iter().map(Vec::len).sum();
        group.throughput(Throughput::Bytes(bytes as u64));
        group.bench_function(api.as_str(), |b| {
            b.iter(|| {
                let mut events = 0;
                for stream in &streams {
                    events += replay(api, std::hint::black_box(stream)).events.len();
                }
                events
            });
        });
    }
    // The same bodies arriving in 1 KiB network chunks, as they do over HTTP.
    for api in Api::ALL {
        let streams = fixtures(api);
        let bytes: usize = streams.iter().map(Vec::len).sum();
        group.throughput(Throughput::Bytes(bytes as u64));
        group.bench_function(format!("{}/1KiB-chunks", api.as_str()), |b| {
            b.iter(|| {
                let mut events = Vec::new();
                for stream in &streams {
                    let mut decoder = EventDecoder::new(api);
                    for chunk in stream.chunks(1024) {
                        let _ = decoder.push(std::hint::black_box(chunk), &mut events);
                    }
                    let _ = decoder.finish(&mut events);
                }
                events.len()
            });
        });
    }
    group.finish();
}

criterion_group!(benches, parse);
criterion_main!(benches);
