//! `enum`: a string parameter's allowed values. A handler reads the value as the spec's own
//! string, or as its position in the list ([`Args::choice`](crate::Args::choice)).

use core::fmt;

use super::{Keyword, ParamType};
use crate::schema::message::{Sink, piece};
use crate::schema::value::{ArgErrorKind, Text, Value};
use crate::schema::{Param, ParamProblem, write_strings};
use crate::wire::protocol;
use crate::wire::writer::Writer;

/// A string's allowed values (empty: any string).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Choices(&'static [&'static str]);

impl Keyword for Choices {
    const NONE: Self = Choices(&[]);
    const TYPE: Option<ParamType> = Some(ParamType::String);

    /// Each choice is listed once and passes the parameter's other keywords (a length).
    fn check_spec(&self, p: &Param) -> Result<(), ParamProblem> {
        for (i, c) in self.0.iter().enumerate() {
            if self.0.iter().take(i).any(|d| d == c)
                || p.keywords.check(&Value::Str(Text::spec(c))).is_err()
            {
                return Err(ParamProblem::BadChoices);
            }
        }
        Ok(())
    }

    #[inline]
    fn emit(&self, w: &mut Writer<'_>) {
        if self.is_set() {
            write_strings(w, protocol::ENUM_OPEN, self.0.iter().copied());
        }
    }

    #[inline(always)]
    fn check(&self, v: &Value<'_>) -> Result<(), ArgErrorKind> {
        match v {
            // (An empty list is no `enum`: any string.)
            Value::Str(text) if !self.0.is_empty() && !self.0.iter().any(|c| text.eq(c)) => {
                Err(ArgErrorKind::NotAChoice)
            }
            _ => Ok(()),
        }
    }

    /// "one of \"light\", \"dark\"".
    fn describe_whole<S: Sink>(&self, f: &mut S) -> Option<fmt::Result> {
        if !self.is_set() {
            return None;
        }
        Some((|| {
            f.plain("one of ")?;
            for (i, c) in self.0.iter().enumerate() {
                if i > 0 {
                    f.plain(", ")?;
                }
                f.piece(&piece!("\""))?;
                f.text(c)?;
                f.piece(&piece!("\""))?;
            }
            Ok(())
        })())
    }
}

impl Param {
    /// String: the value must be one of these.
    pub const fn one_of(mut self, choices: &'static [&'static str]) -> Self {
        self.keywords.choices = Choices(choices);
        self
    }

    /// String choices (empty when any string is allowed).
    pub const fn choices(&self) -> &'static [&'static str] {
        self.keywords.choices.0
    }
}

#[cfg(test)]
impl super::test::Samples for Choices {
    fn set(p: Param) -> Param {
        p.one_of(&["a"])
    }

    fn specs() -> Vec<Param> {
        let p = || Param::string("x", "X");
        vec![
            p().one_of(&["light", "dark"]),
            p().one_of(&["", "a\"b", "\\", "été", "😀"]),
            p().one_of(&["ab", "abc"]).length(2, 3),
        ]
    }

    fn values() -> &'static [&'static str] {
        &[
            r#""light""#,
            r#""Light""#,
            r#""d\u0061rk""#,
            r#""dark ""#,
            r#""""#,
            r#""a\"b""#,
            r#""\\""#,
            r#""\u00e9t\u00e9""#,
            r#""\ud83d\ude00""#,
            r#""abc""#,
            r#""abcd""#,
            "1",
        ]
    }

    fn refused() -> Vec<(Param, ParamProblem)> {
        vec![
            (
                Param::string("x", "X").one_of(&["a", "a"]),
                ParamProblem::BadChoices,
            ),
            (
                Param::string("x", "X").one_of(&["abc"]).length(0, 2),
                ParamProblem::BadChoices,
            ),
        ]
    }
}
