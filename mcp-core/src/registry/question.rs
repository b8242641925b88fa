//! A confirmation's question as a template over the tool's parameters (feature `confirm`): what
//! a person is asked names what they approve, from the call's *validated* arguments.
//!
//! `{name}` stands for the argument `name` (a boolean, integer or number as JSON writes it; a
//! string's text, escaped for a display and capped at [`DEFAULT_CHARS`] characters), `{name:N}`
//! for at most `N` characters of it (`…` after when more were left out): `"Upgrade the firmware to
//! the {size}-byte image with SHA-256 {sha256:8}?"`. Every `{…}` must name a declared parameter
//! (registration checks it: [`RegisterErrorKind::BadQuestion`](super::RegisterErrorKind)); a
//! template without one is a fixed question.

use core::fmt;

use crate::schema::{Args, Param};

/// The most characters of a string argument a placeholder without `:N` shows.
pub const DEFAULT_CHARS: usize = 32;

/// One piece of a template.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Piece<'a> {
    /// Text written as it is.
    Text(&'a str),
    /// An argument, at most this many characters of it.
    Arg(&'a str, usize),
}

/// The pieces of `template`, in order; `Err(())` at the first malformed placeholder (an
/// unclosed `{`, a `}` outside one, an empty name, a cap that is not a number).
fn pieces(template: &str) -> impl Iterator<Item = Result<Piece<'_>, ()>> {
    let mut rest = template;
    core::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let open = rest.find(['{', '}']).unwrap_or(rest.len());
        if open > 0 {
            let (text, after) = rest.split_at(open);
            rest = after;
            return Some(Ok(Piece::Text(text)));
        }
        let fail = |rest: &mut &str| {
            *rest = "";
            Some(Err(()))
        };
        if !rest.starts_with('{') {
            return fail(&mut rest);
        }
        let Some(close) = rest.find('}') else {
            return fail(&mut rest);
        };
        let inner = rest.get(1..close).unwrap_or_default();
        rest = rest.get(close + 1..).unwrap_or_default();
        let (name, cap) = match inner.split_once(':') {
            Some((name, digits)) => match digits.parse::<usize>() {
                Ok(n) if !digits.starts_with('+') => (name, n),
                _ => return fail(&mut rest),
            },
            None => (inner, DEFAULT_CHARS),
        };
        if name.is_empty() || name.contains('{') {
            return fail(&mut rest);
        }
        Some(Ok(Piece::Arg(name, cap)))
    })
}

/// `true` when every placeholder of `template` is well formed and names one of `params`.
pub(crate) fn is_valid(template: &str, params: &[Param]) -> bool {
    pieces(template).all(|p| match p {
        Ok(Piece::Text(_)) => true,
        Ok(Piece::Arg(name, _)) => params.iter().any(|p| p.name() == name),
        Err(()) => false,
    })
}

/// Writes `template` with its placeholders filled from `args` (a registered tool's template:
/// [`is_valid`] held at registration).
pub(crate) fn write(template: &str, args: &Args<'_>, f: &mut dyn fmt::Write) -> fmt::Result {
    for piece in pieces(template) {
        match piece {
            Ok(Piece::Text(text)) => f.write_str(text)?,
            Ok(Piece::Arg(name, cap)) => {
                args.show(name, cap, f);
            }
            Err(()) => break,
        }
    }
    Ok(())
}

// (The questions' placeholders name string arguments too.)
#[cfg(test)]
#[cfg(feature = "strings")]
mod test {
    use super::*;
    use crate::schema::validate;
    use crate::wire::Json;

    const PARAMS: &[Param] = &[
        Param::integer("size", "Bytes"),
        Param::string("sha256", "Hash"),
        Param::boolean("on", "On").optional(),
        Param::string("label", "Label").default_str("none"),
    ];

    fn shown(template: &str, arguments: &str) -> String {
        assert!(is_valid(template, PARAMS), "{template}");
        let arguments = Json::parse(arguments.as_bytes(), 8).unwrap();
        let args = validate(PARAMS, Some(arguments)).unwrap();
        let mut out = String::new();
        write(template, &args, &mut out).unwrap();
        out
    }

    #[test]
    fn placeholders_are_filled_from_the_validated_arguments() {
        let hash = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08";
        let args = format!(r#"{{"size":4096,"sha256":"{hash}","on":true}}"#);
        assert_eq!(
            shown("Upgrade to the {size}-byte image {sha256:8}?", &args),
            "Upgrade to the 4096-byte image 9f86d081…?"
        );
        assert_eq!(shown("{on} {label} {size}", &args), "true none 4096");
        assert_eq!(shown("No placeholder.", &args), "No placeholder.");
        // Absent optional without a default: nothing.
        let args = format!(r#"{{"size":1,"sha256":"{hash}"}}"#);
        assert_eq!(shown("[{on}]", &args), "[]");
        // A whole short string: no ellipsis.
        assert_eq!(shown("{sha256:64}", &args), hash);
    }

    /// A string's text is the sender's: its escapes are decoded, and what a display must not
    /// carry (line breaks, terminal escapes, bidi overrides) is shown escaped; it is capped.
    #[test]
    fn a_strings_text_is_escaped_and_capped() {
        let args = r#"{"size":1,"sha256":"Yes\n\u001b[2J\u202eok\\","label":"caf\u00e9"}"#;
        assert_eq!(shown("{sha256}", args), r"Yes\n\u{1b}[2J\u{202e}ok\\");
        assert_eq!(shown("{sha256:4}", args), r"Yes\n…");
        assert_eq!(shown("{label}", args), "café");
        let long = format!(r#"{{"size":1,"sha256":"{}"}}"#, "a".repeat(100));
        assert_eq!(
            shown("{sha256}", &long),
            format!("{}…", "a".repeat(DEFAULT_CHARS))
        );
    }

    #[test]
    fn malformed_or_unknown_placeholders_are_refused() {
        for bad in [
            "{nope}",
            "{size",
            "size}",
            "{}",
            "{:3}",
            "{size:}",
            "{size:x}",
            "{size:+3}",
            "{size:-1}",
            "{{size}}",
        ] {
            assert!(!is_valid(bad, PARAMS), "{bad}");
        }
        assert!(is_valid("Reboot the device?", PARAMS));
        assert!(is_valid("", PARAMS));
    }
}
