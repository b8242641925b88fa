//! The validator on arbitrary (parameter spec, arguments) pairs.
//!
//! Input: a mode byte. Below 0x80 it picks one of the unit tests' parameter tables (`PRESETS`)
//! and the rest of the input is the arguments' raw bytes (so the unit-test argument vectors seed
//! it). From 0x80 the spec is built with `arbitrary` from pools of names and choice lists (valid
//! and invalid ones), and the arguments are absent, raw bytes, or a JSON object rendered from an
//! arbitrary list of members with number spellings, escapes and near-miss values. For every spec that registration
//! accepts (`check_params`), `mcp_core::schema::validate` must agree with the independent model
//! (`mcp_fuzz::model`) on accept/reject, on the kind of problem and the parameter it names, and,
//! when it accepts, on every value the handler will read (defaults included). Messages render
//! without panicking and name the parameter.
#![no_main]

use arbitrary::{Arbitrary, Result, Unstructured};
use libfuzzer_sys::fuzz_target;
use mcp_core::schema::{Param, check_params, validate};
use mcp_core::wire::json::Json;
use mcp_fuzz::model::{self, Problem};

const NAMES: [&str; 12] = [
    "a",
    "b",
    "volume",
    "theme",
    "x.y",
    "A-_9",
    "\u{e9}",
    "",
    "a b",
    "0123456789012345678901234567890123456789012345678901234567890123",
    "01234567890123456789012345678901234567890123456789012345678901234",
    "on",
];
const CHOICES: [&str; 10] = [
    "light",
    "dark",
    "",
    "\u{e9}t\u{e9}",
    "a\"b",
    "\\",
    "\u{1F600}",
    "light ",
    "LIGHT",
    "d\u{e0}",
];

#[derive(Arbitrary, Debug)]
enum Lit {
    Bool(bool),
    Int(i64),
    SmallInt(i8),
    Num(f64),
    Str(u8),
}

#[derive(Arbitrary, Debug)]
struct ArbParam {
    name: u8,
    ty: u8,
    optional: bool,
    default: Option<Lit>,
    small: bool,
    lo: Option<i64>,
    hi: Option<i64>,
    nums: Option<(f64, f64)>,
    /// (String parameters' keywords: the full engine only.)
    #[cfg_attr(
        not(feature = "full"),
        allow(dead_code, reason = "no string parameters")
    )]
    lens: Option<(u8, u8)>,
    #[cfg_attr(
        not(feature = "full"),
        allow(dead_code, reason = "no string parameters")
    )]
    choices: Option<(u8, u8)>,
    /// `multipleOf` (0 included: registration refuses it), a power of two, or a large step.
    step: Option<(u8, u8)>,
    foreign: Option<u8>,
}

fn build(a: &ArbParam) -> Param {
    let name = NAMES[usize::from(a.name) % NAMES.len()];
    let squash = |v: i64| if a.small { v % 120 } else { v };
    let mut p = match a.ty % 4 {
        0 => Param::boolean(name, "d"),
        1 => {
            let mut p = Param::integer(name, "d");
            if let Some(lo) = a.lo {
                p = p.min(squash(lo));
            }
            if let Some(hi) = a.hi {
                p = p.max(squash(hi));
            }
            if let Some((kind, n)) = a.step {
                p = p.multiple_of(match kind % 3 {
                    0 => u64::from(n % 13),
                    1 => 1 << (n % 64),
                    _ => u64::MAX - u64::from(n),
                });
            }
            p
        }
        #[cfg(not(feature = "full"))]
        2 => {
            // No `Param::number` in the minimal engine: a second integer parameter, bounded by
            // the number pool truncated (saturating; NaN is 0).
            let mut p = Param::integer(name, "d");
            if let Some((lo, hi)) = a.nums {
                p = if a.small {
                    p.range((lo % 400.0) as i64, (hi % 400.0) as i64)
                } else {
                    p.range(lo as i64, hi as i64)
                };
            }
            p
        }
        #[cfg(feature = "full")]
        2 => {
            let mut p = Param::number(name, "d");
            if let Some((lo, hi)) = a.nums {
                p = if a.small {
                    p.range_f64((lo % 100.0).trunc() / 4.0, (hi % 100.0).trunc() / 4.0)
                } else {
                    p.range_f64(lo, hi)
                };
            }
            p
        }
        // No `Param::string` in the minimal engine: a boolean in its place.
        #[cfg(not(feature = "full"))]
        _ => Param::boolean(name, "d"),
        #[cfg(feature = "full")]
        _ => {
            let mut p = Param::string(name, "d");
            if let Some((lo, hi)) = a.lens {
                p = p.length(u32::from(lo % 12), u32::from(hi % 12));
            }
            if let Some((from, len)) = a.choices {
                let from = usize::from(from) % CHOICES.len();
                let to = (from + usize::from(len) % 4).min(CHOICES.len());
                p = p.one_of(&CHOICES[from..to]);
            }
            p
        }
    };
    // Occasionally a constraint for another type: registration must refuse it.
    match a.foreign {
        Some(0) => p = p.range(0, 1),
        #[cfg(feature = "full")]
        Some(1) => p = p.range_f64(0.0, 1.0),
        #[cfg(not(feature = "full"))]
        Some(1) => p = p.min(0),
        #[cfg(feature = "full")]
        Some(2) => p = p.length(0, 1),
        #[cfg(feature = "full")]
        Some(3) => p = p.one_of(&CHOICES[..1]),
        #[cfg(not(feature = "full"))]
        Some(2 | 3) => p = p.max(1),
        Some(4) => p = p.multiple_of(2),
        _ => {}
    }
    if a.optional {
        p = p.optional();
    }
    match a.default {
        Some(Lit::Bool(b)) => p.default_bool(b),
        Some(Lit::Int(v)) => p.default_int(squash(v)),
        Some(Lit::SmallInt(v)) => p.default_int(i64::from(v)),
        #[cfg(feature = "full")]
        Some(Lit::Num(v)) => p.default_f64(v),
        #[cfg(not(feature = "full"))]
        Some(Lit::Num(v)) => p.default_int(v as i64),
        #[cfg(feature = "full")]
        Some(Lit::Str(i)) => p.default_str(CHOICES[usize::from(i) % CHOICES.len()]),
        #[cfg(not(feature = "full"))]
        Some(Lit::Str(i)) => p.default_bool(i % 2 == 0),
        None => p,
    }
}

#[derive(Arbitrary, Debug)]
enum Key {
    Param(u8),
    /// The parameter's name with its first character as a `\u` escape.
    Escaped(u8),
    Pool(u8),
    Other(String),
}

#[derive(Arbitrary, Debug)]
enum Val {
    Bool(bool),
    Null,
    Int(i64),
    SmallInt(i8),
    /// An integer spelled with a fraction and/or exponent: `digits`, `.zeros`, `e±exp`.
    Spelled {
        v: i16,
        zeros: u8,
        shift: i8,
    },
    Frac(i32, u16),
    Float(f64),
    Digits(u8, u8),
    Exp(i32),
    Str(String),
    Choice(u8, bool),
    Array,
    Object,
}

fn render_key(k: &Key, names: &[&str], out: &mut String) {
    out.push('"');
    match k {
        Key::Param(i) if !names.is_empty() => {
            escape(names[usize::from(*i) % names.len()], out);
        }
        Key::Escaped(i) if !names.is_empty() => {
            let n = names[usize::from(*i) % names.len()];
            let mut chars = n.chars();
            if let Some(c) = chars.next() {
                let mut buf = [0u16; 2];
                for unit in c.encode_utf16(&mut buf) {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            }
            escape(chars.as_str(), out);
        }
        Key::Pool(i) => escape(NAMES[usize::from(*i) % NAMES.len()], out),
        Key::Other(s) => escape(s, out),
        _ => {}
    }
    out.push('"');
}

fn escape(s: &str, out: &mut String) {
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            c if (c as u32) < 0x20 => out.push_str(&format!("\\u{:04x}", c as u32)),
            c => out.push(c),
        }
    }
}

fn render_val(v: &Val, out: &mut String) {
    match v {
        Val::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        Val::Null => out.push_str("null"),
        Val::Int(i) => out.push_str(&i.to_string()),
        Val::SmallInt(i) => out.push_str(&i.to_string()),
        Val::Spelled { v, zeros, shift } => {
            // v × 10^shift written as (v × 10^zeros) e(shift - zeros), or v.000 e shift.
            let zeros = usize::from(zeros % 24);
            out.push_str(&v.to_string());
            if shift % 2 == 0 {
                out.push_str(&"0".repeat(zeros));
                out.push_str(&format!("e{}", i32::from(*shift % 30) - zeros as i32));
            } else {
                out.push('.');
                out.push_str(&"0".repeat(zeros.max(1)));
                out.push_str(&format!("E+{}", (shift % 30).unsigned_abs()));
            }
        }
        Val::Frac(i, f) => out.push_str(&format!("{i}.{f}")),
        Val::Float(f) if f.is_finite() => out.push_str(&format!("{f:?}")),
        Val::Float(_) => out.push_str("1e400"),
        Val::Digits(d, n) => {
            out.push(char::from(b'1' + d % 9));
            out.push_str(&"0".repeat(usize::from(*n)));
        }
        Val::Exp(e) => out.push_str(&format!("1e{e}")),
        Val::Str(s) => {
            out.push('"');
            escape(s, out);
            out.push('"');
        }
        Val::Choice(i, esc) => {
            let c = CHOICES[usize::from(*i) % CHOICES.len()];
            out.push('"');
            if *esc {
                for unit in c.encode_utf16() {
                    out.push_str(&format!("\\u{unit:04x}"));
                }
            } else {
                escape(c, out);
            }
            out.push('"');
        }
        Val::Array => out.push_str("[1,{\"a\":[]}]"),
        Val::Object => out.push_str("{\"volume\":1}"),
    }
}

/// The parameter tables of the unit tests and kits.
const PRESETS: [&[Param]; 8] = [
    // mcp-core/src/schema/validate.rs
    &[
        Param::integer("volume", "Volume").range(0, 100),
        #[cfg(feature = "full")]
        Param::string("theme", "Theme")
            .one_of(&["light", "dark"])
            .default_str("light"),
        #[cfg(feature = "full")]
        Param::string("label", "Label").length(1, 4).optional(),
        #[cfg(feature = "full")]
        Param::number("gain", "Gain")
            .range_f64(-1.0, 1.0)
            .default_f64(0.5),
        #[cfg(not(feature = "full"))]
        Param::integer("gain", "Gain").range(-1, 1).default_int(0),
        Param::boolean("on", "On").default_bool(false),
    ],
    // mcp-core/tests/hostile.rs
    &[
        Param::integer("volume", "v").range(0, 100),
        #[cfg(feature = "full")]
        Param::string("theme", "t").one_of(&["light", "dark"]),
        #[cfg(feature = "full")]
        Param::string("label", "l").length(0, 8).optional(),
    ],
    &[],
    // mcp-hal kits: set_volume, move_to::<0, 1000>, relay.set
    &[Param::integer("volume", "Volume in percent").range(0, 100)],
    &[Param::integer("position", "Target position").range(0, 1000)],
    &[Param::boolean("on", "on")],
    // `multipleOf` within a range whose bounds are not multiples (mcp-core's keyword samples).
    &[
        Param::integer("volume", "Volume in steps of 5")
            .range(1, 100)
            .multiple_of(5),
        Param::integer("step", "A multiple of 3")
            .multiple_of(3)
            .default_int(-9),
    ],
    // Unconstrained types, all optional; the status tool's task_id.
    &[
        Param::integer("any", "i64").optional(),
        #[cfg(feature = "full")]
        Param::number("x", "f64").optional(),
        #[cfg(not(feature = "full"))]
        Param::integer("x", "i64").min(-1000).optional(),
        #[cfg(feature = "full")]
        Param::string("s", "s").optional(),
        #[cfg(feature = "full")]
        Param::string("task_id", "id").length(1, 24).optional(),
    ],
];

fn input(u: &mut Unstructured<'_>) -> Result<(Vec<ArbParam>, Option<Vec<u8>>)> {
    let n = u.int_in_range(0..=17)?;
    let mut params = Vec::with_capacity(n);
    for _ in 0..n {
        params.push(ArbParam::arbitrary(u)?);
    }
    let args = match u.int_in_range(0..=3)? {
        0 => None,
        1 => Some(u.bytes(u.len())?.to_vec()),
        _ => {
            let members: Vec<(Key, Val)> = u.arbitrary()?;
            let names: Vec<&str> = params
                .iter()
                .map(|a| NAMES[usize::from(a.name) % NAMES.len()])
                .collect();
            let mut text = String::from("{");
            for (i, (k, v)) in members.iter().enumerate() {
                if i > 0 {
                    text.push(',');
                }
                render_key(k, &names, &mut text);
                text.push(':');
                render_val(v, &mut text);
            }
            text.push('}');
            Some(text.into_bytes())
        }
    };
    Ok((params, args))
}

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let (params, args): (Vec<Param>, Option<Vec<u8>>) = if mode < 0x80 {
        let preset = PRESETS[usize::from(mode) % PRESETS.len()];
        (preset.to_vec(), (!rest.is_empty()).then(|| rest.to_vec()))
    } else {
        let Ok((arb, args)) = input(&mut Unstructured::new(rest)) else {
            return;
        };
        (arb.iter().map(build).collect(), args)
    };
    let json = match &args {
        None => None,
        Some(bytes) => match Json::parse(bytes, 32) {
            Ok(j) => Some(j),
            Err(_) => return,
        },
    };
    let ours = validate(&params, json);
    if params.len() > mcp_core::schema::MAX_PARAMS || check_params(&params).is_err() {
        // Registration refuses such a spec; the validator must still not panic.
        if let Err(e) = &ours {
            let _ = e.to_string();
        }
        return;
    }
    let text = args
        .as_deref()
        .map(|b| std::str::from_utf8(b).expect("checked JSON is UTF-8"));
    let model = model::validate(&params, text);
    match (&ours, &model) {
        (Ok(a), Ok(values)) => {
            // Strings sent with escapes are decoded into a buffer of exactly the size asked for.
            #[cfg(feature = "full")]
            let mut buf = vec![0u8; a.escaped_len()];
            #[cfg(feature = "full")]
            let a = &{
                let mut a = a.clone();
                assert!(
                    a.decode_escapes(&mut buf),
                    "escaped_len bytes are enough to decode"
                );
                a
            };
            for (p, expected) in params.iter().zip(values) {
                assert_eq!(
                    &model::engine_value(a, p),
                    expected,
                    "{} in {text:?}",
                    p.name()
                );
            }
        }
        (Err(e), Err((problem, index))) => {
            assert_eq!(
                Problem::of(e.kind),
                *problem,
                "{e} for {text:?} with {params:?}"
            );
            let named = e.param.map(Param::name);
            assert_eq!(named, index.map(|i| params[i].name()), "{e} for {text:?}");
            let msg = e.to_string();
            assert!(!msg.is_empty());
            if let Some(name) = named {
                assert!(msg.contains(&format!("\"{name}\"")), "{msg} names {name}");
            }
        }
        _ => panic!(
            "validator and model disagree on {text:?} with {params:?}: ours {:?}, model {model:?}",
            ours.as_ref().map(|_| ()).map_err(|e| e.to_string())
        ),
    }
});
