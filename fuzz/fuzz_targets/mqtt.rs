//! MCP over MQTT framing (`mcp_core::transport::mqtt`) on arbitrary topics and payloads, against
//! a model written with plain string operations and serde_json (`mcp_fuzz::J`):
//!
//! - `ServerTopics::parse` of an arbitrary topic agrees with the model for a fixed server (its
//!   control and own presence topics, a client's RPC, presence and capability topics), and
//!   every topic it accepts is rebuilt byte for byte by the matching builder; a client id it
//!   hands out never holds `/`, `+`, `#` or anything but printable ASCII;
//! - `ServerTopics::from_presence` accepts a topic only if rebuilding its presence topic gives the
//!   same bytes and both names pass their checks;
//! - `parse_presence`, `is_disconnected` and `route` agree with serde_json on the method;
//! - `write_online` with arbitrary names and descriptions either fits and reads back (the same
//!   strings, through `parse_presence` and serde_json) or says how much it needed.
//!
//! Input: a mode byte, then the text (topic, or name `0xFF` description), `0xFF`, a payload.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_core::transport::mqtt::{
    self, ClientId, Incoming, MAX_ID_LEN, MAX_TOPIC_LEN, Presence, Route, ServerTopics,
};
use mcp_fuzz::J;

const ID: &str = "dev-0001";
const NAME: &str = "devices/demo-board";

/// The id rule, written again: 1..=64 bytes of `!`..=`~` without `/`, `+`, `#`.
fn id_ok(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= MAX_ID_LEN
        && s.bytes()
            .all(|b| (b'!'..=b'~').contains(&b) && !b"/+#".contains(&b))
}

/// What the fixed server must make of `t`.
fn model(t: &str) -> Option<(u8, String)> {
    let me = format!("/{ID}/{NAME}");
    if t == format!("$mcp-server{me}") {
        return Some((0, String::new()));
    }
    if t == format!("$mcp-server/presence{me}") {
        return Some((4, String::new()));
    }
    if let Some(rest) = t.strip_prefix("$mcp-rpc/") {
        let client = rest.strip_suffix(me.as_str())?;
        return id_ok(client).then(|| (1, client.to_string()));
    }
    if let Some(c) = t.strip_prefix("$mcp-client/presence/") {
        return id_ok(c).then(|| (2, c.to_string()));
    }
    if let Some(c) = t.strip_prefix("$mcp-client/capability/") {
        return id_ok(c).then(|| (3, c.to_string()));
    }
    None
}

fn method(payload: &[u8]) -> Option<String> {
    let j = J::parse(payload)?;
    j.as_object()?;
    j.get("method").and_then(J::as_str).map(str::to_string)
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let mut parts = rest.splitn(2, |&b| b == 0xFF);
    let text = parts.next().unwrap_or_default();
    let payload = parts.next().unwrap_or_default();
    let mut buf = [0u8; MAX_TOPIC_LEN];
    let me = ServerTopics::new(ID, NAME).unwrap();

    if let Ok(t) = std::str::from_utf8(text) {
        let got = me.parse(t);
        let want = model(t);
        match (got, &want) {
            (None, None) => {}
            (Some(Incoming::Control), Some((0, _))) => {
                assert_eq!(me.control(&mut buf).unwrap(), t);
            }
            (Some(Incoming::Rpc(c)), Some((1, w))) => {
                assert_eq!(c.as_str(), w);
                assert_eq!(me.rpc(c, &mut buf).unwrap(), t);
            }
            (Some(Incoming::ClientPresence(c)), Some((2, w))) => {
                assert_eq!(c.as_str(), w);
                assert_eq!(me.client_presence(c, &mut buf).unwrap(), t);
            }
            (Some(Incoming::ClientCapability(c)), Some((3, w))) => {
                assert_eq!(c.as_str(), w);
                assert_eq!(me.client_capability(c, &mut buf).unwrap(), t);
            }
            (Some(Incoming::Presence), Some((4, _))) => {
                assert_eq!(me.presence(&mut buf).unwrap(), t);
            }
            (got, want) => panic!("{t:?}: parsed {got:?}, model {want:?}"),
        }
        assert_eq!(ClientId::new(t).is_ok(), id_ok(t), "{t:?}");
        if let Some(s) = ServerTopics::from_presence(t) {
            assert!(id_ok(s.server_id()));
            assert!(mqtt::check_server_name(s.server_name()).is_ok());
            assert_eq!(s.presence(&mut buf).unwrap(), t);
        } else if let Some((id, name)) = t
            .strip_prefix("$mcp-server/presence/")
            .and_then(|r| r.split_once('/'))
        {
            assert!(
                ServerTopics::new(id, name).is_err(),
                "refused a good presence topic {t:?}"
            );
        }
    }

    // Payloads, against serde_json's view of them.
    let m = method(payload);
    match mqtt::parse_presence(payload) {
        Some(Presence::Offline) => assert!(payload.is_empty()),
        Some(Presence::Online { .. }) => {
            assert_eq!(m.as_deref(), Some("notifications/server/online"));
        }
        Some(_) => {}
        // Refused: anything but an online notification or nothing (also duplicate members
        // and nesting beyond the engine's limit, which serde_json would read).
        None => assert!(!payload.is_empty()),
    }
    if mqtt::is_disconnected(payload) {
        assert!(payload.is_empty() || m.as_deref() == Some("notifications/disconnected"));
    }
    if mqtt::route(payload) == Route::Capability {
        let m = m.unwrap_or_default();
        assert!(
            m.ends_with("/list_changed") || m == "notifications/resources/updated",
            "{m}"
        );
    }

    // The online payload round-trips arbitrary text.
    if mode & 1 == 1 {
        let (Ok(name), Ok(description)) = (std::str::from_utf8(text), std::str::from_utf8(payload))
        else {
            return;
        };
        let mut out = vec![0u8; [64usize, 256, 4096][usize::from(mode >> 1) % 3]];
        match mqtt::write_online(&mut out, name, description, None) {
            Ok(n) => {
                let j = J::parse(&out[..n]).expect("JSON");
                assert_eq!(j["params"]["server_name"].as_str(), Some(name));
                assert_eq!(j["params"]["description"].as_str(), Some(description));
                match mqtt::parse_presence(&out[..n]) {
                    Some(Presence::Online {
                        server_name: Some(s),
                        description: Some(d),
                    }) => {
                        assert_eq!(s.to_cow(), name);
                        assert_eq!(d.to_cow(), description);
                    }
                    other => panic!("{other:?}"),
                }
            }
            Err(e) => assert!(e.needed > out.len()),
        }
    }
});
