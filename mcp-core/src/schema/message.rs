//! How an argument error's message is written: the sink it goes to (text, or straight into a
//! JSON string of the response), its constant pieces, and the phrase of what a parameter expects,
//! which each keyword words for itself ([`Expectation`]).

use core::fmt;

use super::ParamType;
use crate::wire::json::{Json, JsonStr, Kind};
use crate::wire::writer::Writer;

/// A constant piece of a message, spelled as inside a JSON string (only `"` and `\` are
/// escaped: [`piece!`]); read as text, it is unescaped as it is written.
pub(crate) struct Piece(pub(crate) &'static [u8]);

/// The length of `text` spelled inside a JSON string (message constants: `"` and `\` escaped;
/// a control character fails the build).
pub(crate) const fn json_len(text: &str) -> usize {
    let (mut rest, mut len) = (text.as_bytes(), 0);
    while let [c, tail @ ..] = rest {
        assert!(*c >= 0x20, "a control character in a message constant");
        len += if matches!(*c, b'"' | b'\\') { 2 } else { 1 };
        rest = tail;
    }
    len
}

/// `text` spelled inside a JSON string, [`json_len`] bytes.
pub(crate) const fn json_spelling<const N: usize>(text: &str) -> [u8; N] {
    let mut out = [0u8; N];
    let (mut src, mut dst): (&[u8], &mut [u8]) = (text.as_bytes(), &mut out);
    while let [c, rest @ ..] = src {
        let [d, tail @ ..] = dst else { break };
        if matches!(*c, b'"' | b'\\') {
            *d = b'\\';
            let [d, tail @ ..] = tail else { break };
            *d = *c;
            dst = tail;
        } else {
            *d = *c;
            dst = tail;
        }
        src = rest;
    }
    out
}

/// A [`Piece`] from a string literal, spelled for JSON when the crate is built (one copy in
/// flash).
macro_rules! piece {
    ($text:literal) => {{
        const JSON: [u8; $crate::schema::message::json_len($text)] =
            $crate::schema::message::json_spelling($text);
        $crate::schema::message::Piece(&JSON)
    }};
}
pub(crate) use piece;

/// Where an [`ArgError`](super::ArgError)'s message goes: read as text ([`Read`]), or into a
/// JSON string (the engine's [`Writer`]), where constant pieces need no escaping and no scan.
///
/// The message code is generic over its sink, not written against `dyn Sink`: the engine's
/// instance writes straight into the output buffer (its pieces inlined, no indirect call per
/// piece), and the text instance is linked only into a program that displays an `ArgError`.
pub(crate) trait Sink {
    /// A constant piece.
    fn piece(&mut self, piece: &Piece) -> fmt::Result;
    /// Text that reads the same inside a JSON string (registered names, number tokens).
    fn plain(&mut self, text: &str) -> fmt::Result;
    /// Any text.
    fn text(&mut self, text: &str) -> fmt::Result;
    /// A checked number, `true`, `false` or `null` token, or the start of one: ASCII that reads
    /// the same inside a JSON string (bytes: the writer does not look at them again).
    fn token(&mut self, token: &[u8]) -> fmt::Result;
    /// A decimal integer.
    fn int(&mut self, v: i64) -> fmt::Result;
    /// The first `max_chars` characters of a string sent by the peer, decoded; `true` when it
    /// has more.
    fn decoded(&mut self, s: JsonStr<'_>, max_chars: usize) -> Result<bool, fmt::Error>;
}

/// A message read as text.
pub(crate) struct Read<'f>(pub(crate) &'f mut dyn fmt::Write);

impl Sink for Read<'_> {
    fn piece(&mut self, piece: &Piece) -> fmt::Result {
        // Each `\` escapes the one byte after it; the runs between are UTF-8 text.
        let mut rest = piece.0;
        while !rest.is_empty() {
            let run = rest.iter().position(|&c| c == b'\\').unwrap_or(rest.len());
            let (text, tail) = rest.split_at(run);
            self.0
                .write_str(core::str::from_utf8(text).map_err(|_| fmt::Error)?)?;
            let (escaped, tail) = tail.split_at(tail.len().min(2));
            if let Some(&c) = escaped.get(1) {
                self.0.write_char(char::from(c))?;
            }
            rest = tail;
        }
        Ok(())
    }
    fn plain(&mut self, text: &str) -> fmt::Result {
        self.0.write_str(text)
    }
    fn text(&mut self, text: &str) -> fmt::Result {
        self.0.write_str(text)
    }
    fn token(&mut self, token: &[u8]) -> fmt::Result {
        self.0
            .write_str(core::str::from_utf8(token).map_err(|_| fmt::Error)?)
    }
    fn int(&mut self, v: i64) -> fmt::Result {
        self.0
            .write_str(crate::wire::writer::Decimal::signed(v).as_str())
    }
    fn decoded(&mut self, s: JsonStr<'_>, max_chars: usize) -> Result<bool, fmt::Error> {
        let mut chars = s.chars();
        chars
            .by_ref()
            .take(max_chars)
            .try_for_each(|c| self.0.write_char(c))?;
        Ok(chars.next().is_some())
    }
}

impl Sink for Writer<'_> {
    fn piece(&mut self, piece: &Piece) -> fmt::Result {
        // (The engine writes messages in string mode: the spelling is the text's there.)
        Writer::plain(self, piece.0);
        Ok(())
    }
    fn plain(&mut self, text: &str) -> fmt::Result {
        Writer::plain(self, text.as_bytes());
        Ok(())
    }
    fn text(&mut self, text: &str) -> fmt::Result {
        Writer::text(self, text);
        Ok(())
    }
    fn token(&mut self, token: &[u8]) -> fmt::Result {
        Writer::plain(self, token);
        Ok(())
    }
    fn int(&mut self, v: i64) -> fmt::Result {
        Writer::int(self, v);
        Ok(())
    }
    fn decoded(&mut self, s: JsonStr<'_>, max_chars: usize) -> Result<bool, fmt::Error> {
        Ok(Writer::decoded(self, s, max_chars))
    }
}

/// ", got <token>", the token cut to 40 bytes at a character boundary.
/// A string is shown decoded (a `\u6df1` escape becomes the character it stands for, so that a
/// text-to-speech reader says the word, not the code), cut to 40 characters.
pub(crate) fn got<S: Sink>(f: &mut S, v: Option<Json<'_>>) -> fmt::Result {
    let Some(v) = v else { return Ok(()) };
    if let Some(s) = v.as_str() {
        f.piece(&piece!(", got \""))?;
        let cut = f.decoded(s, 40)?;
        return f.piece(&if cut { piece!("…\"") } else { piece!("\"") });
    }
    f.plain(", got ")?;
    let raw = v.raw();
    // Numbers and literals are ASCII and read the same inside a JSON string; arrays and objects
    // are cut at a character boundary and escaped.
    let end = match v.kind() {
        Kind::Number | Kind::Bool | Kind::Null => {
            let end = raw.len().min(40);
            f.token(raw.get(..end).unwrap_or_default())?;
            end
        }
        _ => {
            let text = v.as_text();
            let mut end = text.len().min(40);
            while !text.is_char_boundary(end) {
                end -= 1;
            }
            f.text(text.get(..end).unwrap_or_default())?;
            end
        }
    };
    if end < raw.len() {
        f.plain("…")?;
    }
    Ok(())
}

/// The phrase of what a parameter expects ("an integer from 0 to 100", "one of \"light\",
/// \"dark\"", "a string of at most 8 characters"), as its keywords word it in turn: the type's
/// noun, then each keyword's qualifier ([`qualify`](Self::qualify)). A keyword that names every
/// value it admits says the whole phrase alone (`Keyword::describe_whole`).
pub(crate) struct Expectation<'f, S> {
    f: &'f mut S,
    ty: ParamType,
    /// Something was said (the noun, at least).
    said: bool,
}

impl<'f, S: Sink> Expectation<'f, S> {
    /// An expectation of a parameter of type `ty`, nothing said yet.
    pub(crate) fn new(f: &'f mut S, ty: ParamType) -> Self {
        Expectation { f, ty, said: false }
    }

    /// A qualifier `then` (" of at most ", written plain) after what was said, or after the
    /// type's noun when nothing was; `lead`, when given, is the noun and `then` as one constant
    /// (the usual form, one piece instead of two). The sink, to go on.
    #[inline]
    pub(crate) fn qualify(&mut self, lead: Option<&str>, then: &str) -> Result<&mut S, fmt::Error> {
        if !self.said {
            self.said = true;
            if let Some(lead) = lead {
                self.f.plain(lead)?;
                return Ok(self.f);
            }
            self.f.plain(self.ty.noun())?;
        }
        self.f.plain(then)?;
        Ok(self.f)
    }

    /// Bounds as keywords word them: "from A to B" (`from`: the lead with the noun, and alone),
    /// "of at least A", "of at most B", then `unit`; nothing when neither is given.
    pub(crate) fn bounds(
        &mut self,
        [from_lead, from]: [&str; 2],
        min: Option<i64>,
        max: Option<i64>,
        unit: &str,
    ) -> fmt::Result {
        let f = match (min, max) {
            (Some(a), Some(b)) => {
                let f = self.qualify(Some(from_lead), from)?;
                f.int(a)?;
                f.plain(" to ")?;
                f.int(b)?;
                f
            }
            (Some(a), None) => {
                let f = self.qualify(None, " of at least ")?;
                f.int(a)?;
                f
            }
            (None, Some(b)) => {
                let f = self.qualify(None, " of at most ")?;
                f.int(b)?;
                f
            }
            (None, None) => return Ok(()),
        };
        if unit.is_empty() {
            return Ok(());
        }
        f.plain(unit)
    }

    /// Ends the phrase: the type's noun, when no keyword said anything.
    pub(crate) fn finish(self) -> fmt::Result {
        if self.said {
            return Ok(());
        }
        self.f.plain(self.ty.noun())
    }
}
