//! Writing JSON into a caller-provided byte buffer.
//!
//! [`Writer`] never allocates and never writes past its buffer. When the output does not fit it
//! keeps *counting*, so the caller learns how many bytes would have been needed
//! ([`Writer::needed`]) and can replace the response with a short error instead of sending a
//! truncated one.
//!
//! A writer can be switched into *string mode* ([`Writer::begin_string`]): everything written
//! until [`Writer::end_string`] is escaped as JSON string content. That is how a JSON object is
//! rendered a second time as the `text` of an MCP text block without a temporary copy.

use core::fmt;

use super::json::JsonStr;
#[cfg(feature = "strings")]
use super::protocol;
use super::swar::{self, plain_len};

/// An escaping, counting JSON writer over `&mut [u8]`.
#[derive(Debug)]
pub struct Writer<'b> {
    buf: &'b mut [u8],
    len: usize,
    in_string: bool,
    /// A `_meta` member of the object being written is open ([`meta_member`](Self::meta_member)):
    /// the next `_meta` entry joins it, and [`close_meta`](Self::close_meta) ends it.
    meta: bool,
}

impl<'b> Writer<'b> {
    /// A writer that starts at the beginning of `buf`.
    pub fn new(buf: &'b mut [u8]) -> Self {
        Writer {
            buf,
            len: 0,
            in_string: false,
            meta: false,
        }
    }

    /// The number of bytes the output needs so far (may exceed the buffer).
    pub const fn needed(&self) -> usize {
        self.len
    }

    /// The buffer's capacity.
    pub const fn capacity(&self) -> usize {
        self.buf.len()
    }

    /// `true` while everything written so far fits the buffer.
    pub const fn fits(&self) -> bool {
        self.len <= self.buf.len()
    }

    /// The bytes written, when everything fit.
    pub fn written(&self) -> Option<&[u8]> {
        self.buf.get(..self.len)
    }

    /// The current length, to return to with [`rewind`](Self::rewind).
    pub const fn mark(&self) -> usize {
        self.len
    }

    /// Forgets everything written after `mark`.
    pub fn rewind(&mut self, mark: usize) {
        self.len = self.len.min(mark);
    }

    #[inline]
    fn put(&mut self, bytes: &[u8]) {
        let end = self.len + bytes.len();
        match self.buf.get_mut(self.len..end) {
            Some(dst) => dst.copy_from_slice(bytes),
            None => self.put_partly(bytes),
        }
        self.len = end;
    }

    /// Writes an entry of the `_meta` member of the object being written: `member` is its
    /// fragment, `,"_meta":{"key":` (see `protocol::EVIDENCE_META`). The first entry opens the
    /// member; a later one joins it (`,"key":`), so that an object never has two `_meta`
    /// members. The object's writer ends it with [`close_meta`](Self::close_meta) before the
    /// object's `}`.
    #[inline]
    pub(crate) fn meta_member(&mut self, member: &[u8]) {
        if self.meta {
            self.put(b",");
            self.put(
                member
                    .get(super::protocol::META_MEMBER_HEAD..)
                    .unwrap_or_default(),
            );
        } else {
            self.meta = true;
            self.put(member);
        }
    }

    /// `true` while a `_meta` member is open ([`meta_member`](Self::meta_member)).
    #[inline]
    pub(crate) const fn meta_open(&self) -> bool {
        self.meta
    }

    /// Ends the `_meta` member [`meta_member`](Self::meta_member) opened, if one is open.
    #[inline]
    pub(crate) fn close_meta(&mut self) {
        if self.meta {
            self.meta = false;
            self.put(b"}");
        }
    }

    /// The rare path of [`put`](Self::put), kept out of its many inlined copies: `bytes` does
    /// not fit; keep what fits (the writer is overflowed from now on anyway).
    #[cold]
    #[inline(never)]
    fn put_partly(&mut self, bytes: &[u8]) {
        if let Some(dst) = self.buf.get_mut(self.len..) {
            let n = dst.len();
            dst.copy_from_slice(bytes.get(..n).unwrap_or_default());
        }
    }

    /// Writes bytes that read the same escaped or not (digits, `true`, ASCII text without `"`,
    /// `\` or control characters), in either mode, without looking at them.
    #[inline]
    pub(crate) fn plain(&mut self, bytes: &[u8]) {
        self.put(bytes);
    }

    /// Writes `prefix` (JSON text ending inside a string: its opening `"`, and maybe some of its
    /// content that needs no escape) and switches to string mode:
    /// [`begin_string`](Self::begin_string) with what comes before it, in one piece.
    pub(crate) fn open_string(&mut self, prefix: &[u8]) {
        self.raw(prefix);
        self.in_string = true;
    }

    /// Leaves string mode and writes `suffix` (JSON text starting with the closing `"`):
    /// [`end_string`](Self::end_string) with what comes after it, in one piece.
    pub(crate) fn close_string(&mut self, suffix: &[u8]) {
        self.in_string = false;
        self.put(suffix);
    }

    /// Writes JSON text as is (escaped when in string mode).
    #[inline]
    pub fn raw(&mut self, bytes: &[u8]) {
        if self.in_string {
            self.raw_in_string(bytes);
        } else {
            self.put(bytes);
        }
    }

    /// [`raw`](Self::raw) in string mode: escaped where needed. One copy of the scan, not one
    /// in each of `raw`'s inlined callers.
    #[inline(never)]
    fn raw_in_string(&mut self, bytes: &[u8]) {
        let plain = plain_len(bytes);
        if plain < bytes.len() {
            self.escaped(bytes, plain);
        } else {
            self.put(bytes);
        }
    }

    /// Writes `bytes`, whose first `plain` bytes need no escape and the next one does, escaped
    /// (the rare path of [`raw`](Self::raw)).
    #[inline(never)]
    fn escaped(&mut self, bytes: &[u8], plain: usize) {
        let (run, rest) = bytes.split_at(plain);
        self.put(run);
        self.escape_pieces(rest, false);
    }

    /// Writes `bytes` JSON-escaped, piece by piece: each run of bytes that needs no escape, and
    /// the escape sequence of each byte that does; each piece through [`raw`](Self::raw) (escaped
    /// once more in string mode) when `via_raw`.
    #[inline(never)]
    fn escape_pieces(&mut self, bytes: &[u8], via_raw: bool) {
        let mut rest = bytes;
        while let Some((&c, tail)) = rest.split_first() {
            let sequence;
            let piece = if c == b'"' || c == b'\\' || c < 0x20 {
                rest = tail;
                sequence = escape_of(c);
                let (bytes, len) = &sequence;
                bytes.get(..*len).unwrap_or_default()
            } else {
                let (run, tail) = rest.split_at(plain_len(rest));
                rest = tail;
                run
            };
            if via_raw {
                self.raw(piece);
            } else {
                self.put(piece);
            }
        }
    }

    /// Writes a JSON string token for `s` (escaped once more when in string mode).
    pub fn string(&mut self, s: &str) {
        let s = s.as_bytes();
        if !self.in_string && plain_len(s) == s.len() {
            // The common case: three pieces, nothing to escape.
            self.put(b"\"");
            self.put(s);
            self.put(b"\"");
            return;
        }
        self.raw(b"\"");
        self.escape_pieces(s, true);
        self.raw(b"\"");
    }

    /// Writes one string token made of `parts`, each escaped: `["a", "; b"]` is `"a; b"`.
    pub(crate) fn string_parts(&mut self, parts: &[&str]) {
        self.raw(b"\"");
        for part in parts {
            self.escape_pieces(part.as_bytes(), true);
        }
        self.raw(b"\"");
    }

    /// Writes a string token whose content is already-escaped JSON (for example a key or an id
    /// taken from the input): byte-exact on the wire.
    pub fn json_str(&mut self, s: JsonStr<'_>) {
        self.raw(b"\"");
        self.raw(s.raw());
        self.raw(b"\"");
    }

    /// Writes the first `max_chars` characters of a JSON string, decoded (escaped again in string
    /// mode): a name sent by the peer, quoted in a message. Returns `true` when the string has
    /// more characters (it was cut).
    pub(crate) fn decoded(&mut self, s: JsonStr<'_>, max_chars: usize) -> bool {
        let raw = s.raw();
        if raw.len() <= max_chars && !s.has_escapes() {
            // Content without escape sequences holds no `"`, `\` or control character, and has
            // no more characters than bytes.
            self.put(raw);
            return false;
        }
        let mut chars = s.chars();
        for c in chars.by_ref().take(max_chars) {
            let mut utf8 = [0u8; 4];
            self.raw(c.encode_utf8(&mut utf8).as_bytes());
        }
        chars.next().is_some()
    }

    /// Writes at most `max_chars` characters of a client's string, decoded (in string mode, so
    /// escaped again), and `…` when it was cut: cut sooner when the next character and the `…`
    /// would leave fewer than `reserve` bytes of the buffer for what must follow the echo (and
    /// the `…` left out when even it has no room). So an error that quotes what a client sent
    /// fits the buffer whenever it fits without the quote: the echo shrinks, the answer stays the
    /// one the rules demand.
    pub(crate) fn echo(&mut self, s: JsonStr<'_>, max_chars: usize, reserve: usize) {
        const MORE: &str = "…";
        let raw = s.raw();
        if !s.has_escapes()
            && raw.len() <= max_chars
            && self.needed() + raw.len() + reserve <= self.capacity()
        {
            // The common case: content without escape sequences holds no `"`, `\` or control
            // character and has no more characters than bytes: it fits whole, as it came.
            self.put(raw);
            return;
        }
        let mut chars = s.chars();
        for c in chars.by_ref().take(max_chars) {
            let mark = self.mark();
            let mut utf8 = [0u8; 4];
            self.raw(c.encode_utf8(&mut utf8).as_bytes());
            if self.needed() + MORE.len() + reserve > self.capacity() {
                self.rewind(mark);
                self.more(MORE, reserve);
                return;
            }
        }
        if chars.next().is_some() {
            self.more(MORE, reserve);
        }
    }

    /// [`echo`](Self::echo)'s mark of a cut, when it leaves `reserve` bytes.
    fn more(&mut self, more: &str, reserve: usize) {
        if self.needed() + more.len() + reserve <= self.capacity() {
            self.raw(more.as_bytes());
        }
    }

    /// Writes a decimal integer.
    pub fn int(&mut self, v: i64) {
        // Volumes, percentages, counts: 0 to 999 as one 3-byte store (the bytes after the
        // number's are scratch, overwritten by what comes next), without the general formatter.
        if let Ok(small @ 0..1000) = u32::try_from(v) {
            let ([a, b, c], len) = swar::decimal3(small);
            if let Some(dst) = self
                .buf
                .get_mut(self.len..)
                .and_then(<[u8]>::first_chunk_mut::<3>)
            {
                *dst = [a, b, c];
                self.len += len;
                return;
            }
        }
        self.int_general(v);
    }

    #[inline(never)]
    fn int_general(&mut self, v: i64) {
        self.put(Decimal::signed(v).as_bytes());
    }

    /// Writes an unsigned decimal integer.
    #[inline(never)]
    pub fn uint(&mut self, v: u64) {
        self.put(Decimal::unsigned(v).as_bytes());
    }

    /// Writes a number; integral values are written as integers (`100`, not `100.0`), and
    /// non-finite values (which JSON cannot represent) become `null`. Feature `float`.
    #[cfg(feature = "float")]
    pub fn number(&mut self, v: f64) {
        with_number(v, |s| self.raw(s.as_bytes()));
    }

    /// Writes a progress value (`notifications/progress`, task status): as
    /// [`number`](Self::number) with the feature `float`; without it, without a float printer:
    /// integral values exactly, others with at most six decimals (`0.333333`), non-finite ones
    /// as `null`.
    pub(crate) fn progress_value(&mut self, v: f64) {
        #[cfg(feature = "float")]
        self.number(v);
        #[cfg(not(feature = "float"))]
        self.fixed_point(v);
    }

    /// `v` with at most six decimals, by integer arithmetic (no float printer).
    #[cfg(any(test, not(feature = "float")))]
    fn fixed_point(&mut self, v: f64) {
        const SCALE: u64 = 1_000_000;
        if !v.is_finite() {
            self.raw(b"null");
            return;
        }
        let magnitude = if v < 0.0 { -v } else { v };
        // Saturates beyond u64 (a progress value that large is a tool bug anyway).
        let micros = (magnitude * SCALE as f64 + 0.5) as u64;
        if v < 0.0 && micros > 0 {
            self.raw(b"-");
        }
        self.uint(micros / SCALE);
        let mut frac = micros % SCALE;
        if frac == 0 {
            return;
        }
        let mut digits = 6;
        while frac.is_multiple_of(10) {
            frac /= 10;
            digits -= 1;
        }
        let decimal = Decimal::unsigned(frac);
        let text = decimal.as_bytes();
        self.raw(b".");
        for _ in text.len()..digits {
            self.raw(b"0");
        }
        self.raw(text);
    }

    /// Writes `true` or `false`.
    pub fn bool(&mut self, v: bool) {
        self.put(if v { b"true" } else { b"false" });
    }

    /// Opens a string token and switches to string mode: everything written until
    /// [`end_string`](Self::end_string) becomes its escaped content.
    pub fn begin_string(&mut self) {
        self.raw(b"\"");
        self.in_string = true;
    }

    /// Closes the string opened by [`begin_string`](Self::begin_string).
    pub fn end_string(&mut self) {
        self.in_string = false;
        self.raw(b"\"");
    }

    /// Writes text (escaped if in string mode); for messages built with `write!`.
    pub fn text(&mut self, s: &str) {
        self.raw(s.as_bytes());
    }

    /// Writes `"key":`.
    pub fn key(&mut self, key: &str) {
        self.string(key);
        self.raw(b":");
    }
}

impl fmt::Write for Writer<'_> {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        self.text(s);
        Ok(())
    }
}

/// An integer's decimal digits (with a `-` when negative), formatted right to left into a
/// buffer of its own: a digit per division by ten, without the pair table and unrolled steps of
/// a general formatter (about 400 bytes of flash on riscv32imc). Integers beyond 0 to 999 are
/// rare on the engine's path: ids are echoed as they came, and counts are small.
pub(crate) struct Decimal {
    /// The digits, right-aligned (`i64::MIN` takes all 20 bytes with its sign; `u64::MAX` 20
    /// digits).
    buf: [u8; 20],
    /// Where the text starts in `buf`.
    start: usize,
}

impl Decimal {
    /// The digits of `v`.
    pub(crate) fn unsigned(mut v: u64) -> Self {
        let mut d = Decimal {
            buf: [b'0'; 20],
            start: 20,
        };
        loop {
            d.start = d.start.saturating_sub(1);
            if let Some(digit) = d.buf.get_mut(d.start) {
                *digit = b'0' + (v % 10) as u8;
            }
            v /= 10;
            if v == 0 {
                return d;
            }
        }
    }

    /// The digits of `v`, after a `-` when it is negative.
    pub(crate) fn signed(v: i64) -> Self {
        let mut d = Self::unsigned(v.unsigned_abs());
        if v < 0 {
            d.start = d.start.saturating_sub(1);
            if let Some(sign) = d.buf.get_mut(d.start) {
                *sign = b'-';
            }
        }
        d
    }

    /// The text's bytes.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        self.buf.get(self.start..).unwrap_or_default()
    }

    /// The text.
    pub(crate) fn as_str(&self) -> &str {
        core::str::from_utf8(self.as_bytes()).unwrap_or_default()
    }
}

/// Formats `v` (integral values as integers, non-finite as `null`) and hands the text to `f`:
/// without `core`'s float formatting (which would link a second float printer into the firmware).
#[cfg(feature = "float")]
pub(crate) fn with_number<R>(v: f64, f: impl FnOnce(&str) -> R) -> R {
    // `f64::fract` is not in `core`: compare with the truncated value instead.
    if v > -1e15 && v < 1e15 && (v as i64) as f64 == v {
        f(Decimal::signed(v as i64).as_str())
    } else if v.is_finite() {
        f(zmij::Buffer::new().format_finite(v))
    } else {
        f("null")
    }
}

/// The escape sequence of a byte that needs one, in the first `len` bytes: `(sequence, len)`.
/// The `\u00XX` forms are spelled out here from the byte's hex digits (a table of the 32
/// sequences would cost some 400 bytes of flash: their pointers and their text).
#[inline(never)]
fn escape_of(c: u8) -> ([u8; 6], usize) {
    let short = match c {
        b'"' => b'"',
        b'\\' => b'\\',
        b'\n' => b'n',
        b'\r' => b'r',
        b'\t' => b't',
        0x08 => b'b',
        0x0C => b'f',
        _ => {
            const HEX: &[u8; 16] = b"0123456789abcdef";
            let hex = |n: u8| HEX.get(usize::from(n & 0xF)).copied().unwrap_or(b'0');
            return ([b'\\', b'u', b'0', b'0', hex(c >> 4), hex(c)], 6);
        }
    };
    ([b'\\', short, 0, 0, 0, 0], 2)
}

/// The items of a container being written: the writer, and whether the next item is the first
/// (no comma before it). What [`ObjectWriter`] and [`ArrayWriter`] share.
#[derive(Debug)]
struct Items<'w, 'b> {
    w: &'w mut Writer<'b>,
    first: bool,
}

impl<'w, 'b> Items<'w, 'b> {
    /// Writes `open`, runs `f` on the items (in the container `wrap` makes of them; `unwrap`
    /// takes them back), writes `close`.
    fn within<T>(
        w: &'w mut Writer<'b>,
        [open, close]: [&[u8]; 2],
        wrap: fn(Self) -> T,
        f: impl FnOnce(&mut T),
        unwrap: fn(T) -> Self,
    ) {
        w.raw(open);
        let mut container = wrap(Items { w, first: true });
        f(&mut container);
        unwrap(container).w.raw(close);
    }

    /// The writer, after the comma that separates this item from the one before.
    fn next(&mut self) -> &mut Writer<'b> {
        if !self.first {
            self.w.raw(b",");
        }
        self.first = false;
        self.w
    }
}

/// Builds a JSON object member by member; created by [`Writer`]-based APIs such as
/// [`Reply::json`](crate::Reply::json).
#[derive(Debug)]
pub struct ObjectWriter<'w, 'b>(Items<'w, 'b>);

impl<'w, 'b> ObjectWriter<'w, 'b> {
    /// Writes `{`, runs `f` on the members, writes `}`.
    pub fn write(w: &'w mut Writer<'b>, f: impl FnOnce(&mut ObjectWriter<'_, 'b>)) {
        Items::within(w, [b"{", b"}"], ObjectWriter, f, |o| o.0);
    }

    fn member(&mut self, key: &str) -> &mut Writer<'b> {
        let w = self.0.next();
        w.key(key);
        w
    }

    /// Adds a boolean member.
    pub fn bool(&mut self, key: &str, v: bool) -> &mut Self {
        self.member(key).bool(v);
        self
    }

    /// Adds an integer member.
    pub fn int(&mut self, key: &str, v: i64) -> &mut Self {
        self.member(key).int(v);
        self
    }

    /// Adds a progress member (see [`Writer::progress_value`]). (The status tool's: feature
    /// `strings`.)
    #[cfg(feature = "strings")]
    pub(crate) fn progress_value(&mut self, key: &str, v: f64) -> &mut Self {
        self.member(key).progress_value(v);
        self
    }

    /// Adds a number member (`null` if not finite). Feature `float`.
    #[cfg(feature = "float")]
    pub fn number(&mut self, key: &str, v: f64) -> &mut Self {
        self.member(key).number(v);
        self
    }

    /// Adds a string member.
    pub fn str(&mut self, key: &str, v: &str) -> &mut Self {
        self.member(key).string(v);
        self
    }

    /// Adds a string member made of `parts` (see [`Writer::string_parts`]). (The status tool's:
    /// feature `strings`.)
    #[cfg(feature = "strings")]
    pub(crate) fn str_parts(&mut self, key: &str, parts: &[&str]) -> &mut Self {
        self.member(key).string_parts(parts);
        self
    }

    /// Adds a `null` member.
    pub fn null(&mut self, key: &str) -> &mut Self {
        self.member(key).raw(b"null");
        self
    }

    /// Adds a member whose key is a fragment of `wire::protocol` (`,"evidence":`, spelled
    /// there once) and whose value `f` writes as JSON (one writer shared with other forms, such
    /// as the evidence writer's). (The status tool's: feature `strings`.)
    #[cfg(feature = "strings")]
    pub(crate) fn raw_member(
        &mut self,
        member: &'static [u8],
        f: impl FnOnce(&mut Writer<'b>),
    ) -> &mut Self {
        let first = core::mem::replace(&mut self.0.first, false);
        self.0.w.raw(if first {
            protocol::first(member)
        } else {
            member
        });
        f(self.0.w);
        self
    }

    /// Adds a nested object member.
    pub fn object(&mut self, key: &str, f: impl FnOnce(&mut ObjectWriter<'_, 'b>)) -> &mut Self {
        let w = self.member(key);
        ObjectWriter::write(w, f);
        self
    }

    /// Adds an array member.
    pub fn array(&mut self, key: &str, f: impl FnOnce(&mut ArrayWriter<'_, 'b>)) -> &mut Self {
        let w = self.member(key);
        ArrayWriter::write(w, f);
        self
    }
}

/// Builds a JSON array element by element.
#[derive(Debug)]
pub struct ArrayWriter<'w, 'b>(Items<'w, 'b>);

impl<'w, 'b> ArrayWriter<'w, 'b> {
    /// Writes `[`, runs `f` on the elements, writes `]`.
    pub fn write(w: &'w mut Writer<'b>, f: impl FnOnce(&mut ArrayWriter<'_, 'b>)) {
        Items::within(w, [b"[", b"]"], ArrayWriter, f, |a| a.0);
    }

    fn element(&mut self) -> &mut Writer<'b> {
        self.0.next()
    }

    /// Appends a boolean.
    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.element().bool(v);
        self
    }

    /// Appends an integer.
    pub fn int(&mut self, v: i64) -> &mut Self {
        self.element().int(v);
        self
    }

    /// Appends a number. Feature `float`.
    #[cfg(feature = "float")]
    pub fn number(&mut self, v: f64) -> &mut Self {
        self.element().number(v);
        self
    }

    /// Appends a string.
    pub fn str(&mut self, v: &str) -> &mut Self {
        self.element().string(v);
        self
    }

    /// Appends an object.
    pub fn object(&mut self, f: impl FnOnce(&mut ObjectWriter<'_, 'b>)) -> &mut Self {
        let w = self.element();
        ObjectWriter::write(w, f);
        self
    }
}

#[cfg(test)]
mod test {
    use super::*;
    use crate::wire::json::{DEFAULT_MAX_DEPTH, Json};

    fn render(cap: usize, f: impl FnOnce(&mut Writer<'_>)) -> (Vec<u8>, usize) {
        let mut buf = vec![0u8; cap];
        let mut w = Writer::new(&mut buf);
        f(&mut w);
        let needed = w.needed();
        let out = w.written().map(<[u8]>::to_vec).unwrap_or_default();
        (out, needed)
    }

    #[test]
    fn integers_are_written_as_rust_writes_them() {
        let powers = (0..19).map(|e| 10i64.pow(e));
        let values = (-1100..1100)
            .chain([i64::MIN, i64::MIN + 1, i64::MAX, -1, 9_999, 65_535, 65_536])
            .chain(powers.clone().flat_map(|p| [p - 1, p, -p, 1 - p]));
        for v in values {
            let (out, needed) = render(24, |w| w.int(v));
            assert_eq!(out, v.to_string().as_bytes(), "{v}");
            assert_eq!(needed, out.len());
        }
        let unsigned = [
            0,
            1,
            9,
            10,
            u64::MAX,
            u64::MAX - 1,
            10u64.pow(19),
            10u64.pow(19) - 1,
        ]
        .into_iter()
        .chain(powers.map(|p| p as u64 + 7));
        for v in unsigned {
            let (out, needed) = render(24, |w| w.uint(v));
            assert_eq!(out, v.to_string().as_bytes(), "{v}");
            assert_eq!(needed, out.len());
        }
        // Near the end of the buffer the 3-byte store does not fit: the general path.
        assert_eq!(render(2, |w| w.int(5)), (b"5".to_vec(), 1));
        assert_eq!(render(2, |w| w.int(42)), (b"42".to_vec(), 2));
        assert_eq!(render(2, |w| w.int(123)), (Vec::new(), 3));
    }

    #[test]
    fn escapes_strings() {
        let (out, _) = render(64, |w| w.string("a\"b\\c\n\u{1}é"));
        assert_eq!(out, r#""a\"b\\c\n\u0001é""#.as_bytes());
    }

    proptest::proptest! {
        #![proptest_config(crate::test_support::proptest_config(2000, 4))]
        /// The word-at-a-time escaping writes what serde_json writes, for every length around
        /// the word size and wherever the special bytes fall, once and twice (string mode).
        #[test]
        fn escaping_matches_serde_json(
            s in proptest::collection::vec(
                proptest::prop_oneof![
                    proptest::char::range(' ', '~'),
                    proptest::sample::select(vec!['"', '\\', '\n', '\u{1}', '\u{1f}', 'é', '\u{7f}']),
                ],
                0..40,
            )
        ) {
            let s: String = s.into_iter().collect();
            let (once, _) = render(512, |w| w.string(&s));
            proptest::prop_assert_eq!(&once, &serde_json::to_vec(&s).unwrap());
            let (twice, _) = render(1024, |w| {
                w.begin_string();
                w.string(&s);
                w.end_string();
            });
            let once_text = String::from_utf8(once).unwrap();
            proptest::prop_assert_eq!(twice, serde_json::to_vec(&once_text).unwrap());
        }
    }

    #[test]
    fn string_mode_nests_json_in_a_string() {
        let (out, _) = render(128, |w| {
            w.begin_string();
            ObjectWriter::write(w, |o| {
                o.str("k\"", "v\\\n").int("n", -3).bool("b", true);
            });
            w.end_string();
        });
        let text = core::str::from_utf8(&out).unwrap();
        let outer: String = serde_json::from_str(text).unwrap();
        let inner: serde_json::Value = serde_json::from_str(&outer).unwrap();
        assert_eq!(
            inner,
            serde_json::json!({"k\"": "v\\\n", "n": -3, "b": true})
        );
    }

    #[test]
    fn counts_past_the_end_without_writing_past_it() {
        let (out, needed) = render(4, |w| w.string("hello"));
        assert!(out.is_empty());
        assert_eq!(needed, 7);
        let mut buf = [0u8; 4];
        let mut w = Writer::new(&mut buf);
        w.text("abcdef");
        assert!(!w.fits());
        assert_eq!(&buf, b"abcd");
    }

    #[test]
    fn rewind_forgets_output() {
        let (out, _) = render(16, |w| {
            w.text("[1");
            let m = w.mark();
            w.text(",2");
            w.rewind(m);
            w.text("]");
        });
        assert_eq!(out, b"[1]");
    }

    #[test]
    fn fixed_point_progress_without_float() {
        let (out, _) = render(128, |w| {
            for v in [
                0.0,
                3.0,
                0.5,
                2.0 / 3.0,
                -1.25,
                -0.000_000_4,
                0.999_999_9,
                1e3,
                f64::NAN,
            ] {
                w.fixed_point(v);
                w.text(" ");
            }
        });
        assert_eq!(
            core::str::from_utf8(&out).unwrap(),
            "0 3 0.5 0.666667 -1.25 0 1 1000 null "
        );
    }

    #[test]
    fn numbers() {
        let (out, _) = render(64, |w| {
            w.int(i64::MIN);
            // `number` exists with feature `float` only.
            #[cfg(feature = "float")]
            {
                w.text(" ");
                w.number(0.1);
                w.text(" ");
                w.number(f64::NAN);
                w.text(" ");
                w.number(1e21);
            }
        });
        #[cfg(feature = "float")]
        let expected = "-9223372036854775808 0.1 null 1e+21";
        #[cfg(not(feature = "float"))]
        let expected = "-9223372036854775808";
        assert_eq!(core::str::from_utf8(&out).unwrap(), expected);
    }

    #[test]
    fn json_str_is_byte_exact() {
        let v = Json::parse(br#""a\u00e9\"""#, DEFAULT_MAX_DEPTH).unwrap();
        let (out, _) = render(64, |w| w.json_str(v.as_str().unwrap()));
        assert_eq!(out, br#""a\u00e9\"""#);
    }
}
