//! A strict, allocation-free JSON checker and borrowed views over checked JSON.
//!
//! Untrusted bytes go through two stages (the smoltcp `new_checked` pattern):
//!
//! 1. [`Json::parse`] checks the *whole* text once against RFC 8259: UTF-8, grammar, string escapes
//!    (including surrogate pairs), number grammar and a nesting limit. The check is iterative: a
//!    deeply nested message costs no stack, it is simply refused past the limit. (It is the
//!    crate's one checking pass, `wire::check`, which the message index, [`Frame`](super::Frame),
//!    runs too.)
//! 2. The views ([`Json`], [`JsonStr`], [`Members`]) then walk the checked bytes without copying.
//!    They still use checked indexing everywhere, so even a view built over bytes that were never
//!    checked cannot panic; it just yields nothing useful.
//!
//! Nothing here allocates. Strings keep their escapes until a caller asks for characters
//! ([`JsonStr::chars`]), compares ([`JsonStr::eq_str`]) or decodes into a buffer.

use core::fmt;

pub use super::check::{JsonError, MAX_DEPTH_LIMIT};
use super::check::{check_utf8, check_value, is_ws, skip_ws};
use super::swar::{self, WORD};

/// The nesting limit used when the caller does not choose one.
///
/// The checker is iterative, so the limit protects callers that walk values recursively, not the
/// checker itself. MCP messages from real clients nest fewer than 10 levels.
pub const DEFAULT_MAX_DEPTH: u8 = 32;

/// The type of a JSON value, from its first byte.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Kind {
    /// `null`
    Null,
    /// `true` or `false`
    Bool,
    /// A number
    Number,
    /// A string
    String,
    /// An array
    Array,
    /// An object
    Object,
}

impl Kind {
    /// A short English noun phrase for messages ("a string", "null").
    pub const fn noun(self) -> &'static str {
        match self {
            Kind::Null => "null",
            Kind::Bool => "a boolean",
            Kind::Number => "a number",
            Kind::String => "a string",
            Kind::Array => "an array",
            Kind::Object => "an object",
        }
    }
}

/// A borrowed view of exactly one JSON value (no surrounding whitespace).
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct Json<'a> {
    raw: &'a [u8],
}

impl fmt::Debug for Json<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match core::str::from_utf8(self.raw) {
            Ok(s) => write!(f, "Json({s})"),
            Err(_) => write!(f, "Json({:?})", self.raw),
        }
    }
}

/// The result of reading a JSON number as a JSON Schema `integer`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Integer {
    /// The number has no fractional part and fits an `i64` (`50`, `50.0`, `5e1`, `-0`).
    Exact(i64),
    /// The number has a non-zero fractional part (`50.5`, `1e-3`).
    Fractional,
    /// The number is an integer outside the `i64` range (`1e19`, `9223372036854775808`).
    OutOfRange,
}

impl<'a> Json<'a> {
    /// Checks `text` as one complete JSON value (surrounding whitespace allowed) nested at most
    /// `max_depth` levels, and returns a view of the value.
    pub fn parse(text: &'a [u8], max_depth: u8) -> Result<Self, JsonError> {
        let (value, after) = Self::check_first(text, max_depth)?;
        if after != text.len() {
            return Err(JsonError::Syntax(after));
        }
        Ok(value)
    }

    /// The first value of a comma-separated run of values (`{…},{…}`: content blocks as a
    /// [`Reply`](crate::Reply) keeps them), checked as [`parse`](Self::parse) checks one, and
    /// the bytes after its comma (empty after the last value).
    ///
    /// # Errors
    /// As [`parse`](Self::parse); [`JsonError::Syntax`] when something other than a comma
    /// follows the value.
    #[cfg_attr(
        not(feature = "resources"),
        allow(dead_code, reason = "only prompts and resources read a first value")
    )]
    pub(crate) fn parse_first(
        text: &'a [u8],
        max_depth: u8,
    ) -> Result<(Self, &'a [u8]), JsonError> {
        let (value, after) = Self::check_first(text, max_depth)?;
        let rest = match text.get(after) {
            None => &[][..],
            Some(b',') => text.get(after + 1..).unwrap_or_default(),
            Some(_) => return Err(JsonError::Syntax(after)),
        };
        Ok((value, rest))
    }

    /// Checks the value `text` starts with (after whitespace; the whole text is UTF-8): a view
    /// of it, and the offset of what follows it (after whitespace).
    fn check_first(text: &'a [u8], max_depth: u8) -> Result<(Self, usize), JsonError> {
        check_utf8(text)?;
        let max_depth = max_depth.min(MAX_DEPTH_LIMIT);
        let start = skip_ws(text, 0);
        if start >= text.len() {
            return Err(JsonError::Empty);
        }
        // The check of `Frame`'s pass for what it does not record (no index needed).
        let end = check_value(text, start, 0, max_depth)?;
        let value = Json {
            raw: text.get(start..end).unwrap_or_default(),
        };
        Ok((value, skip_ws(text, end)))
    }

    /// A view over bytes that were checked as one value (the index of [`Frame`](super::Frame);
    /// in tests, bytes that were never checked: views must not panic on them).
    pub(crate) const fn from_checked(raw: &'a [u8]) -> Self {
        Json { raw }
    }

    /// The value's bytes, exactly as they appeared on the wire.
    pub const fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// The value's text exactly as it appeared on the wire.
    pub fn as_text(&self) -> &'a str {
        core::str::from_utf8(self.raw).unwrap_or_default()
    }

    /// The value's type.
    pub fn kind(&self) -> Kind {
        match self.raw.first() {
            Some(b'{') => Kind::Object,
            Some(b'[') => Kind::Array,
            Some(b'"') => Kind::String,
            Some(b't' | b'f') => Kind::Bool,
            Some(b'n') | None => Kind::Null,
            Some(_) => Kind::Number,
        }
    }

    /// The boolean, if this is `true` or `false`.
    pub fn as_bool(&self) -> Option<bool> {
        match self.raw {
            b"true" => Some(true),
            b"false" => Some(false),
            _ => None,
        }
    }

    /// The string, if this is one.
    pub fn as_str(&self) -> Option<JsonStr<'a>> {
        match self.raw {
            [b'"', inner @ .., b'"'] => Some(JsonStr { raw: inner }),
            _ => None,
        }
    }

    /// The members, if this is an object. Members come in document order; duplicates are kept.
    pub fn members(&self) -> Option<Members<'a>> {
        Items::of(self.raw, b'{').map(Members)
    }

    /// The member `key` (compared decoded) of this object: once, repeated, or absent (also when
    /// this is not an object). A duplicate key is told apart from a single one, as the index of
    /// a message tells it ([`Frame::get`](super::Frame::get)): read a member of an object the
    /// index does not record here.
    pub fn member(&self, key: &str) -> Found<'a> {
        let mut found = Found::Absent;
        for (k, v) in self.members().into_iter().flatten() {
            if k.eq_str(key) {
                if found != Found::Absent {
                    return Found::Repeated;
                }
                found = Found::Once(v);
            }
        }
        found
    }

    /// The elements, if this is an array.
    pub fn elements(&self) -> Option<Elements<'a>> {
        Items::of(self.raw, b'[').map(Elements)
    }

    /// Reads the number as a JSON Schema 2020-12 `integer`: any number whose value has no
    /// fractional part, whatever its spelling. Never truncates, rounds or saturates.
    pub fn as_integer(&self) -> Option<Integer> {
        if self.kind() != Kind::Number {
            return None;
        }
        // The common spelling, `-?[0-9]{1,18}`, always fits: read it in one loop.
        let (negative, digits) = match self.raw {
            [b'-', digits @ ..] => (true, digits),
            digits => (false, digits),
        };
        if (1..=18).contains(&digits.len()) {
            let mut v: i64 = 0;
            let mut plain = true;
            for &c in digits {
                let d = c.wrapping_sub(b'0');
                if d > 9 {
                    plain = false;
                    break;
                }
                v = v * 10 + i64::from(d);
            }
            if plain {
                return Some(Integer::Exact(if negative { -v } else { v }));
            }
        }
        Some(number_as_integer(self.raw))
    }

    /// The number as an `f64`, if it is a number whose magnitude fits an `f64` (`1e400` does not).
    /// Feature `float` (it links `core`'s decimal-to-float parser).
    #[cfg(feature = "float")]
    pub fn as_f64(&self) -> Option<f64> {
        if self.kind() != Kind::Number {
            return None;
        }
        let text = core::str::from_utf8(self.raw).ok()?;
        let v: f64 = text.parse().ok()?;
        v.is_finite().then_some(v)
    }

    /// `true` when the value is a plain integer token: `-?(0|[1-9][0-9]*)` with no fraction or
    /// exponent (the JSON-RPC id form).
    pub fn is_plain_integer(&self) -> bool {
        let digits = self.raw.strip_prefix(b"-").unwrap_or(self.raw);
        !digits.is_empty() && digits.iter().all(u8::is_ascii_digit)
    }
}

/// What an object holds for one key: what [`Json::member`] finds, and what the index of a
/// message ([`Frame::get`](super::Frame::get)) recorded for one of its members.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Found<'a> {
    /// The member does not occur: its object has no such key, or the object itself is absent or
    /// not an object.
    Absent,
    /// The member occurs once, with this value.
    Once(Json<'a>),
    /// The key occurs more than once in its object.
    Repeated,
}

impl<'a> Found<'a> {
    /// The value when the member occurs once.
    pub const fn once(self) -> Option<Json<'a>> {
        match self {
            Found::Once(v) => Some(v),
            _ => None,
        }
    }
}

/// Where a walk over the items of a checked container is: what [`Members`] and [`Elements`]
/// share.
#[derive(Debug, Clone)]
struct Items<'a> {
    raw: &'a [u8],
    pos: usize,
    done: bool,
}

impl<'a> Items<'a> {
    /// A walk over `raw`'s items when it starts with `open`.
    fn of(raw: &'a [u8], open: u8) -> Option<Self> {
        (raw.first() == Some(&open)).then_some(Items {
            raw,
            pos: 1,
            done: false,
        })
    }

    /// Where the next item starts: past whitespace and a separating comma; `None` (and done
    /// from then on) at the `close` bracket or the end of the bytes.
    fn next_start(&mut self, close: u8) -> Option<usize> {
        if self.done {
            return None;
        }
        let b = self.raw;
        let p = skip_ws(b, self.pos);
        match b.get(p) {
            Some(&c) if c != close => Some(if c == b',' { skip_ws(b, p + 1) } else { p }),
            _ => {
                self.done = true;
                None
            }
        }
    }
}

/// Member iterator of a JSON object, created by [`Json::members`].
#[derive(Debug, Clone)]
pub struct Members<'a>(Items<'a>);

impl<'a> Iterator for Members<'a> {
    type Item = (JsonStr<'a>, Json<'a>);

    fn next(&mut self) -> Option<Self::Item> {
        let mut p = self.0.next_start(b'}')?;
        let b = self.0.raw;
        let key_end = skip_checked(b, p);
        let key = JsonStr {
            raw: b.get(p + 1..key_end.saturating_sub(1)).unwrap_or_default(),
        };
        p = skip_ws(b, key_end);
        if b.get(p) != Some(&b':') {
            self.0.done = true;
            return None;
        }
        let vstart = skip_ws(b, p + 1);
        let vend = skip_checked(b, vstart);
        self.0.pos = vend;
        Some((
            key,
            Json {
                raw: b.get(vstart..vend).unwrap_or_default(),
            },
        ))
    }
}

/// Element iterator of a JSON array, created by [`Json::elements`].
#[derive(Debug, Clone)]
pub struct Elements<'a>(Items<'a>);

impl<'a> Iterator for Elements<'a> {
    type Item = Json<'a>;

    fn next(&mut self) -> Option<Self::Item> {
        let p = self.0.next_start(b']')?;
        let b = self.0.raw;
        let end = skip_checked(b, p);
        self.0.pos = end;
        Some(Json {
            raw: b.get(p..end).unwrap_or_default(),
        })
    }
}

/// A borrowed JSON string: the bytes between the quotes, escapes intact.
///
/// Compare with [`eq_str`](Self::eq_str), read with [`chars`](Self::chars), or take the fast path
/// [`as_plain`](Self::as_plain) when the string has no escapes.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct JsonStr<'a> {
    raw: &'a [u8],
}

impl fmt::Debug for JsonStr<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("\"")?;
        for c in self.chars() {
            fmt::Write::write_char(f, c)?;
        }
        f.write_str("\"")
    }
}

impl<'a> JsonStr<'a> {
    /// A view over the content of a checked string token.
    pub(crate) const fn from_checked(raw: &'a [u8]) -> Self {
        JsonStr { raw }
    }

    /// The escaped content between the quotes, as on the wire. It is valid JSON string content:
    /// writing `"` + raw + `"` reproduces the original string token.
    pub const fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// The string itself when it contains no escape sequences (no copy needed).
    pub fn as_plain(&self) -> Option<&'a str> {
        if swar::has_byte(self.raw, b'\\') {
            None
        } else {
            core::str::from_utf8(self.raw).ok()
        }
    }

    /// The decoded characters.
    pub fn chars(&self) -> Chars<'a> {
        Chars {
            raw: self.raw,
            pos: 0,
        }
    }

    /// `true` when the decoded string equals `s` (so `"vol\u0075me"` equals `"volume"`).
    pub fn eq_str(&self, s: &str) -> bool {
        // Every escape sequence is longer than the UTF-8 of the character it stands for, so a
        // string with escapes decodes to fewer bytes than its raw form: a raw form no longer than
        // `s` equals it only byte for byte and without escapes (the raw bytes are then the
        // string's UTF-8, checked when the document was parsed), and a longer one only decoded.
        if self.raw.len() <= s.len() {
            self.raw == s.as_bytes() && !self.has_escapes()
        } else {
            self.has_escapes() && self.eq_decoded(s)
        }
    }

    /// `true` when the decoded string equals `s`: each decoded character's UTF-8 starts what is
    /// left of `s` (the rare path of [`eq_str`](Self::eq_str), kept out of its callers).
    #[inline(never)]
    fn eq_decoded(&self, s: &str) -> bool {
        let mut rest = s.as_bytes();
        self.chars().all(
            |c| match rest.strip_prefix(c.encode_utf8(&mut [0; 4]).as_bytes()) {
                Some(tail) => {
                    rest = tail;
                    true
                }
                None => false,
            },
        ) && rest.is_empty()
    }

    /// `true` when the raw form contains an escape sequence (the decoded text differs from it).
    pub fn has_escapes(&self) -> bool {
        swar::has_byte(self.raw, b'\\')
    }

    /// The number of Unicode scalar values (JSON Schema's string length).
    pub fn char_count(&self) -> usize {
        self.decoded_size().0
    }

    /// The decoded string's length in Unicode scalar values and in UTF-8 bytes, without
    /// decoding: the raw form's characters and bytes, less what each escape sequence spells
    /// beyond the one character it stands for (its bytes are ASCII; in a checked string its
    /// size follows from its first hex digits). The checking pass counts the same while it
    /// checks ([`Frame`](super::Frame) keeps it for the arguments it indexes).
    pub fn decoded_size(&self) -> (usize, usize) {
        let raw = self.raw;
        let (mut chars, mut bytes) = (swar::char_starts(raw), raw.len());
        let mut i = 0;
        while let Some(&c) = raw.get(i) {
            if c != b'\\' {
                i += 1;
                continue;
            }
            let (width, len) = match raw.get(i + 1..i + 5) {
                Some(&[b'u', a, b, c]) => unicode_escape_size(a, b, c),
                _ => (2, 1),
            };
            chars = chars.saturating_sub(width - 1);
            bytes = bytes.saturating_sub(width - len);
            i += width;
        }
        (chars, bytes)
    }

    /// Decodes into `buf`, returning the decoded text, or `None` when it does not fit. Bytes of
    /// `buf` after the decoded text may be overwritten (runs are copied a word at a time).
    pub fn decode_into<'b>(&self, buf: &'b mut [u8]) -> Option<&'b str> {
        let len = self.decode_bytes(buf)?;
        core::str::from_utf8(buf.get(..len)?).ok()
    }

    /// Decodes into `buf`, returning the decoded length (the bytes are UTF-8: runs of checked
    /// text and encoded characters; the caller reads them as text when it needs to).
    pub(crate) fn decode_bytes(&self, buf: &mut [u8]) -> Option<usize> {
        let raw = self.raw;
        let (mut len, mut i) = (0, 0);
        while let Some(rest) = raw.get(i..).filter(|r| !r.is_empty()) {
            if rest.first() == Some(&b'\\') {
                let (code, width) = checked_escape_at(rest);
                len += encode_utf8(code, buf.get_mut(len..)?)?;
                i += width;
            } else {
                // A run without escapes, copied as it is: a word at a time where a whole word
                // of both remains (the bytes past the run are written again next).
                let run = swar::find_byte(rest, 0, b'\\');
                if run <= WORD
                    && let (Some(src), Some(dst)) = (
                        rest.first_chunk::<WORD>(),
                        buf.get_mut(len..).and_then(<[u8]>::first_chunk_mut::<WORD>),
                    )
                {
                    *dst = *src;
                } else {
                    buf.get_mut(len..len + run)?
                        .copy_from_slice(rest.get(..run)?);
                }
                len += run;
                i += run;
            }
        }
        Some(len)
    }

    /// The decoded string, borrowed when there are no escapes. Allocates when there are; feature
    /// `alloc` (allocation-free: [`decode_into`](Self::decode_into)).
    #[cfg(feature = "alloc")]
    pub fn to_cow(&self) -> alloc::borrow::Cow<'a, str> {
        match self.as_plain() {
            Some(plain) => alloc::borrow::Cow::Borrowed(plain),
            None => {
                // The decoded text is shorter than the raw form: one allocation, never a regrowth.
                let mut text = alloc::string::String::with_capacity(self.raw.len());
                text.extend(self.chars());
                alloc::borrow::Cow::Owned(text)
            }
        }
    }
}

/// The width of a checked `\uXXXX` escape whose first three hex digits are `a b c` and the
/// UTF-8 length of what it stands for: a high surrogate (`D800`–`DBFF`) with its low half is 12
/// bytes for a 4-byte character; below `0080` one byte, below `0800` two, else three.
const fn unicode_escape_size(a: u8, b: u8, c: u8) -> (usize, usize) {
    // `| 0x20` folds `A-F` onto `a-f` and leaves digits alone.
    let (a, b) = (a | 0x20, b | 0x20);
    if a == b'd' && matches!(b, b'8' | b'9' | b'a' | b'b') {
        (12, 4)
    } else if a == b'0' && b == b'0' && c < b'8' {
        (6, 1)
    } else if a == b'0' && b < b'8' {
        (6, 2)
    } else {
        (6, 3)
    }
}

/// Decoding iterator over a [`JsonStr`], created by [`JsonStr::chars`].
#[derive(Debug, Clone)]
pub struct Chars<'a> {
    raw: &'a [u8],
    pos: usize,
}

impl Iterator for Chars<'_> {
    type Item = char;

    fn next(&mut self) -> Option<char> {
        let rest = self.raw.get(self.pos..)?;
        let first = *rest.first()?;
        if first != b'\\' {
            // Decode one UTF-8 scalar from the (checked) text: the lead byte's payload (below its
            // `width` marker bits and the 0 after them), then six bits per continuation byte.
            let width = utf8_width(first);
            let tail = rest.get(1..width)?;
            let lead = u32::from(first) & (0xFF >> width);
            let code = tail
                .iter()
                .fold(lead, |code, &c| code << 6 | (u32::from(c) & 0x3F));
            self.pos += width;
            return char::from_u32(code);
        }
        let (c, width) = unescape(rest)?;
        self.pos += width;
        Some(c)
    }
}

/// Decodes the escape sequence at the start of `rest` (which starts with `\`): the character
/// and the sequence's length in bytes.
fn unescape(rest: &[u8]) -> Option<(char, usize)> {
    let (code, width) = checked_escape_at(rest);
    Some((char::from_u32(code)?, width))
}

/// The code point of the escape sequence at the start of `rest` (which starts with `\`) in a
/// checked string (valid, with the low half after a high surrogate), and the sequence's length
/// in bytes: the hex digits are read without a check. On bytes that were not checked the
/// answer is wrong but nothing panics (0 and the rest's length when `rest` is too short).
#[inline]
fn checked_escape_at(rest: &[u8]) -> (u32, usize) {
    match rest {
        [_, b'u', ..] => {
            let hi = checked_hex4(rest.get(2..).unwrap_or_default());
            if (0xD800..0xDC00).contains(&hi) {
                let lo = checked_hex4(rest.get(8..).unwrap_or_default());
                // (Wrapping: on bytes that were not checked `lo` may be anything.)
                let code = 0x10000u32
                    .wrapping_add((hi - 0xD800) << 10)
                    .wrapping_add(lo.wrapping_sub(0xDC00));
                (code, 12)
            } else {
                (hi, 6)
            }
        }
        [_, e, ..] => {
            let code = match e {
                b'b' => 0x08,
                b'f' => 0x0C,
                b'n' => 0x0A,
                b'r' => 0x0D,
                b't' => 0x09,
                // `"`, `\` and `/` stand for themselves.
                other => u32::from(*other),
            };
            (code, 2)
        }
        _ => (0, rest.len().max(1)),
    }
}

/// Writes the UTF-8 encoding of the scalar value `code` at the start of `buf`; its length, or
/// `None` when `code` is a surrogate or beyond U+10FFFF or `buf` is too short.
#[inline]
fn encode_utf8(code: u32, buf: &mut [u8]) -> Option<usize> {
    // The leading byte's marker, then six bits per continuation byte.
    let cont = |shift: u32| 0x80 | ((code >> shift) & 0x3F) as u8;
    match code {
        0..0x80 => *buf.first_mut()? = code as u8,
        0x80..0x800 => *buf.first_chunk_mut::<2>()? = [0xC0 | (code >> 6) as u8, cont(0)],
        0xD800..0xE000 => return None,
        0x800..0x10000 => {
            *buf.first_chunk_mut::<3>()? = [0xE0 | (code >> 12) as u8, cont(6), cont(0)];
        }
        0x10000..0x110000 => {
            *buf.first_chunk_mut::<4>()? = [0xF0 | (code >> 18) as u8, cont(12), cont(6), cont(0)];
        }
        _ => return None,
    }
    Some(match code {
        0..0x80 => 1,
        0x80..0x800 => 2,
        0x800..0x10000 => 3,
        _ => 4,
    })
}

/// The value of four checked hex digits ([`swar::hex4`]); 0 when fewer than four bytes remain.
#[inline]
fn checked_hex4(b: &[u8]) -> u32 {
    b.first_chunk::<4>().map_or(0, |&digits| swar::hex4(digits))
}

const fn utf8_width(b: u8) -> usize {
    match b {
        0x00..=0x7F => 1,
        0xC0..=0xDF => 2,
        0xE0..=0xEF => 3,
        _ => 4,
    }
}

/// Finds the end of the (checked) value starting at `p`. On unchecked garbage it stops early
/// rather than panicking.
pub(super) fn skip_checked(b: &[u8], p: usize) -> usize {
    match b.get(p) {
        Some(b'"') => skip_string_checked(b, p),
        Some(b'{' | b'[') => {
            let mut depth = 0usize;
            let mut q = p;
            while let Some(&c) = b.get(q) {
                match c {
                    b'"' => {
                        q = skip_string_checked(b, q);
                        continue;
                    }
                    b'{' | b'[' => depth += 1,
                    b'}' | b']' => {
                        depth = depth.saturating_sub(1);
                        if depth == 0 {
                            return q + 1;
                        }
                    }
                    _ => {}
                }
                q += 1;
            }
            q
        }
        Some(_) => {
            let mut q = p;
            while let Some(&c) = b.get(q) {
                if is_ws(c) || matches!(c, b',' | b'}' | b']' | b':') {
                    break;
                }
                q += 1;
            }
            q
        }
        None => p,
    }
}

fn skip_string_checked(b: &[u8], p: usize) -> usize {
    let mut q = p + 1;
    while let Some(&c) = b.get(q) {
        match c {
            b'"' => return q + 1,
            b'\\' => q += 2,
            _ => q += 1,
        }
    }
    q
}

/// Reads a checked number token as a JSON Schema integer, exactly (the rare spellings:
/// fractions, exponents, more than 18 digits).
#[cold]
#[inline(never)]
fn number_as_integer(raw: &[u8]) -> Integer {
    let (neg, rest) = match raw.split_first() {
        Some((b'-', rest)) => (true, rest),
        _ => (false, raw),
    };
    let int_end = rest
        .iter()
        .position(|c| !c.is_ascii_digit())
        .unwrap_or(rest.len());
    let (int_digits, mut rest) = rest.split_at(int_end);
    let mut frac_digits: &[u8] = &[];
    if let Some((b'.', after)) = rest.split_first() {
        let end = after
            .iter()
            .position(|c| !c.is_ascii_digit())
            .unwrap_or(after.len());
        let (f, r) = after.split_at(end);
        frac_digits = f;
        rest = r;
    }
    // Exponent, saturated far beyond anything that could still be an i64.
    let mut exp: i64 = 0;
    if let Some((b'e' | b'E', after)) = rest.split_first() {
        let (eneg, digits) = match after.split_first() {
            Some((b'-', d)) => (true, d),
            Some((b'+', d)) => (false, d),
            _ => (false, after),
        };
        for &d in digits {
            exp = (exp * 10 + i64::from(d - b'0')).min(1 << 40);
        }
        if eneg {
            exp = -exp;
        }
    }
    // Significant digits: int ++ frac, without leading zeros; value = digits * 10^scale.
    let digits = int_digits.iter().chain(frac_digits.iter());
    let mut scale = exp - frac_digits.len() as i64;
    let mut sig: heapless::Vec<u8, 24> = heapless::Vec::new();
    let mut trailing_zeros: i64 = 0;
    let mut overflow = false;
    for &d in digits {
        if sig.is_empty() && d == b'0' {
            continue;
        }
        if d == b'0' {
            trailing_zeros += 1;
            continue;
        }
        // Flush pending zeros: they are inside the significand.
        for _ in 0..trailing_zeros {
            overflow |= sig.push(b'0').is_err();
        }
        trailing_zeros = 0;
        overflow |= sig.push(d).is_err();
    }
    if sig.is_empty() {
        return Integer::Exact(0);
    }
    scale += trailing_zeros;
    if scale < 0 {
        return Integer::Fractional;
    }
    if overflow || sig.len() as i64 + scale > 19 {
        return Integer::OutOfRange;
    }
    // At most 19 digits: below 10^19, inside a u64 (no 128-bit arithmetic on a 32-bit core).
    let mut mag: u64 = 0;
    for &d in &sig {
        mag = mag * 10 + u64::from(d - b'0');
    }
    for _ in 0..scale {
        mag *= 10;
    }
    if neg {
        if mag <= 1u64 << 63 {
            // -(2^63) is i64::MIN (its magnitude as an i64 wraps to itself); everything
            // smaller in magnitude negates safely.
            Integer::Exact((mag as i64).wrapping_neg())
        } else {
            Integer::OutOfRange
        }
    } else if mag <= i64::MAX as u64 {
        Integer::Exact(mag as i64)
    } else {
        Integer::OutOfRange
    }
}

#[cfg(test)]
mod test {
    use super::super::check::{Escapes, check_string_escapes, hex4};
    use super::*;

    /// Every byte value in every position of four digits, against a digit-by-digit reading.
    #[test]
    fn hex4_reads_every_byte_as_a_digit_by_digit_reading_does() {
        let reference = |d: [u8; 4]| -> Option<u16> {
            d.iter().try_fold(0u16, |v, &c| {
                Some(v << 4 | u16::try_from(char::from(c).to_digit(16)?).ok()?)
            })
        };
        let bases: &[[u8; 4]] = if cfg!(miri) {
            &[*b"9fA0"]
        } else {
            &[*b"0000", *b"9fA0", *b"dC0e", *b"FFFF"]
        };
        for lane in 0..4 {
            for &base in bases {
                for c in 0..=255u8 {
                    let mut d = base;
                    d[lane] = c;
                    assert_eq!(hex4(&d), reference(d), "{d:?}");
                    if let Some(v) = reference(d) {
                        assert_eq!(checked_hex4(&d), u32::from(v), "{d:?}");
                    }
                }
            }
        }
    }

    /// The encoder writes what `char::encode_utf8` writes, for every scalar value, and refuses
    /// surrogates and values past U+10FFFF.
    #[test]
    fn utf8_is_encoded_as_core_encodes_it() {
        let step = if cfg!(miri) { 4999 } else { 1 };
        for code in (0..0x11_0000u32)
            .step_by(step)
            .chain([0x7F, 0x80, 0x7FF, 0x800, 0xFFFF, 0x1_0000, 0x10_FFFF])
        {
            let mut buf = [0u8; 4];
            let mut expected = [0u8; 4];
            match char::from_u32(code) {
                Some(c) => {
                    let n = c.encode_utf8(&mut expected).len();
                    assert_eq!(encode_utf8(code, &mut buf), Some(n), "{code:x}");
                    assert_eq!(buf, expected, "{code:x}");
                    assert_eq!(encode_utf8(code, &mut buf[..n - 1]), None, "{code:x}");
                }
                None => assert_eq!(encode_utf8(code, &mut buf), None, "{code:x}"),
            }
        }
        assert_eq!(encode_utf8(0x11_0000, &mut [0u8; 4]), None);
    }

    /// How a generated character is spelled in the raw string.
    fn spell(c: char, how: u8, raw: &mut String) {
        use core::fmt::Write as _;
        match (c, how % 4) {
            ('"', _) => raw.push_str("\\\""),
            ('\\', _) => raw.push_str("\\\\"),
            ('\n', 0) => raw.push_str("\\n"),
            (c, 1) | (c @ '\0'..='\u{1f}', _) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(raw, "\\u{u:04x}");
                }
            }
            (c, 3) => {
                let mut units = [0u16; 2];
                for u in c.encode_utf16(&mut units) {
                    let _ = write!(raw, "\\u{u:04X}");
                }
            }
            (c, _) => raw.push(c),
        }
    }

    proptest::proptest! {
        #![proptest_config(crate::test_support::proptest_config(2000, 4))]
        /// Strings spelled with and without escapes, wherever they fall against the word size:
        /// the check accepts them, and the decoded size and text are those of the characters.
        #[test]
        fn escaped_strings_decode_to_their_characters(
            chars in proptest::collection::vec(
                (proptest::prop_oneof![
                    proptest::char::range(' ', '~'),
                    proptest::sample::select(vec!['"', '\\', '\n', '\u{1}', '\u{7f}', '\u{80}', 'é', '\u{7ff}', '\u{800}', '你', '\u{ffff}', '\u{10000}', '\u{1F600}', '\u{10ffff}']),
                ], proptest::num::u8::ANY),
                0..40,
            )
        ) {
            let mut raw = String::from("\"");
            for &(c, how) in &chars {
                spell(c, how, &mut raw);
            }
            raw.push('"');
            let text: String = chars.iter().map(|&(c, _)| c).collect();
            let v = Json::parse(raw.as_bytes(), DEFAULT_MAX_DEPTH).unwrap();
            let s = v.as_str().unwrap();
            proptest::prop_assert_eq!(s.decoded_size(), (text.chars().count(), text.len()));
            // What the check counts while it checks, as the decoded text has it.
            let (end, counted) = check_string_escapes(raw.as_bytes(), 0).unwrap();
            proptest::prop_assert_eq!(end, raw.len());
            let raw_chars = core::str::from_utf8(s.raw()).unwrap().chars().count();
            proptest::prop_assert_eq!(counted.chars() as usize, raw_chars - text.chars().count());
            proptest::prop_assert_eq!(counted.bytes() as usize, s.raw().len() - text.len());
            proptest::prop_assert_eq!(counted == Escapes::NONE, !s.has_escapes());
            let mut buf = [0u8; 256];
            proptest::prop_assert_eq!(s.decode_into(&mut buf), Some(text.as_str()));
            proptest::prop_assert!(s.chars().eq(text.chars()));
            // Equal to its text, and to nothing longer or shorter.
            proptest::prop_assert!(s.eq_str(&text));
            let longer = text.clone() + "x";
            proptest::prop_assert!(!s.eq_str(&longer));
            let mut shorter = text.clone();
            if shorter.pop().is_some() {
                proptest::prop_assert!(!s.eq_str(&shorter));
            }
        }
    }

    fn ok(s: &str) -> Json<'_> {
        Json::parse(s.as_bytes(), DEFAULT_MAX_DEPTH).unwrap()
    }

    #[test]
    fn parse_first_walks_a_comma_separated_run() {
        let mut rest: &[u8] = br#"{"type":"text","text":"a,}"} , {"b":[1,{"c":2}]},3"#;
        let mut seen = Vec::new();
        while !rest.is_empty() {
            let (v, r) = Json::parse_first(rest, DEFAULT_MAX_DEPTH).unwrap();
            seen.push(v.as_text().to_string());
            rest = r;
        }
        assert_eq!(
            seen,
            [
                r#"{"type":"text","text":"a,}"}"#,
                r#"{"b":[1,{"c":2}]}"#,
                "3"
            ]
        );
        assert_eq!(Json::parse_first(b"  ", 8).unwrap_err(), JsonError::Empty);
        assert!(matches!(
            Json::parse_first(b"{} {}", 8),
            Err(JsonError::Syntax(3))
        ));
        assert!(Json::parse_first(b"{\"a\":", 8).is_err());
        assert!(matches!(
            Json::parse_first(b"[[1]]", 1),
            Err(JsonError::TooDeep(1))
        ));
    }

    #[test]
    fn accepts_valid_documents_and_trims_whitespace() {
        for s in [
            "{}",
            " [ ] ",
            "0",
            "-0",
            "1.5e-3",
            "1E+9",
            "\"\"",
            "\"a\\\"b\\\\c\\/\\b\\f\\n\\r\\t\\u00e9\"",
            "\"\\ud83d\\ude00\"",
            "{\"a\":[1,{\"b\":null}],\"c\":true,\"d\":false}",
            "\"é日本\"",
        ] {
            let v =
                Json::parse(s.as_bytes(), DEFAULT_MAX_DEPTH).unwrap_or_else(|e| panic!("{s}: {e}"));
            assert_eq!(v.raw(), s.trim().as_bytes());
            assert!(
                serde_json::from_str::<serde_json::Value>(s).is_ok(),
                "oracle disagrees on {s}"
            );
        }
    }

    #[test]
    fn rejects_invalid_documents() {
        for s in [
            "",
            " ",
            "{",
            "}",
            "[1,]",
            "{\"a\":1,}",
            "{\"a\" 1}",
            "{a:1}",
            "01",
            "1.",
            ".5",
            "-",
            "1e",
            "+1",
            "tru",
            "nul",
            "\"abc",
            "\"\\x\"",
            "\"\\u12\"",
            "\"\\ud800\"",
            "\"\\udc00\"",
            "\"\\ud800\\u0041\"",
            "\"a\u{1}b\"",
            "[1 2]",
            "{} {}",
            "NaN",
            "Infinity",
            "[1]]",
            "{\"a\":1]",
            "[1}",
            "'a'",
        ] {
            assert!(
                Json::parse(s.as_bytes(), DEFAULT_MAX_DEPTH).is_err(),
                "accepted {s:?}"
            );
            assert!(
                serde_json::from_str::<serde_json::Value>(s).is_err(),
                "oracle accepts {s:?}"
            );
        }
        assert_eq!(Json::parse(b"\xff", 8), Err(JsonError::Utf8(0)));
        assert_eq!(Json::parse(b"  ", 8), Err(JsonError::Empty));
    }

    #[test]
    fn nesting_limit_is_exact_and_iterative() {
        let deep = |n: usize| "[".repeat(n) + &"]".repeat(n);
        assert!(Json::parse(deep(32).as_bytes(), 32).is_ok());
        assert_eq!(
            Json::parse(deep(33).as_bytes(), 32),
            Err(JsonError::TooDeep(32))
        );
        // A very deep message is refused without recursion (no stack overflow).
        assert_eq!(
            Json::parse(deep(100_000).as_bytes(), 128),
            Err(JsonError::TooDeep(128))
        );
        let objs = "{\"a\":".repeat(10) + "1" + &"}".repeat(10);
        assert!(Json::parse(objs.as_bytes(), 10).is_ok());
        assert!(Json::parse(objs.as_bytes(), 9).is_err());
    }

    #[test]
    fn a_member_is_found_once_repeated_or_absent() {
        let v = ok(r#"{"a":1,"b":2,"\u0062":3,"c":{"a":4}}"#);
        assert_eq!(v.member("a"), Found::Once(ok("1")));
        // Compared decoded: `"\u0062"` is a second `b`.
        assert_eq!(v.member("b"), Found::Repeated);
        assert_eq!(v.member("d"), Found::Absent);
        // Only this object's own members; not an object: absent.
        assert_eq!(ok(r#"{"c":{"a":4}}"#).member("a"), Found::Absent);
        assert_eq!(ok(r#"[{"a":1}]"#).member("a"), Found::Absent);
        assert_eq!(ok(r#""a""#).member("a"), Found::Absent);
    }

    #[test]
    fn members_and_elements_walk_checked_values() {
        let v = ok(r#" { "a" : 1 , "b\"" : { "x" : [ 1 , "]" ] } , "a" : "}" } "#);
        let m: Vec<_> = v
            .members()
            .unwrap()
            .map(|(k, v)| (k.chars().collect::<String>(), v.as_text()))
            .collect();
        assert_eq!(
            m,
            [
                ("a".into(), "1"),
                ("b\"".into(), r#"{ "x" : [ 1 , "]" ] }"#),
                ("a".into(), "\"}\"")
            ]
        );
        let a = ok(r#"[ 1, [2, 3], "x,]", {} ]"#);
        let e: Vec<_> = a.elements().unwrap().map(|v| v.as_text()).collect();
        assert_eq!(e, ["1", "[2, 3]", "\"x,]\"", "{}"]);
        assert_eq!(ok("{}").members().unwrap().count(), 0);
        assert_eq!(ok("[]").elements().unwrap().count(), 0);
        assert!(ok("1").members().is_none());
    }

    #[test]
    fn views_over_unchecked_bytes_do_not_panic() {
        for raw in [
            &b"{"[..],
            b"{\"a",
            b"{\"a\"",
            b"{\"a\":",
            b"[",
            b"[1,",
            b"\"\\",
            b"\"\\u12",
        ] {
            let v = Json::from_checked(raw);
            let _ = v.members().map(Iterator::count);
            let _ = v.elements().map(Iterator::count);
            let _ = v.as_str().map(|s| s.chars().count());
        }
    }

    #[test]
    fn strings_decode_and_compare() {
        let s = ok(r#""vol\u0075me""#).as_str().unwrap();
        assert!(s.eq_str("volume"));
        assert!(!s.eq_str("volumes"));
        assert_eq!(s.as_plain(), None);
        let e = ok(r#""\ud83d\ude00é\n""#).as_str().unwrap();
        assert_eq!(e.chars().collect::<String>(), "😀é\n");
        assert_eq!(e.char_count(), 3);
        assert_eq!(e.decoded_size(), (3, 7));
        let mixed = ok(r#""ab\u00e9cd\"ü\\""#).as_str().unwrap();
        assert_eq!(mixed.decoded_size(), (8, 10));
        let mut buf = [0u8; 10];
        assert_eq!(mixed.decode_into(&mut buf), Some("abécd\"ü\\"));
        assert_eq!(mixed.decode_into(&mut [0u8; 9]), None);
        let mut buf = [0u8; 16];
        assert_eq!(e.decode_into(&mut buf), Some("😀é\n"));
        assert_eq!(e.decode_into(&mut [0u8; 3]), None);
        assert_eq!(ok("\"plain\"").as_str().unwrap().as_plain(), Some("plain"));
    }

    #[test]
    fn comparison_decodes_escapes_and_never_matches_the_raw_form() {
        fn s(src: &str) -> JsonStr<'_> {
            ok(src).as_str().unwrap()
        }
        // The raw form `a\nb` (backslash, n) is the same bytes as the Rust string "a\\nb", but
        // decodes to a newline: not equal.
        assert!(!s(r#""a\nb""#).eq_str("a\\nb"));
        assert!(s(r#""a\nb""#).eq_str("a\nb"));
        assert!(s(r#""\\""#).eq_str("\\"));
        assert!(!s(r#""\\""#).eq_str("\\\\"));
        assert!(s(r#""\u00e9t\u00e9""#).eq_str("été"));
        assert!(s(r#""\ud83d\ude00""#).eq_str("😀"));
        assert!(!s(r#""\ud83d\ude00""#).eq_str("😀x"));
        assert!(s(r#""été""#).eq_str("été"));
        assert!(!s(r#""été""#).eq_str("ete"));
        assert!(s(r#""""#).eq_str(""));
        assert!(!s(r#""""#).eq_str("x"));
        assert!(!s(r#""x""#).eq_str(""));
        // A decoded copy is allocated at its final size.
        assert_eq!(s(r#""\u4f60\u597d""#).chars().collect::<String>(), "你好");
    }

    #[test]
    fn integers_follow_json_schema() {
        let i = |s: &str| ok(s).as_integer().unwrap();
        assert_eq!(i("50"), Integer::Exact(50));
        assert_eq!(i("50.0"), Integer::Exact(50));
        assert_eq!(i("5e1"), Integer::Exact(50));
        assert_eq!(i("5000e-2"), Integer::Exact(50));
        assert_eq!(i("0.5e2"), Integer::Exact(50));
        assert_eq!(i("-0"), Integer::Exact(0));
        assert_eq!(i("0e999999999999999999999"), Integer::Exact(0));
        assert_eq!(i("50.5"), Integer::Fractional);
        assert_eq!(i("1e-999999999999999999"), Integer::Fractional);
        assert_eq!(i("9223372036854775807"), Integer::Exact(i64::MAX));
        assert_eq!(i("-9223372036854775808"), Integer::Exact(i64::MIN));
        assert_eq!(i("9223372036854775808"), Integer::OutOfRange);
        assert_eq!(i("-9223372036854775809"), Integer::OutOfRange);
        assert_eq!(i("1e19"), Integer::OutOfRange);
        assert_eq!(i("1e400"), Integer::OutOfRange);
        assert_eq!(
            i("100000000000000000000000000000000e-20"),
            Integer::Exact(1_000_000_000_000)
        );
        assert_eq!(i("0.000000000000000000000000000001e30"), Integer::Exact(1));
        assert_eq!(ok("\"5\"").as_integer(), None);
    }

    #[test]
    fn floats_are_finite_or_refused() {
        // `as_f64` exists with feature `float` only.
        #[cfg(feature = "float")]
        {
            assert_eq!(ok("0.25").as_f64(), Some(0.25));
            assert_eq!(ok("-1e3").as_f64(), Some(-1000.0));
            assert_eq!(ok("1e400").as_f64(), None);
        }
        assert!(ok("50").is_plain_integer());
        assert!(ok("-7").is_plain_integer());
        assert!(!ok("1.0").is_plain_integer());
        assert!(!ok("1e2").is_plain_integer());
    }
}
