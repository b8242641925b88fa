//! The async kits through `Server::handle_async`, against the blocking kits.
//!
//! One board type holds the parts; the blocking board holds the blocking sim devices, the async
//! board the same devices behind async twins — the codec and the relay behind [`Pend`], whose
//! every operation is `Pending` once before it runs (as a bus transfer waiting for its
//! interrupt), the others behind `BlockingAsync` — and its delay is `Pending` once per pause too.
//! Both start from the same state, get the same request, and must answer the same bytes; the
//! async one must have been suspended on the way.
#![cfg(feature = "sim")]
#![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "a test")]

mod common;

use common::{YieldOnce, block_on};

use mcp_core::testing::Client;
use mcp_core::{Call, Caps, Config, Input, Principal, Server, Tool};
use mcp_hal::asynch::BlockingAsync;
use mcp_hal::audio::VolumeCaps;
use mcp_hal::kits::asynch::{self as ak};
use mcp_hal::kits::relay::Refusal;
use mcp_hal::kits::{self, DEFAULT_CALL_BUDGET_MS};
use mcp_hal::sim::{Fault, Faults, SimBacklight, SimCodec, SimRelay, SimSystem};
use mcp_hal::{ErrorKind, ErrorType, Percent};
use serde_json::{Value, json};

/// A device on the simulated clock.
trait Clocked {
    fn set_time(&mut self, now_ms: u64);
}

macro_rules! clocked {
    ($($t:ty),*) => {$(
        impl Clocked for $t {
            fn set_time(&mut self, now_ms: u64) {
                <$t>::set_time(self, now_ms);
            }
        }
    )*};
}
clocked!(SimCodec, SimRelay, SimBacklight, SimSystem);

impl<T: Clocked> Clocked for BlockingAsync<T> {
    fn set_time(&mut self, now_ms: u64) {
        self.inner_mut().set_time(now_ms);
    }
}

/// A blocking device behind an async twin whose every operation is `Pending` once first.
struct Pend<T>(T);

impl<T: ErrorType> ErrorType for Pend<T> {
    type Error = T::Error;
}

impl<T: Clocked> Clocked for Pend<T> {
    fn set_time(&mut self, now_ms: u64) {
        self.0.set_time(now_ms);
    }
}

impl<T: mcp_hal::audio::AudioCodec> mcp_hal::asynch::audio::AudioCodec for Pend<T> {
    fn volume_caps(&self) -> VolumeCaps {
        self.0.volume_caps()
    }
    async fn set_volume(&mut self, volume: Percent) -> Result<(), Self::Error> {
        YieldOnce::default().await;
        self.0.set_volume(volume)
    }
    async fn volume(&mut self) -> Result<Percent, Self::Error> {
        YieldOnce::default().await;
        self.0.volume()
    }
    async fn set_mute(&mut self, mute: bool) -> Result<(), Self::Error> {
        YieldOnce::default().await;
        self.0.set_mute(mute)
    }
}

impl<T: mcp_hal::switch::Switch> mcp_hal::asynch::switch::Switch for Pend<T> {
    async fn set(&mut self, on: bool) -> Result<(), Self::Error> {
        YieldOnce::default().await;
        self.0.set(on)
    }
    async fn feedback(&mut self) -> Result<Option<bool>, Self::Error> {
        YieldOnce::default().await;
        self.0.feedback()
    }
    fn settle_ms(&self) -> u32 {
        self.0.settle_ms()
    }
}

/// A codec whose register takes 50 ms to show a write, and declares 80 ms (within the budget).
struct LaggyCodec {
    now: u64,
    register: Percent,
    pending: Option<(Percent, u64)>,
}

impl LaggyCodec {
    const LAG_MS: u64 = 50;
    fn new() -> Self {
        LaggyCodec {
            now: 0,
            register: Percent::saturating(70),
            pending: None,
        }
    }
    fn settle(&mut self) {
        if let Some((v, due)) = self.pending
            && self.now >= due
        {
            self.register = v;
            self.pending = None;
        }
    }
}

impl Clocked for LaggyCodec {
    fn set_time(&mut self, now_ms: u64) {
        self.now = now_ms;
    }
}

impl ErrorType for LaggyCodec {
    type Error = ErrorKind;
}

impl mcp_hal::audio::AudioCodec for LaggyCodec {
    fn volume_caps(&self) -> VolumeCaps {
        VolumeCaps {
            max: Percent::MAX,
            read_back: true,
            settle_ms: 80,
            tolerance: 0,
        }
    }
    fn set_volume(&mut self, v: Percent) -> Result<(), ErrorKind> {
        self.settle();
        self.pending = Some((v, self.now + Self::LAG_MS));
        Ok(())
    }
    fn volume(&mut self) -> Result<Percent, ErrorKind> {
        self.settle();
        Ok(self.register)
    }
    fn set_mute(&mut self, _: bool) -> Result<(), ErrorKind> {
        Ok(())
    }
}

/// The board: a codec, a relay behind a door interlock, a backlight, a reboot line, one clock.
struct Parts<C, R, B, S> {
    codec: C,
    relay: R,
    backlight: B,
    system: S,
    now: u64,
    budget_ms: u32,
    door_open: bool,
}

/// The blocking board.
type Blocking<C> = Parts<C, SimRelay, SimBacklight, SimSystem>;
/// The async board over the same devices.
type Async<C> =
    Parts<Pend<C>, Pend<SimRelay>, BlockingAsync<SimBacklight>, BlockingAsync<SimSystem>>;

fn sim_parts(faults: Faults) -> Blocking<SimCodec> {
    parts(SimCodec::new(faults), faults)
}

fn parts<C>(codec: C, faults: Faults) -> Blocking<C> {
    Parts {
        codec,
        relay: SimRelay::new(faults),
        backlight: SimBacklight::new(faults),
        system: SimSystem::new(faults),
        now: 0,
        budget_ms: DEFAULT_CALL_BUDGET_MS,
        door_open: false,
    }
}

impl<C> Blocking<C> {
    /// The same devices, in the same state, behind async twins.
    fn into_async(self) -> Async<C> {
        Parts {
            codec: Pend(self.codec),
            relay: Pend(self.relay),
            backlight: BlockingAsync::new(self.backlight),
            system: BlockingAsync::new(self.system),
            now: self.now,
            budget_ms: self.budget_ms,
            door_open: self.door_open,
        }
    }
}

/// The board's delay: advances every device's clock; as an async delay it is `Pending` once
/// first.
struct Tick<'a, C, R, B, S>(&'a mut Parts<C, R, B, S>);

impl<C: Clocked, R: Clocked, B: Clocked, S: Clocked> Tick<'_, C, R, B, S> {
    fn advance(&mut self, ms: u32) {
        let p = &mut *self.0;
        p.now += u64::from(ms);
        p.codec.set_time(p.now);
        p.relay.set_time(p.now);
        p.backlight.set_time(p.now);
        p.system.set_time(p.now);
    }
}

impl<C: Clocked, R: Clocked, B: Clocked, S: Clocked> embedded_hal::delay::DelayNs
    for Tick<'_, C, R, B, S>
{
    fn delay_ns(&mut self, ns: u32) {
        self.advance(ns.div_ceil(1_000_000));
    }
    fn delay_ms(&mut self, ms: u32) {
        self.advance(ms);
    }
}

impl<C: Clocked, R: Clocked, B: Clocked, S: Clocked> embedded_hal_async::delay::DelayNs
    for Tick<'_, C, R, B, S>
{
    async fn delay_ns(&mut self, ns: u32) {
        YieldOnce::default().await;
        self.advance(ns.div_ceil(1_000_000));
    }
    async fn delay_ms(&mut self, ms: u32) {
        YieldOnce::default().await;
        self.advance(ms);
    }
}

fn door(
    p: &Parts<impl Sized, impl Sized, impl Sized, impl Sized>,
    on: bool,
) -> Result<(), Refusal> {
    if on && p.door_open {
        Err(Refusal {
            guard: "door-closed",
            reason: "the door is open",
        })
    } else {
        Ok(())
    }
}

// ---- the blocking board's access traits ----

impl<C: Clocked, R: Clocked, B: Clocked, S: Clocked> kits::Wait for Parts<C, R, B, S> {
    fn delay(&mut self) -> impl kits::DelayNs + '_ {
        Tick(self)
    }
    fn call_budget_ms(&self) -> u32 {
        self.budget_ms
    }
}

impl<C: mcp_hal::audio::AudioCodec + Clocked> kits::audio::HasCodec for Blocking<C> {
    type Codec = C;
    fn codec(&mut self) -> &mut C {
        &mut self.codec
    }
}

impl<C: Clocked> kits::relay::HasRelay for Blocking<C> {
    type Relay = SimRelay;
    fn relay(&mut self) -> &mut SimRelay {
        &mut self.relay
    }
    fn interlock(&mut self, on: bool) -> Result<(), Refusal> {
        door(self, on)
    }
}

impl<C> kits::screen::HasBacklight for Blocking<C> {
    type Backlight = SimBacklight;
    fn backlight(&mut self) -> &mut SimBacklight {
        &mut self.backlight
    }
}

impl<C> kits::system::HasSystem for Blocking<C> {
    type System = SimSystem;
    fn system(&mut self) -> &mut SimSystem {
        &mut self.system
    }
}

impl<C: mcp_hal::audio::AudioCodec> kits::status::StatusReport for Blocking<C> {
    fn report(&mut self, status: &mut kits::status::Status<'_, '_, '_>) {
        let level = self.backlight.level();
        status
            .audio_speaker(&mut self.codec)
            .screen(level, "light")
            .relay(&mut self.relay);
    }
}

impl<C: mcp_hal::audio::AudioCodec + Clocked + 'static> Blocking<C> {
    const TOOLS: &'static [&'static Tool<Self>] = &[
        &kits::audio::set_volume(),
        &kits::mute::set_mute(),
        &kits::screen::set_brightness(),
        &kits::relay::set(),
        &kits::status::get_device_status(),
        &kits::system::reboot(),
    ];
}

// ---- the async board's access traits ----

impl<C: Clocked, R: Clocked, B: Clocked, S: Clocked> ak::Wait for Parts<C, R, B, S> {
    fn delay(&mut self) -> impl ak::DelayNs + '_ {
        Tick(self)
    }
    fn call_budget_ms(&self) -> u32 {
        self.budget_ms
    }
}

impl<C: mcp_hal::audio::AudioCodec + Clocked> ak::audio::HasCodec for Async<C> {
    type Codec = Pend<C>;
    fn codec(&mut self) -> &mut Pend<C> {
        &mut self.codec
    }
}

impl<C: Clocked> ak::relay::HasRelay for Async<C> {
    type Relay = Pend<SimRelay>;
    fn relay(&mut self) -> &mut Pend<SimRelay> {
        &mut self.relay
    }
    fn interlock(&mut self, on: bool) -> Result<(), Refusal> {
        door(self, on)
    }
}

impl<C> ak::screen::HasBacklight for Async<C> {
    type Backlight = BlockingAsync<SimBacklight>;
    fn backlight(&mut self) -> &mut BlockingAsync<SimBacklight> {
        &mut self.backlight
    }
}

impl<C> ak::system::HasSystem for Async<C> {
    type System = BlockingAsync<SimSystem>;
    fn system(&mut self) -> &mut BlockingAsync<SimSystem> {
        &mut self.system
    }
}

impl<C: mcp_hal::audio::AudioCodec> ak::status::StatusReport for Async<C> {
    async fn report(&mut self, status: &mut ak::status::Status<'_>) {
        let level = self.backlight.inner().level();
        status.audio_speaker(&mut self.codec).await;
        status.screen(level, "light");
        status.relay(&mut self.relay).await;
    }
}

impl<C: mcp_hal::audio::AudioCodec + Clocked + 'static> Async<C> {
    const TOOLS: &'static [&'static Tool<Self>] = &[
        &ak::audio::set_volume(),
        &ak::mute::set_mute(),
        &ak::screen::set_brightness(),
        &ak::relay::set(),
        &ak::status::get_device_status(),
        &ak::system::reboot(),
    ];
}

// ---- sending requests ----

fn call_msg(tool: &str, args: &Value) -> String {
    json!({"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":tool,"arguments":args}})
        .to_string()
}

fn blocking_server<C: mcp_hal::audio::AudioCodec + Clocked + 'static>()
-> Server<'static, Blocking<C>, Caps<8>> {
    let mut server = Server::new(Config::new("kits", "1"));
    server.register_all(Blocking::<C>::TOOLS).unwrap();
    server
}

fn async_server<C: mcp_hal::audio::AudioCodec + Clocked + 'static>()
-> Server<'static, Async<C>, Caps<8>> {
    let mut server = Server::new(Config::new("kits", "1"));
    server.register_all(Async::<C>::TOOLS).unwrap();
    server
}

fn send_blocking<C: mcp_hal::audio::AudioCodec + Clocked + 'static>(
    board: &mut Blocking<C>,
    who: Principal,
    msg: &str,
) -> String {
    let mut out = vec![0u8; 4096];
    let n = blocking_server()
        .handle(msg.as_bytes(), who, board, &mut out)
        .unwrap()
        .len;
    String::from_utf8(out[..n].to_vec()).unwrap()
}

/// The answer through `handle_async`, and how often the handler was suspended.
fn send_async<C: mcp_hal::audio::AudioCodec + Clocked + 'static>(
    server: &mut Server<'static, Async<C>, Caps<8>>,
    board: &mut Async<C>,
    who: Principal,
    msg: &str,
) -> (String, u32) {
    let mut out = vec![0u8; 4096];
    let (handled, pending) = block_on(server.handle_async(
        Input::new(msg.as_bytes(), who),
        board,
        &mut out,
        &mut |_: &[u8]| {},
        async |board: &mut Async<C>, call: Call<'_, '_>| {
            mcp_hal::dispatch_kits!(
                board,
                call,
                [
                    ak::audio,
                    ak::mute,
                    ak::screen,
                    ak::relay,
                    ak::status,
                    ak::system
                ]
            )
        },
    ));
    let n = handled.unwrap().len;
    (String::from_utf8(out[..n].to_vec()).unwrap(), pending)
}

/// What one request did on both boards.
struct Both<C> {
    answer: String,
    pending: u32,
    blocking: Blocking<C>,
    asynch: Async<C>,
}

impl<C> Both<C> {
    fn result(&self) -> Value {
        serde_json::from_str::<Value>(&self.answer).unwrap()["result"].clone()
    }
}

/// Sends the same request to the blocking and the async board, from two equal starts, asserts
/// that the answers are byte-identical, and returns the boards afterwards.
fn both<C: mcp_hal::audio::AudioCodec + Clocked + 'static>(
    start: impl Fn() -> Blocking<C>,
    who: Principal,
    tool: &str,
    args: Value,
) -> Both<C> {
    let msg = call_msg(tool, &args);
    let mut blocking = start();
    let expected = send_blocking(&mut blocking, who, &msg);
    let mut asynch = start().into_async();
    let (answer, pending) = send_async(&mut async_server(), &mut asynch, who, &msg);
    assert_eq!(answer, expected, "async and blocking kits differ");
    assert_eq!(asynch.now, blocking.now, "they waited differently");
    Both {
        answer,
        pending,
        blocking,
        asynch,
    }
}

fn nominal() -> Blocking<SimCodec> {
    sim_parts(Faults::NONE)
}

// ---- the tests ----

#[test]
fn the_listings_are_byte_identical() {
    let msg = r#"{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"withUserTools":true}}"#;
    let expected = send_blocking(&mut nominal(), Principal::User, msg);
    // The one difference: a blocking kit that may hand a long settle time to a task says so
    // (feature `tasks`); an async tool cannot be long-running.
    let expected = expected.replace(r#","execution":{"taskSupport":"optional"}"#, "");
    let (answer, _) = send_async(
        &mut async_server(),
        &mut nominal().into_async(),
        Principal::User,
        msg,
    );
    assert_eq!(answer, expected);
    for name in [
        ak::audio::NAME,
        ak::mute::NAME,
        ak::screen::NAME,
        ak::relay::NAME,
        ak::status::NAME,
        ak::system::NAME,
    ] {
        assert!(answer.contains(&format!(r#""name":"{name}""#)), "{name}");
    }
}

#[test]
fn set_volume_is_read_back_after_awaiting_the_codec() {
    let b = both(
        nominal,
        Principal::Model,
        ak::audio::NAME,
        json!({"volume": 40}),
    );
    let r = b.result();
    assert_eq!(r.get("isError"), None, "{r}");
    assert_eq!(
        r["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level":"read_back","commanded":40,"observed":40})
    );
    // The write and the read-back each suspended once.
    assert_eq!(b.pending, 2);
    assert_eq!(b.asynch.codec.0.stored_volume().get(), 40);
    assert_eq!(b.blocking.codec.stored_volume().get(), 40);
}

/// A quantized codec agrees within its tolerance; a read-back that disagrees fails the call with
/// commanded and observed.
#[test]
fn read_back_is_judged_within_the_codecs_tolerance() {
    let cases = [
        (
            Fault::CodecQuantized,
            false,
            json!({"level":"read_back","commanded":40,"observed":39,"tolerance":2}),
            "true — read back: 39 (commanded 40, within ±2)",
        ),
        (
            Fault::ReadbackMismatch,
            true,
            json!({"level":"read_back","commanded":40,"observed":47}),
            "The codec reports a different volume than commanded — read back: 47 (commanded 40)",
        ),
    ];
    for (fault, failed, evidence, text) in cases {
        let start = || sim_parts(Faults::only(fault));
        let r = both(
            start,
            Principal::Model,
            ak::audio::NAME,
            json!({"volume": 40}),
        )
        .result();
        assert_eq!(r["isError"] == true, failed, "{r}");
        assert_eq!(r["_meta"]["io.github.mcu-mcp/evidence"], evidence);
        assert_eq!(r["content"][0]["text"], text);
    }
}

#[test]
fn a_settle_time_within_the_budget_is_waited_and_confirmed_in_the_call() {
    let b = both(
        || parts(LaggyCodec::new(), Faults::NONE),
        Principal::Model,
        ak::audio::NAME,
        json!({"volume": 40}),
    );
    let r = b.result();
    assert_eq!(r.get("isError"), None, "{r}");
    assert!(r["structuredContent"]["task_id"].is_null(), "{r}");
    assert_eq!(
        r["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level":"read_back","commanded":40,"observed":40})
    );
    // Read every 5 ms on the board's clock: agreement showed at +50 ms and the call answered.
    assert_eq!(b.asynch.now, 50);
    // The write, 11 reads and 10 pauses each suspended once.
    assert_eq!(b.pending, 1 + 11 + 10);
}

#[test]
fn a_stuck_relay_fails_in_the_call_after_its_settle_time() {
    let b = both(
        || sim_parts(Faults::only(Fault::RelayStuck)),
        Principal::Model,
        ak::relay::NAME,
        json!({"on": true}),
    );
    let r = b.result();
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(
        r["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level":"measured","commanded":true,"observed":false})
    );
    assert_eq!(b.asynch.now, u64::from(SimRelay::SETTLE_MS));
}

#[test]
fn a_relay_is_measured_and_its_pending_drive_completes() {
    let b = both(
        nominal,
        Principal::Model,
        ak::relay::NAME,
        json!({"on": true}),
    );
    let r = b.result();
    assert_eq!(
        r["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level":"measured","commanded":true,"observed":true})
    );
    // The drive was pending when first polled inside the critical section and was finished
    // outside it, after the executor polled again; then the feedback read was pending once.
    assert_eq!(b.pending, 2);
    assert!(b.asynch.relay.0.contacts());
}

/// A settle time beyond the budget cannot be a task for an async tool: the call waits the
/// budget and fails with `applied` evidence, as the blocking kits do without `tasks`.
#[test]
fn a_settle_time_beyond_the_budget_fails_unconfirmed_after_the_budget() {
    let slow = || sim_parts(Faults::only(Fault::Slow));
    let cases = [
        (
            ak::audio::NAME,
            json!({"volume": 40}),
            json!({"level":"applied","commanded":40}),
            "The volume was written but not confirmed within this device's 200 ms call budget \
             (the codec may take 2000 ms; it still reads 70%) — applied, not verified \
             (commanded 40)",
        ),
        (
            ak::relay::NAME,
            json!({"on": true}),
            json!({"level":"applied","commanded":true}),
            "The relay was driven but its feedback did not confirm it within this device's 200 \
             ms call budget (it may take 2000 ms; the feedback still reads off) — \
             applied, not verified (commanded true)",
        ),
    ];
    for (tool, args, evidence, message) in cases {
        let msg = call_msg(tool, &args);
        let mut board = slow().into_async();
        let (answer, _) = send_async(&mut async_server(), &mut board, Principal::Model, &msg);
        let r = &serde_json::from_str::<Value>(&answer).unwrap()["result"];
        assert_eq!(r["isError"], true, "{r}");
        assert!(r["structuredContent"]["task_id"].is_null(), "{r}");
        assert_eq!(r["_meta"]["io.github.mcu-mcp/evidence"], evidence);
        assert_eq!(r["content"][0]["text"], message);
        assert_eq!(board.now, u64::from(DEFAULT_CALL_BUDGET_MS));
        if cfg!(not(feature = "tasks")) {
            // The blocking kit without tasks: the same bytes.
            both(slow, Principal::Model, tool, args);
        }
    }
}

#[test]
fn the_interlock_refuses_and_nothing_is_driven() {
    let closed_door_refused = || {
        let mut p = nominal();
        p.door_open = true;
        p
    };
    let b = both(
        closed_door_refused,
        Principal::Model,
        ak::relay::NAME,
        json!({"on": true}),
    );
    let r = b.result();
    assert_eq!(r["isError"], true, "{r}");
    assert_eq!(
        r["content"][0]["text"],
        "Refused by interlock \"door-closed\": the door is open; the relay was not switched — \
         not applied (commanded true)"
    );
    assert_eq!(
        r["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level":"not_applied","commanded":true})
    );
    assert_eq!(b.asynch.relay.0.writes(), 0);
    assert_eq!(b.blocking.relay.writes(), 0);
    // Off is always allowed.
    let b = both(
        closed_door_refused,
        Principal::Model,
        ak::relay::NAME,
        json!({"on": false}),
    );
    assert_eq!(b.result().get("isError"), None);
}

#[test]
fn a_validation_refusal_never_runs_the_handler() {
    for args in [json!({"volume": "50"}), json!({"volume": 101}), json!({})] {
        let b = both(nominal, Principal::Model, ak::audio::NAME, args);
        assert!(b.answer.contains("-32602"), "{}", b.answer);
        assert_eq!(b.pending, 0, "nothing was awaited");
        assert_eq!(b.asynch.codec.0.attempts(), 0);
    }
}

#[test]
fn mute_is_applied() {
    for mute in [true, false] {
        let b = both(
            nominal,
            Principal::Model,
            ak::mute::NAME,
            json!({"mute": mute}),
        );
        let r = b.result();
        assert_eq!(r.get("isError"), None, "{r}");
        assert_eq!(
            r["_meta"]["io.github.mcu-mcp/evidence"],
            json!({"level":"applied","commanded":mute})
        );
        assert_eq!(b.asynch.codec.0.muted(), mute);
        assert_eq!(b.blocking.codec.muted(), mute);
        assert_eq!(b.pending, 1);
    }
    let b = both(
        || sim_parts(Faults::only(Fault::CodecNack)),
        Principal::Model,
        ak::mute::NAME,
        json!({"mute": true}),
    );
    assert_eq!(
        b.result()["content"][0]["text"],
        format!(
            "{} — not applied (commanded true)",
            ErrorKind::NoAcknowledge.message()
        )
    );
}

#[test]
fn brightness_status_and_reboot_answer_as_the_blocking_kits() {
    let r = both(
        nominal,
        Principal::Model,
        ak::screen::NAME,
        json!({"brightness": 30}),
    )
    .result();
    assert_eq!(
        r["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level":"applied","commanded":30})
    );
    let r = both(nominal, Principal::Model, ak::status::NAME, json!({})).result();
    assert_eq!(
        r["structuredContent"],
        json!({"audio_speaker":{"volume":70},"screen":{"brightness":80,"theme":"light"},"relay":{"on":false}})
    );
    let b = both(
        || sim_parts(Faults::only(Fault::CodecNack)),
        Principal::Model,
        ak::status::NAME,
        json!({}),
    );
    assert_eq!(b.result()["isError"], true);
    let b = both(nominal, Principal::User, ak::system::NAME, json!({}));
    assert_eq!(
        b.result()["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level":"scheduled"})
    );
    assert_eq!(b.asynch.system.inner().schedules(), 1);
    // User-only: the model is refused before anything runs.
    let b = both(nominal, Principal::Model, ak::system::NAME, json!({}));
    assert!(
        b.answer.contains("only available to the user"),
        "{}",
        b.answer
    );
    assert_eq!(b.asynch.system.inner().schedules(), 0);
}

/// A registered async tool that the dispatch list does not name fails, naming it.
#[test]
fn a_tool_missing_from_the_dispatch_list_fails_naming_it() {
    let run = async |board: &mut Async<SimCodec>, call: Call<'_, '_>| {
        mcp_hal::dispatch_kits!(board, call, [ak::audio, ak::relay])
    };
    let mut device = Client::new_async(async_server(), nominal().into_async(), run);
    let r = device.call(ak::mute::NAME, json!({"mute": true}));
    assert_eq!(
        r.text(),
        "Tool bug: the firmware has no async handler for self.audio_speaker.set_mute; nothing ran"
    );
    assert!(!device.board().codec.0.muted());
}

/// A garage door on the relay kit: the kit's tool under the board's own name, listed
/// in the dispatch with that name; the kit's own name is then not served.
#[test]
fn a_renamed_kit_is_dispatched_by_its_new_name() {
    const DOOR: &str = "self.garage_door.set";
    static GARAGE_DOOR: Tool<Async<SimCodec>> = ak::relay::set()
        .rename(DOOR)
        .describe("Open (true) or close (false) the garage door.");
    let mut server: Server<'static, Async<SimCodec>, Caps<8>> =
        Server::new(Config::new("kits", "1"));
    server.register(&GARAGE_DOOR).unwrap();
    let run = async |board: &mut Async<SimCodec>, call: Call<'_, '_>| {
        mcp_hal::dispatch_kits!(board, call, [ak::audio, ak::relay as DOOR])
    };
    let mut device = Client::new_async(server, nominal().into_async(), run);
    let r = device.call(DOOR, json!({"on": true}));
    assert!(!r.is_error(), "{r}");
    assert_eq!(
        r.evidence(),
        Some(&json!({"level":"measured","commanded":true,"observed":true}))
    );
    assert!(device.board().relay.0.contacts());
    // Under the kit's own name there is no such tool on this board.
    let answer = device.call(ak::relay::NAME, json!({"on": true}));
    assert_eq!(answer.error_code(), Some(-32602), "{answer}");
}

/// The notifications an async call emits reach the transport through `notify`, in order, ahead
/// of the answer (the README's async example queues them): a tool of the firmware's own that
/// reports progress and logs, dispatched beside the kits.
#[test]
fn an_async_calls_notifications_reach_the_transport_in_order() {
    mod fan {
        use mcp_core::{Args, LogLevel, Output, Reply, Tool, ToolResult};
        pub const NAME: &str = "self.fan.spin";
        pub const fn spin<C>() -> Tool<C> {
            Tool::new_async(NAME, "Spin the fan up.")
        }
        pub async fn call<C>(_: &mut C, _: &Args<'_>, reply: &mut Reply<'_>) -> ToolResult {
            reply.progress(1.0, Some(2.0), Some("spinning up"));
            reply.log(LogLevel::Info, Some("fan"), format_args!("at speed"));
            reply.progress(2.0, Some(2.0), None);
            Ok(Output::bool(true))
        }
    }
    static FAN: Tool<Async<SimCodec>> = fan::spin();
    let mut server: Server<'static, Async<SimCodec>, Caps<8>> =
        Server::new(Config::new("kits", "1"));
    server.register_all(Async::<SimCodec>::TOOLS).unwrap();
    server.register(&FAN).unwrap();
    let run = async |board: &mut Async<SimCodec>, call: Call<'_, '_>| {
        mcp_hal::dispatch_kits!(board, call, [ak::audio, ak::relay, fan])
    };
    let mut device = Client::new_async(server, nominal().into_async(), run);
    device.initialize("2025-06-18");
    let level = device.request("logging/setLevel", json!({"level": "info"}));
    assert_eq!(level.result(), Some(&json!({})));
    let spun = device.call_with(
        "self.fan.spin",
        json!({}),
        json!({"_meta": {"progressToken": 7}}),
    );
    assert!(!spun.is_error(), "{spun}");
    assert_eq!(
        spun.notes,
        [
            json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":1,"total":2,"message":"spinning up"}}),
            json!({"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","logger":"fan","data":"at speed"}}),
            json!({"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":7,"progress":2,"total":2}}),
        ]
    );
    // A kit's call reports nothing.
    let volume = device.call(ak::audio::NAME, json!({"volume": 40}));
    assert!(!volume.is_error() && volume.notes.is_empty(), "{volume}");
}
