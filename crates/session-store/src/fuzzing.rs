//! The stored-row decoders under arbitrary input: the check the `store_rows` fuzz target runs
//! (cargo-fuzz builds with `--cfg fuzzing`), and the replay of its corpus in this crate's tests.

use serde_json::Value;

use crate::rows::{
    DecodedPart, StoredMessageRow, StoredPartRow, decode_message, decode_part, encode_message, encode_part,
    encode_raw_part,
};

/// Decodes `data` as a part row and as a message row, as the store reads rows back, and
/// checks what decodes: nothing panics, the columns win over ids in the JSON, and a decoded
/// row written again reads back equal.
///
/// The input is the row's `data` column, optionally preceded by its `cost` column and a NUL.
/// The id and kind columns are taken from the JSON when it has them (a consistent row), and
/// the row is decoded a second time under other ids (a row whose JSON disagrees with its
/// columns).
pub fn check_row(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let (cost, data) = match text.split_once('\0') {
        Some((cost, data)) => (Some(cost), data),
        None => (None, text),
    };
    let json = serde_json::from_str::<Value>(data).ok();
    let field = |name: &str| json.as_ref().and_then(|value| value.get(name)).and_then(Value::as_str);
    let session_id = field("sessionID").unwrap_or("ses_fuzzsession");
    let message_id = field("messageID").unwrap_or("msg_fuzzmessage");
    let kind = field("type").unwrap_or("text");
    for part_id in [field("id").unwrap_or("prt_fuzzpart"), "prt_othercolumn"] {
        check_part(&StoredPartRow { id: part_id, session_id, message_id, kind, cost, data });
    }
    for id in [field("id").unwrap_or("msg_fuzzmessage"), "msg_othercolumn"] {
        check_message(&StoredMessageRow { id, session_id, cost, data });
    }
}

fn check_part(row: &StoredPartRow<'_>) {
    match decode_part(row) {
        DecodedPart::Known(part) => {
            assert_eq!(part.id.as_str(), row.id, "the id column wins");
            assert_eq!(part.message_id.as_str(), row.message_id, "the message column wins");
            let written = match encode_part(&part) {
                Ok(written) => written,
                Err(error) => panic!("a decoded part does not encode: {error}"),
            };
            let again = StoredPartRow {
                id: &written.id,
                session_id: &written.session_id,
                message_id: &written.message_id,
                kind: &written.kind,
                cost: written.cost.as_deref(),
                data: &written.data,
            };
            match decode_part(&again) {
                DecodedPart::Known(read) => {
                    assert_eq!(read, part, "part round trip through {}", written.data)
                }
                other => panic!("a written part reads back as {other:?}"),
            }
        }
        DecodedPart::Unknown(raw) => {
            if let Err(error) = encode_raw_part(&raw) {
                panic!("a kept raw part does not encode: {error}");
            }
        }
        DecodedPart::Bad(_) => {}
    }
}

fn check_message(row: &StoredMessageRow<'_>) {
    let Ok(message) = decode_message(row) else { return };
    assert_eq!(message.id().as_str(), row.id, "the id column wins");
    let written = match encode_message(&message) {
        Ok(written) => written,
        Err(error) => panic!("a decoded message does not encode: {error}"),
    };
    let again = StoredMessageRow {
        id: &written.id,
        session_id: &written.session_id,
        cost: written.cost.as_deref(),
        data: &written.data,
    };
    match decode_message(&again) {
        Ok(read) => assert_eq!(read, message, "message round trip through {}", written.data),
        Err(skipped) => panic!("a written message reads back as skipped: {}", skipped.reason),
    }
}

#[cfg(test)]
mod tests {
    use std::path::Path;

    use super::check_row;

    fn files(dir: &Path) -> Vec<std::path::PathBuf> {
        let Ok(entries) = std::fs::read_dir(dir) else { return Vec::new() };
        let mut paths: Vec<_> = entries.map(|entry| entry.unwrap().path()).filter(|p| p.is_file()).collect();
        paths.sort();
        paths
    }

    /// Every input of `fuzz/corpus/store_rows/` (at the repository root) and every crash input
    /// kept in `tests/fixtures/fuzz/store_rows/` goes through the real row decoders.
    #[test]
    fn the_store_rows_corpus_and_crashes_replay() {
        let root = Path::new(env!("CARGO_MANIFEST_DIR"));
        let corpus = files(&root.join("../../fuzz/corpus/store_rows"));
        assert!(!corpus.is_empty(), "no corpus under fuzz/corpus/store_rows");
        let crashes = files(&root.join("tests/fixtures/fuzz/store_rows"));
        assert!(!crashes.is_empty(), "no crash inputs under tests/fixtures/fuzz/store_rows");
        for path in corpus.iter().chain(&crashes) {
            check_row(&std::fs::read(path).unwrap());
        }
    }

    #[test]
    fn a_consistent_step_finish_row_with_its_cost_column_round_trips() {
        let row = br#"0.000123 {"id":"prt_a","sessionID":"ses_a","messageID":"msg_a","type":"step-finish","reason":"stop","cost":0.000123,"tokens":{"input":1,"output":2,"reasoning":0,"cache":{"read":0,"write":0}}}"#;
        let mut data = row.to_vec();
        data[8] = 0;
        check_row(&data);
    }
}
