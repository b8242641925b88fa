//! The board: mcp-hal's async tool kits over real drivers, generic over the codec, the relay and
//! the backlight (the types are chosen once, in `main.rs`; nothing here names esp-hal).
//!
//! | tool | kit | driver (`main.rs`) | evidence |
//! |---|---|---|---|
//! | `self.get_device_status` | [`status`] | all of the below | — (a read) |
//! | `self.audio_speaker.set_volume` | [`audio`] | async ES8311 over esp-hal's async I2C | `read_back` (DAC volume register) |
//! | `self.screen.set_brightness` | [`screen`] | `PwmBacklight` on an LEDC channel | `applied` (a PWM output cannot be read) |
//! | `self.screen.set_theme` | [`Board::SET_THEME`] | — (a UI setting) | `applied` |
//! | `self.relay.set` | [`relay`] | `GpioRelay` with a feedback input | `measured` (auxiliary contact, awaited up to its settle time) |
//! | `self.reboot` (user-only) | [`system`] | [`EspSystem`]: `software_reset` a second after answering | `scheduled` |
//!
//! Every tool but the theme is async and runs through `Server::handle_async`, which awaits
//! [`Board::run`]; the theme is a plain blocking tool (no I/O). No tool is long-running: the
//! relay's settle time is awaited inside the call on embassy-time, so the Wi-Fi stack runs
//! while the relay settles.

use core::cell::Cell;

use critical_section::Mutex;
use embassy_time::{Delay, Duration, Instant};
use mcp_core::schema::Param;
use mcp_core::{Annotations, Args, Call, Evidence, Level, Output, Reply, Tool, ToolResult};
use mcp_hal::asynch::audio::AudioCodec;
use mcp_hal::asynch::backlight::Backlight;
use mcp_hal::asynch::switch::Switch;
use mcp_hal::asynch::system::System;
use mcp_hal::kits::asynch::{DelayNs, Wait, audio, relay, screen, status, system};
use mcp_hal::kits::relay::Refusal;
use mcp_hal::kits::status::schema;
use mcp_hal::{ErrorKind, ErrorType, Percent};

/// The themes `self.screen.set_theme` accepts (those of the status schema); the first is the
/// power-up theme.
pub const THEMES: &[&str] = &["light", "dark"];

/// Everything the tools act on.
pub struct Board<C, R, B> {
    /// The audio codec.
    pub codec: C,
    /// The relay.
    pub relay: R,
    /// The backlight, with the level last commanded.
    pub screen: Screen<B>,
    /// The screen theme, one of [`THEMES`].
    pub theme: &'static str,
    /// The reboot line.
    pub system: EspSystem,
    /// The delay the kits wait on (settle times): embassy-time's, so waiting yields.
    pub delay: Delay,
}

impl<C, R, B> Board<C, R, B> {
    /// A board in its power-up state.
    pub const fn new(codec: C, relay: R, screen: Screen<B>) -> Self {
        Board {
            codec,
            relay,
            screen,
            theme: "light",
            system: EspSystem,
            delay: Delay,
        }
    }
}

impl<C: AudioCodec + 'static, R: Switch + 'static, B: Backlight + 'static> Board<C, R, B> {
    /// `self.screen.set_theme` (`theme`: one of [`THEMES`]): a UI setting, `applied`.
    pub const SET_THEME: Tool<Self> = Tool::new(
        "self.screen.set_theme",
        "Set the theme of the screen.",
        set_theme::<C, R, B>,
    )
    .params(&[Param::string("theme", "The theme of the screen").one_of(THEMES)])
    .annotations(Annotations::new().idempotent(true).destructive(false));

    /// The board's tools, in listing order; registered with `Server::register_all`.
    pub const TOOLS: &'static [&'static Tool<Self>] = &[
        // Every member the report writes; the relay is left out when its feedback is absent.
        &status::get_device_status().output(&[
            schema::AUDIO_SPEAKER,
            schema::SCREEN,
            schema::RELAY.optional(),
        ]),
        &audio::set_volume(),
        &screen::set_brightness(),
        &Self::SET_THEME,
        &relay::set(),
        &system::reboot(),
    ];

    /// Runs one async tool's call: the handler given to `Server::handle_async`.
    pub async fn run(&mut self, call: Call<'_, '_>) -> ToolResult {
        mcp_hal::dispatch_kits!(self, call, [status, audio, screen, relay, system])
    }
}

fn set_theme<C, R, B>(
    board: &mut Board<C, R, B>,
    args: &Args<'_>,
    _: &mut Reply<'_>,
) -> ToolResult {
    // The validator admits only THEMES: the index is always in range.
    if let Some(theme) = THEMES.get(args.choice("theme")?) {
        board.theme = theme;
    }
    Ok(Output::bool(true).with_evidence(Evidence::new(Level::Applied)))
}

impl<C, R, B> Wait for Board<C, R, B> {
    fn delay(&mut self) -> impl DelayNs + '_ {
        &mut self.delay
    }
}

impl<C: AudioCodec, R, B> audio::HasCodec for Board<C, R, B> {
    type Codec = C;
    fn codec(&mut self) -> &mut C {
        &mut self.codec
    }
}

impl<C, R, B: Backlight> screen::HasBacklight for Board<C, R, B> {
    type Backlight = Screen<B>;
    fn backlight(&mut self) -> &mut Screen<B> {
        &mut self.screen
    }
}

impl<C, R: Switch, B> relay::HasRelay for Board<C, R, B> {
    type Relay = R;
    fn relay(&mut self) -> &mut R {
        &mut self.relay
    }
    fn interlock(&mut self, _on: bool) -> Result<(), Refusal> {
        // No interlock on this board: wire a door or limit switch in here (read a flag an
        // interrupt keeps, never a bus: this runs inside a critical section).
        Ok(())
    }
}

impl<C, R, B> system::HasSystem for Board<C, R, B> {
    type System = EspSystem;
    fn system(&mut self) -> &mut EspSystem {
        &mut self.system
    }
}

impl<C: AudioCodec, R: Switch, B> status::StatusReport for Board<C, R, B> {
    async fn report(&mut self, s: &mut status::Status<'_>) {
        s.audio_speaker(&mut self.codec).await;
        // A PWM backlight cannot be read back: the status shows its commanded level.
        s.screen(self.screen.level, self.theme);
        s.relay(&mut self.relay).await;
    }
}

/// A backlight that remembers the level last commanded (a PWM output cannot be read, but the
/// status report shows what was set).
pub struct Screen<B> {
    backlight: B,
    level: Percent,
}

impl<B> Screen<B> {
    /// `backlight`, showing `level`.
    pub const fn new(backlight: B, level: Percent) -> Self {
        Screen { backlight, level }
    }
}

impl<B: ErrorType> ErrorType for Screen<B> {
    type Error = B::Error;
}

impl<B: Backlight> Backlight for Screen<B> {
    async fn set_brightness(&mut self, level: Percent) -> Result<(), Self::Error> {
        self.backlight.set_brightness(level).await?;
        self.level = level;
        Ok(())
    }
    async fn brightness(&mut self) -> Result<Option<Percent>, Self::Error> {
        self.backlight.brightness().await
    }
    fn tolerance(&self) -> u8 {
        self.backlight.tolerance()
    }
}

/// When the armed reboot is due. A `static`, so that the task that carries it out
/// (`main::reboot_watch`) need not own the board.
static REBOOT_AT: Mutex<Cell<Option<Instant>>> = Mutex::new(Cell::new(None));

/// Reboots with `esp_hal::system::software_reset`, a delay after the call, so that the answer
/// goes out first: `schedule_reboot` arms the time, `main::reboot_watch` resets the chip then.
#[derive(Debug, Default)]
pub struct EspSystem;

impl EspSystem {
    /// `true` when an armed reboot is due.
    pub fn reboot_due() -> bool {
        let at = critical_section::with(|cs| REBOOT_AT.borrow(cs).get());
        at.is_some_and(|at| Instant::now() >= at)
    }
}

impl ErrorType for EspSystem {
    type Error = ErrorKind;
}

impl System for EspSystem {
    async fn schedule_reboot(&mut self, delay_ms: u32) -> Result<(), ErrorKind> {
        let at = Instant::now() + Duration::from_millis(u64::from(delay_ms));
        critical_section::with(|cs| REBOOT_AT.borrow(cs).set(Some(at)));
        Ok(())
    }
}
