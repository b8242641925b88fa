//! Parameter specs, and the two things made from one spec: the JSON Schema a client sees
//! (`inputSchema`) and the validator that enforces it ([`validate`]).
//!
//! *The schema you emit is the schema you enforce.* Every constraint a [`Param`] can hold is both
//! written into the schema and checked by the validator, including the implicit ones: an
//! `integer` is always emitted with the `i64` bounds the validator enforces, a `number` with the
//! finite `f64` bounds, and every object with `additionalProperties: false`.
//!
//! ```
//! use mcp_core::schema::Param;
//!
//! const PARAMS: &[Param] = &[
//!     Param::integer("volume", "Output volume in percent").range(0, 100),
//!     Param::string("theme", "Screen theme").one_of(&["light", "dark"]).default_str("light"),
//! ];
//! assert_eq!(PARAMS[0].name(), "volume");
//! ```

mod output;
mod validate;

pub(crate) use output::names_are_unique as output_names_are_unique;
pub use output::{Field, write_output_schema};
pub(crate) use validate::validate_into;
pub use validate::{AccessError, ArgError, ArgErrorKind, Args, validate, validate_object};

use crate::wire::json::{DEFAULT_MAX_DEPTH, Json};
use crate::wire::protocol;
use crate::wire::writer::Writer;

/// The most parameters one tool may declare (the validator's typed view is a fixed array).
pub const MAX_PARAMS: usize = 16;

/// The JSON type of a parameter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ParamType {
    /// `true` / `false`.
    Boolean,
    /// A JSON Schema integer (any number without a fractional part) that fits `i64`.
    Integer,
    /// A finite number (feature `float`).
    #[cfg(feature = "float")]
    Number,
    /// A string.
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
            ParamType::String => "string",
        }
    }
}

/// A default value for an optional parameter.
#[derive(Debug, Clone, Copy, PartialEq)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum Literal {
    /// A boolean default.
    Bool(bool),
    /// An integer default.
    Int(i64),
    /// A number default (feature `float`).
    #[cfg(feature = "float")]
    Number(f64),
    /// A string default.
    Str(&'static str),
}

/// One tool parameter: name, description, type and constraints.
///
/// Build it in a `const` with the `const fn` builders. Constraints that do not apply to the type
/// (a `range` on a string, say) are not silently ignored: registration refuses the tool with
/// [`ParamProblem::ConstraintForOtherType`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Param {
    name: &'static str,
    description: &'static str,
    ty: ParamType,
    optional: bool,
    default: Option<Literal>,
    int_min: Option<i64>,
    int_max: Option<i64>,
    #[cfg(feature = "float")]
    num_min: Option<f64>,
    #[cfg(feature = "float")]
    num_max: Option<f64>,
    min_len: Option<u32>,
    max_len: Option<u32>,
    choices: &'static [&'static str],
}

/// What is wrong with a parameter spec (a registration error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
pub enum ParamProblem {
    /// The name is empty, longer than 64 bytes, or uses characters other than `A-Za-z0-9_.-`.
    #[error("name must be 1-64 characters of A-Z a-z 0-9 _ . -")]
    BadName,
    /// Two parameters of one tool share a name.
    #[error("duplicate parameter name")]
    DuplicateName,
    /// A constraint was set that does not apply to the parameter's type.
    #[error("constraint does not apply to this parameter type")]
    ConstraintForOtherType,
    /// The minimum is above the maximum, or a bound is not finite.
    #[error("empty or non-finite range")]
    BadRange,
    /// `one_of` with no choices, or with a choice listed twice.
    #[error("choices must be non-empty and distinct")]
    BadChoices,
    /// The default has another type than the parameter.
    #[error("default has the wrong type")]
    DefaultWrongType,
    /// The default breaks the parameter's own constraints.
    #[error("default violates the parameter's constraints")]
    DefaultInvalid,
}

impl Param {
    const fn new(ty: ParamType, name: &'static str, description: &'static str) -> Self {
        Param {
            name,
            description,
            ty,
            optional: false,
            default: None,
            int_min: None,
            int_max: None,
            #[cfg(feature = "float")]
            num_min: None,
            #[cfg(feature = "float")]
            num_max: None,
            min_len: None,
            max_len: None,
            choices: &[],
        }
    }

    /// A required boolean parameter.
    pub const fn boolean(name: &'static str, description: &'static str) -> Self {
        Self::new(ParamType::Boolean, name, description)
    }

    /// A required integer parameter (any `i64` unless [`range`](Self::range) narrows it).
    pub const fn integer(name: &'static str, description: &'static str) -> Self {
        Self::new(ParamType::Integer, name, description)
    }

    /// A required number parameter (any finite `f64` unless [`range_f64`](Self::range_f64)
    /// narrows it). Feature `float`.
    #[cfg(feature = "float")]
    pub const fn number(name: &'static str, description: &'static str) -> Self {
        Self::new(ParamType::Number, name, description)
    }

    /// A required string parameter.
    pub const fn string(name: &'static str, description: &'static str) -> Self {
        Self::new(ParamType::String, name, description)
    }

    /// Integer: inclusive bounds.
    pub const fn range(mut self, min: i64, max: i64) -> Self {
        self.int_min = Some(min);
        self.int_max = Some(max);
        self
    }

    /// Integer: inclusive lower bound.
    pub const fn min(mut self, min: i64) -> Self {
        self.int_min = Some(min);
        self
    }

    /// Integer: inclusive upper bound.
    pub const fn max(mut self, max: i64) -> Self {
        self.int_max = Some(max);
        self
    }

    /// Number: inclusive bounds. Feature `float`.
    #[cfg(feature = "float")]
    pub const fn range_f64(mut self, min: f64, max: f64) -> Self {
        self.num_min = Some(min);
        self.num_max = Some(max);
        self
    }

    /// String: length bounds in Unicode characters, inclusive.
    pub const fn length(mut self, min: u32, max: u32) -> Self {
        self.min_len = Some(min);
        self.max_len = Some(max);
        self
    }

    /// String: the value must be one of these.
    pub const fn one_of(mut self, choices: &'static [&'static str]) -> Self {
        self.choices = choices;
        self
    }

    /// The parameter may be absent (and has no default).
    pub const fn optional(mut self) -> Self {
        self.optional = true;
        self
    }

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
    pub const fn default_str(self, v: &'static str) -> Self {
        self.with_default(Literal::Str(v))
    }

    const fn with_default(mut self, v: Literal) -> Self {
        self.default = Some(v);
        self.optional = true;
        self
    }

    /// The parameter name (the argument key).
    pub const fn name(&self) -> &'static str {
        self.name
    }

    /// The description shown to the model.
    pub const fn description(&self) -> &'static str {
        self.description
    }

    /// The JSON type.
    pub const fn ty(&self) -> ParamType {
        self.ty
    }

    /// `true` when the argument must be present.
    pub const fn is_required(&self) -> bool {
        !self.optional
    }

    /// The default, if any.
    pub const fn default_value(&self) -> Option<Literal> {
        self.default
    }

    /// String choices (empty when any string is allowed).
    pub const fn choices(&self) -> &'static [&'static str] {
        self.choices
    }

    /// Effective inclusive integer bounds (the `i64` range when not narrowed).
    pub fn int_bounds(&self) -> (i64, i64) {
        (
            self.int_min.unwrap_or(i64::MIN),
            self.int_max.unwrap_or(i64::MAX),
        )
    }

    /// Effective inclusive number bounds (the finite `f64` range when not narrowed). Feature
    /// `float`.
    #[cfg(feature = "float")]
    pub fn num_bounds(&self) -> (f64, f64) {
        (
            self.num_min.unwrap_or(f64::MIN),
            self.num_max.unwrap_or(f64::MAX),
        )
    }

    /// Effective inclusive string length bounds, in characters.
    pub fn len_bounds(&self) -> (usize, usize) {
        (
            self.min_len.map_or(0, |v| v as usize),
            self.max_len.map_or(usize::MAX, |v| v as usize),
        )
    }

    /// Checks the spec itself (run at registration).
    pub fn check(&self) -> Result<(), ParamProblem> {
        if !is_valid_param_name(self.name) {
            return Err(ParamProblem::BadName);
        }
        let ints = self.int_min.is_some() || self.int_max.is_some();
        #[cfg(feature = "float")]
        let nums = self.num_min.is_some() || self.num_max.is_some();
        #[cfg(not(feature = "float"))]
        let nums = false;
        let lens = self.min_len.is_some() || self.max_len.is_some();
        let choices = !self.choices.is_empty();
        let foreign = match self.ty {
            ParamType::Boolean => ints || nums || lens || choices,
            ParamType::Integer => nums || lens || choices,
            #[cfg(feature = "float")]
            ParamType::Number => ints || lens || choices,
            ParamType::String => ints || nums,
        };
        if foreign {
            return Err(ParamProblem::ConstraintForOtherType);
        }
        let (imin, imax) = self.int_bounds();
        #[cfg(feature = "float")]
        let (nmin, nmax) = self.num_bounds();
        #[cfg(feature = "float")]
        let nums_ok = nmin.is_finite() && nmax.is_finite() && nmin <= nmax;
        #[cfg(not(feature = "float"))]
        let nums_ok = true;
        let (lmin, lmax) = self.len_bounds();
        if imin > imax || !nums_ok || lmin > lmax {
            return Err(ParamProblem::BadRange);
        }
        for (i, c) in self.choices.iter().enumerate() {
            if self.choices.iter().take(i).any(|d| d == c) {
                return Err(ParamProblem::BadChoices);
            }
            if !(lmin..=lmax).contains(&char_count(c)) {
                return Err(ParamProblem::BadChoices);
            }
        }
        let Some(default) = self.default else {
            return Ok(());
        };
        let in_range = match (self.ty, default) {
            (ParamType::Boolean, Literal::Bool(_)) => true,
            (ParamType::Integer, Literal::Int(v)) => (imin..=imax).contains(&v),
            #[cfg(feature = "float")]
            (ParamType::Number, Literal::Number(v)) => v.is_finite() && nmin <= v && v <= nmax,
            (ParamType::String, Literal::Str(s)) => {
                (lmin..=lmax).contains(&char_count(s))
                    && (self.choices.is_empty() || self.choices.contains(&s))
            }
            _ => return Err(ParamProblem::DefaultWrongType),
        };
        if in_range {
            Ok(())
        } else {
            Err(ParamProblem::DefaultInvalid)
        }
    }

    /// Writes this parameter's JSON Schema.
    pub fn write_schema(&self, w: &mut Writer<'_>) {
        w.raw(protocol::TYPE_OPEN);
        w.string(self.ty.as_str());
        w.raw(protocol::DESCRIPTION);
        w.string(self.description);
        match self.ty {
            ParamType::Boolean => {}
            ParamType::Integer => {
                let (min, max) = self.int_bounds();
                w.raw(protocol::MINIMUM);
                w.int(min);
                w.raw(protocol::MAXIMUM);
                w.int(max);
            }
            #[cfg(feature = "float")]
            ParamType::Number => {
                let (min, max) = self.num_bounds();
                w.raw(protocol::MINIMUM);
                w.number(min);
                w.raw(protocol::MAXIMUM);
                w.number(max);
            }
            ParamType::String => {
                if let Some(min) = self.min_len {
                    w.raw(protocol::MIN_LENGTH);
                    w.uint(u64::from(min));
                }
                if let Some(max) = self.max_len {
                    w.raw(protocol::MAX_LENGTH);
                    w.uint(u64::from(max));
                }
                if !self.choices.is_empty() {
                    write_strings(w, protocol::ENUM_OPEN, self.choices.iter().copied());
                }
            }
        }
        if let Some(d) = self.default {
            w.raw(protocol::DEFAULT);
            write_literal(w, d);
        }
        w.raw(b"}");
    }
}

/// `open` (`,"key":[`), the strings as a JSON array's elements, `]`.
#[inline]
pub(crate) fn write_strings<'s>(
    w: &mut Writer<'_>,
    open: &[u8],
    strings: impl Iterator<Item = &'s str>,
) {
    w.raw(open);
    for (i, s) in strings.enumerate() {
        if i > 0 {
            w.raw(b",");
        }
        w.string(s);
    }
    w.raw(b"]");
}

pub(crate) fn write_literal(w: &mut Writer<'_>, v: Literal) {
    match v {
        Literal::Bool(b) => w.bool(b),
        Literal::Int(i) => w.int(i),
        #[cfg(feature = "float")]
        Literal::Number(n) => w.number(n),
        Literal::Str(s) => w.string(s),
    }
}

/// `true` for names of 1–64 characters from `A-Za-z0-9_.-` (the property-name rule of the major
/// LLM tool APIs).
pub fn is_valid_param_name(name: &str) -> bool {
    (1..=64).contains(&name.len())
        && name
            .bytes()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
}

/// Checks a parameter list: each spec, distinct names, at most [`MAX_PARAMS`].
/// On error returns the offending parameter's name.
pub fn check_params(params: &[Param]) -> Result<(), (&'static str, ParamProblem)> {
    for (i, p) in params.iter().enumerate() {
        p.check().map_err(|e| (p.name, e))?;
        if params.iter().take(i).any(|q| q.name == p.name) {
            return Err((p.name, ParamProblem::DuplicateName));
        }
    }
    Ok(())
}

/// Writes the `inputSchema` object for a parameter list.
pub fn write_input_schema(w: &mut Writer<'_>, params: &[Param]) {
    w.raw(protocol::OBJECT_SCHEMA_OPEN);
    for (i, p) in params.iter().enumerate() {
        if i > 0 {
            w.raw(b",");
        }
        w.key(p.name);
        p.write_schema(w);
    }
    w.raw(b"}");
    let mut required = params.iter().filter(|p| p.is_required()).peekable();
    if required.peek().is_some() {
        write_strings(w, protocol::REQUIRED_OPEN, required.map(|p| p.name));
    }
    w.raw(protocol::NO_ADDITIONAL_PROPERTIES_END);
}

/// `true` when `text` is a JSON object whose `type` is `"object"` (a hand-written `inputSchema`).
pub fn is_object_schema(text: &str) -> bool {
    let Ok(v) = Json::parse(text.as_bytes(), DEFAULT_MAX_DEPTH) else {
        return false;
    };
    v.members().is_some_and(|mut m| {
        m.any(|(k, v)| k.eq_str("type") && v.as_str().is_some_and(|t| t.eq_str("object")))
    })
}

/// `true` when `text` is a JSON object (used to check a declared `outputSchema`).
pub fn is_json_object(text: &str) -> bool {
    Json::parse(text.as_bytes(), DEFAULT_MAX_DEPTH).is_ok_and(|v| v.members().is_some())
}

/// The number of characters in `s`: its bytes that do not continue a UTF-8 sequence. (What
/// `s.chars().count()` answers, without `core`'s word-at-a-time counter: some 400 bytes of
/// flash, for strings that are a few dozen bytes long.)
pub(crate) fn char_count(s: &str) -> usize {
    s.bytes().filter(|&b| (b as i8) >= -0x40).count()
}

#[cfg(test)]
mod test {
    use super::*;

    fn schema(params: &[Param]) -> serde_json::Value {
        crate::test_support::written_json(2048, |w| write_input_schema(w, params))
    }

    #[test]
    fn emits_every_constraint() {
        let s = schema(&[
            Param::integer("volume", "Volume").range(0, 100),
            Param::string("theme", "Theme")
                .one_of(&["light", "dark"])
                .default_str("light"),
            Param::string("label", "Label").length(1, 8).optional(),
            #[cfg(feature = "float")]
            Param::number("gain", "Gain")
                .range_f64(-1.5, 1.5)
                .default_f64(0.0),
            Param::boolean("on", "On"),
            Param::integer("any", "Any").optional(),
        ]);
        let expected = serde_json::json!({
            "type": "object",
            "properties": {
                "volume": {"type": "integer", "description": "Volume", "minimum": 0, "maximum": 100},
                "theme": {"type": "string", "description": "Theme", "enum": ["light", "dark"], "default": "light"},
                "label": {"type": "string", "description": "Label", "minLength": 1, "maxLength": 8},
                "on": {"type": "boolean", "description": "On"},
                "any": {"type": "integer", "description": "Any", "minimum": i64::MIN, "maximum": i64::MAX},
            },
            "required": ["volume", "on"],
            "additionalProperties": false,
        });
        // Number parameters exist with feature `float` only.
        #[cfg(feature = "float")]
        let expected = {
            let mut expected = expected;
            expected["properties"]["gain"] = serde_json::json!(
                {"type": "number", "description": "Gain", "minimum": -1.5, "maximum": 1.5, "default": 0}
            );
            expected
        };
        assert_eq!(s, expected);
        assert_eq!(
            schema(&[]),
            serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
    }

    #[test]
    fn spec_problems_are_caught() {
        let cases = [
            (Param::integer("", "x"), ParamProblem::BadName),
            (Param::integer("a b", "x"), ParamProblem::BadName),
            (
                Param::string("s", "x").range(0, 1),
                ParamProblem::ConstraintForOtherType,
            ),
            (
                Param::integer("i", "x").one_of(&["a"]),
                ParamProblem::ConstraintForOtherType,
            ),
            (
                Param::boolean("b", "x").length(0, 1),
                ParamProblem::ConstraintForOtherType,
            ),
            #[cfg(feature = "float")]
            (
                Param::number("n", "x").min(0),
                ParamProblem::ConstraintForOtherType,
            ),
            (Param::integer("i", "x").range(5, 4), ParamProblem::BadRange),
            #[cfg(feature = "float")]
            (
                Param::number("n", "x").range_f64(f64::NAN, 1.0),
                ParamProblem::BadRange,
            ),
            (Param::string("s", "x").length(3, 2), ParamProblem::BadRange),
            (
                Param::string("s", "x").one_of(&["a", "a"]),
                ParamProblem::BadChoices,
            ),
            (
                Param::string("s", "x").one_of(&["abc"]).length(0, 2),
                ParamProblem::BadChoices,
            ),
            (
                Param::integer("i", "x").default_bool(true),
                ParamProblem::DefaultWrongType,
            ),
            (
                Param::integer("i", "x").range(0, 100).default_int(101),
                ParamProblem::DefaultInvalid,
            ),
            (
                Param::string("s", "x").one_of(&["a"]).default_str("b"),
                ParamProblem::DefaultInvalid,
            ),
            #[cfg(feature = "float")]
            (
                Param::number("n", "x").default_f64(f64::INFINITY),
                ParamProblem::DefaultInvalid,
            ),
        ];
        for (p, problem) in cases {
            assert_eq!(p.check(), Err(problem), "{p:?}");
        }
        assert_eq!(
            check_params(&[Param::boolean("a", "x"), Param::boolean("a", "y")]),
            Err(("a", ParamProblem::DuplicateName))
        );
        assert!(
            check_params(&[Param::integer("volume", "v").range(0, 100).default_int(100)]).is_ok()
        );
    }

    #[test]
    fn char_count_is_chars_count() {
        for s in [
            "",
            "dark",
            "é",
            "日本語",
            "a\u{1F600}b",
            "\u{7F}\u{80}\u{7FF}\u{800}\u{FFFF}\u{10000}",
        ] {
            assert_eq!(char_count(s), s.chars().count(), "{s:?}");
        }
    }
}
