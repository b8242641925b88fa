//! The conformance test every keyword in the list runs: the schema it emits, read by a reference
//! JSON Schema 2020-12 validator (the `jsonschema` crate), admits exactly the values its check
//! admits, and it refuses the specs it should at registration.

use super::{CONFORMANCE, Keyword};
use crate::schema::{Param, ParamProblem, validate, write_input_schema};
use crate::wire::json::{DEFAULT_MAX_DEPTH, Json};
use crate::wire::writer::Writer;

/// What a keyword's module gives its conformance test (`cfg(test)`, beside the keyword).
pub(crate) trait Samples {
    /// `p` with the keyword set (`p.range(0, 1)`): on a parameter of a type the keyword does
    /// not apply to, registration must refuse it.
    fn set(p: Param) -> Param;
    /// Specs of one parameter named `x` (each accepted at registration), with the keyword set
    /// in every way worth checking, and its type's spec without it.
    fn specs() -> Vec<Param>;
    /// Values for `x` (JSON texts): inside, at and across each bound, other spellings, other
    /// types.
    fn values() -> &'static [&'static str];
    /// Specs registration refuses, with the problem it reports (besides the keyword on another
    /// type, which every keyword is tried on).
    fn refused() -> Vec<(Param, ParamProblem)>;
}

/// A parameter `x` of each type.
fn every_type() -> Vec<Param> {
    #[cfg_attr(
        not(any(feature = "float", feature = "strings")),
        expect(unused_mut, reason = "a number or a string follows")
    )]
    let mut all = vec![Param::boolean("x", "X"), Param::integer("x", "X")];
    #[cfg(feature = "strings")]
    all.push(Param::string("x", "X"));
    #[cfg(feature = "float")]
    all.push(Param::number("x", "X"));
    all
}

/// Runs `K`'s conformance test; the number of (spec, value) pairs compared, or what disagreed.
pub(crate) fn conformance<K: Keyword + Samples>() -> Result<usize, String> {
    let mut pairs = 0;
    let mut failures = Vec::new();
    let foreign = every_type()
        .into_iter()
        .filter(|p| K::TYPE.is_some_and(|t| t != p.ty()))
        .map(|p| (K::set(p), ParamProblem::ConstraintForOtherType));
    for (p, problem) in K::refused().into_iter().chain(foreign) {
        if p.check() != Err(problem) {
            failures.push(format!("{p:?}: {:?}, expected {problem:?}", p.check()));
        }
    }
    for p in K::specs() {
        if let Err(problem) = p.check() {
            failures.push(format!("{p:?} is refused: {problem:?}"));
            continue;
        }
        let params = [p];
        let mut buf = [0u8; 1024];
        let mut w = Writer::new(&mut buf);
        write_input_schema(&mut w, &params);
        let schema: serde_json::Value =
            serde_json::from_slice(w.written().ok_or("the schema does not fit")?)
                .map_err(|e| e.to_string())?;
        if !jsonschema::draft202012::meta::is_valid(&schema) {
            failures.push(format!("not a 2020-12 schema: {schema}"));
            continue;
        }
        let reference = jsonschema::draft202012::new(&schema).map_err(|e| e.to_string())?;
        let absent = [None];
        let values = K::values().iter().map(Some).chain(absent);
        for value in values {
            let text = value.map_or_else(|| "{}".to_string(), |v| format!(r#"{{"x":{v}}}"#));
            let arguments = Json::parse(text.as_bytes(), DEFAULT_MAX_DEPTH)
                .map_err(|e| format!("{text}: {e}"))?;
            let ours = validate(&params, Some(arguments));
            // A number beyond `f64` (`1e400`) is no JSON serde_json reads: only a refusal
            // is right.
            let theirs = serde_json::from_str(&text).is_ok_and(|v| reference.is_valid(&v));
            pairs += 1;
            if ours.is_ok() != theirs {
                failures.push(format!(
                    "{text} against {schema}: ours {}, the reference {theirs}",
                    match &ours {
                        Ok(_) => "accepts".to_string(),
                        Err(e) => format!("refuses ({e})"),
                    }
                ));
            }
            // The message reads the same as text and in the engine's JSON spelling.
            if let Err(e) = ours {
                let mut out = [0u8; 512];
                let mut w = Writer::new(&mut out);
                w.begin_string();
                e.write_json(&mut w);
                w.end_string();
                let json = w.written().ok_or("the message does not fit")?;
                let read: String = serde_json::from_slice(json).map_err(|e| e.to_string())?;
                if read != e.to_string() {
                    failures.push(format!("{text}: {read:?} written, {e} displayed"));
                }
            }
        }
    }
    if failures.is_empty() {
        Ok(pairs)
    } else {
        Err(failures.join("\n"))
    }
}

#[test]
fn every_keyword_emits_what_it_checks() {
    let mut compared = 0;
    for (name, test) in CONFORMANCE {
        match test() {
            Ok(pairs) => compared += pairs,
            Err(failures) => panic!("keyword `{name}`:\n{failures}"),
        }
    }
    assert!(compared > 100, "{compared} pairs");
}
