//! `self.get_device_status`, assembled from the board's parts.
//!
//! The board says which parts it has by implementing [`StatusReport`] with the helpers of
//! [`Status`]; the result is xiaozhi's shape, e.g.
//! `{"audio_speaker":{"volume":40},"screen":{"brightness":80,"theme":"light"}}`, as JSON text
//! and as `structuredContent`. Every value is read from the device at the time of the call.

use mcp_core::wire::ObjectWriter;
use mcp_core::{Annotations, Args, Handler, Output, Reply, Tool, ToolError, ToolResult};

use super::declare;
use crate::audio::AudioCodec;
use crate::motor::{Actuator, Motion};
use crate::switch::Switch;
use crate::{Error, Percent};

/// One member of the status object, as read from its part: the blocking [`Status`] writes it at
/// once, the async one keeps it until every part is read.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Member<'a> {
    /// `"audio_speaker":{"volume":N}`
    AudioSpeaker(Percent),
    /// `"screen":{"brightness":N,"theme":"…"}`
    Screen(Percent, &'a str),
    /// `"relay":{"on":bool}`
    Relay(bool),
    /// `"motor":{"position":N,"moving":bool}`
    Motor(Motion),
}

impl Member<'_> {
    /// The audio member, from a volume read back.
    pub(crate) const fn audio_speaker(volume: Percent) -> Option<Self> {
        Some(Member::AudioSpeaker(volume))
    }

    /// The relay member, from the feedback input (none without one).
    pub(crate) const fn relay(feedback: Option<bool>) -> Option<Self> {
        match feedback {
            Some(on) => Some(Member::Relay(on)),
            None => None,
        }
    }

    /// The motor member, from the encoder.
    pub(crate) const fn motor(state: Motion) -> Option<Self> {
        Some(Member::Motor(state))
    }

    /// Writes the member into the status object.
    pub(crate) fn write(&self, o: &mut ObjectWriter<'_, '_>) {
        match *self {
            Member::AudioSpeaker(v) => o.object("audio_speaker", |o| {
                o.int("volume", v.into());
            }),
            Member::Screen(brightness, theme) => o.object("screen", |o| {
                o.int("brightness", brightness.into()).str("theme", theme);
            }),
            Member::Relay(on) => o.object("relay", |o| {
                o.bool("on", on);
            }),
            Member::Motor(s) => o.object("motor", |o| {
                o.int("position", s.position.into())
                    .bool("moving", s.moving);
            }),
        };
    }
}

/// Keeps the first device error of a report (the tool fails with it once the object is done).
pub(crate) fn keep<E: Error>(error: &mut Option<ToolError>, e: &E) {
    error.get_or_insert(ToolError::new(e.message()));
}

/// The answer: the object written, unless a part failed to read.
pub(crate) fn conclude(written: Result<Output, ToolError>, error: Option<ToolError>) -> ToolResult {
    let output = written?;
    match error {
        Some(e) => Err(e),
        None => Ok(output),
    }
}

/// Writes the status members; errors are kept and reported after the object is written.
pub struct Status<'w, 'o, 'b> {
    o: &'w mut ObjectWriter<'o, 'b>,
    error: Option<ToolError>,
}

impl core::fmt::Debug for Status<'_, '_, '_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Status")
            .field("error", &self.error)
            .finish_non_exhaustive()
    }
}

impl<'o, 'b> Status<'_, 'o, 'b> {
    fn put<E: Error>(&mut self, read: Result<Option<Member<'_>>, E>) -> &mut Self {
        match read {
            Ok(Some(member)) => member.write(self.o),
            Ok(None) => {}
            Err(e) => keep(&mut self.error, &e),
        }
        self
    }

    /// `"audio_speaker":{"volume":N}`, read back from the codec.
    pub fn audio_speaker<A: AudioCodec>(&mut self, codec: &mut A) -> &mut Self {
        self.put(codec.volume().map(Member::audio_speaker))
    }

    /// `"screen":{"brightness":N,"theme":"…"}`. `brightness` is what the backlight reports, or
    /// the last commanded level for one that cannot be read.
    pub fn screen(&mut self, brightness: Percent, theme: &str) -> &mut Self {
        Member::Screen(brightness, theme).write(self.o);
        self
    }

    /// `"relay":{"on":bool}` from the feedback input (omitted when the relay has none).
    pub fn relay<S: Switch>(&mut self, relay: &mut S) -> &mut Self {
        self.put(relay.feedback().map(Member::relay))
    }

    /// `"motor":{"position":N,"moving":bool}` from the encoder.
    pub fn motor<M: Actuator>(&mut self, motor: &mut M) -> &mut Self {
        self.put(motor.state().map(Member::motor))
    }

    /// Any other member, for parts the kits do not know.
    pub fn object(&mut self) -> &mut ObjectWriter<'o, 'b> {
        self.o
    }
}

/// The board's parts, for `self.get_device_status`.
pub trait StatusReport {
    /// Writes one member per part with the [`Status`] helpers.
    fn report(&mut self, status: &mut Status<'_, '_, '_>);
}

/// The tool's name.
pub const NAME: &str = "self.get_device_status";

/// The tool as listed, for the blocking kit (`Some(handler)`) and the async one (`None`).
pub(crate) const fn listing<C>(handler: Option<Handler<C>>) -> Tool<C> {
    declare(
        NAME,
        "The device's current state, read from its parts at the time of the call (for example the \
         audio speaker's volume and the screen's brightness). Use this tool before changing a \
         setting relative to its current value.",
        handler,
    )
    .annotations(Annotations::new().read_only(true))
}

fn handler<C: StatusReport>(ctx: &mut C, _: &Args<'_>, reply: &mut Reply<'_>) -> ToolResult {
    let mut error = None;
    let written = reply.json(|o| {
        let mut s = Status { o, error: None };
        ctx.report(&mut s);
        error = s.error;
    });
    conclude(written, error)
}

/// The read-only tool `self.get_device_status` (no parameters).
pub const fn get_device_status<C: StatusReport>() -> Tool<C> {
    listing(Some(handler::<C>))
}

/// The `outputSchema` members of what [`Status`] writes, for
/// [`Tool::output`](mcp_core::Tool::output): list the parts your [`StatusReport`] writes, in its
/// order, and mark `.optional()` those it may leave out (a relay without feedback, a motor the
/// board may not have). The schema the clients validate against then comes from the same
/// definitions as the members written.
///
/// ```
/// use mcp_hal::kits::status::{self, schema};
/// # struct Board;
/// # impl status::StatusReport for Board { fn report(&mut self, _: &mut status::Status<'_, '_, '_>) {} }
/// static STATUS: mcp_core::Tool<Board> = status::get_device_status()
///     .output(&[schema::AUDIO_SPEAKER, schema::SCREEN, schema::RELAY.optional()]);
/// ```
pub mod schema {
    use mcp_core::schema::Field;

    /// `"audio_speaker":{"volume":0..=100}` ([`Status::audio_speaker`](super::Status::audio_speaker)).
    pub const AUDIO_SPEAKER: Field =
        Field::object("audio_speaker", &[Field::integer("volume").range(0, 100)]);

    /// `"screen":{"brightness":0..=100,"theme":"light"|"dark"}`
    /// ([`Status::screen`](super::Status::screen) with xiaozhi's two themes).
    pub const SCREEN: Field = Field::object(
        "screen",
        &[
            Field::integer("brightness").range(0, 100),
            Field::string("theme").one_of(&["light", "dark"]),
        ],
    );

    /// `"relay":{"on":bool}` ([`Status::relay`](super::Status::relay); absent without a feedback
    /// input, so usually `.optional()`).
    pub const RELAY: Field = Field::object("relay", &[Field::boolean("on")]);

    /// `"motor":{"position":int,"moving":bool}` ([`Status::motor`](super::Status::motor)).
    pub const MOTOR: Field = Field::object(
        "motor",
        &[Field::integer("position"), Field::boolean("moving")],
    );
}
