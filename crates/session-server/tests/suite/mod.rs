//! The router over a real runtime, served on a loopback listener.

mod routes;
mod support;
