//! The stream under the TLS session: it hands the TLS code whole records only, which makes a
//! read of the session **cancel-safe**.
//!
//! embedded-tls reads a record's 5-byte header into a local variable and then its body; a read
//! that is dropped half way (a timeout around it, a `select`) loses those bytes and the session
//! is broken. [`Records`] sits between the TLS code and the socket and answers a read only from
//! records that have arrived whole: until one has, it waits on the socket, keeping every byte
//! it got in its own buffer. So the only point where a session read can wait is before the TLS
//! code has taken anything of the next record, and dropping the read there loses nothing: the
//! bytes stay here for the next read. (Writes are not cancel-safe: a write given up half way
//! leaves a broken record on the wire, and the caller ends the connection.)

use core::fmt;

use embedded_io::ErrorKind;
use embedded_io_async::{ErrorType, Read, Write};

/// The header of a TLS record: type, version, length.
const HEADER: usize = 5;

/// The largest TLS record: a 2^14-byte fragment, 256 bytes of expansion, its header (RFC 8446
/// §5.2). The buffer of [`Records`] must hold one.
pub const MAX_RECORD: usize = HEADER + (1 << 14) + 256;

/// What went wrong under the TLS code.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RecordsError<E> {
    /// The socket failed.
    Io(E),
    /// A record longer than the buffer (or than TLS allows) was announced.
    TooBig,
}

impl<E: fmt::Debug> fmt::Display for RecordsError<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordsError::Io(e) => write!(f, "socket failed: {e:?}"),
            RecordsError::TooBig => f.write_str("TLS record too large"),
        }
    }
}

impl<E: fmt::Debug> core::error::Error for RecordsError<E> {}

impl<E: embedded_io::Error> embedded_io::Error for RecordsError<E> {
    fn kind(&self) -> ErrorKind {
        match self {
            RecordsError::Io(e) => e.kind(),
            RecordsError::TooBig => ErrorKind::OutOfMemory,
        }
    }
}

/// A socket that gives out whole TLS records only (see the module's documentation).
pub struct Records<'b, S> {
    io: S,
    buf: &'b mut [u8],
    /// The next byte to give out.
    start: usize,
    /// The end of what arrived.
    end: usize,
    /// The end of the whole records that arrived (`start <= whole <= end`).
    whole: usize,
}

impl<'b, S: Read> Records<'b, S> {
    /// Over `io`, with `buf` (at least [`MAX_RECORD`] bytes) for the records that arrive.
    pub fn new(io: S, buf: &'b mut [u8]) -> Self {
        Records {
            io,
            buf,
            start: 0,
            end: 0,
            whole: 0,
        }
    }

    /// The socket back.
    pub fn into_inner(self) -> S {
        self.io
    }

    /// Reads once from the socket into the buffer and notes the records that became whole;
    /// `Ok(false)` at the end of the stream. Cancel-safe: what a read returns is kept at once.
    async fn fill(&mut self) -> Result<bool, RecordsError<S::Error>> {
        if self.end == self.buf.len() {
            // Move the record that is arriving to the front.
            self.buf.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.whole -= self.start;
            self.start = 0;
        }
        let space = self.buf.get_mut(self.end..).unwrap_or_default();
        if space.is_empty() {
            return Err(RecordsError::TooBig);
        }
        let n = self.io.read(space).await.map_err(RecordsError::Io)?;
        if n == 0 {
            return Ok(false);
        }
        self.end += n;
        while let Some(&[_, _, _, hi, lo]) = self
            .buf
            .get(self.whole..self.end)
            .and_then(|arrived| arrived.get(..HEADER))
        {
            let len = HEADER + usize::from(u16::from_be_bytes([hi, lo]));
            if len > MAX_RECORD || len > self.buf.len() {
                return Err(RecordsError::TooBig);
            }
            if self.whole + len > self.end {
                break;
            }
            self.whole += len;
        }
        Ok(true)
    }
}

impl<S: ErrorType> ErrorType for Records<'_, S> {
    type Error = RecordsError<S::Error>;
}

impl<S: Read> Read for Records<'_, S> {
    async fn read(&mut self, out: &mut [u8]) -> Result<usize, Self::Error> {
        if out.is_empty() {
            return Ok(0);
        }
        while self.whole == self.start {
            if !self.fill().await? {
                return Ok(0);
            }
        }
        let src = self.buf.get(self.start..self.whole).unwrap_or_default();
        let mut n = 0;
        for (d, s) in out.iter_mut().zip(src) {
            *d = *s;
            n += 1;
        }
        self.start += n;
        if self.start == self.end {
            (self.start, self.end, self.whole) = (0, 0, 0);
        }
        Ok(n)
    }
}

impl<S: Write> Write for Records<'_, S> {
    async fn write(&mut self, buf: &[u8]) -> Result<usize, Self::Error> {
        self.io.write(buf).await.map_err(RecordsError::Io)
    }

    async fn flush(&mut self) -> Result<(), Self::Error> {
        self.io.flush().await.map_err(RecordsError::Io)
    }
}
