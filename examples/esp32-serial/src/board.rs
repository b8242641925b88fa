//! The board: mcp-hal's reference drivers on esp-hal peripherals, bound to mcp-hal's tool kits.
//!
//! | tool | driver | evidence |
//! |---|---|---|
//! | `self.audio_speaker.set_volume` | [`Es8311`] over I2C | `read_back` (DAC volume register) |
//! | `self.screen.set_brightness` | [`PwmBacklight`] on an LEDC channel | `applied` (PWM cannot be read) |
//! | `self.relay.set` | [`GpioRelay`] with a feedback input, settle time waited out in [`SettledRelay`] | `measured` (auxiliary contact) |
//! | `self.reboot` (user-only) | [`EspSystem`]: `software_reset` one second later | `scheduled` |
//! | `self.get_device_status` | all of the above | — |
//!
//! No tool is long-running (mcp-hal without its `tasks` feature), so the engine has no task table.

use esp_hal::Blocking;
use esp_hal::gpio::{Input, Output};
use esp_hal::i2c::master::I2c;
use esp_hal::ledc::LowSpeed;
use esp_hal::ledc::channel::Channel;
use esp_hal::time::{Duration, Instant};
use mcp_core::Tool;
use mcp_hal::backlight::Backlight;
use mcp_hal::drivers::{Es8311, GpioRelay, PwmBacklight};
use mcp_hal::kits::{audio, relay, screen, status, system};
use mcp_hal::switch::Switch;
use mcp_hal::system::System;
use mcp_hal::{ErrorKind, ErrorType, Percent};

/// The codec on its I2C bus.
pub type Codec = Es8311<I2c<'static, Blocking>>;
/// The relay: a coil output and a feedback input.
pub type Relay = SettledRelay<GpioRelay<Output<'static>, Input<'static>>>;

/// A relay whose contacts may lag the coil by up to `settle_ms`: `set` waits (at most that long)
/// until the feedback agrees, so the kit reads settled feedback at once and needs no task.
pub struct SettledRelay<S> {
    inner: S,
    settle_ms: u32,
}

impl<S: Switch> SettledRelay<S> {
    /// Wraps `inner`, taking over its declared settle time.
    pub fn new(inner: S) -> Self {
        let settle_ms = inner.settle_ms();
        SettledRelay { inner, settle_ms }
    }
}

impl<S: Switch> ErrorType for SettledRelay<S> {
    type Error = S::Error;
}

impl<S: Switch> Switch for SettledRelay<S> {
    fn set(&mut self, on: bool) -> Result<(), Self::Error> {
        self.inner.set(on)?;
        let deadline = Instant::now() + Duration::from_millis(u64::from(self.settle_ms));
        // Wait while the contacts still disagree, at most the settle time (the kit then reads the
        // feedback and reports agreement, a disagreement, no feedback or a read error).
        while Instant::now() < deadline && self.inner.feedback().is_ok_and(|f| f == Some(!on)) {
            core::hint::spin_loop();
        }
        Ok(())
    }
    fn feedback(&mut self) -> Result<Option<bool>, Self::Error> {
        self.inner.feedback()
    }
    /// 0: `set` has already waited.
    fn settle_ms(&self) -> u32 {
        0
    }
}

/// The backlight PWM, remembering the last level it was set to (a PWM output cannot be read,
/// but the status report shows what was commanded).
pub struct Screen {
    pwm: PwmBacklight<Channel<'static, LowSpeed>>,
    level: Percent,
}

impl Screen {
    /// A backlight on `pwm`, showing `level`.
    pub fn new(pwm: PwmBacklight<Channel<'static, LowSpeed>>, level: Percent) -> Self {
        Screen { pwm, level }
    }
}

impl ErrorType for Screen {
    type Error = <PwmBacklight<Channel<'static, LowSpeed>> as ErrorType>::Error;
}

impl Backlight for Screen {
    fn set_brightness(&mut self, level: Percent) -> Result<(), Self::Error> {
        self.pwm.set_brightness(level)?;
        self.level = level;
        Ok(())
    }
    fn brightness(&mut self) -> Result<Option<Percent>, Self::Error> {
        self.pwm.brightness()
    }
}

/// Reboots with `esp_hal::system::software_reset`, after a delay so that the answer goes out.
#[derive(Default)]
pub struct EspSystem {
    reset_at: Option<Instant>,
}

impl EspSystem {
    /// `true` when an armed reboot is due.
    pub fn reboot_due(&self) -> bool {
        self.reset_at.is_some_and(|at| Instant::now() >= at)
    }
}

impl ErrorType for EspSystem {
    type Error = ErrorKind;
}

impl System for EspSystem {
    fn schedule_reboot(&mut self, delay_ms: u32) -> Result<(), ErrorKind> {
        self.reset_at = Some(Instant::now() + Duration::from_millis(u64::from(delay_ms)));
        Ok(())
    }
}

/// Everything the tools act on.
pub struct Board {
    /// The ES8311 codec.
    pub codec: Codec,
    /// The backlight.
    pub screen: Screen,
    /// The relay.
    pub relay: Relay,
    /// The reboot line.
    pub system: EspSystem,
}

impl audio::HasCodec for Board {
    type Codec = Codec;
    fn codec(&mut self) -> &mut Codec {
        &mut self.codec
    }
}

impl screen::HasBacklight for Board {
    type Backlight = Screen;
    fn backlight(&mut self) -> &mut Screen {
        &mut self.screen
    }
}

impl relay::HasRelay for Board {
    type Relay = Relay;
    fn relay(&mut self) -> &mut Relay {
        &mut self.relay
    }
    /// No interlock on this board: wire a door or limit switch in here.
    fn interlock(&mut self, _on: bool) -> Result<(), relay::Refusal> {
        Ok(())
    }
}

impl system::HasSystem for Board {
    type System = EspSystem;
    fn system(&mut self) -> &mut EspSystem {
        &mut self.system
    }
}

impl status::StatusReport for Board {
    fn report(&mut self, s: &mut status::Status<'_, '_, '_>) {
        s.audio_speaker(&mut self.codec)
            .screen(self.screen.level, "light")
            .relay(&mut self.relay);
    }
}

const STATUS_SCHEMA: &str = concat!(
    r#"{"type":"object","properties":{"#,
    r#""audio_speaker":{"type":"object","properties":{"volume":{"type":"integer","minimum":0,"maximum":100}},"required":["volume"]},"#,
    r#""screen":{"type":"object","properties":{"brightness":{"type":"integer","minimum":0,"maximum":100},"theme":{"type":"string"}},"required":["brightness"]},"#,
    r#""relay":{"type":"object","properties":{"on":{"type":"boolean"}},"required":["on"]}},"#,
    r#""required":["screen"]}"#
);

static GET_DEVICE_STATUS: Tool<Board> = status::get_device_status().output_schema(STATUS_SCHEMA);
static SET_VOLUME: Tool<Board> = audio::set_volume();
static SET_BRIGHTNESS: Tool<Board> = screen::set_brightness();
static RELAY_SET: Tool<Board> = relay::set();
static REBOOT: Tool<Board> = system::reboot();

/// The board's tools, in listing order.
pub static TOOLS: [&Tool<Board>; 5] = [
    &GET_DEVICE_STATUS,
    &SET_VOLUME,
    &SET_BRIGHTNESS,
    &RELAY_SET,
    &REBOOT,
];
