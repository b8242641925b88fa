//! `multipleOf`: an integer that is a multiple of a step (a volume in steps of 5, a motor
//! position in whole encoder counts of 4).

use core::fmt;

use super::{Keyword, ParamType};
use crate::schema::message::{Expectation, Sink};
use crate::schema::value::{ArgErrorKind, Value};
use crate::schema::{Param, ParamProblem};
use crate::wire::protocol;
use crate::wire::writer::Writer;

/// The step an integer must be a multiple of (0 until set).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct MultipleOf {
    step: u64,
    /// A builder set it (a step of 0 included: refused at registration).
    set: bool,
}

impl Keyword for MultipleOf {
    const NONE: Self = MultipleOf {
        step: 0,
        set: false,
    };
    const TYPE: Option<ParamType> = Some(ParamType::Integer);

    /// JSON Schema requires a step above 0.
    fn check_spec(&self, _: &Param) -> Result<(), ParamProblem> {
        if self.set && self.step == 0 {
            return Err(ParamProblem::BadRange);
        }
        Ok(())
    }

    #[inline]
    fn emit(&self, w: &mut Writer<'_>) {
        if self.set {
            w.raw(protocol::MULTIPLE_OF);
            w.uint(self.step);
        }
    }

    #[inline(always)]
    fn check(&self, v: &Value<'_>) -> Result<(), ArgErrorKind> {
        // Every integer is a multiple of 1 (and 0 is unset: only 0 would be a multiple).
        match *v {
            Value::Int(n) if self.step > 1 && n.unsigned_abs() % self.step != 0 => {
                Err(ArgErrorKind::NotAMultiple)
            }
            _ => Ok(()),
        }
    }

    /// "an integer multiple of 5", or after the bounds ", a multiple of 5".
    #[inline(always)]
    fn describe<S: Sink>(&self, e: &mut Expectation<'_, S>) -> fmt::Result {
        if self.step <= 1 {
            return Ok(());
        }
        describe_step(self.step, e)
    }
}

#[inline(never)]
fn describe_step<S: Sink>(step: u64, e: &mut Expectation<'_, S>) -> fmt::Result {
    let f = e.qualify(Some("an integer multiple of "), ", a multiple of ")?;
    f.int(i64::try_from(step).unwrap_or(i64::MAX))
}

impl Param {
    /// Integer: the value must be a multiple of `step` (JSON Schema `multipleOf`; a step of 0
    /// is refused at registration). With a range, the range's bounds need not be multiples:
    /// `range(1, 100).multiple_of(5)` admits 5 to 100.
    pub const fn multiple_of(mut self, step: u64) -> Self {
        self.keywords.multiple_of = MultipleOf { step, set: true };
        self
    }

    /// The step an integer must be a multiple of, if any.
    pub const fn step(&self) -> Option<u64> {
        let MultipleOf { step, set } = self.keywords.multiple_of;
        if set { Some(step) } else { None }
    }
}

#[cfg(test)]
impl super::test::Samples for MultipleOf {
    fn set(p: Param) -> Param {
        p.multiple_of(2)
    }

    fn specs() -> Vec<Param> {
        let p = || Param::integer("x", "X");
        vec![
            p().multiple_of(5),
            p().multiple_of(1),
            p().range(1, 100).multiple_of(5),
            p().multiple_of(1 << 40),
            p().multiple_of(u64::MAX),
            p().multiple_of(3).default_int(-9),
        ]
    }

    fn values() -> &'static [&'static str] {
        &[
            "0",
            "5",
            "-5",
            "7",
            "100",
            "105",
            "50.0",
            "5e1",
            "-9",
            // (Not 2^63 - 1: the reference reads it as the float 2^63, a multiple of 2^40.)
            "4611686018427387904",
            "-9223372036854775808",
            "\"5\"",
        ]
    }

    fn refused() -> Vec<(Param, ParamProblem)> {
        vec![
            (
                Param::integer("x", "X").multiple_of(0),
                ParamProblem::BadRange,
            ),
            (
                Param::integer("x", "X").multiple_of(5).default_int(7),
                ParamProblem::DefaultInvalid,
            ),
        ]
    }
}

#[cfg(test)]
mod test {
    use crate::schema::{Param, validate};
    use crate::wire::json::Json;

    #[test]
    fn messages_say_the_step() {
        let message = |p: Param, args: &str| {
            let args = Json::parse(args.as_bytes(), 8).unwrap();
            validate(&[p], Some(args)).unwrap_err().to_string()
        };
        let step = Param::integer("volume", "Volume").multiple_of(5);
        assert_eq!(
            message(step, r#"{"volume":7}"#),
            r#"Invalid argument "volume": expected an integer multiple of 5, got 7"#
        );
        assert_eq!(
            message(step.range(0, 100), r#"{"volume":7}"#),
            r#"Invalid argument "volume": expected an integer from 0 to 100, a multiple of 5, got 7"#
        );
        assert_eq!(
            message(step.range(0, 100), r#"{"volume":105}"#),
            r#"Invalid argument "volume": expected an integer from 0 to 100, a multiple of 5, got 105"#
        );
        assert_eq!(
            message(step.min(0), r#"{}"#),
            r#"Missing required argument "volume": expected an integer of at least 0, a multiple of 5"#
        );
        let args = Json::parse(br#"{"volume":-15}"#, 8).unwrap();
        assert_eq!(
            validate(&[step], Some(args)).unwrap().int("volume"),
            Ok(-15)
        );
    }
}
