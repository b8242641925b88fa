//! `minLength` and `maxLength`: a string's length in characters (Unicode scalar values, as JSON
//! Schema counts them), inclusive.

use core::fmt;

use super::{Keyword, ParamType};
use crate::schema::message::{Expectation, Sink};
use crate::schema::value::{ArgErrorKind, Value};
use crate::schema::{Param, ParamProblem};
use crate::wire::json::Json;
use crate::wire::protocol;
use crate::wire::writer::Writer;

/// A string's length bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Length {
    min: Option<u32>,
    max: Option<u32>,
}

impl Length {
    /// The effective bounds.
    fn bounds(&self) -> (usize, usize) {
        (
            self.min.map_or(0, |v| v as usize),
            self.max.map_or(usize::MAX, |v| v as usize),
        )
    }
}

impl Keyword for Length {
    const NONE: Self = Length {
        min: None,
        max: None,
    };
    const TYPE: Option<ParamType> = Some(ParamType::String);

    fn check_spec(&self, _: &Param) -> Result<(), ParamProblem> {
        let (min, max) = self.bounds();
        if min > max {
            return Err(ParamProblem::BadRange);
        }
        Ok(())
    }

    #[inline]
    fn emit(&self, w: &mut Writer<'_>) {
        if let Some(min) = self.min {
            w.raw(protocol::MIN_LENGTH);
            w.uint(u64::from(min));
        }
        if let Some(max) = self.max {
            w.raw(protocol::MAX_LENGTH);
            w.uint(u64::from(max));
        }
    }

    #[inline(always)]
    fn check(&self, v: &Value<'_>) -> Result<(), ArgErrorKind> {
        match v {
            Value::Str(text) if self.is_set() => {
                let (min, max) = self.bounds();
                if text.chars_within(min, max) {
                    Ok(())
                } else {
                    Err(ArgErrorKind::BadLength)
                }
            }
            _ => Ok(()),
        }
    }

    fn describe<S: Sink>(&self, e: &mut Expectation<'_, S>) -> fmt::Result {
        e.bounds(
            ["a string of ", " of "],
            self.min.filter(|&v| v != 0).map(i64::from),
            self.max.map(i64::from),
            " characters",
        )
    }

    #[inline(always)]
    fn got<S: Sink>(&self, f: &mut S, kind: ArgErrorKind, v: Json<'_>) -> Option<fmt::Result> {
        if kind != ArgErrorKind::BadLength {
            return None;
        }
        let n = v.as_str().map_or(0, |s| s.char_count());
        Some((|| {
            f.plain(", got ")?;
            f.int(i64::try_from(n).unwrap_or(i64::MAX))?;
            f.plain(" characters")
        })())
    }
}

impl Param {
    /// String: length bounds in Unicode characters, inclusive.
    pub const fn length(mut self, min: u32, max: u32) -> Self {
        self.keywords.length = Length {
            min: Some(min),
            max: Some(max),
        };
        self
    }

    /// Effective inclusive string length bounds, in characters.
    pub fn len_bounds(&self) -> (usize, usize) {
        self.keywords.length.bounds()
    }
}

#[cfg(test)]
impl super::test::Samples for Length {
    fn set(p: Param) -> Param {
        p.length(0, 1)
    }

    fn specs() -> Vec<Param> {
        let p = || Param::string("x", "X");
        vec![
            p(),
            p().length(1, 4),
            p().length(0, 0),
            p().length(2, 2),
            p().length(3, 9),
            p().length(0, 256),
        ]
    }

    fn values() -> &'static [&'static str] {
        &[
            r#""""#,
            r#""a""#,
            r#""ab""#,
            r#""abcd""#,
            r#""abcde""#,
            r#""\u00e9""#,
            r#""\u00e9\u00e9\u00e9\u00e9\u00e9""#,
            r#""\ud83d\ude00\ud83d\ude00""#,
            r#""😀😀😀""#,
            r#""你\n好""#,
            r#""été""#,
            "5",
        ]
    }

    fn refused() -> Vec<(Param, ParamProblem)> {
        vec![(Param::string("x", "X").length(3, 2), ParamProblem::BadRange)]
    }
}
