//! The checking pass over untrusted bytes: the JSON grammar (RFC 8259), UTF-8, string escapes
//! with their surrogate pairs, the number grammar and the nesting limit, checked iteratively
//! (a deeply nested text costs no stack; it is refused past the limit).
//!
//! This is the bottom of the wire layer: it knows offsets, not views. [`Json::parse`] checks a
//! text with [`check_value`] alone; [`Frame::parse`] checks a message with the same functions
//! while it records the members dispatch needs. Neither is a dependency of this module: the
//! modules of `wire` depend one way, `swar` ← `check` ← `json` ← `frame` ← `request` (the layer
//! test in `tests/layers.rs` holds them to it).
//!
//! [`Json::parse`]: super::Json::parse
//! [`Frame::parse`]: super::Frame::parse

use super::swar::{self, WORD};

/// The deepest nesting the checker can track (its container stack is a 128-bit mask).
pub const MAX_DEPTH_LIMIT: u8 = 128;

/// Why a byte string is not acceptable JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum JsonError {
    /// The text is not valid UTF-8.
    #[error("invalid UTF-8 at byte {0}")]
    Utf8(usize),
    /// The text breaks the JSON grammar at this byte offset.
    #[error("invalid JSON at byte {0}")]
    Syntax(usize),
    /// The text nests arrays/objects deeper than the limit.
    #[error("JSON nested deeper than {0} levels")]
    TooDeep(u8),
    /// The text is empty or only whitespace.
    #[error("empty message")]
    Empty,
}

/// What the escape sequences of a string spell beyond the characters they stand for: how many
/// more characters and UTF-8 bytes its raw form has than its decoded text, as the checking pass
/// counts them (in one word: characters in the high half, bytes in the low). [`NONE`](Self::NONE)
/// for a string without escapes (every escape spells at least one character more).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Escapes(u64);

impl Escapes {
    /// No escape sequence.
    pub const NONE: Escapes = Escapes(0);
    /// Escapes in a string too long to count them in 32 bits (count them again).
    pub const UNCOUNTED: Escapes = Escapes(u64::MAX);

    /// Counts an escape `width` bytes wide standing for `len` bytes of UTF-8 (one character).
    #[inline]
    const fn add(&mut self, width: u64, len: u64) {
        // Neither half carries into the other below 2^32 bytes of string (the caller checks).
        self.0 = self.0.wrapping_add((width - 1) << 32 | (width - len));
    }

    /// The escapes of a string whose raw form has `chars` characters and `bytes` bytes more
    /// than its decoded text.
    pub const fn new(chars: u32, bytes: u32) -> Self {
        Escapes((chars as u64) << 32 | bytes as u64)
    }

    /// The decoded length in UTF-8 bytes of the checked string content `raw` whose escapes
    /// these are.
    #[cfg(any(test, feature = "strings"))]
    pub fn decoded_bytes(self, raw: &[u8]) -> usize {
        raw.len()
            .saturating_sub(usize::try_from(self.bytes()).unwrap_or(usize::MAX))
    }

    /// The decoded length in characters of the checked string content `raw` whose escapes
    /// these are.
    #[cfg(any(test, feature = "strings"))]
    pub fn decoded_chars(self, raw: &[u8]) -> usize {
        swar::char_starts(raw).saturating_sub(usize::try_from(self.chars()).unwrap_or(usize::MAX))
    }

    /// Raw characters beyond the decoded ones.
    pub const fn chars(self) -> u64 {
        self.0 >> 32
    }

    /// Raw bytes beyond the decoded ones.
    pub const fn bytes(self) -> u64 {
        self.0 & 0xFFFF_FFFF
    }
}

/// `true` for JSON whitespace.
pub(super) const fn is_ws(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | b'\r')
}

#[inline]
pub(super) fn skip_ws(b: &[u8], p: usize) -> usize {
    // Most messages have no whitespace between tokens: one comparison (every whitespace byte is
    // at most a space).
    match b.get(p) {
        Some(&c) if c > b' ' => p,
        _ => skip_ws_run(b, p),
    }
}

fn skip_ws_run(b: &[u8], mut p: usize) -> usize {
    while let Some(&c) = b.get(p) {
        if !is_ws(c) {
            break;
        }
        p += 1;
    }
    p
}

/// Checks that `text` is UTF-8 (ASCII, the common case, is told a word at a time).
pub(super) fn check_utf8(text: &[u8]) -> Result<(), JsonError> {
    if swar::is_ascii(text) {
        return Ok(());
    }
    match core::str::from_utf8(text) {
        Ok(_) => Ok(()),
        Err(e) => Err(JsonError::Utf8(e.valid_up_to())),
    }
}

/// Checks the value at `p` (not whitespace) inside `depth` open containers, recording nothing;
/// returns the offset just past it. One iterative loop: `objects` is a shift register of the
/// containers it opened, bit 0 set when the innermost is an object (128 bits hold
/// [`MAX_DEPTH_LIMIT`] levels).
pub(super) fn check_value(
    b: &[u8],
    mut p: usize,
    depth: u8,
    max_depth: u8,
) -> Result<usize, JsonError> {
    let base = depth;
    let mut depth = depth;
    let mut objects: u128 = 0;
    'value: loop {
        // A value is expected at `p`.
        match b.get(p) {
            Some(&open @ (b'{' | b'[')) => {
                if depth >= max_depth {
                    return Err(JsonError::TooDeep(max_depth));
                }
                depth += 1;
                objects = (objects << 1) | u128::from(open == b'{');
                p = skip_ws(b, p + 1);
                if open == b'{' {
                    if b.get(p) != Some(&b'}') {
                        p = check_key(b, p)?;
                        continue 'value;
                    }
                } else if b.get(p) != Some(&b']') {
                    continue 'value;
                }
                // An empty container: the loop below closes it at `p`.
            }
            Some(b'"') => p = check_string_escapes(b, p)?.0,
            Some(b'-' | b'0'..=b'9') => p = check_number(b, p)?,
            Some(b't') => p = check_literal(b, p, b"true")?,
            Some(b'f') => p = check_literal(b, p, b"false")?,
            Some(b'n') => p = check_literal(b, p, b"null")?,
            _ => return Err(JsonError::Syntax(p)),
        }
        // A value ended at `p` (or an empty container is about to close there): close
        // containers until one continues.
        loop {
            if depth == base {
                return Ok(p);
            }
            let in_object = objects & 1 != 0;
            p = skip_ws(b, p);
            match b.get(p) {
                Some(b',') => {
                    p = skip_ws(b, p + 1);
                    if in_object {
                        p = check_key(b, p)?;
                    }
                    continue 'value;
                }
                Some(b'}') if in_object => {}
                Some(b']') if !in_object => {}
                _ => return Err(JsonError::Syntax(p)),
            }
            p += 1;
            depth -= 1;
            objects >>= 1;
        }
    }
}

/// Checks `"key" :` at `p` (after `{` or `,`) and returns the offset of the value after the
/// colon (whitespace skipped).
#[inline]
fn check_key(b: &[u8], p: usize) -> Result<usize, JsonError> {
    if b.get(p) != Some(&b'"') {
        return Err(JsonError::Syntax(p));
    }
    let colon = skip_ws(b, check_string_escapes(b, p)?.0);
    if b.get(colon) != Some(&b':') {
        return Err(JsonError::Syntax(colon));
    }
    Ok(skip_ws(b, colon + 1))
}

pub(super) fn check_literal(b: &[u8], p: usize, lit: &[u8]) -> Result<usize, JsonError> {
    if b.get(p..p + lit.len()) == Some(lit) {
        Ok(p + lit.len())
    } else {
        Err(JsonError::Syntax(p))
    }
}

/// The offset after the run of digits at `p` (`p` itself when there is none).
#[inline]
pub(super) fn digits_end(b: &[u8], mut p: usize) -> usize {
    while b.get(p).is_some_and(u8::is_ascii_digit) {
        p += 1;
    }
    p
}

fn check_digits(b: &[u8], p: usize) -> Result<usize, JsonError> {
    let end = digits_end(b, p);
    if end == p {
        Err(JsonError::Syntax(p))
    } else {
        Ok(end)
    }
}

pub(super) fn check_number(b: &[u8], mut p: usize) -> Result<usize, JsonError> {
    if b.get(p) == Some(&b'-') {
        p += 1;
    }
    match b.get(p) {
        Some(b'0') => p += 1,
        Some(b'1'..=b'9') => p = digits_end(b, p + 1),
        _ => return Err(JsonError::Syntax(p)),
    }
    // An integer (the common case) ends here.
    match b.get(p) {
        Some(b'.' | b'e' | b'E') => number_rest(b, p),
        _ => Ok(p),
    }
}

/// The fraction and exponent of a number from `p` (on `.`, `e` or `E`).
fn number_rest(b: &[u8], mut p: usize) -> Result<usize, JsonError> {
    if b.get(p) == Some(&b'.') {
        p = check_digits(b, p + 1)?;
    }
    if matches!(b.get(p), Some(b'e' | b'E')) {
        p += 1;
        if matches!(b.get(p), Some(b'+' | b'-')) {
            p += 1;
        }
        p = check_digits(b, p)?;
    }
    Ok(p)
}

/// [`check_string`], also saying what its escape sequences spell beyond the characters they
/// stand for ([`Escapes::NONE`]: none), and checking that its text is UTF-8. Runs of ordinary
/// ASCII bytes are skipped a word at a time; the syntax errors and their offsets are those of a
/// byte-by-byte scan. (Text that is not UTF-8 is an error here, of any kind: the caller that
/// reports [`JsonError::Utf8`] finds its offset in the whole text.)
#[inline]
pub(super) fn check_string_escapes(b: &[u8], p: usize) -> Result<(usize, Escapes), JsonError> {
    // The common case, inline: a run of ordinary ASCII bytes up to the closing quote, a word at
    // a time, then byte by byte near the end of the input.
    let mut q = p + 1;
    loop {
        if let Some(chunk) = b.get(q..q + WORD) {
            let mut word = [0u8; WORD];
            word.copy_from_slice(chunk);
            let w = swar::load(word);
            // Also the bytes above ASCII, which `string_rest` checks as UTF-8.
            let found = swar::specials(w) | swar::non_ascii(w);
            if found == 0 {
                q += WORD;
                continue;
            }
            q += swar::first_flagged(found);
        } else {
            while b
                .get(q)
                .is_some_and(|&c| c != b'"' && c != b'\\' && (0x20..0x80).contains(&c))
            {
                q += 1;
            }
        }
        break;
    }
    if b.get(q) == Some(&b'"') {
        return Ok((q + 1, Escapes::NONE));
    }
    string_rest(b, p, q)
}

/// The rest of the string at `p` from `q` (escapes, control characters, the last bytes of the
/// input), byte by byte where it must be, counting what the escapes spell beyond their
/// characters.
#[inline(never)]
fn string_rest(b: &[u8], p: usize, mut q: usize) -> Result<(usize, Escapes), JsonError> {
    let mut escapes = Escapes::NONE;
    loop {
        match b.get(q) {
            None => return Err(JsonError::Syntax(q)),
            Some(b'"') if q - p > u32::MAX as usize => return Ok((q + 1, Escapes::UNCOUNTED)),
            Some(b'"') => return Ok((q + 1, escapes)),
            Some(b'\\') => match b.get(q + 1) {
                Some(b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't') => {
                    escapes.add(2, 1);
                    q += 2;
                }
                Some(b'u') => {
                    let unit = b
                        .get(q + 2..q + 6)
                        .and_then(hex4)
                        .ok_or(JsonError::Syntax(q))?;
                    q += 6;
                    match unit {
                        0xD800..=0xDBFF => {
                            // A high surrogate must be followed by an escaped low surrogate.
                            let low = match b.get(q..q + 2) {
                                Some(br"\u") => b.get(q + 2..q + 6).and_then(hex4),
                                _ => None,
                            };
                            match low {
                                Some(0xDC00..=0xDFFF) => q += 6,
                                _ => return Err(JsonError::Syntax(q)),
                            }
                            escapes.add(12, 4);
                        }
                        0xDC00..=0xDFFF => return Err(JsonError::Syntax(q - 6)),
                        0..0x80 => escapes.add(6, 1),
                        0x80..0x800 => escapes.add(6, 2),
                        _ => escapes.add(6, 3),
                    }
                }
                _ => return Err(JsonError::Syntax(q)),
            },
            Some(&c) if c < 0x20 => return Err(JsonError::Syntax(q)),
            Some(&c) if c >= 0x80 => {
                // Text beyond ASCII, up to the next `"`, `\\` or control character (none of
                // which can be inside a character's UTF-8): checked as UTF-8 in one piece.
                let run = b.get(q..).unwrap_or_default();
                let len = run
                    .iter()
                    .position(|&c| c == b'"' || c == b'\\' || c < 0x20)
                    .unwrap_or(run.len());
                if core::str::from_utf8(run.get(..len).unwrap_or_default()).is_err() {
                    return Err(JsonError::Utf8(q));
                }
                q += len;
            }
            Some(_) => q += 1,
        }
    }
}

/// Four hex digits, any case; `None` when one is not.
#[inline]
pub(super) fn hex4(b: &[u8]) -> Option<u16> {
    const fn digit(c: u8) -> Option<u16> {
        // `c | 0x20` folds `A-F` onto `a-f` (and leaves digits alone).
        let lower = c | 0x20;
        match c {
            b'0'..=b'9' => Some((c - b'0') as u16),
            _ if matches!(lower, b'a'..=b'f') => Some((lower - b'a' + 10) as u16),
            _ => None,
        }
    }
    let &[a, b, c, d] = b.first_chunk::<4>()?;
    Some((digit(a)? << 12) | (digit(b)? << 8) | (digit(c)? << 4) | digit(d)?)
}

#[cfg(test)]
pub(crate) use reference::reference_check_value;

/// The checker before the index: the reference the checking pass is tested against.
#[cfg(test)]
mod reference {
    use super::*;

    /// The checker before the index (a loop of its own): the reference the checking pass is tested
    /// against (errors, offsets, nesting limit).
    pub(crate) fn reference_check_value(
        b: &[u8],
        start: usize,
        max_depth: u8,
    ) -> Result<usize, JsonError> {
        // Bit `d` of `objects` is set when the container at depth `d` (1-based) is an object.
        let mut objects: u128 = 0;
        let mut depth: u8 = 0;
        let mut p = start;
        'value: loop {
            // A value is expected at `p`.
            p = skip_ws(b, p);
            match b.get(p) {
                Some(&open @ (b'{' | b'[')) => {
                    if depth >= max_depth {
                        return Err(JsonError::TooDeep(max_depth));
                    }
                    depth += 1;
                    let bit = 1u128 << (depth - 1);
                    p = skip_ws(b, p + 1);
                    if open == b'{' {
                        objects |= bit;
                        if b.get(p) == Some(&b'}') {
                            p += 1;
                            depth -= 1;
                        } else {
                            p = reference_check_key(b, p)?;
                            continue 'value;
                        }
                    } else {
                        objects &= !bit;
                        if b.get(p) == Some(&b']') {
                            p += 1;
                            depth -= 1;
                        } else {
                            continue 'value;
                        }
                    }
                }
                Some(b'"') => p = check_string(b, p)?,
                Some(b't') => p = check_literal(b, p, b"true")?,
                Some(b'f') => p = check_literal(b, p, b"false")?,
                Some(b'n') => p = check_literal(b, p, b"null")?,
                Some(b'-' | b'0'..=b'9') => p = check_number(b, p)?,
                _ => return Err(JsonError::Syntax(p)),
            }
            // A value ended at `p`; close containers until one continues.
            loop {
                if depth == 0 {
                    return Ok(p);
                }
                let in_object = objects & (1u128 << (depth - 1)) != 0;
                p = skip_ws(b, p);
                match b.get(p) {
                    Some(b',') => {
                        p = skip_ws(b, p + 1);
                        if in_object {
                            p = reference_check_key(b, p)?;
                        }
                        continue 'value;
                    }
                    Some(b'}') if in_object => {
                        p += 1;
                        depth -= 1;
                    }
                    Some(b']') if !in_object => {
                        p += 1;
                        depth -= 1;
                    }
                    _ => return Err(JsonError::Syntax(p)),
                }
            }
        }
    }

    /// Checks `"key" :` at `p`, returning the offset after the colon.
    fn reference_check_key(b: &[u8], p: usize) -> Result<usize, JsonError> {
        if b.get(p) != Some(&b'"') {
            return Err(JsonError::Syntax(p));
        }
        let p = skip_ws(b, check_string(b, p)?);
        if b.get(p) != Some(&b':') {
            return Err(JsonError::Syntax(p));
        }
        Ok(p + 1)
    }

    /// Checks a string token at `p` (on its opening quote); returns the offset after the closing one.
    fn check_string(b: &[u8], p: usize) -> Result<usize, JsonError> {
        check_string_escapes(b, p).map(|(end, _)| end)
    }
}
