//! `minimum` and `maximum`, inclusive: of an integer ([`IntRange`]) and of a number
//! ([`NumRange`], feature `float`).
//!
//! Both are emitted for every parameter of their type, narrowed or not: an integer states the
//! `i64` bounds the validator enforces, a number the finite `f64` bounds, so that the schema a
//! client sees is the one enforced (a value beyond them is refused by the `type` keyword, with
//! the same [`ArgErrorKind::OutOfRange`]).

use core::fmt;

use super::{Keyword, ParamType};
use crate::schema::message::{Expectation, Sink};
use crate::schema::value::{ArgErrorKind, Value};
use crate::schema::{Param, ParamProblem};
use crate::wire::protocol;
use crate::wire::writer::Writer;
#[cfg(feature = "float")]
use crate::wire::writer::with_number;

/// An integer's bounds, inclusive (the `i64` bounds until narrowed).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct IntRange {
    min: i64,
    max: i64,
    /// A builder set a bound.
    set: bool,
}

impl Keyword for IntRange {
    const NONE: Self = IntRange {
        min: i64::MIN,
        max: i64::MAX,
        set: false,
    };
    const TYPE: Option<ParamType> = Some(ParamType::Integer);

    fn check_spec(&self, _: &Param) -> Result<(), ParamProblem> {
        if self.min > self.max {
            return Err(ParamProblem::BadRange);
        }
        Ok(())
    }

    #[inline]
    fn emit(&self, w: &mut Writer<'_>) {
        w.raw(protocol::MINIMUM);
        w.int(self.min);
        w.raw(protocol::MAXIMUM);
        w.int(self.max);
    }

    #[inline(always)]
    fn check(&self, v: &Value<'_>) -> Result<(), ArgErrorKind> {
        match *v {
            Value::Int(n) if !(self.min..=self.max).contains(&n) => Err(ArgErrorKind::OutOfRange),
            _ => Ok(()),
        }
    }

    fn describe<S: Sink>(&self, e: &mut Expectation<'_, S>) -> fmt::Result {
        let (min, max) = (self.min, self.max);
        e.bounds(
            ["an integer from ", " from "],
            (min != i64::MIN).then_some(min),
            (max != i64::MAX).then_some(max),
            "",
        )
    }
}

/// A number's bounds, inclusive (the finite `f64` bounds until narrowed); never set without
/// feature `float`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct NumRange {
    #[cfg(feature = "float")]
    min: f64,
    #[cfg(feature = "float")]
    max: f64,
    /// A builder set the bounds.
    set: bool,
}

impl Keyword for NumRange {
    const NONE: Self = NumRange {
        #[cfg(feature = "float")]
        min: f64::MIN,
        #[cfg(feature = "float")]
        max: f64::MAX,
        set: false,
    };
    #[cfg(feature = "float")]
    const TYPE: Option<ParamType> = Some(ParamType::Number);
    /// (Without numbers it is never set, and says nothing on any type.)
    #[cfg(not(feature = "float"))]
    const TYPE: Option<ParamType> = None;

    #[cfg(feature = "float")]
    fn check_spec(&self, _: &Param) -> Result<(), ParamProblem> {
        let (min, max) = (self.min, self.max);
        if !(min.is_finite() && max.is_finite() && min <= max) {
            return Err(ParamProblem::BadRange);
        }
        Ok(())
    }

    #[inline]
    fn emit(&self, w: &mut Writer<'_>) {
        #[cfg(feature = "float")]
        {
            w.raw(protocol::MINIMUM);
            w.number(self.min);
            w.raw(protocol::MAXIMUM);
            w.number(self.max);
        }
        #[cfg(not(feature = "float"))]
        let _ = w;
    }

    #[inline(always)]
    fn check(&self, v: &Value<'_>) -> Result<(), ArgErrorKind> {
        #[cfg(feature = "float")]
        if let Value::Number(n) = *v {
            // (Also refuses what is not finite: a default.)
            if !(self.min <= n && n <= self.max) {
                return Err(ArgErrorKind::OutOfRange);
            }
        }
        #[cfg(not(feature = "float"))]
        let _ = v;
        Ok(())
    }

    #[cfg(feature = "float")]
    fn describe<S: Sink>(&self, e: &mut Expectation<'_, S>) -> fmt::Result {
        let (min, max) = (self.min, self.max);
        // Written as the writer writes numbers: digits, `.`, `-`, `e` (plain).
        let number = |f: &mut S, n: f64| with_number(n, |s| f.plain(s));
        match (min != f64::MIN, max != f64::MAX) {
            (true, true) => {
                let f = e.qualify(Some("a number from "), " from ")?;
                number(f, min)?;
                f.plain(" to ")?;
                number(f, max)
            }
            (true, false) => number(e.qualify(None, " of at least ")?, min),
            (false, true) => number(e.qualify(None, " of at most ")?, max),
            (false, false) => Ok(()),
        }
    }
}

impl Param {
    /// Integer: inclusive bounds.
    pub const fn range(mut self, min: i64, max: i64) -> Self {
        self.keywords.int_range = IntRange {
            min,
            max,
            set: true,
        };
        self
    }

    /// Integer: inclusive lower bound.
    pub const fn min(mut self, min: i64) -> Self {
        self.keywords.int_range.min = min;
        self.keywords.int_range.set = true;
        self
    }

    /// Integer: inclusive upper bound.
    pub const fn max(mut self, max: i64) -> Self {
        self.keywords.int_range.max = max;
        self.keywords.int_range.set = true;
        self
    }

    /// Number: inclusive bounds. Feature `float`.
    #[cfg(feature = "float")]
    pub const fn range_f64(mut self, min: f64, max: f64) -> Self {
        self.keywords.num_range = NumRange {
            min,
            max,
            set: true,
        };
        self
    }

    /// Effective inclusive integer bounds (the `i64` range when not narrowed).
    pub const fn int_bounds(&self) -> (i64, i64) {
        (self.keywords.int_range.min, self.keywords.int_range.max)
    }

    /// Effective inclusive number bounds (the finite `f64` range when not narrowed). Feature
    /// `float`.
    #[cfg(feature = "float")]
    pub const fn num_bounds(&self) -> (f64, f64) {
        (self.keywords.num_range.min, self.keywords.num_range.max)
    }
}

#[cfg(test)]
impl super::test::Samples for IntRange {
    fn set(p: Param) -> Param {
        p.max(1)
    }

    fn specs() -> Vec<Param> {
        let p = || Param::integer("x", "X");
        vec![
            p(),
            p().range(0, 100),
            p().range(-7, -7),
            p().min(-5),
            p().max(7),
            p().range(i64::MIN, i64::MAX),
        ]
    }

    fn values() -> &'static [&'static str] {
        &[
            "0",
            "-1",
            "100",
            "101",
            "-7",
            "-8",
            "7",
            "8",
            "-5",
            "-6",
            "50.0",
            "5e1",
            "-9223372036854775808",
            "9223372036854775807",
            "1e400",
            "\"5\"",
        ]
    }

    fn refused() -> Vec<(Param, ParamProblem)> {
        vec![(Param::integer("x", "X").range(5, 4), ParamProblem::BadRange)]
    }
}

#[cfg(test)]
impl super::test::Samples for NumRange {
    fn set(p: Param) -> Param {
        #[cfg(feature = "float")]
        return p.range_f64(0.0, 1.0);
        #[cfg(not(feature = "float"))]
        return p;
    }

    fn specs() -> Vec<Param> {
        #[cfg(feature = "float")]
        return {
            let p = || Param::number("x", "X");
            vec![
                p(),
                p().range_f64(-1.5, 1.5),
                p().range_f64(0.0, 0.0),
                p().range_f64(-1e300, 1e-300),
            ]
        };
        #[cfg(not(feature = "float"))]
        return Vec::new();
    }

    fn values() -> &'static [&'static str] {
        &[
            "0", "-0", "1.5", "1.6", "-1.5", "-1.51", "1e-300", "-1e300", "-2e300", "1", "1e400",
            "true",
        ]
    }

    fn refused() -> Vec<(Param, ParamProblem)> {
        #[cfg(feature = "float")]
        return vec![
            (
                Param::number("x", "X").range_f64(f64::NAN, 1.0),
                ParamProblem::BadRange,
            ),
            (
                Param::number("x", "X").range_f64(1.0, -1.0),
                ParamProblem::BadRange,
            ),
            (
                Param::number("x", "X").range_f64(0.0, f64::INFINITY),
                ParamProblem::BadRange,
            ),
        ];
        #[cfg(not(feature = "float"))]
        return Vec::new();
    }
}
