//! Reference drivers (to be filled in).
