//! The router over a real runtime, served on a loopback listener.

mod attacks;
mod routes;
mod support;
