#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| session_fuzz::check_sse(data));
