//! A latching (bistable) relay mcp-hal does not know: two coils — a pulse on `set` closes the
//! contacts, a pulse on `reset` opens them, and they stay put without power — and an auxiliary
//! contact wired to an input that follows the main contacts. Written against the public traits:
//! `embedded_hal` pins and an async delay below, `mcp_hal::asynch::switch::Switch` above.
//!
//! `Ok` from [`set`](Switch::set) means the pulse was given, not that the contacts moved: the kit
//! reads the auxiliary contact for that (`measured`), waiting up to [`SETTLE_MS`] inside the call.

use embedded_hal::digital::{InputPin, OutputPin};
use embedded_hal_async::delay::DelayNs;
use mcp_hal::asynch::switch::Switch;
use mcp_hal::{ErrorKind, ErrorType};

/// How long a coil is energised.
pub const PULSE_MS: u32 = 10;
/// How long the contacts may take to follow a pulse.
pub const SETTLE_MS: u32 = 15;

/// The relay: two coil outputs, the auxiliary contact, and a delay for the pulse.
#[derive(Debug)]
pub struct LatchingRelay<S, R, F, D> {
    set: S,
    reset: R,
    feedback: F,
    delay: D,
}

impl<S: OutputPin, R: OutputPin, F: InputPin, D: DelayNs> LatchingRelay<S, R, F, D> {
    /// The relay; both coils are switched off first.
    pub fn new(mut set: S, mut reset: R, feedback: F, delay: D) -> Result<Self, ErrorKind> {
        set.set_low().map_err(pin)?;
        reset.set_low().map_err(pin)?;
        Ok(LatchingRelay {
            set,
            reset,
            feedback,
            delay,
        })
    }
}

fn pin<E: embedded_hal::digital::Error>(e: E) -> ErrorKind {
    e.kind().into()
}

impl<S, R, F, D> ErrorType for LatchingRelay<S, R, F, D> {
    type Error = ErrorKind;
}

impl<S: OutputPin, R: OutputPin, F: InputPin, D: DelayNs> Switch for LatchingRelay<S, R, F, D> {
    async fn set(&mut self, on: bool) -> Result<(), ErrorKind> {
        if on {
            self.set.set_high().map_err(pin)?;
            self.delay.delay_ms(PULSE_MS).await;
            self.set.set_low().map_err(pin)
        } else {
            self.reset.set_high().map_err(pin)?;
            self.delay.delay_ms(PULSE_MS).await;
            self.reset.set_low().map_err(pin)
        }
    }

    async fn feedback(&mut self) -> Result<Option<bool>, ErrorKind> {
        self.feedback.is_high().map(Some).map_err(pin)
    }

    fn settle_ms(&self) -> u32 {
        SETTLE_MS
    }
}
