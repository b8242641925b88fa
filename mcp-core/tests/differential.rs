//! Differential validation: our validator's accept/reject against a reference JSON Schema
//! 2020-12 validator (the `jsonschema` crate) run on the `inputSchema` we emit for the same spec.
//!
//! A seeded generator makes parameter specs (every type, with and without bounds, steps, choices,
//! lengths, defaults, optional) and, for each, argument objects full of boundary values, other
//! spellings of the same number (`50.0`, `5e1`, `5000e-2`), wrong types, unknown and escaped keys,
//! and non-ASCII strings. Every disagreement fails the test, except one documented class:
//!
//! **The reference reads numbers through `f64`.** serde_json (without `arbitrary_precision`,
//! which would change the number type of the whole workspace) parses `9223372036854775807.0` as
//! 2^63, `-9223372036854775809` as -2^63 and `1.0000000000000001` as `1.0`. Our validator reads
//! integers exactly, as JSON Schema defines them (a value with no fractional part). A
//! disagreement counts as explained only when our validator, given the values *the reference
//! saw* (each number written out as the exact decimal value of what serde_json parsed), agrees
//! with the reference: the rounding is then the whole difference. Any other disagreement fails the
//! test. The explained ones are counted and printed.
//!
//! Not compared, by design, and checked separately below: duplicate keys (the reference never sees
//! them: serde_json keeps the last), `null` arguments (MCP: absent), numbers beyond `f64` (serde_json
//! refuses to parse them).
#![allow(
    missing_docs,
    clippy::restriction,
    clippy::cast_possible_truncation,
    reason = "a test: an unwrap, an index or a panic says what failed; sizes are small"
)]

mod common;

use mcp_core::schema::{Param, check_params, validate, write_input_schema};
use mcp_core::wire::{Json, Writer};
use serde_json::Value;

use common::Rng;

const NAMES: [&str; 10] = [
    "volume", "theme", "label", "gain", "on", "a", "x.y", "A-_9", "position", "task_id",
];
#[cfg(feature = "strings")]
const POOL: [&str; 12] = [
    "light",
    "dark",
    "",
    "\u{e9}t\u{e9}",
    "a\"b",
    "\\",
    "\u{1F600}",
    "light ",
    "LIGHT",
    "\u{4f60}\u{597d}",
    "abcdefgh",
    "a\u{0}b",
];
const INT_EDGES: [i64; 12] = [
    i64::MIN,
    -1_000_000,
    -100,
    -1,
    0,
    1,
    7,
    100,
    1000,
    1 << 53,
    i64::MAX - 1,
    i64::MAX,
];
/// `multipleOf` steps.
const STEPS: [u64; 5] = [1, 2, 5, 7, 1000];
#[cfg(feature = "float")]
const NUM_EDGES: [f64; 13] = [
    f64::MIN,
    -1e10,
    -2.5,
    -1.0,
    -0.1,
    0.0,
    1e-300,
    0.1,
    0.5,
    1.0,
    2.5,
    1e10,
    f64::MAX,
];
/// Tokens whose value the reference's `f64` parse changes (see the module docs).
const PRECISION_EDGES: [&str; 8] = [
    "9223372036854775807.0",
    "9.223372036854775807e18",
    "-9223372036854775807.0",
    "9007199254740993.0",
    "1.0000000000000001",
    "0.99999999999999999",
    "100.00000000000001",
    "1e-400",
];

fn spec(rng: &mut Rng) -> Vec<Param> {
    let n = rng.below(6) + usize::from(rng.chance(80));
    let mut names: Vec<&'static str> = NAMES.to_vec();
    let mut params = Vec::new();
    for _ in 0..n {
        let name = names.remove(rng.below(names.len()));
        let mut p = match rng.below(4) {
            0 => {
                let p = Param::boolean(name, "b");
                if rng.chance(30) {
                    p.default_bool(rng.chance(50))
                } else {
                    p
                }
            }
            1 => {
                let (mut lo, mut hi) = (*rng.pick(&INT_EDGES), *rng.pick(&INT_EDGES));
                if rng.chance(30) {
                    lo = rng.below(200) as i64 - 100;
                }
                if lo > hi {
                    std::mem::swap(&mut lo, &mut hi);
                }
                let p = Param::integer(name, "i");
                let p = match rng.below(4) {
                    0 => p,
                    1 => p.min(lo),
                    2 => p.max(hi),
                    _ => p.range(lo, hi),
                };
                let p = if rng.chance(25) {
                    p.multiple_of(*rng.pick(&STEPS))
                } else {
                    p
                };
                if rng.chance(25) {
                    let (lo, hi) = p.int_bounds();
                    let step = p.step().map_or(1, |s| s as i64);
                    // The bound, or the multiple of the step nearest inside it.
                    let v = if rng.chance(50) { lo } else { hi };
                    let v = v - v % step;
                    match if v < lo { v.checked_add(step) } else { Some(v) } {
                        Some(v) => p.default_int(v),
                        None => p,
                    }
                } else {
                    p
                }
            }
            // Number parameters exist with feature `float` only; without it, a string instead
            // (string ones with `strings` only; without either, a boolean).
            #[cfg(feature = "float")]
            2 => {
                let (mut lo, mut hi) = (*rng.pick(&NUM_EDGES), *rng.pick(&NUM_EDGES));
                if lo > hi {
                    std::mem::swap(&mut lo, &mut hi);
                }
                let p = Param::number(name, "n");
                let p = if rng.chance(70) {
                    p.range_f64(lo, hi)
                } else {
                    p
                };
                if rng.chance(25) {
                    p.default_f64(p.num_bounds().0)
                } else {
                    p
                }
            }
            #[cfg(not(feature = "strings"))]
            _ => Param::boolean(name, "b"),
            #[cfg(feature = "strings")]
            _ => {
                let p = Param::string(name, "s");
                if rng.chance(40) {
                    let from = rng.below(POOL.len());
                    let to = (from + 1 + rng.below(3)).min(POOL.len());
                    let p = p.one_of(&POOL[from..to]);
                    if rng.chance(30) {
                        p.default_str(POOL[from])
                    } else {
                        p
                    }
                } else if rng.chance(60) {
                    let lo = rng.below(4) as u32;
                    p.length(lo, lo + rng.below(6) as u32)
                } else {
                    p
                }
            }
        };
        if rng.chance(30) {
            p = p.optional();
        }
        params.push(p);
    }
    params
}

#[cfg(feature = "strings")]
fn escape(s: &str, unicode: bool) -> String {
    let mut out = String::new();
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 || (unicode && !c.is_ascii()) => {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

#[cfg(feature = "strings")]
fn quoted(s: &str, rng: &mut Rng) -> String {
    format!("\"{}\"", escape(s, rng.chance(20)))
}

/// A value token for parameter `p` (often right, often just wrong), and whether it is a
/// precision edge.
fn value(p: &Param, rng: &mut Rng) -> (String, bool) {
    use mcp_core::schema::ParamType;
    if rng.chance(8) {
        let wrong = [
            "true",
            "false",
            "null",
            "[]",
            "{}",
            "\"50\"",
            "[1,2]",
            "{\"a\":1}",
            "0",
            "\"\"",
        ];
        return (rng.pick(&wrong).to_string(), false);
    }
    if rng.chance(3) {
        return (rng.pick(&PRECISION_EDGES).to_string(), true);
    }
    let token = match p.ty() {
        ParamType::Boolean => rng.pick(&["true", "false"]).to_string(),
        ParamType::Integer => {
            let (lo, hi) = p.int_bounds();
            let base: i128 = match rng.below(6) {
                0 => i128::from(lo) - 1,
                1 => i128::from(lo),
                2 => i128::from(hi),
                3 => i128::from(hi) + 1,
                4 => i128::from(*rng.pick(&INT_EDGES)),
                _ => rng.below(2001) as i128 - 1000,
            };
            match rng.below(8) {
                0 => format!("{base}.0"),
                1 if base % 10 == 0 && base != 0 => format!("{}e1", base / 10),
                2 => format!("{}e-2", base * 100),
                3 => format!("{base}.5"),
                4 => format!("{base}e-1"),
                5 if base.abs() < 1 << 53 => format!("{:?}", base as f64 / 4.0),
                _ => base.to_string(),
            }
        }
        #[cfg(feature = "float")]
        ParamType::Number => {
            let (lo, hi) = p.num_bounds();
            let v = match rng.below(7) {
                0 => lo,
                1 => hi,
                2 => f64::from_bits(
                    lo.to_bits()
                        .wrapping_add(if lo > 0.0 { u64::MAX } else { 1 }),
                ),
                3 => f64::from_bits(
                    hi.to_bits()
                        .wrapping_add(if hi > 0.0 { 1 } else { u64::MAX }),
                ),
                4 => *rng.pick(&NUM_EDGES),
                5 => (rng.below(2001) as f64 - 1000.0) / 8.0,
                _ => (rng.below(2001) as f64 - 1000.0) / 10.0,
            };
            if !v.is_finite() {
                "0".to_string()
            } else if rng.chance(20) && v.fract() == 0.0 && v.abs() < 1e15 {
                format!("{}", v as i64)
            } else {
                format!("{v:?}")
            }
        }
        #[cfg(feature = "strings")]
        ParamType::String => {
            if !p.choices().is_empty() && rng.chance(60) {
                let c = rng.pick(p.choices());
                quoted(c, rng)
            } else if rng.chance(50) {
                let s = rng.pick(&POOL);
                quoted(s, rng)
            } else {
                let (lo, hi) = p.len_bounds();
                let n = match rng.below(4) {
                    0 => lo.saturating_sub(1),
                    1 => lo,
                    2 => hi.min(40),
                    _ => hi.min(40) + 1,
                };
                let s: String = (0..n)
                    .map(|i| if i % 3 == 0 { '\u{e9}' } else { 'x' })
                    .collect();
                quoted(&s, rng)
            }
        }
        other => panic!("the generator makes no {other:?} parameter"),
    };
    (token, false)
}

/// Arguments for `params`: `None` (absent) or a JSON text, and whether a precision edge is in it.
fn arguments(params: &[Param], rng: &mut Rng) -> (Option<String>, bool) {
    match rng.below(40) {
        0 => return (None, false),
        1 => {
            return (
                Some(rng.pick(&["[]", "\"x\"", "5", "true", "[{}]"]).to_string()),
                false,
            );
        }
        _ => {}
    }
    let mut members: Vec<(String, String)> = Vec::new();
    let mut edge = false;
    for p in params {
        let include = if p.is_required() {
            rng.chance(92)
        } else {
            rng.chance(60)
        };
        if include {
            let (v, e) = value(p, rng);
            edge |= e;
            let key = if rng.chance(10) {
                // An escaped spelling of the same key.
                let mut k = String::new();
                for (i, c) in p.name().chars().enumerate() {
                    if i == 0 {
                        k.push_str(&format!("\\u{:04x}", c as u32));
                    } else {
                        k.push(c);
                    }
                }
                k
            } else {
                p.name().to_string()
            };
            members.push((key, v));
        }
    }
    if rng.chance(8) {
        let unknown = rng
            .pick(&["extra", "Volume", "volume ", "\u{e9}", "", "on"])
            .to_string();
        if !members.iter().any(|(k, _)| *k == unknown)
            && !params.iter().any(|p| p.name() == unknown)
        {
            members.insert(rng.below(members.len() + 1), (unknown, "1".to_string()));
        }
    }
    // Shuffle: document order must not matter for accept/reject.
    for i in (1..members.len()).rev() {
        members.swap(i, rng.below(i + 1));
    }
    let sep = if rng.chance(20) { ", " } else { "," };
    let body: Vec<String> = members
        .iter()
        .map(|(k, v)| format!("\"{k}\":{v}"))
        .collect();
    (Some(format!("{{{}}}", body.join(sep))), edge)
}

/// The JSON text of `v` with every number written as the exact decimal value serde_json holds
/// (Rust's fixed-precision float formatting is exact).
fn exact_view(v: &Value) -> String {
    match v {
        Value::Number(n) if n.is_f64() => {
            let f = n.as_f64().unwrap();
            if f.fract() == 0.0 {
                format!("{f:.0}")
            } else {
                let s = format!("{f:.1100}");
                s.trim_end_matches('0').to_string()
            }
        }
        Value::Array(items) => {
            let inner: Vec<String> = items.iter().map(exact_view).collect();
            format!("[{}]", inner.join(","))
        }
        Value::Object(m) => {
            let inner: Vec<String> = m
                .iter()
                .map(|(k, v)| format!("{}:{}", serde_json::to_string(k).unwrap(), exact_view(v)))
                .collect();
            format!("{{{}}}", inner.join(","))
        }
        other => serde_json::to_string(other).unwrap(),
    }
}

fn input_schema(params: &[Param]) -> Value {
    let mut buf = vec![0u8; 16 * 1024];
    let mut w = Writer::new(&mut buf);
    write_input_schema(&mut w, params);
    serde_json::from_slice(w.written().expect("fits")).expect("the emitted schema is JSON")
}

fn ours(params: &[Param], args: Option<&str>) -> bool {
    let json = args.map(|a| Json::parse(a.as_bytes(), 32).expect("generated JSON is valid"));
    validate(params, json).is_ok()
}

#[derive(Debug, Default)]
struct Tally {
    specs: usize,
    pairs: usize,
    accepted: usize,
    /// Pairs holding one of `PRECISION_EDGES`.
    edges: usize,
    /// Disagreements explained by the reference's f64 rounding.
    explained: usize,
}

fn run(seed: u64, pairs: usize) -> Tally {
    let mut rng = Rng(seed);
    let mut t = Tally::default();
    let mut failures = Vec::new();
    while t.pairs < pairs {
        let params = spec(&mut rng);
        if check_params(&params).is_err() {
            continue;
        }
        let schema = input_schema(&params);
        assert!(
            jsonschema::draft202012::meta::is_valid(&schema),
            "the emitted inputSchema is not a valid 2020-12 schema: {schema}"
        );
        let reference = jsonschema::draft202012::new(&schema).expect("the reference compiles it");
        t.specs += 1;
        for _ in 0..10 {
            let (args, edge) = arguments(&params, &mut rng);
            let instance: Value = match &args {
                None => serde_json::json!({}),
                Some(a) => match serde_json::from_str(a) {
                    Ok(v) => v,
                    // Only "1e-400"-like tokens could fail here; they are precision edges.
                    Err(e) => panic!("serde_json refused generated {a}: {e}"),
                },
            };
            let theirs = reference.is_valid(&instance);
            let mine = ours(&params, args.as_deref());
            t.pairs += 1;
            t.accepted += usize::from(mine);
            t.edges += usize::from(edge);
            if mine == theirs {
                continue;
            }
            // Explained only if the reference's rounding is the whole difference.
            let rounded = exact_view(&instance);
            if rounded != args.clone().unwrap_or_default()
                && ours(&params, Some(&rounded)) == theirs
            {
                t.explained += 1;
                continue;
            }
            failures.push(format!(
                "ours {mine}, reference {theirs}: arguments {args:?} for schema {schema}"
            ));
        }
    }
    assert!(
        failures.is_empty(),
        "{} disagreements of {} pairs, first ones:\n{}",
        failures.len(),
        t.pairs,
        failures[..failures.len().min(10)].join("\n")
    );
    t
}

#[test]
fn validator_agrees_with_the_reference_on_generated_pairs() {
    let pairs = if cfg!(miri) { 50 } else { 20_000 };
    let t = run(0x0005_EED0_F5CE_1A00, pairs);
    println!("differential: {t:?}");
    assert!(t.pairs >= pairs);
    // The generator exercises both answers, and the explained class stays a small minority.
    assert!(
        t.accepted * 10 > t.pairs && t.accepted * 10 < t.pairs * 9,
        "{t:?}"
    );
    assert!(t.explained * 20 < t.pairs, "{t:?}");
}

#[test]
fn precision_edges_are_read_exactly() {
    // The reference (f64) and we (exact) differ here, and we are the ones JSON Schema describes.
    let p = [Param::integer("n", "n")];
    for (token, exact_ok) in [
        ("9223372036854775807.0", true), // i64::MAX written with a fraction
        ("9223372036854775808.0", false),
        ("9007199254740993.0", true),
        ("1.0000000000000001", false), // not an integer
        ("0.99999999999999999", false),
        ("1e-400", false),
    ] {
        assert_eq!(
            ours(&p, Some(&format!("{{\"n\":{token}}}"))),
            exact_ok,
            "{token}"
        );
    }
}

#[test]
fn what_the_reference_cannot_see() {
    let p = [Param::integer("volume", "v").range(0, 100)];
    // Duplicate keys: serde_json keeps the last one; we refuse the message.
    assert!(!ours(&p, Some(r#"{"volume":1,"volume":2}"#)));
    // `null` arguments mean "no arguments" in MCP.
    assert!(ours(&[], Some("null")));
    assert!(!ours(&p, Some("null")));
    // Beyond f64 (serde_json refuses to parse it): out of every range, as the emitted maximum says.
    assert!(!ours(&p, Some(r#"{"volume":1e400}"#)));
    #[cfg(feature = "float")]
    {
        assert!(!ours(&[Param::number("x", "x")], Some(r#"{"x":1e400}"#)));
        assert!(!ours(&[Param::number("x", "x")], Some(r#"{"x":-1e400}"#)));
    }
}
