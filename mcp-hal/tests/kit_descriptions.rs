//! What the model reads about a kit's tool names no other tool: a board registers the kits it
//! has, one by one, so a description that says "call self.get_device_status first" sends the
//! model to a tool a board without the status kit does not have.
//!
//! Every kit tool, blocking and async, is listed as a client sees it (name, description,
//! parameter descriptions, annotations) together with its confirmation question, and scanned for
//! the name of any other tool: every kit's, the engine's status tool, and anything spelled like
//! a xiaozhi tool name (`self.…`).
#![allow(clippy::expect_used, clippy::indexing_slicing, reason = "a test")]

use mcp_core::Tool;
use mcp_core::wire::Writer;
use mcp_hal::kits::asynch as ak;
use mcp_hal::kits::{audio, motor, mute, relay, screen, setpoint, status, system};
use mcp_hal::sim::DemoBoard;

type Board = DemoBoard;

/// Every kit's tool as a board builds it, blocking then async.
fn kit_tools() -> Vec<(&'static str, Tool<Board>)> {
    vec![
        ("audio::set_volume", audio::set_volume()),
        ("mute::set_mute", mute::set_mute()),
        ("screen::set_brightness", screen::set_brightness()),
        ("status::get_device_status", status::get_device_status()),
        ("system::reboot", system::reboot()),
        ("system::confirmed", system::confirmed()),
        ("relay::set", relay::set()),
        (
            "relay::set + CONFIRM_ON",
            relay::set().confirm(relay::CONFIRM_ON),
        ),
        ("asynch::audio", ak::audio::set_volume()),
        ("asynch::mute", ak::mute::set_mute()),
        ("asynch::screen", ak::screen::set_brightness()),
        ("asynch::status", ak::status::get_device_status()),
        ("asynch::system", ak::system::reboot()),
        ("asynch::system confirmed", ak::system::confirmed()),
        ("asynch::relay", ak::relay::set()),
        ("setpoint::set", setpoint::set()),
        ("asynch::setpoint", ak::setpoint::set()),
        ("motor::move_to", motor::move_to::<Board, 0, 1000>()),
    ]
}

/// What a client sees of the tool, and the question it asks a person.
fn text(tool: &Tool<Board>) -> String {
    let mut buf = vec![0u8; 4096];
    let mut w = Writer::new(&mut buf);
    tool.write_listing(&mut w);
    let mut listing = String::from_utf8(w.written().expect("a kit's listing fits 4 KiB").to_vec())
        .expect("a listing is UTF-8");
    if let Some(confirm) = tool.confirmation() {
        listing.push('\n');
        listing.push_str(confirm.message());
    }
    listing
}

/// The `self.`-prefixed dotted names in `text`.
fn self_names(text: &str) -> Vec<&str> {
    let ident = |c: char| c.is_ascii_alphanumeric() || c == '_' || c == '.';
    text.match_indices("self.")
        .filter(|(at, _)| !text[..*at].ends_with(|c: char| c.is_ascii_alphanumeric() || c == '_'))
        .map(|(at, _)| {
            let rest = &text[at..];
            let end = rest.find(|c: char| !ident(c)).unwrap_or(rest.len());
            rest[..end].trim_end_matches('.')
        })
        .collect()
}

#[test]
fn no_kit_names_another_tool() {
    let tools = kit_tools();
    // Every tool name a board may or may not register: the kits' and the engine's status tool,
    // each also without its `self.` prefix where that is still an identifier, not a word
    // (`get_device_status`, `audio_speaker.set_volume`).
    let mut names: Vec<&str> = tools.iter().map(|(_, t)| t.name()).collect();
    names.push(mcp_core::server::status_tool::<Board>().name());
    names.sort_unstable();
    names.dedup();
    let mut failures = Vec::new();
    for (kit, tool) in &tools {
        let own = tool.name();
        // The listing names the tool itself in `"name"`; that one mention is its own.
        let seen = text(tool).replacen(&format!("\"name\":\"{own}\""), "", 1);
        for name in self_names(&seen) {
            if name != own {
                failures.push(format!("{kit} ({own}) names {name}"));
            }
        }
        for other in names.iter().filter(|n| **n != own) {
            let bare = other.strip_prefix("self.").unwrap_or(other);
            if bare.contains(['_', '.']) && seen.contains(bare) {
                failures.push(format!("{kit} ({own}) names {bare}"));
            }
        }
    }
    assert!(failures.is_empty(), "{failures:#?}");
}

#[test]
fn the_scan_sees_a_name() {
    // The scan itself: a description naming another tool is caught, in either spelling.
    let named = audio::set_volume::<Board>().describe("Call self.get_device_status first.");
    assert_eq!(
        self_names(&text(&named)),
        ["self.audio_speaker.set_volume", "self.get_device_status"]
    );
    assert_eq!(
        self_names("myself.x, self.a.b. and (self.c)"),
        ["self.a.b", "self.c"]
    );
}

#[test]
fn every_kit_can_be_renamed_and_redescribed() {
    // A garage door on the relay kit: its own name, description and question; the rest is the
    // kit's.
    let door = relay::set::<Board>()
        .rename("self.garage_door.set")
        .describe("Open (true) or close (false) the garage door.")
        .confirm(relay::confirm_on("Open the garage door?"));
    let seen = text(&door);
    assert!(seen.contains(r#""name":"self.garage_door.set""#), "{seen}");
    assert!(
        seen.contains(r#""description":"Open (true) or close (false) the garage door.""#),
        "{seen}"
    );
    assert!(seen.ends_with("\nOpen the garage door?"), "{seen}");
    assert!(!seen.contains("relay"), "{seen}");
    for (kit, tool) in kit_tools() {
        let renamed = tool.rename("self.board.thing").describe("A thing.");
        let seen = text(&renamed);
        assert!(
            seen.contains(r#""name":"self.board.thing","description":"A thing.""#),
            "{kit}: {seen}"
        );
    }
}

/// The listed `destructiveHint` of `tool` (`None`: not said).
fn destructive_hint(tool: &Tool<Board>) -> Option<bool> {
    let listing = text(tool);
    let json = listing.split('\n').next().expect("the listing's line");
    let listed: serde_json::Value = serde_json::from_str(json).expect("a listing is JSON");
    listed["annotations"]["destructiveHint"].as_bool()
}

/// A kit's annotations follow its confirmation: a tool that asks a person first is
/// destructive unless its author says otherwise, whatever the kit said of the tool without the
/// question. A garage door built on the relay kit (`destructiveHint: false`: switching a load is
/// undone by switching it back) that asks before it opens is listed destructive.
#[test]
fn a_kit_that_asks_first_is_listed_destructive() {
    let door = relay::set::<Board>()
        .rename("self.garage_door.set")
        .confirm(relay::confirm_on("Open the garage door?"));
    assert_eq!(destructive_hint(&door), Some(true));
    assert_eq!(
        destructive_hint(&relay::set().confirm(relay::CONFIRM_ON)),
        Some(true)
    );
    assert_eq!(
        destructive_hint(&ak::relay::set().confirm(relay::CONFIRM_ON)),
        Some(true)
    );
    // Without the question the kit's word stands; the kits that ask first said so already.
    assert_eq!(destructive_hint(&relay::set()), Some(false));
    assert_eq!(destructive_hint(&system::confirmed()), Some(true));
    // Said otherwise after the question: the author's word.
    let gate = relay::set::<Board>()
        .rename("self.garden_light.set")
        .confirm(relay::confirm_on("Switch the garden light on?"))
        .destructive(false);
    assert_eq!(destructive_hint(&gate), Some(false));
    // The other annotations are the kit's.
    assert!(
        text(&door).contains(r#""idempotentHint":true"#),
        "{}",
        text(&door)
    );
}
