//! `type`: the one keyword every parameter has. It reads the peer's JSON into the [`Value`] the
//! other keywords check, refusing a value of another JSON type (no coercion: `"50"`, `true` and
//! `null` are not integers) and, for an integer, one with a fractional part or beyond `i64`.

#[cfg(feature = "strings")]
use crate::schema::value::Text;
use crate::schema::value::{ArgErrorKind, Value};
use crate::wire::check::Escapes;
#[cfg(feature = "float")]
use crate::wire::json::Kind;
use crate::wire::json::{Integer, Json};
use crate::wire::protocol;
use crate::wire::writer::Writer;

/// The JSON type of a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum ParamType {
    /// `true` / `false`.
    Boolean,
    /// A JSON Schema integer (any number without a fractional part) that fits `i64`.
    Integer,
    /// A finite number (feature `float`).
    #[cfg(feature = "float")]
    Number,
    /// A string (feature `strings`).
    #[cfg(feature = "strings")]
    String,
}

impl ParamType {
    /// The JSON Schema `type` keyword value.
    pub const fn as_str(self) -> &'static str {
        match self {
            ParamType::Boolean => "boolean",
            ParamType::Integer => "integer",
            #[cfg(feature = "float")]
            ParamType::Number => "number",
            #[cfg(feature = "strings")]
            ParamType::String => "string",
        }
    }

    /// What a message says a value of this type is ("an integer"), before the other keywords'
    /// qualifiers.
    pub(crate) const fn noun(self) -> &'static str {
        match self {
            ParamType::Boolean => "true or false",
            ParamType::Integer => "an integer",
            #[cfg(feature = "float")]
            ParamType::Number => "a number",
            #[cfg(feature = "strings")]
            ParamType::String => "a string",
        }
    }

    /// `{"type":"integer"`: a parameter's schema up to its other members.
    pub(crate) fn emit(self, w: &mut Writer<'_>) {
        w.raw(protocol::TYPE_OPEN);
        w.string(self.as_str());
    }
}

/// Reads `v` as a value of type `ty`, refusing one of another JSON type; `counted` gives what
/// the escapes of a string value spell, when the checking pass counted them.
#[inline(always)]
pub(crate) fn read<'a>(
    ty: ParamType,
    v: Json<'a>,
    counted: impl FnOnce() -> Option<Escapes>,
) -> Result<Value<'a>, ArgErrorKind> {
    #[cfg(not(feature = "strings"))]
    let _ = counted;
    Ok(match ty {
        ParamType::Boolean => Value::Bool(v.as_bool().ok_or(ArgErrorKind::WrongType)?),
        ParamType::Integer => match v.as_integer().ok_or(ArgErrorKind::WrongType)? {
            Integer::Exact(n) => Value::Int(n),
            // Beyond `i64`: outside the bounds every integer parameter's schema states.
            Integer::OutOfRange => return Err(ArgErrorKind::OutOfRange),
            Integer::Fractional => return Err(ArgErrorKind::NotAnInteger),
        },
        #[cfg(feature = "float")]
        ParamType::Number => {
            if v.kind() != Kind::Number {
                return Err(ArgErrorKind::WrongType);
            }
            // Beyond `f64`: outside the bounds every number parameter's schema states.
            Value::Number(v.as_f64().ok_or(ArgErrorKind::OutOfRange)?)
        }
        #[cfg(feature = "strings")]
        ParamType::String => {
            let s = v.as_str().ok_or(ArgErrorKind::WrongType)?;
            Value::Str(Text::sent(s, counted()))
        }
    })
}
