//! The engine's unit tests, one file per concept, kept apart from the production code (they use
//! its private items, so they stay inside the crate).

mod asynch;
#[cfg(feature = "confirm")]
mod confirm;
mod modern;
#[cfg(feature = "resources")]
mod prompts;
#[cfg(feature = "resources")]
mod resources;
mod tasks;
mod vectors;
