//! The xiaozhi envelope: how xiaozhi devices carry MCP over their WebSocket (or MQTT) channel.
//!
//! The device opens with a hello announcing `"features":{"mcp":true}`; the server answers with its
//! own hello carrying a `session_id`. MCP messages then travel as
//! `{"session_id":"…","type":"mcp","payload":{…JSON-RPC…}}`. Other message types (audio control,
//! `listen`, `tts`, …) are not MCP and are left to the firmware.
//!
//! Backends send MCP before the hello exchange completes and sometimes without `session_id`:
//! [`Envelope::mcp_payload`] accepts both. A payload that is a string (JSON-in-a-string) is not a
//! JSON-RPC object and is dropped. A payload nested deeper than the engine reads still reaches
//! it (the envelope is read as deep as the checker can follow), and a text that is no envelope
//! at all is answered as the engine answers anything unreadable: every request gets an answer.
//!
//! **The link's rule** (for the firmware's WebSocket client; no clock here, the caller keeps
//! time): a connection has a *session* once the backend's hello arrived. The device waits
//! [`HELLO_TIMEOUT_MS`] for it, then closes the connection and connects again — a backend may
//! drop a hello (xinnan's server drops one that arrives while it still loads the device's
//! configuration) and would otherwise leave the device without a session until its idle close.
//! [`Reconnect`] says how long to wait before the next attempt: the wait grows on every
//! connection that ends without a session (refused, timed out, closed right after the upgrade,
//! no hello in time) and starts again from the first step only after one that had a session.
//!
//! **What the backend hears.** A xiaozhi backend (xinnan's server) turns a device's frames into
//! speech or a model turn only through `{"type":"listen","state":"detect","text":T}`: a `T` that
//! begins with [`DEVICE_CALL`] is spoken to the user and added to the model's dialogue as the
//! assistant's words; any other `T` starts a model turn with `T` as the user's words. MCP
//! notifications are only logged. So:
//!
//! - an outcome that comes after a call's answer ([`Polled::heard`](crate::server::Polled): a
//!   press on a call answered "waiting", a refusal or timeout after it, a task that ended after
//!   its answer) goes out twice — the engine's `notifications/message` in the `mcp` envelope, for
//!   a backend that reads it, and [`heard`]'s `[device_call]` detect frame with the outcome's
//!   sentence (value and evidence), for the person and the model — that one once the backend is
//!   not speaking ([`Turns::may_tell`]): in that backend a detect text starts a new speech and
//!   drops what it was saying;
//! - an event the firmware author marks as one that starts a turn ([`Event`]: a doorbell, a
//!   threshold) becomes [`write_event`]'s detect frame, `Device event: ` and the event's fixed words
//!   (with at most one reading of the device's own: no text from the wire ever goes into it),
//!   when [`Turns`] allows it: at most one per the event's interval (later ones coalesced into
//!   one), never while the backend speaks or the device listens;
//! - a call's answer may be held back only less than the backend waits for it
//!   ([`CALL_TIMEOUT_MS`], [`check_hold_answer`]): a later answer would reach a backend that
//!   gave up, under an id it may have given to something else.
//!
//! A firmware's main loop only sends what these write:
//!
//! ```
//! use mcp_core::transport::xiaozhi::{self, Event, Turns};
//! # struct Board;
//! # let mut engine: mcp_core::Server<'static, Board, mcp_core::Caps<4>> =
//! #     mcp_core::Server::new(mcp_core::Config::new("b", "1"));
//! # let (mut board, mut out, mut frame, sid, now) = (Board, [0u8; 2048], [0u8; 1024], Some("s1"), 0);
//!
//! static DOORBELL: Event = Event::new("doorbell", "the doorbell button was pressed");
//! let mut turns: Turns<2> = Turns::new();
//!
//! // Each frame from the backend: its `tts` frames say when it speaks.
//! # let text = br#"{"type":"tts","state":"stop"}"#;
//! if let Ok(env) = xiaozhi::Envelope::parse(text) {
//!     turns.heard(&env, now);
//! }
//!
//! // What the engine owes (send `out[..polled.len]` in the `mcp` envelope), and an outcome that
//! // came after its call's answer spoken too — once the backend is not speaking (a detect text
//! // would cut its speech off): keep the frame until `may_tell`, send it, then `said`.
//! let polled = engine.poll_with(now, &mut board, &mut out);
//! if let Some(h) = polled.heard {
//!     let n = xiaozhi::heard(sid, h.sentence(&out[..polled.len]), &mut frame);
//!     if turns.may_tell(now) {
//!         // send frame[..n]
//!         turns.said(now);
//!     }
//! }
//!
//! // An event the author marked: the button pressed with no question waiting.
//! turns.fire(&DOORBELL, None, now);
//! if let Some((event, reading)) = turns.next(now + 1_500) {
//!     let n = xiaozhi::write_event(sid, event, reading, &mut frame);
//!     // send frame[..n]
//!     assert!(frame[..n].starts_with(br#"{"session_id":"s1","type":"listen","state":"detect""#));
//! }
//! ```

use crate::result::Reading;
#[cfg(doc)]
use crate::server::Polled;
use crate::wire::json::{Json, JsonError, JsonStr, MAX_DEPTH_LIMIT};
use crate::wire::protocol;
use crate::wire::writer::Writer;

/// The hello a device sends first, announcing MCP support.
pub const DEVICE_HELLO: &str = concat!(
    r#"{"type":"hello","version":1,"features":{"mcp":true},"transport":"websocket","#,
    r#""audio_params":{"format":"opus","sample_rate":16000,"channels":1,"frame_duration":60}}"#
);

/// How long a device waits for the backend's hello, from sending its own, before it closes the
/// connection and connects again (ms): 10 s, as xiaozhi-esp32's firmware waits.
pub const HELLO_TIMEOUT_MS: u32 = 10_000;

/// When a xiaozhi device connects again ([`Reconnect`], shared with every outbound link): a
/// connection counts as a session once the backend's hello arrived on it.
pub use super::link::Reconnect;

/// The longest backend `session_id` (decoded bytes) a device echoes in its replies or logs.
/// Backends name sessions with UUIDs (36 bytes) or similar tokens.
pub const MAX_SESSION_ID_LEN: usize = 128;

/// `true` when a backend's `session_id` may be echoed and logged: 1 to [`MAX_SESSION_ID_LEN`]
/// bytes once decoded, every character printable ASCII (space to `~`). Anything else — a 1 MiB
/// id, control characters (a line break or an escape sequence in a log), non-ASCII (look-alike
/// and bidirectional characters) — is no session id a device should repeat; the transport
/// ignores it (replies carry no `session_id` then). Work is bounded: a raw form longer than six
/// times the limit (every character a `\uXXXX` escape) is refused without decoding.
pub fn is_usable_session_id(id: JsonStr<'_>) -> bool {
    if id.raw().is_empty() || id.raw().len() > 6 * MAX_SESSION_ID_LEN {
        return false;
    }
    let mut len = 0;
    for c in id.chars() {
        if !(' '..='~').contains(&c) {
            return false;
        }
        len += 1;
    }
    len <= MAX_SESSION_ID_LEN
}

/// A parsed envelope (any `type`).
#[derive(Debug, Clone, Copy)]
#[non_exhaustive]
pub struct Envelope<'a> {
    /// `session_id`, if present and a string.
    pub session_id: Option<JsonStr<'a>>,
    /// `type`, if present and a string.
    pub kind: Option<JsonStr<'a>>,
    /// `payload`, if present.
    pub payload: Option<Json<'a>>,
    /// `state`, if present and a string (`tts` and `listen` frames: `start`, `stop`, …).
    pub state: Option<JsonStr<'a>>,
}

impl<'a> Envelope<'a> {
    /// Parses one envelope. Unknown members are ignored.
    ///
    /// The envelope is checked as deep as the checker can follow ([`MAX_DEPTH_LIMIT`]), not to
    /// the engine's limit: only its own members are read here, and a payload nested deeper than
    /// the engine reads ([`Config::max_depth`](crate::Config::max_depth)) must still reach it,
    /// so that the engine answers the request -32700 with its id instead of the device staying
    /// silent. An `Err` is a text nobody can read as an envelope: a transport answers it as the
    /// engine answers any unreadable message (hand the text itself to the engine: -32700 with
    /// `id: null`, in an `mcp` envelope).
    pub fn parse(bytes: &'a [u8]) -> Result<Self, JsonError> {
        let root = Json::parse(bytes, MAX_DEPTH_LIMIT)?;
        let mut env = Envelope {
            session_id: None,
            kind: None,
            payload: None,
            state: None,
        };
        for (k, v) in root.members().into_iter().flatten() {
            if k.eq_str("session_id") {
                env.session_id = v.as_str();
            } else if k.eq_str("type") {
                env.kind = v.as_str();
            } else if k.eq_str("payload") {
                env.payload = Some(v);
            } else if k.eq_str("state") {
                env.state = v.as_str();
            }
        }
        Ok(env)
    }

    /// The `session_id` when it is present and usable ([`is_usable_session_id`]); `None` when it
    /// is absent, not a string, or unusable (compare with [`session_id`](Self::session_id) to
    /// tell an unusable one apart).
    pub fn usable_session_id(&self) -> Option<JsonStr<'a>> {
        self.session_id.filter(|s| is_usable_session_id(*s))
    }

    /// `true` when `type` is `kind`.
    pub fn is(&self, kind: &str) -> bool {
        self.kind.is_some_and(|k| k.eq_str(kind))
    }

    /// The JSON-RPC message carried by an `mcp` envelope: the payload's bytes when it is an
    /// object (hand them to [`Server::handle`](crate::Server::handle)).
    pub fn mcp_payload(&self) -> Option<&'a [u8]> {
        let payload = self.payload.filter(|_| self.is("mcp"))?;
        payload.members().map(|_| payload.raw())
    }
}

/// Wraps a response in an `mcp` envelope, in place: writes the envelope head, lets `inner` write
/// the payload after it, then closes the envelope. Returns the total length, or 0 when `inner`
/// wrote nothing (a notification needs no answer) or the envelope does not fit.
///
/// ```
/// use mcp_core::transport::xiaozhi::wrap;
/// let mut out = [0u8; 128];
/// let n = wrap(Some("s1"), &mut out, |buf| {
///     buf[..2].copy_from_slice(b"{}");
///     2
/// });
/// assert_eq!(&out[..n], br#"{"session_id":"s1","type":"mcp","payload":{}}"#);
/// ```
pub fn wrap(
    session_id: Option<&str>,
    out: &mut [u8],
    inner: impl FnOnce(&mut [u8]) -> usize,
) -> usize {
    let mut w = Writer::new(out);
    open_envelope(&mut w, session_id);
    w.raw(protocol::MCP_PAYLOAD);
    if !w.fits() {
        return 0;
    }
    let head = w.needed();
    let Some(room) = out.len().checked_sub(head + 1) else {
        return 0;
    };
    let Some(body) = out.get_mut(head..head + room) else {
        return 0;
    };
    let n = inner(body);
    if n == 0 || n > room {
        return 0;
    }
    match out.get_mut(head + n) {
        Some(b) => *b = b'}',
        None => return 0,
    }
    head + n + 1
}

/// How long a xiaozhi backend waits for a tool call's answer (ms): xinnan's server gives up
/// after 30 s, tells the user "network problem", and forgets the call's id (a later answer under
/// it is taken for something else).
pub const CALL_TIMEOUT_MS: u32 = 30_000;

/// A hold budget ([`Config::hold_answer_ms`](crate::Config)) a xiaozhi backend would not wait
/// out: the call's answer would come after the backend gave up on it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[error(
    "a xiaozhi backend gives up on a tool call after 30 s: a call may keep its answer back less than that, not {held_ms} ms"
)]
pub struct HoldTooLong {
    /// The budget asked for (ms).
    pub held_ms: u32,
}

/// Checks a hold budget against the backend's [`CALL_TIMEOUT_MS`] at start-up: a budget of 30 s
/// or more is refused (its answer could arrive after the backend gave up).
///
/// ```
/// use mcp_core::transport::xiaozhi::check_hold_answer;
/// assert!(check_hold_answer(25_000).is_ok());
/// let e = check_hold_answer(35_000).unwrap_err();
/// assert!(e.to_string().contains("30 s"));
/// ```
///
/// # Errors
/// [`HoldTooLong`] for a budget of [`CALL_TIMEOUT_MS`] or more.
pub const fn check_hold_answer(hold_answer_ms: u32) -> Result<(), HoldTooLong> {
    if hold_answer_ms >= CALL_TIMEOUT_MS {
        Err(HoldTooLong {
            held_ms: hold_answer_ms,
        })
    } else {
        Ok(())
    }
}

/// The prefix of a detect text that a xiaozhi backend speaks to the user and adds to the
/// model's dialogue as the assistant's words (a call's outcome).
pub const DEVICE_CALL: &str = "[device_call]";

/// The prefix of a device event's detect text: any text without [`DEVICE_CALL`] starts a model
/// turn, the text as the user's words. Words, not a bracketed tag: xinnan's backend shows the
/// text on the device's screen with punctuation trimmed off both ends (`[event] …` showed as
/// `event] …`), and this reads the same spoken, shown and in the model's dialogue.
pub const EVENT: &str = "Device event:";

/// The longest sentence (characters) a detect frame carries: a person hears it, and xinnan's
/// backend puts it in the dialogue whole. A longer one is cut at a character and ends with `…`.
pub const MAX_SAID_CHARS: usize = 280;

/// `{"session_id":"…",` (or `{` without a session): every frame of the envelope starts so.
fn open_envelope(w: &mut Writer<'_>, session_id: Option<&str>) {
    match session_id {
        Some(id) => {
            w.raw(protocol::SESSION_ENVELOPE_OPEN);
            w.string(id);
            w.raw(b",");
        }
        None => w.raw(b"{"),
    }
}

/// `{"session_id":"…","type":"listen","state":"detect","text":"` — a detect frame up to its
/// text, the writer in string mode (its content next).
fn detect_head(w: &mut Writer<'_>, session_id: Option<&str>) {
    open_envelope(w, session_id);
    w.open_string(protocol::DETECT_TEXT_OPEN);
}

/// Writes the `[device_call]` detect frame that makes a xiaozhi backend say `sentence` to the
/// user and add it to the model's dialogue as the assistant's words:
/// `{"session_id":…,"type":"listen","state":"detect","text":"[device_call] self.relay.set,
/// confirmed: true — measured: true"}`. Returns the frame's length; 0 when it
/// does not fit.
///
/// The sentence is an outcome the device tells after a call's answer: the engine's
/// ([`Polled::heard`]: `heard.sentence(message)`, the message being the bytes the poll wrote;
/// send the frame after that message, to the client the poll named), or a kit's (an upgrade that
/// came up after the restart). It is re-escaped here character by character and cut at
/// [`MAX_SAID_CHARS`], so that whatever it holds, the frame is one valid JSON object.
///
/// ```
/// use mcp_core::transport::xiaozhi::heard;
/// use mcp_core::wire::json::Json;
/// let said = Json::parse(br#""self.relay.set, confirmed: true""#, 4).unwrap();
/// let mut out = [0u8; 160];
/// let n = heard(Some("s1"), said.as_str().unwrap(), &mut out);
/// assert_eq!(
///     &out[..n],
///     br#"{"session_id":"s1","type":"listen","state":"detect","text":"[device_call] self.relay.set, confirmed: true"}"#
/// );
/// ```
pub fn heard(session_id: Option<&str>, sentence: JsonStr<'_>, out: &mut [u8]) -> usize {
    let mut w = Writer::new(out);
    detect_head(&mut w, session_id);
    w.text(DEVICE_CALL);
    w.text(" ");
    for (n, c) in sentence.chars().enumerate() {
        if n == MAX_SAID_CHARS {
            w.text("…");
            break;
        }
        let mut b = [0u8; 4];
        w.text(c.encode_utf8(&mut b));
    }
    w.end_string();
    w.raw(b"}");
    if w.fits() { w.needed() } else { 0 }
}

/// An event that starts a model turn on a xiaozhi backend: what a firmware author marks — a
/// button, a door sensor, a temperature threshold — and the fixed words the device says of it.
///
/// The words are the author's, written as the device would say them (`the doorbell button was
/// pressed`); [`write_event`] sends them as `Device event: the doorbell button was pressed`, the one
/// place `{}` appears replaced by a reading of the device's own. Nothing from the wire can reach
/// them: a template is `'static` and a reading is a number, a boolean or one of the author's
/// words ([`Reading`]).
///
/// ```
/// use mcp_core::transport::xiaozhi::Event;
/// static DOORBELL: Event = Event::new("doorbell", "the doorbell button was pressed");
/// static HOT: Event = Event::new("hot", "the temperature rose above 40 °C, it reads {} °C")
///     .min_interval_ms(60_000);
/// assert_eq!(HOT.name(), "hot");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Event {
    name: &'static str,
    says: &'static str,
    min_interval_ms: u32,
    max_delay_ms: u32,
}

impl Event {
    /// An event called `name` (what tells it from the board's other events, and names it in
    /// logs) whose detect text is `Device event: ` and `says`; at most
    /// one turn per 10 s, and one that has waited 30 s for a quiet moment is dropped.
    pub const fn new(name: &'static str, says: &'static str) -> Self {
        Event {
            name,
            says,
            min_interval_ms: 10_000,
            max_delay_ms: 30_000,
        }
    }

    /// Sets the least time between two turns this event starts (ms). Occurrences meanwhile are
    /// coalesced into one turn, when the interval has passed.
    #[must_use]
    pub const fn min_interval_ms(mut self, ms: u32) -> Self {
        self.min_interval_ms = ms;
        self
    }

    /// Sets how long an occurrence may wait for a quiet moment (the backend speaking, the device
    /// listening, the interval) before it is dropped (ms): a doorbell a minute ago is no news.
    #[must_use]
    pub const fn max_delay_ms(mut self, ms: u32) -> Self {
        self.max_delay_ms = ms;
        self
    }

    /// The event's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The device's words for it.
    pub const fn says(&self) -> &'static str {
        self.says
    }
}

/// Writes the detect frame of `event`: `{"session_id":…,"type":"listen","state":"detect",
/// "text":"Device event: the doorbell button was pressed"}` (`{}` in its words replaced by `reading`,
/// or by `unknown` without one). Returns the frame's length, 0 when it does not fit.
pub fn write_event(
    session_id: Option<&str>,
    event: &Event,
    reading: Option<Reading>,
    out: &mut [u8],
) -> usize {
    let mut w = Writer::new(out);
    detect_head(&mut w, session_id);
    w.text(EVENT);
    w.text(" ");
    match event.says.split_once("{}") {
        Some((before, after)) => {
            w.text(before);
            match reading {
                Some(r) => r.write_text(&mut w),
                None => w.text("unknown"),
            }
            w.text(after);
        }
        None => w.text(event.says),
    }
    w.end_string();
    w.raw(b"}");
    if w.fits() { w.needed() } else { 0 }
}

/// After the backend's `tts` `stop`, how long the device keeps quiet before it starts a turn of
/// its own (ms): the end of one turn is not the start of the next.
pub const QUIET_AFTER_MS: u64 = 1_000;
/// After the device sent a detect text, how long it takes the backend to be speaking of it
/// (its `tts` `start`) at the latest (ms).
pub const EXPECT_SPEECH_MS: u64 = 3_000;
/// The longest the backend is taken to be speaking without its `tts` `stop` (ms): a lost frame
/// does not silence the device for good.
pub const MAX_SPEECH_MS: u64 = 120_000;
/// The longest a restart the device has due waits for the backend to finish speaking its last
/// words (an upgrade's "completed" sentence) — its `tts` `stop` — (ms), counted from when the
/// restart came due.
pub const MAX_LAST_WORDS_MS: u64 = 20_000;

/// An occurrence of an event waiting for its turn, and when its event last started one.
#[derive(Debug, Clone, Copy)]
struct Slot {
    event: Option<&'static Event>,
    /// An occurrence waits (the latest reading), since when.
    waiting: Option<(Option<Reading>, u64)>,
    /// When this event last started a turn.
    last_ms: Option<u64>,
}

impl Slot {
    const FREE: Slot = Slot {
        event: None,
        waiting: None,
        last_ms: None,
    };
}

/// When a xiaozhi device may start a turn of its own: the backend's speech (its `tts` frames),
/// the device's listening, and each event's occurrences, over `N` events. No clock of its own:
/// every call takes the firmware's milliseconds.
///
/// An event that occurs ([`fire`](Self::fire)) waits; [`next`](Self::next) gives it out when the
/// device is quiet — the backend not speaking (between its `tts` `start` and `stop`, and for
/// [`QUIET_AFTER_MS`] after; from a detect text of the device until the backend starts speaking
/// of it), the device not listening — and its interval since its last turn has passed. More
/// occurrences meanwhile are one turn (the latest reading); one that waited longer than its
/// event's `max_delay_ms` is dropped.
///
/// ```
/// use mcp_core::transport::xiaozhi::{Event, Turns};
/// static DOORBELL: Event = Event::new("doorbell", "the doorbell button was pressed");
/// let mut turns: Turns<2> = Turns::new();
/// for ms in 0..50 {
///     turns.fire(&DOORBELL, None, ms * 40); // 50 presses in 2 s
/// }
/// assert!(turns.next(2_000).is_some()); // one turn…
/// assert!(turns.next(2_100).is_none()); // …and, the backend speaking of it, nothing more
/// ```
#[derive(Debug, Clone)]
pub struct Turns<const N: usize> {
    slots: [Slot; N],
    /// The backend speaks since (its `tts` `start`), or is about to (the device's detect text).
    speaking_since: Option<u64>,
    /// The device said something the backend will speak of; until then at the latest.
    expecting_until: Option<u64>,
    /// The backend's last `tts` `stop`.
    quiet_since: Option<u64>,
    listening: bool,
}

impl<const N: usize> Default for Turns<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> Turns<N> {
    /// Nothing waits; the backend is quiet.
    pub const fn new() -> Self {
        Turns {
            slots: [Slot::FREE; N],
            speaking_since: None,
            expecting_until: None,
            quiet_since: None,
            listening: false,
        }
    }

    /// A frame from the backend, at `now_ms`: its `tts` `start` and `sentence_start` mean it
    /// speaks, its `tts` `stop` that it stopped. Other frames change nothing.
    pub fn heard(&mut self, env: &Envelope<'_>, now_ms: u64) {
        if !env.is("tts") {
            return;
        }
        let Some(state) = env.state else { return };
        if state.eq_str("start") || state.eq_str("sentence_start") {
            self.speaking_since.get_or_insert(now_ms);
            self.expecting_until = None;
        } else if state.eq_str("stop") {
            self.speaking_since = None;
            self.expecting_until = None;
            self.quiet_since = Some(now_ms);
        }
    }

    /// The device sent a detect text at `now_ms` (an outcome, an event): the backend will speak
    /// of it.
    pub fn said(&mut self, now_ms: u64) {
        self.expecting_until = Some(now_ms.saturating_add(EXPECT_SPEECH_MS));
    }

    /// The device listens (it sent `listen` `start`) or stopped (`listen` `stop`).
    pub fn listening(&mut self, on: bool) {
        self.listening = on;
    }

    /// `true` when the device may start a turn at `now_ms`: nobody speaks or listens.
    pub fn quiet(&self, now_ms: u64) -> bool {
        let just_stopped = self
            .quiet_since
            .is_some_and(|since| now_ms < since.saturating_add(QUIET_AFTER_MS));
        !(self.speaking(now_ms) || just_stopped || self.listening)
    }

    /// `true` while the backend speaks at `now_ms` (between its `tts` `start` and `stop`, at
    /// most [`MAX_SPEECH_MS`]) or is about to speak of a detect text of the device's (at most
    /// [`EXPECT_SPEECH_MS`] after it). A detect text starts a new speech in that backend and
    /// drops what it was saying, so an outcome's `[device_call]` text waits while this holds
    /// ([`may_tell`](Self::may_tell)), and so does a restart ([`MAX_LAST_WORDS_MS`]).
    pub fn speaking(&self, now_ms: u64) -> bool {
        let speaking = self
            .speaking_since
            .is_some_and(|since| now_ms < since.saturating_add(MAX_SPEECH_MS));
        let expecting = self.expecting_until.is_some_and(|until| now_ms < until);
        speaking || expecting
    }

    /// `true` when an outcome heard after its call's answer (a `[device_call]` text) may go at
    /// `now_ms`: the backend is not [`speaking`](Self::speaking) and the device does not listen.
    /// Unlike an event's turn it does not wait out [`QUIET_AFTER_MS`]: it goes as soon as the
    /// backend's `tts` `stop` came. Send one, then [`said`](Self::said): the next waits for the
    /// backend to have spoken it.
    pub fn may_tell(&self, now_ms: u64) -> bool {
        !(self.speaking(now_ms) || self.listening)
    }

    /// `event` occurred at `now_ms`, with a reading of the device's own for its words (`{}`). It
    /// waits for [`next`](Self::next). Returns `false` when `N` other events hold every slot
    /// (the occurrence is dropped).
    pub fn fire(&mut self, event: &'static Event, reading: Option<Reading>, now_ms: u64) -> bool {
        let at = match self
            .slots
            .iter()
            .position(|s| s.event.is_some_and(|e| e.name == event.name))
        {
            Some(i) => i,
            None => match self.slots.iter().position(|s| s.event.is_none()) {
                Some(i) => i,
                None => return false,
            },
        };
        let Some(slot) = self.slots.get_mut(at) else {
            return false;
        };
        slot.event = Some(event);
        let since = slot.waiting.map_or(now_ms, |(_, since)| since);
        slot.waiting = Some((reading, since));
        true
    }

    /// The event whose turn it is at `now_ms`, with its reading: the device is
    /// [`quiet`](Self::quiet) and the event's interval since its last turn has passed. It is
    /// taken as sent (its interval starts again; the backend is expected to speak of it): write
    /// it with [`write_event`] and send it. Occurrences that waited past their event's
    /// `max_delay_ms` are dropped here.
    pub fn next(&mut self, now_ms: u64) -> Option<(&'static Event, Option<Reading>)> {
        for slot in &mut self.slots {
            if let (Some(e), Some((_, since))) = (slot.event, slot.waiting)
                && now_ms.saturating_sub(since) > u64::from(e.max_delay_ms)
            {
                slot.waiting = None;
            }
        }
        if !self.quiet(now_ms) {
            return None;
        }
        let slot = self.slots.iter_mut().find(|s| match (s.event, s.waiting) {
            (Some(e), Some(_)) => s
                .last_ms
                .is_none_or(|last| now_ms.saturating_sub(last) >= u64::from(e.min_interval_ms)),
            _ => false,
        })?;
        let event = slot.event?;
        let (reading, _) = slot.waiting.take()?;
        slot.last_ms = Some(now_ms);
        self.said(now_ms);
        Some((event, reading))
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn envelopes_with_and_without_session() {
        let e = Envelope::parse(br#"{"session_id":"x","type":"mcp","payload":{"jsonrpc":"2.0","id":1,"method":"ping"}}"#).unwrap();
        assert_eq!(
            e.mcp_payload(),
            Some(&br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#[..])
        );
        assert!(e.session_id.unwrap().eq_str("x"));
        let e =
            Envelope::parse(br#"{"type":"mcp","payload":{"jsonrpc":"2.0","method":"x"}}"#).unwrap();
        assert!(e.mcp_payload().is_some());
        let e = Envelope::parse(br#"{"type":"mcp","payload":"{\"jsonrpc\":\"2.0\"}"}"#).unwrap();
        assert_eq!(e.mcp_payload(), None);
        let e = Envelope::parse(br#"{"type":"listen","payload":{}}"#).unwrap();
        assert_eq!(e.mcp_payload(), None);
        let hello: serde_json::Value = serde_json::from_str(DEVICE_HELLO).unwrap();
        assert_eq!(hello["features"]["mcp"], true);
    }

    /// A payload nested deeper than an engine reads is still handed on
    /// (the engine answers it with its id); only what the checker cannot follow is refused.
    #[test]
    fn a_deep_payload_still_reaches_the_engine() {
        let nested = |depth: usize| "[".repeat(depth) + &"]".repeat(depth);
        let text = format!(
            r#"{{"type":"mcp","payload":{{"jsonrpc":"2.0","id":7,"method":"ping","params":{{"a":{}}}}}}}"#,
            nested(40)
        );
        let e = Envelope::parse(text.as_bytes()).unwrap();
        assert!(e.mcp_payload().is_some_and(|p| p.len() > 80));
        let text = format!(r#"{{"type":"mcp","payload":{{"a":{}}}}}"#, nested(200));
        assert_eq!(
            Envelope::parse(text.as_bytes()).err(),
            Some(JsonError::TooDeep(MAX_DEPTH_LIMIT))
        );
    }

    #[test]
    fn session_ids_are_bounded_before_anyone_echoes_them() {
        let sid = |json: &str| {
            let text = format!(r#"{{"type":"hello","session_id":{json}}}"#);
            let e = Envelope::parse(text.as_bytes()).unwrap();
            (e.session_id.is_some(), e.usable_session_id().is_some())
        };
        assert_eq!(
            sid(r#""3f2b9a4e-1c3d-4e5f-8a9b-0c1d2e3f4a5b""#),
            (true, true)
        );
        assert_eq!(sid(r#""a b~!""#), (true, true));
        assert_eq!(sid(&format!(r#""{}""#, "x".repeat(128))), (true, true));
        assert_eq!(sid(&format!(r#""{}""#, "x".repeat(129))), (true, false));
        // Escapes count as what they decode to.
        assert_eq!(
            sid(&format!(r#""{}""#, "\\u0041".repeat(128))),
            (true, true)
        );
        assert_eq!(
            sid(&format!(r#""{}""#, "\\u0041".repeat(129))),
            (true, false)
        );
        // A megabyte of id (a few KiB under Miri, where checking a megabyte takes half an hour).
        let huge = if cfg!(miri) { 1 << 12 } else { 1 << 20 };
        assert_eq!(sid(&format!(r#""{}""#, "y".repeat(huge))), (true, false));
        for bad in [
            r#""""#,
            r#""a\nb""#,
            r#""a\u001b[31mb""#,
            r#""tab\there""#,
            r#""del\u007f""#,
            r#""\u202eevil""#,
            r#""会话""#,
        ] {
            assert_eq!(sid(bad), (true, false), "{bad}");
        }
        assert_eq!(sid("42"), (false, false));
    }

    #[test]
    fn wrap_escapes_and_handles_empty_and_overflow() {
        let mut out = [0u8; 64];
        let n = wrap(Some("a\"b"), &mut out, |b| {
            b[..2].copy_from_slice(b"{}");
            2
        });
        let v: serde_json::Value = serde_json::from_slice(&out[..n]).unwrap();
        assert_eq!(v["session_id"], "a\"b");
        assert_eq!(wrap(None, &mut out, |_| 0), 0);
        let n = wrap(None, &mut out, |b| {
            b[..2].copy_from_slice(b"{}");
            2
        });
        assert_eq!(&out[..n], br#"{"type":"mcp","payload":{}}"#);
        assert_eq!(wrap(Some("s"), &mut [0u8; 10], |_| 1), 0);
    }

    fn frame(bytes: &[u8]) -> serde_json::Value {
        serde_json::from_slice(bytes).unwrap()
    }

    #[test]
    fn an_outcome_is_a_device_call_detect_frame_and_always_valid_json() {
        let message = br#"{"data":{"text":"self.relay.set, confirmed: true \u2014 \"measured\": true (commanded true)"}}"#;
        let root = Json::parse(message, crate::wire::json::DEFAULT_MAX_DEPTH).unwrap();
        let data = root.members().unwrap().next().unwrap().1;
        let sentence = data.members().unwrap().next().unwrap().1.as_str().unwrap();
        let mut out = [0u8; 512];
        let n = heard(Some("s-1"), sentence, &mut out);
        let f = frame(&out[..n]);
        assert_eq!(
            f,
            serde_json::json!({"session_id":"s-1","type":"listen","state":"detect",
                "text":"[device_call] self.relay.set, confirmed: true — \"measured\": true (commanded true)"})
        );
        // Too small: nothing, never a cut frame.
        assert_eq!(heard(None, sentence, &mut [0u8; 40]), 0);
        // Bytes that are not what the engine writes (a stray quote, a control character, a
        // broken escape) still make one valid object, and a long sentence is cut with `…`.
        let long = "x".repeat(400);
        for odd in ["a\"b", "a\u{1}b", "a\\", "\\u12", long.as_str()] {
            let view = JsonStr::from_checked(odd.as_bytes());
            let mut out = [0u8; 1024];
            let n = heard(None, view, &mut out);
            let text = frame(&out[..n])["text"].as_str().unwrap().to_string();
            assert!(text.starts_with("[device_call] "), "{text}");
            assert!(
                text.chars().count() <= DEVICE_CALL.len() + 2 + MAX_SAID_CHARS,
                "{text}"
            );
        }
    }

    #[test]
    fn an_event_is_its_fixed_words_and_the_devices_own_reading() {
        static DOORBELL: Event = Event::new("doorbell", "the doorbell button was pressed");
        static HOT: Event = Event::new("hot", "the temperature rose above 40 °C, it reads {} °C");
        let mut out = [0u8; 256];
        let n = write_event(Some("s"), &DOORBELL, None, &mut out);
        assert_eq!(
            frame(&out[..n]),
            serde_json::json!({"session_id":"s","type":"listen","state":"detect",
                "text":"Device event: the doorbell button was pressed"})
        );
        let n = write_event(None, &HOT, Some(Reading::Int(50)), &mut out);
        assert_eq!(
            frame(&out[..n])["text"],
            "Device event: the temperature rose above 40 °C, it reads 50 °C"
        );
        let n = write_event(None, &HOT, None, &mut out);
        assert!(
            frame(&out[..n])["text"]
                .as_str()
                .unwrap()
                .contains("reads unknown")
        );
        // Never a `[device_call]`: the backend must start a turn, not speak it as its own.
        assert!(
            !frame(&out[..n])["text"]
                .as_str()
                .unwrap()
                .starts_with(DEVICE_CALL)
        );
        assert_eq!(write_event(None, &HOT, None, &mut [0u8; 20]), 0);
    }

    fn tts(state: &str) -> String {
        format!(r#"{{"session_id":"s","type":"tts","state":"{state}"}}"#)
    }

    fn hear<const N: usize>(t: &mut Turns<N>, state: &str, now: u64) {
        let text = tts(state);
        let env = Envelope::parse(text.as_bytes()).unwrap();
        assert!(env.state.unwrap().eq_str(state));
        t.heard(&env, now);
    }

    #[test]
    fn a_burst_of_events_is_one_turn_per_interval() {
        static DOORBELL: Event = Event::new("doorbell", "the doorbell button was pressed");
        let mut t: Turns<2> = Turns::new();
        // 50 presses in 2 s, the backend quiet: one turn.
        let mut turns = 0;
        for i in 0..50u64 {
            assert!(t.fire(&DOORBELL, None, i * 40));
            turns += usize::from(t.next(i * 40 + 1).is_some());
        }
        assert_eq!(turns, 1);
        // The backend speaks of it, then stops; the interval (10 s) is not over: the presses
        // meanwhile wait, coalesced into one turn when it is.
        hear(&mut t, "start", 100);
        hear(&mut t, "stop", 2_500);
        assert!(t.next(5_000).is_none());
        let (e, _) = t.next(10_002).unwrap();
        assert_eq!(e.name(), "doorbell");
        assert!(t.next(30_000).is_none(), "all of them were one turn");
    }

    #[test]
    fn no_turn_while_the_backend_speaks_or_the_device_listens() {
        static DOORBELL: Event = Event::new("doorbell", "pressed").min_interval_ms(0);
        let mut t: Turns<1> = Turns::new();
        hear(&mut t, "start", 0);
        t.fire(&DOORBELL, None, 10);
        assert!(t.next(500).is_none(), "speaking");
        hear(&mut t, "sentence_start", 600);
        hear(&mut t, "stop", 1_000);
        assert!(t.next(1_500).is_none(), "just stopped");
        t.listening(true);
        assert!(t.next(2_500).is_none(), "listening");
        t.listening(false);
        assert!(t.next(2_600).is_some());
        // After a detect text the backend is expected to speak: nothing until it did, or the
        // expectation ran out.
        t.fire(&DOORBELL, None, 2_700);
        assert!(t.next(2_800).is_none());
        assert!(t.next(2_600 + EXPECT_SPEECH_MS).is_some());
        // A `tts` start without its stop does not silence the device for ever.
        hear(&mut t, "start", 10_000);
        t.fire(&DOORBELL, None, 10_000 + MAX_SPEECH_MS - 1);
        assert!(t.next(10_000 + MAX_SPEECH_MS - 1).is_none());
        assert!(t.next(10_000 + MAX_SPEECH_MS).is_some());
    }

    #[test]
    fn an_outcome_waits_for_the_backend_to_stop_speaking_then_goes_at_once() {
        let mut t: Turns<0> = Turns::new();
        assert!(t.may_tell(0));
        hear(&mut t, "start", 0);
        assert!(
            !t.may_tell(500) && t.speaking(500),
            "speaking: a detect text would cut it off"
        );
        hear(&mut t, "stop", 4_000);
        assert!(t.may_tell(4_000), "at once after the stop, no quiet time");
        assert!(!t.quiet(4_000), "an event's turn still waits it out");
        // One outcome told: the next waits until the backend spoke of it.
        t.said(4_010);
        assert!(!t.may_tell(4_020) && t.speaking(4_020));
        hear(&mut t, "start", 4_300);
        hear(&mut t, "stop", 9_000);
        assert!(t.may_tell(9_000));
        // Nor while the device listens; and a lost stop does not hold it for ever.
        t.listening(true);
        assert!(!t.may_tell(9_100));
        t.listening(false);
        hear(&mut t, "start", 10_000);
        assert!(!t.may_tell(10_000 + MAX_SPEECH_MS - 1));
        assert!(t.may_tell(10_000 + MAX_SPEECH_MS));
    }

    #[test]
    fn an_occurrence_that_waited_too_long_is_dropped_and_slots_are_bounded() {
        static A: Event = Event::new("a", "a").max_delay_ms(5_000);
        static B: Event = Event::new("b", "b");
        let mut t: Turns<1> = Turns::new();
        hear(&mut t, "start", 0);
        assert!(t.fire(&A, None, 0));
        assert!(!t.fire(&B, None, 0), "one slot, held by A");
        hear(&mut t, "stop", 6_000);
        assert!(t.next(8_000).is_none(), "A waited 8 s: dropped");
        // Readings: the latest occurrence's.
        let mut t: Turns<1> = Turns::new();
        t.fire(&A, Some(Reading::Int(1)), 0);
        t.fire(&A, Some(Reading::Int(2)), 1);
        assert_eq!(t.next(2), Some((&A, Some(Reading::Int(2)))));
    }

    #[test]
    fn a_hold_budget_the_backend_would_not_wait_out_is_refused() {
        assert_eq!(check_hold_answer(0), Ok(()));
        assert_eq!(check_hold_answer(29_999), Ok(()));
        assert_eq!(
            check_hold_answer(30_000),
            Err(HoldTooLong { held_ms: 30_000 })
        );
        let why = check_hold_answer(35_000).unwrap_err().to_string();
        assert!(why.contains("30 s") && why.contains("35000"), "{why}");
    }
}
