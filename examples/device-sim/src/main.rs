//! device-sim: a simulated xiaozhi-style device (speaker, screen, relay, motor, reboot) driven
//! by mcp-core, with mcp-hal's simulated hardware and tool kits.
//!
//! With no arguments it prints a short transcript of a demo session against itself. With
//! `--stdio` it is an MCP server on stdin/stdout (one JSON message per line, logs on stderr), so
//! that any MCP client can drive the engine as a black box. With `--http 127.0.0.1:PORT` it serves
//! Streamable HTTP at `/mcp` (both protocol eras), with `--xiaozhi-ws URL` it connects out to a
//! xiaozhi backend over WebSocket, as a xiaozhi device does, and with `--mqtt URL` it serves MCP
//! through an MQTT broker (EMQX's "MCP over MQTT": retained presence, per-client RPC topics), as
//! one device (`--device-id ID`) or a fleet of them in one process (`--devices N`); all through
//! mcp-host.
//!
//! `--confirm` serves the tool set with a person in the loop (`DemoBoard::CONFIRMED_TOOLS`:
//! `self.reboot` and switching the relay on ask first), and `--ui 127.0.0.1:PORT` (with any
//! transport) serves a live page of the device and the JSON API that drives its physical side:
//! the button, the sensors (see `ui.rs`).

mod board;
mod flash;
mod sensors;
mod ui;

use std::io::{self, BufRead, Write};
use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::mpsc::{self, RecvTimeoutError};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use board::Board;
use clap::{Parser, ValueEnum};
use mcp_core::server::{Delivery, Peer, Receipt};
use mcp_core::transport::escape::escaped;
use mcp_core::transport::xiaozhi::{self, DEVICE_HELLO, Envelope};
use mcp_core::{Config, Event, Input, Principal, Revision};
use mcp_hal::kits::button::Press;
use mcp_hal::sim::{ANSWER_BYTES, Fault, Faults};
use mcp_host::Board as _;
use mcp_host::report::{self, Reported};
use mcp_host::xiaozhi::Voice;
use mcp_host::{EventHook, HostEvent, HttpHost, HttpOptions, Waiting};

/// The simulator's capacities: up to 512 tools (built-in + fillers), 8 long-running actions
/// tracked at once, the rest the host's.
type Caps = mcp_host::HostCaps<512, 8>;
/// The smallest WebSocket message limit: room for a backend's `initialize` and a call however
/// small the pages.
const MIN_WS_MESSAGE: usize = 4096;

type Engine = mcp_host::Engine<Board, Caps>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EnvelopeKind {
    /// xiaozhi's `{"session_id":…,"type":"mcp","payload":{…}}` lines, after a hello exchange.
    Xiaozhi,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Who {
    /// An LLM through an MCP client: user-only tools are hidden and refused.
    Model,
    /// A person: user-only tools are listed with withUserTools and callable.
    User,
}

/// A simulated xiaozhi-style device driven by mcp-core.
///
/// Without options: print a demo transcript. With --stdio: serve MCP on stdin/stdout. With
/// --http ADDR: serve Streamable HTTP at http://ADDR/mcp. With --xiaozhi-ws URL: connect out to a
/// xiaozhi backend.
#[derive(Debug, Parser)]
#[command(version)]
#[command(group(clap::ArgGroup::new("xiaozhi").args(["xiaozhi_ws", "xiaozhi_ota", "mcp_endpoint"])))]
struct Cli {
    /// Serve MCP over stdin/stdout, one JSON message per line (logs go to stderr).
    #[arg(long)]
    stdio: bool,
    /// Serve Streamable HTTP at http://ADDR/mcp, both protocol eras (ADDR: 127.0.0.1:PORT, or a
    /// bare PORT for loopback). Binding beyond loopback needs --allow-host for the names clients use.
    #[arg(long, value_name = "ADDR", conflicts_with_all = ["stdio", "envelope", "xiaozhi_ws"])]
    http: Option<String>,
    /// With --http or --ui: also accept this host name in Host (repeatable; loopback names always
    /// are). DNS-rebinding protection refuses every other.
    #[arg(long = "allow-host", value_name = "NAME")]
    allow_hosts: Vec<String>,
    /// With --http: also accept requests from a web page at this origin (http://HOST:PORT,
    /// exact; repeatable), e.g. the MCP Inspector's web UI at http://localhost:6274. A browser's
    /// Origin must otherwise be the endpoint's own (http:// and its Host, port included).
    #[arg(long = "allow-origin", value_name = "ORIGIN", value_parser = origin, requires = "http")]
    allow_origins: Vec<String>,
    /// With --http: require `Authorization: Bearer TOKEN` on every request to /mcp (401 with a
    /// WWW-Authenticate challenge otherwise; the protected-resource metadata is served at
    /// /.well-known/oauth-protected-resource[/mcp]). TOKEN: 1 to 256 of letters, digits, -._~+/
    /// (then optional =). A token on the command line shows in `ps`: prefer --token-file.
    #[arg(
        long,
        value_name = "TOKEN",
        requires = "http",
        conflicts_with = "token_file"
    )]
    token: Option<String>,
    /// With --http: --token, read from this file (surrounding whitespace and the final newline
    /// are ignored).
    #[arg(long, value_name = "PATH", requires = "http")]
    token_file: Option<std::path::PathBuf>,
    /// With --http: also (or, without --token, only) take OAuth access tokens (JWT, ES256 or
    /// RS256) issued by the authorization server at this issuer URL, for this endpoint (RFC 8707
    /// audience); the protected-resource metadata names it, so MCP clients' OAuth flows find it.
    /// Its keys are fetched from its metadata (jwks_uri; plain HTTP from a loopback server
    /// only) and kept, or given with --oauth-jwks.
    #[arg(long, value_name = "URL", requires = "http")]
    oauth_issuer: Option<String>,
    /// With --oauth-issuer: this device's resource URL, the audience its tokens must carry (RFC
    /// 8707); the metadata names it as the resource. Default: the endpoint's URL from the
    /// address --http bound (http://127.0.0.1:PORT/mcp), fixed at start, never taken from a
    /// request; required when --http binds an unspecified address (0.0.0.0, ::) or clients use
    /// another name (an --allow-host name, mDNS, a TLS front end).
    #[arg(long, value_name = "URL", requires = "oauth_issuer")]
    oauth_audience: Option<String>,
    /// With --oauth-issuer: a scope every token must hold (repeatable); clients ask for it
    /// (scopes_supported, the challenge's scope), a token without it gets 403
    /// insufficient_scope.
    #[arg(long = "oauth-scope", value_name = "SCOPE", requires = "oauth_issuer")]
    oauth_scopes: Vec<String>,
    /// With --oauth-issuer: the authorization server's keys from this JWKS file instead of
    /// fetching them (as a firmware has them, at build time).
    #[arg(long, value_name = "PATH", requires = "oauth_issuer")]
    oauth_jwks: Option<std::path::PathBuf>,
    /// With --http: the most connections served at once; more wait until one closes.
    #[arg(long, value_name = "N", default_value_t = 128, requires = "http")]
    http_max_connections: usize,
    /// With --http: seconds a connection has to send a request head, from when it is ready for
    /// one (also the keep-alive idle timeout).
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = secs, requires = "http")]
    http_header_timeout: Duration,
    /// With --http: seconds a POST body has to arrive in full (then 408 and the connection
    /// closes).
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = secs, requires = "http")]
    http_body_timeout: Duration,
    /// With --http: the most legacy sessions; at the limit an idle one is ended, and when every
    /// one is in use (a running task, a call waiting for a person, an open stream) a new
    /// initialize gets 503 + Retry-After.
    #[arg(long, value_name = "N", default_value_t = 32, requires = "http")]
    max_sessions: usize,
    /// Connect to a xiaozhi backend's WebSocket URL (ws://…, or wss://… over TLS: the server's
    /// certificate must chain to the system's roots or --ca-file and name the URL's host), send
    /// the device hello and serve MCP in its envelope until the backend closes the connection.
    #[arg(long, value_name = "URL", conflicts_with_all = ["stdio", "envelope"])]
    xiaozhi_ws: Option<String>,
    /// Ask a xiaozhi OTA/config endpoint (http(s)://…/xiaozhi/ota/) where to connect, as a
    /// xiaozhi device does at boot: POST the device's description (Device-Id: --mac, Client-Id:
    /// a UUID derived from it), then connect to the WebSocket URL of the answer with its token
    /// (Authorization: Bearer, Protocol-Version, Device-Id, Client-Id). While the answer carries
    /// an activation code, it is shown (log, --ui page) and the check repeated every 5 s until
    /// the device is bound; a newer firmware in the answer is reported, never installed.
    #[arg(long, value_name = "URL", conflicts_with_all = ["stdio", "envelope", "http", "mqtt"])]
    xiaozhi_ota: Option<String>,
    /// Join a xiaozhi agent as a tool server through its MCP endpoint (MCP 接入点): connect out to
    /// this URL (wss://api.xiaozhi.me/mcp/?token=… from the agent's console, or a self-hosted
    /// ws(s)://HOST:8004/mcp_endpoint/mcp/?token=…) and answer the JSON-RPC the agent sends
    /// through it, one message per text frame. Repeatable: one device, several agents, each link
    /// its own client. ws:// only to a host on this machine or the LAN (the token is in the URL);
    /// the log and the page show the URL with the token as `…`. Reconnects (1 s doubling to 30 s)
    /// unless --once; a refused token (1008) is retried only every few minutes.
    #[arg(long = "mcp-endpoint", value_name = "URL", conflicts_with_all = ["stdio", "envelope", "http", "mqtt"])]
    mcp_endpoint: Vec<String>,
    /// With --mcp-endpoint: the tools the link offers, comma-separated names or patterns ending in
    /// `*` (`self.relay.*,self.get_device_status`); repeatable, the Nth for the Nth
    /// --mcp-endpoint (a link without one offers every tool). A call to another is refused as an
    /// unknown tool.
    #[arg(
        long = "endpoint-tools",
        value_name = "PATTERNS",
        requires = "mcp_endpoint"
    )]
    endpoint_tools: Vec<String>,
    /// With --mcp-endpoint: the largest frame the device sends at first, in bytes (it halves,
    /// down to 4 KiB, each time the endpoint closes the link with 1009 "message too big").
    #[arg(long, value_name = "BYTES", default_value_t = mcp_core::transport::endpoint::DEFAULT_MAX_FRAME, requires = "mcp_endpoint")]
    endpoint_max_frame: usize,
    /// With --xiaozhi-ota: seconds between checks while the device is not bound (or after a
    /// check failed).
    #[arg(long, value_name = "SECS", default_value = "5", value_parser = secs, requires = "xiaozhi_ota")]
    ota_retry: Duration,
    /// With --xiaozhi-ota: the device's MAC address (its Device-Id), aa:bb:cc:dd:ee:ff.
    #[arg(long, value_name = "MAC", default_value = "02:00:00:00:00:01", value_parser = mac, requires = "xiaozhi_ota")]
    mac: [u8; 6],
    /// With --xiaozhi-ws: a handshake header, "Name: value" (repeatable), e.g. "Device-Id: …".
    #[arg(long = "ws-header", value_name = "HEADER")]
    ws_headers: Vec<String>,
    /// With --xiaozhi-ws (or --mcp-endpoint): exit when the backend closes the connection or it fails, instead of
    /// reconnecting (--ws-backoff-first 1 s, doubling to --ws-backoff-max 30 s, with jitter) as a
    /// device does.
    #[arg(long, requires = "xiaozhi")]
    once: bool,
    /// With --xiaozhi-ws: seconds the backend's hello may take (from the device's); without it
    /// the device closes the connection and reconnects (a backend may drop an early hello).
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = secs, requires = "xiaozhi")]
    ws_hello_timeout: Duration,
    /// With --xiaozhi-ws: seconds to wait before reconnecting after a connection that ended
    /// without a session (no hello from the backend); doubles with every such connection up to
    /// --ws-backoff-max, and starts again here after one that had a session.
    #[arg(long, value_name = "SECS", default_value = "1", value_parser = secs, requires = "xiaozhi")]
    ws_backoff_first: Duration,
    /// With --xiaozhi-ws: the longest wait before reconnecting (each wait is drawn between half
    /// of its step and all of it).
    #[arg(long, value_name = "SECS", default_value = "30", value_parser = secs, requires = "xiaozhi")]
    ws_backoff_max: Duration,
    /// With --xiaozhi-ws or --mcp-endpoint: seconds a connection attempt (TCP connect and WebSocket handshake)
    /// may take before it is abandoned and retried.
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = secs, requires = "xiaozhi")]
    ws_connect_timeout: Duration,
    /// With --xiaozhi-ws or --mcp-endpoint: seconds between WebSocket pings of a quiet link.
    #[arg(long, value_name = "SECS", default_value = "15", value_parser = secs, requires = "xiaozhi")]
    ws_ping_interval: Duration,
    /// With --xiaozhi-ws or --mcp-endpoint: seconds of silence from the backend (no pong, no message) after which
    /// the link is declared dead and the device reconnects.
    #[arg(long, value_name = "SECS", default_value = "45", value_parser = secs, requires = "xiaozhi")]
    ws_dead_after: Duration,
    /// With --xiaozhi-ws: the largest message or frame the backend may send, in bytes (default:
    /// four pages, 4 x --page-bytes; with --mcp-endpoint 64 KiB); a larger one closes the link
    /// with 1009 "message too big".
    #[arg(long, value_name = "BYTES", requires = "xiaozhi")]
    ws_max_message: Option<usize>,
    /// Connect to an MQTT broker (mqtt://HOST:PORT, or mqtts://HOST:PORT over TLS, port 8883 by
    /// default, the certificate checked as for wss://; mqtt://USER:PASSWORD@HOST:PORT for a
    /// broker that wants credentials: everything up to the last @ is the user info, a `%` in
    /// it is written %25; logs and the page show the URL without them) and serve MCP over MQTT
    /// after EMQX's
    /// convention: a retained presence on $mcp-server/presence/ID/NAME (cleared by the will),
    /// initialize on $mcp-server/ID/NAME, each client on $mcp-rpc/CLIENT/ID/NAME. Reconnects
    /// forever (1 s, doubling to 30 s, with jitter).
    #[arg(long, value_name = "URL", conflicts_with_all = ["stdio", "envelope", "xiaozhi_ws", "http"])]
    mqtt: Option<String>,
    /// Trust the CA certificates in this PEM file (repeatable) besides the system's roots, on
    /// every TLS link: wss:// (--xiaozhi-ws), mqtts:// (--mqtt), https:// (--xiaozhi-ota). A
    /// certificate that does not verify is refused, and the log says why (unknown issuer,
    /// expired, wrong name).
    #[arg(long = "ca-file", value_name = "PEM")]
    ca_files: Vec<std::path::PathBuf>,
    /// With --mqtt: the device id (its MQTT client id and server-id). With --devices N > 1 the
    /// devices are ID-1 … ID-N (zero-padded).
    #[arg(
        long,
        value_name = "ID",
        default_value = "device-sim",
        requires = "mqtt"
    )]
    device_id: String,
    /// With --mqtt: host N simulated devices in this process, each with its own board, engine and
    /// MQTT connection (a fleet on one broker).
    #[arg(long, value_name = "N", default_value_t = 1, requires = "mqtt")]
    devices: usize,
    /// With --mqtt: the server name the devices offer (a /-separated type path).
    #[arg(
        long,
        value_name = "NAME",
        default_value = "devices/device-sim",
        requires = "mqtt"
    )]
    server_name: String,
    /// With --mqtt: seconds between MQTT keep-alive pings (at least 5); a broker silent for one
    /// and a half of them is a dead link.
    #[arg(long, value_name = "SECS", default_value = "15", value_parser = secs, requires = "mqtt")]
    mqtt_keep_alive: Duration,
    /// Wrap messages in a transport envelope (implies --stdio).
    #[arg(long, value_enum)]
    envelope: Option<EnvelopeKind>,
    /// Who is on the other end of the connection.
    #[arg(long, value_enum, default_value = "model")]
    principal: Who,
    /// Byte budget of one tools/list page.
    #[arg(long, default_value_t = 8000)]
    page_bytes: usize,
    /// Add N filler tools (about 300 bytes of schema each) so that paging can be seen.
    #[arg(long, default_value_t = 0)]
    extra_tools: usize,
    /// Print the tools this simulator serves with these options, in listing order, as one JSON
    /// line (`{"tools":[{"name":…,"audience":"model"|"user"}, …]}`), and exit. Tests compare
    /// what clients list against it rather than against a copy of the board's table.
    #[arg(long)]
    list_tools: bool,
    /// Inject a hardware fault (repeatable); `--fault list` prints them.
    #[arg(long = "fault", value_name = "NAME")]
    faults: Vec<String>,
    /// Start with the door sensor reading open: the relay's interlock refuses to switch on.
    #[arg(long)]
    door_open: bool,
    /// Put a person in the loop: self.reboot (then open to the model) and switching the relay on
    /// ask for confirmation first — through the client's elicitation when it has it, else by a
    /// press of the device's button (--ui's POST /sim/button) within 30 s (--confirm-timeout).
    #[arg(long)]
    confirm: bool,
    /// With --confirm: whole seconds a person has to answer (the client's question or the
    /// device's button) before the call is dropped, nothing done.
    #[arg(long, value_name = "SECS", default_value_t = 30,
          value_parser = clap::value_parser!(u32).range(1..=3600), requires = "confirm")]
    confirm_timeout: u32,
    /// With --confirm: milliseconds a question must be on the device before a press answers it,
    /// and the button's bounce time: a press this soon after the previous one answers nothing
    /// (so the second half of a quick double press never approves the next question).
    #[arg(long, value_name = "MS", default_value_t = 1000,
          value_parser = clap::value_parser!(u32).range(0..=60_000), requires = "confirm")]
    press_after_ms: u32,
    /// Whole seconds a call may keep its answer back for a client that can neither ask its user
    /// nor follow a task (a xiaozhi backend): a call waiting for the device's button, or a
    /// long-running action, is answered with its real outcome when it comes in time; past it,
    /// with what waits or what was started. 0: answer at once. Keep it under the client's own
    /// timeout (a xiaozhi backend waits 30 s).
    #[arg(long, value_name = "SECS", default_value_t = 25,
          value_parser = clap::value_parser!(u32).range(0..=3600))]
    hold_answer: u32,
    /// On the xiaozhi wire (--envelope xiaozhi, --xiaozhi-ws, --xiaozhi-ota): the device speaks
    /// first. A press of the button with no question waiting is a doorbell, and the temperature
    /// rising above 40 °C (/sim/sensor) a heat alarm: each starts a turn of the backend's model
    /// ("Device event: the doorbell button was pressed"), at most one per event every 10 s (the heat
    /// alarm: a minute), never while the backend speaks. On MCP wires the same changes are
    /// resource updates, as without it.
    #[arg(long)]
    speak_first: bool,
    /// Serve a live page of the simulated device at http://ADDR/ (ADDR: 127.0.0.1:PORT, or a bare
    /// PORT for loopback), with its JSON API: GET /sim/state, POST /sim/button, POST /sim/sensor.
    /// Works with every transport (with --mqtt --devices N, it shows the first device). Only the
    /// page's own origin may call the API from a browser.
    #[arg(long, value_name = "ADDR")]
    ui: Option<String>,
    /// With --ui: the most connections the page's server takes at once; more wait until one
    /// closes.
    #[arg(long, value_name = "N", default_value_t = 32, requires = "ui")]
    ui_max_connections: usize,
    /// With --ui: seconds a connection has to send a request head, from when it is ready for one
    /// (also the keep-alive idle timeout), and a POST its body.
    #[arg(long, value_name = "SECS", default_value = "10", value_parser = secs, requires = "ui")]
    ui_header_timeout: Duration,
    /// With --http: seconds between keep-alive comments on open SSE streams (a 2026-07-28 listen
    /// stream whose client has gone is ended within about two of them).
    #[arg(long, value_name = "SECS", default_value = "15", value_parser = secs, requires = "http")]
    sse_keepalive: Duration,
    /// With --http: advertise the endpoint on the LAN by mDNS/DNS-SD as a `_mcp._tcp` service
    /// (TXT path=/mcp, proto, version), on the interfaces the listener serves (loopback only for
    /// 127.0.0.1). SIGINT/SIGTERM withdraw it (goodbye packets) before exiting.
    #[arg(long, requires = "http")]
    mdns: bool,
    /// With --mdns: the instance name (default device-sim-PORT). Its host name, NAME.local
    /// made DNS-safe and ending in -PORT, is accepted in Host.
    #[arg(long, value_name = "NAME", requires = "mdns")]
    mdns_name: Option<String>,
    /// Keep the device's flash in FILE (created when absent) and serve firmware upgrades over
    /// MCP: self.upgrade_firmware and self.firmware.write (user-only; with --confirm open to the
    /// model, a person confirms the upgrade first), self.firmware.status. A
    /// reboot then restarts this process for real, into the upgraded firmware on trial; it
    /// rolls back when the image is not for this board or restarts before answering.
    #[arg(long, value_name = "FILE")]
    flash: Option<std::path::PathBuf>,
}

/// The engine, the board and the transport state.
struct Device {
    engine: Box<Engine>,
    /// Shared with `--ui`, which moves the sensors and presses the button.
    board: Arc<Mutex<Board>>,
    principal: Principal,
    out: Vec<u8>,
    envelope: Option<EnvelopeKind>,
    session_id: Option<String>,
    /// What the device shows of a call waiting for its button, and the presses seen so far.
    panel: mcp_host::Panel,
    /// The calls waiting for a person, as last reported.
    waiting: Vec<Waiting>,
    /// Where calls, updates and confirmations are reported (`--ui`'s timeline).
    on_event: Option<EventHook>,
    /// What the device says of its own on the xiaozhi wire: outcomes after a call's answer,
    /// the news after a start-up, and (`--speak-first`) its events.
    voice: Voice,
    /// The backend's hello came (the device may speak of its own from then).
    greeted: bool,
}

/// What one input line came to.
struct Answer {
    bytes: Vec<u8>,
    receipt: Option<Receipt>,
    /// The call and the session start it makes, reported once the answer is written.
    reported: Reported,
}

impl Device {
    fn transport(&self) -> &'static str {
        match self.envelope {
            None => "stdio",
            Some(EnvelopeKind::Xiaozhi) => "stdio-xiaozhi",
        }
    }

    fn report(&self, e: &HostEvent) {
        if let Some(hook) = &self.on_event {
            hook(e);
        }
    }

    /// Sets the time of the board and the engine, and returns every message the engine owes. A
    /// new press of the button is a yes to the question the device shows, if it showed it
    /// before the press; on the xiaozhi wire, what the device says of its own follows (an
    /// outcome heard after a call's answer right after its message).
    fn tick(&mut self, now_ms: u64) -> Vec<Vec<u8>> {
        let transport = self.transport();
        let board_arc = self.board.clone();
        let mut board = lock(&board_arc);
        // The clock, and a due reboot (with --flash, a real restart; on the xiaozhi wire only
        // once the device's last words are spoken).
        mcp_host::Board::hold_restart(&mut *board, self.voice.busy(now_ms));
        mcp_host::Board::tick(&mut *board, now_ms);
        sensors::publish(&mut board, &mut self.engine, now_ms);
        let mut events = board.events(now_ms);
        let (numbers, answers) = self.panel.presses(board.confirm_presses(), now_ms);
        let answered = answers.and_then(|approval| {
            let asked = mcp_host::Asked::of(&self.engine)?;
            self.engine
                .confirm_on_device(approval, true, now_ms)
                .then(|| Waiting::new(&asked, now_ms, asked.pending.shown_ms))
        });
        for p in mcp_host::Pressed::numbered(numbers, answered) {
            // A press when no question waited is the board's press event (a doorbell).
            let rang = Press::of(p.answers.is_some(), !self.waiting.is_empty()).rang();
            if let (true, Some(e)) = (rang, board.press_event()) {
                events.push((e, None));
            }
            self.report(&HostEvent::Pressed(p));
        }
        let held_before = mcp_host::Asked::of(&self.engine);
        let mut msgs = Vec::new();
        let mut payloads = Vec::new();
        let mut said = Vec::new();
        loop {
            let (engine, sid) = (&mut self.engine, self.session_id.as_deref());
            let board = &mut *board;
            let mut heard = None;
            let n = match self.envelope {
                None => {
                    let p = engine.poll_with(now_ms, board, &mut self.out);
                    payloads.push((self.out.get(..p.len).unwrap_or_default().to_vec(), p.to));
                    p.len
                }
                Some(EnvelopeKind::Xiaozhi) => xiaozhi::wrap(sid, &mut self.out, |buf| {
                    let p = engine.poll_with(now_ms, board, buf);
                    payloads.push((buf.get(..p.len).unwrap_or_default().to_vec(), p.to));
                    heard = p.heard;
                    p.len
                }),
            };
            if n == 0 {
                payloads.pop();
                break;
            }
            msgs.push(self.out.get(..n).unwrap_or_default().to_vec());
            // The outcome heard after a call's answer, spoken once the backend is not speaking.
            let message = payloads.last().map(|p| p.0.as_slice()).unwrap_or_default();
            if let Some(h) = heard {
                self.voice.outcome(sid, message, &h);
            }
        }
        if self.envelope.is_some() {
            let sid = self.session_id.as_deref();
            let fired = if self.greeted {
                let news = (!self.voice.told_boot())
                    .then(|| board.boot_news())
                    .flatten();
                self.voice.boot(sid, news);
                events
            } else {
                Vec::new()
            };
            for s in self.voice.speak(sid, fired, now_ms) {
                msgs.push(s.frame.clone().into_bytes());
                said.push(s);
            }
        }
        drop(board);
        for s in said {
            self.report(&HostEvent::Said {
                transport,
                text: s.text,
                event: s.event,
            });
        }
        let held_after = mcp_host::Asked::of(&self.engine);
        for (p, to) in &payloads {
            let from = report::Polled {
                engine: report::engine_key(&self.engine),
                to: *to,
                held_before: held_before.as_ref(),
                held_after: held_after.as_ref(),
            };
            if let Some(e) = report::emitted(transport, &from, p, true) {
                self.report(&e);
            }
        }
        let held: Vec<mcp_host::Asked> = held_after.into_iter().collect();
        let shown = self.panel.show(&held, now_ms);
        if !Waiting::same_shown(&shown, &self.waiting) {
            self.waiting = shown.clone();
            self.report(&HostEvent::Waiting(shown));
        }
        msgs
    }

    /// Handles one input line; returns the answer to send, if any, its receipt when it answers
    /// an acting call, and what the application is to hear of it once it is written (a call
    /// whose answer is held back is reported at once).
    fn line(&mut self, msg: &[u8], principal: Principal, now_ms: u64) -> Option<Answer> {
        let transport = self.transport();
        let mut receipt = None;
        let mut reported = Reported::default();
        let board_arc = self.board.clone();
        let mut board = lock(&board_arc);
        let n = match self.envelope {
            None => handle(
                &mut self.engine,
                Input::new(msg, principal),
                &mut board,
                &mut self.out,
                (transport, &mut receipt, &mut reported),
            ),
            Some(EnvelopeKind::Xiaozhi) => {
                let env = Envelope::parse(msg);
                if let Ok(env) = &env {
                    // Its `tts` frames say when the backend speaks (no turn of the device's then).
                    self.voice.hear(env, now_ms);
                    if env.is("tts") || env.is("stt") || env.is("pong") {
                        return None;
                    }
                }
                if let Ok(env) = &env
                    && env.is("hello")
                {
                    // A new hello is a new conversation: the one before it ends (its question
                    // withdrawn, nothing of it sent to the new one).
                    if self.greeted {
                        let before = self
                            .session_id
                            .as_deref()
                            .map_or(Peer::ONLY, |s| Peer::named(s.as_bytes()));
                        self.engine.end_conversation(before);
                    }
                    self.greeted = true;
                    self.session_id = usable_session_id(env);
                    eprintln!(
                        "device-sim: hello from the server, session \"{}\"",
                        escaped(self.session_id.as_deref().unwrap_or(""))
                    );
                    // A backend cannot subscribe: the device subscribes it to everything live,
                    // and the updates go out in the envelope (the xiaozhi convention).
                    for uri in board.live_resources() {
                        self.engine.subscribe(uri);
                    }
                    drop(board);
                    self.report(&HostEvent::Hello {
                        session_id: self.session_id.clone(),
                    });
                    return None;
                }
                let payload = match &env {
                    Ok(env) => {
                        let Some(payload) = env.mcp_payload() else {
                            eprintln!("device-sim: ignoring a non-MCP message");
                            return None;
                        };
                        payload
                    }
                    // No envelope anyone can read: the engine answers it as it answers any
                    // unreadable message (-32700, `id: null`), in an `mcp` envelope.
                    Err(_) => msg,
                };
                // Answer in the session the server gave us, or the one the message names.
                let sid = self
                    .session_id
                    .clone()
                    .or_else(|| env.as_ref().ok().and_then(usable_session_id));
                // The backend session is the peer whose retransmissions are recognised.
                let peer = sid
                    .as_deref()
                    .map_or(Peer::ONLY, |s| Peer::named(s.as_bytes()));
                let (engine, told) = (&mut self.engine, (transport, &mut receipt, &mut reported));
                let board = &mut *board;
                xiaozhi::wrap(sid.as_deref(), &mut self.out, |buf| {
                    handle(
                        engine,
                        Input::new(payload, principal).peer(peer),
                        board,
                        buf,
                        told,
                    )
                })
            }
        };
        drop(board);
        if n == 0 {
            // Nothing to write (a notification, a call whose answer is held back): what it
            // made is heard now.
            for e in reported.events(None) {
                self.report(&e);
            }
            return None;
        }
        Some(Answer {
            bytes: self.out.get(..n).unwrap_or_default().to_vec(),
            receipt,
            reported,
        })
    }

    /// `true` when the engine holds a question for the device that it does not show yet.
    fn unshown(&self) -> bool {
        self.engine.confirmation().is_some_and(|p| {
            p.on_device
                && !self
                    .waiting
                    .iter()
                    .any(|w| w.approval == p.approval.get() && w.shown_since.is_some())
        })
    }

    /// Records what became of an answer: written to stdout, or lost.
    fn delivered(&mut self, answer: Answer, written: bool) {
        let d = if written {
            Delivery::Written
        } else {
            Delivery::Lost
        };
        if let Some(r) = answer.receipt {
            self.engine.delivered(r, d);
        }
        for e in answer.reported.events(Some(d)) {
            self.report(&e);
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The envelope's `session_id` if it may be echoed and logged; an unusable one (too long, control
/// characters) is ignored, and said so with its length only.
fn usable_session_id(env: &Envelope<'_>) -> Option<String> {
    let usable = env.usable_session_id().map(|s| s.to_cow().into_owned());
    if let (None, Some(raw)) = (&usable, env.session_id) {
        log_event(&HostEvent::UnusableSessionId {
            len: raw.raw().len(),
        });
    }
    usable
}

/// Hands one message to the engine, as every transport does ([`report::handle`]); logs events.
/// Returns the response length; `told` names the transport, and gets the receipt of an acting
/// call's answer and what the application is to hear of the message.
fn handle(
    engine: &mut Engine,
    input: Input<'_>,
    board: &mut Board,
    out: &mut [u8],
    told: (&'static str, &mut Option<Receipt>, &mut Reported),
) -> usize {
    let (transport, receipt, reported) = told;
    match report::handle(engine, input, board, out, &mut |_: &[u8]| {}, transport) {
        Ok((h, heard)) => {
            *reported = heard;
            if let Some(Event::Initialized { revision, vision }) = h.event {
                eprintln!("device-sim: initialized, protocol {}", revision.as_str());
                if let Some(v) = vision {
                    eprintln!("device-sim: vision endpoint {}", escaped(&v.url.to_cow()));
                }
            }
            if let Some(first) = h.replay {
                eprintln!(
                    "device-sim: a retransmission answered from the first answer (that one was {}); nothing ran again",
                    delivery_word(first)
                );
            }
            *receipt = h.receipt;
            if h.len > 0 && h.ran.is_some() {
                // Up and answering a tool call: an upgraded firmware on trial confirms itself.
                board.answered();
            }
            h.len
        }
        Err(e) => {
            eprintln!("device-sim: {e}");
            0
        }
    }
}

/// The tool set: the board's tools and `--extra-tools` fillers (built once, leaked).
struct Tools {
    config: Config,
    fillers: Vec<&'static mcp_core::Tool<Board>>,
    confirm: bool,
    /// `--flash`: the firmware upgrade tools too.
    firmware: bool,
}

impl Tools {
    fn new(cli: &Cli) -> Self {
        Tools {
            config: Config::new("device-sim", flash::version())
                .page_bytes(cli.page_bytes)
                .confirm_timeout(cli.confirm_timeout.saturating_mul(1000))
                .hold_answer(cli.hold_answer.saturating_mul(1000))
                .confirm_min_shown(cli.press_after_ms)
                .prompts(Board::PROMPTS),
            fillers: (1..=cli.extra_tools).map(board::filler_tool).collect(),
            confirm: cli.confirm,
            firmware: cli.flash.is_some(),
        }
    }

    /// An engine with every tool registered (`--confirm`: the confirmed set).
    fn engine(&self) -> Result<Box<Engine>, String> {
        self.engine_with(self.config, None)
    }

    /// An engine of `config` with the tools `only` admits (all: `None`) registered.
    fn engine_with(&self, config: Config, only: Option<&[&str]>) -> Result<Box<Engine>, String> {
        let admitted = |t: &&mcp_core::Tool<Board>| {
            only.is_none_or(|only| mcp_core::transport::endpoint::admits(only, t.name()))
        };
        let mut engine = Box::new(Engine::new(config));
        let tools = if self.confirm {
            Board::CONFIRMED_TOOLS
        } else {
            Board::TOOLS
        };
        let firmware = match (self.firmware, self.confirm) {
            (false, _) => &[],
            (true, false) => Board::FIRMWARE_TOOLS,
            (true, true) => Board::CONFIRMED_FIRMWARE_TOOLS,
        };
        for tool in tools
            .iter()
            .chain(firmware)
            .copied()
            .chain(self.fillers.iter().copied())
            .filter(admitted)
        {
            engine.register(tool).map_err(|e| e.to_string())?;
        }
        sensors::register(&mut engine)?;
        Ok(engine)
    }

    /// A factory for the host (one engine per session). Registration was checked at start-up
    /// with the same tools, so it cannot fail here; if it did, the engine would have no tools.
    fn factory(self) -> mcp_host::Factory<Board, Caps> {
        Arc::new(move || {
            self.engine()
                .unwrap_or_else(|_| Box::new(Engine::new(self.config)))
        })
    }
}

/// A URL as logs and the page show it: without user info (`device_link::Url`), or only that it
/// cannot be read.
fn shown_url(url: &str) -> String {
    match device_link::Url::parse(url) {
        Ok(u) => u.to_string(),
        Err(e) => format!("(a URL that cannot be used: {e})"),
    }
}

/// `aa:bb:cc:dd:ee:ff`.
fn mac(s: &str) -> Result<[u8; 6], String> {
    let mut out = [0u8; 6];
    let mut parts = s.split([':', '-']);
    for b in &mut out {
        *b = parts
            .next()
            .and_then(|p| u8::from_str_radix(p, 16).ok().filter(|_| p.len() == 2))
            .ok_or_else(|| format!("{s:?} is not a MAC address (aa:bb:cc:dd:ee:ff)"))?;
    }
    if parts.next().is_some() {
        return Err(format!("{s:?} is not a MAC address (aa:bb:cc:dd:ee:ff)"));
    }
    Ok(out)
}

/// The roots of every TLS link: the system's, and `--ca-file`'s.
fn tls(cli: &Cli) -> mcp_host::tls::Tls {
    cli.ca_files
        .iter()
        .fold(mcp_host::tls::Tls::system(), |t, f| t.ca_file(f))
}

/// The answer buffer: a page plus its envelope, the JSON-RPC head and an id, and never less than
/// the demo board's tools are planned for ([`ANSWER_BYTES`]: the camera's schema admits the
/// largest frame such an answer holds).
fn out_len(cli: &Cli) -> usize {
    (cli.page_bytes + 1024).max(ANSWER_BYTES)
}

fn principal(cli: &Cli) -> Principal {
    match cli.principal {
        Who::Model => Principal::Model,
        Who::User => Principal::User,
    }
}

fn build(
    cli: &Cli,
    board: Arc<Mutex<Board>>,
    on_event: Option<EventHook>,
) -> Result<Device, String> {
    let engine = Tools::new(cli).engine()?;
    let principal = principal(cli);
    let presses = lock(&board).confirm_presses();
    Ok(Device {
        engine,
        board,
        principal,
        // A page plus its envelope, the JSON-RPC head and an id always fit; and never less than
        // the demo board's answers are planned for (the camera's schema is derived from it).
        out: vec![0u8; out_len(cli)],
        envelope: cli.envelope,
        session_id: None,
        panel: mcp_host::Panel::new(presses),
        waiting: Vec::new(),
        on_event,
        voice: Voice::new(cli.speak_first),
        greeted: false,
    })
}

/// What the xiaozhi wire asks of the options: a hold budget the backend waits out (it gives up on
/// a call after 30 s, through an MCP endpoint too), and `--speak-first` only where a device can
/// start a turn.
fn check_xiaozhi(cli: &Cli) -> Result<(), String> {
    let xiaozhi = cli.envelope.is_some() || cli.xiaozhi_ws.is_some() || cli.xiaozhi_ota.is_some();
    if xiaozhi || !cli.mcp_endpoint.is_empty() {
        xiaozhi::check_hold_answer(cli.hold_answer.saturating_mul(1000)).map_err(|e| {
            format!(
                "--hold-answer {}: {e}; give --hold-answer 29 or less (the default is 25)",
                cli.hold_answer
            )
        })?;
    }
    if cli.speak_first && !xiaozhi {
        return Err(
            "--speak-first starts turns on the xiaozhi wire (--envelope xiaozhi, \
                    --xiaozhi-ws, --xiaozhi-ota); on MCP wires a press and a reading are resource \
                    updates already"
                .into(),
        );
    }
    Ok(())
}

fn parse_faults(names: &[String]) -> Result<Option<Faults>, String> {
    if names.iter().any(|n| n == "list") {
        return Ok(None);
    }
    let mut faults = Faults::NONE;
    for name in names {
        let fault = Fault::from_name(name)
            .filter(|f| Fault::CLI.contains(f))
            .ok_or_else(|| format!("unknown fault {name:?}; `--fault list` prints the faults"))?;
        faults.insert(fault);
    }
    Ok(Some(faults))
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if (cli.token.is_some() || cli.token_file.is_some()) && cli.http.is_none() {
        // A token protects the HTTP endpoint only; silently serving another transport
        // without it would mislead.
        eprintln!(
            "device-sim: --token and --token-file protect --http; no other transport has them"
        );
        return ExitCode::from(2);
    }
    if cli.list_tools {
        return match Tools::new(&cli).engine() {
            Ok(engine) => {
                let tools: Vec<_> = engine
                    .registry()
                    .tools()
                    .map(|t| {
                        let audience = match t.audience() {
                            mcp_core::Audience::Model => "model",
                            mcp_core::Audience::User => "user",
                        };
                        serde_json::json!({"name": t.name(), "audience": audience})
                    })
                    .collect();
                println!("{}", serde_json::json!({ "tools": tools }));
                ExitCode::SUCCESS
            }
            Err(e) => {
                eprintln!("device-sim: {e}");
                ExitCode::from(2)
            }
        };
    }
    if let Err(e) = check_xiaozhi(&cli) {
        eprintln!("device-sim: {e}");
        return ExitCode::from(2);
    }
    let faults = match parse_faults(&cli.faults) {
        Ok(Some(f)) => f,
        Ok(None) => {
            for f in Fault::CLI {
                println!("{:<18} {}", f.name(), f.description());
            }
            return ExitCode::SUCCESS;
        }
        Err(e) => {
            eprintln!("device-sim: {e}");
            return ExitCode::from(2);
        }
    };
    let mut board = sensors::power_up(faults, cli.door_open);
    if let Some(path) = &cli.flash {
        if cli.devices > 1 {
            eprintln!("device-sim: --flash is one device's flash; not with --devices");
            return ExitCode::from(2);
        }
        if let Err(e) = flash::power_up(&mut board, path) {
            eprintln!("device-sim: {e}");
            return ExitCode::from(2);
        }
    }
    let board = Arc::new(Mutex::new(board));
    let sim = match &cli.ui {
        Some(addr) => match start_ui(&cli, addr, board.clone()) {
            Ok(sim) => Some(sim),
            Err(e) => {
                eprintln!("device-sim: {e}");
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    if cli.http.is_some()
        || cli.xiaozhi_ws.is_some()
        || cli.xiaozhi_ota.is_some()
        || cli.mqtt.is_some()
        || !cli.mcp_endpoint.is_empty()
    {
        return match serve_network(&cli, faults, board, sim) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                // May carry a peer's words (a backend's close reason, a broker's error).
                eprintln!("device-sim: {}", escaped(&e).max_chars(LOG_CHARS));
                ExitCode::FAILURE
            }
        };
    }
    let on_event = sim
        .clone()
        .map(|sim| -> EventHook { Arc::new(move |e| sim.event(e)) });
    if let Some(sim) = &sim {
        sim.add_transport(match cli.envelope {
            Some(EnvelopeKind::Xiaozhi) => "stdio (xiaozhi envelope)".into(),
            None if cli.stdio => "stdio".into(),
            None => "demo transcript".into(),
        });
    }
    let mut device = match build(&cli, board, on_event) {
        Ok(d) => d,
        Err(e) => {
            eprintln!("device-sim: {e}");
            return ExitCode::from(2);
        }
    };
    if !faults.is_empty() {
        eprintln!("device-sim: injected faults: {faults}");
    }
    let result = if cli.stdio || cli.envelope.is_some() {
        // Unguessable task ids: seed the key from the OS's randomness.
        device.engine.set_entropy(os_entropy());
        serve(&mut device)
    } else {
        demo(&mut device)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!(
                "device-sim: {}",
                escaped(&e.to_string()).max_chars(LOG_CHARS)
            );
            ExitCode::FAILURE
        }
    }
}

/// The longest text a log line carries from a link's error, which may hold a peer's words (a
/// backend's close reason, a broker's error): enough for a TLS refusal's whole hint and a peer's
/// reason beside it.
const LOG_CHARS: usize = 512;

fn delivery_word(d: Delivery) -> &'static str {
    match d {
        Delivery::Pending => "not yet reported",
        Delivery::Written => "written out",
        Delivery::Lost => "lost with the link",
        // (`Delivery` may grow: a state this version does not know is reported as such.)
        _ => "in a state this version does not know",
    }
}

fn log_event(e: &HostEvent) {
    match e {
        HostEvent::Initialized {
            revision,
            vision_url,
            client,
            ..
        } => {
            eprintln!(
                "device-sim: initialized, protocol {} ({})",
                revision.as_str(),
                escaped(client)
            );
            if let Some(url) = vision_url {
                eprintln!("device-sim: vision endpoint {}", escaped(url));
            }
        }
        HostEvent::Hello { session_id } => eprintln!(
            "device-sim: hello from the server, session \"{}\"",
            escaped(session_id.as_deref().unwrap_or(""))
        ),
        HostEvent::UnusableSessionId { len } => eprintln!(
            "device-sim: ignored a session_id of {len} bytes (more than {} or not printable ASCII); \
             replies carry none",
            xiaozhi::MAX_SESSION_ID_LEN
        ),
        HostEvent::Connected { to } => eprintln!("device-sim: connected to {}", escaped(to)),
        HostEvent::Activation { code, message } => eprintln!(
            "device-sim: not bound yet: activation code {} ({}); checking again until it is bound",
            escaped(code),
            escaped(message)
        ),
        HostEvent::Activated => {
            eprintln!("device-sim: bound: the OTA check has no activation any more")
        }
        HostEvent::FirmwareOffered {
            running,
            offered,
            url,
        } => eprintln!(
            "device-sim: a newer firmware is offered: {} (running {running}){}; not installed \
             (with --flash, a client installs one through self.upgrade_firmware)",
            escaped(offered),
            url.as_deref()
                .map(|u| format!(" at {}", escaped(u)))
                .unwrap_or_default()
        ),
        HostEvent::SessionEnded {
            transport,
            client,
            reason,
        } => eprintln!(
            "device-sim: {transport} session of {} ended: {reason}",
            escaped(client)
        ),
        HostEvent::Disconnected { reason, retry_in } => match retry_in {
            Some(t) => eprintln!(
                "device-sim: disconnected ({}); reconnecting in {} ms",
                escaped(reason).max_chars(LOG_CHARS),
                t.as_millis()
            ),
            None => eprintln!(
                "device-sim: disconnected ({})",
                escaped(reason).max_chars(LOG_CHARS)
            ),
        },
        HostEvent::Call(c) if c.id.is_empty() => eprintln!(
            "device-sim: {} {} on the device: {}",
            escaped(&c.tool),
            if c.confirmed == Some(true) {
                "confirmed"
            } else {
                "not confirmed"
            },
            escaped(&c.text)
        ),
        HostEvent::Said { text, event, .. } => match event {
            Some(name) => eprintln!("device-sim: {name}: said {}", escaped(text)),
            None => eprintln!("device-sim: said {}", escaped(text)),
        },
        HostEvent::Endpoint { link, url, state } => {
            use mcp_host::endpoint::State;
            match state {
                State::Connected => {
                    eprintln!("device-sim: MCP endpoint link {link} connected: {url}")
                }
                State::Session { count } => eprintln!(
                    "device-sim: MCP endpoint link {link}: agent session {count} began (initialize)"
                ),
                State::Closed {
                    reason,
                    say,
                    retry_in,
                    ..
                } => {
                    let again = match retry_in {
                        Some(t) => format!("; reconnecting in {} ms", t.as_millis()),
                        None => String::new(),
                    };
                    let say = say.as_ref().map(|s| format!("; {s}")).unwrap_or_default();
                    eprintln!(
                        "device-sim: MCP endpoint link {link} ended: {}{say}{again}",
                        escaped(reason)
                    );
                }
                State::Stopped { why } => {
                    eprintln!("device-sim: MCP endpoint link {link} stays off: {why}")
                }
                _ => {}
            }
        }
        HostEvent::Listen { id, open } => eprintln!(
            "device-sim: 2026-07-28 listen stream {} {}",
            escaped(id),
            if *open { "opened" } else { "closed" }
        ),
        HostEvent::Answered {
            ran,
            replay,
            delivery,
        } => match (ran, replay) {
            (_, Some(first)) => eprintln!(
                "device-sim: a retransmission answered from the first answer (that one was {}); nothing ran again; {}",
                delivery_word(*first),
                delivery_word(*delivery)
            ),
            (Some(tool), None) => {
                eprintln!(
                    "device-sim: {tool} ran; its answer {}",
                    delivery_word(*delivery)
                )
            }
            (None, None) => {}
        },
        _ => {}
    }
}

/// A duration in seconds (fractions allowed: `0.5`), positive and at most a day.
fn secs(s: &str) -> Result<Duration, String> {
    let v: f64 = s
        .parse()
        .map_err(|_| format!("{s:?} is not a number of seconds"))?;
    if !(v > 0.0 && v <= 86_400.0) {
        return Err(format!("{s} s is out of range (above 0, at most 86400)"));
    }
    Ok(Duration::from_secs_f64(v))
}

/// An origin for `--allow-origin`: `http(s)://HOST[:PORT]`, nothing else.
fn origin(s: &str) -> Result<String, String> {
    if mcp_core::transport::http::is_origin(s) {
        Ok(s.trim().to_string())
    } else {
        Err(format!(
            "{s:?} is not an origin: write scheme://host[:port], e.g. http://localhost:6274 (no path, no trailing /)"
        ))
    }
}

/// The token of `--token` or `--token-file`, checked as a bearer token.
fn bearer_token(cli: &Cli) -> Result<Option<String>, String> {
    let (token, from) = match (&cli.token, &cli.token_file) {
        (Some(t), _) => (t.clone(), "--token".to_string()),
        (None, Some(path)) => {
            let text = std::fs::read_to_string(path)
                .map_err(|e| format!("--token-file {}: {e}", path.display()))?;
            (
                text.trim().to_string(),
                format!("--token-file {}", path.display()),
            )
        }
        (None, None) => return Ok(None),
    };
    match mcp_core::transport::auth::Bearer::new(&token) {
        Ok(_) => Ok(Some(token)),
        Err(e) => Err(format!("{from}: not a bearer token ({e})")),
    }
}

/// The OAuth options of `--oauth-issuer` and its companions, checked, for an endpoint bound at
/// `bound`: the audience is `--oauth-audience`, else the endpoint's URL at that address — fixed
/// here, never taken from a request (an unspecified address names no resource: refused).
fn oauth_options(
    cli: &Cli,
    bound: SocketAddr,
) -> Result<Option<mcp_host::oauth::OAuthOptions>, String> {
    let Some(issuer) = &cli.oauth_issuer else {
        return Ok(None);
    };
    let audience = match &cli.oauth_audience {
        Some(audience) => audience.clone(),
        None if bound.ip().is_unspecified() => {
            return Err(format!(
                "--oauth-issuer: --http {} names no resource for the tokens' audience; give \
                 --oauth-audience URL, the URL clients use to reach this device (RFC 8707)",
                bound.ip()
            ));
        }
        None => format!("http://{bound}/mcp"),
    };
    let scopes: Vec<&str> = cli.oauth_scopes.iter().map(String::as_str).collect();
    let mut opts =
        mcp_host::oauth::OAuthOptions::new(issuer.trim_end_matches('/').to_string(), audience)
            .scopes(&scopes)
            .tls(tls(cli));
    if issuer.ends_with('/') {
        // An issuer is compared exactly: keep what was given.
        opts.issuer = issuer.clone();
    }
    if let Some(path) = &cli.oauth_jwks {
        let doc = std::fs::read_to_string(path)
            .map_err(|e| format!("--oauth-jwks {}: {e}", path.display()))?;
        opts = opts.keys(mcp_host::oauth::Keys::Document(doc));
    }
    opts.check().map_err(|e| format!("--oauth-issuer: {e}"))?;
    Ok(Some(opts))
}

/// `127.0.0.1:PORT`, `[::1]:PORT`, or a bare port (loopback).
fn parse_addr(s: &str) -> Result<SocketAddr, String> {
    if let Ok(port) = s.parse::<u16>() {
        return Ok(SocketAddr::from((Ipv4Addr::LOCALHOST, port)));
    }
    s.parse()
        .map_err(|_| format!("--http wants ADDR:PORT (e.g. 127.0.0.1:8080), not {s:?}"))
}

/// Binds `--ui` and serves it on a thread of its own; prints where.
fn start_ui(cli: &Cli, addr: &str, board: Arc<Mutex<Board>>) -> Result<Arc<ui::Sim>, String> {
    let addr = ui::parse_addr(addr)?;
    if !addr.ip().is_loopback() && cli.allow_hosts.is_empty() {
        eprintln!(
            "device-sim: the UI listens beyond loopback; only Host: localhost/127.0.0.1/[::1] is accepted \
             until you name this machine with --allow-host (the UI has no authentication)"
        );
    }
    let who = match cli.principal {
        Who::Model => "model",
        Who::User => "user",
    };
    let sim = ui::Sim::new(board, cli.confirm, who, &cli.allow_hosts);
    let listener = std::net::TcpListener::bind(addr).map_err(|e| format!("--ui {addr}: {e}"))?;
    listener.set_nonblocking(true).map_err(|e| e.to_string())?;
    let bound = listener.local_addr().map_err(|e| e.to_string())?;
    let served = sim.clone();
    let limits = mcp_host::web::Limits::default()
        .max_connections(cli.ui_max_connections)
        .header_timeout(cli.ui_header_timeout);
    std::thread::spawn(move || {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build();
        let result = runtime.and_then(|rt| {
            rt.block_on(async move {
                let listener = tokio::net::TcpListener::from_std(listener)?;
                ui::serve(served, listener, limits).await
            })
        });
        if let Err(e) = result {
            eprintln!("device-sim: the UI stopped: {e}");
        }
    });
    eprintln!("device-sim: UI at http://{bound}/");
    Ok(sim)
}

/// Serves `--http`, `--xiaozhi-ws` or `--mqtt` through mcp-host until killed (HTTP; WebSocket and
/// MQTT, which reconnect) or, with `--once`, until the backend closes the connection.
fn serve_network(
    cli: &Cli,
    faults: Faults,
    board: Arc<Mutex<Board>>,
    sim: Option<Arc<ui::Sim>>,
) -> Result<(), String> {
    let tools = Tools::new(cli);
    // Check the registration once, loudly, before anything listens.
    let engine = tools.engine()?;
    let on_event: EventHook = match sim.clone() {
        Some(sim) => Arc::new(move |e| {
            log_event(e);
            sim.event(e);
        }),
        None => Arc::new(log_event),
    };
    if !faults.is_empty() {
        eprintln!("device-sim: injected faults: {faults}");
    }
    let out_len = out_len(cli);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| e.to_string())?;
    if let Some(url) = &cli.mqtt {
        let fleet = Fleet {
            url,
            tools: &tools,
            faults,
            out_len,
            board,
            sim,
        };
        return runtime.block_on(serve_mqtt(cli, fleet));
    }
    if !cli.mcp_endpoint.is_empty() {
        return runtime.block_on(serve_endpoints(cli, &tools, board, sim, on_event));
    }
    let mut ota_headers = Vec::new();
    let ws_url = match (&cli.xiaozhi_ws, &cli.xiaozhi_ota) {
        (Some(url), _) => Some(url.clone()),
        (None, Some(ota)) => {
            let check = mcp_host::ota::Options::new(ota.clone(), cli.mac)
                .app("device-sim", flash::version(), "device-sim")
                .tls(tls(cli))
                .retry(cli.ota_retry)
                .on_event(on_event.clone());
            eprintln!("device-sim: OTA/config check at {}", shown_url(ota));
            let config = runtime
                .block_on(mcp_host::ota::until_bound(&check))
                .map_err(|e| e.to_string())?;
            let Some(url) = config.websocket else {
                return Err(match config.mqtt_endpoint {
                    Some(_) => {
                        "the OTA answer offers only xiaozhi's MQTT channel, which device-sim \
                                does not speak (it serves MCP over MQTT with --mqtt)"
                            .into()
                    }
                    None => "the OTA answer names no WebSocket URL".into(),
                });
            };
            ota_headers.push((
                "Protocol-Version".to_string(),
                device_link::ota::PROTOCOL_VERSION.to_string(),
            ));
            ota_headers.push(("Device-Id".to_string(), check.device_id()));
            ota_headers.push(("Client-Id".to_string(), check.client_id.clone()));
            if let Some(token) = config.token {
                ota_headers.push(("Authorization".to_string(), format!("Bearer {token}")));
            }
            if config.token_withheld {
                eprintln!(
                    "device-sim: the OTA check came over TLS but names {}, in clear beyond \
                     loopback: connecting without the token (a token obtained over TLS never \
                     travels in clear beyond loopback; the server should name a wss:// URL)",
                    shown_url(&url)
                );
            }
            Some(url)
        }
        (None, None) => None,
    };
    if let Some(url) = &ws_url {
        let keepalive = mcp_host::xiaozhi::Keepalive::new(cli.ws_ping_interval, cli.ws_dead_after);
        let mut opts = mcp_host::xiaozhi::Options::new(url.clone())
            .tls(tls(cli))
            .principal(principal(cli))
            .out_len(out_len)
            .connect_timeout(cli.ws_connect_timeout)
            .hello_timeout(cli.ws_hello_timeout)
            .keepalive(Some(keepalive))
            .max_message(
                cli.ws_max_message
                    .unwrap_or(4 * cli.page_bytes)
                    .max(MIN_WS_MESSAGE),
            )
            .speak_first(cli.speak_first)
            .on_event(on_event);
        if !cli.once {
            opts = opts.reconnect(mcp_host::xiaozhi::Backoff::new(
                cli.ws_backoff_first,
                cli.ws_backoff_max,
            ));
        }
        for (name, value) in ota_headers {
            opts = opts.header(name, value);
        }
        for h in &cli.ws_headers {
            let (name, value) = h
                .split_once(':')
                .ok_or_else(|| format!("--ws-header wants \"Name: value\", not {h:?}"))?;
            opts = opts.header(name.trim(), value.trim());
        }
        eprintln!("device-sim: connecting to {}", shown_url(url));
        if let Some(sim) = &sim {
            sim.add_transport(format!("xiaozhi-ws {}", shown_url(url)));
        }
        return runtime
            .block_on(mcp_host::xiaozhi::run(&opts, engine, board))
            .map_err(|e| e.to_string());
    }
    let addr = parse_addr(cli.http.as_deref().unwrap_or_default())?;
    let hosts: Vec<&str> = cli.allow_hosts.iter().map(String::as_str).collect();
    let origins: Vec<&str> = cli.allow_origins.iter().map(String::as_str).collect();
    if !addr.ip().is_loopback() && hosts.is_empty() {
        eprintln!(
            "device-sim: listening beyond loopback; only Host: localhost/127.0.0.1/[::1] is accepted \
             until you name this machine with --allow-host"
        );
    }
    let opts = HttpOptions::default()
        .principal(principal(cli))
        .allow_hosts(&hosts)
        .allow_origins(&origins)
        .out_len(out_len)
        .max_sessions(cli.max_sessions)
        .max_connections(cli.http_max_connections)
        .header_timeout(cli.http_header_timeout)
        .body_timeout(cli.http_body_timeout)
        .keepalive(cli.sse_keepalive)
        .on_event(on_event);
    let token = bearer_token(cli)?;
    let protected = token.is_some() || cli.oauth_issuer.is_some();
    let opts = match token {
        Some(token) => opts.bearer_token(token),
        None => opts,
    };
    // Checked before binding (an unspecified address without --oauth-audience is refused).
    oauth_options(cli, addr)?;
    runtime.block_on(async {
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|e| format!("--http {addr}: {e}"))?;
        let bound = listener.local_addr().map_err(|e| e.to_string())?;
        // The audience from the address bound (its port known now), once.
        let oauth = oauth_options(cli, bound)?;
        let mut opts = match oauth.clone() {
            Some(o) => opts.oauth(o),
            None => opts,
        };
        let advert = if cli.mdns {
            let instance = cli
                .mdns_name
                .clone()
                .unwrap_or_else(|| format!("device-sim-{}", bound.port()));
            let advert = mcp_host::mdns::Advert::start(&mcp_host::mdns::Service {
                instance: &instance,
                bound,
                path: "/mcp",
                proto: Revision::LATEST.as_str(),
                version: env!("CARGO_PKG_VERSION"),
                auth: protected.then_some("bearer"),
            })
            .map_err(|e| e.to_string())?;
            eprintln!(
                "device-sim: advertising {} (host {}.local) by mDNS",
                advert.fullname(),
                advert.host()
            );
            // What a client resolved from the advertisement — its .local name, each address it
            // names — is this device's own: accepted in Host.
            let own = advert.hosts();
            let mut names = hosts.clone();
            names.extend(own.iter().map(String::as_str));
            opts = opts.allow_hosts(&names);
            Some(advert)
        } else {
            None
        };
        let host = HttpHost::new(opts, tools.factory(), board);
        if let Some(sim) = &sim {
            sim.add_transport(format!("http://{bound}/mcp"));
        }
        eprintln!("device-sim: serving MCP (Streamable HTTP) at http://{bound}/mcp");
        if let Some(o) = &oauth {
            // Fetch the keys now: a server that cannot be reached shows at start-up (requests
            // fetch again later, so this is not fatal).
            match host.prefetch_keys().await {
                Some(Ok(n)) => eprintln!(
                    "device-sim: OAuth access tokens of {} for {} are accepted (keys: {n} bytes)",
                    escaped(&o.issuer),
                    escaped(&o.audience)
                ),
                Some(Err(e)) => eprintln!(
                    "device-sim: OAuth: the keys of {} are not to be had yet: {}",
                    escaped(&o.issuer),
                    escaped(&e).max_chars(LOG_CHARS)
                ),
                None => {}
            }
        }
        if protected {
            eprintln!(
                "device-sim: /mcp requires a bearer token; its metadata is at \
                 http://{bound}/.well-known/oauth-protected-resource/mcp"
            );
        }
        let Some(advert) = advert else {
            return host.serve(listener).await.map_err(|e| e.to_string());
        };
        // Serve until SIGINT or SIGTERM, then say goodbye on the LAN.
        let served = tokio::select! {
            served = host.serve(listener) => served.map_err(|e| e.to_string()),
            signal = shutdown_signal() => signal.map_err(|e| e.to_string()),
        };
        match advert.stop() {
            Ok(()) => eprintln!("device-sim: mDNS advertisement withdrawn"),
            Err(e) => eprintln!("device-sim: {e}"),
        }
        served
    })
}

/// `--mcp-endpoint`: each link with an engine of its own (the tools `--endpoint-tools` admits),
/// over one board, until every link stopped (with `--once`, at its first end).
async fn serve_endpoints(
    cli: &Cli,
    tools: &Tools,
    board: Arc<Mutex<Board>>,
    sim: Option<Arc<ui::Sim>>,
    on_event: EventHook,
) -> Result<(), String> {
    let mut links = Vec::new();
    for (i, url) in cli.mcp_endpoint.iter().enumerate() {
        let patterns: Option<Vec<&str>> = cli.endpoint_tools.get(i).map(|p| {
            p.split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .collect()
        });
        let config = tools.config.answers_only(true);
        let engine = tools.engine_with(config, patterns.as_deref())?;
        if engine.registry().is_empty() {
            return Err(format!(
                "--endpoint-tools {:?} admits no tool of this device (see --list-tools)",
                cli.endpoint_tools
                    .get(i)
                    .map(String::as_str)
                    .unwrap_or_default()
            ));
        }
        let keepalive = mcp_host::xiaozhi::Keepalive::new(cli.ws_ping_interval, cli.ws_dead_after);
        let mut opts = mcp_host::endpoint::Options::new(url.clone())
            .tls(tls(cli))
            .principal(principal(cli))
            .out_len(out_len(cli))
            .connect_timeout(cli.ws_connect_timeout)
            .keepalive(keepalive)
            .max_message(cli.ws_max_message.unwrap_or(64 * 1024).max(MIN_WS_MESSAGE))
            .max_frame(cli.endpoint_max_frame)
            .on_event(on_event.clone());
        if !cli.once {
            opts = opts.reconnect(mcp_host::xiaozhi::Backoff::DEFAULT);
        }
        let shown = mcp_host::endpoint::shown(url);
        eprintln!(
            "device-sim: MCP endpoint link {i}: connecting to {shown} ({} tools)",
            engine.registry().len()
        );
        if let Some(sim) = &sim {
            sim.add_transport(format!("mcp-endpoint #{i} {shown}"));
        }
        links.push((opts, engine));
    }
    mcp_host::endpoint::run(links, board)
        .await
        .map_err(|e| e.to_string())
}

/// Resolves at the first SIGINT or SIGTERM.
async fn shutdown_signal() -> io::Result<()> {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        let mut term = signal(SignalKind::terminate())?;
        tokio::select! {
            r = tokio::signal::ctrl_c() => r,
            _ = term.recv() => Ok(()),
        }
    }
    #[cfg(not(unix))]
    {
        tokio::signal::ctrl_c().await
    }
}

/// The id of device `i` (from 1) of `n`: `ID` alone, or `ID-i` zero-padded to the width of `n`.
fn fleet_id(base: &str, i: usize, n: usize) -> String {
    if n <= 1 {
        base.to_string()
    } else {
        format!("{base}-{i:0width$}", width = n.to_string().len())
    }
}

/// What `--mqtt` serves: the tools, and the board the first device drives (the one `--ui`
/// shows, with its page).
struct Fleet<'a> {
    url: &'a str,
    tools: &'a Tools,
    faults: Faults,
    out_len: usize,
    board: Arc<Mutex<Board>>,
    sim: Option<Arc<ui::Sim>>,
}

/// `--mqtt`: one device, or `--devices N` of them, each with its own board, engine and MQTT
/// connection, until killed. Only options the broker client cannot use end it. The first device
/// drives the board `--ui` shows, and its events go to the page; the others have boards of their
/// own, which no page shows.
async fn serve_mqtt(cli: &Cli, fleet: Fleet<'_>) -> Result<(), String> {
    let Fleet {
        url,
        tools,
        faults,
        out_len,
        board,
        sim,
    } = fleet;
    let n = cli.devices.max(1);
    // Logs and the page show the broker without the credentials in its URL.
    let shown_url = mcp_host::mqtt::redacted(url);
    let mut shown = Some(board);
    let mut fleet = tokio::task::JoinSet::new();
    for i in 1..=n {
        let id = fleet_id(&cli.device_id, i, n);
        let engine = tools.engine()?;
        let board = shown
            .take()
            .unwrap_or_else(|| Arc::new(Mutex::new(sensors::power_up(faults, cli.door_open))));
        let log: mcp_host::EventHook = if n == 1 {
            Arc::new(log_event)
        } else {
            // A fleet logs its links only, each line naming its device.
            let who = id.clone();
            Arc::new(move |e: &HostEvent| match e {
                HostEvent::Connected { .. } | HostEvent::Disconnected { .. } => {
                    eprint!("device-sim: [{who}] ");
                    log_event(e);
                }
                _ => {}
            })
        };
        let hook = match &sim {
            Some(sim) if i == 1 => {
                sim.add_transport(if n == 1 {
                    format!("mqtt {shown_url} as {id}")
                } else {
                    format!(
                        "mqtt {shown_url} as {id} (the first of {n} devices; the page shows it)"
                    )
                });
                let sim = sim.clone();
                Arc::new(move |e: &HostEvent| {
                    log(e);
                    sim.event(e);
                })
            }
            _ => log,
        };
        let opts = mcp_host::mqtt::Options::new(url, id)
            .server_name(
                cli.server_name.clone(),
                "A simulated xiaozhi-style device: speaker, screen, relay, motor, reboot",
            )
            .tls(tls(cli))
            .principal(principal(cli))
            .out_len(out_len)
            .keep_alive(cli.mqtt_keep_alive)
            .max_message((4 * cli.page_bytes).max(MIN_WS_MESSAGE))
            .reconnect(mcp_host::xiaozhi::Backoff::DEFAULT)
            .on_event(hook);
        fleet.spawn(async move { mcp_host::mqtt::run(&opts, engine, board).await });
    }
    eprintln!("device-sim: {n} device(s) serving MCP over MQTT on {shown_url}");
    while let Some(done) = fleet.join_next().await {
        match done {
            Ok(Ok(())) => {}
            Ok(Err(e)) => return Err(e.to_string()),
            Err(e) => return Err(e.to_string()),
        }
    }
    Ok(())
}

/// 16 random bytes from the standard library's per-process random hasher keys.
fn os_entropy() -> [u8; 16] {
    use std::hash::{BuildHasher, Hasher};
    let mut seed = [0u8; 16];
    for (i, chunk) in seed.chunks_mut(8).enumerate() {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_usize(i);
        chunk.copy_from_slice(&h.finish().to_le_bytes());
    }
    seed
}

/// Serves MCP on stdin/stdout until stdin closes. Lines are read on a thread so that the engine
/// keeps running tasks (and sending what it owes) between messages.
fn serve(device: &mut Device) -> io::Result<()> {
    let (tx, rx) = mpsc::channel::<Vec<u8>>();
    std::thread::spawn(move || {
        let mut stdin = io::stdin().lock();
        loop {
            let mut line = Vec::new();
            match stdin.read_until(b'\n', &mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) => {
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            }
        }
    });
    let mut stdout = io::stdout().lock();
    let mut send = |bytes: &[u8]| -> io::Result<()> {
        stdout.write_all(bytes)?;
        stdout.write_all(b"\n")?;
        stdout.flush()
    };
    if device.envelope.is_some() {
        send(DEVICE_HELLO.as_bytes())?;
    }
    let start = Instant::now();
    let now = || u64::try_from(start.elapsed().as_millis()).unwrap_or(u64::MAX);
    loop {
        let line = match rx.recv_timeout(Duration::from_millis(20)) {
            Ok(line) => Some(line),
            Err(RecvTimeoutError::Timeout) => None,
            Err(RecvTimeoutError::Disconnected) => return Ok(()),
        };
        // Bring the board and the engine up to date before the message is handled.
        for msg in device.tick(now()) {
            send(&msg)?;
        }
        if let Some(line) = line {
            let msg = line.strip_suffix(b"\n").unwrap_or(&line);
            let msg = msg.strip_suffix(b"\r").unwrap_or(msg);
            if msg.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let principal = device.principal;
            if let Some(answer) = device.line(msg, principal, now()) {
                // A call answered that it waits for the device's button: the device shows the
                // question before the answer goes out (a person who hears the answer finds it
                // on the device); what that turn owes follows the answer.
                let after = match device.unshown() {
                    true => device.tick(now()),
                    false => Vec::new(),
                };
                let written = send(&answer.bytes);
                device.delivered(answer, written.is_ok());
                written?;
                for msg in after {
                    send(&msg)?;
                }
            }
        }
    }
}

/// Runs a short session against itself on a simulated clock, and prints it.
fn demo(device: &mut Device) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    let call = |id: u32, tool: &str, args: &str| {
        format!(
            r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{args}}}}}"#
        )
    };
    let steps: Vec<(u64, &str, String, Principal)> = vec![
        (0, "The client opens the session (it can follow tasks)", r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{"tasks":{}},"clientInfo":{"name":"demo","version":"1"}}}"#.into(), Principal::Model),
        (0, "It lists the tools (self.reboot is user-only: not listed to the model)", r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#.into(), Principal::Model),
        (0, "Volume to 40: the codec register is written, then read back", call(3, "self.audio_speaker.set_volume", r#"{"volume":40}"#), Principal::Model),
        (0, "The status reads every part again", call(4, "self.get_device_status", "{}"), Principal::Model),
        (0, "A bad argument is refused before any handler runs", call(5, "self.audio_speaker.set_volume", r#"{"volume":"loud"}"#), Principal::Model),
        (0, "The relay: driven, then confirmed by its feedback contact", call(6, "self.relay.set", r#"{"on":true}"#), Principal::Model),
        (0, "The motor: a long-running task, answered at once", call(7, "self.motor.move_to", r#"{"position":600}"#), Principal::Model),
        (3000, "Three seconds later: the encoder confirms the position", call(8, "self.tasks.get_status", r#"{"task_id":"{TASK}"}"#), Principal::Model),
        (3000, "The model tries to reboot the device: refused", call(9, "self.reboot", "{}"), Principal::Model),
        (3000, "A person (principal user) may: the reboot is only scheduled", call(10, "self.reboot", "{}"), Principal::User),
    ];
    writeln!(
        stdout,
        "device-sim: a simulated xiaozhi-style device, driven through mcp-core\n"
    )?;
    let mut task_id = String::new();
    for (i, (at, title, request, principal)) in steps.iter().enumerate() {
        // A task id comes from an earlier answer.
        let request = request.replace("{TASK}", &task_id);
        // Advance the simulated clock in small steps, as a firmware main loop would.
        let mut t = lock(&device.board).sim.now_ms();
        while t < *at {
            t = (t + 50).min(*at);
            device.tick(t);
        }
        let who = if *principal == Principal::User {
            " [user]"
        } else {
            ""
        };
        writeln!(stdout, "{}. {title}{who}", i + 1)?;
        writeln!(stdout, "   -> {request}")?;
        let response = device
            .line(request.as_bytes(), *principal, t)
            .map(|a| a.bytes)
            .unwrap_or_default();
        let response = String::from_utf8_lossy(&response).into_owned();
        if let Some(rest) = response.split("\"task_id\":\"").nth(1) {
            task_id = rest.split('"').next().unwrap_or_default().to_string();
        }
        if request.contains("tools/list") {
            let names: Vec<&str> = response
                .match_indices("{\"name\":\"")
                .filter_map(|(at, m)| response.get(at + m.len()..)?.split('"').next())
                .collect();
            writeln!(
                stdout,
                "   <- {} tools: {} ({} bytes)",
                names.len(),
                names.join(", "),
                response.len()
            )?;
        } else {
            writeln!(stdout, "   <- {response}")?;
        }
        writeln!(stdout)?;
    }
    writeln!(
        stdout,
        "Serve it to a real client with: cargo run -p device-sim -- --stdio"
    )?;
    writeln!(
        stdout,
        "Watch the evidence change with a fault: cargo run -p device-sim -- --fault codec-clamp (see --fault list)"
    )?;
    Ok(())
}
