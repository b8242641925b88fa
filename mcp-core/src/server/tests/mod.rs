//! The engine's unit tests, one file per concept, kept apart from the production code (they use
//! its private items, so they stay inside the crate).

mod asynch;
// (Its upgrade asks about a string argument, the image's hash.)
#[cfg(all(feature = "confirm", feature = "strings"))]
mod confirm;
// (Its engine registers the status tool, whose `task_id` is a string parameter.)
#[cfg(all(feature = "confirm", feature = "strings"))]
mod conversation;
mod modern;
#[cfg(feature = "resources")]
mod prompts;
#[cfg(feature = "resources")]
mod resources;
// (The task tests ask the status tool, whose `task_id` is a string parameter.)
#[cfg(feature = "strings")]
mod tasks;
mod vectors;

/// Sends one JSON message to `server` as `principal`; the answer, parsed, if one was written, and
/// whether the answer is deferred.
#[cfg(any(all(feature = "confirm", feature = "strings"), feature = "resources"))]
fn exchange<C, K: super::Capacities>(
    server: &mut super::Server<'_, C, K>,
    input: super::Input<'_>,
    ctx: &mut C,
    out: &mut [u8],
) -> (Option<serde_json::Value>, bool) {
    let mut silent = |_: &[u8]| {};
    let h = server.handle_with(input, ctx, out, &mut silent).unwrap();
    let v = (h.len > 0).then(|| serde_json::from_slice(&out[..h.len]).unwrap());
    (v, h.deferred)
}
