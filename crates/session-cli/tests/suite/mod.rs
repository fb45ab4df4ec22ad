//! Tests of the command's library half.

mod replay;
mod serve;
mod serve_cluster;
mod serve_support;
mod untrusted_layers;
