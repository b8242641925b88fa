//! Benchmarks of the dispatch path (to be filled in).
