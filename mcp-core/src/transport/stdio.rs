//! One JSON-RPC message per line, as on a UART, USB serial or a process's stdin/stdout.
//!
//! [`LineLink`] is the whole link for a firmware's main loop: it sends what the engine owes
//! ([`LineLink::poll`]), then takes the bytes that wait, up to one complete line, and sends the
//! engine's answer ([`LineLink::serve`]; [`LineLink::poll_async`] and [`LineLink::serve_async`]
//! for firmware whose tools are async). The firmware only says how to read a byte and how to
//! write bytes:
//!
//! ```
//! use mcp_core::transport::stdio::LineLink;
//! use mcp_core::{Caps, Config, Output, Principal, Server, Tool};
//!
//! struct Board;
//! const PING: Tool<Board> = Tool::new("self.ping", "Ping", |_, _, _| Ok(Output::bool(true)));
//! let mut server: Server<'_, Board, Caps<4>> = Server::new(Config::new("uart-device", "1"));
//! server.register(&PING).unwrap();
//! let (mut board, mut out) = (Board, [0u8; 1024]);
//! let mut link: LineLink<512> = LineLink::new();
//!
//! // What the UART received, and what the firmware wrote back (a UART driver implements
//! // `Port`; here a pair of closures does).
//! let mut rx = br#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#.iter().copied().chain([b'\n']);
//! let mut tx = Vec::new();
//! let mut uart = (|| rx.next(), |bytes: &[u8]| tx.extend_from_slice(bytes));
//! // The main loop, once round: what the engine owes, then one message.
//! link.poll(&mut server, 0, &mut board, &mut out, &mut uart);
//! let read = link.serve(&mut server, Principal::Model, &mut board, &mut out, &mut uart);
//! assert!(read);
//! drop(uart);
//! assert_eq!(tx, b"{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":{}}\n");
//! ```
//!
//! Underneath, [`LineBuffer`] assembles lines from bytes as they arrive, in a fixed buffer. A line
//! longer than the buffer is dropped whole (never cut and half-processed) and reported as
//! [`Line::TooLong`], which is answered with [`write_too_long`].
//!
//! ```
//! use mcp_core::transport::stdio::{Line, LineBuffer};
//!
//! let mut lines: LineBuffer<64> = LineBuffer::new();
//! let mut got = Vec::new();
//! for &b in b"{\"a\":1}\r\n\n{\"b\":2}\n" {
//!     if let Some(Line::Message(m)) = lines.push(b) {
//!         got.push(m.to_vec());
//!     }
//! }
//! assert_eq!(got, [b"{\"a\":1}".to_vec(), b"{\"b\":2}".to_vec()]);
//! ```

use crate::ToolResult;
use crate::server::{Call, Capacities, Input, Principal, Server};
use crate::wire::response::{ErrorCode, error_into};
use crate::wire::writer::Writer;

/// A complete line.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// A message (without the line ending).
    Message(&'a [u8]),
    /// A line longer than the buffer ended here; its bytes were dropped.
    TooLong,
}

/// Assembles newline-terminated messages in `N` bytes.
#[derive(Debug)]
pub struct LineBuffer<const N: usize> {
    buf: [u8; N],
    len: usize,
    overflowed: bool,
    complete: bool,
}

impl<const N: usize> Default for LineBuffer<N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<const N: usize> LineBuffer<N> {
    /// An empty buffer.
    pub const fn new() -> Self {
        LineBuffer {
            buf: [0; N],
            len: 0,
            overflowed: false,
            complete: false,
        }
    }

    /// Adds one byte; returns the line it completes, if any. Empty lines are skipped, a trailing
    /// `\r` is removed.
    pub fn push(&mut self, byte: u8) -> Option<Line<'_>> {
        if self.complete {
            self.complete = false;
            self.len = 0;
        }
        if byte != b'\n' {
            match self.buf.get_mut(self.len) {
                Some(slot) if !self.overflowed => {
                    *slot = byte;
                    self.len += 1;
                }
                _ => self.overflowed = true,
            }
            return None;
        }
        self.complete = true;
        if core::mem::take(&mut self.overflowed) {
            return Some(Line::TooLong);
        }
        let line = self.buf.get(..self.len).unwrap_or_default();
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        if line.iter().all(|b| b.is_ascii_whitespace()) {
            return None;
        }
        Some(Line::Message(line))
    }
}

impl<const N: usize> LineBuffer<N> {
    /// The message the last [`push`](Self::push) completed, again (`None` until a line is
    /// complete; call it only after a push returned [`Line::Message`]).
    fn last(&self) -> Option<Line<'_>> {
        if !self.complete {
            return None;
        }
        let line = self.buf.get(..self.len).unwrap_or_default();
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        Some(Line::Message(line))
    }
}

/// Writes the answer to a [`Line::TooLong`]: a -32600 error with `id: null` naming the limit.
/// Returns the length written (0 if `out` is too small).
pub fn write_too_long(out: &mut [u8], limit: usize) -> usize {
    // (Written piece by piece: no `core::fmt` in the firmware for it.)
    let mut message = |w: &mut Writer<'_>| {
        w.text("Invalid Request: message longer than the device's ");
        w.uint(limit as u64);
        w.text("-byte line buffer");
    };
    error_into(out, None, ErrorCode::InvalidRequest, &mut message)
}

/// The two ends of a byte link, as [`LineLink`] uses them: a UART, a USB serial port, a
/// process's stdin and stdout. A pair of closures `(read, write)` is a port too.
pub trait Port {
    /// The next byte that has arrived, or `None` when none waits. It must not block, or nothing
    /// the engine owes is sent meanwhile.
    fn read_byte(&mut self) -> Option<u8>;
    /// Writes bytes out (a message, then its `b"\n"`).
    fn write(&mut self, bytes: &[u8]);
}

impl<R: FnMut() -> Option<u8>, W: FnMut(&[u8])> Port for (R, W) {
    fn read_byte(&mut self) -> Option<u8> {
        (self.0)()
    }
    fn write(&mut self, bytes: &[u8]) {
        (self.1)(bytes);
    }
}

/// A line-based link (UART, USB serial, stdin/stdout) around an engine: the line assembly and the
/// turn of a firmware's main loop, in `N` bytes of line buffer (see the [module docs](self)).
///
/// Bytes come from and go to a [`Port`]: each message is written, then `b"\n"`.
#[derive(Debug, Default)]
pub struct LineLink<const N: usize> {
    lines: LineBuffer<N>,
}

impl<const N: usize> LineLink<N> {
    /// A link with an empty line buffer.
    pub const fn new() -> Self {
        LineLink {
            lines: LineBuffer::new(),
        }
    }

    /// Sends everything the engine owes at `now_ms` (task results and progress, a held call's
    /// answer, resource updates: [`Server::poll`]), each message through `send`.
    pub fn poll<C, K: Capacities>(
        &mut self,
        server: &mut Server<'_, C, K>,
        now_ms: u64,
        ctx: &mut C,
        out: &mut [u8],
        port: &mut impl Port,
    ) {
        loop {
            let n = server.poll(now_ms, ctx, out);
            match out.get(..n) {
                Some(msg) if n > 0 => send_line(port, msg),
                _ => return,
            }
        }
    }

    /// Takes the bytes that wait, up to one complete line, and sends the engine's answer to it
    /// (an over-long line is answered with [`write_too_long`]). Returns `true` when a byte was
    /// read (a firmware may sleep when none was).
    pub fn serve<C, K: Capacities>(
        &mut self,
        server: &mut Server<'_, C, K>,
        principal: Principal,
        ctx: &mut C,
        out: &mut [u8],
        port: &mut impl Port,
    ) -> bool {
        self.serve_with(out, port, |msg, out| {
            server.handle(msg, principal, ctx, out).map_or(0, |h| h.len)
        })
    }

    /// [`serve`](Self::serve) with the firmware's own dispatch: `answer` gets the message and the
    /// output buffer and returns the length of the answer it wrote there (a firmware that
    /// measures the stack of a dispatch, or runs [`Server::handle_async`] on an executor of its
    /// own, wraps it here). Returns `true` when a byte was read.
    pub fn serve_with(
        &mut self,
        out: &mut [u8],
        port: &mut impl Port,
        answer: impl FnOnce(&[u8], &mut [u8]) -> usize,
    ) -> bool {
        let (read_any, line) = self.next_line(port);
        let n = match line {
            Some(Line::Message(msg)) => answer(msg, out),
            Some(Line::TooLong) => write_too_long(out, N),
            None => 0,
        };
        if let Some(answer) = out.get(..n).filter(|a| !a.is_empty()) {
            send_line(port, answer);
        }
        read_any
    }

    /// [`poll`](Self::poll) for firmware whose tools are async: a call a person confirmed on the
    /// device runs through `run` ([`Server::poll_async`]).
    pub async fn poll_async<C, K: Capacities>(
        &mut self,
        server: &mut Server<'_, C, K>,
        now_ms: u64,
        ctx: &mut C,
        out: &mut [u8],
        port: &mut impl Port,
        mut run: impl AsyncFnMut(&mut C, Call<'_, '_>) -> ToolResult,
    ) {
        loop {
            let n = server.poll_async(now_ms, ctx, out, &mut run).await.len;
            match out.get(..n) {
                Some(msg) if n > 0 => send_line(port, msg),
                _ => return,
            }
        }
    }

    /// [`serve`](Self::serve) for firmware whose tools are async: the message goes through
    /// [`Server::handle_async`], and `run` awaits an async tool's handler; `notify` receives what
    /// a handler emits while it runs (progress, log messages), to send before the answer.
    #[allow(
        clippy::too_many_arguments,
        reason = "the engine, who calls, the board, the buffer, the port, the handlers"
    )]
    pub async fn serve_async<C, K: Capacities>(
        &mut self,
        server: &mut Server<'_, C, K>,
        principal: Principal,
        ctx: &mut C,
        out: &mut [u8],
        port: &mut impl Port,
        notify: &mut dyn crate::Notify,
        run: impl AsyncFnMut(&mut C, Call<'_, '_>) -> ToolResult,
    ) -> bool {
        let (read_any, line) = self.next_line(port);
        let n = match line {
            Some(Line::Message(msg)) => server
                .handle_async(Input::new(msg, principal), ctx, out, notify, run)
                .await
                .map_or(0, |h| h.len),
            Some(Line::TooLong) => write_too_long(out, N),
            None => 0,
        };
        if let Some(answer) = out.get(..n).filter(|a| !a.is_empty()) {
            send_line(port, answer);
        }
        read_any
    }

    /// Reads bytes until a line is complete or none waits; whether any was read, and the line.
    fn next_line(&mut self, port: &mut impl Port) -> (bool, Option<Line<'_>>) {
        let mut read_any = false;
        // Whether the line that completed is a message (`true`) or an over-long one (`false`).
        let mut complete = None;
        while let Some(byte) = port.read_byte() {
            read_any = true;
            match self.lines.push(byte) {
                Some(Line::Message(_)) => complete = Some(true),
                Some(Line::TooLong) => complete = Some(false),
                None => continue,
            }
            break;
        }
        let line = match complete {
            Some(true) => self.lines.last(),
            Some(false) => Some(Line::TooLong),
            None => None,
        };
        (read_any, line)
    }
}

/// A message and its newline.
fn send_line(port: &mut impl Port, msg: &[u8]) {
    port.write(msg);
    port.write(b"\n");
}

#[cfg(test)]
mod test {
    use super::*;

    /// The link's turn: everything the engine owes, then one line at a time; an over-long line is
    /// answered with -32600 and the next one still served; nothing waiting reads nothing.
    #[test]
    fn a_link_serves_one_line_at_a_time_and_refuses_an_overlong_one() {
        use crate::{Caps, Config, Output, Principal, Server, Tool};
        struct Board(u32);
        const PING: Tool<Board> = Tool::new("self.count", "Count", |b: &mut Board, _, _| {
            b.0 += 1;
            Ok(Output::int(i64::from(b.0)))
        });
        let mut server: Server<'_, Board, Caps<4>> = Server::new(Config::new("t", "1"));
        server.register(&PING).unwrap();
        let (mut board, mut out) = (Board(0), [0u8; 1024]);
        let mut link: LineLink<96> = LineLink::new();
        let call = |id: u32| {
            format!(
                r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"self.count"}}}}"#
            )
        };
        let long = format!("{}\n", "x".repeat(200));
        let input = format!("{}\r\n\n{long}{}\n", call(1), call(2));
        let mut rx = input.bytes();
        let mut tx = Vec::new();
        {
            let mut port = (|| rx.next(), |b: &[u8]| tx.extend_from_slice(b));
            let mut turn = || {
                link.serve(
                    &mut server,
                    Principal::Model,
                    &mut board,
                    &mut out,
                    &mut port,
                )
            };
            assert!(turn());
            assert!(turn(), "the empty line is skipped");
            assert!(turn());
            assert!(!turn(), "nothing waits");
        }
        assert_eq!(board.0, 2, "each call once");
        let lines: Vec<serde_json::Value> = tx
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(|l| serde_json::from_slice(l).unwrap())
            .collect();
        assert_eq!(lines.len(), 3, "{lines:?}");
        assert_eq!(lines[0]["id"], 1);
        assert_eq!(lines[1]["error"]["code"], -32600);
        assert_eq!(lines[2]["id"], 2);
        assert_eq!(lines[2]["result"]["structuredContent"]["value"], 2);
    }

    #[test]
    fn overlong_lines_are_dropped_whole() {
        let mut lb: LineBuffer<4> = LineBuffer::new();
        let mut out = Vec::new();
        for &b in b"abcdefg\nab\n" {
            match lb.push(b) {
                Some(Line::Message(m)) => out.push(Ok(m.to_vec())),
                Some(Line::TooLong) => out.push(Err(())),
                None => {}
            }
        }
        assert_eq!(out, [Err(()), Ok(b"ab".to_vec())]);
        let mut buf = [0u8; 200];
        let n = write_too_long(&mut buf, 4);
        let v: serde_json::Value = serde_json::from_slice(&buf[..n]).unwrap();
        assert_eq!(v["error"]["code"], -32600);
        assert_eq!(v["id"], serde_json::Value::Null);
    }
}
