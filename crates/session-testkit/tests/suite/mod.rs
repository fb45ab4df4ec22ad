//! Integration tests of the loopback test server.

mod faults;
mod formats;
mod log;
mod stamps;
mod support;
mod mcp_faults;
