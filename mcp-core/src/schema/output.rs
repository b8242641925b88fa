//! Output schemas written from specs: the `outputSchema` a tool lists, built in a `const` like its
//! parameters instead of hand-written JSON text (which nothing checks until a client rejects a
//! result that does not conform).
//!
//! ```
//! use mcp_core::schema::Field;
//!
//! const STATUS: &[Field] = &[
//!     Field::object("audio_speaker", &[Field::integer("volume").range(0, 100)]),
//!     Field::object("relay", &[Field::boolean("on")]).optional(),
//!     Field::string("theme").one_of(&["light", "dark"]).describe("The screen theme"),
//! ];
//! let mut buf = [0u8; 512];
//! let mut w = mcp_core::wire::Writer::new(&mut buf);
//! mcp_core::schema::write_output_schema(&mut w, STATUS);
//! assert_eq!(
//!     core::str::from_utf8(w.written().unwrap()).unwrap(),
//!     concat!(
//!         r#"{"type":"object","properties":{"#,
//!         r#""audio_speaker":{"type":"object","properties":{"volume":{"type":"integer","minimum":0,"maximum":100}},"required":["volume"]},"#,
//!         r#""relay":{"type":"object","properties":{"on":{"type":"boolean"}},"required":["on"]},"#,
//!         r#""theme":{"type":"string","enum":["light","dark"],"description":"The screen theme"}},"#,
//!         r#""required":["audio_speaker","theme"]}"#
//!     )
//! );
//! ```

use super::{write_properties, write_strings};
use crate::wire::protocol::{self, join};
use crate::wire::writer::Writer;

/// The JSON type of an output field.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Boolean,
    Integer { min: Option<i64>, max: Option<i64> },
    Number,
    String { choices: &'static [&'static str] },
    Object(&'static [Field]),
}

/// One member of a structured result: a name, a JSON type with its constraints, whether it is
/// always present.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    name: &'static str,
    description: Option<&'static str>,
    kind: Kind,
    required: bool,
}

impl Field {
    const fn of(name: &'static str, kind: Kind) -> Self {
        Field {
            name,
            description: None,
            kind,
            required: true,
        }
    }

    /// A boolean member.
    pub const fn boolean(name: &'static str) -> Self {
        Self::of(name, Kind::Boolean)
    }

    /// An integer member.
    pub const fn integer(name: &'static str) -> Self {
        Self::of(
            name,
            Kind::Integer {
                min: None,
                max: None,
            },
        )
    }

    /// A number member.
    pub const fn number(name: &'static str) -> Self {
        Self::of(name, Kind::Number)
    }

    /// A string member.
    pub const fn string(name: &'static str) -> Self {
        Self::of(name, Kind::String { choices: &[] })
    }

    /// An object member with these members.
    pub const fn object(name: &'static str, fields: &'static [Field]) -> Self {
        Self::of(name, Kind::Object(fields))
    }

    /// Bounds an integer member (ignored on other types).
    pub const fn range(mut self, min: i64, max: i64) -> Self {
        if let Kind::Integer { .. } = self.kind {
            self.kind = Kind::Integer {
                min: Some(min),
                max: Some(max),
            };
        }
        self
    }

    /// Restricts a string member to these values (ignored on other types).
    pub const fn one_of(mut self, choices: &'static [&'static str]) -> Self {
        if let Kind::String { .. } = self.kind {
            self.kind = Kind::String { choices };
        }
        self
    }

    /// The member may be absent.
    pub const fn optional(mut self) -> Self {
        self.required = false;
        self
    }

    /// A description for the client.
    pub const fn describe(mut self, description: &'static str) -> Self {
        self.description = Some(description);
        self
    }

    /// The member's name.
    pub const fn name(&self) -> &'static str {
        self.name
    }

    fn write_schema(&self, w: &mut Writer<'_>) {
        match self.kind {
            Kind::Boolean => w.raw(join!(protocol::TYPE_OPEN, br#""boolean""#)),
            Kind::Integer { min, max } => {
                w.raw(join!(protocol::TYPE_OPEN, br#""integer""#));
                // Only the bounds set: an output schema states what the handler promises.
                for (member, bound) in [(protocol::MINIMUM, min), (protocol::MAXIMUM, max)] {
                    if let Some(v) = bound {
                        w.raw(member);
                        w.int(v);
                    }
                }
            }
            Kind::Number => w.raw(join!(protocol::TYPE_OPEN, br#""number""#)),
            Kind::String { choices } => {
                w.raw(join!(protocol::TYPE_OPEN, br#""string""#));
                if !choices.is_empty() {
                    write_strings(w, protocol::ENUM_OPEN, choices.iter().copied());
                }
            }
            Kind::Object(fields) => {
                w.raw(b"{");
                write_members(w, fields);
            }
        }
        if let Some(d) = self.description {
            w.raw(protocol::DESCRIPTION);
            w.string(d);
        }
        w.raw(b"}");
    }
}

/// `"type":"object","properties":{…}` and `"required":[…]`, without the braces.
fn write_members(w: &mut Writer<'_>, fields: &[Field]) {
    write_properties(
        w,
        protocol::OBJECT_PROPERTIES_OPEN,
        fields,
        |f| (f.name, f.required),
        Field::write_schema,
    );
}

/// Writes the `outputSchema` object for a structured result with these members. Extra members
/// are allowed (a board may report more parts than the schema names).
pub fn write_output_schema(w: &mut Writer<'_>, fields: &[Field]) {
    w.raw(b"{");
    write_members(w, fields);
    w.raw(b"}");
}

/// `true` when no two members of an object (at any depth) share a name.
pub(crate) fn names_are_unique(fields: &[Field]) -> bool {
    fields.iter().enumerate().all(|(i, f)| {
        !fields.iter().take(i).any(|g| g.name == f.name)
            && match f.kind {
                Kind::Object(inner) => names_are_unique(inner),
                _ => true,
            }
    })
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn every_kind_and_constraint_is_written() {
        const F: &[Field] = &[
            Field::boolean("b").optional(),
            Field::integer("i").range(-5, 5),
            Field::number("n").describe("a \"number\""),
            Field::string("s"),
            Field::object("o", &[]),
        ];
        assert_eq!(
            crate::test_support::written_json(1024, |w| write_output_schema(w, F)),
            serde_json::json!({"type":"object","properties":{
                "b":{"type":"boolean"},
                "i":{"type":"integer","minimum":-5,"maximum":5},
                "n":{"type":"number","description":"a \"number\""},
                "s":{"type":"string"},
                "o":{"type":"object","properties":{}}},
                "required":["i","n","s","o"]})
        );
        // Constraints of another type are ignored, not misapplied.
        assert_eq!(Field::boolean("x").range(0, 1), Field::boolean("x"));
        assert_eq!(Field::integer("x").one_of(&["a"]), Field::integer("x"));
    }

    #[test]
    fn duplicate_names_are_found_at_any_depth() {
        assert!(names_are_unique(&[
            Field::boolean("a"),
            Field::boolean("b")
        ]));
        assert!(!names_are_unique(&[
            Field::boolean("a"),
            Field::integer("a")
        ]));
        const INNER: &[Field] = &[Field::boolean("x"), Field::boolean("x")];
        assert!(!names_are_unique(&[Field::object("o", INNER)]));
    }
}
