#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| session_store::fuzzing::check_row(data));
