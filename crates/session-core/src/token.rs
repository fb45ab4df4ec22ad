//! Token estimates and UTF-16 truncation (SPEC 9 and 10.1).
//!
//! OpenCode measures text with JavaScript string lengths, which count UTF-16 code units. The
//! runtime must reproduce those numbers exactly, so every length here is in UTF-16 units, never
//! in bytes or `char`s.

use std::borrow::Cow;

/// The length of `text` in UTF-16 code units (JavaScript's `string.length`).
pub fn utf16_len(text: &str) -> usize {
    text.chars().map(char::len_utf16).sum()
}

/// The token estimate of a text: `max(0, round(utf16_len / 4))`, halves rounding up.
pub fn estimate(text: &str) -> u64 {
    estimate_units(utf16_len(text))
}

/// The token estimate of a text of `units` UTF-16 code units.
pub fn estimate_units(units: usize) -> u64 {
    // JavaScript's Math.round rounds halves up; for a non-negative n, round(n / 4) is exactly
    // floor((n + 2) / 4) in integers, with no float rounding to worry about.
    let units = u64::try_from(units).unwrap_or(u64::MAX);
    units.saturating_add(2) / 4
}

/// A prefix of a text cut at a UTF-16 length, and how many units were cut off.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Utf16Cut<'a> {
    /// The kept prefix.
    pub kept: &'a str,
    /// UTF-16 units of the original text that are not in `kept`.
    pub omitted: usize,
}

/// The longest prefix of `text` of at most `max_units` UTF-16 units that splits no character.
pub fn cut_utf16(text: &str, max_units: usize) -> Utf16Cut<'_> {
    let mut units = 0;
    let mut end = text.len();
    for (index, ch) in text.char_indices() {
        let next = units + ch.len_utf16();
        if next > max_units {
            // A character that would cross the limit is dropped whole: for a surrogate pair
            // this keeps one unit fewer than JavaScript's `slice`, which would leave a lone
            // surrogate that a Rust string cannot hold.
            end = index;
            break;
        }
        units = next;
    }
    let kept = &text[..end];
    let omitted = utf16_len(&text[end..]);
    Utf16Cut { kept, omitted }
}

/// The suffix appended to a truncated tool output, for `omitted` UTF-16 units cut off.
pub fn truncation_suffix(omitted: usize) -> String {
    format!("\n[Tool output truncated for compaction: omitted {omitted} chars]")
}

/// A tool output limited to `max_units` UTF-16 units, with the truncation notice when cut.
pub fn truncate_tool_output(output: &str, max_units: usize) -> Cow<'_, str> {
    if utf16_len(output) <= max_units {
        return Cow::Borrowed(output);
    }
    let cut = cut_utf16(output, max_units);
    let mut text = String::with_capacity(cut.kept.len() + 64);
    text.push_str(cut.kept);
    text.push_str(&truncation_suffix(cut.omitted));
    Cow::Owned(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn estimate_rounds_halves_up() {
        assert_eq!(estimate(""), 0);
        assert_eq!(estimate("a"), 0);
        assert_eq!(estimate("ab"), 1);
        assert_eq!(estimate("abcdef"), 2);
        assert_eq!(estimate("😀"), 1);
    }

    #[test]
    fn cut_never_splits_a_pair() {
        let cut = cut_utf16("ab😀cd", 3);
        assert_eq!(cut, Utf16Cut { kept: "ab", omitted: 4 });
        assert_eq!(truncate_tool_output("abc", 3), "abc");
    }
}
