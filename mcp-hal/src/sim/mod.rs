//! In-memory devices with fault injection (to be filled in).
