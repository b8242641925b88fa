//! [`J`]: the JSON tree the oracles reason about, built from serde_json without ever
//! deserializing a `serde_json::Value`.
//!
//! Why not `serde_json::Value`: serde's data model has no number or raw-value type, so serde_json
//! smuggles them through as one-member maps with a private key. With `arbitrary_precision` a
//! number reaches a visitor as `{"$serde_json::private::Number": "<digits>"}`, with `raw_value` a
//! raw value as `{"$serde_json::private::RawValue": "<text>"}`, and `Value`'s visitor must
//! recognise those keys in *every* map it is given, including real objects of the input. An
//! input object whose first key is one of them (spelled plainly or with `\u` escapes) became a
//! number, another value, or a deserialization error in the oracle, while the engine rightly
//! saw an object with an unknown key: the oracles disagreed with a correct engine. Any
//! visitor-based tree would have the same problem, since a number and such an
//! object reach a visitor in the same form.
//!
//! How [`J`] avoids that, for every input (no input is skipped or special-cased):
//!
//! - serde_json only ever deserializes four types here, none of which classifies map keys:
//!   `Box<RawValue>` (its bytes are captured by the parser itself, `deserialize_raw_value`),
//!   [`Entries`](crate::Entries) (an object: keys as plain `String`s, values as `Box<RawValue>`),
//!   `Vec<Box<RawValue>>` (an array) and `String` (a string token, escapes decoded and checked).
//! - The kind of each value is decided by the first byte of its exact text (`{`, `[`, `"`,
//!   `t`/`f`/`n`, or a number), never by what a visitor was handed; objects and arrays are
//!   split into member texts and built recursively.
//! - Numbers stay their exact token ([`J::Num`]), which is all `arbitrary_precision` was for;
//!   that feature is therefore off (fuzz/Cargo.toml), and `$serde_json::private::Number` means
//!   nothing to serde_json here. `raw_value` stays on: it is what gives exact member text (ids
//!   echoed byte for byte), and `Box<RawValue>` parsed from text never looks at keys.
//!
//! Validity is serde_json's: `Box<RawValue>` checks the grammar (numbers of any size, as with
//! `arbitrary_precision` before), the `String` decoding of every string and key checks escapes
//! and refuses lone surrogates, as `Value` did.

use core::fmt;
use core::ops::Index;

use serde_json::value::RawValue;

/// serde_json's own nesting limit for `Value`, which the oracles used before [`J`].
pub const SERDE_DEPTH: usize = 128;

/// A JSON value as the oracles see it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum J {
    Null,
    Bool(bool),
    /// A number, as its exact token (`1`, `-0`, `1.50`, `1e400`).
    Num(String),
    /// A string, escapes decoded.
    Str(String),
    Arr(Vec<J>),
    /// Members in document order, duplicates kept.
    Obj(Vec<(String, J)>),
}

static NULL: J = J::Null;

impl J {
    /// `text` as JSON, when serde_json accepts it and it nests at most [`SERDE_DEPTH`] levels.
    pub fn parse(text: &[u8]) -> Option<J> {
        let raw: Box<RawValue> = serde_json::from_slice(text).ok()?;
        if crate::depth(raw.get().as_bytes()) > SERDE_DEPTH {
            return None;
        }
        J::from_raw(raw.get())
    }

    /// [`J::parse`] of a text known to be one JSON value.
    pub fn parse_str(text: &str) -> Option<J> {
        J::parse(text.as_bytes())
    }

    /// One value's exact text (no surrounding whitespace), as serde_json's `RawValue` gives it.
    fn from_raw(raw: &str) -> Option<J> {
        Some(match raw.as_bytes().first()? {
            b'{' => J::Obj(
                serde_json::from_str::<crate::Entries>(raw)
                    .ok()?
                    .0
                    .into_iter()
                    .map(|(k, v)| Some((k, J::from_raw(v.get())?)))
                    .collect::<Option<_>>()?,
            ),
            b'[' => J::Arr(
                serde_json::from_str::<Vec<Box<RawValue>>>(raw)
                    .ok()?
                    .iter()
                    .map(|v| J::from_raw(v.get()))
                    .collect::<Option<_>>()?,
            ),
            b'"' => J::Str(serde_json::from_str::<String>(raw).ok()?),
            _ => match raw {
                "true" => J::Bool(true),
                "false" => J::Bool(false),
                "null" => J::Null,
                // RawValue checked the grammar: anything else is a number token.
                _ => J::Num(raw.to_string()),
            },
        })
    }

    /// The value of member `key` of an object; the last one when repeated (as serde_json's map).
    pub fn get(&self, key: &str) -> Option<&J> {
        match self {
            J::Obj(m) => m.iter().rev().find(|(k, _)| k == key).map(|(_, v)| v),
            _ => None,
        }
    }

    pub fn as_str(&self) -> Option<&str> {
        match self {
            J::Str(s) => Some(s),
            _ => None,
        }
    }

    pub fn as_bool(&self) -> Option<bool> {
        match self {
            J::Bool(b) => Some(*b),
            _ => None,
        }
    }

    /// The number when its token is a plain integer that fits `i64` (as serde_json's
    /// `as_i64` with `arbitrary_precision`: `1.0` and `1e2` are not).
    pub fn as_i64(&self) -> Option<i64> {
        match self {
            J::Num(t) => t.parse().ok(),
            _ => None,
        }
    }

    /// The members, for an object.
    pub fn as_object(&self) -> Option<&[(String, J)]> {
        match self {
            J::Obj(m) => Some(m),
            _ => None,
        }
    }

    pub fn is_object(&self) -> bool {
        matches!(self, J::Obj(_))
    }

    pub fn is_array(&self) -> bool {
        matches!(self, J::Arr(_))
    }

    pub fn is_number(&self) -> bool {
        matches!(self, J::Num(_))
    }

    pub fn is_boolean(&self) -> bool {
        matches!(self, J::Bool(_))
    }
}

/// `j["key"]`: the member (the last one when repeated), or `null` (as serde_json's `Value`).
impl Index<&str> for J {
    type Output = J;
    fn index(&self, key: &str) -> &J {
        self.get(key).unwrap_or(&NULL)
    }
}

/// Compact JSON (for messages).
impl fmt::Display for J {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let quoted = |s: &str| serde_json::to_string(s).expect("a string serializes");
        match self {
            J::Null => f.write_str("null"),
            J::Bool(b) => write!(f, "{b}"),
            J::Num(t) => f.write_str(t),
            J::Str(s) => f.write_str(&quoted(s)),
            J::Arr(a) => {
                f.write_str("[")?;
                for (i, v) in a.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{v}")?;
                }
                f.write_str("]")
            }
            J::Obj(m) => {
                f.write_str("{")?;
                for (i, (k, v)) in m.iter().enumerate() {
                    if i > 0 {
                        f.write_str(",")?;
                    }
                    write!(f, "{}:{v}", quoted(k))?;
                }
                f.write_str("}")
            }
        }
    }
}

/// A raw JSON text decoded as a string token (`None` for any other value).
pub fn json_str(raw: &str) -> Option<String> {
    J::parse_str(raw)?.as_str().map(str::to_string)
}

#[cfg(test)]
mod test {
    use super::*;

    const NUMBER: &str = "$serde_json::private::Number";
    const RAW: &str = "$serde_json::private::RawValue";

    fn obj(members: &[(&str, J)]) -> J {
        J::Obj(
            members
                .iter()
                .map(|(k, v)| (k.to_string(), v.clone()))
                .collect(),
        )
    }

    fn num(t: &str) -> J {
        J::Num(t.to_string())
    }

    fn s(t: &str) -> J {
        J::Str(t.to_string())
    }

    #[test]
    fn magic_keys_are_plain_keys() {
        for key in [NUMBER, RAW] {
            let esc = format!("\\u0024{}", &key[1..]);
            for spelled in [key.to_string(), esc] {
                let one = |v: &str| J::parse_str(&format!("{{\"{spelled}\":{v}}}"));
                assert_eq!(one("\"1\""), Some(obj(&[(key, s("1"))])));
                assert_eq!(one("1"), Some(obj(&[(key, num("1"))])));
                assert_eq!(one("{}"), Some(obj(&[(key, obj(&[]))])));
                assert_eq!(one("\"x\""), Some(obj(&[(key, s("x"))])));
                assert_eq!(
                    J::parse_str(&format!("{{\"{spelled}\":\"1\",\"{key}\":\"2\"}}")),
                    Some(obj(&[(key, s("1")), (key, s("2"))]))
                );
            }
            let nested = format!("[{{\"{key}\":{{\"{key}\":\"[1]\"}}}}]");
            assert_eq!(
                J::parse_str(&nested),
                Some(J::Arr(vec![obj(&[(key, obj(&[(key, s("[1]"))]))])]))
            );
        }
    }

    #[test]
    fn numbers_stay_exact() {
        for t in [
            "0",
            "-0",
            "1.50",
            "1e400",
            "-1E-400",
            "123456789012345678901234567890",
        ] {
            assert_eq!(J::parse_str(t), Some(num(t)));
            assert_eq!(
                J::parse_str(&format!(" [{t}] ")),
                Some(J::Arr(vec![num(t)]))
            );
        }
        assert_eq!(num("-9223372036854775808").as_i64(), Some(i64::MIN));
        assert_eq!(num("1.0").as_i64(), None);
        assert_eq!(num("1e2").as_i64(), None);
    }

    #[test]
    fn validity_is_serde_jsons() {
        for bad in [
            "",
            "01",
            "1.",
            "[1,]",
            "{\"a\"}",
            "\"\\ud800\"",
            "{\"\\udc00\":1}",
            "\"\t\"",
            "tru",
            "1 2",
            "{\"a\":1,}",
            "[\"\\x\"]",
            "NaN",
        ] {
            assert_eq!(J::parse_str(bad), None, "{bad:?}");
        }
        assert_eq!(J::parse(b"\"\xff\""), None);
        let deep = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(J::parse_str(&deep(SERDE_DEPTH)).is_some());
        assert_eq!(J::parse_str(&deep(SERDE_DEPTH + 1)), None);
        assert_eq!(
            J::parse_str(" {\"a\" : [true, false, null, \"\\u00e9\\ud83d\\ude00\"] } "),
            Some(obj(&[(
                "a",
                J::Arr(vec![
                    J::Bool(true),
                    J::Bool(false),
                    J::Null,
                    s("\u{e9}\u{1F600}")
                ])
            )]))
        );
    }

    #[test]
    fn display_round_trips() {
        let text = r#"{"a":[1,-0.5e3,"x\"\u0001"],"a":{},"$serde_json::private::Number":"1"}"#;
        let j = J::parse_str(text).unwrap();
        assert_eq!(J::parse_str(&j.to_string()), Some(j.clone()));
        assert_eq!(j["a"], obj(&[]));
        assert_eq!(j["missing"], J::Null);
    }
}
