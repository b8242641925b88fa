//! One JSON-RPC message per line, as on a UART, USB serial or a process's stdin/stdout.
//!
//! [`LineBuffer`] assembles lines from bytes as they arrive, in a fixed buffer. A line longer than
//! the buffer is dropped whole (never cut and half-processed) and reported as [`Line::TooLong`],
//! which the firmware answers with [`write_too_long`].
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

#[cfg(test)]
mod test {
    use super::*;

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
