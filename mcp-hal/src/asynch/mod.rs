//! Async twins of the device traits (to be filled in).
