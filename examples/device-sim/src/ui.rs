//! `--ui ADDR`: a live view of the simulated device, and the JSON API that drives its physical
//! side (the page is a client of the same API; tests and scripts use it directly).
//!
//! | request | body | answer |
//! |---|---|---|
//! | `GET /` | — | the page (one HTML file with inline CSS and JS, no build step) |
//! | `GET /sim/state` | — | everything the page shows (below); `?since=SEQ` keeps only timeline entries after `SEQ` |
//! | `POST /sim/button` | none, or `{}` | one press of the device's button: `{"pressed":true,"answers":null}` or `"answers":{"tool":…,"id":…,"client":…,"question":…,"approval":…}` |
//! | `POST /sim/sensor` | `{"temperature": 31.5}`, `{"battery": 20}`, or both | `{"sensors":{"temperature":31.5,"battery":20}}` (what they read now) |
//!
//! **The physical button does both.** A press is counted — the resource `device://buttons/main`
//! goes up by one, and its subscribers hear of it — *and*, when the device shows a question
//! ("press the button on the device to confirm"), it is the yes to that question: the host
//! confirms it on the engine holding it (whichever transport that engine serves), runs it, and
//! sends the outcome to the client that made the call. The device shows one question at a time,
//! first held first shown (`confirmation`; the others wait their turn in `waiting`), with the
//! text that names what the call approves and which client asks (`question`, `client`). A press
//! answers only a question shown for at least `--press-after-ms` (default 1000) before it —
//! `press_counts_in_ms` says how long until then, null while not shown — and not that soon after
//! the previous press (a bounce, or the second half of a double press, answers nothing).
//! `answers` says which call the press confirmed, as the host reported it (null: nothing was
//! answered).
//!
//! `POST /sim/sensor` sets the simulated readings: `temperature` in °C (a number, −40 to 125),
//! `battery` in % (a number, 0 to 100). Unknown members, wrong types and values out of range
//! are refused (400 with `{"error": "…"}`). The readings are sampled at the next clock tick, and
//! published to subscribers by the kits' policies (0.5 °C and at most one a second; 1 % and at
//! most one per 5 s).
//!
//! The page polls `GET /sim/state` (every 300 ms). Its shape:
//!
//! ```text
//! {"device":{"name":"device-sim","version":"0.1.0","confirm":true,"principal":"model",
//!            "transports":["http://127.0.0.1:8080/mcp"]},
//!  "uptime_ms":1234,
//!  "speaker":{"volume":50,"muted":false}, "screen":{"brightness":80,"theme":"light"},
//!  "relay":{"on":false}, "motor":{"position":0,"target":0,"moving":false},
//!  "sensors":{"temperature":21.5,"battery":87}, "button":{"presses":0,"down":false},
//!  "fan":{"duty":0,"rpm":0,"target_rpm":0,"max_rpm":3000}, "camera":{"frames":0},
//!  "door_open":false, "reboot":{"scheduled":0,"due_in_ms":null},
//!  "confirmation":null | {"tool":"self.reboot","id":"7","question":"Reboot the device? (asked by client #3fa2 \"claude-ai\")",
//!                         "client":"client #3fa2 \"claude-ai\"","on_device":true,"shown":true,
//!                         "press_counts_in_ms":0,"approval":"5f0e…","expires_in_ms":28750},
//!  "waiting":[…every call waiting for a person, the shown one first, same shape…],
//!  "activation":null | {"code":"123456","message":"…"}   (--xiaozhi-ota: not bound yet),
//!  "firmware_offered":null | {"running":"0.1.0","offered":"0.2.0","url":"…"},
//!  "links":[{"url":"wss://api.xiaozhi.me:443/mcp/?token=…","state":"connected","sessions":2,
//!            "last_end":null | {"code":1011,"reason":"…","say":null,"retry_in_ms":830},
//!            "calls":[…the last calls through it, as the timeline's `call` entries…]}]
//!            (--mcp-endpoint: each link, in the order given; `state` connecting, connected,
//!            reconnecting, closed or stopped),
//!  "timeline":[{"seq":7,"t_ms":1200,"kind":"call",…}, …], "next_seq":8}
//! ```
//!
//! Every device of the demo board (`mcp_hal::sim::SimBoard::DEVICES`) has its member and its
//! tile on the page.
//!
//! The timeline keeps the last [`TIMELINE_LEN`] entries, oldest first; each has `seq` (rising:
//! the order things happened in), `t_ms` (since device-sim started) and `kind`:
//! - `call`: every call on every transport (mcp-host reports them where each transport hands a
//!   message to the engine): `call` (the report's number), `transport`, `link` (the
//!   `--mcp-endpoint` link, else null), `client` (the name the
//!   client gave and the device's tag of its session: `client #3fa2 "claude-ai"`), `id` (raw JSON), `tool`,
//!   `outcome` (`ok`, `failed`, `error`, `held` — its answer waits for a person or an action —,
//!   `awaiting_confirmation`, `asked_client`, `input_required`, `task`), `evidence` (level or
//!   null), `text`, `confirmed` (true/false: a person's answer decided it; null: nobody was asked
//!   yet), `approval` (the question's number, on a held call and on its outcome: they carry the
//!   same `id` and `client` too), `press` (the number of the press that answered it), `replay`,
//!   `delivery` (`written`, `lost`, or null while not known: a transport that learns it later,
//!   MQTT's broker acknowledgement, fills it in then — read the entry again without `since`);
//! - `update`: `transport`, `uri`, `subscription` (a 2026 listen stream's id, or null),
//!   `delivered`;
//! - `press`: `number` (the button's count), `answers` (the tool the press confirms, or null)
//!   with the call's `id`, `client` and `approval`; `sensor`: `temperature` and/or `battery`;
//! - `session`: `event` (`started`, `ended`, or null for the link's own news: a backend's hello,
//!   a disconnection, an activation), `transport`, `client`, `text`; `listen`: `id`, `open`;
//! - `said`: `transport`, `text`, `event` — a detect text the device sent its xiaozhi backend:
//!   an outcome heard after a call's answer (`[device_call] …`, `event` null), or an event that
//!   starts a model turn (`Device event: …`, with `--speak-first`; `event` names it).
//!
//! Every string in the state that came from a peer (a client's name, a tool name, an id, an
//! answer's text, a reason, an OTA/config server's activation code and firmware offer, a
//! transport's URL) is shown through one function, [`shown`] — mcp-core's one sanitizer of wire
//! text: controls, bidi controls and characters that show nothing escaped, length bounded.
//!
//! It listens on loopback unless told otherwise, and refuses (403) requests whose `Host` is not a
//! loopback name (or one given with `--allow-host`), or whose `Origin` is not the page's own
//! (`http://` and that `Host`, the port included): a web page elsewhere — another server on the
//! same machine too — cannot press the button. Requests without `Origin` (curl, scripts) pass.
//! It is served as mcp-host serves `/mcp` ([`mcp_host::web`]): at most `--ui-max-connections`
//! connections at once (more wait in the listen backlog, holding no file descriptor of the
//! process), each with `--ui-header-timeout` seconds for a request head and for a POST body
//! (bodies of at most [`MAX_BODY`] bytes).

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, Instant};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::{HeaderMap, HeaderValue, StatusCode, Uri, header};
use axum::response::Response;
use mcp_hal::sim::SimFan;
use mcp_host::web::{self, BodyError, Limits, Origins};
use mcp_host::{CallReport, HostEvent, Pressed, Waiting};
use serde_json::{Map, Value, json};

use crate::board::Board;

/// Timeline entries kept.
pub const TIMELINE_LEN: usize = 100;

/// The largest request body (bytes): a button press or a sensor move is a few dozen.
pub const MAX_BODY: usize = 4096;

/// The page.
const PAGE: &str = include_str!("ui.html");

/// The most characters of one string the state shows ([`shown`]).
pub const MAX_SHOWN: usize = 240;

/// The sensors' accepted ranges.
const TEMPERATURE_C: (f64, f64) = (-40.0, 125.0);
const BATTERY_PERCENT: (f64, f64) = (0.0, 100.0);

/// The simulated device as the page sees it: the board, the calls waiting for a person, and the
/// timeline.
pub struct Sim {
    board: Arc<Mutex<Board>>,
    started: Instant,
    log: Mutex<Log>,
    allowed_hosts: Vec<String>,
    /// Presses for the finger (see [`finger`]); each tells its count back.
    presses: std::sync::mpsc::Sender<std::sync::mpsc::Sender<u32>>,
}

struct Log {
    entries: VecDeque<Value>,
    next_seq: u64,
    /// What waits for a person, in the order the device shows it (the first on-device one is
    /// shown), as the host last reported it.
    waiting: Vec<(Waiting, Instant)>,
    /// The presses the host handled lately: their number and what each answered.
    pressed: VecDeque<Pressed>,
    about: Map<String, Value>,
    transports: Vec<String>,
    /// The activation code the OTA check asks the device to show, until it is bound.
    activation: Option<Value>,
    /// A newer firmware the OTA check offered.
    firmware_offered: Option<Value>,
    /// The MCP endpoint links (`--mcp-endpoint`), in the order given.
    links: Vec<LinkView>,
}

/// What the page shows of one MCP endpoint link: its state and the calls that came through it.
#[derive(Default)]
struct LinkView {
    url: String,
    state: &'static str,
    sessions: u64,
    /// The last end: close code, reason, what the device says of it, when it tries again.
    last_end: Value,
    calls: VecDeque<Value>,
}

/// Calls kept per link.
const LINK_CALLS: usize = 20;

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Sim {
    /// A view of `board`; `confirm`/`principal` describe the served tool set.
    pub fn new(
        board: Arc<Mutex<Board>>,
        confirm: bool,
        principal: &str,
        allowed_hosts: &[String],
    ) -> Arc<Self> {
        let mut about = Map::new();
        about.insert("name".into(), "device-sim".into());
        about.insert("version".into(), env!("CARGO_PKG_VERSION").into());
        about.insert("confirm".into(), confirm.into());
        about.insert("principal".into(), principal.into());
        let (presses, queue) = std::sync::mpsc::channel();
        let pressed = board.clone();
        std::thread::spawn(move || finger(&pressed, &queue));
        Arc::new(Sim {
            presses,
            board,
            started: Instant::now(),
            log: Mutex::new(Log {
                entries: VecDeque::new(),
                next_seq: 1,
                waiting: Vec::new(),
                pressed: VecDeque::new(),
                about,
                transports: Vec::new(),
                activation: None,
                firmware_offered: None,
                links: Vec::new(),
            }),
            allowed_hosts: allowed_hosts.to_vec(),
        })
    }

    /// Names a transport device-sim serves (shown on the page).
    pub fn add_transport(&self, t: String) {
        lock(&self.log).transports.push(shown(&t));
    }

    fn t_ms(&self) -> u64 {
        u64::try_from(self.started.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    /// Adds a timeline entry (`kind` and the members of `fields`, [`shown`]).
    fn push(&self, kind: &str, fields: Value) {
        let t_ms = self.t_ms();
        let mut log = lock(&self.log);
        let mut entry = match shown_all(fields) {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        entry.insert("seq".into(), log.next_seq.into());
        entry.insert("t_ms".into(), t_ms.into());
        entry.insert("kind".into(), kind.into());
        log.next_seq += 1;
        if log.entries.len() == TIMELINE_LEN {
            log.entries.pop_front();
        }
        log.entries.push_back(Value::Object(entry));
    }

    /// Takes what the host (or the stdio loop) reports into the timeline and the waiting list.
    pub fn event(&self, e: &HostEvent) {
        match e {
            HostEvent::Call(c) => {
                let press = c
                    .approval
                    .filter(|_| c.confirmed.is_some())
                    .and_then(|a| {
                        let log = lock(&self.log);
                        let p = log.pressed.iter().rev().find(|p| {
                            p.answers.as_ref().is_some_and(|w| w.approval == a)
                        });
                        p.map(|p| p.number)
                    });
                let fields = call_fields(c, press);
                let mut log = lock(&self.log);
                if let Some(link) = c.link.and_then(|i| log_link(&mut log, i)) {
                    if link.calls.len() == LINK_CALLS {
                        link.calls.pop_front();
                    }
                    link.calls.push_back(shown_all(fields.clone()));
                }
                drop(log);
                self.push("call", fields);
            }
            HostEvent::Delivered { call, delivery } => {
                let mut log = lock(&self.log);
                let entry = log
                    .entries
                    .iter_mut()
                    .rev()
                    .find(|e| e["kind"] == "call" && e["call"] == *call);
                if let Some(entry) = entry.and_then(Value::as_object_mut) {
                    entry.insert("delivery".into(), delivery_word(*delivery).into());
                }
            }
            HostEvent::Endpoint { link, url, state } => self.endpoint(*link, url, state),
            HostEvent::Updated {
                transport,
                uri,
                subscription,
                delivered,
            } => self.push(
                "update",
                json!({"transport": transport, "uri": uri, "subscription": subscription, "delivered": delivered}),
            ),
            HostEvent::Waiting(w) => {
                let now = Instant::now();
                lock(&self.log).waiting = w.iter().map(|w| (w.clone(), now)).collect();
            }
            HostEvent::Pressed(p) => {
                {
                    let mut log = lock(&self.log);
                    if log.pressed.len() == 64 {
                        log.pressed.pop_front();
                    }
                    log.pressed.push_back(p.clone());
                }
                // On the timeline as the host reported it: before what the press made happen.
                let w = p.answers.as_ref();
                self.push(
                    "press",
                    json!({"number": p.number, "answers": w.map(|w| w.tool),
                           "id": w.map(|w| &w.id), "client": w.map(|w| &w.client),
                           "approval": w.map(|w| format!("{:016x}", w.approval))}),
                );
            }
            HostEvent::Listen { id, open } => {
                self.push("listen", json!({"id": id, "open": open}));
            }
            HostEvent::Said {
                transport,
                text,
                event,
            } => self.push(
                "said",
                json!({"transport": transport, "text": text, "event": event}),
            ),
            HostEvent::Initialized {
                revision,
                transport,
                client,
                ..
            } => self.push(
                "session",
                json!({"event": "started", "transport": transport, "client": client,
                       "text": format!("initialized, protocol {}", revision.as_str())}),
            ),
            HostEvent::SessionEnded {
                transport,
                client,
                reason,
            } => self.push(
                "session",
                json!({"event": "ended", "transport": transport, "client": client, "text": reason}),
            ),
            HostEvent::Hello { session_id } => self.push(
                "session",
                json!({"text": format!("hello from the backend, session {}", session_id.as_deref().unwrap_or("(none)"))}),
            ),
            HostEvent::Disconnected { reason, .. } => self.push(
                "session",
                json!({"text": format!("disconnected: {reason}")}),
            ),
            HostEvent::Activation { code, message } => {
                let activation = json!({"code": code, "message": message});
                let again = lock(&self.log).activation.replace(activation).is_some();
                if !again {
                    self.push("session", json!({"text": format!("not bound yet: activation code {code}")}));
                }
            }
            HostEvent::Activated => {
                lock(&self.log).activation = None;
                self.push("session", json!({"text": "bound"}));
            }
            HostEvent::FirmwareOffered {
                running,
                offered,
                url,
            } => {
                lock(&self.log).firmware_offered =
                    Some(json!({"running": running, "offered": offered, "url": url}));
                self.push(
                    "session",
                    json!({"text": format!("a newer firmware is offered: {offered} (running {running}); not installed")}),
                );
            }
            _ => {}
        }
    }

    /// An MCP endpoint link changed state: the link's view and the timeline.
    fn endpoint(&self, i: usize, url: &str, state: &mcp_host::endpoint::State) {
        use mcp_host::endpoint::State;
        let text = {
            let mut log = lock(&self.log);
            let Some(link) = log_link(&mut log, i) else {
                return;
            };
            link.url = shown(url);
            match state {
                State::Connected => {
                    link.state = "connected";
                    format!("MCP endpoint link {i} connected: {url}")
                }
                State::Session { count } => {
                    link.sessions = *count;
                    format!("MCP endpoint link {i}: agent session {count} began (initialize)")
                }
                State::Closed {
                    code,
                    reason,
                    say,
                    retry_in,
                } => {
                    link.state = if retry_in.is_some() {
                        "reconnecting"
                    } else {
                        "closed"
                    };
                    let retry = retry_in.map(|d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX));
                    link.last_end = shown_all(
                        json!({"code": code, "reason": reason, "say": say, "retry_in_ms": retry}),
                    );
                    format!(
                        "MCP endpoint link {i} ended: {reason}{}",
                        say.as_ref().map(|s| format!("; {s}")).unwrap_or_default()
                    )
                }
                State::Stopped { why } => {
                    link.state = "stopped";
                    format!("MCP endpoint link {i} stays off: {why}")
                }
                _ => return,
            }
        };
        self.push("session", json!({"text": text, "link": i}));
    }

    /// One press of the device's button: the finger presses it; the host, at its next tick,
    /// takes the press as a yes to the question the device showed before it, if any. The answer
    /// names that call — what the host did, not a guess made before.
    async fn press(self: Arc<Self>) -> Value {
        /// How long the host may take to report the press (a tick is 20 ms).
        const PATIENCE: std::time::Duration = std::time::Duration::from_secs(3);
        let (tx, rx) = std::sync::mpsc::channel();
        let _ = self.presses.send(tx);
        let sim = self.clone();
        let pressed = tokio::task::spawn_blocking(move || {
            let number = rx.recv_timeout(PATIENCE).ok()?;
            let deadline = Instant::now() + PATIENCE;
            loop {
                if let Some(p) = lock(&sim.log).pressed.iter().find(|p| p.number == number) {
                    return Some(p.clone());
                }
                if Instant::now() >= deadline {
                    return None;
                }
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
        })
        .await
        .ok()
        .flatten();
        let answers = pressed.as_ref().and_then(|p| p.answers.as_ref()).map(|w| {
            json!({"tool": w.tool, "id": w.id, "client": w.client, "question": w.question,
                            "approval": format!("{:016x}", w.approval)})
        });
        shown_all(json!({"pressed": pressed.is_some(), "answers": answers}))
    }

    /// Sets the sensors named in `body` (strictly checked); the readings after.
    fn set_sensors(&self, body: &[u8]) -> Result<Value, String> {
        let body: Value = if body.iter().all(u8::is_ascii_whitespace) {
            return Err("send {\"temperature\": °C} and/or {\"battery\": %}".into());
        } else {
            serde_json::from_slice(body).map_err(|e| format!("not JSON: {e}"))?
        };
        let Value::Object(fields) = body else {
            return Err("send a JSON object: {\"temperature\": 31.5, \"battery\": 20}".into());
        };
        if fields.is_empty() {
            return Err("name a sensor: temperature (°C) or battery (%)".into());
        }
        let mut temperature = None;
        let mut battery = None;
        for (k, v) in &fields {
            let (slot, (lo, hi), unit) = match k.as_str() {
                "temperature" => (&mut temperature, TEMPERATURE_C, "°C"),
                "battery" => (&mut battery, BATTERY_PERCENT, "%"),
                other => {
                    return Err(format!(
                        "unknown sensor {other:?}: the sensors are temperature and battery"
                    ));
                }
            };
            let x = v
                .as_f64()
                .filter(|_| v.is_number())
                .ok_or_else(|| format!("{k}: expected a number, got {v}"))?;
            if !(lo..=hi).contains(&x) {
                return Err(format!("{k}: {x} {unit} is out of range ({lo} to {hi})"));
            }
            *slot = Some(x);
        }
        let mut board = lock(&self.board);
        // In range, so the products fit an i32.
        #[allow(clippy::cast_possible_truncation)]
        let milli = |x: f64| (x * 1000.0).round() as i32;
        if let Some(t) = temperature {
            board.sim.thermometer.set_millicelsius(milli(t));
        }
        if let Some(b) = battery {
            board.sim.battery.set_millipercent(milli(b));
        }
        let now = sensors(&board);
        drop(board);
        let mut set = Map::new();
        if let Some(t) = temperature {
            set.insert("temperature".into(), t.into());
        }
        if let Some(b) = battery {
            set.insert("battery".into(), b.into());
        }
        self.push("sensor", Value::Object(set));
        Ok(json!({ "sensors": now }))
    }

    /// Everything the page shows; timeline entries after `since` only.
    pub fn state(&self, since: u64) -> Value {
        let board = lock(&self.board);
        let now = board.sim.now_ms();
        let motion = board.sim.motor.motion();
        let reboot_due = board
            .sim
            .system
            .scheduled_at()
            .map(|at| at.saturating_sub(now));
        let device = json!({
            "speaker": {"volume": board.sim.codec.stored_volume().get(), "muted": board.sim.codec.muted()},
            "screen": {"brightness": board.sim.backlight.level().get(), "theme": board.theme},
            "relay": {"on": board.sim.relay.contacts()},
            "motor": {"position": motion.position, "target": board.sim.motor.target(), "moving": motion.moving},
            "sensors": sensors(&board),
            "button": {"presses": board.watch.button.count(), "down": board.sim.button.is_down()},
            "fan": {"duty": board.sim.fan.duty().get(), "rpm": board.sim.fan.rpm(),
                    "target_rpm": SimFan::rpm_at(board.sim.fan.duty()), "max_rpm": SimFan::MAX_RPM},
            "camera": {"frames": board.sim.camera.frames()},
            "door_open": board.door_open,
            "reboot": {"scheduled": board.sim.system.schedules(), "due_in_ms": reboot_due},
        });
        drop(board);
        let log = lock(&self.log);
        let now = Instant::now();
        // What the device shows (the first on-device question), else a question the client
        // asks; the others wait their turn, in order.
        let ms = |d: std::time::Duration| u64::try_from(d.as_millis()).unwrap_or(u64::MAX);
        let view = |(w, at): &(Waiting, Instant)| {
            let left = (*at + w.expires_in).saturating_duration_since(now);
            let press = w
                .press_counts_in
                .map(|d| ms((*at + d).saturating_duration_since(now)));
            json!({"tool": w.tool, "id": w.id, "question": w.question, "client": w.client,
                   "on_device": w.on_device, "shown": w.shown_since.is_some(),
                   "press_counts_in_ms": press, "approval": format!("{:016x}", w.approval),
                   "expires_in_ms": ms(left)})
        };
        let confirmation = log
            .waiting
            .iter()
            .find(|(w, _)| w.shown_since.is_some() || !w.on_device)
            .map(view);
        let waiting: Vec<Value> = log.waiting.iter().map(view).collect();
        let (confirmation, waiting) = (confirmation.map(shown_all), shown_all(json!(waiting)));
        let mut about = log.about.clone();
        about.insert("transports".into(), json!(log.transports));
        let timeline: Vec<&Value> = log
            .entries
            .iter()
            .filter(|e| e["seq"].as_u64().is_some_and(|s| s > since))
            .collect();
        let mut state = match device {
            Value::Object(m) => m,
            _ => Map::new(),
        };
        state.insert("device".into(), Value::Object(about));
        state.insert("uptime_ms".into(), self.t_ms().into());
        state.insert("confirmation".into(), confirmation.unwrap_or(Value::Null));
        state.insert("waiting".into(), waiting);
        state.insert(
            "activation".into(),
            log.activation.clone().map_or(Value::Null, shown_all),
        );
        state.insert(
            "firmware_offered".into(),
            log.firmware_offered.clone().map_or(Value::Null, shown_all),
        );
        let links: Vec<Value> = log
            .links
            .iter()
            .map(|l| {
                json!({"url": l.url, "state": l.state, "sessions": l.sessions,
                       "last_end": l.last_end, "calls": l.calls})
            })
            .collect();
        state.insert("links".into(), json!(links));
        state.insert("timeline".into(), json!(timeline));
        state.insert("next_seq".into(), log.next_seq.into());
        Value::Object(state)
    }
}

/// The finger on the simulated button: holds it down until the board's debouncer has counted
/// the press, then lets go until it has seen the release, one press after the other. A timed
/// click ([`mcp_hal::sim::SimButton::press`]) is lost when no sample falls within it — a clock
/// tick late on a loaded machine — and a press through the API must always count.
fn finger(board: &Mutex<Board>, presses: &std::sync::mpsc::Receiver<std::sync::mpsc::Sender<u32>>) {
    /// How long the finger waits for the debouncer before it gives up on a press.
    const PATIENCE: std::time::Duration = std::time::Duration::from_secs(2);
    let until = |done: &dyn Fn(&Board) -> bool| {
        let deadline = Instant::now() + PATIENCE;
        while !done(&lock(board)) && Instant::now() < deadline {
            std::thread::sleep(std::time::Duration::from_millis(2));
        }
    };
    while let Ok(counted) = presses.recv() {
        let before = {
            let mut b = lock(board);
            b.sim.button.hold(true);
            b.watch.button.count()
        };
        until(&|b| b.watch.button.count() != before);
        let after = lock(board).watch.button.count();
        if after != before {
            let _ = counted.send(after);
        }
        lock(board).sim.button.hold(false);
        until(&|b| !b.watch.button.is_pressed());
    }
}

/// The readings: °C and %.
fn sensors(board: &Board) -> Value {
    json!({
        "temperature": f64::from(board.sim.thermometer.millicelsius()) / 1000.0,
        "battery": f64::from(board.sim.battery.millipercent()) / 1000.0,
    })
}

/// The view of link `i`, made when first named.
fn log_link(log: &mut Log, i: usize) -> Option<&mut LinkView> {
    if log.links.len() <= i {
        log.links.resize_with(i + 1, || LinkView {
            state: "connecting",
            last_end: Value::Null,
            ..LinkView::default()
        });
    }
    log.links.get_mut(i)
}

fn delivery_word(d: mcp_host::Delivery) -> &'static str {
    match d {
        mcp_host::Delivery::Written => "written",
        mcp_host::Delivery::Lost => "lost",
        _ => "pending",
    }
}

/// A call's entry; `press`: the number of the press that answered it.
fn call_fields(c: &CallReport, press: Option<u32>) -> Value {
    json!({
        "press": press,
        "call": c.number, "transport": c.transport, "client": c.client, "id": c.id,
        "tool": c.tool, "outcome": c.outcome.as_str(), "evidence": c.evidence, "text": c.text,
        "confirmed": c.confirmed, "replay": c.replay, "delivery": c.delivery.map(delivery_word),
        "approval": c.approval.map(|a| format!("{a:016x}")), "link": c.link,
    })
}

/// A string from a peer as the page shows it: mcp-core's one sanitizer of wire text — control
/// characters, bidi controls and characters that show nothing escaped (`\u{1b}`, `\u{202e}`,
/// `\u{200b}`) — and at most [`MAX_SHOWN`] characters. The one place the page's strings are
/// made safe.
pub fn shown(s: &str) -> String {
    mcp_core::transport::escape::escaped(s)
        .max_chars(MAX_SHOWN)
        .to_string()
}

/// `v` with every string in it (members' values, array items) [`shown`].
fn shown_all(v: Value) -> Value {
    match v {
        Value::String(s) => Value::String(shown(&s)),
        Value::Array(items) => Value::Array(items.into_iter().map(shown_all).collect()),
        Value::Object(m) => Value::Object(m.into_iter().map(|(k, v)| (k, shown_all(v))).collect()),
        other => other,
    }
}

fn reply(status: StatusCode, content_type: &'static str, body: impl Into<Body>) -> Response {
    let mut r = Response::new(body.into());
    *r.status_mut() = status;
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

fn json_reply(status: StatusCode, v: &Value) -> Response {
    reply(status, "application/json", v.to_string())
}

fn refuse(status: StatusCode, why: &str) -> Response {
    json_reply(status, &json!({ "error": why }))
}

fn is_json(headers: &HeaderMap) -> bool {
    headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.split(';').next())
        .is_some_and(|v| v.trim().eq_ignore_ascii_case("application/json"))
}

async fn page() -> Response {
    reply(StatusCode::OK, "text/html; charset=utf-8", PAGE)
}

async fn state(State(sim): State<Arc<Sim>>, uri: Uri) -> Response {
    let mut since = 0;
    for pair in uri.query().unwrap_or_default().split('&') {
        match pair.split_once('=') {
            Some(("since", v)) => match v.parse() {
                Ok(n) => since = n,
                Err(_) => {
                    return refuse(StatusCode::BAD_REQUEST, "since: expected a sequence number");
                }
            },
            _ if pair.is_empty() => {}
            _ => {
                return refuse(
                    StatusCode::BAD_REQUEST,
                    "GET /sim/state takes only ?since=SEQ",
                );
            }
        }
    }
    json_reply(StatusCode::OK, &sim.state(since))
}

async fn button(State(sim): State<Arc<Sim>>, headers: HeaderMap, body: Bytes) -> Response {
    let empty = body.iter().all(u8::is_ascii_whitespace);
    let ok = empty
        || (is_json(&headers)
            && serde_json::from_slice::<Value>(&body)
                .is_ok_and(|v| v.as_object().is_some_and(Map::is_empty)));
    if !ok {
        return refuse(
            StatusCode::BAD_REQUEST,
            "POST /sim/button takes no body, or the JSON object {}",
        );
    }
    json_reply(StatusCode::OK, &sim.press().await)
}

async fn sensor(State(sim): State<Arc<Sim>>, headers: HeaderMap, body: Bytes) -> Response {
    if !is_json(&headers) {
        return refuse(
            StatusCode::UNSUPPORTED_MEDIA_TYPE,
            "send Content-Type: application/json",
        );
    }
    match sim.set_sensors(&body) {
        Ok(v) => json_reply(StatusCode::OK, &v),
        Err(why) => refuse(StatusCode::BAD_REQUEST, &why),
    }
}

/// The page and the API, behind the Host/Origin rule (the page's own origin only) and with
/// bodies read whole within `body_timeout`.
pub fn router(sim: Arc<Sim>, body_timeout: Duration) -> Router {
    use axum::routing::{get, post};
    let origins = Origins::new(&sim.allowed_hosts, &[]);
    let api = Router::new()
        .route("/", get(page))
        .route("/sim/state", get(state))
        .route("/sim/button", post(button))
        .route("/sim/sensor", post(sensor))
        .fallback(|| async {
            refuse(
                StatusCode::NOT_FOUND,
                "not found: see GET /, GET /sim/state, POST /sim/button, POST /sim/sensor",
            )
        })
        .with_state(sim);
    let api = web::bounded_bodies(api, MAX_BODY, body_timeout, |e| match e {
        BodyError::TimedOut => refuse(
            StatusCode::REQUEST_TIMEOUT,
            "the body did not arrive in time",
        ),
        _ => refuse(
            StatusCode::PAYLOAD_TOO_LARGE,
            "the body is too large (at most 4096 bytes)",
        ),
    });
    web::guard(api, origins, |r| refuse(StatusCode::FORBIDDEN, r.message))
}

/// Serves the page and the API on `listener` (on the current tokio runtime) within `limits`
/// (its header timeout also bounds each body), forever.
pub async fn serve(
    sim: Arc<Sim>,
    listener: tokio::net::TcpListener,
    limits: Limits,
) -> std::io::Result<()> {
    web::serve(router(sim, limits.header_timeout), listener, limits).await
}

/// Parses `--ui`: `127.0.0.1:PORT`, `[::1]:PORT`, or a bare port (loopback).
pub fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from((std::net::Ipv4Addr::LOCALHOST, port)));
    }
    s.parse()
        .map_err(|_| format!("--ui wants ADDR:PORT (e.g. 127.0.0.1:8081), not {s:?}"))
}
