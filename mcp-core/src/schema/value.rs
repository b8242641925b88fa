//! What the keywords check and how a check fails: a value of a parameter's type ([`Value`], a
//! string as [`Text`]) and why it is refused ([`ArgErrorKind`]). Below the keywords and the
//! validator, which both speak of them.

#[cfg(feature = "strings")]
use crate::wire::check::Escapes;
#[cfg(feature = "strings")]
use crate::wire::json::JsonStr;

/// What is wrong with the arguments.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ArgErrorKind {
    /// `arguments` is not a JSON object.
    NotAnObject,
    /// A key the tool does not declare.
    Unknown,
    /// A key that appears twice.
    Duplicate,
    /// A required argument is absent.
    Missing,
    /// The value has the wrong JSON type (no coercion: `"50"` is not an integer).
    WrongType,
    /// An integer parameter got a number with a fractional part.
    NotAnInteger,
    /// The value is outside the allowed range (including beyond `i64` / `f64`).
    OutOfRange,
    /// A string that is not one of the allowed choices.
    NotAChoice,
    /// A string shorter or longer than allowed.
    BadLength,
    /// An integer that is not a multiple of the parameter's step.
    NotAMultiple,
}

/// A value of the parameter's type, as the keywords check it: read from the peer's JSON by the
/// `type` keyword (`keyword::ty::read`), or a spec's own default or choice.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Value<'a> {
    /// A boolean.
    Bool(bool),
    /// An integer (exact).
    Int(i64),
    /// A finite number (feature `float`).
    #[cfg(feature = "float")]
    Number(f64),
    /// A string (feature `strings`).
    #[cfg(feature = "strings")]
    Str(Text<'a>),
    /// Only the lifetime, without the feature `strings` (never built).
    #[cfg(not(feature = "strings"))]
    #[allow(dead_code, reason = "never built: it only carries the lifetime")]
    Never(core::marker::PhantomData<&'a ()>, core::convert::Infallible),
}

/// A string value: the content of a checked JSON string token, or a spec's own text.
#[cfg(feature = "strings")]
#[derive(Debug, Clone, Copy)]
pub(crate) struct Text<'a> {
    raw: &'a [u8],
    /// What its escapes spell beyond its characters ([`Escapes::NONE`]: `raw` is the text), as
    /// the checking pass counted them (always known for a spec's text);
    /// [`Escapes::UNCOUNTED`]: count them by walking.
    escapes: Escapes,
}

#[cfg(feature = "strings")]
impl<'a> Text<'a> {
    /// A string the peer sent, with what its escapes spell when the checking pass counted them.
    #[inline]
    pub(crate) fn sent(s: JsonStr<'a>, escapes: Option<Escapes>) -> Self {
        Text {
            raw: s.raw(),
            escapes: escapes.unwrap_or(Escapes::UNCOUNTED),
        }
    }

    /// The string's content as sent (escape sequences not decoded).
    pub(crate) const fn raw(&self) -> &'a [u8] {
        self.raw
    }

    /// A spec's own text (a default, a choice).
    pub(crate) const fn spec(s: &'a str) -> Self {
        Text {
            raw: s.as_bytes(),
            escapes: Escapes::NONE,
        }
    }

    /// `true` when the text equals `s`.
    #[inline]
    pub(crate) fn eq(&self, s: &str) -> bool {
        if self.escapes == Escapes::NONE {
            self.raw == s.as_bytes()
        } else {
            JsonStr::from_checked(self.raw).eq_str(s)
        }
    }

    /// `true` when the text has from `min` to `max` characters (Unicode scalar values, JSON
    /// Schema's length).
    #[inline]
    pub(crate) fn chars_within(&self, min: usize, max: usize) -> bool {
        let (raw, escapes) = (self.raw, self.escapes);
        if escapes == Escapes::UNCOUNTED {
            // Walked: counted again.
            return (min..=max).contains(&JsonStr::from_checked(raw).decoded_size().0);
        }
        let bytes = escapes.decoded_bytes(raw);
        // A text of `bytes` UTF-8 bytes has from `bytes / 4` to `bytes` characters: bounds
        // that hold for all of them need no count.
        (min <= bytes / 4 && bytes <= max) || (min..=max).contains(&escapes.decoded_chars(raw))
    }

    /// The decoded length in bytes of a string sent with escape sequences (`None`: its raw
    /// bytes are its text).
    #[inline]
    pub(crate) fn escaped_len(&self) -> Option<usize> {
        let (raw, escapes) = (self.raw, self.escapes);
        if escapes == Escapes::UNCOUNTED {
            let s = JsonStr::from_checked(raw);
            return s.has_escapes().then(|| s.decoded_size().1);
        }
        (escapes != Escapes::NONE).then(|| escapes.decoded_bytes(raw))
    }
}
