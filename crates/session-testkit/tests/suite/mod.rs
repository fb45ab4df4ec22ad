//! Integration tests of the loopback test server.

mod faults;
mod formats;
mod log;
mod mcp_faults;
mod stamps;
mod support;
