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
//!     Param::boolean("muted", "Mute the output").default_bool(false),
//! ];
//! assert_eq!(PARAMS[0].name(), "volume");
//! ```

mod keyword;
pub(crate) mod message;
mod output;
mod validate;
mod value;

pub use keyword::{Literal, ParamType};
pub(crate) use output::names_are_unique as output_names_are_unique;
pub use output::{Field, write_output_schema};
pub(crate) use validate::validate_into;
pub use validate::{AccessError, ArgError, Args, validate, validate_object};
pub use value::ArgErrorKind;

use crate::wire::json::{DEFAULT_MAX_DEPTH, Json};
use crate::wire::protocol;
use crate::wire::writer::Writer;
use keyword::Keywords;

/// The most parameters one tool may declare (the validator's typed view is a fixed array).
pub const MAX_PARAMS: usize = 16;

// The arguments of any call that can be valid are read from the checking pass's index.
const _: () = assert!(MAX_PARAMS <= crate::wire::frame::INDEXED_ARGUMENTS);

/// One tool parameter: name, description, type and constraints.
///
/// Build it in a `const` with the `const fn` builders. Constraints that do not apply to the type
/// (a `range` on a string, say) are not silently ignored: registration refuses the tool with
/// [`ParamProblem::ConstraintForOtherType`].
///
/// Each constraint is a keyword of the parameter's JSON Schema, declared, emitted, checked and
/// worded in one module of its own (`src/schema/keyword/`, where its builders are too).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Param {
    name: &'static str,
    description: &'static str,
    ty: ParamType,
    optional: bool,
    keywords: Keywords,
}

/// What is wrong with a parameter spec (a registration error).
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[cfg_attr(feature = "defmt", derive(defmt::Format))]
#[non_exhaustive]
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
    /// A constraint's own value is unusable: the minimum is above the maximum, or a bound is
    /// not finite.
    #[error("empty or non-finite range")]
    BadRange,
    /// A choice is listed twice, or breaks the parameter's other constraints (its length).
    #[error("choices must be distinct and meet the other constraints")]
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
            keywords: Keywords::NONE,
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

    /// A required string parameter. Feature `strings`.
    #[cfg(feature = "strings")]
    pub const fn string(name: &'static str, description: &'static str) -> Self {
        Self::new(ParamType::String, name, description)
    }

    /// The parameter may be absent (and has no default).
    pub const fn optional(mut self) -> Self {
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

    /// Checks the spec itself (run at registration).
    pub fn check(&self) -> Result<(), ParamProblem> {
        if !is_valid_param_name(self.name) {
            return Err(ParamProblem::BadName);
        }
        self.keywords.check_spec(self)
    }

    /// Writes this parameter's JSON Schema.
    #[inline]
    pub fn write_schema(&self, w: &mut Writer<'_>) {
        self.ty.emit(w);
        w.raw(protocol::DESCRIPTION);
        w.string(self.description);
        self.keywords.emit(self.ty, w);
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
    write_properties(
        w,
        protocol::OBJECT_SCHEMA_OPEN,
        params,
        |p| (p.name, p.is_required()),
        Param::write_schema,
    );
    w.raw(protocol::NO_ADDITIONAL_PROPERTIES_END);
}

/// `open` (up to inside `"properties":{`), each item's name and schema, `}`, and `"required"`
/// with the names `named` says are required (the parameters of an input schema, the fields of
/// an output schema).
#[inline(always)]
pub(crate) fn write_properties<T>(
    w: &mut Writer<'_>,
    open: &[u8],
    items: &[T],
    named: impl Fn(&T) -> (&'static str, bool),
    write_schema: impl Fn(&T, &mut Writer<'_>),
) {
    w.raw(open);
    for (i, item) in items.iter().enumerate() {
        if i > 0 {
            w.raw(b",");
        }
        w.key(named(item).0);
        write_schema(item, w);
    }
    w.raw(b"}");
    let mut required = items.iter().map(&named).filter(|n| n.1).peekable();
    if required.peek().is_some() {
        write_strings(w, protocol::REQUIRED_OPEN, required.map(|n| n.0));
    }
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

#[cfg(test)]
mod test {
    use super::*;

    fn schema(params: &[Param]) -> serde_json::Value {
        crate::test_support::written_json(2048, |w| write_input_schema(w, params))
    }

    #[test]
    fn emits_every_constraint() {
        let mut params = validate::test::PARAMS.to_vec();
        params.push(Param::integer("any", "Any").optional());
        let expected = serde_json::json!({
            "type": "object",
            "properties": {
                "volume": {"type": "integer", "description": "Volume", "minimum": 0, "maximum": 100},
                "on": {"type": "boolean", "description": "On", "default": false},
                "any": {"type": "integer", "description": "Any", "minimum": i64::MIN, "maximum": i64::MAX},
            },
            "required": ["volume"],
            "additionalProperties": false,
        });
        // String parameters exist with feature `strings` only.
        #[cfg(feature = "strings")]
        let expected = {
            let mut expected = expected;
            expected["properties"]["theme"] = serde_json::json!(
                {"type": "string", "description": "Theme", "enum": ["light", "dark"], "default": "light"}
            );
            expected["properties"]["label"] = serde_json::json!(
                {"type": "string", "description": "Label", "minLength": 1, "maxLength": 4}
            );
            expected
        };
        // Number parameters exist with feature `float` only.
        #[cfg(feature = "float")]
        let expected = {
            let mut expected = expected;
            expected["properties"]["gain"] = serde_json::json!(
                {"type": "number", "description": "Gain", "minimum": -1, "maximum": 1, "default": 0.5}
            );
            expected
        };
        assert_eq!(schema(&params), expected);
        assert_eq!(
            schema(&[]),
            serde_json::json!({"type": "object", "properties": {}, "additionalProperties": false})
        );
    }

    /// The problems of a spec as a whole; each keyword's own are its conformance test's
    /// (`keyword::test`).
    #[test]
    fn spec_problems_are_caught() {
        for p in [Param::integer("", "x"), Param::integer("a b", "x")] {
            assert_eq!(p.check(), Err(ParamProblem::BadName), "{p:?}");
        }
        assert_eq!(
            check_params(&[Param::boolean("a", "x"), Param::boolean("a", "y")]),
            Err(("a", ParamProblem::DuplicateName))
        );
        assert!(
            check_params(&[Param::integer("volume", "v").range(0, 100).default_int(100)]).is_ok()
        );
    }
}
