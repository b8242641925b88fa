//! `device://buttons/main`: a debounced button's press count as a live resource.
//!
//! | item | what |
//! |---|---|
//! | [`URI`] | `device://buttons/main` |
//! | [`Presses`] | the button's debounced state and press count, and the publish gate over the count: the board keeps it, the main loop polls it with the button |
//! | `resource()` | the [`LiveResource`](mcp_core::registry::LiveResource) (feature `resources`): `{"presses":3}` (`application/json`), the presses counted since power-up |
//!
//! A press is counted once the button has been steadily down for [`DEBOUNCE_MS`] (see
//! [`Debouncer`]), and published by [`POLICY`]: each press at once, but at most one
//! notification per 200 ms (presses in between are in the count the client reads). The poll
//! must come often enough to see a press: every 10 ms is comfortable, one every `DEBOUNCE_MS / 2`
//! is the least.
//!
//! ```
//! # #[cfg(feature = "sim")] {
//! use mcp_hal::kits::button::{self, HasButton, Presses};
//! # use mcp_hal::sim::{SimButton, Faults};
//!
//! struct Board { button: SimButton, presses: Presses }
//! impl HasButton for Board {
//!     fn presses(&self) -> &Presses { &self.presses }
//! }
//!
//! let mut board = Board { button: SimButton::new(Faults::NONE), presses: Presses::new() };
//! board.button.press(100);
//! let mut published = 0;
//! for now in (0..1_000).step_by(10) {
//!     board.button.set_time(now);
//!     if let Some(uri) = board.presses.poll(now, &mut board.button) {
//!         // server.publish(uri);
//!         assert_eq!(uri, button::URI);
//!         published += 1;
//!     }
//! }
//! assert_eq!((published, board.presses().count()), (1, 1));
//! # }
//! ```

use crate::Error;
use crate::publish::{Debouncer, Gate, Policy};
use crate::sensor::Button;

/// The resource's URI.
pub const URI: &str = "device://buttons/main";

/// The resource's name.
pub const NAME: &str = "button";

/// How long the button must be steadily down (or up) for a change to count, in milliseconds.
pub const DEBOUNCE_MS: u32 = 20;

/// The default policy: every press, at most one notification per 200 ms.
pub const POLICY: Policy = Policy::EVERY_CHANGE.min_interval_ms(200);

/// A button's presses: its [`Debouncer`] and the publish [`Gate`] over the count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Presses {
    uri: &'static str,
    debouncer: Debouncer,
    gate: Gate,
}

impl Presses {
    /// The presses of `device://buttons/main`, with [`DEBOUNCE_MS`] and [`POLICY`].
    pub const fn new() -> Self {
        Self::with(URI, DEBOUNCE_MS, POLICY)
    }

    /// The presses of the resource at `uri`, debounced over `debounce_ms`, published by
    /// `policy` (over the count: a threshold of 1 is every press).
    pub const fn with(uri: &'static str, debounce_ms: u32, policy: Policy) -> Self {
        Presses {
            uri,
            debouncer: Debouncer::new(debounce_ms),
            gate: Gate::new(policy),
        }
    }

    /// Samples `button` at `now_ms`; the resource's URI when the count is to be published. A
    /// read error is a sample skipped.
    pub fn poll<B: Button>(&mut self, now_ms: u64, button: &mut B) -> Option<&'static str> {
        let raw = button.is_pressed().map_err(|e| e.kind()).ok()?;
        self.sample(now_ms, raw)
    }

    /// [`poll`](Self::poll) over an [async button](crate::asynch::sensor::Button).
    pub async fn poll_async<B: crate::asynch::sensor::Button>(
        &mut self,
        now_ms: u64,
        button: &mut B,
    ) -> Option<&'static str> {
        let raw = button.is_pressed().await.map_err(|e| e.kind()).ok()?;
        self.sample(now_ms, raw)
    }

    /// Feeds a raw level sampled some other way (`true`: down); the resource's URI when the
    /// count is to be published.
    pub fn sample(&mut self, now_ms: u64, raw_pressed: bool) -> Option<&'static str> {
        self.debouncer.update(now_ms, raw_pressed);
        let count = i32::try_from(self.debouncer.presses()).unwrap_or(i32::MAX);
        self.gate.update(now_ms, count).then_some(self.uri)
    }

    /// Presses counted so far.
    pub const fn count(&self) -> u32 {
        self.debouncer.presses()
    }

    /// `true` while the button is (debounced) down.
    pub const fn is_pressed(&self) -> bool {
        self.debouncer.is_pressed()
    }

    /// The resource's URI.
    pub const fn uri(&self) -> &'static str {
        self.uri
    }
}

impl Default for Presses {
    fn default() -> Self {
        Self::new()
    }
}

/// Access to the board's button presses (the [`Presses`] it keeps and polls).
pub trait HasButton {
    /// The presses.
    fn presses(&self) -> &Presses;
}

#[cfg(feature = "resources")]
fn read<C: HasButton>(ctx: &mut C, reply: &mut mcp_core::Reply<'_>) -> mcp_core::ToolResult {
    let count = ctx.presses().count();
    reply.json(|o| {
        o.int("presses", i64::from(count));
    })
}

/// The live resource `device://buttons/main`: `{"presses":3}`. Feature `resources`.
#[cfg(feature = "resources")]
pub const fn resource<C: HasButton>() -> mcp_core::registry::LiveResource<C> {
    mcp_core::registry::LiveResource::new(URI, NAME, "application/json", read::<C>).description(
        "Presses of the device's main button since power-up: {\"presses\":3}. Subscribe to hear \
         of each press.",
    )
}
