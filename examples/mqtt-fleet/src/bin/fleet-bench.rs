//! The fleet benchmark (stub).
fn main() {}
