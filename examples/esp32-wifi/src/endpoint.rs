//! MCP endpoint mode (feature `endpoint`): the board joins a xiaozhi agent as a tool server.
//! It connects out over WebSocket to the agent's MCP endpoint (MCP 接入点) — the public
//! service's `wss://api.xiaozhi.me/mcp/?token=…` (the agent's console hands it out), or a
//! self-hosted `mcp-endpoint-server` at `ws(s)://HOST:8004/mcp_endpoint/mcp/?token=…` — and
//! answers the plain JSON-RPC the agent's backend sends through it, one message per text frame.
//! This is how a board with no microphone (a relay, a garage door, a sensor) joins a voice
//! assistant.
//!
//! Build-time settings: `MCP_ENDPOINT_URL` (the URL with its token, kept as written: a
//! self-hosted token is base64 and stays percent-encoded; `build.rs` refuses a `ws://` URL to
//! a host beyond the LAN, where the token would travel in clear, and a `wss://` one without the
//! feature `tls`), `MCP_ENDPOINT_TOOLS` (the tools the link offers: comma-separated names or
//! patterns ending in `*`; all by default — the agent's model gets every endpoint's tools in one
//! list, and a short list serves it better). The log prints the URL with the token as `…`.
//!
//! The rules are mcp-core's `transport::endpoint`, the same the host's client follows:
//! - **Agent sessions.** Each message is handed to the engine as from the current agent session
//!   (`Sessions`: one `initialize` to the next); a dropped link does not end it, a new
//!   `initialize` does (its conversation ends: `Server::end_conversation`).
//! - **Only answers get back** (`Config::answers_only`): an outcome after a call's answer would
//!   begin the session's next answer. (This board holds no call for a person and runs no task:
//!   it has none to tell; a board that adds either gets it.)
//! - **When to connect again** (`Policy`): a refused token (1008) is logged once and retried
//!   only every few minutes; a link another device took (1000) is logged and backed off, and
//!   after a few in a row it stays off; anything else: 1 s doubling to 30 s with jitter from the
//!   hardware RNG, reset after a healthy link. The link is closed (`ws.rs`) before the next one
//!   opens. Frames are at most the engine's output buffer (`Sizes::OUT`), far under any limit of the
//!   endpoint's: a 1009 makes nothing smaller here.
//! - **Dead links are noticed** and pings answered (`ws.rs`, mcp-core's `Keepalive`).

use embassy_net::Stack;
use embassy_time::{Duration, Instant, Timer};
use embedded_io_async::{Read, Write};
use mcp_core::Principal;
use mcp_core::server::Delivery;
use mcp_core::transport::endpoint::{self, Next, Policy, Say, Sessions};

use crate::config::Sizes;
use crate::config::endpoint::ALL_TOOLS;
#[cfg(feature = "tls")]
use crate::tls::TlsBuffers;
use crate::ws::{self, Ended, OP_TEXT, Ws, ws_url};
use crate::{Engine, EspBoard};

const URL: &str = build_env!("MCP_ENDPOINT_URL");
const TOOLS: &str = build_env!("MCP_ENDPOINT_TOOLS", ALL_TOOLS);

/// `true` when the link offers the tool `name` (`MCP_ENDPOINT_TOOLS`).
fn offers(name: &str) -> bool {
    TOOLS
        .split(',')
        .map(str::trim)
        .any(|p| !p.is_empty() && endpoint::admits(&[p], name))
}

/// Registers the board's tools the link offers; `false` when one cannot be registered.
pub fn register(engine: &mut Engine) -> bool {
    EspBoard::TOOLS
        .iter()
        .filter(|t| offers(t.name()))
        .all(|t| engine.register(t).is_ok())
}

/// Connects, serves the agent's calls, and connects again as the endpoint's close codes say.
pub async fn run(
    stack: Stack<'static>,
    engine: &'static mut Engine,
    board: &'static mut EspBoard,
    _mac: [u8; 6],
) -> ! {
    let mut rx = [0u8; Sizes::WS_TCP_BUFFER];
    let mut tx = [0u8; Sizes::WS_TCP_BUFFER];
    let mut msg = [0u8; Sizes::WS_MESSAGE];
    let mut out = [0u8; Sizes::OUT];
    #[cfg(feature = "tls")]
    let tls_buffers = TlsBuffers::take();
    let url = ws_url(URL).filter(|u| u.secret_may_go());
    let Some(url) = url else {
        // Built without a usable MCP_ENDPOINT_URL (build.rs refuses one it can tell is wrong).
        esp_println::println!("endpoint: no usable MCP_ENDPOINT_URL; idle");
        crate::idle().await
    };
    esp_println::println!("endpoint: {url}");
    let target = ws::Target {
        url,
        headers: &[],
        token: "",
        stack,
        name: "endpoint",
    };
    let mut policy = Policy::new();
    let mut sessions = Sessions::new(0);
    loop {
        let mut link = Link {
            engine: &mut *engine,
            board: &mut *board,
            sessions: &mut sessions,
            msg: &mut msg,
            out: &mut out,
            policy: &mut policy,
        };
        // Closed before the next link opens: the endpoint keeps one link per token.
        let ended = ws::connection(
            &target,
            (&mut rx, &mut tx),
            &mut link,
            #[cfg(feature = "tls")]
            &mut *tls_buffers,
        )
        .await;
        let how = match ended {
            Ended::Closed(Some(code)) => endpoint::Ended::Closed(code),
            _ => endpoint::Ended::Lost,
        };
        match policy.ended(how, now_ms(), crate::random() as u32) {
            Next::Wait { ms, say } => {
                if let Some(say) = say {
                    esp_println::println!("endpoint: {}", said(say));
                }
                Timer::after(Duration::from_millis(ms.into())).await;
            }
            Next::Stop(say) => {
                esp_println::println!("endpoint: {}", said(say));
                crate::idle().await
            }
            _ => Timer::after(Duration::from_secs(30)).await,
        }
    }
}

/// What the log says of how a link ended.
fn said(say: Say) -> &'static str {
    match say {
        Say::Refused => {
            "the endpoint refused the token (missing, not decryptable, or naming no agent); trying again every few minutes"
        }
        Say::Replaced { .. } => "another link uses this token and took it: backing off",
        Say::GaveUp => {
            "another link keeps taking this token: this link stays off (give each device its own token)"
        }
        Say::Shrunk { .. } => "the endpoint found a frame too large",
        _ => "the link ended",
    }
}

/// The clock in milliseconds since boot.
fn now_ms() -> u64 {
    Instant::now().as_millis()
}

/// One connection: the engine and the buffers it serves with.
struct Link<'a> {
    engine: &'a mut Engine,
    board: &'a mut EspBoard,
    sessions: &'a mut Sessions,
    msg: &'a mut [u8],
    out: &'a mut [u8],
    policy: &'a mut Policy,
}

impl ws::Serve for Link<'_> {
    /// Answers what comes until the link ends.
    async fn serve<T: Read + Write>(
        &mut self,
        ws: &mut Ws<'_, T>,
    ) -> Result<core::convert::Infallible, Ended> {
        self.policy.opened(now_ms());
        loop {
            // What the engine owes the current agent session (a held call's answer), and only
            // it: nothing is sent to a session that ended.
            loop {
                let polled = self.engine.poll_with(now_ms(), self.board, self.out);
                let Some(m) = self.out.get(..polled.len).filter(|_| polled.len > 0) else {
                    break;
                };
                if polled.to == Some(self.sessions.peer()) {
                    ws.send(OP_TEXT, m).await?;
                }
            }
            let n = ws.next_text(self.msg).await?;
            let text = self.msg.get(..n).unwrap_or_default();
            let input = self.sessions.input(text, Principal::Model);
            let Ok(handled) = self
                .engine
                .handle_async(
                    input,
                    self.board,
                    self.out,
                    &mut |_: &[u8]| {},
                    EspBoard::run,
                )
                .await
            else {
                continue;
            };
            let len = self.sessions.handled(&handled, self.engine, self.out);
            let Some(answer) = self.out.get(..len).filter(|_| len > 0) else {
                continue;
            };
            // The device reboots a second after answering `self.reboot`: `main`'s watcher.
            let sent = ws.send(OP_TEXT, answer).await;
            if let Some(receipt) = handled.receipt {
                let delivery = if sent.is_ok() {
                    Delivery::Written
                } else {
                    Delivery::Lost
                };
                self.engine.delivered(receipt, delivery);
            }
            sent?;
        }
    }
}
