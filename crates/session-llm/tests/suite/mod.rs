//! Integration tests: fixtures, chunking, errors, request bodies, HTTP on loopback, when tool
//! calls are yielded.

mod chunking;
mod edge_cases;
mod errors;
mod fuzz_regressions;
mod http;
mod requests;
mod scripted;
mod snapshots;
mod support;
mod tool_call_timing;
