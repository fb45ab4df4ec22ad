//! JS-compatible stringify: layout, escaping and numbers.

use proptest::prelude::*;
use serde_json::{Value, json};
use session_core::{js_json::format_js_number, js_json::stringify, js_json::stringify_object};

#[test]
fn keeps_insertion_order_and_has_no_whitespace() {
    let a: Value =
        serde_json::from_str(r#"{ "b": 1, "a": [ true, null, "x" ], "c": { "z": 1.0, "y": {} } }"#).unwrap();
    assert_eq!(stringify(&a), r#"{"b":1,"a":[true,null,"x"],"c":{"z":1,"y":{}}}"#);
    let b: Value = serde_json::from_str(r#"{"a":[true,null,"x"],"b":1,"c":{"z":1,"y":{}}}"#).unwrap();
    assert_ne!(stringify(&a), stringify(&b));
    let Value::Object(object) = &a else { panic!("not an object") };
    assert_eq!(stringify_object(object), stringify(&a));
}

#[test]
fn numbers_follow_number_to_string() {
    let table: &[(&str, &str)] = &[
        ("1.0", "1"),
        ("-0.0", "0"),
        ("-0", "0"),
        ("100", "100"),
        ("1e2", "100"),
        ("1e21", "1e+21"),
        ("999999999999999999999", "1e+21"),
        ("123e18", "123000000000000000000"),
        ("1.5e300", "1.5e+300"),
        ("0.000001", "0.000001"),
        ("0.0000001", "1e-7"),
        ("0.00000123", "0.00000123"),
        ("0.000000123", "1.23e-7"),
        ("3.14159", "3.14159"),
        ("-2.5e-10", "-2.5e-10"),
        ("18446744073709551615", "18446744073709552000"),
        ("-9007199254740993", "-9007199254740992"),
    ];
    for (text, expected) in table {
        let value: Value = serde_json::from_str(text).unwrap();
        assert_eq!(stringify(&value), *expected, "{text}");
    }
}

#[test]
fn escapes_only_what_json_stringify_escapes() {
    assert_eq!(stringify(&json!("a\"b\\c\n\u{0}\u{7f}\u{2029}")), "\"a\\\"b\\\\c\\n\\u0000\u{7f}\u{2029}\"");
}

/// The shortest round-trip digits of an integral `x` (from Rust's `{:e}`), padded with zeros.
fn shortest_padded(x: f64) -> String {
    let scientific = format!("{x:e}");
    let (mantissa, exponent) = scientific.split_once('e').unwrap_or_else(|| panic!("{scientific}"));
    let digits = mantissa.replace('.', "");
    let width = exponent.parse::<usize>().unwrap_or_else(|e| panic!("{scientific}: {e}")) + 1;
    format!("{digits:0<width$}")
}

fn json_value() -> impl Strategy<Value = Value> {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        // Integers JavaScript holds exactly.
        (-(1_i64 << 53)..=(1_i64 << 53)).prop_map(Value::from),
        any::<String>().prop_map(Value::String),
    ];
    leaf.prop_recursive(4, 32, 6, |inner| {
        prop_oneof![
            prop::collection::vec(inner.clone(), 0..6).prop_map(Value::Array),
            prop::collection::vec((any::<String>(), inner), 0..6)
                .prop_map(|entries| Value::Object(entries.into_iter().collect())),
        ]
    })
}

proptest! {
    #[test]
    fn integral_values_print_as_integers(n in -(1_i64 << 53)..=(1_i64 << 53)) {
        // Reference: an integral double below 1e21 prints its integer digits.
        prop_assert_eq!(format_js_number(n as f64), n.to_string());
        prop_assert_eq!(stringify(&json!(n)), n.to_string());
    }

    #[test]
    fn integral_doubles_below_1e21_have_no_fraction_or_exponent(x in -1e21_f64..1e21_f64) {
        let x = x.trunc();
        let text = format_js_number(x);
        prop_assert!(text.bytes().all(|b| b == b'-' || b.is_ascii_digit()), "{}", text);
        prop_assert_eq!(text.parse::<f64>().unwrap(), x);
        if x.abs() <= 9_007_199_254_740_992.0 {
            // Exactly representable: the integer's own digits.
            let expected = if x == 0.0 { "0".to_owned() } else { format!("{}", x as i64) };
            prop_assert_eq!(text, expected);
        } else {
            // Beyond 2^53 JavaScript prints the shortest digits and pads with zeros.
            prop_assert_eq!(text.trim_start_matches('-'), shortest_padded(x.abs()));
        }
    }

    #[test]
    fn finite_doubles_round_trip(bits in any::<u64>()) {
        let x = f64::from_bits(bits);
        prop_assume!(x.is_finite());
        let text = format_js_number(x);
        let back: f64 = text.parse().unwrap();
        prop_assert_eq!(back, if x == 0.0 { 0.0 } else { x });
        // JavaScript's layout: an exponent exactly when |x| >= 1e21 or |x| < 1e-6.
        let exponent = x != 0.0 && (x.abs() >= 1e21 || x.abs() < 1e-6);
        prop_assert_eq!(text.contains('e'), exponent, "{}", text);
        if exponent {
            prop_assert!(text.contains("e+") || text.contains("e-"));
        }
    }

    #[test]
    fn agrees_with_serde_json_without_floats(value in json_value()) {
        // serde_json's compact output escapes strings as JSON.stringify does and prints these
        // integers the same way, so it is a reference for everything but floats.
        prop_assert_eq!(stringify(&value), serde_json::to_string(&value).unwrap());
    }
}
