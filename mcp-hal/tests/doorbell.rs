//! The doorbell rule in the library (`kits::button::press`): a press of the device's button
//! answers the question the device shows, comes early while one is shown but does not count yet,
//! and rings — the board's event — when none is shown (also while the client's user, not the
//! device, is asked). Driven through the engine with `mcp_core::testing`, on the simulated relay
//! asking before it switches on.
#![allow(clippy::unwrap_used, reason = "a test")]

use mcp_core::testing::Client;
use mcp_core::{Caps, Config, Server, Tool};
use mcp_hal::kits::button::{self, Press};
use mcp_hal::kits::{DelayNs, Wait, relay};
use mcp_hal::sim::{Faults, SimBoard, SimRelay};
use serde_json::json;

struct Board {
    sim: SimBoard,
    relay: SimRelay,
}

impl Wait for Board {
    fn delay(&mut self) -> impl DelayNs + '_ {
        &mut self.sim
    }
}

impl relay::HasRelay for Board {
    type Relay = SimRelay;
    fn relay(&mut self) -> &mut SimRelay {
        &mut self.relay
    }
}

static LIGHT: Tool<Board> = relay::set().confirm(relay::CONFIRM_ON);

fn client() -> Client<'static, Board, Caps<4>> {
    let mut server = Server::new(Config::new("porch", "1").hold_answer(0));
    server.register(&LIGHT).unwrap();
    let board = Board {
        sim: SimBoard::new(Faults::NONE),
        relay: SimRelay::new(Faults::NONE),
    };
    Client::new(server, board).with_main_loop(|_, b, now| {
        b.sim.set_time(now);
        b.relay.set_time(now);
    })
}

#[test]
fn a_press_answers_the_question_shown_and_rings_when_none_is() {
    let mut porch = client();
    assert_eq!(button::press(porch.server_mut(), 0), Press::Rang);

    let waits = porch.call(relay::NAME, json!({"on": true}));
    assert!(
        waits.text().contains("press the button on the device"),
        "{waits}"
    );
    porch.advance(10); // the next poll shows the question
    // Shown for less than a second: the press does not count, and does not ring either.
    assert_eq!(button::press(porch.server_mut(), 20), Press::Early);
    assert!(!porch.board().relay.coil());
    porch.advance(1_500);
    assert_eq!(button::press(porch.server_mut(), 1_510), Press::Answered);
    porch.poll();
    assert!(porch.board().relay.coil(), "the approved call ran");
    // Nothing waits any more: the next press rings.
    assert_eq!(button::press(porch.server_mut(), 3_000), Press::Rang);
}

#[test]
fn a_question_put_to_the_clients_user_is_not_on_the_device() {
    let mut asks = client().with_elicitation();
    asks.initialize("2025-11-25");
    let asked = asks.call(relay::NAME, json!({"on": true}));
    assert!(asked.question().is_some(), "{asked}");
    asks.advance(1_500);
    assert_eq!(button::press(asks.server_mut(), 1_500), Press::Rang);
    assert!(!asks.board().relay.coil(), "a doorbell approves nothing");
}

#[test]
fn the_rule_for_a_host_that_keeps_what_it_shows() {
    assert_eq!(Press::of(true, true), Press::Answered);
    assert_eq!(Press::of(false, true), Press::Early);
    assert_eq!(Press::of(false, false), Press::Rang);
    assert!(Press::Rang.rang() && !Press::Early.rang());
}
