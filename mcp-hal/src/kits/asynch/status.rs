//! `self.get_device_status` over async parts: the blocking
//! [`kits::status`](crate::kits::status) kit, awaited.
//!
//! The board reads its parts with the [`Status`] helpers in [`StatusReport::report`]; the kit
//! then writes the same object as the blocking kit, member for member in the order read, e.g.
//! `{"audio_speaker":{"volume":40},"screen":{"brightness":80,"theme":"light"}}`. Reads are
//! awaited before anything is written (the reply's JSON writer is not async), so the helpers
//! keep what they read — at most [`MAX_MEMBERS`] members — and
//! [`StatusReport::extra`] may write members the kits do not know once every part is read.
//! The first read error fails the call, as in the blocking kit.

use mcp_core::wire::ObjectWriter;
use mcp_core::{Args, Reply, Tool, ToolError, ToolResult};

use crate::asynch::audio::AudioCodec;
use crate::asynch::motor::Actuator;
use crate::asynch::switch::Switch;
use crate::kits::status::{Member, conclude, keep, listing};
use crate::{Error, Percent};

pub use crate::kits::status::NAME;

/// How many members a [`Status`] keeps.
pub const MAX_MEMBERS: usize = 8;

/// What the board's parts read, kept until the object is written.
#[derive(Debug)]
pub struct Status<'a> {
    members: heapless::Vec<Member<'a>, MAX_MEMBERS>,
    error: Option<ToolError>,
}

impl<'a> Status<'a> {
    fn put<E: Error>(&mut self, read: Result<Option<Member<'a>>, E>) -> &mut Self {
        match read {
            Ok(Some(member)) => {
                if self.members.push(member).is_err() {
                    self.error.get_or_insert(ToolError::new(
                        "Tool bug: more status members than the async status kit keeps",
                    ));
                }
            }
            Ok(None) => {}
            Err(e) => keep(&mut self.error, &e),
        }
        self
    }

    /// `"audio_speaker":{"volume":N}`, read back from the codec.
    pub async fn audio_speaker<A: AudioCodec>(&mut self, mut codec: A) -> &mut Self {
        let read = codec.volume().await;
        self.put(read.map(Member::audio_speaker))
    }

    /// `"screen":{"brightness":N,"theme":"…"}`. `brightness` is what the backlight reports, or
    /// the last commanded level for one that cannot be read.
    pub fn screen(&mut self, brightness: Percent, theme: &'a str) -> &mut Self {
        self.put(Ok::<_, crate::ErrorKind>(Some(Member::Screen(
            brightness, theme,
        ))))
    }

    /// `"relay":{"on":bool}` from the feedback input (omitted when the relay has none).
    pub async fn relay<S: Switch>(&mut self, mut relay: S) -> &mut Self {
        let read = relay.feedback().await;
        self.put(read.map(Member::relay))
    }

    /// `"motor":{"position":N,"moving":bool}` from the encoder.
    pub async fn motor<M: Actuator>(&mut self, mut motor: M) -> &mut Self {
        let read = motor.state().await;
        self.put(read.map(Member::motor))
    }
}

/// The board's async parts, for `self.get_device_status`.
#[allow(
    async_fn_in_trait,
    reason = "no Send bound: embedded executors run on one core, as embedded-hal-async's traits"
)]
pub trait StatusReport {
    /// Reads one member per part with the [`Status`] helpers (`status.audio_speaker(self.codec()).await`).
    async fn report(&mut self, status: &mut Status<'_>);

    /// Writes members the kits do not know, after the parts' members, from what the board
    /// already holds (no I/O: the writer is not async). The default writes nothing.
    fn extra(&mut self, object: &mut ObjectWriter<'_, '_>) {
        let _ = object;
    }
}

/// The async read-only tool `self.get_device_status` (no parameters); serve it with [`call`].
pub const fn get_device_status<C: StatusReport>() -> Tool<C> {
    listing(None)
}

/// The old name of [`get_device_status`].
#[deprecated(note = "named as the blocking kit's constructor: `get_device_status()`")]
pub const fn tool<C: StatusReport>() -> Tool<C> {
    get_device_status()
}

/// Runs the tool: reads every part, then writes the object.
pub async fn call<C: StatusReport>(ctx: &mut C, _: &Args<'_>, reply: &mut Reply<'_>) -> ToolResult {
    let mut status = Status {
        members: heapless::Vec::new(),
        error: None,
    };
    ctx.report(&mut status).await;
    let Status { members, error } = status;
    let written = reply.json(|o| {
        for member in &members {
            member.write(o);
        }
        ctx.extra(o);
    });
    conclude(written, error)
}
