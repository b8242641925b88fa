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
//!   strings, through `parse_presence` and serde_json) or says how much it needed;
//! - `Sessions` (the client table and its notes of what recent `initialize`s declared), driven by a script of `initialize`, messages on a
//!   client's RPC topic, departures and time passing, agrees step by step with a model of its
//!   documented rules written with plain `Vec`s: what each step says (noted, displaced, served,
//!   promoted, replaced, refused), whether the session served carries what an `initialize`
//!   declared, and who holds a place after it. The adversary's flood is one such script: an
//!   `initialize` makes no session and holds no place, so it never refuses an `initialize`
//!   while a place is free or idle, and a client that speaks on its own RPC topic gets a place
//!   whenever one is free or idle, however many `initialize`s came since its own (they can
//!   only crowd out the note of what it declared).
//!
//! Input: a mode byte, then the text (topic, or name `0xFF` description), `0xFF`, a payload.
//! With the mode's top bit set, the rest of the input is the `Sessions` script instead (two
//! bytes a step).
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_core::transport::mqtt::{
    self, Busy, ClientId, Incoming, MAX_ID_LEN, MAX_TOPIC_LEN, Opened, Presence, Route,
    ServerTopics, Sessions, Spoke,
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

/// Places for clients that spoke on their RPC topic, and notes of `initialize`s, in the script.
const N: usize = 3;
const H: usize = 2;
/// A session idle this long may give its place (ms); a note lives this long.
const IDLE_MS: u64 = 1_000;
const LIFE_MS: u64 = 500;
/// The ids the script names: two real clients and a forger's invented ones.
const IDS: [&str; 6] = [
    "alice", "bob", "forged-0", "forged-1", "forged-2", "forged-3",
];

/// The documented rules of `Sessions`, written again with plain `Vec`s of (id, time).
#[derive(Default)]
struct Model {
    /// Clients with a session, with when each last spoke and whether the session carries what
    /// an `initialize` declared.
    open: Vec<(&'static str, u64, bool)>,
    /// Noted `initialize`s, oldest first, with when each came.
    half: Vec<(&'static str, u64)>,
}

/// What a step did, in the model's words: the `bool`s say whether the session served carries
/// what an `initialize` declared (else it is a client's that declared nothing).
#[derive(Debug, PartialEq, Eq)]
enum Did {
    HalfOpen(Option<String>),
    Refused,
    Served { restarted: bool, declared: bool },
    Promoted(Option<String>, bool),
}

/// What the engine makes of the script's every `initialize` (a 2025-11-25 client that declares
/// elicitation): a session that differs from one that declared nothing.
fn declared() -> mcp_core::Session {
    static DECLARED: std::sync::OnceLock<mcp_core::Session> = std::sync::OnceLock::new();
    *DECLARED.get_or_init(|| {
        let mut engine: mcp_core::Server<'_, (), mcp_core::Caps<1>> =
            mcp_core::Server::new(mcp_core::Config::new("d", "1"));
        let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"elicitation":{}}}}"#;
        let input = mcp_core::Input::new(init, mcp_core::Principal::Model)
            .session(mcp_core::Session::default());
        let mut out = [0u8; 2048];
        let s = engine
            .handle_with(input, &mut (), &mut out, &mut |_: &[u8]| {})
            .unwrap()
            .session
            .unwrap();
        assert_ne!(s, mcp_core::Session::default());
        s
    })
}

impl Model {
    fn expire(&mut self, now: u64) {
        self.half.retain(|&(_, at)| now - at < LIFE_MS);
    }

    /// A free place (`Some(None)`), the place of the session idle longest once idle long enough
    /// (`Some(Some(i))`, the first of equals), or none.
    fn room(&self, now: u64) -> Option<Option<usize>> {
        if self.open.len() < N {
            return Some(None);
        }
        let mut idlest: Option<usize> = None;
        for (i, &(_, at, _)) in self.open.iter().enumerate() {
            if idlest.is_none_or(|j| at < self.open[j].1) {
                idlest = Some(i);
            }
        }
        idlest
            .filter(|&i| now - self.open[i].1 >= IDLE_MS)
            .map(Some)
    }

    fn initialize(&mut self, id: &'static str, now: u64) -> Did {
        self.expire(now);
        let has = self.open.iter().any(|&(o, _, _)| o == id);
        if !has && self.room(now).is_none() {
            return Did::Refused;
        }
        self.half.retain(|&(h, _)| h != id);
        let displaced = (self.half.len() == H).then(|| self.half.remove(0).0.to_string());
        self.half.push((id, now));
        Did::HalfOpen(displaced)
    }

    /// A message on the client's own RPC topic: the only thing that makes a session.
    fn spoke(&mut self, id: &'static str, initialized: bool, now: u64) -> Did {
        self.expire(now);
        let half = self.half.iter().position(|&(h, _)| h == id);
        if let Some(o) = self.open.iter().position(|&(x, _, _)| x == id) {
            let restarted = initialized && half.is_some();
            if let (true, Some(h)) = (restarted, half) {
                self.half.remove(h);
                self.open[o].2 = true;
            }
            self.open[o].1 = now;
            return Did::Served {
                restarted,
                declared: self.open[o].2,
            };
        }
        let noted = half.map(|h| self.half.remove(h)).is_some();
        match self.room(now) {
            None => Did::Refused,
            Some(None) => {
                self.open.push((id, now, noted));
                Did::Promoted(None, noted)
            }
            Some(Some(i)) => {
                let old = std::mem::replace(&mut self.open[i], (id, now, noted));
                Did::Promoted(Some(old.0.to_string()), noted)
            }
        }
    }

    fn forget(&mut self, id: &str) -> bool {
        self.half.retain(|&(h, _)| h != id);
        let had = self.open.iter().any(|&(o, _, _)| o == id);
        self.open.retain(|&(o, _, _)| o != id);
        had
    }
}

/// Runs a script of two-byte steps against `Sessions` and the model.
fn sessions(script: &[u8]) {
    let mut table: Sessions<N, H> = Sessions::new(IDLE_MS, LIFE_MS);
    let mut model = Model::default();
    let mut now = 0u64;
    for step in script.chunks_exact(2) {
        let (op, arg) = (step[0], step[1]);
        let id = IDS[usize::from(arg) % IDS.len()];
        let client = ClientId::new(id).unwrap();
        // Every step lets some time pass (up to 70 ms; a quiet step up to 25.5 s).
        now += u64::from(op >> 2) * 10;
        let (got, want) = match op & 3 {
            0 => {
                let got = match table.initialize(client, now) {
                    Opened::HalfOpen { displaced } => {
                        // What the engine made of it is noted, as a host does.
                        table.set_half_open_session(id, declared());
                        Did::HalfOpen(displaced.map(|d| d.to_string()))
                    }
                    Opened::Refused(Busy::Full { sessions }) => {
                        assert_eq!(sessions, N);
                        Did::Refused
                    }
                    Opened::Refused(other) => panic!("{other:?}"),
                };
                (got, model.initialize(id, now))
            }
            1 => {
                let initialized = arg & 0x80 != 0;
                let had_place = model.open.iter().any(|&(o, _, _)| o == id);
                let got = match table.spoke(client, initialized, now) {
                    Spoke::Served { restarted, session } => Did::Served {
                        restarted,
                        declared: session == declared(),
                    },
                    Spoke::Promoted { replaced, session } => {
                        assert!(
                            session == declared() || session == mcp_core::Session::default(),
                            "{session:?}"
                        );
                        Did::Promoted(replaced.map(|r| r.to_string()), session == declared())
                    }
                    Spoke::Refused(Busy::Full { .. }) => {
                        // Only a full table of sessions refuses a client that speaks.
                        assert!(!had_place && model.room(now).is_none(), "{id} refused");
                        Did::Refused
                    }
                    Spoke::Refused(other) => panic!("{other:?}"),
                };
                (got, model.spoke(id, initialized, now))
            }
            2 => {
                let got = table.forget(id);
                assert_eq!(got, model.forget(id), "forget {id}");
                continue;
            }
            _ => {
                now += u64::from(arg) * 100;
                continue;
            }
        };
        assert_eq!(got, want, "{id} at {now} ms");
        let held: Vec<&str> = table.confirmed().collect();
        let expected: Vec<&str> = model.open.iter().map(|&(o, _, _)| o).collect();
        assert_eq!(held, expected, "at {now} ms");
        assert!(table.len() <= N && table.half_open() <= H);
        for id in IDS {
            let peer = ClientId::new(id).unwrap().peer();
            let known = model.open.iter().any(|&(x, _, _)| x == id)
                || model.half.iter().any(|&(x, _)| x == id);
            // (A note past its life may still be listed until the next step.)
            if known {
                assert_eq!(table.by_peer(peer), Some(id));
            }
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    if mode & 0x80 != 0 {
        sessions(rest);
        return;
    }
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
