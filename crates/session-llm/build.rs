//! Splits the embedded models.dev snapshot into its providers at build time: the
//! binary then holds one JSON text per provider, and a run parses only the one it uses,
//! without even scanning the other half megabyte at start.

use std::collections::BTreeMap;
use std::fmt::Write as _;

use serde_json::value::RawValue;

const SNAPSHOT: &str = "data/models.json";

fn main() {
    println!("cargo::rerun-if-changed={SNAPSHOT}");
    let text =
        std::fs::read_to_string(SNAPSHOT).unwrap_or_else(|error| panic!("cannot read {SNAPSHOT}: {error}"));
    let providers: BTreeMap<String, Box<RawValue>> = serde_json::from_str(&text)
        .unwrap_or_else(|error| panic!("{SNAPSHOT} is not a JSON object of providers: {error}"));
    let mut out = String::from("&[\n");
    for (id, json) in &providers {
        // `{:?}` of a str is a valid Rust string literal.
        let _ = writeln!(out, "    ({id:?}, {:?}),", json.get());
    }
    out.push_str("]\n");
    let dir = std::env::var_os("OUT_DIR").unwrap_or_else(|| panic!("cargo sets OUT_DIR for build scripts"));
    let path = std::path::Path::new(&dir).join("catalog_providers.rs");
    std::fs::write(&path, out).unwrap_or_else(|error| panic!("cannot write {}: {error}", path.display()));
}
