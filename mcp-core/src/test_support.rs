//! What the unit tests of several modules share (`cfg(test)` only).

use std::any::Any;
use std::sync::Mutex;

use crate::wire::writer::Writer;

/// What `kept` has handed out, reachable for the life of the test process (so Miri, which
/// reports heap memory nothing points to at exit, sees it kept rather than leaked).
static KEPT: Mutex<Vec<&'static (dyn Any + Sync)>> = Mutex::new(Vec::new());

/// `value` for the rest of the process: for tables that borrow `'static` names and tools built
/// at test time.
pub(crate) fn kept<T: Any + Sync>(value: T) -> &'static T {
    let value: &'static T = Box::leak(Box::new(value));
    KEPT.lock().unwrap_or_else(|e| e.into_inner()).push(value);
    value
}

/// `text` for the rest of the process (see `kept`).
pub(crate) fn kept_str(text: String) -> &'static str {
    kept(text).as_str()
}

/// proptest's configuration for a property: `cases` cases, `under_miri` of them under Miri (where
/// each costs seconds), and no failure file (Miri's isolation has no working directory for it).
pub(crate) fn proptest_config(cases: u32, under_miri: u32) -> proptest::test_runner::Config {
    proptest::test_runner::Config {
        cases: if cfg!(miri) { under_miri } else { cases },
        failure_persistence: None,
        ..proptest::test_runner::Config::default()
    }
}

/// What `write` writes into a buffer of `cap` bytes, parsed (it must fit and be JSON).
pub(crate) fn written_json(cap: usize, write: impl FnOnce(&mut Writer<'_>)) -> serde_json::Value {
    let mut buf = vec![0u8; cap];
    let mut w = Writer::new(&mut buf);
    write(&mut w);
    serde_json::from_slice(w.written().unwrap()).unwrap()
}
