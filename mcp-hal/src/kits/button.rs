//! `device://buttons/main`: a debounced button's press count as a live resource.
//!
//! | item | what |
//! |---|---|
//! | [`URI`] | `device://buttons/main` |
//! | [`Presses`] | the button's debounced state and press count, and the publish gate over the count: the board keeps it, the main loop polls it with the button |
//! | `resource()` | the [`LiveResource`](mcp_core::registry::LiveResource) (feature `resources`): `{"presses":3}` (`application/json`), the presses counted since power-up |
//!
//! What a press *is* — the yes to a question the device shows, or, with none shown, the board's
//! doorbell — is one rule: [`Press`], and `press` (feature `confirm`).
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

/// What one press of the device's button is, on a board where the button both answers a
/// person's confirmation and rings (a doorbell, a call button). One rule, kept here for every
/// host and firmware: a press **answers** the question the device shows when it counts for it;
/// while a question is shown, a press that does not count (too soon after the question appeared,
/// or after the previous press) **came early** and does nothing else; with **no question shown**
/// the press **rings**: the board's event (on a xiaozhi wire, `transport::xiaozhi::Turns::fire`
/// with the board's [`Event`](mcp_core::transport::xiaozhi::Event), `Device event: the doorbell button
/// was pressed`). A press is counted in [`Presses`] whatever it is.
///
/// A board with one engine asks `press` (feature `confirm`); a host that shows the questions of
/// several engines keeps what it shows and asks [`Press::of`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Press {
    /// It answered the question the device showed: the call it approves runs at the next poll.
    Answered,
    /// A question is shown, but this press does not count for it: nothing happens.
    Early,
    /// No question is shown: the press is the board's own event, a doorbell.
    Rang,
}

impl Press {
    /// The rule for a press that `answered` a question or not, while a question was `shown` on
    /// the device or not.
    pub const fn of(answered: bool, shown: bool) -> Press {
        match (answered, shown) {
            (true, _) => Press::Answered,
            (false, true) => Press::Early,
            (false, false) => Press::Rang,
        }
    }

    /// `true` for [`Press::Rang`]: the press is the board's event.
    pub const fn rang(self) -> bool {
        matches!(self, Press::Rang)
    }
}

/// One press of the button at `pressed_ms`, on a board with one engine: the yes to the question
/// the device shows ([`Server::confirm_on_device`](mcp_core::Server::confirm_on_device), with
/// its rules of when a press counts), or, when none is shown, [`Press::Rang`] (see [`Press`]).
/// A question the client's user is asked (elicitation) is not shown on the device: a press then
/// rings. Feature `confirm` (without it no question is ever shown: every press rings).
///
/// ```
/// # #[cfg(feature = "confirm")] {
/// use mcp_core::transport::xiaozhi::{Event, Turns};
/// use mcp_core::{Caps, Config, Server};
/// use mcp_hal::kits::button::{self, Press};
///
/// static DOORBELL: Event = Event::new("doorbell", "the doorbell button was pressed");
/// # struct Board;
/// let mut server: Server<'static, Board, Caps<4>> = Server::new(Config::new("door", "1"));
/// let mut turns: Turns<2> = Turns::new();
/// # let now_ms = 5_000;
/// // in the button's interrupt or the main loop, for each press:
/// if button::press(&mut server, now_ms) == Press::Rang {
///     turns.fire(&DOORBELL, None, now_ms); // the backend's model hears of it
/// }
/// # }
/// ```
#[cfg(feature = "confirm")]
pub fn press<C, K: mcp_core::Capacities>(
    server: &mut mcp_core::Server<'_, C, K>,
    pressed_ms: u64,
) -> Press {
    match server.confirmation().filter(|p| p.on_device) {
        None => Press::Rang,
        Some(shown) => Press::of(
            server.confirm_on_device(shown.approval, true, pressed_ms),
            true,
        ),
    }
}

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
