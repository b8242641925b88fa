//! An independent model of the strict validator, written from the rules in `docs/DESIGN.md`
//! ("Strict validation") over the parameter spec's public getters and serde_json's view of the
//! arguments ([`entries`] for the members, [`J`] for each value: never `serde_json::Value`, see
//! `crate::json`).
//!
//! Integers are decided exactly on the decimal token (JSON Schema 2020-12: a number whose value
//! has no fractional part, whatever its spelling), with a different algorithm than the engine's
//! (normalise to `digits × 10^exp`, then compare as `i128`).

use crate::{J, entries};
use mcp_core::schema::{Literal, Param, ParamType};

/// What the model says is wrong (mirrors `mcp_core::schema::ArgErrorKind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Problem {
    NotAnObject,
    Unknown,
    Duplicate,
    Missing,
    WrongType,
    NotAnInteger,
    OutOfRange,
    NotAChoice,
    BadLength,
    NotAMultiple,
}

impl Problem {
    /// The engine's kind for this problem.
    pub fn of(kind: mcp_core::schema::ArgErrorKind) -> Problem {
        use mcp_core::schema::ArgErrorKind as K;
        match kind {
            K::NotAnObject => Problem::NotAnObject,
            K::Unknown => Problem::Unknown,
            K::Duplicate => Problem::Duplicate,
            K::Missing => Problem::Missing,
            K::WrongType => Problem::WrongType,
            K::NotAnInteger => Problem::NotAnInteger,
            K::OutOfRange => Problem::OutOfRange,
            K::NotAChoice => Problem::NotAChoice,
            K::BadLength => Problem::BadLength,
            K::NotAMultiple => Problem::NotAMultiple,
            other => panic!("the model knows no {other:?}"),
        }
    }
}

/// A validated value, as the handler must see it.
#[derive(Debug, Clone, PartialEq)]
pub enum Val {
    Absent,
    Bool(bool),
    Int(i64),
    /// The `f64`'s bits (so that `-0.0` and `0.0` are told apart, and NaN never compares equal).
    Num(u64),
    Str(String),
}

/// A JSON number token read exactly: `None` when it has a fractional part, `Some(Err(()))` when it
/// is an integer beyond `i64`, `Some(Ok(v))` otherwise.
pub fn exact_integer(token: &str) -> Option<Result<i64, ()>> {
    let (neg, rest) = match token.strip_prefix('-') {
        Some(r) => (true, r),
        None => (false, token),
    };
    let (mantissa, exp) = match rest.find(['e', 'E']) {
        Some(i) => (&rest[..i], &rest[i + 1..]),
        None => (rest, "0"),
    };
    let (int, frac) = match mantissa.find('.') {
        Some(i) => (&mantissa[..i], &mantissa[i + 1..]),
        None => (mantissa, ""),
    };
    let (eneg, edigits) = match exp.as_bytes().first() {
        Some(b'-') => (true, &exp[1..]),
        Some(b'+') => (false, &exp[1..]),
        _ => (false, exp),
    };
    let mut e: i128 = 0;
    for d in edigits.bytes() {
        e = (e * 10 + i128::from(d - b'0')).min(1_000_000_000_000);
    }
    if eneg {
        e = -e;
    }
    // value = digits × 10^(e - frac.len())
    let digits: String = int.chars().chain(frac.chars()).collect();
    let digits = digits.trim_start_matches('0');
    if digits.is_empty() {
        return Some(Ok(0));
    }
    let trimmed = digits.trim_end_matches('0');
    let mut scale = e - frac.len() as i128 + (digits.len() - trimmed.len()) as i128;
    if scale < 0 {
        return None;
    }
    if trimmed.len() as i128 + scale > 19 {
        return Some(Err(()));
    }
    let mut v: i128 = trimmed.parse().expect("at most 19 digits");
    while scale > 0 {
        v *= 10;
        scale -= 1;
    }
    if neg {
        v = -v;
    }
    Some(i64::try_from(v).map_err(|_| ()))
}

/// Validates `arguments` (its JSON text; `None` or `null` mean none) against `params`:
/// the first problem in document order, then the first missing required parameter in spec
/// order. On success, one value per parameter (defaults filled in).
pub fn validate(
    params: &[Param],
    arguments: Option<&str>,
) -> Result<Vec<Val>, (Problem, Option<usize>)> {
    let arguments = arguments.filter(|a| a.trim() != "null");
    let members = match arguments {
        None => Vec::new(),
        Some(text) => {
            let v = J::parse_str(text).expect("checked JSON");
            if !v.is_object() {
                return Err((Problem::NotAnObject, None));
            }
            entries(text.as_bytes()).expect("an object")
        }
    };
    let mut values = vec![Val::Absent; params.len()];
    let mut seen = vec![false; params.len()];
    for (key, raw) in &members {
        let Some(i) = params.iter().position(|p| p.name() == key) else {
            return Err((Problem::Unknown, None));
        };
        if seen[i] {
            return Err((Problem::Duplicate, Some(i)));
        }
        seen[i] = true;
        values[i] = check(&params[i], raw.get()).map_err(|p| (p, Some(i)))?;
    }
    for (i, p) in params.iter().enumerate() {
        if seen[i] {
            continue;
        }
        values[i] = match p.default_value() {
            Some(Literal::Bool(b)) => Val::Bool(b),
            Some(Literal::Int(v)) => Val::Int(v),
            #[cfg(feature = "full")]
            Some(Literal::Number(n)) => Val::Num(n.to_bits()),
            #[cfg(feature = "full")]
            Some(Literal::Str(s)) => Val::Str(s.to_string()),
            Some(other) => panic!("the model knows no default {other:?}"),
            None if p.is_required() => return Err((Problem::Missing, Some(i))),
            None => Val::Absent,
        };
    }
    Ok(values)
}

fn check(p: &Param, raw: &str) -> Result<Val, Problem> {
    let v = J::parse_str(raw).expect("checked JSON");
    match p.ty() {
        ParamType::Boolean => v.as_bool().map(Val::Bool).ok_or(Problem::WrongType),
        ParamType::Integer => {
            if !v.is_number() {
                return Err(Problem::WrongType);
            }
            let (min, max) = p.int_bounds();
            match exact_integer(raw) {
                None => Err(Problem::NotAnInteger),
                Some(Ok(n)) if n < min || max < n => Err(Problem::OutOfRange),
                // `multipleOf`: the range first, then the step (JSON Schema: n / step is an
                // integer; every integer is a multiple of 1).
                Some(Ok(n)) => match p.step() {
                    Some(step) if step > 1 && i128::from(n) % i128::from(step) != 0 => {
                        Err(Problem::NotAMultiple)
                    }
                    _ => Ok(Val::Int(n)),
                },
                Some(Err(())) => Err(Problem::OutOfRange),
            }
        }
        #[cfg(feature = "full")]
        ParamType::Number => {
            if !v.is_number() {
                return Err(Problem::WrongType);
            }
            let n: f64 = raw.parse().expect("a JSON number parses as f64");
            let (min, max) = p.num_bounds();
            if n.is_finite() && min <= n && n <= max {
                Ok(Val::Num(n.to_bits()))
            } else {
                Err(Problem::OutOfRange)
            }
        }
        #[cfg(feature = "full")]
        ParamType::String => {
            let Some(s) = v.as_str() else {
                return Err(Problem::WrongType);
            };
            if !p.choices().is_empty() {
                return if p.choices().contains(&s) {
                    Ok(Val::Str(s.to_string()))
                } else {
                    Err(Problem::NotAChoice)
                };
            }
            let (min, max) = p.len_bounds();
            let n = s.chars().count();
            if min <= n && n <= max {
                Ok(Val::Str(s.to_string()))
            } else {
                Err(Problem::BadLength)
            }
        }
        other => panic!("the model knows no {other:?} parameter"),
    }
}

/// The value the engine's typed view holds for parameter `p`.
pub fn engine_value(args: &mcp_core::Args<'_>, p: &Param) -> Val {
    let name = p.name();
    let v = match p.ty() {
        ParamType::Boolean => args.opt_bool(name).map(|v| v.map(Val::Bool)),
        ParamType::Integer => args.opt_int(name).map(|v| v.map(Val::Int)),
        #[cfg(feature = "full")]
        ParamType::Number => args
            .opt_number(name)
            .map(|v| v.map(|n| Val::Num(n.to_bits()))),
        #[cfg(feature = "full")]
        ParamType::String => args
            .opt_str(name)
            .map(|v| v.map(|s| Val::Str(s.to_string()))),
        other => panic!("the model knows no {other:?} parameter"),
    };
    v.expect("a declared parameter of its own type is readable")
        .unwrap_or(Val::Absent)
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn exact_integers() {
        assert_eq!(exact_integer("50"), Some(Ok(50)));
        assert_eq!(exact_integer("50.0"), Some(Ok(50)));
        assert_eq!(exact_integer("5e1"), Some(Ok(50)));
        assert_eq!(exact_integer("5000e-2"), Some(Ok(50)));
        assert_eq!(exact_integer("0.5e2"), Some(Ok(50)));
        assert_eq!(exact_integer("-0"), Some(Ok(0)));
        assert_eq!(exact_integer("0e999999999999999999999"), Some(Ok(0)));
        assert_eq!(exact_integer("50.5"), None);
        assert_eq!(exact_integer("1e-999999999999999999"), None);
        assert_eq!(exact_integer("9223372036854775807"), Some(Ok(i64::MAX)));
        assert_eq!(exact_integer("-9223372036854775808"), Some(Ok(i64::MIN)));
        assert_eq!(exact_integer("9223372036854775808"), Some(Err(())));
        assert_eq!(exact_integer("1e19"), Some(Err(())));
        assert_eq!(exact_integer("1e400"), Some(Err(())));
        assert_eq!(
            exact_integer("100000000000000000000000000000000e-20"),
            Some(Ok(1_000_000_000_000))
        );
        assert_eq!(
            exact_integer("0.000000000000000000000000000001e30"),
            Some(Ok(1))
        );
    }
}
