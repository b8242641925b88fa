//! `default`: the value an optional parameter takes when the argument is absent. Setting one
//! makes the parameter optional; registration checks it against the parameter's type and every
//! other keyword, as a value from the peer is checked.

use super::{Keyword, ParamType};
#[cfg(feature = "strings")]
use crate::schema::value::Text;
use crate::schema::value::{ArgErrorKind, Value};
use crate::schema::{Param, ParamProblem};
use crate::wire::protocol;
use crate::wire::writer::Writer;

/// A default value for an optional parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
pub enum Literal {
    /// A boolean default.
    Bool(bool),
    /// An integer default.
    Int(i64),
    /// A number default (feature `float`).
    #[cfg(feature = "float")]
    Number(f64),
    /// A string default (feature `strings`).
    #[cfg(feature = "strings")]
    Str(&'static str),
}

impl Literal {
    /// The value, when it is one of type `ty`.
    fn value(self, ty: ParamType) -> Option<Value<'static>> {
        Some(match (ty, self) {
            (ParamType::Boolean, Literal::Bool(b)) => Value::Bool(b),
            (ParamType::Integer, Literal::Int(v)) => Value::Int(v),
            #[cfg(feature = "float")]
            (ParamType::Number, Literal::Number(v)) => Value::Number(v),
            #[cfg(feature = "strings")]
            (ParamType::String, Literal::Str(s)) => Value::Str(Text::spec(s)),
            _ => return None,
        })
    }

    /// Writes the literal as JSON.
    pub(crate) fn write(self, w: &mut Writer<'_>) {
        match self {
            Literal::Bool(b) => w.bool(b),
            Literal::Int(i) => w.int(i),
            #[cfg(feature = "float")]
            Literal::Number(n) => w.number(n),
            #[cfg(feature = "strings")]
            Literal::Str(s) => w.string(s),
        }
    }
}

/// The default, if any.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct DefaultValue(Option<Literal>);

impl Keyword for DefaultValue {
    const NONE: Self = DefaultValue(None);
    /// (A default of another type is its own problem: `DefaultWrongType`.)
    const TYPE: Option<ParamType> = None;

    fn check_spec(&self, p: &Param) -> Result<(), ParamProblem> {
        let Some(default) = self.0 else {
            return Ok(());
        };
        let value = default
            .value(p.ty())
            .ok_or(ParamProblem::DefaultWrongType)?;
        p.keywords
            .check(&value)
            .map_err(|_| ParamProblem::DefaultInvalid)
    }

    #[inline]
    fn emit(&self, w: &mut Writer<'_>) {
        if let Some(d) = self.0 {
            w.raw(protocol::DEFAULT);
            d.write(w);
        }
    }

    /// (A value sent is checked by the others; the default applies only when none is.)
    #[inline(always)]
    fn check(&self, _: &Value<'_>) -> Result<(), ArgErrorKind> {
        Ok(())
    }
}

impl Param {
    /// Boolean: the value used when the argument is absent (makes the parameter optional).
    pub const fn default_bool(self, v: bool) -> Self {
        self.with_default(Literal::Bool(v))
    }

    /// Integer: the value used when the argument is absent (makes the parameter optional).
    pub const fn default_int(self, v: i64) -> Self {
        self.with_default(Literal::Int(v))
    }

    /// Number: the value used when the argument is absent (makes the parameter optional).
    /// Feature `float`.
    #[cfg(feature = "float")]
    pub const fn default_f64(self, v: f64) -> Self {
        self.with_default(Literal::Number(v))
    }

    /// String: the value used when the argument is absent (makes the parameter optional).
    /// Feature `strings`.
    #[cfg(feature = "strings")]
    pub const fn default_str(self, v: &'static str) -> Self {
        self.with_default(Literal::Str(v))
    }

    const fn with_default(mut self, v: Literal) -> Self {
        self.keywords.default = DefaultValue(Some(v));
        self.optional = true;
        self
    }

    /// The default, if any.
    pub const fn default_value(&self) -> Option<Literal> {
        self.keywords.default.0
    }
}

#[cfg(test)]
impl super::test::Samples for DefaultValue {
    /// (Every type takes a default; one of another type is `DefaultWrongType`, below.)
    fn set(p: Param) -> Param {
        p.default_int(0)
    }

    fn specs() -> Vec<Param> {
        #[cfg_attr(
            not(any(feature = "float", feature = "strings")),
            expect(unused_mut, reason = "a number or a string spec follows")
        )]
        let mut specs = vec![
            Param::boolean("x", "X").default_bool(true),
            Param::integer("x", "X").range(0, 100).default_int(100),
        ];
        #[cfg(feature = "strings")]
        specs.extend([
            Param::string("x", "X").default_str("a\\b"),
            Param::string("x", "X").one_of(&["a", "b"]).default_str("b"),
        ]);
        #[cfg(feature = "float")]
        specs.push(Param::number("x", "X").default_f64(0.5));
        specs
    }

    fn values() -> &'static [&'static str] {
        &[
            "true",
            "0",
            "100",
            "101",
            r#""a\\b""#,
            r#""b""#,
            r#""c""#,
            "0.5",
            "null",
        ]
    }

    fn refused() -> Vec<(Param, ParamProblem)> {
        #[cfg_attr(
            not(any(feature = "float", feature = "strings")),
            expect(unused_mut, reason = "a number or a string spec follows")
        )]
        let mut refused = vec![
            (
                Param::integer("x", "X").default_bool(true),
                ParamProblem::DefaultWrongType,
            ),
            (
                Param::integer("x", "X").range(0, 100).default_int(101),
                ParamProblem::DefaultInvalid,
            ),
        ];
        #[cfg(feature = "strings")]
        refused.extend([
            (
                Param::string("x", "X").one_of(&["a"]).default_str("b"),
                ParamProblem::DefaultInvalid,
            ),
            (
                Param::string("x", "X").length(0, 2).default_str("abc"),
                ParamProblem::DefaultInvalid,
            ),
        ]);
        #[cfg(feature = "float")]
        refused.push((
            Param::number("x", "X").default_f64(f64::INFINITY),
            ParamProblem::DefaultInvalid,
        ));
        refused
    }
}
