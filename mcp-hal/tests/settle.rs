//! Short settle times are waited out inside the call, on the board's delay; only
//! actions whose declared settle time exceeds the call budget become tasks. Every board here runs
//! on a simulated clock that only the delay advances, so the waits are exact.
#![cfg(feature = "sim")]
#![allow(clippy::unwrap_used, reason = "a test")]

use mcp_core::testing::{Answer, Client};
use mcp_core::{Caps, Config, Server, Tool};
use mcp_hal::kits::{DEFAULT_CALL_BUDGET_MS, DelayNs, Wait, audio, relay};
use mcp_hal::sim::{Fault, Faults, SimBoard, SimCodec, SimRelay};
use serde_json::json;

/// The sim board behind the audio and relay kits, with a call budget.
struct Board {
    sim: SimBoard,
    budget_ms: u32,
}

impl Board {
    fn new(faults: Faults) -> Board {
        Board {
            sim: SimBoard::new(faults),
            budget_ms: DEFAULT_CALL_BUDGET_MS,
        }
    }
}

impl Wait for Board {
    fn delay(&mut self) -> impl DelayNs + '_ {
        &mut self.sim
    }
    fn call_budget_ms(&self) -> u32 {
        self.budget_ms
    }
}

/// A delay that advances a plain millisecond clock.
struct Clock<'a>(&'a mut u64);

impl DelayNs for Clock<'_> {
    fn delay_ns(&mut self, ns: u32) {
        *self.0 += u64::from(ns.div_ceil(1_000_000));
    }
}

impl audio::HasCodec for Board {
    type Codec = SimCodec;
    fn codec(&mut self) -> &mut SimCodec {
        &mut self.sim.codec
    }
}

impl relay::HasRelay for Board {
    type Relay = SimRelay;
    fn relay(&mut self) -> &mut SimRelay {
        &mut self.sim.relay
    }
}

/// A client of the audio and relay kits on `board`.
fn sim(board: Board) -> Client<'static, Board, Caps<4>> {
    static SET_VOLUME: Tool<Board> = audio::set_volume();
    static RELAY: Tool<Board> = relay::set();
    // A plain call that becomes a task answers at once here (what the kits start is checked);
    // `Config::hold_answer_ms` holds it back by default for a client that follows no task.
    let mut server = Server::new(Config::new("settle", "1").hold_answer(0));
    server.register(&SET_VOLUME).unwrap();
    server.register(&RELAY).unwrap();
    Client::new(server, board)
}

fn started_a_task(r: &Answer) -> bool {
    r.task_id().is_some()
}

/// A stuck relay that declares 20 ms: the call waits those 20 ms on the board's clock and fails
/// at once with the measured feedback; no task.
#[test]
fn a_stuck_20_ms_relay_fails_in_the_call_naming_commanded_and_observed() {
    let mut dev = sim(Board::new(Faults::only(Fault::RelayStuck)));
    dev.board_mut().sim.set_time(1000);
    let r = dev.call("self.relay.set", json!({"on": true}));
    assert!(!started_a_task(&r), "{r}");
    assert!(r.is_error(), "{r}");
    assert_eq!(
        r.evidence(),
        Some(&json!({"level":"measured","commanded":true,"observed":false})),
        "{r}"
    );
    assert_eq!(
        r.text(),
        "The relay's feedback contact disagrees with the command — measured: false (commanded \
         true)"
    );
    // It waited exactly the declared settle time before deciding.
    assert_eq!(
        dev.board().sim.now_ms(),
        1000 + u64::from(SimRelay::SETTLE_MS)
    );
}

/// A relay whose contacts follow the coil 10 ms late and that declares 20 ms.
struct Laggy {
    now: u64,
    coil: bool,
    contacts_before: bool,
    switched_at: u64,
}

impl Laggy {
    const LAG_MS: u64 = 10;
}

impl mcp_hal::ErrorType for Laggy {
    type Error = mcp_hal::ErrorKind;
}

impl mcp_hal::switch::Switch for Laggy {
    fn set(&mut self, on: bool) -> Result<(), Self::Error> {
        self.contacts_before = self.feedback()?.unwrap_or(false);
        self.coil = on;
        self.switched_at = self.now;
        Ok(())
    }
    fn feedback(&mut self) -> Result<Option<bool>, Self::Error> {
        Ok(Some(if self.now >= self.switched_at + Self::LAG_MS {
            self.coil
        } else {
            self.contacts_before
        }))
    }
    fn settle_ms(&self) -> u32 {
        20
    }
}

impl Wait for Laggy {
    fn delay(&mut self) -> impl DelayNs + '_ {
        Clock(&mut self.now)
    }
}

impl relay::HasRelay for Laggy {
    type Relay = Laggy;
    fn relay(&mut self) -> &mut Laggy {
        self
    }
}

/// A relay that settles within its 20 ms answers `measured` true in the call.
#[test]
fn a_relay_that_settles_within_20_ms_is_measured_in_the_call() {
    static RELAY: Tool<Laggy> = relay::set();
    let mut server: Server<'static, Laggy, Caps<4>> = Server::new(Config::new("laggy", "1"));
    server.register(&RELAY).unwrap();
    let mut dev = Client::new(
        server,
        Laggy {
            now: 500,
            coil: false,
            contacts_before: false,
            switched_at: 0,
        },
    );
    let r = dev.call("self.relay.set", json!({"on": true}));
    assert!(!started_a_task(&r), "{r}");
    assert!(!r.is_error(), "{r}");
    assert_eq!(r.structured(), Some(&json!({"value": true})));
    assert_eq!(
        r.evidence(),
        Some(&json!({"level":"measured","commanded":true,"observed":true}))
    );
    // Polled every 5 ms: the contacts closed at +10 ms, and the call returned then.
    assert_eq!(dev.board().now, 510);
}

/// A codec whose register takes 50 ms to show a write, and declares it.
struct LaggyCodec {
    now: u64,
    register: mcp_hal::Percent,
    pending: Option<(mcp_hal::Percent, u64)>,
}

impl LaggyCodec {
    const LAG_MS: u64 = 50;
    fn settle(&mut self) {
        if let Some((v, due)) = self.pending
            && self.now >= due
        {
            self.register = v;
            self.pending = None;
        }
    }
}

impl mcp_hal::ErrorType for LaggyCodec {
    type Error = mcp_hal::ErrorKind;
}

impl mcp_hal::audio::AudioCodec for LaggyCodec {
    fn volume_caps(&self) -> mcp_hal::audio::VolumeCaps {
        mcp_hal::audio::VolumeCaps {
            max: mcp_hal::Percent::MAX,
            read_back: true,
            settle_ms: 80,
            tolerance: 0,
        }
    }
    fn set_volume(&mut self, v: mcp_hal::Percent) -> Result<(), Self::Error> {
        self.settle();
        self.pending = Some((v, self.now + Self::LAG_MS));
        Ok(())
    }
    fn volume(&mut self) -> Result<mcp_hal::Percent, Self::Error> {
        self.settle();
        Ok(self.register)
    }
    fn set_mute(&mut self, _: bool) -> Result<(), Self::Error> {
        Ok(())
    }
}

impl Wait for LaggyCodec {
    fn delay(&mut self) -> impl DelayNs + '_ {
        Clock(&mut self.now)
    }
}

impl audio::HasCodec for LaggyCodec {
    type Codec = LaggyCodec;
    fn codec(&mut self) -> &mut LaggyCodec {
        self
    }
}

/// A codec that declares 80 ms (within the 200 ms budget) is confirmed by read-back in the call.
#[test]
fn a_codec_that_settles_within_the_budget_is_read_back_in_the_call() {
    static SET_VOLUME: Tool<LaggyCodec> = audio::set_volume();
    let mut server: Server<'static, LaggyCodec, Caps<4>> = Server::new(Config::new("laggy", "1"));
    server.register(&SET_VOLUME).unwrap();
    let mut dev = Client::new(
        server,
        LaggyCodec {
            now: 0,
            register: mcp_hal::Percent::new(70).unwrap(),
            pending: None,
        },
    );
    let r = dev.call("self.audio_speaker.set_volume", json!({"volume": 40}));
    assert!(!started_a_task(&r), "{r}");
    assert!(!r.is_error(), "{r}");
    assert_eq!(
        r.evidence(),
        Some(&json!({"level":"read_back","commanded":40,"observed":40}))
    );
    assert_eq!(dev.board().now, 50);
}

/// A relay and a codec that declare 2000 ms (beyond the 200 ms budget) still become tasks, at
/// once: nothing is waited in the call.
#[cfg(feature = "tasks")]
#[test]
fn slow_actions_beyond_the_budget_still_become_tasks() {
    let mut dev = sim(Board::new(Faults::only(Fault::Slow)));
    let r = dev.call("self.relay.set", json!({"on": true}));
    assert!(started_a_task(&r), "{r}");
    assert_eq!(
        r.evidence(),
        Some(&json!({"level":"applied","commanded":true})),
        "{r}"
    );
    let r = dev.call("self.audio_speaker.set_volume", json!({"volume": 40}));
    assert!(started_a_task(&r), "{r}");
    assert_eq!(
        r.evidence(),
        Some(&json!({"level":"applied","commanded":40}))
    );
    assert_eq!(
        dev.board().sim.now_ms(),
        0,
        "nothing was waited in the call"
    );
}

/// The budget is the board's: with 10 ms, the 20 ms stuck relay no longer fits a call. With
/// `tasks` it becomes a task at once; without, the call waits the 10 ms and fails unconfirmed.
#[test]
fn the_call_budget_is_the_boards_to_choose() {
    let mut board = Board::new(Faults::only(Fault::RelayStuck));
    board.budget_ms = 10;
    let mut dev = sim(board);
    let r = dev.call("self.relay.set", json!({"on": true}));
    if cfg!(feature = "tasks") {
        assert!(started_a_task(&r), "{r}");
        assert_eq!(
            r.evidence(),
            Some(&json!({"level":"applied","commanded":true}))
        );
        assert_eq!(dev.board().sim.now_ms(), 0);
    } else {
        unconfirmed_relay(&r, 10, 20);
        assert_eq!(dev.board().sim.now_ms(), 10);
    }
}

/// `r` is the failed call of a relay switched on whose feedback did not confirm it within the
/// board's `budget_ms` (the relay declaring `settle_ms`): `applied`, and a message saying so.
fn unconfirmed_relay(r: &Answer, budget_ms: u32, settle_ms: u32) {
    assert!(r.is_error(), "{r}");
    assert_eq!(
        r.evidence(),
        Some(&json!({"level":"applied","commanded":true}))
    );
    assert_eq!(
        r.text(),
        format!(
            "The relay was driven but its feedback did not confirm it within this device's \
             {budget_ms} ms call budget (it may take {settle_ms} ms; the feedback still \
             reads off) — applied, not verified (commanded true)"
        )
    );
}

/// Without `tasks`, an action longer than the budget cannot be a task: the call waits the whole
/// budget, then fails with `applied` evidence and a message saying it was not confirmed in time
/// and what it read.
#[cfg(not(feature = "tasks"))]
#[test]
fn without_tasks_a_slow_action_waits_the_budget_and_fails_unconfirmed() {
    let mut dev = sim(Board::new(Faults::only(Fault::Slow)));
    let r = dev.call("self.relay.set", json!({"on": true}));
    assert!(!started_a_task(&r), "{r}");
    unconfirmed_relay(&r, 200, 2000);
    assert_eq!(dev.board().sim.now_ms(), 200);
    let r = dev.call("self.audio_speaker.set_volume", json!({"volume": 40}));
    assert!(r.is_error(), "{r}");
    assert_eq!(
        r.evidence(),
        Some(&json!({"level":"applied","commanded":40}))
    );
    assert_eq!(
        r.text(),
        "The volume was written but not confirmed within this device's 200 ms call budget (the \
         codec may take 2000 ms; it still reads 70%) — applied, not verified (commanded 40)"
    );
    assert_eq!(dev.board().sim.now_ms(), 400);
    // What was issued still happens: 2 s after the commands, both agree.
    dev.board_mut().sim.set_time(2400);
    assert!(dev.board().sim.relay.contacts());
    assert_eq!(dev.board().sim.codec.stored_volume().get(), 40);
}

/// A nominal sim board answers at once: nothing to wait for when the feedback already agrees.
#[test]
fn agreement_at_once_waits_nothing() {
    let mut dev = sim(Board::new(Faults::NONE));
    let r = dev.call("self.relay.set", json!({"on": true}));
    assert_eq!(
        r.evidence(),
        Some(&json!({"level":"measured","commanded":true,"observed":true}))
    );
    let r = dev.call("self.audio_speaker.set_volume", json!({"volume": 40}));
    assert_eq!(
        r.evidence(),
        Some(&json!({"level":"read_back","commanded":40,"observed":40}))
    );
    assert_eq!(dev.board().sim.now_ms(), 0);
}
