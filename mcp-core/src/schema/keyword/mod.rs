//! The keywords of a parameter's schema, each in one place.
//!
//! A keyword is one unit ([`Keyword`]): it is declared (its field in [`Param`], its `const fn`
//! builder and getter), emitted (its members of the `inputSchema`), checked (against a value of
//! the parameter's type, and against the spec itself at registration) and worded (its part of
//! an argument error's message) by the same module, so the schema a client sees and the check
//! the engine runs cannot drift apart by an edit made in one place only.
//!
//! | module | keywords | applies to |
//! |---|---|---|
//! | [`ty`] | `type` — reads the JSON value the others check; always there | every parameter |
//! | [`range`] | `minimum`, `maximum` (always emitted: the type's own bounds when not narrowed) | integers, numbers |
//! | `choices` | `enum` | strings (feature `strings`) |
//! | `length` | `minLength`, `maxLength` | strings (feature `strings`) |
//! | [`multiple_of`] | `multipleOf` | integers |
//! | [`default`] | `default` (and with it, that the parameter is optional) | every parameter |
//!
//! # Adding a keyword
//!
//! Write a module here with the keyword's value type and `impl Keyword` for it, the builder and
//! getter as an `impl Param` block beside it, and its conformance samples; then declare the
//! module and name it once in the list at the bottom of this file (`field: module::Type,`),
//! which gives [`Param`] its field and calls the keyword wherever a parameter is registered,
//! emitted, checked or worded. Two one-line additions outside this folder may come with it: the
//! key's fragment in `wire::protocol` (where every key the engine writes is spelled once), and,
//! for a keyword that fails in a way no [`ArgErrorKind`] says yet, its kind (the enum is
//! `#[non_exhaustive]`). `multiple_of.rs` is the example: its commit adds that file, its two
//! lines here, `MULTIPLE_OF` and `ArgErrorKind::NotAMultiple`.
//!
//! Every keyword in the list is run by the conformance test
//! (`test::every_keyword_emits_what_it_checks`, with the samples the module gives): what its
//! emitted schema admits, by a reference JSON Schema validator, is what its check admits, its
//! refusals read the same as text and in the engine's JSON spelling, and the specs it must
//! refuse are refused with the problem it names.

use core::fmt;

use super::message::{Expectation, Sink};
use super::value::{ArgErrorKind, Value};
use super::{Param, ParamProblem};
use crate::wire::json::Json;
use crate::wire::writer::Writer;

pub use default::Literal;
pub use ty::ParamType;

/// One keyword of a parameter's schema (see the [module docs](self)). `Self` is its value in a
/// [`Param`]: [`NONE`](Self::NONE) until a builder sets it.
pub(crate) trait Keyword: Copy + PartialEq {
    /// Not set.
    const NONE: Self;

    /// The parameter type the keyword applies to (set on another, it is refused at registration
    /// with [`ParamProblem::ConstraintForOtherType`]); `None`: every type.
    const TYPE: Option<ParamType>;

    /// `true` for a parameter type the keyword applies to.
    #[inline(always)]
    fn applies(ty: ParamType) -> bool {
        Self::TYPE.is_none_or(|t| t == ty)
    }

    /// `true` when a builder set it.
    fn is_set(&self) -> bool {
        *self != Self::NONE
    }

    /// Registration: the keyword's own value is sound ([`ParamProblem::BadRange`], …); `p` is
    /// the whole spec, for keywords whose values must pass the others (`enum`, `default`).
    fn check_spec(&self, p: &Param) -> Result<(), ParamProblem> {
        let _ = p;
        Ok(())
    }

    /// Writes its members of the parameter's schema (`,"minimum":0,"maximum":100`), for a
    /// parameter it applies to; nothing when it has nothing to say.
    fn emit(&self, w: &mut Writer<'_>);

    /// Checks a value of the parameter's type: one the peer sent, a default, a choice.
    fn check(&self, v: &Value<'_>) -> Result<(), ArgErrorKind>;

    /// The whole expectation, for a keyword that names every value it admits ("one of …"; no
    /// other keyword is worded then); `None` otherwise.
    fn describe_whole<S: Sink>(&self, f: &mut S) -> Option<fmt::Result> {
        let _ = f;
        None
    }

    /// Its qualifier of the expectation ("from 0 to 100"), when it has one.
    fn describe<S: Sink>(&self, e: &mut Expectation<'_, S>) -> fmt::Result {
        let _ = e;
        Ok(())
    }

    /// What came, when a value broke it with `kind` and the keyword says more than the value
    /// itself (", got 5 characters"); `None`: the value is quoted.
    fn got<S: Sink>(&self, f: &mut S, kind: ArgErrorKind, v: Json<'_>) -> Option<fmt::Result> {
        let _ = (f, kind, v);
        None
    }
}

/// What a [`Param`] holds of the keywords: one field per keyword, and the calls that run them
/// all in the list's order (the order of their members in the schema).
macro_rules! keywords {
    ($($(#[doc = $doc:literal])* $(#[cfg($cfg:meta)])? $field:ident: $module:ident::$kw:ident,)*) => {
        /// The keywords a parameter holds besides its type, one field each.
        #[derive(Debug, Clone, Copy, PartialEq)]
        pub(crate) struct Keywords {
            $($(#[doc = $doc])* $(#[cfg($cfg)])? pub(crate) $field: $module::$kw,)*
        }

        impl Keywords {
            /// None set.
            pub(crate) const NONE: Self = Keywords {
                $($(#[cfg($cfg)])? $field: <$module::$kw as Keyword>::NONE,)*
            };

            /// Registration: no keyword set for another type, then each keyword's own check.
            pub(crate) fn check_spec(&self, p: &Param) -> Result<(), ParamProblem> {
                let ty = p.ty();
                $(
                    $(#[cfg($cfg)])?
                    if self.$field.is_set() && !<$module::$kw as Keyword>::applies(ty) {
                        return Err(ParamProblem::ConstraintForOtherType);
                    }
                )*
                $($(#[cfg($cfg)])? self.$field.check_spec(p)?;)*
                Ok(())
            }

            /// Writes the members of the keywords that apply to `ty`.
            #[inline]
            pub(crate) fn emit(&self, ty: ParamType, w: &mut Writer<'_>) {
                $(
                    $(#[cfg($cfg)])?
                    if <$module::$kw as Keyword>::applies(ty) {
                        self.$field.emit(w);
                    }
                )*
            }

            /// Checks a value of the parameter's type against every keyword.
            #[inline(always)]
            pub(crate) fn check(&self, v: &Value<'_>) -> Result<(), ArgErrorKind> {
                $($(#[cfg($cfg)])? self.$field.check(v)?;)*
                Ok(())
            }

            /// Words what a parameter of type `ty` with these keywords expects.
            pub(crate) fn describe<S: Sink>(&self, ty: ParamType, f: &mut S) -> fmt::Result {
                // Each type's keywords, known when this is built (`applies` on a constant).
                match ty {
                    ParamType::Boolean => self.describe_as(ParamType::Boolean, f),
                    ParamType::Integer => self.describe_as(ParamType::Integer, f),
                    #[cfg(feature = "float")]
                    ParamType::Number => self.describe_as(ParamType::Number, f),
                    #[cfg(feature = "strings")]
                    ParamType::String => self.describe_as(ParamType::String, f),
                }
            }

            #[inline(always)]
            fn describe_as<S: Sink>(&self, ty: ParamType, f: &mut S) -> fmt::Result {
                $(
                    $(#[cfg($cfg)])?
                    if <$module::$kw as Keyword>::applies(ty)
                        && let Some(said) = self.$field.describe_whole(f)
                    {
                        return said;
                    }
                )*
                let mut e = Expectation::new(f, ty);
                $(
                    $(#[cfg($cfg)])?
                    if <$module::$kw as Keyword>::applies(ty) {
                        self.$field.describe(&mut e)?;
                    }
                )*
                e.finish()
            }

            /// What came, as the keyword a value broke with `kind` words it (`None`: quoted).
            pub(crate) fn got<S: Sink>(
                &self,
                f: &mut S,
                kind: ArgErrorKind,
                v: Json<'_>,
            ) -> Option<fmt::Result> {
                $(
                    $(#[cfg($cfg)])?
                    if let Some(said) = self.$field.got(f, kind, v) {
                        return Some(said);
                    }
                )*
                None
            }
        }

        /// Every keyword's conformance test ([`test::conformance`]), by its module's name.
        #[cfg(test)]
        pub(crate) const CONFORMANCE: &[(&str, fn() -> Result<usize, String>)] =
            &[$($(#[cfg($cfg)])? (stringify!($field), test::conformance::<$module::$kw>),)*];
    };
}

#[cfg(feature = "strings")]
mod choices;
mod default;
#[cfg(feature = "strings")]
mod length;
mod multiple_of;
mod range;
pub(crate) mod ty;

// The keywords, in the order their members are written. `type` is not listed: every parameter
// has one, and it reads the value the others check (`ty`).
keywords! {
    /// `minimum` and `maximum` of an integer.
    int_range: range::IntRange,
    /// `minimum` and `maximum` of a number (feature `float`: without it, never set).
    num_range: range::NumRange,
    /// `enum` (before the length: a value that is not a choice is told so, whatever its length).
    /// Feature `strings`.
    #[cfg(feature = "strings")]
    choices: choices::Choices,
    /// `minLength` and `maxLength`. Feature `strings`.
    #[cfg(feature = "strings")]
    length: length::Length,
    /// `multipleOf`.
    multiple_of: multiple_of::MultipleOf,
    /// `default`.
    default: default::DefaultValue,
}

#[cfg(test)]
pub(crate) mod test;
