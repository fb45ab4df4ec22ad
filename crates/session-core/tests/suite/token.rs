//! Token estimates and UTF-16 truncation (SPEC 9, 10.1).

use proptest::prelude::*;
use session_core::{
    token::cut_utf16, token::estimate, token::estimate_units, token::truncate_tool_output,
    token::truncation_suffix, token::utf16_len,
};

#[test]
fn utf16_len_counts_code_units() {
    assert_eq!(utf16_len(""), 0);
    assert_eq!(utf16_len("abc"), 3);
    assert_eq!(utf16_len("héllo"), 5);
    assert_eq!(utf16_len("😀"), 2);
    assert_eq!(utf16_len("中文"), 2);
}

#[test]
fn estimate_is_math_round_of_a_quarter() {
    let table = [(0, 0), (1, 0), (2, 1), (3, 1), (4, 1), (5, 1), (6, 2), (7, 2), (10, 3), (80_000, 20_000)];
    for (units, tokens) in table {
        assert_eq!(estimate_units(units), tokens, "{units} units");
        assert_eq!(estimate(&"x".repeat(units)), tokens, "{units} units");
    }
    // Two emoji are four UTF-16 units: one token, though eight bytes.
    assert_eq!(estimate("😀😀"), 1);
}

#[test]
fn truncation_table() {
    let cases = [
        ("abcdefghij", 4, "abcd\n[Tool output truncated for compaction: omitted 6 chars]"),
        ("abcd", 4, "abcd"),
        ("héllo", 5, "héllo"),
        ("ab😀cd", 3, "ab\n[Tool output truncated for compaction: omitted 4 chars]"),
        ("ab😀cd", 4, "ab😀\n[Tool output truncated for compaction: omitted 2 chars]"),
        ("😀😀😀😀😀", 5, "😀😀\n[Tool output truncated for compaction: omitted 6 chars]"),
        ("abc", 0, "\n[Tool output truncated for compaction: omitted 3 chars]"),
    ];
    for (output, max, expected) in cases {
        assert_eq!(truncate_tool_output(output, max), expected, "{output:?} at {max}");
    }
}

fn text() -> impl Strategy<Value = String> {
    // A mix of ASCII, two-byte, three-byte and astral characters.
    prop::collection::vec(prop_oneof![Just('a'), Just('é'), Just('中'), Just('😀'), any::<char>()], 0..40)
        .prop_map(|chars| chars.into_iter().collect())
}

proptest! {
    #[test]
    fn cut_keeps_the_longest_whole_character_prefix(text in text(), max in 0usize..100) {
        let cut = cut_utf16(&text, max);
        prop_assert!(text.starts_with(cut.kept));
        let kept = utf16_len(cut.kept);
        prop_assert!(kept <= max);
        prop_assert_eq!(kept + cut.omitted, utf16_len(&text));
        // Never splits a pair, and drops at most one unit more than the limit forces.
        let rest = &text[cut.kept.len()..];
        if let Some(next) = rest.chars().next() {
            prop_assert!(kept + next.len_utf16() > max);
            prop_assert!(kept + 1 >= max.min(utf16_len(&text)));
        }
    }

    #[test]
    fn truncated_output_reports_what_it_omitted(text in text(), max in 1usize..60) {
        let out = truncate_tool_output(&text, max);
        if utf16_len(&text) <= max {
            prop_assert_eq!(out.as_ref(), text.as_str());
        } else {
            let cut = cut_utf16(&text, max);
            prop_assert!(cut.omitted > 0);
            let suffix = truncation_suffix(cut.omitted);
            prop_assert!(out.ends_with(&suffix));
            prop_assert_eq!(utf16_len(&out), utf16_len(cut.kept) + utf16_len(&suffix));
            prop_assert!(utf16_len(&out) <= max + utf16_len(&suffix));
        }
    }

    #[test]
    fn estimate_is_monotonic_and_close_to_a_quarter(a in text(), b in text()) {
        let joined = format!("{a}{b}");
        prop_assert!(estimate(&joined) >= estimate(&a));
        let units = utf16_len(&joined) as f64;
        prop_assert!((estimate(&joined) as f64 - units / 4.0).abs() <= 0.5);
    }
}
