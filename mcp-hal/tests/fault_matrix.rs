//! Every tool kit × every injected fault, through the wire protocol: the exact `isError`,
//! evidence level and commanded/observed values of the answer, and, for actions that finish
//! later, of the final task state. No cell is skipped.
//!
//! The matrix and the other checks through the wire to a whole board run on `sim::DemoBoard`,
//! which exists only with the feature `tasks` (its tool set has the long-running
//! `self.motor.move_to`): they are built with `tasks` only. The kits over test devices of their
//! own (a capped codec, a quantized codec, a coarse backlight) are checked in every build.
#![allow(
    clippy::unwrap_used,
    clippy::panic,
    clippy::indexing_slicing,
    reason = "a test"
)]

#[cfg(feature = "tasks")]
use mcp_core::Level::{Applied, Measured, Scheduled, Unknown};
use mcp_core::Level::{NotApplied, ReadBack};
#[cfg(feature = "tasks")]
use mcp_core::Principal;
use mcp_core::testing::{Answer, Client};
use mcp_core::{Caps, Config, Level, Server, Tool};
use mcp_hal::audio::AudioCodec;
use mcp_hal::kits::{DelayNs, Wait, audio, screen};
#[cfg(feature = "tasks")]
use mcp_hal::sim::{DemoBoard, Fault, SimRelay};
use mcp_hal::sim::{Faults, SimCodec};
use serde_json::{Value, json};

/// The demo board: the sim devices behind every kit, with the door-sensor interlock.
#[cfg(feature = "tasks")]
type Board = DemoBoard;

/// A person's client of the demo board under `faults`, its clock the sim's, in 50 ms steps.
#[cfg(feature = "tasks")]
type Rig = Client<'static, Board, Caps<16>>;

#[cfg(feature = "tasks")]
fn demo(faults: Faults) -> Rig {
    // Plain calls of long-running kits answer at once here (the task form is what is checked);
    // `Config::hold_answer_ms` holds them back by default.
    let mut server = Server::new(Config::new("matrix", "1").hold_answer(0));
    server.register_all(Board::TOOLS).unwrap();
    Client::new(server, Board::new(faults, false))
        .with_principal(Principal::User)
        .with_main_loop(|_, board, now| board.sim.set_time(now))
        .with_step(50)
}

/// What a result says: isError, evidence level, commanded, observed.
#[derive(Debug, PartialEq)]
struct Cell {
    error: bool,
    level: Option<Level>,
    commanded: Value,
    observed: Value,
}

fn cell(answer: &Answer) -> Cell {
    let evidence = answer.evidence().cloned().unwrap_or_default();
    c(
        answer.is_error(),
        answer.level(),
        evidence["commanded"].clone(),
        evidence["observed"].clone(),
    )
}

fn c(error: bool, level: Option<Level>, commanded: Value, observed: Value) -> Cell {
    Cell {
        error,
        level,
        commanded,
        observed,
    }
}

const N: Value = Value::Null;

/// The final state of a task started by a plain call, from the status tool.
#[cfg(feature = "tasks")]
#[derive(Debug, PartialEq)]
struct Final {
    status: &'static str,
    level: &'static str,
    commanded: Value,
    observed: Value,
    stop: Value,
}

#[cfg(feature = "tasks")]
fn final_state(rig: &mut Rig, started: &Answer) -> Option<Final> {
    let task = started.task_id()?;
    rig.advance(20_000);
    let s = rig.call("self.tasks.get_status", json!({"task_id": task}));
    let s = s.structured().unwrap();
    let status = match s["status"].as_str().unwrap() {
        "completed" => "completed",
        "failed" => "failed",
        other => panic!("task still {other}: {s}"),
    };
    let level = match s["evidence"]["level"].as_str().unwrap() {
        "read_back" => "read_back",
        "measured" => "measured",
        other => panic!("final level {other}"),
    };
    Some(Final {
        status,
        level,
        commanded: s["evidence"]["commanded"].clone(),
        observed: s["evidence"]["observed"].clone(),
        stop: s["stop"].clone(),
    })
}

#[cfg(feature = "tasks")]
fn f(
    status: &'static str,
    level: &'static str,
    commanded: Value,
    observed: Value,
    stop: Value,
) -> Option<Final> {
    Some(Final {
        status,
        level,
        commanded,
        observed,
        stop,
    })
}

/// Runs one kit under one fault and checks the answer, the final task state, and what happened
/// at the simulated hardware.
#[cfg(feature = "tasks")]
fn check(fault: Option<Fault>, kit: &str) {
    let faults = fault.map_or(Faults::NONE, Faults::only);
    let mut rig = demo(faults);
    let name = fault.map_or("none", Fault::name);
    let ctx = format!("fault {name}, kit {kit}");
    match kit {
        "set_volume" => {
            let r = rig.call("self.audio_speaker.set_volume", json!({"volume": 80}));
            let expected = match fault {
                // 80 % is one of the quantized codec's 64 levels.
                None
                | Some(
                    Fault::RelayStuck
                    | Fault::MotorStall
                    | Fault::QueueFull
                    | Fault::CodecQuantized
                    | Fault::SensorNack,
                ) => c(false, Some(ReadBack), json!(80), json!(80)),
                // A failure says what was commanded and how much took effect:
                // a NACK is refused by the codec, a timeout leaves the state unknown.
                Some(Fault::CodecNack) => c(true, Some(NotApplied), json!(80), N),
                Some(Fault::Timeout) => c(true, Some(Unknown), json!(80), N),
                Some(Fault::CodecClamp) => c(true, Some(ReadBack), json!(80), json!(63)),
                Some(Fault::ReadbackMismatch) => c(true, Some(ReadBack), json!(80), json!(87)),
                Some(Fault::Slow) => c(false, Some(Applied), json!(80), N),
            };
            assert_eq!(cell(&r), expected, "{ctx}: {r}");
            let wrote = !matches!(fault, Some(Fault::CodecNack | Fault::Timeout));
            assert_eq!(
                rig.board().sim.codec.writes(),
                u32::from(wrote),
                "{ctx}: codec writes"
            );
            let fin = match fault {
                Some(Fault::Slow) => f("completed", "read_back", json!(80), json!(80), N),
                _ => None,
            };
            assert_eq!(final_state(&mut rig, &r), fin, "{ctx}: final");
        }
        "set_brightness" => {
            let r = rig.call("self.screen.set_brightness", json!({"brightness": 30}));
            assert_eq!(
                cell(&r),
                c(false, Some(Applied), json!(30), N),
                "{ctx}: {r}"
            );
            assert_eq!(rig.board().sim.backlight.level().get(), 30, "{ctx}");
        }
        "get_device_status" => {
            let r = rig.call("self.get_device_status", json!({}));
            let failed = matches!(fault, Some(Fault::CodecNack | Fault::Timeout));
            assert_eq!(cell(&r), c(failed, None, N, N), "{ctx}: {r}");
            if !failed {
                let volume = if fault == Some(Fault::ReadbackMismatch) {
                    77
                } else {
                    70
                };
                assert_eq!(
                    r.structured().unwrap(),
                    &json!({
                        "audio_speaker": {"volume": volume},
                        "screen": {"brightness": 80, "theme": "light"},
                        "relay": {"on": false},
                        "motor": {"position": 0, "moving": false}
                    }),
                    "{ctx}"
                );
            }
        }
        "reboot" => {
            let r = rig.call("self.reboot", json!({}));
            let refused = fault == Some(Fault::QueueFull);
            let expected = if refused {
                c(true, Some(NotApplied), N, N)
            } else {
                c(false, Some(Scheduled), N, N)
            };
            assert_eq!(cell(&r), expected, "{ctx}: {r}");
            assert_eq!(
                rig.board().sim.system.scheduled_at().is_some(),
                !refused,
                "{ctx}"
            );
        }
        "relay.set" => {
            let before = rig.board().sim.now_ms();
            let r = rig.call("self.relay.set", json!({"on": true}));
            let expected = match fault {
                // Stuck, 20 ms declared: waited out in the call, then a failure naming both.
                Some(Fault::RelayStuck) => c(true, Some(Measured), json!(true), json!(false)),
                // 2000 ms declared, beyond the 200 ms call budget: a task.
                Some(Fault::Slow) => c(false, Some(Applied), json!(true), N),
                _ => c(false, Some(Measured), json!(true), json!(true)),
            };
            assert_eq!(cell(&r), expected, "{ctx}: {r}");
            assert!(rig.board().sim.relay.coil(), "{ctx}: the coil is driven");
            let waited = match fault {
                Some(Fault::RelayStuck) => u64::from(SimRelay::SETTLE_MS),
                _ => 0,
            };
            assert_eq!(rig.board().sim.now_ms() - before, waited, "{ctx}: waited");
            let fin = match fault {
                Some(Fault::Slow) => f("completed", "measured", json!(true), json!(true), N),
                _ => None,
            };
            assert_eq!(final_state(&mut rig, &r), fin, "{ctx}: final");
        }
        "motor.move_to" => {
            let r = rig.call("self.motor.move_to", json!({"position": 500}));
            let refused = fault == Some(Fault::QueueFull);
            let expected = if refused {
                c(true, Some(NotApplied), json!(500), N)
            } else {
                c(false, Some(Scheduled), json!(500), N)
            };
            assert_eq!(cell(&r), expected, "{ctx}: {r}");
            let fin = match fault {
                Some(Fault::QueueFull) => None,
                Some(Fault::MotorStall) => f(
                    "failed",
                    "measured",
                    json!(500),
                    json!(200),
                    json!("issued"),
                ),
                _ => f("completed", "measured", json!(500), json!(500), N),
            };
            assert_eq!(final_state(&mut rig, &r), fin, "{ctx}: final");
            assert_eq!(
                rig.board().sim.motor.stops(),
                u32::from(fault == Some(Fault::MotorStall)),
                "{ctx}: safe-stops"
            );
            assert_eq!(
                rig.board().sim.motor.starts(),
                u32::from(!refused),
                "{ctx}: starts"
            );
        }
        "fan.set_speed" => {
            // The setpoint kit: 40 % is 1200 rpm, ±30 rpm, measured by the tachometer.
            let r = rig.call("self.fan.set_speed", json!({"percent": 40}));
            let expected = match fault {
                Some(Fault::MotorStall) => c(true, Some(Measured), json!(1200), json!(0)),
                // 2000 ms declared, beyond the 200 ms call budget: a task.
                Some(Fault::Slow) => c(false, Some(Applied), json!(1200), N),
                _ => c(false, Some(Measured), json!(1200), json!(1200)),
            };
            assert_eq!(cell(&r), expected, "{ctx}: {r}");
            if fault == Some(Fault::MotorStall) {
                assert!(
                    r.text()
                        .starts_with("The fan does not reach the commanded speed — "),
                    "{ctx}: the fan's words: {r}"
                );
            }
            assert_eq!(rig.board().sim.fan.writes(), 1, "{ctx}: PWM writes");
            let fin = match fault {
                Some(Fault::Slow) => f("completed", "measured", json!(1200), json!(1200), N),
                _ => None,
            };
            assert_eq!(final_state(&mut rig, &r), fin, "{ctx}: final");
        }
        other => panic!("unknown kit {other}"),
    }
}

#[cfg(feature = "tasks")]
const KITS: [&str; 7] = [
    "set_volume",
    "set_brightness",
    "get_device_status",
    "reboot",
    "relay.set",
    "motor.move_to",
    "fan.set_speed",
];

#[cfg(feature = "tasks")]
#[test]
fn every_kit_under_every_fault() {
    let mut cells = 0;
    for fault in core::iter::once(None).chain(Fault::ALL.into_iter().map(Some)) {
        for kit in KITS {
            check(fault, kit);
            cells += 1;
        }
    }
    assert_eq!(cells, 7 * 11);
}

#[cfg(feature = "tasks")]
#[test]
fn the_interlock_refuses_by_name_and_drives_nothing() {
    let mut rig = demo(Faults::NONE);
    rig.board_mut().door_open = true;
    let r = rig.call("self.relay.set", json!({"on": true}));
    assert!(r.is_error());
    assert_eq!(
        r.text(),
        "Refused by interlock \"door-closed\": the door sensor reads open; the relay was not \
         switched — not applied (commanded true)"
    );
    assert_eq!(rig.board().sim.relay.writes(), 0);
    // Switching off is allowed.
    let r = rig.call("self.relay.set", json!({"on": false}));
    assert!(!r.is_error());
    assert_eq!(rig.board().sim.relay.writes(), 1);
}

/// A codec that honestly declares a 63 % ceiling.
struct Capped(SimCodec);

impl mcp_hal::ErrorType for Capped {
    type Error = mcp_hal::ErrorKind;
}

impl AudioCodec for Capped {
    fn volume_caps(&self) -> mcp_hal::audio::VolumeCaps {
        mcp_hal::audio::VolumeCaps {
            max: mcp_hal::Percent::new(63).unwrap(),
            ..self.0.volume_caps()
        }
    }
    fn set_volume(&mut self, v: mcp_hal::Percent) -> Result<(), Self::Error> {
        self.0.set_volume(v)
    }
    fn volume(&mut self) -> Result<mcp_hal::Percent, Self::Error> {
        self.0.volume()
    }
    fn set_mute(&mut self, mute: bool) -> Result<(), Self::Error> {
        self.0.set_mute(mute)
    }
}

/// The delay of a test device that declares no settle time: never used.
struct NeverWaits;

impl DelayNs for NeverWaits {
    fn delay_ns(&mut self, _: u32) {
        panic!("a device without a settle time was waited for");
    }
}

/// A board that is only its codec, which declares no settle time.
struct Alone<C>(C);

impl<C> Wait for Alone<C> {
    fn delay(&mut self) -> impl DelayNs + '_ {
        NeverWaits
    }
}

impl<C: AudioCodec> audio::HasCodec for Alone<C> {
    type Codec = C;
    fn codec(&mut self) -> &mut C {
        &mut self.0
    }
}

impl<C: AudioCodec + 'static> Alone<C> {
    const TOOLS: &'static [&'static Tool<Self>] = &[&audio::set_volume()];

    /// A client of the volume kit on `codec` alone.
    fn client(codec: C) -> Client<'static, Self, Caps<2>> {
        let mut server = Server::new(Config::new("codec", "1"));
        server.register_all(Self::TOOLS).unwrap();
        Client::new(server, Alone(codec))
    }
}

#[test]
fn a_codec_that_declares_its_ceiling_refuses_instead_of_pretending() {
    let mut dev = Alone::client(Capped(SimCodec::new(Faults::NONE)));
    let r = dev.call("self.audio_speaker.set_volume", json!({"volume": 80}));
    assert_eq!(cell(&r), c(true, Some(NotApplied), json!(80), N));
    assert_eq!(
        r.text(),
        "This codec's maximum volume is 63%; nothing was changed — not applied (commanded 80)"
    );
    assert_eq!(dev.board().0.0.writes(), 0);
    let r = dev.call("self.audio_speaker.set_volume", json!({"volume": 63}));
    assert_eq!(cell(&r), c(false, Some(ReadBack), json!(63), json!(63)));
    assert_eq!(dev.board_mut().0.volume().unwrap().get(), 63);
}

#[cfg(feature = "tasks")]
#[test]
fn a_motor_task_runs_to_the_encoder_confirmed_position() {
    let mut rig = demo(Faults::NONE);
    rig.initialize("2025-11-25");
    let created = rig.call_with(
        "self.motor.move_to",
        json!({"position": 400}),
        json!({"task": {"ttl": 60000}, "_meta": {"progressToken": 7}}),
    );
    assert_eq!(created.result().unwrap()["task"]["status"], "working");
    let task = created.task_id().unwrap();
    // The client waits for the result (parked), and receives progress meanwhile.
    let parked = rig.request("tasks/result", json!({"taskId": task}));
    assert!(parked.is_empty());
    let waiter = &parked.sent.unwrap()["id"];
    let mut progress = Vec::new();
    let mut result = None;
    for _ in 0..100 {
        for m in rig.advance(50) {
            let m = m.message;
            match m["method"].as_str() {
                Some("notifications/progress") => {
                    assert_eq!(m["params"]["progressToken"], 7);
                    assert_eq!(m["params"]["total"], 400);
                    progress.push(m["params"]["progress"].as_i64().unwrap());
                }
                Some("notifications/tasks/status") => {
                    assert_eq!(m["params"]["status"], "completed")
                }
                _ => {
                    assert_eq!(m["id"], *waiter);
                    result = Some(m);
                }
            }
        }
        if result.is_some() {
            break;
        }
    }
    // 250 units/s, 50 ms steps: 12.5 units per step, a notification per change.
    assert!(progress.len() >= 30, "{progress:?}");
    assert!(
        progress.windows(2).all(|w| w[0] < w[1]),
        "progress only increases: {progress:?}"
    );
    let result = result.expect("the task finished");
    assert_eq!(result["result"].get("isError"), None);
    assert_eq!(
        result["result"]["_meta"]["io.github.mcu-mcp/evidence"],
        json!({"level":"measured","commanded":400,"observed":400,"tolerance":2,"unit":"steps"})
    );
    assert_eq!(
        result["result"]["_meta"]["io.modelcontextprotocol/related-task"]["taskId"],
        task
    );
    assert_eq!(rig.board().sim.motor.motion().position, 400);
    assert_eq!(rig.board().sim.motor.stops(), 0);
}

#[cfg(feature = "tasks")]
#[test]
fn cancelling_a_motor_task_issues_the_safe_stop_in_both_forms() {
    let motion = |position, moving| mcp_hal::motor::Motion {
        position,
        moving,
        stalled: false,
    };
    for augmented in [true, false] {
        let mut rig = demo(Faults::NONE);
        let extra = if augmented {
            json!({"task": {}})
        } else {
            json!({})
        };
        let r = rig.call_with("self.motor.move_to", json!({"position": 1000}), extra);
        let task = r.task_id().unwrap();
        rig.advance(1000);
        // One second at 250 units/s.
        assert_eq!(rig.board().sim.motor.motion(), motion(250, true));
        let c = rig.request("tasks/cancel", json!({"taskId": task}));
        let c = c.result().unwrap();
        assert_eq!(c["status"], "cancelled", "augmented {augmented}");
        assert_eq!(c["statusMessage"], "Cancelled by request; safe-stop issued");
        assert_eq!(rig.board().sim.motor.stops(), 1);
        rig.advance(1000);
        assert_eq!(rig.board().sim.motor.motion(), motion(250, false));
        let s = rig.call("self.tasks.get_status", json!({"task_id": task}));
        assert_eq!(s.structured().unwrap()["status"], "cancelled");
        assert_eq!(s.structured().unwrap()["stop"], "issued");
        let again = rig.request("tasks/cancel", json!({"taskId": task}));
        assert_eq!(again.error_code(), Some(-32602));
        assert_eq!(
            rig.board().sim.motor.stops(),
            1,
            "a finished task is not stopped again"
        );
    }
}

/// A codec with a 64-step volume register, as many are: an 8-bit gain code of which the chip
/// ignores the two low bits. It stores the step at or below the command and reads the step back
/// as the nearest whole percent: 40 % reads back as 39 %.
struct Quantized {
    code: u8,
}

impl Quantized {
    fn code(p: mcp_hal::Percent) -> u8 {
        // round(p * 255 / 100), then the chip drops the low two bits: 64 steps.
        ((u32::from(p.get()) * 255 * 2 + 100) / 200) as u8 & !3
    }
    fn percent(code: u8) -> mcp_hal::Percent {
        mcp_hal::Percent::new(((u32::from(code) * 100 * 2 + 255) / 510) as u8).unwrap()
    }
}

impl mcp_hal::ErrorType for Quantized {
    type Error = mcp_hal::ErrorKind;
}

impl AudioCodec for Quantized {
    fn volume_caps(&self) -> mcp_hal::audio::VolumeCaps {
        mcp_hal::audio::VolumeCaps {
            max: mcp_hal::Percent::MAX,
            read_back: true,
            settle_ms: 0,
            tolerance: mcp_hal::audio::VolumeCaps::tolerance_for_steps(64),
        }
    }
    fn set_volume(&mut self, v: mcp_hal::Percent) -> Result<(), Self::Error> {
        self.code = Self::code(v);
        Ok(())
    }
    fn volume(&mut self) -> Result<mcp_hal::Percent, Self::Error> {
        Ok(Self::percent(self.code))
    }
    fn set_mute(&mut self, _: bool) -> Result<(), Self::Error> {
        Ok(())
    }
}

/// A read-back one step off is the chip's resolution, not a failure. Every one of
/// the 101 percentages succeeds with `read_back` evidence naming the observed step.
#[test]
fn a_quantized_codec_confirms_every_percentage_within_its_step() {
    let mut dev = Alone::client(Quantized { code: 0 });
    let mut failed = Vec::new();
    for v in 0..=100i64 {
        let r = dev.call("self.audio_speaker.set_volume", json!({ "volume": v }));
        let observed = Quantized::percent(Quantized::code(mcp_hal::Percent::new(v as u8).unwrap()));
        if r.is_error() {
            failed.push(v);
            continue;
        }
        assert_eq!(
            cell(&r),
            c(false, Some(ReadBack), json!(v), json!(observed.get())),
            "{v}: {r}"
        );
        assert_eq!(r.evidence().unwrap()["tolerance"], 2, "{v}: {r}");
        // (The commanded value is said when the read-back differs from it.)
        let text = match i64::from(observed.get()) == v {
            true => format!("true — read back: {v} (within ±2)"),
            false => format!(
                "true — read back: {} (commanded {v}, within ±2)",
                observed.get()
            ),
        };
        assert_eq!(r.text(), text, "{v}: {r}");
    }
    assert!(
        failed.is_empty(),
        "{} of 101 failed: {failed:?}",
        failed.len()
    );
}

/// The sim's `codec-quantized` fault through the wire: every percentage is confirmed with the
/// observed step and the tolerance, and the status tool reports the same step.
#[cfg(feature = "tasks")]
#[test]
fn the_sim_quantized_codec_confirms_every_percentage_and_the_status_agrees() {
    let mut rig = demo(Faults::only(Fault::CodecQuantized));
    for v in 0..=100i64 {
        let r = rig.call("self.audio_speaker.set_volume", json!({"volume": v}));
        let observed = i64::from(rig.board().sim.codec.stored_volume().get());
        assert!((observed - v).abs() <= 2, "{v} stored as {observed}");
        assert_eq!(
            cell(&r),
            c(false, Some(ReadBack), json!(v), json!(observed)),
            "{v}: {r}"
        );
        assert_eq!(r.evidence().unwrap()["tolerance"], 2, "{v}: {r}");
        let s = rig.call("self.get_device_status", json!({}));
        assert_eq!(
            s.structured().unwrap()["audio_speaker"]["volume"],
            observed,
            "{v}: {s}"
        );
    }
    let r = rig.call("self.audio_speaker.set_volume", json!({"volume": 40}));
    assert_eq!(
        r.evidence(),
        Some(&json!({"level":"read_back","commanded":40,"observed":39,"tolerance":2}))
    );
    assert_eq!(r.text(), "true — read back: 39 (commanded 40, within ±2)");
}

/// A backlight whose LED driver reports its level in 32 current steps (the nearest step to the
/// command), read back as the nearest percent.
struct CoarseBacklight {
    step: u32,
}

impl mcp_hal::ErrorType for CoarseBacklight {
    type Error = mcp_hal::ErrorKind;
}

impl mcp_hal::backlight::Backlight for CoarseBacklight {
    fn set_brightness(&mut self, level: mcp_hal::Percent) -> Result<(), Self::Error> {
        self.step = (u32::from(level.get()) * 31 * 2 + 100) / 200;
        Ok(())
    }
    fn brightness(&mut self) -> Result<Option<mcp_hal::Percent>, Self::Error> {
        Ok(mcp_hal::Percent::new(
            ((self.step * 100 * 2 + 31) / 62) as u8,
        ))
    }
    fn tolerance(&self) -> u8 {
        mcp_hal::audio::VolumeCaps::tolerance_for_steps(32)
    }
}

impl screen::HasBacklight for CoarseBacklight {
    type Backlight = CoarseBacklight;
    fn backlight(&mut self) -> &mut CoarseBacklight {
        self
    }
}

/// The screen kit compares a readable backlight within its declared resolution, and carries it.
#[test]
fn a_coarse_readable_backlight_confirms_every_percentage_within_its_step() {
    static COARSE: Tool<CoarseBacklight> = screen::set_brightness();
    let mut server: Server<'static, CoarseBacklight, Caps<2>> =
        Server::new(Config::new("coarse", "1"));
    server.register(&COARSE).unwrap();
    let mut dev = Client::new(server, CoarseBacklight { step: 0 });
    let mut off = 0;
    for v in 0..=100i64 {
        let r = dev.call("self.screen.set_brightness", json!({"brightness": v}));
        let observed = r.evidence().unwrap()["observed"].as_i64().unwrap();
        off += usize::from(observed != v);
        assert_eq!(
            cell(&r),
            c(false, Some(ReadBack), json!(v), json!(observed)),
            "{v}: {r}"
        );
        assert_eq!(r.evidence().unwrap()["tolerance"], 3, "{v}: {r}");
    }
    assert!(off > 50, "most percentages read back a step off: {off}");
}

/// A stalled move (a failure after a start) issues the actuator's safe-stop, once,
/// and every form a client can see the outcome in says so: the plain call's status tool, the
/// 2025-11-25 `tasks/get` status message, `notifications/tasks/status` and `tasks/result`. (The
/// 2026-07-28 extension form needs mcp-core's `modern` feature, which this crate does not turn
/// on: examples/device-sim/tests/stdio.rs checks it.)
#[cfg(feature = "tasks")]
#[test]
fn a_stalled_move_says_the_safe_stop_was_issued_in_every_form() {
    const NOTE: &str = "safe-stop issued";
    const STALLED: &str = "The actuator stopped before reaching its target";
    const STALL_SAID: &str = "measured: 200 steps (commanded 500 steps, not within ±2 steps)";
    let stall_evidence =
        json!({"level":"measured","commanded":500,"observed":200,"tolerance":2,"unit":"steps"});

    // Plain call (a client without task support): the status tool.
    let mut rig = demo(Faults::only(Fault::MotorStall));
    let r = rig.call("self.motor.move_to", json!({"position": 500}));
    let task = r.task_id().unwrap();
    rig.advance(5000);
    assert_eq!(rig.board().sim.motor.stops(), 1, "plain: one safe-stop");
    let s = rig.call("self.tasks.get_status", json!({"task_id": task}));
    assert_eq!(
        s.text(),
        format!("self.motor.move_to failed: {STALLED} — {STALL_SAID}; {NOTE}"),
        "plain: the first text says the failure, its evidence and the safe-stop: {s}"
    );
    let s = s.structured().unwrap();
    assert_eq!(s["status"], "failed", "{s}");
    assert_eq!(s["stop"], "issued", "{s}");
    assert_eq!(s["evidence"], stall_evidence, "{s}");
    assert_eq!(
        s["error"],
        format!("{STALLED}; {NOTE}").as_str(),
        "plain: the error a model reads names the safe-stop: {s}"
    );

    // 2025-11-25: task-augmented call, parked tasks/result, status notification, tasks/get.
    let mut rig = demo(Faults::only(Fault::MotorStall));
    rig.initialize("2025-11-25");
    let created = rig.call_with(
        "self.motor.move_to",
        json!({"position": 500}),
        json!({"task": {}}),
    );
    let task = created.task_id().unwrap();
    assert!(
        rig.request("tasks/result", json!({"taskId": task}))
            .is_empty()
    );
    let mut status_note = None;
    let mut result = None;
    for _ in 0..200 {
        for m in rig.advance(50) {
            let m = m.message;
            match m["method"].as_str() {
                Some("notifications/tasks/status") => status_note = Some(m),
                Some(_) => {}
                None => result = Some(m),
            }
        }
        if result.is_some() {
            break;
        }
    }
    assert_eq!(
        rig.board().sim.motor.stops(),
        1,
        "2025-11-25: one safe-stop"
    );
    let note = status_note.expect("a status notification");
    assert_eq!(note["params"]["status"], "failed");
    assert!(
        note["params"]["statusMessage"]
            .as_str()
            .unwrap()
            .ends_with(NOTE),
        "{note}"
    );
    let result = result.expect("the parked tasks/result answered");
    assert_eq!(result["result"]["isError"], true, "{result}");
    assert_eq!(
        result["result"]["content"][0]["text"],
        format!("{STALLED} — {STALL_SAID}; {NOTE}").as_str()
    );
    assert_eq!(
        result["result"]["_meta"]["io.github.mcu-mcp/evidence"],
        stall_evidence
    );
    let g = rig.request("tasks/get", json!({"taskId": task})).message;
    assert_eq!(g["result"]["status"], "failed");
    assert_eq!(
        g["result"]["statusMessage"],
        format!("{STALLED} — {STALL_SAID}; {NOTE}").as_str()
    );
    assert_eq!(rig.board().sim.motor.stops(), 1, "never stopped twice");
}
