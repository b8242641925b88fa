//! The strict validator: one pass over the arguments object, producing a typed [`Args`] view.

use core::fmt;
use core::sync::atomic::{AtomicU8, Ordering};

use super::keyword::ty;
use super::message::{Read, Sink, got, piece};
use super::value::{ArgErrorKind, Value};
use super::{Literal, MAX_PARAMS, Param, ParamType};
use crate::wire::Frame;
use crate::wire::check::Escapes;
use crate::wire::json::{Json, JsonStr, Kind};
use crate::wire::swar;
use crate::wire::writer::Writer;

/// The validated arguments of one call: every declared parameter is present with the right type
/// and within its constraints, defaults are filled in, and nothing else is there.
///
/// Read them by name; asking for an undeclared name or the wrong type is a handler bug and comes
/// back as an [`AccessError`], which `?` turns into a failed tool call. Validation keeps each
/// value in its parameter's slot as what it reads as (an integer, a number, a boolean, a choice's
/// position, a string's place): an accessor finds the parameter by name and reads the slot,
/// without parsing anything again.
///
/// Nothing is allocated: strings without escape sequences borrow the message, choice strings
/// borrow the tool's spec, and free-form strings with escapes are decoded into a buffer the caller
/// lends ([`decode_escapes`](Self::decode_escapes); the server lends the tail of its output
/// buffer while the handler runs).
#[derive(Debug)]
pub struct Args<'a> {
    params: &'a [Param],
    /// Where the next lookup by name looks first: the parameter after the one found last.
    /// Handlers read their arguments in the order they are declared, mostly, so a lookup
    /// compares one name, whatever the count. (A hint: an atomic byte written and read with
    /// plain loads and stores, so that `&Args` stays `Send`; a stale one costs a scan.)
    next: AtomicU8,
    /// Per declared parameter that was sent, its value as read: an integer (`i64` bits), a
    /// number (`f64` bits), a boolean (0 or 1), a choice's position, or a free-form string's
    /// place (start in the high half, length in the low) in [`raw`](Self::raw) — in `decoded`
    /// once decoded. One word each: the view stays small to move and to keep on a
    /// microcontroller's stack.
    values: [u64; MAX_PARAMS],
    /// Bit `i`: parameter `i` was sent (otherwise its default applies).
    sent: u16,
    raw: Option<Json<'a>>,
    /// The free-form strings sent with escape sequences, and their decoding (feature `strings`).
    #[cfg(feature = "strings")]
    strings: Strings<'a>,
}

/// What [`Args`] knows of its free-form strings sent with escape sequences.
#[cfg(feature = "strings")]
#[derive(Debug, Clone, Copy)]
struct Strings<'a> {
    /// Bit `i`: `values[i]` is a free-form string sent with escape sequences.
    escaped: u16,
    /// Bit `i`: `values[i]` is decoded text, in `text` ([`Args::decode_escapes`]).
    decoded: u16,
    /// The text of the strings [`Args::decode_escapes`] decoded.
    text: &'a [u8],
    /// The bytes [`Args::decode_escapes`] needs.
    needed: usize,
}

#[cfg(feature = "strings")]
impl Strings<'_> {
    const NONE: Strings<'static> = Strings {
        escaped: 0,
        decoded: 0,
        text: &[],
        needed: 0,
    };
}

/// A handler asked [`Args`] for something the tool's spec cannot provide.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum AccessError {
    /// The tool declares no parameter of that name.
    #[error("handler bug: the tool declares no such argument")]
    Undeclared,
    /// The parameter has another type.
    #[error("handler bug: the argument has another type")]
    WrongType,
    /// The parameter is optional without default, and was absent (use the `opt_` accessor).
    #[error("handler bug: an optional argument was absent")]
    Absent,
    /// The string was sent with escape sequences and this view was not given a buffer to decode
    /// it into ([`Args::decode_escapes`]; the server always does this before a handler runs).
    #[error("the argument was not decoded")]
    NotDecoded,
}

impl Clone for Args<'_> {
    fn clone(&self) -> Self {
        Args {
            params: self.params,
            next: AtomicU8::new(self.next.load(Ordering::Relaxed)),
            values: self.values,
            sent: self.sent,
            raw: self.raw,
            #[cfg(feature = "strings")]
            strings: self.strings,
        }
    }
}

/// Parameter `i`'s bit in the views' bit sets; none past the sixteenth (a spec registration
/// refuses, which the public [`validate`] may still be handed).
#[inline]
fn bit(i: usize) -> u16 {
    if i < MAX_PARAMS { 1 << i } else { 0 }
}

/// A free-form string's place in a slot: where its content starts in the text it is read from,
/// and its length.
#[cfg(feature = "strings")]
const fn place(start: usize, len: usize) -> u64 {
    (start as u64) << 32 | len as u64
}

/// The bytes of `text` a slot's [`place`] names.
#[cfg(feature = "strings")]
fn at_place(text: &[u8], slot: u64) -> Option<&[u8]> {
    let start = usize::try_from(slot >> 32).ok()?;
    let len = usize::try_from(slot & 0xFFFF_FFFF).ok()?;
    text.get(start..start.checked_add(len)?)
}

impl<'a> Args<'a> {
    /// An empty view for a tool with no parameters.
    pub const fn empty() -> Args<'static> {
        Args {
            params: &[],
            next: AtomicU8::new(0),
            values: [0; MAX_PARAMS],
            sent: 0,
            raw: None,
            #[cfg(feature = "strings")]
            strings: Strings::NONE,
        }
    }

    /// The index of the parameter named `name`: the one after the parameter found last first
    /// (see `next`), then any other (names of another length passed over without reading
    /// them).
    #[inline(always)]
    fn index_of(&self, name: &str) -> Option<usize> {
        let name = name.as_bytes();
        let named = |p: &Param| p.name().len() == name.len() && swar::eq(p.name().as_bytes(), name);
        let next = usize::from(self.next.load(Ordering::Relaxed));
        let i = match self.params.get(next) {
            Some(p) if named(p) => next,
            _ => self.params.iter().position(named)?,
        };
        // (`i` < `MAX_PARAMS`: it fits a byte.)
        self.next.store(i.wrapping_add(1) as u8, Ordering::Relaxed);
        Some(i)
    }

    /// The parameter `name` (of type `ty`), its index, and its slot when it was sent.
    #[inline(always)]
    fn slot(
        &self,
        name: &str,
        ty: ParamType,
    ) -> Result<(&'a Param, usize, Option<u64>), AccessError> {
        let i = self.index_of(name).ok_or(AccessError::Undeclared)?;
        let p = self.params.get(i).ok_or(AccessError::Undeclared)?;
        if p.ty() != ty {
            return Err(AccessError::WrongType);
        }
        let value = (self.sent & bit(i) != 0)
            .then(|| self.values.get(i).copied())
            .flatten();
        Ok((p, i, value))
    }

    /// The number of bytes [`decode_escapes`](Self::decode_escapes) needs: the decoded length
    /// of every free-form string argument that was sent with escape sequences (0 for most calls).
    #[cfg(feature = "strings")]
    pub fn escaped_len(&self) -> usize {
        self.strings.needed
    }

    /// Decodes the string arguments that were sent with escape sequences into `buf`, which must
    /// hold [`escaped_len`](Self::escaped_len) bytes: from then on [`str`](Self::str) reads them
    /// from `buf`. `false` when `buf` is too small (the arguments that did not fit stay
    /// undecoded). Until this is done, `str` answers [`AccessError::NotDecoded`] for such an
    /// argument. The view's lifetime shortens to `buf`'s (`let mut args: Args<'_> = args;`).
    ///
    /// ```
    /// use mcp_core::{Param, schema::validate, wire::Json};
    ///
    /// const PARAMS: &[Param] = &[Param::string("text", "Text to show")];
    /// let message = Json::parse(br#"{"text":"caf\u00e9"}"#, 8).unwrap();
    /// let mut args = validate(PARAMS, Some(message)).unwrap();
    /// let mut buf = [0u8; 16];
    /// assert_eq!(args.escaped_len(), 5);
    /// assert!(args.decode_escapes(&mut buf));
    /// assert_eq!(args.str("text"), Ok("café"));
    /// ```
    #[cfg(feature = "strings")]
    pub fn decode_escapes(&mut self, buf: &'a mut [u8]) -> bool {
        let raw = self.raw.map_or(&[][..], |r| r.raw());
        // Every string sent with escapes, decoded again into this buffer (in order, a bit each),
        // from the message, which holds them as sent.
        let mut pending = self.strings.escaped;
        self.strings.decoded = 0;
        let mut used = 0;
        let mut all = true;
        while pending != 0 {
            let i = pending.trailing_zeros() as usize;
            let bit = 1 << i;
            pending &= !bit;
            let (Some(slot), Some(rest)) = (self.values.get_mut(i), buf.get_mut(used..)) else {
                all = false;
                continue;
            };
            let sent = at_place(raw, *slot).unwrap_or_default();
            let Some(len) = JsonStr::from_checked(sent).decode_bytes(rest) else {
                all = false;
                continue;
            };
            *slot = place(used, len);
            used += len;
            self.strings.decoded |= bit;
        }
        self.strings.needed = if all { 0 } else { self.strings.needed };
        self.strings.text = buf;
        all
    }

    /// The first declared parameter and its slot (see [`Args`]'s `values`: an integer's,
    /// number's or boolean's value, a choice's position), when it was sent and is not a
    /// free-form string: what a failure names as commanded.
    pub(crate) fn first(&self) -> Option<(&'a Param, u64)> {
        let p = self.params.first()?;
        #[cfg(feature = "strings")]
        let free_text = p.ty() == ParamType::String && p.choices().is_empty();
        #[cfg(not(feature = "strings"))]
        let free_text = false;
        let v = self
            .values
            .first()
            .copied()
            .filter(|_| self.sent & 1 != 0)?;
        (!free_text).then_some((p, v))
    }

    /// The `arguments` object as sent (after validation). Tools with a hand-written
    /// `inputSchema` read their arguments here and must check them themselves.
    pub fn raw(&self) -> Option<Json<'a>> {
        self.raw
    }

    /// A boolean argument.
    pub fn bool(&self, name: &str) -> Result<bool, AccessError> {
        self.opt_bool(name)?.ok_or(AccessError::Absent)
    }

    /// An integer argument.
    pub fn int(&self, name: &str) -> Result<i64, AccessError> {
        // (Written out, not through `opt_int`: a handler's most frequent read.)
        match self.slot(name, ParamType::Integer)? {
            (_, _, Some(v)) => Ok(v as i64),
            (p, _, None) => match p.default_value() {
                Some(Literal::Int(v)) => Ok(v),
                _ => Err(AccessError::Absent),
            },
        }
    }

    /// A number argument. Feature `float`.
    #[cfg(feature = "float")]
    pub fn number(&self, name: &str) -> Result<f64, AccessError> {
        self.opt_number(name)?.ok_or(AccessError::Absent)
    }

    /// A string argument. Feature `strings`.
    #[cfg(feature = "strings")]
    pub fn str(&self, name: &str) -> Result<&str, AccessError> {
        self.opt_str(name)?.ok_or(AccessError::Absent)
    }

    /// An integer argument as a narrower type (`args.int_as::<u8>("volume")`). Declare a range
    /// that fits the type: a value the type cannot hold is a handler bug
    /// ([`AccessError::WrongType`]), never truncated.
    pub fn int_as<T: TryFrom<i64>>(&self, name: &str) -> Result<T, AccessError> {
        T::try_from(self.int(name)?).map_err(|_| AccessError::WrongType)
    }

    /// An optional integer argument as a narrower type (see [`int_as`](Self::int_as)).
    pub fn opt_int_as<T: TryFrom<i64>>(&self, name: &str) -> Result<Option<T>, AccessError> {
        match self.opt_int(name)? {
            Some(v) => T::try_from(v).map(Some).map_err(|_| AccessError::WrongType),
            None => Ok(None),
        }
    }

    /// The index of a `one_of` string argument in the parameter's choices (feature `strings`),
    /// so that a handler
    /// matches on the position instead of repeating the strings (and needs no unreachable arm
    /// when it maps them to an enum in the same order).
    ///
    /// ```
    /// # use mcp_core::schema::{validate, Param};
    /// # use mcp_core::wire::json::Json;
    /// const THEMES: &[&str] = &["light", "dark"];
    /// const PARAMS: &[Param] = &[Param::string("theme", "Theme").one_of(THEMES)];
    /// let args = Json::parse(br#"{"theme":"dark"}"#, 8).unwrap();
    /// let args = validate(PARAMS, Some(args)).unwrap();
    /// assert_eq!(args.choice("theme"), Ok(1));
    /// ```
    #[cfg(feature = "strings")]
    pub fn choice(&self, name: &str) -> Result<usize, AccessError> {
        self.opt_choice(name)?.ok_or(AccessError::Absent)
    }

    /// The index of an optional `one_of` string argument (see [`choice`](Self::choice)).
    /// Feature `strings`.
    #[cfg(feature = "strings")]
    pub fn opt_choice(&self, name: &str) -> Result<Option<usize>, AccessError> {
        let (p, _, value) = self.slot(name, ParamType::String)?;
        let choices = p.choices();
        if choices.is_empty() {
            return Err(AccessError::WrongType);
        }
        match value {
            // The validator kept the choice's position.
            Some(v) => usize::try_from(v)
                .ok()
                .filter(|&i| i < choices.len())
                .map(Some)
                .ok_or(AccessError::WrongType),
            None => match p.default_value() {
                Some(Literal::Str(d)) => Ok(choices.iter().position(|c| *c == d)),
                _ => Ok(None),
            },
        }
    }

    /// An optional boolean argument (`None` when absent and without default).
    pub fn opt_bool(&self, name: &str) -> Result<Option<bool>, AccessError> {
        match self.slot(name, ParamType::Boolean)? {
            (_, _, Some(v)) => Ok(Some(v != 0)),
            (p, _, None) => match p.default_value() {
                Some(Literal::Bool(v)) => Ok(Some(v)),
                _ => Ok(None),
            },
        }
    }

    /// An optional integer argument.
    #[inline]
    pub fn opt_int(&self, name: &str) -> Result<Option<i64>, AccessError> {
        match self.slot(name, ParamType::Integer)? {
            // Validated: an exact integer in range.
            (_, _, Some(v)) => Ok(Some(v as i64)),
            (p, _, None) => match p.default_value() {
                Some(Literal::Int(v)) => Ok(Some(v)),
                _ => Ok(None),
            },
        }
    }

    /// An optional number argument. Feature `float`.
    #[cfg(feature = "float")]
    pub fn opt_number(&self, name: &str) -> Result<Option<f64>, AccessError> {
        match self.slot(name, ParamType::Number)? {
            // Validated: a finite number in range.
            (_, _, Some(v)) => Ok(Some(f64::from_bits(v))),
            (p, _, None) => match p.default_value() {
                Some(Literal::Number(v)) => Ok(Some(v)),
                _ => Ok(None),
            },
        }
    }

    /// An optional string argument. Feature `strings`.
    #[cfg(feature = "strings")]
    pub fn opt_str(&self, name: &str) -> Result<Option<&str>, AccessError> {
        let (p, i, value) = self.slot(name, ParamType::String)?;
        let Some(v) = value else {
            return match p.default_value() {
                Some(Literal::Str(v)) => Ok(Some(v)),
                _ => Ok(None),
            };
        };
        if !p.choices().is_empty() {
            // Hand out the spec's own string: no copy even when the input used escapes.
            return usize::try_from(v)
                .ok()
                .and_then(|c| p.choices().get(c))
                .map(|c| Some(*c))
                .ok_or(AccessError::WrongType);
        }
        let bit = bit(i);
        let text = if self.strings.decoded & bit != 0 {
            self.strings.text
        } else if self.strings.escaped & bit != 0 {
            return Err(AccessError::NotDecoded);
        } else {
            // A free-form string without escapes: its bytes are its text.
            self.raw.map_or(&[][..], |r| r.raw())
        };
        let bytes = at_place(text, v).ok_or(AccessError::WrongType)?;
        core::str::from_utf8(bytes)
            .map(Some)
            .map_err(|_| AccessError::WrongType)
    }
}

#[cfg(feature = "confirm")]
impl Args<'_> {
    /// Writes the argument `name` as a person reads it in a question
    /// ([`Confirm`](crate::Confirm)): a boolean, integer or number as JSON writes it; a string's
    /// text (escape sequences decoded), each character a display must not carry escaped as
    /// [`escaped`](crate::wire::escape::escaped) does, at most `max_chars` characters and `…`
    /// when more were left out; nothing for an absent optional argument without a default.
    /// `false`: the tool declares no such argument.
    pub(crate) fn show(&self, name: &str, max_chars: usize, f: &mut dyn fmt::Write) -> bool {
        let Some(p) = self.params.iter().find(|p| p.name() == name) else {
            return false;
        };
        #[cfg(not(feature = "strings"))]
        let _ = max_chars;
        let _ = match p.ty() {
            ParamType::Boolean => match self.opt_bool(name) {
                Ok(Some(v)) => f.write_str(if v { "true" } else { "false" }),
                _ => Ok(()),
            },
            ParamType::Integer => match self.opt_int(name) {
                Ok(Some(v)) => write!(f, "{v}"),
                _ => Ok(()),
            },
            #[cfg(feature = "float")]
            ParamType::Number => match self.opt_number(name) {
                Ok(Some(v)) => write!(f, "{v}"),
                _ => Ok(()),
            },
            #[cfg(feature = "strings")]
            ParamType::String => self.show_str(name, max_chars, f),
        };
        true
    }

    /// [`show`](Self::show) for a string: its characters, from the token as sent when it was
    /// not decoded yet.
    #[cfg(feature = "strings")]
    fn show_str(&self, name: &str, max_chars: usize, f: &mut dyn fmt::Write) -> fmt::Result {
        let mut chars: &mut dyn Iterator<Item = char> = &mut core::iter::empty();
        let (mut text, mut token);
        match self.slot(name, ParamType::String) {
            Ok((p, _, Some(v))) if !p.choices().is_empty() => {
                let choice = usize::try_from(v).ok().and_then(|c| p.choices().get(c));
                text = choice.copied().unwrap_or_default().chars();
                chars = &mut text;
            }
            Ok((_, i, Some(v))) if self.strings.decoded & bit(i) != 0 => {
                let decoded = at_place(self.strings.text, v).unwrap_or_default();
                text = core::str::from_utf8(decoded).unwrap_or_default().chars();
                chars = &mut text;
            }
            Ok((_, _, Some(v))) => {
                let sent = at_place(self.raw.map_or(&[][..], |r| r.raw()), v);
                token = JsonStr::from_checked(sent.unwrap_or_default()).chars();
                chars = &mut token;
            }
            Ok((p, _, None)) => {
                if let Some(Literal::Str(v)) = p.default_value() {
                    text = v.chars();
                    chars = &mut text;
                }
            }
            Err(_) => {}
        }
        for (n, c) in chars.enumerate() {
            if n == max_chars {
                return f.write_char('…');
            }
            crate::wire::escape::write_char(f, c)?;
        }
        Ok(())
    }
}

/// Why the arguments were refused; renders as a short message naming the argument, what was
/// expected, and what came.
#[derive(Debug, Clone, Copy)]
pub struct ArgError<'a> {
    /// What is wrong.
    pub kind: ArgErrorKind,
    /// The parameter concerned, when the key matched one.
    pub param: Option<&'a Param>,
    /// The key as sent, for unknown keys.
    pub key: Option<JsonStr<'a>>,
    /// The offending value as sent.
    pub got: Option<Json<'a>>,
    params: &'a [Param],
}

impl fmt::Display for ArgError<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.render(f)
    }
}

impl ArgError<'_> {
    /// Writes the message into any `fmt::Write`, as [`Display`](fmt::Display) does.
    pub fn render(&self, f: &mut dyn fmt::Write) -> fmt::Result {
        self.write(&mut Read(f))
    }

    /// Writes the message into `w` (inside a JSON string: the engine writes it straight into the
    /// response): the constant pieces already escaped, the rest escaped as written.
    pub(crate) fn write_json(&self, w: &mut Writer<'_>) {
        let _ = self.write(w);
    }

    /// The message, piece by piece, into `f`.
    fn write<S: Sink>(&self, f: &mut S) -> fmt::Result {
        let name = self.param.map_or("", Param::name);
        match self.kind {
            ArgErrorKind::NotAnObject => {
                f.piece(&piece!("Invalid arguments: expected an object"))?;
                got(f, self.got)
            }
            ArgErrorKind::Unknown => {
                f.piece(&piece!("Unknown argument \""))?;
                if let Some(key) = self.key {
                    f.decoded(key, 64)?;
                }
                if self.params.is_empty() {
                    f.piece(&piece!("\": this tool takes no arguments"))
                } else {
                    f.piece(&piece!("\"; expected: "))?;
                    for (i, p) in self.params.iter().enumerate() {
                        if i > 0 {
                            f.plain(", ")?;
                        }
                        f.plain(p.name())?;
                    }
                    Ok(())
                }
            }
            ArgErrorKind::Duplicate => {
                f.piece(&piece!("Duplicate argument \""))?;
                f.plain(name)?;
                f.piece(&piece!("\""))
            }
            ArgErrorKind::Missing => {
                f.piece(&piece!("Missing required argument \""))?;
                f.plain(name)?;
                f.piece(&piece!("\": expected "))?;
                self.param
                    .map_or(Ok(()), |p| p.keywords.describe(p.ty(), f))
            }
            kind => {
                f.piece(&piece!("Invalid argument \""))?;
                f.plain(name)?;
                f.piece(&piece!("\": expected "))?;
                let Some(p) = self.param else {
                    return got(f, self.got);
                };
                p.keywords.describe(p.ty(), f)?;
                match self.got.and_then(|v| p.keywords.got(f, kind, v)) {
                    Some(said) => said,
                    None => got(f, self.got),
                }
            }
        }
    }
}

/// Validates `arguments` (absent and `null` both mean "no arguments") against `params`.
///
/// One pass over the members in document order; the first problem is reported. The handler must
/// not run when this returns `Err`.
///
/// `params` are specs that pass [`Param::check`] (as registration requires): their names hold no
/// `\`, so a key that equals one byte for byte is that parameter without being decoded.
pub fn validate<'a>(
    params: &'a [Param],
    arguments: Option<Json<'a>>,
) -> Result<Args<'a>, ArgError<'a>> {
    let mut args = Args::empty();
    validate_into(&mut args, params, arguments, None).map(|()| args)
}

/// [`validate`] into `args` (the engine validates where the handler reads them: no copy),
/// reading the members of `arguments` — and what the escapes of their strings spell — from the
/// table the checking pass recorded in `frame` ([`Frame::arguments`]) instead of walking their
/// bytes again; without a frame, or past its table, they are walked.
pub(crate) fn validate_into<'a>(
    args: &mut Args<'a>,
    params: &'a [Param],
    arguments: Option<Json<'a>>,
    frame: Option<&Frame<'a>>,
) -> Result<(), ArgError<'a>> {
    let indexed = frame.and_then(Frame::arguments);
    // Every caller lends a fresh view (`Args::empty()`), which needs only its parameters; a view
    // that holds arguments already (it only can when it holds `raw`) is cleared first.
    if args.raw.is_some() {
        *args = Args::empty();
    }
    args.params = params;
    let err = |kind, param, key, got| ArgError {
        kind,
        param,
        key,
        got,
        params,
    };
    let arguments = arguments.filter(|a| a.kind() != Kind::Null);
    let mut walked;
    let mut table;
    let mut none = core::iter::empty();
    let members: &mut dyn Iterator<Item = (JsonStr<'a>, Json<'a>)> = match (arguments, indexed) {
        (None, _) => &mut none,
        (Some(a), _) if a.kind() != Kind::Object => {
            return Err(err(ArgErrorKind::NotAnObject, None, None, Some(a)));
        }
        (Some(_), Some(indexed)) => {
            table = indexed.iter();
            &mut table
        }
        (Some(a), None) => match a.members() {
            Some(members) => {
                walked = members;
                &mut walked
            }
            None => return Err(err(ArgErrorKind::NotAnObject, None, None, Some(a))),
        },
    };
    args.raw = arguments;
    // Where a string's content starts in the `arguments` object: its address there.
    #[cfg(feature = "strings")]
    let object = arguments.map_or(0, |a| a.raw().as_ptr().addr());
    for (n, (key, value)) in members.enumerate() {
        // Parameter names are plain ASCII without `\` (registration checks them): a key
        // without escapes equals one byte for byte, a key with escapes only decoded. Clients
        // send the arguments in the order they are declared, mostly: the parameter at the
        // member's own position is compared first.
        let named = |p: &Param| swar::eq(p.name().as_bytes(), key.raw());
        let i = match params.get(n) {
            Some(p) if named(p) => Some(n),
            _ => match params.iter().position(named) {
                Some(i) => Some(i),
                // A key's raw form with escapes holds a `\`, which no name does: it can equal
                // one only decoded (looked for only when no name equals the key byte for byte).
                None if key.has_escapes() => params.iter().position(|p| key.eq_str(p.name())),
                None => None,
            },
        };
        // (A parameter past `MAX_PARAMS`, in a spec registration refuses, has no slot.)
        let found = i.and_then(|i| Some((i, params.get(i)?, bit(i))));
        let Some((i, param, bit)) = found.filter(|&(_, _, bit)| bit != 0) else {
            return Err(err(ArgErrorKind::Unknown, None, Some(key), Some(value)));
        };
        if args.sent & bit != 0 {
            return Err(err(
                ArgErrorKind::Duplicate,
                Some(param),
                Some(key),
                Some(value),
            ));
        }
        let counted = || indexed.and(frame).and_then(|f| f.argument_escapes(n));
        let read = check_value(param, value, counted)
            .map_err(|kind| err(kind, Some(param), Some(key), Some(value)))?;
        let slot = match read {
            Kept::Word(word) => word,
            #[cfg(feature = "strings")]
            Kept::Text(content, escaped) => {
                if let Some(len) = escaped {
                    args.strings.escaped |= bit;
                    args.strings.needed += len;
                }
                place(content.as_ptr().addr().wrapping_sub(object), content.len())
            }
            #[cfg(not(feature = "strings"))]
            Kept::Never(_, never) => match never {},
        };
        if let Some(v) = args.values.get_mut(i) {
            *v = slot;
        }
        args.sent |= bit;
    }
    // An absent parameter reads as its default; only a required one is missing.
    for (i, param) in params.iter().enumerate() {
        if args.sent & bit(i) == 0 && param.is_required() {
            return Err(err(ArgErrorKind::Missing, Some(param), None, None));
        }
    }
    Ok(())
}

/// For tools with a hand-written `inputSchema`: checks only that `arguments` is an object (or
/// absent), and hands it over unread through [`Args::raw`].
pub fn validate_object<'a>(arguments: Option<Json<'a>>) -> Result<Args<'a>, ArgError<'a>> {
    let arguments = arguments.filter(|a| a.kind() != Kind::Null);
    match arguments {
        Some(a) if a.members().is_none() => Err(ArgError {
            kind: ArgErrorKind::NotAnObject,
            param: None,
            key: None,
            got: Some(a),
            params: &[],
        }),
        _ => Ok(Args {
            raw: arguments,
            ..Args::empty()
        }),
    }
}

/// What validation keeps of a value: its slot's word, or a free-form string's content (with
/// its decoded length when it was sent with escape sequences).
enum Kept<'a> {
    Word(u64),
    #[cfg(feature = "strings")]
    Text(&'a [u8], Option<usize>),
    /// Only the lifetime, without the feature `strings` (never built).
    #[cfg(not(feature = "strings"))]
    #[allow(dead_code, reason = "never built: it only carries the lifetime")]
    Never(core::marker::PhantomData<&'a ()>, core::convert::Infallible),
}

/// Checks one value against its parameter's keywords, given what the escapes of a string value
/// spell beyond its characters when the checking pass `counted` them; what the slot keeps of it.
#[inline(always)]
fn check_value<'a>(
    p: &Param,
    v: Json<'a>,
    counted: impl FnOnce() -> Option<Escapes>,
) -> Result<Kept<'a>, ArgErrorKind> {
    let value = ty::read(p.ty(), v, counted)?;
    p.keywords.check(&value)?;
    Ok(match value {
        Value::Bool(b) => Kept::Word(u64::from(b)),
        Value::Int(n) => Kept::Word(n as u64),
        #[cfg(feature = "float")]
        Value::Number(x) => Kept::Word(x.to_bits()),
        // A choice is kept as its position: read as the spec's own string, never decoded.
        #[cfg(feature = "strings")]
        Value::Str(text) if !p.choices().is_empty() => {
            let at = p.choices().iter().position(|c| text.eq(c));
            Kept::Word(at.map_or(u64::MAX, |at| at as u64))
        }
        #[cfg(feature = "strings")]
        Value::Str(text) => Kept::Text(text.raw(), text.escaped_len()),
        #[cfg(not(feature = "strings"))]
        Value::Never(_, never) => match never {},
    })
}

#[cfg(test)]
pub(crate) mod test {
    use super::*;
    use crate::test_support::kept_str;
    use crate::wire::json::DEFAULT_MAX_DEPTH;

    /// One parameter of each type and constraint (the schema's own tests emit them too).
    pub(crate) const PARAMS: &[Param] = &[
        Param::integer("volume", "Volume").range(0, 100),
        #[cfg(feature = "strings")]
        Param::string("theme", "Theme")
            .one_of(&["light", "dark"])
            .default_str("light"),
        #[cfg(feature = "strings")]
        Param::string("label", "Label").length(1, 4).optional(),
        #[cfg(feature = "float")]
        Param::number("gain", "Gain")
            .range_f64(-1.0, 1.0)
            .default_f64(0.5),
        Param::boolean("on", "On").default_bool(false),
    ];

    /// The names `PARAMS` declares, as a message about an unknown argument lists them (number
    /// parameters exist with feature `float` only, string ones with `strings`).
    #[cfg(all(feature = "float", feature = "strings"))]
    macro_rules! declared {
        () => {
            "volume, theme, label, gain, on"
        };
    }
    #[cfg(all(not(feature = "float"), feature = "strings"))]
    macro_rules! declared {
        () => {
            "volume, theme, label, on"
        };
    }
    #[cfg(all(feature = "float", not(feature = "strings")))]
    macro_rules! declared {
        () => {
            "volume, gain, on"
        };
    }
    #[cfg(all(not(feature = "float"), not(feature = "strings")))]
    macro_rules! declared {
        () => {
            "volume, on"
        };
    }

    fn run(args: &str) -> Result<Args<'_>, String> {
        let v = Json::parse(args.as_bytes(), DEFAULT_MAX_DEPTH).unwrap();
        validate(PARAMS, Some(v)).map_err(|e| e.to_string())
    }

    /// A spec with more parameters than `MAX_PARAMS` (registration refuses it; the public
    /// `validate` may still be handed one) is refused or read without a panic: the parameters
    /// past the table can never be sent.
    #[test]
    fn parameters_past_the_table_are_refused_not_a_panic() {
        let names: Vec<&'static str> = (0..MAX_PARAMS + 2)
            .map(|i| kept_str(format!("p{i}")))
            .collect();
        let params: Vec<Param> = names.iter().map(|n| Param::integer(n, "x")).collect();
        let parse = |s: &'static str| Json::parse(s.as_bytes(), DEFAULT_MAX_DEPTH).unwrap();
        let e = validate(&params, Some(parse(r#"{"p17":1}"#))).unwrap_err();
        assert_eq!(e.kind, ArgErrorKind::Unknown);
        let e = validate(&params, Some(parse("{}"))).unwrap_err();
        assert_eq!(
            (e.kind, e.param.map(Param::name)),
            (ArgErrorKind::Missing, Some("p0"))
        );
        let all: String = names
            .iter()
            .take(MAX_PARAMS)
            .map(|n| format!(r#""{n}":1"#))
            .collect::<Vec<_>>()
            .join(",");
        let all = kept_str(format!("{{{all}}}"));
        let e = validate(&params, Some(parse(all))).unwrap_err();
        assert_eq!(
            (e.kind, e.param.map(Param::name)),
            (ArgErrorKind::Missing, Some("p16"))
        );
        let optional: Vec<Param> = params.iter().map(|p| p.optional()).collect();
        let args = validate(&optional, Some(parse(all))).unwrap();
        assert_eq!(args.int("p15"), Ok(1));
        assert_eq!(args.opt_int("p17"), Ok(None));
    }

    #[cfg(feature = "strings")]
    #[test]
    fn accepts_and_fills_defaults() {
        let a = run(r#"{"volume":50}"#).unwrap();
        assert_eq!(a.int("volume"), Ok(50));
        assert_eq!(a.str("theme"), Ok("light"));
        assert_eq!(a.opt_str("label"), Ok(None));
        assert_eq!(a.str("label"), Err(AccessError::Absent));
        #[cfg(feature = "float")]
        assert_eq!(a.number("gain"), Ok(0.5));
        assert_eq!(a.bool("on"), Ok(false));
        #[cfg(feature = "float")]
        let args = r#"{"on":true,"vol\u0075me":5e1,"theme":"d\u0061rk","label":"\u00e9t\u00e9","gain":-1}"#;
        #[cfg(not(feature = "float"))]
        let args = r#"{"on":true,"vol\u0075me":5e1,"theme":"d\u0061rk","label":"\u00e9t\u00e9"}"#;
        let a = run(args).unwrap();
        assert_eq!(a.int("volume"), Ok(50));
        assert_eq!(a.str("theme"), Ok("dark"));
        // The escaped free-form string waits for a buffer to be decoded into.
        assert_eq!(a.str("label"), Err(AccessError::NotDecoded));
        assert_eq!(a.escaped_len(), "été".len());
        assert!(!a.clone().decode_escapes(&mut [0u8; 4]));
        let mut buf = [0u8; 5];
        let mut a = a;
        assert!(a.decode_escapes(&mut buf));
        assert_eq!(a.str("label"), Ok("été"));
        assert_eq!(a.str("theme"), Ok("dark"));
        #[cfg(feature = "float")]
        assert_eq!(a.number("gain"), Ok(-1.0));
        assert_eq!(a.bool("on"), Ok(true));
        assert_eq!(run(r#"{"volume":100.0}"#).unwrap().int("volume"), Ok(100));
    }

    /// String lengths judged from what the checking pass counted (the engine's way) and from
    /// the string alone (walking) agree, at and across the bounds, with and without escapes.
    #[cfg(feature = "strings")]
    #[test]
    fn lengths_from_the_index_agree_with_counting_again() {
        const P: &[&[Param]] = &[
            &[Param::string("s", "S").length(0, 256)],
            &[Param::string("s", "S").length(1, 4)],
            &[Param::string("s", "S").length(2, 2)],
            &[Param::string("s", "S").length(3, 9)],
        ];
        for text in [
            r#""""#,
            r#""a""#,
            r#""abcd""#,
            r#""abcde""#,
            r#""\u00e9""#,
            r#""\u00e9\u00e9\u00e9\u00e9""#,
            r#""\u00e9\u00e9\u00e9\u00e9\u00e9""#,
            r#""\ud83d\ude00""#,
            r#""\ud83d\ude00\ud83d\ude00""#,
            r#""😀😀😀""#,
            r#""你\n好""#,
            r#""\u4f60\u597d\u4f60\u597d\u4f60\u597d""#,
        ] {
            let message = format!(r#"{{"params":{{"arguments":{{"s":{text}}}}}}}"#);
            let frame = crate::wire::Frame::parse(message.as_bytes(), 8).unwrap();
            let arguments = frame.get(crate::wire::Member::Arguments).once();
            let decoded: String = serde_json::from_str(text).unwrap();
            let chars = decoded.chars().count();
            for params in P {
                let (min, max) = params[0].len_bounds();
                let expected = (min..=max).contains(&chars);
                let walked = validate(params, arguments);
                assert_eq!(
                    walked.is_ok(),
                    expected,
                    "{text} walked, against {min}..={max}"
                );
                let mut indexed = Args::empty();
                let via_index = validate_into(&mut indexed, params, arguments, Some(&frame));
                assert_eq!(
                    via_index.is_ok(),
                    expected,
                    "{text} indexed, against {min}..={max}"
                );
                if let Ok(walked) = walked {
                    let escaped = if text.contains('\\') {
                        decoded.len()
                    } else {
                        0
                    };
                    assert_eq!(walked.escaped_len(), escaped, "{text}");
                    assert_eq!(indexed.escaped_len(), escaped, "{text}");
                }
            }
        }
    }

    #[cfg(feature = "strings")]
    #[test]
    fn a_view_validated_again_keeps_nothing_of_before() {
        const P: &[Param] = &[
            Param::integer("volume", "Volume").range(0, 100).optional(),
            Param::string("label", "Label").optional(),
        ];
        let first = Json::parse(br#"{"volume":7,"label":"a\nb"}"#, 8).unwrap();
        let mut args = Args::empty();
        validate_into(&mut args, P, Some(first), None).unwrap();
        assert_eq!(args.opt_int("volume"), Ok(Some(7)));
        assert!(args.escaped_len() > 0);
        // Again into the same view: without arguments, then with others.
        validate_into(&mut args, P, None, None).unwrap();
        assert_eq!(args.opt_int("volume"), Ok(None));
        assert_eq!(args.opt_str("label"), Ok(None));
        assert_eq!(args.escaped_len(), 0);
        let second = Json::parse(br#"{"label":"c"}"#, 8).unwrap();
        validate_into(&mut args, P, Some(first), None).unwrap();
        validate_into(&mut args, P, Some(second), None).unwrap();
        assert_eq!(args.opt_int("volume"), Ok(None));
        assert_eq!(args.opt_str("label"), Ok(Some("c")));
        assert_eq!(args.escaped_len(), 0);
    }

    #[cfg(feature = "strings")]
    #[test]
    fn choices_by_index_and_narrow_integers() {
        const P: &[Param] = &[
            Param::string("theme", "Theme").one_of(&["light", "dark", "auto"]),
            Param::string("label", "Label").optional(),
            Param::integer("volume", "Volume").range(0, 100),
            Param::integer("offset", "Offset").range(-1000, 1000),
            Param::string("mode", "Mode").one_of(&["a", "b"]).optional(),
        ];
        let j = Json::parse(
            br#"{"theme":"auto","label":"x","volume":100,"offset":-1000}"#,
            8,
        )
        .unwrap();
        let a = validate(P, Some(j)).unwrap();
        assert_eq!(a.choice("theme"), Ok(2));
        assert_eq!(a.opt_choice("mode"), Ok(None));
        assert_eq!(a.choice("mode"), Err(AccessError::Absent));
        assert_eq!(a.choice("label"), Err(AccessError::WrongType));
        assert_eq!(a.choice("nope"), Err(AccessError::Undeclared));
        assert_eq!(a.int_as::<u8>("volume"), Ok(100u8));
        assert_eq!(a.int_as::<i16>("offset"), Ok(-1000i16));
        // A type that cannot hold the declared range is a handler bug, not a truncation.
        assert_eq!(a.int_as::<u8>("offset"), Err(AccessError::WrongType));
        assert_eq!(a.opt_int_as::<u16>("volume"), Ok(Some(100u16)));
    }

    #[test]
    fn handler_bugs_are_access_errors() {
        let a = run(r#"{"volume":1}"#).unwrap();
        assert_eq!(a.int("nope"), Err(AccessError::Undeclared));
        assert_eq!(a.bool("volume"), Err(AccessError::WrongType));
    }

    #[test]
    fn messages_name_argument_expectation_and_value() {
        for (args, msg) in [
            (
                r#"{}"#,
                r#"Missing required argument "volume": expected an integer from 0 to 100"#,
            ),
            (
                r#"{"volume":150}"#,
                r#"Invalid argument "volume": expected an integer from 0 to 100, got 150"#,
            ),
            (
                r#"{"volume":-1}"#,
                r#"Invalid argument "volume": expected an integer from 0 to 100, got -1"#,
            ),
            (
                r#"{"volume":"50"}"#,
                r#"Invalid argument "volume": expected an integer from 0 to 100, got "50""#,
            ),
            (
                r#"{"volume":true}"#,
                r#"Invalid argument "volume": expected an integer from 0 to 100, got true"#,
            ),
            (
                r#"{"volume":null}"#,
                r#"Invalid argument "volume": expected an integer from 0 to 100, got null"#,
            ),
            (
                r#"{"volume":50.5}"#,
                r#"Invalid argument "volume": expected an integer from 0 to 100, got 50.5"#,
            ),
            (
                r#"{"volume":1e400}"#,
                r#"Invalid argument "volume": expected an integer from 0 to 100, got 1e400"#,
            ),
            (
                r#"{"volume":9223372036854775808}"#,
                r#"Invalid argument "volume": expected an integer from 0 to 100, got 9223372036854775808"#,
            ),
            (
                r#"{"volume":1,"volume":2}"#,
                r#"Duplicate argument "volume""#,
            ),
            (
                r#"{"volume":1,"vol\u0075me":1}"#,
                r#"Duplicate argument "volume""#,
            ),
            (
                r#"{"volume":1,"mute":true}"#,
                concat!(r#"Unknown argument "mute"; expected: "#, declared!()),
            ),
            #[cfg(feature = "strings")]
            (
                r#"{"volume":1,"theme":"blue"}"#,
                r#"Invalid argument "theme": expected one of "light", "dark", got "blue""#,
            ),
            #[cfg(feature = "strings")]
            (
                r#"{"volume":1,"theme":"Light"}"#,
                r#"Invalid argument "theme": expected one of "light", "dark", got "Light""#,
            ),
            #[cfg(feature = "strings")]
            (
                r#"{"volume":1,"label":""}"#,
                r#"Invalid argument "label": expected a string of 1 to 4 characters, got 0 characters"#,
            ),
            #[cfg(feature = "strings")]
            (
                r#"{"volume":1,"label":"abcde"}"#,
                r#"Invalid argument "label": expected a string of 1 to 4 characters, got 5 characters"#,
            ),
            #[cfg(feature = "float")]
            (
                r#"{"volume":1,"gain":2}"#,
                r#"Invalid argument "gain": expected a number from -1 to 1, got 2"#,
            ),
            #[cfg(feature = "float")]
            (
                r#"{"volume":1,"gain":"0"}"#,
                r#"Invalid argument "gain": expected a number from -1 to 1, got "0""#,
            ),
            (
                r#"{"volume":1,"on":1}"#,
                r#"Invalid argument "on": expected true or false, got 1"#,
            ),
            (
                r#"{"volume":1,"on":"true"}"#,
                r#"Invalid argument "on": expected true or false, got "true""#,
            ),
            (
                r#"[1]"#,
                r#"Invalid arguments: expected an object, got [1]"#,
            ),
            (
                r#""x""#,
                r#"Invalid arguments: expected an object, got "x""#,
            ),
            (
                r#"{"volume":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}"#,
                r#"Invalid argument "volume": expected an integer from 0 to 100, got "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa…""#,
            ),
            #[cfg(feature = "strings")]
            (
                // Escaped text is shown decoded: a text-to-speech reader says the word.
                r#"{"volume":1,"theme":"深色"}"#,
                r#"Invalid argument "theme": expected one of "light", "dark", got "深色""#,
            ),
            (
                r#"{"volume":"a\"b\\c\u0001"}"#,
                "Invalid argument \"volume\": expected an integer from 0 to 100, got \"a\"b\\c\u{1}\"",
            ),
            (
                r#"{"volume":{"k":"v\n"}}"#,
                r#"Invalid argument "volume": expected an integer from 0 to 100, got {"k":"v\n"}"#,
            ),
            (
                r#"{"volume":123456789012345678901234567890123456789012345}"#,
                r#"Invalid argument "volume": expected an integer from 0 to 100, got 1234567890123456789012345678901234567890…"#,
            ),
            (
                r#"{"volume":[1,{"k":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"}]}"#,
                r#"Invalid argument "volume": expected an integer from 0 to 100, got [1,{"k":"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa…"#,
            ),
            (
                r#"{"a\"b":1}"#,
                concat!(r#"Unknown argument "a"b"; expected: "#, declared!()),
            ),
            // A key is quoted decoded, cut at 64 characters.
            (
                r#"{"\u00e9bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb":1}"#,
                concat!(
                    r#"Unknown argument "ébbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"; expected: "#,
                    declared!()
                ),
            ),
        ] {
            assert_eq!(run(args).err().as_deref(), Some(msg), "{args}");
            // The engine's spelling, inside a JSON string, reads the same.
            let v = Json::parse(args.as_bytes(), DEFAULT_MAX_DEPTH).unwrap();
            let e = validate(PARAMS, Some(v)).err().unwrap();
            let mut buf = [0u8; 512];
            let mut w = Writer::new(&mut buf);
            w.begin_string();
            e.write_json(&mut w);
            w.end_string();
            let json = core::str::from_utf8(w.written().unwrap()).unwrap();
            let read: String = serde_json::from_str(json).unwrap();
            assert_eq!(read, msg, "{json}");
        }
    }

    #[test]
    fn absent_and_null_arguments_mean_none() {
        let none: &[Param] = &[];
        assert!(validate(none, None).is_ok());
        assert!(validate(none, Some(Json::parse(b"null", 4).unwrap())).is_ok());
        assert_eq!(
            validate(none, Some(Json::parse(br#"{"x":1}"#, 4).unwrap()))
                .unwrap_err()
                .to_string(),
            r#"Unknown argument "x": this tool takes no arguments"#
        );
        assert_eq!(
            validate(PARAMS, None).unwrap_err().to_string(),
            r#"Missing required argument "volume": expected an integer from 0 to 100"#
        );
    }
}
