//! The board's tools on the host, through the engine the firmware runs (`custom_board::engine`),
//! with `mcp_core::testing::Client` playing the MCP client: no QEMU, no JSON written by hand.
//!
//! ```sh
//! cd examples/custom-board
//! cargo test --target "$(rustc -vV | sed -n 's/^host: //p')"
//! ```
//!
//! The bench parts stand in for the amplifier and the relay as in the firmware; the host's delay
//! counts polls (`bench::PollDelay`), since it has no `mtime`.
#![allow(clippy::unwrap_used, reason = "a test")]

use custom_board::bench::{self, BenchBoard, PollDelay};
use custom_board::{GARAGE_DOOR, engine, run};
use mcp_core::testing::Client;
use serde_json::json;

/// The firmware's board on the bench parts, with (`fitted`) or without its amplifier.
fn board(fitted: bool) -> BenchBoard<PollDelay> {
    bench::board(fitted, PollDelay).unwrap()
}

#[test]
fn the_amplifier_reads_back_its_64_levels() {
    let mut client = Client::new_async(engine().unwrap(), board(true), run);
    client.initialize("2024-11-05");
    let names: Vec<_> = client
        .list_tools()
        .into_iter()
        .map(|t| t["name"].clone())
        .collect();
    assert_eq!(
        names,
        [
            "self.audio_speaker.set_volume",
            "self.audio_speaker.set_mute",
            GARAGE_DOOR
        ]
    );
    // 40 % is register 102; the chip keeps 100, which reads back as 39 %: within its step.
    let r = client.call("self.audio_speaker.set_volume", json!({"volume": 40}));
    assert!(!r.is_error(), "{r}");
    assert_eq!(r.text(), "true — read back: 39 (commanded 40, within ±2)");
    assert_eq!(
        r.evidence(),
        Some(&json!({"level": "read_back", "commanded": 40, "observed": 39, "tolerance": 2}))
    );
    // The schema is enforced before the driver is touched (2024-11-05: a JSON-RPC error).
    let r = client.call("self.audio_speaker.set_volume", json!({"volume": 140}));
    assert_eq!(r.error_code(), Some(-32602), "{r}");
}

#[test]
fn without_its_amplifier_the_board_names_it_and_does_not_hang() {
    let mut client = Client::new_async(engine().unwrap(), board(false), run);
    let r = client.call("self.audio_speaker.set_mute", json!({"mute": true}));
    assert!(r.is_error(), "{r}");
    assert_eq!(
        r.text(),
        "The amplifier did not answer on I2C in time; the state is unknown — state unknown \
         (commanded true)"
    );
    assert_eq!(
        r.evidence(),
        Some(&json!({"level": "unknown", "commanded": true}))
    );
}

#[test]
fn the_garage_door_opens_only_after_a_persons_yes() {
    let mut client = Client::new_async(engine().unwrap(), board(true), run).with_elicitation();
    // Asking first makes the renamed relay kit destructive (the kit alone is not).
    let listed = client.list_tools();
    let door = listed.iter().find(|t| t["name"] == GARAGE_DOOR).unwrap();
    assert_eq!(door["annotations"]["destructiveHint"], true);

    // A client that can ask its user (2025-06-18, elicitation): the question, then the answer.
    client.initialize("2025-06-18");
    let asked = client.call(GARAGE_DOOR, json!({"on": true}));
    assert!(
        asked
            .question()
            .unwrap()
            .starts_with("Open the garage door? (asked by ")
    );
    assert!(client.decline(&asked).text().starts_with("Not confirmed"));
    assert!(!contacts(), "a no leaves the door shut");
    let asked = client.call(GARAGE_DOOR, json!({"on": true}));
    let opened = client.accept(&asked);
    assert_eq!(
        opened.evidence(),
        Some(&json!({"level": "measured", "commanded": true, "observed": true}))
    );
    assert!(contacts());
    // Closing asks nobody.
    let closed = client.call(GARAGE_DOOR, json!({"on": false}));
    assert_eq!(closed.text(), "true — measured: false");

    // A xiaozhi backend (2024-11-05, no elicitation): the device's button answers, and the
    // call's answer waits for it.
    client.initialize("2024-11-05");
    let held = client.call(GARAGE_DOOR, json!({"on": true}));
    assert!(held.deferred && !contacts());
    let pressed = client.press(true);
    assert_eq!(pressed.message["id"], held.sent.unwrap()["id"]);
    assert!(!pressed.is_error(), "{pressed}");
    assert!(contacts());
}

/// The bench relay's contacts (one per process: only the test above switches them).
fn contacts() -> bool {
    critical_section::with(|cs| custom_board::bench::CONTACTS.borrow(cs).get())
}
