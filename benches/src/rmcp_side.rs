//! The rmcp side: the same `self.audio_speaker.set_volume` tool (same name, description, input
//! schema and annotations; the schema is taken from this workspace's own `tools/list`) over the
//! same simulated codec, served by rmcp, fed the same bytes.
//!
//! Two harnesses:
//! - [`RmcpDirect`] — as little around rmcp as it allows: `serde_json::from_slice` into rmcp's
//!   `ClientJsonRpcMessage`, a `RequestContext` (as rmcp's service loop builds it: the request's
//!   `_meta` and extensions moved in, a clone of the session's `Peer`), `Service::handle_request`
//!   (rmcp's request dispatch, `ServerHandler::call_tool`, the `ToolRouter`, the `Parameters<T>`
//!   extractor, the tool function, the result conversion), `JsonRpcMessage::response`/`error`,
//!   and `serde_json::to_writer` into a reused `Vec<u8>`. The future is polled once with a no-op
//!   waker (it is always ready: nothing in the path awaits I/O). Not included: the transport
//!   framing, rmcp's per-request task spawn and its channel to the writer.
//! - [`RmcpServed`] — rmcp's own service loop (`ServiceExt::serve`, after a real `initialize`
//!   handshake) over a `tokio::io::duplex` pipe, on a current-thread tokio runtime: each step
//!   writes the request line and reads the response line. This is what a stdio rmcp server does.

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, Waker};

use mcp_hal::Percent;
use mcp_hal::audio::AudioCodec as _;
use mcp_hal::sim::{Faults, SimCodec};
use rmcp::handler::server::router::tool::ToolRouter;
use rmcp::handler::server::wrapper::Parameters;
use rmcp::model::{
    CallToolResult, ClientJsonRpcMessage, ContentBlock, JsonObject, JsonRpcMessage, MetaObject,
    ServerJsonRpcMessage,
};
use rmcp::service::{Peer, RequestContext, RoleServer, RunningService, Service as _};
use rmcp::{ErrorData, ServerHandler, ServiceExt as _, tool, tool_handler, tool_router};
use serde::Deserialize;
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader, DuplexStream};

use crate::board::{SET_VOLUME, TOOLS};
use crate::harness::{Check, Harness, INITIALIZE, Step};
use crate::ours::{check_step, parse_response};

/// `set_volume`'s listing (name, description, inputSchema, annotations) as this workspace's
/// engine lists it, read once from its own `tools/list`.
pub fn our_set_volume_listing() -> &'static Value {
    static LISTING: OnceLock<Value> = OnceLock::new();
    LISTING.get_or_init(|| {
        let (mut server, mut board) = crate::ours::server::<{ crate::board::CAPACITY }>(TOOLS);
        let mut out = vec![0u8; crate::ours::OUT_LEN];
        let list = br#"{"jsonrpc":"2.0","id":1,"method":"tools/list"}"#;
        let len = match server.handle(list, mcp_core::Principal::Model, &mut board, &mut out) {
            Ok(h) => h.len,
            Err(e) => panic!("tools/list: {e:?}"),
        };
        let page = match parse_response(out.get(..len).unwrap_or_default()) {
            Ok(p) => p,
            Err(e) => panic!("tools/list: {e}"),
        };
        page.pointer("/result/tools")
            .and_then(Value::as_array)
            .and_then(|tools| {
                tools
                    .iter()
                    .find(|t| t.get("name") == Some(&Value::from(SET_VOLUME.name())))
            })
            .cloned()
            .unwrap_or_else(|| panic!("set_volume is not listed: {page}"))
    })
}

fn listed(key: &str) -> &'static Value {
    our_set_volume_listing()
        .get(key)
        .unwrap_or_else(|| panic!("set_volume's listing has no {key}"))
}

fn set_volume_schema() -> Arc<JsonObject> {
    match listed("inputSchema") {
        Value::Object(schema) => Arc::new(schema.clone()),
        other => panic!("inputSchema {other}"),
    }
}

fn set_volume_description() -> &'static str {
    listed("description").as_str().unwrap_or_default()
}

/// `set_volume`'s arguments, as an rmcp tool author writes them: unknown keys refused, an
/// integer (serde refuses `"50"`, `true`, `50.5`).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct SetVolumeArgs {
    /// Volume in percent.
    pub volume: i64,
}

/// The rmcp server: the simulated codec behind a mutex (rmcp services are `Send + Sync` and
/// called through `&self`), and the tool router, built once and kept (rmcp's default
/// `#[tool_handler]` would rebuild it on every call).
#[derive(Debug, Clone)]
pub struct RmcpDevice {
    codec: Arc<Mutex<SimCodec>>,
    tool_router: ToolRouter<RmcpDevice>,
}

#[tool_router]
impl RmcpDevice {
    /// A device with a fresh codec.
    pub fn new() -> Self {
        RmcpDevice {
            codec: Arc::new(Mutex::new(SimCodec::new(Faults::NONE))),
            tool_router: Self::tool_router(),
        }
    }

    /// The codec's current volume (for checks).
    pub fn volume(&self) -> Option<u8> {
        let mut codec = self.codec.lock().ok()?;
        codec.volume().ok().map(Percent::get)
    }

    /// The same behaviour as mcp-hal's audio kit on a read-back codec: range check, write, read
    /// back, compare; `true` with `read_back` evidence.
    #[tool(
        name = "self.audio_speaker.set_volume",
        description = set_volume_description(),
        input_schema = set_volume_schema(),
        annotations(idempotent_hint = true, destructive_hint = false)
    )]
    fn set_volume(
        &self,
        Parameters(SetVolumeArgs { volume }): Parameters<SetVolumeArgs>,
    ) -> Result<CallToolResult, ErrorData> {
        let Some(commanded) = Percent::from_i64(volume) else {
            return Ok(CallToolResult::error(vec![ContentBlock::text(format!(
                "Invalid argument \"volume\": expected an integer from 0 to 100, got {volume}"
            ))]));
        };
        let mut codec = self
            .codec
            .lock()
            .map_err(|_| ErrorData::internal_error("codec lock poisoned", None))?;
        codec
            .set_volume(commanded)
            .map_err(|e| ErrorData::internal_error(format!("codec: {e:?}"), None))?;
        let observed = codec
            .volume()
            .map_err(|e| ErrorData::internal_error(format!("codec read-back: {e:?}"), None))?;
        let (c, o) = (commanded.get(), observed.get());
        let evidence = json!({"evidence": {"level": "read_back", "commanded": c, "observed": o}});
        // The value and the evidence in the first text, as mcu-mcp answers: what was commanded
        // only when the read-back differs.
        let said = if o == c {
            format!("read back: {o}")
        } else {
            format!("read back: {o} (commanded {c})")
        };
        let mut result = if observed == commanded {
            let mut r = CallToolResult::success(vec![ContentBlock::text(format!("true — {said}"))]);
            r.structured_content = Some(json!({"value": true}));
            r
        } else {
            CallToolResult::error(vec![ContentBlock::text(format!(
                "The codec reports a different volume than commanded — {said}"
            ))])
        };
        if let Value::Object(meta) = evidence {
            result.meta = Some(MetaObject(meta));
        }
        Ok(result)
    }
}

impl Default for RmcpDevice {
    fn default() -> Self {
        Self::new()
    }
}

#[tool_handler(router = self.tool_router, name = "device-sim", version = "0.1.0")]
impl ServerHandler for RmcpDevice {}

fn runtime() -> tokio::runtime::Runtime {
    match tokio::runtime::Builder::new_current_thread().build() {
        Ok(rt) => rt,
        Err(e) => panic!("tokio runtime: {e}"),
    }
}

/// Reads one line; panics on I/O errors and end of stream (a harness bug).
async fn read_line(reader: &mut BufReader<tokio::io::ReadHalf<DuplexStream>>, line: &mut Vec<u8>) {
    line.clear();
    match reader.read_until(b'\n', line).await {
        Ok(n) if n > 0 => {}
        other => panic!("rmcp closed the stream: {other:?}"),
    }
}

async fn write_line(writer: &mut tokio::io::WriteHalf<DuplexStream>, message: &[u8]) {
    if let Err(e) = writer.write_all(message).await {
        panic!("write: {e}");
    }
    if let Err(e) = writer.write_all(b"\n").await {
        panic!("write: {e}");
    }
}

type Client = (
    BufReader<tokio::io::ReadHalf<DuplexStream>>,
    tokio::io::WriteHalf<DuplexStream>,
);

/// Starts rmcp's service loop on one end of a pipe and initializes it from the other end, as a
/// client would: `initialize` (2025-11-25), then `notifications/initialized`.
fn start(rt: &tokio::runtime::Runtime) -> (RunningService<RoleServer, RmcpDevice>, Client) {
    rt.block_on(async {
        let (client, server) = tokio::io::duplex(64 * 1024);
        let (client_read, mut client_write) = tokio::io::split(client);
        let mut client_read = BufReader::new(client_read);
        let init = INITIALIZE.replace("ID", "0");
        write_line(&mut client_write, init.as_bytes()).await;
        let serving = RmcpDevice::new().serve(tokio::io::split(server));
        let running = match serving.await {
            Ok(r) => r,
            Err(e) => panic!("rmcp serve: {e}"),
        };
        let mut line = Vec::new();
        read_line(&mut client_read, &mut line).await;
        let initialized = br#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
        write_line(&mut client_write, initialized).await;
        (running, (client_read, client_write))
    })
}

/// rmcp called directly (see the module docs for what that includes).
pub struct RmcpDirect {
    // Field order is drop order: the service and the client pipe go before the runtime.
    running: RunningService<RoleServer, RmcpDevice>,
    peer: Peer<RoleServer>,
    _client: Client,
    rt: tokio::runtime::Runtime,
    steps: Vec<Step>,
    next: usize,
    out: Vec<u8>,
    check: Check,
}

impl core::fmt::Debug for RmcpDirect {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RmcpDirect").finish_non_exhaustive()
    }
}

impl RmcpDirect {
    /// An initialized rmcp session, called directly with `steps` in a cycle.
    pub fn new(steps: Vec<Step>, check: Check) -> Self {
        let rt = runtime();
        // The session (its `Peer`, which handlers may use) comes from a real `initialize`
        // handshake; its service loop then idles on a pipe nobody writes to.
        let (running, client) = start(&rt);
        let peer = running.peer().clone();
        RmcpDirect {
            running,
            peer,
            _client: client,
            rt,
            steps,
            next: 0,
            out: Vec::with_capacity(4096),
            check,
        }
    }

    /// Decode, dispatch, encode: the response bytes are in `self.out`.
    fn handle(&mut self, bytes: &[u8]) -> usize {
        self.out.clear();
        let message: ClientJsonRpcMessage = match serde_json::from_slice(bytes) {
            Ok(m) => m,
            // rmcp's transports drop undecodable input without an answer.
            Err(_) => return 0,
        };
        let JsonRpcMessage::Request(request) = message else {
            return 0;
        };
        let id = request.id;
        let mut request = request.request;
        let mut context = RequestContext::new(id.clone(), self.peer.clone());
        // As rmcp's service loop does: move `_meta` and extensions into the context.
        std::mem::swap(
            &mut context.meta,
            rmcp::model::GetMeta::get_meta_mut(&mut request),
        );
        std::mem::swap(
            &mut context.extensions,
            rmcp::model::GetExtensions::extensions_mut(&mut request),
        );
        let future = self.running.service().handle_request(request, context);
        let mut future = pin!(future);
        let result = match future
            .as_mut()
            .poll(&mut Context::from_waker(Waker::noop()))
        {
            Poll::Ready(r) => r,
            Poll::Pending => self.rt.block_on(future),
        };
        let response: ServerJsonRpcMessage = match result {
            Ok(r) => JsonRpcMessage::response(r, id),
            Err(e) => JsonRpcMessage::error(e, Some(id)),
        };
        if let Err(e) = serde_json::to_writer(&mut self.out, &response) {
            panic!("encode: {e}");
        }
        self.out.len()
    }
}

impl Harness for RmcpDirect {
    fn step(&mut self) -> usize {
        let steps = std::mem::take(&mut self.steps);
        let mut total = 0;
        if let Some(messages) = steps.get(self.next) {
            for m in messages {
                total += self.handle(m);
            }
        }
        self.next = (self.next + 1) % steps.len().max(1);
        self.steps = steps;
        total
    }

    fn responses(&mut self, i: usize) -> Vec<Vec<u8>> {
        let messages = self.steps.get(i).cloned().unwrap_or_default();
        messages
            .iter()
            .map(|m| {
                let n = self.handle(m);
                self.out.get(..n).unwrap_or_default().to_vec()
            })
            .collect()
    }

    fn check(&mut self) -> Result<(), String> {
        for i in 0..self.steps.len() {
            check_step(i, &self.responses(i), self.check)?;
        }
        Ok(())
    }
}

/// rmcp's own service loop over an in-memory pipe.
pub struct RmcpServed {
    running: RunningService<RoleServer, RmcpDevice>,
    client: Client,
    rt: tokio::runtime::Runtime,
    steps: Vec<Step>,
    next: usize,
    line: Vec<u8>,
    check: Check,
}

impl core::fmt::Debug for RmcpServed {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("RmcpServed").finish_non_exhaustive()
    }
}

impl RmcpServed {
    /// An initialized rmcp session on a pipe, fed `steps` in a cycle.
    pub fn new(steps: Vec<Step>, check: Check) -> Self {
        let rt = runtime();
        let (running, client) = start(&rt);
        RmcpServed {
            running,
            client,
            rt,
            steps,
            next: 0,
            line: Vec::with_capacity(4096),
            check,
        }
    }

    /// The device behind the service (for checks).
    pub fn device(&self) -> &RmcpDevice {
        self.running.service()
    }

    /// Writes one request line, reads one response line (into `self.line`).
    fn exchange(&mut self, message: &[u8]) -> usize {
        let (reader, writer) = &mut self.client;
        let line = &mut self.line;
        self.rt.block_on(async {
            write_line(writer, message).await;
            read_line(reader, line).await;
        });
        self.line.len()
    }
}

impl Harness for RmcpServed {
    fn step(&mut self) -> usize {
        let steps = std::mem::take(&mut self.steps);
        let mut total = 0;
        if let Some(messages) = steps.get(self.next) {
            for m in messages {
                total += self.exchange(m);
            }
        }
        self.next = (self.next + 1) % steps.len().max(1);
        self.steps = steps;
        total
    }

    fn responses(&mut self, i: usize) -> Vec<Vec<u8>> {
        let messages = self.steps.get(i).cloned().unwrap_or_default();
        messages
            .iter()
            .map(|m| {
                let n = self.exchange(m);
                self.line.get(..n).unwrap_or_default().to_vec()
            })
            .collect()
    }

    fn check(&mut self) -> Result<(), String> {
        for i in 0..self.steps.len() {
            check_step(i, &self.responses(i), self.check)?;
        }
        Ok(())
    }
}
