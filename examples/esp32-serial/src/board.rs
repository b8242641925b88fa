//! The board: mcp-hal's reference drivers on esp-hal peripherals, bound to mcp-hal's tool kits.
//!
//! | tool | driver | evidence |
//! |---|---|---|
//! | `self.audio_speaker.set_volume` | [`Es8311`] over I2C | `read_back` (DAC volume register) |
//! | `self.screen.set_brightness` | [`PwmBacklight`] on an LEDC channel | `applied` (PWM cannot be read) |
//! | `self.relay.set` | [`GpioRelay`] with a feedback input; the kit waits out its settle time in the call, on esp-hal's [`Delay`] | `measured` (auxiliary contact) |
//! | `self.reboot` (user-only) | [`EspSystem`]: `software_reset` one second later | `scheduled` |
//! | `self.get_device_status` | all of the above | — |
//!
//! No tool is long-running (mcp-hal without its `tasks` feature), so the engine has no task table:
//! the relay's 20 ms settle time fits the kits' 200 ms call budget and is waited out inside the
//! call ([`Wait`]), which answers `measured` or a failure naming the feedback.

use esp_hal::Blocking;
use esp_hal::delay::Delay;
use esp_hal::gpio::{Input, Output};
use esp_hal::i2c::master::I2c;
use esp_hal::ledc::LowSpeed;
use esp_hal::ledc::channel::Channel;
use esp_hal::time::{Duration, Instant};
use mcp_core::Tool;
use mcp_hal::backlight::Backlight;
use mcp_hal::drivers::{Es8311, GpioRelay, PwmBacklight};
use mcp_hal::kits::{DelayNs, Wait, audio, relay, screen, status, system};
use mcp_hal::system::System;
use mcp_hal::{ErrorKind, ErrorType, Percent};

/// The codec on its I2C bus.
pub type Codec = Es8311<I2c<'static, Blocking>>;
/// The relay: a coil output and a feedback input.
pub type Relay = GpioRelay<Output<'static>, Input<'static>>;

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
    /// The blocking delay the kits wait on for settle times.
    pub delay: Delay,
}

impl Wait for Board {
    /// esp-hal's blocking delay (a busy wait on the system timer), at most the 200 ms budget.
    fn delay(&mut self) -> impl DelayNs + '_ {
        &mut self.delay
    }
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
    // No interlock on this board (the default allows every command): wire a door or limit
    // switch in by implementing `interlock`.
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

impl Board {
    /// The board's tools, in listing order; registered with `Server::register_all`.
    pub const TOOLS: &'static [&'static Tool<Self>] = &[
        // Every member the report writes; the relay is left out when its feedback is absent.
        &status::get_device_status().output(&[
            status::schema::AUDIO_SPEAKER,
            status::schema::SCREEN,
            status::schema::RELAY.optional(),
        ]),
        &audio::set_volume(),
        &screen::set_brightness(),
        &relay::set(),
        &system::reboot(),
    ];
}
