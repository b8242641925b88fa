//! mcp-host: the std host around mcp-core's sans-IO engine.
//!
//! mcp-core turns message bytes into response bytes and owns no socket, clock or thread. This
//! crate supplies them for a host computer (a simulator, a test fixture, a Linux gateway):
//!
//! - [`HttpHost`]: a Streamable HTTP server at one endpoint (`/mcp`) that serves **both protocol
//!   eras**. A request that states the 2026-07-28 rules (per-request `_meta` or a modern
//!   `MCP-Protocol-Version` header, and no session) goes to one shared stateless engine (one
//!   global task store); everything else follows the 2025 session rules: `initialize` mints an
//!   `Mcp-Session-Id` and gets its own engine, notifications get 202, unknown or ended sessions
//!   get 404, `DELETE` ends a session, `GET` opens an SSE stream. Responses become SSE streams
//!   when a handler emits notifications; sessions on 2025-11-25 get priming events, `retry:`,
//!   event ids and an event store that `Last-Event-ID` replays from. Host/Origin checks
//!   (DNS-rebinding protection; a browser's `Origin` must be the endpoint's own, or one allowed
//!   by name) and a body limit (413) come first. Connections are bounded in number and in how
//!   long a request head or body may take; a full session table never ends a session in use
//!   (503 + `Retry-After` instead).
//! - [`mdns`]: discovery on the LAN: a DNS-SD `_mcp._tcp` advertisement of the HTTP endpoint
//!   (its path in TXT), withdrawn with goodbye packets.
//! - [`web`]: those limits and that origin rule for any other axum router a device serves next
//!   to `/mcp` (device-sim's `--ui` page), one mechanism for every port of the process.
//! - [`xiaozhi::run`]: the xiaozhi WebSocket client mode: the device connects out to a backend,
//!   says hello, and serves MCP inside `{"session_id":…,"type":"mcp","payload":…}` envelopes;
//!   it reconnects, pings, bounds what the backend may send, and repeats no unusable session id.
//! - [`endpoint::run`]: the xiaozhi MCP endpoint client: the device joins xiaozhi agents as a
//!   tool server, one link per agent, plain JSON-RPC per text frame; agent sessions, close
//!   codes, outcomes owed to the next answer.
//! - [`tls`]: TLS for every outbound link (`wss://`, `mqtts://`, `https://`): rustls, the
//!   system's roots plus the CAs of a PEM file, and refusals that say why; [`link`]: the
//!   settings every outbound link shares.
//! - [`ota`]: xiaozhi's OTA/config check (`http://` or `https://`): where to connect, with
//!   which token; an activation code shown until the device is bound; a newer firmware reported.
//! - [`mqtt::run`]: the MQTT client mode (EMQX's "MCP over MQTT"): the device connects out to a
//!   broker, announces itself with a retained presence (a will clears it), and serves each
//!   client on that client's RPC topic; it reconnects, and reports an answer delivered when the
//!   broker acknowledges it.
//!
//! Every engine shares one device context `C` (your board) behind a mutex; a timer thread ticks
//! the board ([`Board::tick`]), publishes on every engine the live resources the board says
//! [`changed`](Board::changed), polls every engine ([`Server::poll`]) so that long-running
//! tools advance, and routes what they emit: deferred responses to the HTTP request waiting for
//! that id, notifications (progress, resource updates) to the session's `GET` stream, updates
//! tagged with a 2026-07-28 `subscriptionId` to that listen stream.
//!
//! **The device speaks first.** A live resource the board reports [`changed`](Board::changed)
//! reaches every subscriber: a 2025 session that sent `resources/subscribe` (on its `GET`
//! stream), a 2026-07-28 client on its `subscriptions/listen` stream (an SSE response that stays
//! open; closing it ends the subscription), and a xiaozhi backend — which cannot subscribe, so
//! after its hello the host subscribes the engine to every live resource of the board
//! ([`Board::live_resources`]) and the updates go out in the envelope (the backend logs them).
//!
//! **A person in the loop.** A tool that asks for confirmation (`Tool::confirm`) is held for a
//! press of the device's button when the client cannot ask its user: the timer watches the
//! board's [`confirm_presses`](Board::confirm_presses) and hands a new press, as a yes, to the
//! engine holding such a call ([`Server::confirm_on_device`]), then polls it in the same turn, so
//! the outcome goes out at once on that engine's transport (the session's `GET` stream, the
//! xiaozhi envelope).
//!
//! The application hears of it all through [`HostEvent`]s (calls with their evidence and
//! delivery, confirmations, resource updates, listen streams; see [`report`]).
//!
//! Lock order, everywhere: an engine, then the board.

pub mod client;
pub mod endpoint;
mod http;
pub mod link;
pub mod mdns;
pub mod mqtt;
pub mod oauth;
pub mod ota;
pub mod report;
mod session;
pub mod tls;
pub mod web;
pub mod xiaozhi;

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use mcp_core::server::{Heard, Peer, Pending, Receipt, Status};
use mcp_core::transport::xiaozhi::Event;

pub use mcp_core::server::Approval;
use mcp_core::{Capacities, Caps, Input, MIN_OUT_LEN, Principal, Reading, Revision, Server};
use mcp_hal::kits::button::Press;
use tokio::sync::mpsc;

pub use http::{HttpHost, HttpOptions};
pub use mcp_core::server::Delivery;
pub use report::{CallReport, Outcome, Reported, Waiting};

/// The device context the tools act on, as the host drives it.
pub trait Board: Send + 'static {
    /// Called by the host's timer with its monotonic clock (ms), before the engines are polled:
    /// advance simulated hardware, watch for a due reboot, …
    fn tick(&mut self, now_ms: u64) {
        let _ = now_ms;
    }

    /// Called by the host's timer right after [`tick`](Self::tick), with the same time: the URIs
    /// of the live resources that changed and are to be published (a sensor's watch said so;
    /// see mcp-hal's `kits::Watch`). The host publishes each on every engine
    /// ([`Server::publish`]) before it polls them, so each subscribed client gets one
    /// `notifications/resources/updated` (a 2025 session on its `GET` stream; over xiaozhi in
    /// the envelope, once something subscribed the engine: a backend that cannot subscribe needs
    /// the factory to call [`Server::subscribe`]). The default: nothing changes.
    fn changed(&mut self, now_ms: u64) -> Vec<&'static str> {
        let _ = now_ms;
        Vec::new()
    }

    /// The presses so far of the device's button that answers confirmations (a count that only
    /// goes up; read by the host's timer right after [`changed`](Self::changed)). When it goes
    /// up, the host takes the press as a person's yes to the call that has waited longest for an
    /// answer on the device ([`Server::confirm_on_device`]) and polls that engine in the same
    /// turn, so that the outcome goes out on its transport at once. A press while nothing waits
    /// is only a press. The default: no such button (0).
    fn confirm_presses(&self) -> u32 {
        0
    }

    /// The URIs of the board's live resources. Over xiaozhi (a backend cannot subscribe) the
    /// host subscribes the engine to each after the backend's hello ([`Server::subscribe`]),
    /// so that every update goes out in the envelope. The default: none.
    fn live_resources(&self) -> Vec<&'static str> {
        Vec::new()
    }

    /// Called after the engine answered a tool call (a handler ran and its answer is written),
    /// with the board still locked: the firmware is up and its tools work (an upgraded firmware
    /// on trial confirms itself here; until then a client's `self.firmware.status` sees it on
    /// trial). The default: nothing.
    fn answered(&mut self) {}

    /// The board's events at `now_ms` that start a turn on a xiaozhi backend when the host
    /// speaks first ([`xiaozhi::Options::speak_first`]): a threshold crossed, a door opened —
    /// each marked by the firmware author with its fixed words
    /// ([`Event`]) and a reading of the device's own.
    /// Read by the host's timer after [`changed`](Self::changed), whether it speaks first or
    /// not (so that a detector keeps its state). On MCP wires the same change is a resource
    /// update, as [`changed`](Self::changed) says. The default: none.
    fn events(&mut self, now_ms: u64) -> Vec<(&'static Event, Option<Reading>)> {
        let _ = now_ms;
        Vec::new()
    }

    /// The event a press of the confirmation button is when no question waits for it (a
    /// doorbell), when the host speaks first. The default: none (a press is only a press).
    fn press_event(&self) -> Option<&'static Event> {
        None
    }

    /// What the board tells its xiaozhi backend once after the start-up: the outcome of an
    /// upgrade that restarted it (came up, or rolled back; mcp-hal's
    /// `kits::firmware::write_boot`), a sentence with its evidence, spoken as a `[device_call]`.
    /// The default: nothing.
    fn boot_news(&self) -> Option<String> {
        None
    }

    /// Before each [`tick`](Self::tick) on the xiaozhi wire: `speaking` while what the device
    /// said is not spoken to its end yet (held, or the backend speaks of it: `xiaozhi::Voice::busy`).
    /// A board that restarts then waits — its last words (an upgrade's "completed" sentence) are
    /// not cut off — at most `MAX_LAST_WORDS_MS` (mcp-core's `transport::xiaozhi`) after the
    /// restart came due. The default: nothing to hold.
    fn hold_restart(&mut self, speaking: bool) {
        let _ = speaking;
    }
}

/// A reboot hook: called with the board's firmware storage.
#[cfg(feature = "sim")]
type RebootHook = Box<dyn Fn(&[u8]) + Send + Sync>;

/// What a due reboot of the demo board does: the hook [`on_reboot`] set, else only a log line.
#[cfg(feature = "sim")]
static REBOOT: std::sync::OnceLock<RebootHook> = std::sync::OnceLock::new();
#[cfg(feature = "sim")]
static FLASH_CHANGED: std::sync::OnceLock<RebootHook> = std::sync::OnceLock::new();

/// Makes the demo board call `hook` with its firmware storage when the boot record changed
/// between restarts — an upgraded firmware on trial confirmed itself — so that a simulator that
/// keeps its flash in a file writes it then, and a crash afterwards does not roll back an image
/// that was kept. Set once; later calls are ignored.
#[cfg(feature = "sim")]
pub fn on_flash_changed(hook: impl Fn(&[u8]) + Send + Sync + 'static) {
    let _ = FLASH_CHANGED.set(Box::new(hook));
}

/// Makes a due reboot of the demo board (`self.reboot`, or the restart an upgrade arms) call
/// `hook` with the board's firmware storage (`DemoBoard::firmware`), instead of only logging
/// it: a simulator that keeps its flash in a file writes it and restarts for real. Set once;
/// later calls are ignored.
#[cfg(feature = "sim")]
pub fn on_reboot(hook: impl Fn(&[u8]) + Send + Sync + 'static) {
    let _ = REBOOT.set(Box::new(hook));
}

/// The demo board's last words are still being spoken: a due reboot waits ([`Board::hold_restart`]).
#[cfg(feature = "sim")]
static SPEAKING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// This start-up has news for a xiaozhi backend ([`Board::boot_news`]): an upgrade came up in this
/// process, or the bootloader rolled one back as it started ([`upgrade_decided`]). An ordinary
/// restart after either has none (the boot record keeps the last upgrade's outcome).
#[cfg(feature = "sim")]
static BOOT_NEWS: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Tells the demo board that the bootloader decided about an upgrade at this start-up (an image
/// activated before the restart, or a trial never confirmed): its outcome is news for a xiaozhi
/// backend ([`Board::boot_news`]). A simulator that keeps its flash calls it when the start-up
/// changed the boot record.
#[cfg(feature = "sim")]
pub fn upgrade_decided() {
    BOOT_NEWS.store(true, std::sync::atomic::Ordering::Relaxed);
}

/// mcp-hal's demo board (feature `sim`): its simulated devices follow the host's clock; a reboot
/// that comes due goes to the [`on_reboot`] hook, or is logged and the host keeps running; an
/// answered tool call confirms an upgraded firmware on trial (`kits::firmware::came_up`). Its
/// sensors and button are sampled at each tick and publish by their kits' policies
/// (`DemoBoard::poll_resources`); register `DemoBoard::RESOURCES` on the engines the factory
/// builds to serve them. Its button (`device://buttons/main`) also answers confirmations: one
/// press is counted *and* is a person's yes to a call waiting for one on the device.
#[cfg(feature = "sim")]
impl<T: mcp_hal::sim::Timebase + Send + 'static> Board for mcp_hal::sim::DemoBoard<T> {
    fn tick(&mut self, now_ms: u64) {
        self.sim.set_time(now_ms);
        // A due reboot waits while the device's last words are spoken, for a bounded time.
        let held = SPEAKING.load(std::sync::atomic::Ordering::Relaxed)
            && self.sim.system.scheduled_at().is_some_and(|at| {
                now_ms < at.saturating_add(mcp_core::transport::xiaozhi::MAX_LAST_WORDS_MS)
            });
        if !held && self.sim.system.take_reboot() {
            match REBOOT.get() {
                Some(hook) => hook(self.firmware.slot.storage()),
                None => eprintln!(
                    "mcp-host: the simulated board's reboot is due (only logged; the host keeps running)"
                ),
            }
        }
    }

    fn answered(&mut self) {
        use mcp_hal::firmware::{BootState, FirmwareSlot as _};
        let trial = self.firmware.slot.boot().state == BootState::Trial;
        if let Err(e) = mcp_hal::kits::firmware::came_up(&mut self.firmware) {
            eprintln!("mcp-host: the firmware could not confirm itself: {e:?}");
        } else if trial && let Some(hook) = FLASH_CHANGED.get() {
            hook(self.firmware.slot.storage());
        }
        // The upgrade came up in this process: news for a xiaozhi backend.
        if trial && self.firmware.slot.boot().state == BootState::Upgraded {
            upgrade_decided();
        }
    }

    fn changed(&mut self, now_ms: u64) -> Vec<&'static str> {
        self.poll_resources(now_ms).collect()
    }

    fn confirm_presses(&self) -> u32 {
        self.watch.button.count()
    }

    fn live_resources(&self) -> Vec<&'static str> {
        Self::RESOURCES.iter().map(|r| r.uri()).collect()
    }

    fn events(&mut self, _: u64) -> Vec<(&'static Event, Option<Reading>)> {
        self.heat()
            .map(|reading| (&mcp_hal::sim::HOT, Some(reading)))
            .into_iter()
            .collect()
    }

    fn press_event(&self) -> Option<&'static Event> {
        Some(&mcp_hal::sim::DOORBELL)
    }

    fn hold_restart(&mut self, speaking: bool) {
        SPEAKING.store(speaking, std::sync::atomic::Ordering::Relaxed);
    }

    fn boot_news(&self) -> Option<String> {
        use mcp_hal::firmware::{BootState, FirmwareSlot as _};
        // An upgrade that came up is news once it did (not while on trial); one rolled back, from
        // the start-up that decided it.
        let fresh = BOOT_NEWS.load(std::sync::atomic::Ordering::Relaxed);
        if !fresh || self.firmware.slot.boot().state == BootState::Trial {
            return None;
        }
        let mut buf = [0u8; 512];
        let mut w = mcp_core::wire::writer::Writer::new(&mut buf);
        let said = mcp_hal::kits::firmware::write_boot(&self.firmware, &mut w);
        let text = w.written().filter(|_| said)?;
        String::from_utf8(text.to_vec()).ok()
    }
}

/// The timer's turn on the board: [`Board::tick`], then what [`Board::changed`], and the
/// confirmation button's presses so far.
pub(crate) fn tick<C: Board>(board: &Mutex<C>, now_ms: u64) -> (Vec<&'static str>, u32) {
    let mut board = lock(board);
    board.tick(now_ms);
    let changed = board.changed(now_ms);
    (changed, board.confirm_presses())
}

/// 2026-07-28 listen streams one engine serves at once (the host's stateless engine is shared
/// by every 2026 client).
pub const LISTEN_STREAMS: usize = 8;

/// The largest call (bytes) an engine holds while a person is asked to confirm it.
pub const HOLD_BYTES: usize = 1024;

/// The engine type the host drives: a [`Server`] over the board `C` and any capacities `K`,
/// its tools living as long as the program. Every transport here is written over `K`.
pub type Engine<C, K> = Server<'static, C, K>;

/// The capacities a host's engine is given unless it needs others: `TOOLS` tools, `TASKS`
/// tasks, four recent calls of up to 448 bytes for retransmissions and four live resources
/// (mcp-core's defaults), [`LISTEN_STREAMS`] listen streams, calls up to [`HOLD_BYTES`] held for
/// a confirmation.
pub type HostCaps<const TOOLS: usize, const TASKS: usize> =
    Caps<TOOLS, TASKS, 4, 448, 4, LISTEN_STREAMS, HOLD_BYTES>;

/// One message an engine's `poll` emitted: for whom, and what ran in it.
#[derive(Debug, Clone)]
pub(crate) struct Emitted {
    pub(crate) bytes: Bytes,
    /// The client it is for ([`mcp_core::Polled::to`]): `None` for every subscriber.
    pub(crate) to: Option<Peer>,
    /// A call a person confirmed on the device ran in this poll.
    pub(crate) ran: Option<&'static str>,
    /// That call's remembered answer, for delivery reports.
    pub(crate) receipt: Option<Receipt>,
    /// The message is an outcome heard after a call's answer ([`mcp_core::Polled::heard`]):
    /// where its sentence is in `bytes`.
    pub(crate) heard: Option<Heard>,
}

impl Emitted {
    /// Reports what became of this message to `engine` when it carries a remembered answer
    /// ([`Server::delivered`]): [`delivery`]`(sent)`.
    pub(crate) fn delivered<C, K: Capacities>(
        &self,
        engine: &Mutex<Box<Engine<C, K>>>,
        sent: bool,
    ) {
        if let Some(receipt) = self.receipt {
            lock(engine).delivered(receipt, delivery(sent));
        }
    }
}

/// What became of an answer: `Written` when the transport took it, else `Lost`.
pub(crate) fn delivery(written: bool) -> Delivery {
    if written {
        Delivery::Written
    } else {
        Delivery::Lost
    }
}

/// A call waiting for a person, as its engine holds it: the engine's record of it, the text of
/// its question ([`Server::question`]: what it approves, and which client asks) — what the
/// device shows — and the call's id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Asked {
    /// The engine's record.
    pub pending: Pending,
    /// The question, as every form of it says it.
    pub question: String,
    /// The call's id (raw JSON, as its client sent it; [`Server::confirmation_id`]).
    pub id: String,
}

impl Asked {
    /// The call `engine` holds for a person, if any.
    pub fn of<C, K: mcp_core::Capacities>(engine: &Server<'_, C, K>) -> Option<Asked> {
        Some(Asked {
            pending: engine.confirmation()?,
            question: engine.question().map(|q| q.to_string()).unwrap_or_default(),
            id: String::from_utf8_lossy(engine.confirmation_id().unwrap_or_default()).into_owned(),
        })
    }
}

/// One engine's turn in the timer: what it emitted, and the call it held for a person's answer
/// before and after.
pub(crate) struct Turn {
    /// Which engine ([`report::engine_key`]).
    pub(crate) engine: usize,
    pub(crate) msgs: Vec<Emitted>,
    pub(crate) held_before: Option<Asked>,
    pub(crate) held_after: Option<Asked>,
    /// The board's events in this turn that start a turn on a xiaozhi backend: its own
    /// ([`Board::events`]), and a press that answered no question ([`Board::press_event`]).
    pub(crate) events: Vec<(&'static Event, Option<Reading>)>,
}

impl Turn {
    /// The tools that ran in this turn (calls a person confirmed on the device), for the other
    /// engines on the board ([`Server::touched`]).
    pub(crate) fn ran(&self) -> impl Iterator<Item = &'static str> + '_ {
        self.msgs.iter().filter_map(|m| m.ran)
    }
}

/// Publishes each changed resource on an engine, then polls it until it owes nothing.
pub(crate) fn turn<C, K: Capacities>(
    engine: &Mutex<Box<Engine<C, K>>>,
    board: &Mutex<C>,
    changed: &[&'static str],
    now_ms: u64,
    out: &mut [u8],
) -> Turn {
    let mut engine = lock(engine);
    for uri in changed {
        engine.publish(uri);
    }
    let held_before = Asked::of(&engine);
    let mut board = lock(board);
    let mut msgs = Vec::new();
    loop {
        let p = engine.poll_with(now_ms, &mut board, out);
        match out.get(..p.len) {
            Some(m) if p.len > 0 => msgs.push(Emitted {
                bytes: Bytes::copy_from_slice(m),
                to: p.to,
                ran: p.ran,
                receipt: p.receipt,
                heard: p.heard,
            }),
            _ => break,
        }
    }
    Turn {
        engine: report::engine_key(&engine),
        msgs,
        held_before,
        held_after: Asked::of(&engine),
        events: Vec::new(),
    }
}

/// What the device shows of the calls waiting for a press of its button, over every engine that
/// acts on its board (a timer keeps one per board): **one question at a time, in the order the calls were first seen held**
/// (first held, first shown). A press answers the question shown when it came, and only one
/// shown for the engines' minimum before the press
/// ([`Config::confirm_min_shown_ms`](mcp_core::Config), default 1 s) and not that soon after the
/// previous press: never a question that appeared (or moved to the front) just before the press,
/// nor one the person could not have read, nor the next question after a quick double press.
#[derive(Debug, Default)]
pub struct Panel {
    /// The questions waiting on the device, first seen first.
    queue: Vec<Approval>,
    /// The question shown, and since when (host clock, ms).
    shown: Option<(Approval, u64)>,
    /// The button's presses counted so far.
    presses: u32,
    /// When the button was last pressed (host clock, ms).
    last_press: Option<u64>,
    /// How long a question is shown before a press counts, and the bounce time (ms): the
    /// engines' [`Pending::min_shown_ms`], as last seen.
    min_shown_ms: u64,
}

impl Panel {
    /// A panel for a button that has counted `presses` so far.
    pub fn new(presses: u32) -> Self {
        Panel {
            presses,
            ..Panel::default()
        }
    }

    /// New presses of the button (its count is `count`) at `now_ms`: their numbers, and the
    /// question the first of them answers: the one shown for at least the minimum before now, if
    /// any, unless the press came within the minimum of the previous press (a bounce, or the
    /// second half of a double press; a second press in the same tick is one too). The caller
    /// passes that approval to the engine holding it ([`Server::confirm_on_device`]).
    pub fn presses(&mut self, count: u32, now_ms: u64) -> (Vec<u32>, Option<Approval>) {
        let new = count.wrapping_sub(self.presses);
        let first = self.presses.wrapping_add(1);
        self.presses = count;
        if new == 0 || new > 1_000 {
            return (Vec::new(), None);
        }
        let numbers = (0..new).map(|k| first.wrapping_add(k)).collect();
        let min = self.min_shown_ms;
        let bounce = self
            .last_press
            .is_some_and(|last| min > 0 && now_ms < last.saturating_add(min));
        self.last_press = Some(now_ms);
        let answers = self
            .shown
            .filter(|&(_, since)| !bounce && since < now_ms && now_ms - since >= min)
            .map(|(a, _)| a);
        if answers.is_some() {
            self.shown = None;
        }
        (numbers, answers)
    }

    /// [`presses`](Self::presses), answered on whichever of `engines` holds the question.
    pub(crate) fn press<'e, C: 'static, K: Capacities>(
        &mut self,
        count: u32,
        now_ms: u64,
        engines: impl IntoIterator<Item = &'e Mutex<Box<Engine<C, K>>>>,
    ) -> Vec<Pressed> {
        let (numbers, answers) = self.presses(count, now_ms);
        let mut answered = None;
        if let Some(approval) = answers {
            for engine in engines {
                let mut engine = lock(engine);
                let Some(asked) = Asked::of(&engine).filter(|a| a.pending.approval == approval)
                else {
                    continue;
                };
                if engine.confirm_on_device(approval, true, now_ms) {
                    answered = Some(Waiting::new(&asked, now_ms, asked.pending.shown_ms));
                }
                break;
            }
        }
        Pressed::numbered(numbers, answered)
    }

    /// After the engines were polled: `waiting` is every call now held for the device, engine by
    /// engine in a fixed order. Updates the queue and what is shown; returns the waiting calls in
    /// the order they are shown, the one shown first.
    pub fn show(&mut self, waiting: &[Asked], now_ms: u64) -> Vec<Waiting> {
        self.queue.retain(|a| {
            waiting
                .iter()
                .any(|w| w.pending.on_device && w.pending.approval == *a)
        });
        for w in waiting.iter().filter(|w| w.pending.on_device) {
            self.min_shown_ms = self.min_shown_ms.max(u64::from(w.pending.min_shown_ms));
            if !self.queue.contains(&w.pending.approval) {
                self.queue.push(w.pending.approval);
            }
        }
        let head = self.queue.first().copied();
        self.shown = match (head, self.shown) {
            (Some(a), Some((shown, since))) if shown == a => Some((a, since)),
            (Some(a), _) => Some((a, now_ms)),
            (None, _) => None,
        };
        let mut out: Vec<Waiting> = Vec::with_capacity(waiting.len());
        // A press counts once the question was read, and not within the bounce time of the last.
        let bounce_ends = self
            .last_press
            .map(|last| last.saturating_add(self.min_shown_ms));
        for a in &self.queue {
            if let Some(w) = waiting.iter().find(|w| w.pending.approval == *a) {
                let since = self.shown.filter(|(s, _)| s == a).map(|(_, t)| t);
                let waiting = Waiting::new(w, now_ms, since);
                let from = waiting
                    .press_counts_from
                    .map(|f| f.max(bounce_ends.unwrap_or(0)));
                out.push(waiting.counts_from(from, now_ms));
            }
        }
        // Questions the client asks (elicitation) are listed after, never shown.
        out.extend(
            waiting
                .iter()
                .filter(|w| !w.pending.on_device)
                .map(|w| Waiting::new(w, now_ms, None)),
        );
        out
    }
}

/// What the device shows, kept by a timer across its turns: the [`Panel`] and what the
/// application was last told waits.
#[derive(Debug, Default)]
pub(crate) struct Display {
    pub(crate) panel: Panel,
    pub(crate) waiting: Vec<Waiting>,
}

impl Display {
    pub(crate) fn new(presses: u32) -> Self {
        Display {
            panel: Panel::new(presses),
            waiting: Vec::new(),
        }
    }

    /// A timer turn of a transport with one engine: the board's tick, a press answers the
    /// question shown, the engine is polled, what waits is shown.
    pub(crate) fn turn<C: Board, K: Capacities>(
        &mut self,
        engine: &Mutex<Box<Engine<C, K>>>,
        board: &Mutex<C>,
        now_ms: u64,
        out: &mut [u8],
        hook: Option<&EventHook>,
    ) -> Turn {
        let (changed, pressed) = tick(board, now_ms);
        let (mut events, press_event) = {
            let mut b = lock(board);
            (b.events(now_ms), b.press_event())
        };
        for p in self.panel.press(pressed, now_ms, [engine]) {
            // A press when no question waited is the board's press event (a doorbell).
            let rang = Press::of(p.answers.is_some(), !self.waiting.is_empty()).rang();
            if let (true, Some(e)) = (rang, press_event) {
                events.push((e, None));
            }
            if let Some(hook) = hook {
                hook(&HostEvent::Pressed(p));
            }
        }
        let mut turn = turn(engine, board, &changed, now_ms, out);
        turn.events = events;
        let held: Vec<Asked> = turn.held_after.clone().into_iter().collect();
        let shown = self.panel.show(&held, now_ms);
        waiting_changed(shown, &mut self.waiting, hook);
        turn
    }
}

/// One press of the device's button, and the call it answered.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct Pressed {
    /// The press's number: the button's count after it (presses so far).
    pub number: u32,
    /// The call the press confirmed: the question the device showed when the press came.
    /// `None`: nothing was shown (nothing waited, or the question appeared only as the button
    /// was pressed); the press was only a press.
    pub answers: Option<Waiting>,
}

impl Pressed {
    /// The presses `numbers`, the first of which answered `answered`.
    pub fn numbered(numbers: Vec<u32>, answered: Option<Waiting>) -> Vec<Pressed> {
        numbers
            .into_iter()
            .enumerate()
            .map(|(k, number)| Pressed {
                number,
                answers: if k == 0 { answered.clone() } else { None },
            })
            .collect()
    }
}

/// What the application hears of one message a timer turn emitted (see [`report::emitted`]).
pub(crate) fn observe(
    transport: &'static str,
    turn: &Turn,
    msg: &Emitted,
    delivered: bool,
) -> Option<HostEvent> {
    let polled = report::Polled {
        engine: turn.engine,
        to: msg.to,
        held_before: turn.held_before.as_ref(),
        held_after: turn.held_after.as_ref(),
    };
    report::emitted(transport, &polled, &msg.bytes, delivered)
}

/// Tells the application when the calls waiting for a person changed (in the order the device
/// shows them; see [`Panel`]); `last` is what it was told before.
pub(crate) fn waiting_changed(
    held: Vec<Waiting>,
    last: &mut Vec<Waiting>,
    hook: Option<&EventHook>,
) {
    if Waiting::same_shown(&held, last) {
        return;
    }
    if let Some(hook) = hook {
        hook(&HostEvent::Waiting(held.clone()));
    }
    *last = held;
}

/// Builds a fresh engine with its tools registered: one per legacy session, one for the
/// stateless path, one per WebSocket connection.
pub type Factory<C, K> = Arc<dyn Fn() -> Box<Engine<C, K>> + Send + Sync>;

/// The strings of `list`, owned (a builder's list setting).
pub(crate) fn owned(list: &[&str]) -> Vec<String> {
    list.iter().map(|s| (*s).to_string()).collect()
}

/// Locks a mutex, ignoring poisoning: a tool that panicked leaves the board as it was, and the
/// host keeps serving (the engine itself never panics).
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

/// 16 bytes from the operating system's random source, for task-id keys.
pub fn entropy() -> [u8; 16] {
    let mut seed = [0u8; 16];
    if getrandom::fill(&mut seed).is_err() {
        // No OS randomness: fall back on the standard library's per-process random keys.
        use std::hash::{BuildHasher, Hasher};
        for (i, chunk) in seed.chunks_mut(8).enumerate() {
            let mut h = std::collections::hash_map::RandomState::new().build_hasher();
            h.write_usize(i);
            chunk.copy_from_slice(&h.finish().to_le_bytes());
        }
    }
    seed
}

/// The host's monotonic clock.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Clock {
    start: Instant,
}

impl Clock {
    pub(crate) fn new() -> Self {
        Clock {
            start: Instant::now(),
        }
    }

    pub(crate) fn now_ms(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX)
    }
}

fn unix_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
}

/// `engine`, shared, once [`prime`]d on a blocking thread (the clock at `now_ms`, polls into a
/// buffer of `out_len` bytes): what every outbound link does before its first connection.
pub(crate) async fn primed<C: Board, K: Capacities>(
    engine: Box<Engine<C, K>>,
    board: &Arc<Mutex<C>>,
    now_ms: u64,
    out_len: usize,
) -> Arc<Mutex<Box<Engine<C, K>>>> {
    let engine = Arc::new(Mutex::new(engine));
    let (e, b) = (engine.clone(), board.clone());
    let _ = tokio::task::spawn_blocking(move || {
        let mut out = vec![0u8; out_len];
        prime(&mut lock(&e), &mut lock(&b), now_ms, &mut out);
    })
    .await;
    engine
}

/// Brings a fresh engine onto the host's clock (so task timestamps are wall-clock time) and
/// seeds its task-id key.
pub(crate) fn prime<C, K: Capacities>(
    engine: &mut Engine<C, K>,
    board: &mut C,
    now_ms: u64,
    out: &mut [u8],
) {
    while engine.poll(now_ms, board, out) > 0 {}
    engine.set_unix_time(unix_ms());
    engine.set_entropy(entropy());
}

/// What a handler run produces, in order: its notifications, then the outcome.
#[derive(Debug)]
pub(crate) enum Step {
    /// A notification the handler emitted (progress, log).
    Note(Bytes),
    /// The engine's answer.
    Done(Done),
}

/// The engine's answer to one message.
#[derive(Debug)]
pub(crate) struct Done {
    /// The response (empty: none now).
    pub(crate) bytes: Bytes,
    /// The HTTP status class.
    pub(crate) status: Status,
    /// The answer comes later from `poll` (a parked `tasks/result`).
    pub(crate) deferred: bool,
    /// The message was an `initialize` that settled on this revision.
    pub(crate) initialized: Option<Revision>,
    /// What to report once the transport knows what became of the answer
    /// ([`Handed::delivered`]; a run that reports delivery itself did).
    pub(crate) handed: Handed,
    /// The client's session after the message, when the run lent one ([`Run::session`]) (boxed:
    /// a session carries the client's name, and most answers have none).
    pub(crate) session: Option<Box<mcp_core::Session>>,
}

/// An answer a transport was handed, as what became of it is reported: the engine's record of
/// an acting call, and the report of the call it answers.
#[derive(Debug, Clone, Copy, Default)]
pub(crate) struct Handed {
    /// The remembered answer of an acting call ([`Server::delivered`]).
    pub(crate) receipt: Option<Receipt>,
    /// The tool whose handler ran, if one did.
    pub(crate) ran: Option<&'static str>,
    /// The answer is a replay of a retransmitted call; what had become of the first answer.
    pub(crate) replay: Option<Delivery>,
    /// The [`CallReport::number`] of the call it answers.
    pub(crate) call: Option<u64>,
}

impl Handed {
    /// Something to report.
    pub(crate) fn tracked(self) -> Option<Self> {
        (self.receipt.is_some() || self.call.is_some()).then_some(self)
    }

    /// The answer was written out or lost: the engine records it for retransmissions
    /// ([`Server::delivered`], [`HostEvent::Answered`]), and the application hears it of the
    /// call ([`HostEvent::Delivered`]). Every transport reports delivery here.
    pub(crate) fn delivered<C, K: Capacities>(
        &self,
        engine: &Mutex<Box<Engine<C, K>>>,
        hook: Option<&EventHook>,
        delivery: Delivery,
    ) {
        if let Some(receipt) = self.receipt {
            lock(engine).delivered(receipt, delivery);
        }
        let Some(hook) = hook else { return };
        if let Some(call) = self.call {
            hook(&HostEvent::Delivered { call, delivery });
        }
        if self.receipt.is_some() {
            hook(&HostEvent::Answered {
                ran: self.ran,
                replay: self.replay,
                delivery,
            });
        }
    }
}

/// Something the application may want to log or act on.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HostEvent {
    /// A client initialized a session.
    Initialized {
        /// The negotiated revision.
        revision: Revision,
        /// xiaozhi's vision endpoint (`capabilities.vision.url`), when the client sent one.
        vision_url: Option<String>,
        /// The transport (`"http"`, `"mqtt"`, `"xiaozhi-ws"`, `"stdio"`, …).
        transport: &'static str,
        /// The client, as [`CallReport::client`] names it.
        client: String,
    },
    /// A client's session ended: the client ended it (HTTP `DELETE`, an MQTT client's
    /// disconnect), or the device did (idle, its place taken, its link gone). A call it left
    /// waiting for a person is dropped with it.
    SessionEnded {
        /// The transport.
        transport: &'static str,
        /// The client, as [`CallReport::client`] names it.
        client: String,
        /// Why, in the host's words.
        reason: &'static str,
    },
    /// The xiaozhi backend answered the hello with this session id.
    Hello {
        /// The session id.
        session_id: Option<String>,
    },
    /// The xiaozhi backend named a `session_id` that is not echoed or logged (longer than
    /// `mcp_core::transport::xiaozhi::MAX_SESSION_ID_LEN` bytes, or not printable ASCII): it
    /// was ignored, and the replies carry no `session_id`.
    UnusableSessionId {
        /// Its length as sent (bytes of the JSON string's content).
        len: usize,
    },
    /// The link to the broker (MQTT) is up.
    Connected {
        /// Where, and as whom.
        to: String,
    },
    /// The OTA/config check says the device is not bound yet: show `code` (and `message`) until
    /// the user binds it on the server; the check is repeated meanwhile. Text from the server,
    /// at most [`ota::MAX_TEXT`] characters each: escape it before a log line.
    Activation {
        /// The activation code.
        code: String,
        /// The server's message.
        message: String,
    },
    /// The device was bound after an activation code was shown.
    Activated,
    /// The OTA/config check offers a firmware newer than the running one (reported only; it is
    /// installed only through the firmware kit's own tools, by a client that asks for it).
    FirmwareOffered {
        /// The running version.
        running: String,
        /// The offered version (from the server, capped).
        offered: String,
        /// Where to download it (from the server, capped).
        url: Option<String>,
    },
    /// The link to the xiaozhi backend or the MQTT broker is gone (or an OTA check failed).
    Disconnected {
        /// Why.
        reason: String,
        /// When the next attempt starts (`None`: no reconnection).
        retry_in: Option<std::time::Duration>,
    },
    /// The answer to an acting call was written out, or lost with the link. Over xiaozhi
    /// "written" means the WebSocket send returned; over HTTP, that the answer was handed to the
    /// HTTP connection (lost: the client had gone before it was ready); over MQTT, that the
    /// broker acknowledged it (lost: the link failed first, or the broker said no one was
    /// subscribed).
    Answered {
        /// The tool whose handler ran; `None` when the answer is a replay (see `replay`).
        ran: Option<&'static str>,
        /// `Some` for a retransmission answered from the first answer without running again:
        /// what had become of that first answer.
        replay: Option<Delivery>,
        /// What became of this answer.
        delivery: Delivery,
    },
    /// A `tools/call` was answered or held — or a held one settled by a person (through the
    /// client or on the device) or by a timeout: which client, which tool, the outcome, the
    /// evidence level, the text, and what became of the answer when known (see [`CallReport`]).
    Call(CallReport),
    /// What became of the answer of the call reported as [`CallReport::number`] `call`, learnt
    /// after it was reported (an MQTT broker's acknowledgement, a WebSocket send that returned).
    Delivered {
        /// The call's report number.
        call: u64,
        /// Written out, or lost.
        delivery: Delivery,
    },
    /// The calls waiting for a person's answer changed (on every engine of this host, in the
    /// order the device shows them: the first is shown; empty: none waits any more).
    Waiting(Vec<Waiting>),
    /// The device's button was pressed: the call it confirmed, if any (see [`Pressed`]).
    Pressed(Pressed),
    /// The device sent its xiaozhi backend a detect text of its own: an outcome heard after a
    /// call's answer (`[device_call] …`, spoken and added to the model's dialogue), or an event
    /// that starts a model turn (`Device event: …`).
    Said {
        /// The transport (`"xiaozhi-ws"`, `"stdio-xiaozhi"`).
        transport: &'static str,
        /// The text, as sent.
        text: String,
        /// The event's name, for an event; `None` for an outcome.
        event: Option<&'static str>,
    },
    /// A `notifications/resources/updated` went out (or had nowhere to go: a 2025 session
    /// without a `GET` stream, a listen stream already closed).
    Updated {
        /// The transport (`"http"`, `"http-2026"`, `"xiaozhi-ws"`, …).
        transport: &'static str,
        /// The resource.
        uri: String,
        /// The 2026-07-28 listen stream it was tagged for (its request id, raw JSON).
        subscription: Option<String>,
        /// It went to a stream or a socket.
        delivered: bool,
    },
    /// An MCP endpoint link changed state ([`endpoint::run`]).
    Endpoint {
        /// Which link (its place among the links given to [`endpoint::run`]).
        link: usize,
        /// Its URL, as shown (the token's value as `…`).
        url: String,
        /// What happened.
        state: endpoint::State,
    },
    /// A 2026-07-28 `subscriptions/listen` stream over HTTP opened (acknowledged) or ended (the
    /// client closed it; the host called [`Server::cancelled`]).
    Listen {
        /// The listen request's id (raw JSON).
        id: String,
        /// `true` when it opened.
        open: bool,
    },
}

/// Receives [`HostEvent`]s (for logging); called from the host's tasks, keep it short.
pub type EventHook = Arc<dyn Fn(&HostEvent) + Send + Sync>;

/// Tells the other engines that act on the same board that a tool ran, so that none of them
/// answers a retransmission with evidence that call made stale ([`Server::touched`]).
pub(crate) type Touch = Arc<dyn Fn(&'static str) + Send + Sync>;

/// How to run one message.
#[derive(Clone)]
pub(crate) struct Run {
    pub(crate) principal: Principal,
    pub(crate) stateless: bool,
    pub(crate) out_len: usize,
    /// Prime the engine first (a fresh one), at this time.
    pub(crate) prime_at: Option<u64>,
    /// The scope of retransmissions.
    pub(crate) peer: Peer,
    /// Report the answer as written once it is handed to the receiver of the returned channel
    /// (lost when that receiver is gone). A transport that writes to a socket itself reports
    /// after its write instead ([`Handed::delivered`] of [`Done::handed`]).
    pub(crate) report_delivery: bool,
    /// The other engines on the board, told when a tool ran.
    pub(crate) touch: Option<Touch>,
    /// The transport's event hook: every call and session start the message makes is reported
    /// there ([`report::handle`]), as the answer is handed over.
    pub(crate) events: Option<EventHook>,
    /// The transport's name in [`CallReport`]s.
    pub(crate) transport: &'static str,
    /// The client's session, when the transport keeps one per client on a shared engine
    /// ([`mcp_core::Session`]); what the message made of it comes back in [`Done::session`].
    pub(crate) session: Option<mcp_core::Session>,
}

/// Hands one message to an engine on a blocking thread; notifications and the answer arrive on
/// the returned channel as they happen.
pub(crate) fn run<C: Board, K: Capacities>(
    engine: Arc<Mutex<Box<Engine<C, K>>>>,
    board: Arc<Mutex<C>>,
    msg: Bytes,
    how: Run,
) -> mpsc::UnboundedReceiver<Step> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::task::spawn_blocking(move || {
        let mut out = vec![0u8; how.out_len.max(MIN_OUT_LEN)];
        let engine_arc = engine.clone();
        let mut engine = lock(&engine);
        let mut board = lock(&board);
        if let Some(now) = how.prime_at {
            prime(&mut engine, &mut board, now, &mut out);
        }
        let notes = tx.clone();
        let mut notify = move |m: &[u8]| {
            let _ = notes.send(Step::Note(Bytes::copy_from_slice(m)));
        };
        let mut input = Input::new(&msg, how.principal)
            .stateless(how.stateless)
            .peer(how.peer);
        if let Some(session) = how.session {
            input = input.session(session);
        }
        let handled = report::handle(
            &mut engine,
            input,
            &mut board,
            &mut out,
            &mut notify,
            how.transport,
        );
        let (done, reported) = match handled {
            Ok((h, reported)) => {
                if h.len > 0 && h.ran.is_some() {
                    // A tool answered end to end: an upgraded firmware on trial is kept.
                    board.answered();
                }
                let initialized = match h.event {
                    Some(mcp_core::Event::Initialized { revision, .. }) => Some(revision),
                    _ => None,
                };
                let bytes = out.get(..h.len).unwrap_or_default();
                let done = Done {
                    bytes: Bytes::copy_from_slice(bytes),
                    status: h.status,
                    deferred: h.deferred,
                    initialized,
                    handed: Handed {
                        receipt: h.receipt,
                        ran: h.ran,
                        replay: h.replay,
                        // An answer held back (empty) has nothing to deliver yet.
                        call: reported
                            .call
                            .as_ref()
                            .filter(|_| h.len > 0)
                            .map(|c| c.number),
                    },
                    session: h.session.map(Box::new),
                };
                (done, reported)
            }
            // Only for buffers below MIN_OUT_LEN, which `out` never is.
            Err(_) => {
                let done = Done {
                    bytes: Bytes::new(),
                    status: Status::Ok,
                    deferred: false,
                    initialized: None,
                    handed: Handed::default(),
                    session: how.session.map(Box::new),
                };
                (done, Reported::default())
            }
        };
        // Lock order: never an engine while holding the board.
        drop(board);
        drop(engine);
        let (handed, answered) = (done.handed, !done.bytes.is_empty());
        if let (Some(tool), Some(touch)) = (handed.ran, &how.touch) {
            touch(tool);
        }
        let written = tx.send(Step::Done(done)).is_ok();
        let delivery = how.report_delivery.then_some(delivery(written));
        if let Some(hook) = &how.events {
            for e in reported.events(delivery.filter(|_| answered)) {
                hook(&e);
            }
        }
        if let Some(delivery) = delivery {
            // Reported on the call already.
            let handed = Handed {
                call: None,
                ..handed
            };
            handed.delivered(&engine_arc, how.events.as_ref(), delivery);
        }
    });
    rx
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, reason = "a test")]

    use super::*;
    use mcp_core::{Args, Config, Confirm, Output, Reply, Tool, ToolResult};

    /// A board with one tool that asks first.
    #[derive(Default)]
    struct Dev {
        reboots: u32,
    }

    impl Board for Dev {}

    fn reboot(d: &mut Dev, _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
        d.reboots += 1;
        Ok(Output::bool(true))
    }

    const REBOOT: Tool<Dev> =
        Tool::new("self.reboot", "Reboot", reboot).confirm(Confirm::new("Reboot?"));

    fn engine(seed: u8) -> Mutex<Box<Engine<Dev, HostCaps<2, 0>>>> {
        let mut e = Box::new(Engine::new(Config::new("t", "1").hold_answer(0)));
        e.register(&REBOOT).unwrap();
        e.set_entropy([seed; 16]);
        Mutex::new(e)
    }

    fn hold(engine: &Mutex<Box<Engine<Dev, HostCaps<2, 0>>>>, board: &Mutex<Dev>) {
        let msg =
            br#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"self.reboot"}}"#;
        let mut out = [0u8; 1024];
        let h = lock(engine)
            .handle(msg, Principal::Model, &mut lock(board), &mut out)
            .unwrap();
        assert!(h.len > 0, "answered that it waits");
    }

    fn poll_all(
        engines: &[&Mutex<Box<Engine<Dev, HostCaps<2, 0>>>>],
        board: &Mutex<Dev>,
        now: u64,
    ) -> Vec<Asked> {
        let mut out = vec![0u8; 1024];
        let mut held = Vec::new();
        for e in engines {
            let t = turn(e, board, &[], now, &mut out);
            held.extend(t.held_after);
        }
        held
    }

    /// With two calls waiting (two sessions), the device shows one — the first
    /// held — and a press answers that one; a press in the same tick as a question appears answers
    /// nothing; the next question is shown only after the first is answered. (Each question
    /// is shown for the engines' minimum, 1 s, before a press counts.)
    #[test]
    fn the_device_shows_one_question_first_held_first_and_a_press_answers_only_it() {
        let board = Mutex::new(Dev::default());
        let (a, b) = (engine(1), engine(2));
        let mut panel = Panel::new(0);
        // A press while nothing waits: only a press.
        poll_all(&[&a, &b], &board, 100);
        let pressed = panel.press(1, 100, [&a, &b]);
        assert_eq!(pressed.len(), 1);
        assert_eq!(pressed[0].answers, None);
        // B's call is held first, then A's.
        hold(&b, &board);
        let held = poll_all(&[&a, &b], &board, 200);
        let shown = panel.show(&held, 200);
        assert_eq!(shown.len(), 1);
        let b_question = shown[0].approval;
        hold(&a, &board);
        let held = poll_all(&[&a, &b], &board, 210);
        let shown = panel.show(&held, 210);
        assert_eq!(shown.len(), 2);
        assert_eq!(shown[0].approval, b_question, "first held, first shown");
        assert_eq!(shown[0].shown_since, Some(200));
        assert_eq!(shown[1].shown_since, None, "A's waits its turn, not shown");
        // A press answers B's (shown for a second before it), not A's.
        let pressed = panel.press(2, 1_300, [&a, &b]);
        assert_eq!(pressed[0].answers.as_ref().unwrap().approval, b_question);
        poll_all(&[&a, &b], &board, 1_300);
        assert_eq!(lock(&board).reboots, 1);
        assert!(lock(&b).confirmation().is_none());
        assert!(lock(&a).confirmation().is_some(), "A's still waits");
        // A's question is shown from now: a press in this same tick answers nothing.
        let held = poll_all(&[&a, &b], &board, 1_300);
        let shown = panel.show(&held, 1_300);
        assert_eq!(shown[0].shown_since, Some(1_300));
        let pressed = panel.press(3, 1_300, [&a, &b]);
        assert_eq!(pressed[0].answers, None, "a press as the question appears");
        assert_eq!(lock(&board).reboots, 1);
        // The panel shows it on; a press once it was read (and a second after the last press)
        // answers it.
        let held = poll_all(&[&a, &b], &board, 1_320);
        panel.show(&held, 1_320);
        let pressed = panel.press(4, 2_400, [&a, &b]);
        assert!(pressed[0].answers.is_some());
        poll_all(&[&a, &b], &board, 2_400);
        assert_eq!(lock(&board).reboots, 2);
    }

    /// A quick double press — the first half answers the question shown,
    /// the second, 29–150 ms later, must not approve the question that came up in between (on
    /// the device for under 100 ms). A press counts only for a question shown for the minimum
    /// (1 s), and never within the minimum of the previous press.
    #[test]
    fn a_quick_double_press_answers_one_question_only() {
        let board = Mutex::new(Dev::default());
        let (a, b) = (engine(1), engine(2));
        let mut panel = Panel::new(0);
        hold(&a, &board);
        hold(&b, &board);
        let held = poll_all(&[&a, &b], &board, 0);
        let shown = panel.show(&held, 0);
        let first = shown[0].approval;
        // Before it was on the device for a second: nothing.
        let pressed = panel.press(1, 999, [&a, &b]);
        assert_eq!(pressed[0].answers, None, "shown for 999 ms");
        // 1 ms later, within the bounce time of that press: nothing either.
        let pressed = panel.press(2, 1_000, [&a, &b]);
        assert_eq!(pressed[0].answers, None, "a bounce");
        // The double press: its first half answers the shown question…
        let pressed = panel.press(3, 2_000, [&a, &b]);
        assert_eq!(pressed[0].answers.as_ref().unwrap().approval, first);
        let held = poll_all(&[&a, &b], &board, 2_010);
        let shown = panel.show(&held, 2_010);
        assert_eq!(lock(&board).reboots, 1);
        let second = shown[0].approval;
        assert_ne!(second, first);
        // …the second half, 29 to 150 ms later, answers nothing: the next question was on the
        // device for under 100 ms, and the press is within the bounce time of the first.
        for (n, at) in [(4, 2_029), (5, 2_150)] {
            let pressed = panel.press(n, at, [&a, &b]);
            assert_eq!(pressed[0].answers, None, "press at {at}");
            poll_all(&[&a, &b], &board, at);
        }
        assert_eq!(lock(&board).reboots, 1, "the second call did not run");
        // Even straight at the engine, a press is refused before the question was shown long
        // enough.
        let p = lock(&b)
            .confirmation()
            .or_else(|| lock(&a).confirmation())
            .unwrap();
        let holder = if lock(&a).confirmation().is_some() {
            &a
        } else {
            &b
        };
        assert_eq!(p.min_shown_ms, 1_000);
        let shown_at = p.shown_ms.unwrap();
        assert!(!lock(holder).confirm_on_device(p.approval, true, shown_at + 999));
        // Read and answered a second after the last press: it runs.
        let held = poll_all(&[&a, &b], &board, 3_100);
        panel.show(&held, 3_100);
        let pressed = panel.press(6, 3_200, [&a, &b]);
        assert_eq!(pressed[0].answers.as_ref().unwrap().approval, second);
        poll_all(&[&a, &b], &board, 3_200);
        assert_eq!(lock(&board).reboots, 2);
    }
}
