//! The demo board's live resources on the simulator's engines: `device://sensors/temperature`
//! (°C), `device://sensors/battery` (%) and `device://buttons/main` (press count), registered on
//! every engine and published from the clock tick when mcp-hal's kits say a reading changed
//! (0.5 °C, 1 %, each press; at most one a second, one per 5 s, one per 200 ms).
//!
//! Over stdio a subscribed client gets a `notifications/resources/updated` line per change;
//! over HTTP mcp-host does the same from its timer (`Board::changed`) on each session's `GET`
//! stream. What moves the readings is the simulated hardware (`board.sim.thermometer`,
//! `board.sim.battery`, `board.sim.button`), which `--ui`'s `POST /sim/sensor` and
//! `POST /sim/button` drive (see `ui.rs`).

use mcp_core::Capacities;
use mcp_hal::sim::Faults;
use mcp_host::Engine;

use crate::board::Board;

/// The board at power-up, its readings already sampled once (at time 0) as the kits' baselines.
/// A reading moved before the first clock tick (`--ui`'s `POST /sim/sensor` can come before the
/// HTTP host's timer first runs, on a loaded machine) is then a change that gets published, not
/// the baseline the next changes are measured from.
pub fn power_up(faults: Faults, door_open: bool) -> Board {
    let mut board = Board::new(faults, door_open);
    board.poll_resources(0).for_each(drop);
    board
}

/// Registers the board's live resources on `engine`.
pub fn register<K: Capacities>(engine: &mut Engine<Board, K>) -> Result<(), String> {
    for r in Board::RESOURCES {
        engine
            .register_resource(r)
            .map_err(|r| format!("the resource {} does not fit the engine", r.uri()))?;
    }
    Ok(())
}

/// Samples the board's sensors and button at `now_ms` (its simulated time already set) and
/// publishes on `engine` what changed.
pub fn publish<K: Capacities>(board: &mut Board, engine: &mut Engine<Board, K>, now_ms: u64) {
    for uri in board.poll_resources(now_ms) {
        engine.publish(uri);
    }
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test

    use mcp_core::{Config, Principal};
    use serde_json::{Value, json};

    use super::*;

    type Engine = mcp_host::Engine<Board, mcp_host::HostCaps<16, 2>>;

    /// The stdio device's clock tick, as `Device::tick` does it: time, publish, poll.
    fn tick(engine: &mut Engine, board: &mut Board, now: u64) -> Vec<Value> {
        board.sim.set_time(now);
        publish(board, engine, now);
        let mut out = [0u8; 1024];
        let mut msgs = Vec::new();
        loop {
            let n = engine.poll(now, board, &mut out);
            if n == 0 {
                return msgs;
            }
            msgs.push(serde_json::from_slice(&out[..n]).unwrap());
        }
    }

    fn ask(engine: &mut Engine, board: &mut Board, msg: Value) -> Value {
        let mut out = [0u8; 2048];
        let msg = msg.to_string();
        let n = engine
            .handle(msg.as_bytes(), Principal::Model, board, &mut out)
            .unwrap()
            .len;
        serde_json::from_slice(&out[..n]).unwrap()
    }

    #[test]
    fn a_reading_moved_before_the_first_tick_is_published() {
        // As the API moves it: right after start, before any clock tick.
        let mut board = power_up(Faults::NONE, false);
        board.sim.thermometer.set_millicelsius(30_000);
        board.sim.set_time(20);
        let uris: Vec<_> = board.poll_resources(20).collect();
        assert_eq!(uris, ["device://sensors/temperature"]);
        // A board without its baseline takes that first sample as the baseline: the move is lost.
        let mut bare = Board::new(Faults::NONE, false);
        bare.sim.thermometer.set_millicelsius(30_000);
        bare.sim.set_time(20);
        assert_eq!(bare.poll_resources(20).count(), 0);
    }

    #[test]
    fn a_subscriber_hears_of_each_change_once() {
        let mut engine = Engine::new(Config::new("device-sim", "1"));
        engine.register_all(Board::TOOLS).unwrap();
        register(&mut engine).unwrap();
        let mut board = Board::new(Faults::NONE, false);
        assert!(tick(&mut engine, &mut board, 0).is_empty());
        ask(
            &mut engine,
            &mut board,
            json!({"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{}}}),
        );
        for uri in ["device://sensors/temperature", "device://buttons/main"] {
            let r = ask(
                &mut engine,
                &mut board,
                json!({"jsonrpc":"2.0","id":2,"method":"resources/subscribe","params":{"uri":uri}}),
            );
            assert_eq!(r["result"], json!({}));
        }
        // A noisy thermometer at 21.5 °C, ticks every 20 ms (the stdio loop's): nothing.
        board.sim.thermometer.set_noise(150);
        let mut notes = Vec::new();
        for now in (20..=10_000).step_by(20) {
            if now == 5_000 {
                board.sim.thermometer.set_millicelsius(31_500);
                board.sim.battery.set_millipercent(15_000); // not subscribed
                board.sim.button.press(now);
            }
            for m in tick(&mut engine, &mut board, now) {
                notes.push((now, m["params"]["uri"].as_str().unwrap().to_owned()));
                assert_eq!(m["method"], "notifications/resources/updated");
            }
        }
        assert_eq!(
            notes,
            [
                (5_000, "device://sensors/temperature".to_owned()),
                (5_020, "device://buttons/main".to_owned())
            ]
        );
        let read = ask(
            &mut engine,
            &mut board,
            json!({"jsonrpc":"2.0","id":3,"method":"resources/read","params":{"uri":"device://buttons/main"}}),
        );
        assert_eq!(read["result"]["contents"][0]["text"], r#"{"presses":1}"#);
    }
}
