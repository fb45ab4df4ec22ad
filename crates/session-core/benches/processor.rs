//! Benchmark of the processor (filled with the processor).
fn main() {}
