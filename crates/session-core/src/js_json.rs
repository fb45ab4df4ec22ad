//! JSON text exactly as JavaScript's `JSON.stringify` writes it (SPEC 3, "JS-compatible stringify").
//!
//! The doom-loop rule compares tool inputs by this text, and OpenCode's user-visible error texts
//! embed it, so key order, escaping and number formatting must all match JavaScript. Key order
//! comes from serde_json's `preserve_order`: objects keep the order in which keys were received.

use std::fmt::Write as _;

use serde_json::{Map, Number, Value};

/// A JSON object, as tool inputs and metadata are.
pub type JsonObject = Map<String, Value>;

/// Serializes a JSON value as `JSON.stringify(value)` does in JavaScript.
pub fn stringify(value: &Value) -> String {
    let mut out = String::new();
    write_value(&mut out, value);
    out
}

/// Serializes a JSON object as `JSON.stringify(object)` does in JavaScript.
pub fn stringify_object(object: &JsonObject) -> String {
    let mut out = String::new();
    write_object(&mut out, object);
    out
}

/// Formats a number as JavaScript's `Number.prototype.toString()` does (`NaN` and infinities
/// print as `JSON.stringify` prints them: `null`).
pub fn format_js_number(value: f64) -> String {
    let mut out = String::new();
    write_f64(&mut out, value);
    out
}

fn write_value(out: &mut String, value: &Value) {
    match value {
        Value::Null => out.push_str("null"),
        Value::Bool(true) => out.push_str("true"),
        Value::Bool(false) => out.push_str("false"),
        Value::Number(number) => write_number(out, number),
        Value::String(text) => write_string(out, text),
        Value::Array(items) => {
            out.push('[');
            for (index, item) in items.iter().enumerate() {
                if index > 0 {
                    out.push(',');
                }
                write_value(out, item);
            }
            out.push(']');
        }
        Value::Object(object) => write_object(out, object),
    }
}

fn write_object(out: &mut String, object: &JsonObject) {
    out.push('{');
    for (index, (key, item)) in object.iter().enumerate() {
        if index > 0 {
            out.push(',');
        }
        write_string(out, key);
        out.push(':');
        write_value(out, item);
    }
    out.push('}');
}

fn write_number(out: &mut String, number: &Number) {
    // JavaScript holds every number as a double, so an integer beyond 2^53 prints as the double
    // nearest to it (18446744073709551615 prints 18446744073709552000). `as` rounds to nearest.
    let value = if let Some(unsigned) = number.as_u64() {
        unsigned as f64
    } else if let Some(signed) = number.as_i64() {
        signed as f64
    } else {
        number.as_f64().unwrap_or(f64::NAN)
    };
    write_f64(out, value);
}

/// Number::toString (ECMA-262 6.1.6.1.20) for finite values; JSON.stringify's `null` otherwise.
fn write_f64(out: &mut String, value: f64) {
    if !value.is_finite() {
        out.push_str("null");
        return;
    }
    if value == 0.0 {
        // Covers -0, which JavaScript prints as 0.
        out.push('0');
        return;
    }
    if value < 0.0 {
        out.push('-');
    }
    // Rust's `{:e}` gives the shortest digit string that round-trips, as JavaScript requires;
    // only the layout around those digits differs, so take the digits and the exponent from it.
    let scientific = format!("{:e}", value.abs());
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or((scientific.as_str(), "0"));
    let digits: String = mantissa.chars().filter(char::is_ascii_digit).collect();
    let exponent: i32 = exponent.parse().unwrap_or(0);
    // In the spec's terms: value = 0.d1d2...dk × 10^n, so n is one more than the exponent of d1.
    let k = digits.len() as i32;
    let n = exponent + 1;
    if k <= n && n <= 21 {
        out.push_str(&digits);
        out.extend(std::iter::repeat_n('0', (n - k) as usize));
    } else if 0 < n && n <= 21 {
        let (integral, fraction) = digits.split_at(n as usize);
        out.push_str(integral);
        out.push('.');
        out.push_str(fraction);
    } else if -6 < n && n <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat_n('0', (-n) as usize));
        out.push_str(&digits);
    } else {
        let (first, rest) = digits.split_at(1.min(digits.len()));
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let shown = n - 1;
        let sign = if shown < 0 { '-' } else { '+' };
        let _ = write!(out, "e{sign}{}", shown.unsigned_abs());
    }
}

/// QuoteJSONString (ECMA-262 25.5.2.3): only `"`, `\` and control characters are escaped.
/// Rust strings hold no lone surrogates, the one other case JavaScript escapes.
fn write_string(out: &mut String, text: &str) {
    out.push('"');
    for ch in text.chars() {
        match ch {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            control if u32::from(control) < 0x20 => {
                let _ = write!(out, "\\u{:04x}", u32::from(control));
            }
            other => out.push(other),
        }
    }
    out.push('"');
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn numbers_print_like_javascript() {
        let cases: &[(f64, &str)] = &[
            (1.0, "1"),
            (-0.0, "0"),
            (0.5, "0.5"),
            (-1.5, "-1.5"),
            (1e21, "1e+21"),
            (1e20, "100000000000000000000"),
            (123456789012345680000.0, "123456789012345680000"),
            (1.5e21, "1.5e+21"),
            (1e-6, "0.000001"),
            (1e-7, "1e-7"),
            (1.25e-7, "1.25e-7"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::MAX, "1.7976931348623157e+308"),
            (f64::MIN_POSITIVE, "2.2250738585072014e-308"),
            (5e-324, "5e-324"),
            (f64::NAN, "null"),
            (f64::INFINITY, "null"),
        ];
        for (value, expected) in cases {
            assert_eq!(format_js_number(*value), *expected, "{value:e}");
        }
    }

    #[test]
    fn large_integers_print_as_their_nearest_double() {
        assert_eq!(stringify(&json!(u64::MAX)), "18446744073709552000");
        assert_eq!(stringify(&json!(i64::MIN)), "-9223372036854776000");
        assert_eq!(stringify(&json!(9007199254740993_u64)), "9007199254740992");
    }

    #[test]
    fn strings_escape_like_json_stringify() {
        let text = "q\"b\\\u{8}\u{c}\n\r\t\u{1}\u{1f}\u{7f}\u{2028}é😀/";
        assert_eq!(stringify(&json!(text)), "\"q\\\"b\\\\\\b\\f\\n\\r\\t\\u0001\\u001f\u{7f}\u{2028}é😀/\"");
    }
}
