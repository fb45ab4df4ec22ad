//! The router over a real runtime, served on a loopback listener.

mod attacks;
mod file_races;
mod git_status;
mod question;
mod routes;
mod support;
