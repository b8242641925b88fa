//! Text from a peer or from an image, made safe for a log line or a display: [`escaped`], the
//! one sanitizer of every string from the wire that a person or a program is shown.
//!
//! A string that came over the wire (a tool name, a session id, a close reason, a URL) or out of
//! a firmware image (its version) is the sender's. Written raw into a log it can end the line and
//! forge the next one (`\n`), rewrite what a terminal shows (ANSI escapes, `\r`, bidi overrides),
//! or fill the log. [`Escaped`] writes it through `core::fmt` with
//!
//! - every control character (C0, DEL, C1), the Unicode line and paragraph separators
//!   (U+2028, U+2029), the bidi controls (U+061C, U+200E, U+200F, U+202A–U+202E,
//!   U+2066–U+2069) and the characters that show nothing (zero-width space and joiners
//!   U+200B–U+200D, U+2060–U+2064, U+FEFF, the soft hyphen U+00AD, U+034F, U+180B–U+180F,
//!   and blank fillers such as U+3164) as an escape: `\n`, `\r`, `\t`, else `\u{1b}` (hex,
//!   as Rust writes it) — so that one string can never pass for another on a screen;
//! - a backslash doubled (`\\`), so that an escape in the log always means an escaped character;
//! - bytes that are not UTF-8 ([`escaped_bytes`]) as `\x..`;
//! - at most [`MAX_SHOWN_CHARS`] characters of the input (or [`Escaped::max_chars`]), then `…`
//!   when more were left out.
//!
//! It allocates nothing and formats in one pass, so a firmware logs with it as a host does
//! (`log`, `defmt`, `esp-println`, `eprintln!`):
//!
//! ```
//! use mcp_core::transport::escape::escaped;
//!
//! let version = "7.2.0\ndevice-sim: forged\x1b[31m";
//! assert_eq!(
//!     format!("firmware {}", escaped(version)),
//!     r"firmware 7.2.0\ndevice-sim: forged\u{1b}[31m"
//! );
//! assert_eq!(format!("{}", escaped("abcdef").max_chars(3)), "abc…");
//! ```

use core::fmt::{self, Write as _};

/// The most characters of the input [`escaped`] shows by default.
pub const MAX_SHOWN_CHARS: usize = 128;

/// Text for a log line; see the [module](self). `Display` writes it escaped and capped.
#[derive(Debug, Clone, Copy)]
pub struct Escaped<'a> {
    text: &'a [u8],
    max: usize,
}

/// `s`, escaped and capped at [`MAX_SHOWN_CHARS`] characters when displayed.
pub const fn escaped(s: &str) -> Escaped<'_> {
    escaped_bytes(s.as_bytes())
}

/// `bytes` as [`escaped`] shows a string; what is not UTF-8 shows as `\x..`, byte by byte.
pub const fn escaped_bytes(bytes: &[u8]) -> Escaped<'_> {
    Escaped {
        text: bytes,
        max: MAX_SHOWN_CHARS,
    }
}

impl Escaped<'_> {
    /// Shows at most `n` characters of the input (an invalid byte counts as one).
    #[must_use]
    pub const fn max_chars(mut self, n: usize) -> Self {
        self.max = n;
        self
    }

    /// Calls `piece` with the output in pieces: plain runs of the input and escapes.
    fn pieces(&self, mut piece: impl FnMut(Piece<'_>) -> fmt::Result) -> fmt::Result {
        let mut left = self.max;
        for chunk in self.text.utf8_chunks() {
            let valid = chunk.valid();
            let mut run_start = 0;
            for (i, c) in valid.char_indices() {
                if left == 0 {
                    piece(Piece::Plain(valid.get(run_start..i).unwrap_or_default()))?;
                    return piece(Piece::More);
                }
                left -= 1;
                if needs_escape(c) {
                    piece(Piece::Plain(valid.get(run_start..i).unwrap_or_default()))?;
                    piece(Piece::Char(c))?;
                    run_start = i + c.len_utf8();
                }
            }
            piece(Piece::Plain(valid.get(run_start..).unwrap_or_default()))?;
            for &b in chunk.invalid() {
                if left == 0 {
                    return piece(Piece::More);
                }
                left -= 1;
                piece(Piece::Byte(b))?;
            }
        }
        Ok(())
    }
}

/// One piece of the output.
enum Piece<'a> {
    /// Input that needs no escape.
    Plain(&'a str),
    /// A character to escape.
    Char(char),
    /// A byte that is not UTF-8.
    Byte(u8),
    /// The cap was reached with input left.
    More,
}

/// `true` for a character a log line (or a display) must not carry as it is.
fn needs_escape(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\\' | '\u{2028}'
                | '\u{2029}'
                // Bidi controls.
                | '\u{061c}'
                | '\u{200e}'
                | '\u{200f}'
                | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
                // Characters that show nothing: zero-width ones (space, joiners, word joiner,
                // invisible operators, BOM), the soft hyphen, the grapheme joiner, and the
                // blank fillers that look like nothing.
                | '\u{00ad}'
                | '\u{034f}'
                | '\u{115f}'
                | '\u{1160}'
                | '\u{17b4}'
                | '\u{17b5}'
                | '\u{180b}'..='\u{180f}'
                | '\u{200b}'..='\u{200d}'
                | '\u{2060}'..='\u{2064}'
                | '\u{3164}'
                | '\u{feff}'
                | '\u{ffa0}'
        )
}

impl fmt::Display for Escaped<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.pieces(|p| match p {
            Piece::Plain(s) => f.write_str(s),
            Piece::Char(c) => write_escape(f, c),
            Piece::Byte(b) => write!(f, "\\x{b:02x}"),
            Piece::More => f.write_char('…'),
        })
    }
}

/// Writes `c` as [`escaped`] shows it: as it is, or as its escape when a log line or a display
/// must not carry it ([`needs_escape`]).
pub(crate) fn write_char(f: &mut dyn fmt::Write, c: char) -> fmt::Result {
    if needs_escape(c) {
        write_escape(f, c)
    } else {
        f.write_char(c)
    }
}

/// The escape of a character that [`needs_escape`].
fn write_escape(f: &mut dyn fmt::Write, c: char) -> fmt::Result {
    match c {
        '\\' => f.write_str("\\\\"),
        '\n' => f.write_str("\\n"),
        '\r' => f.write_str("\\r"),
        '\t' => f.write_str("\\t"),
        c => write!(f, "\\u{{{:x}}}", u32::from(c)),
    }
}

#[cfg(feature = "defmt")]
impl defmt::Format for Escaped<'_> {
    fn format(&self, f: defmt::Formatter<'_>) {
        let _ = self.pieces(|p| {
            match p {
                Piece::Plain(s) => defmt::write!(f, "{=str}", s),
                Piece::Char('\\') => defmt::write!(f, "\\\\"),
                Piece::Char('\n') => defmt::write!(f, "\\n"),
                Piece::Char('\r') => defmt::write!(f, "\\r"),
                Piece::Char('\t') => defmt::write!(f, "\\t"),
                Piece::Char(c) => defmt::write!(f, "\\u{{{=u32:x}}}", u32::from(c)),
                Piece::Byte(b) => defmt::write!(f, "\\x{=u8:02x}", b),
                Piece::More => defmt::write!(f, "…"),
            }
            Ok(())
        });
    }
}

#[cfg(test)]
mod test {
    use super::*;

    fn show(s: &str) -> String {
        format!("{}", escaped(s))
    }

    #[test]
    fn plain_text_is_unchanged() {
        for s in ["", "7.1.0", "Küche 🔊 温度", "a b/c:d\"e'f"] {
            assert_eq!(show(s), s);
        }
    }

    #[test]
    fn controls_and_look_alikes_are_escaped() {
        assert_eq!(show("a\nb"), r"a\nb");
        assert_eq!(show("a\r\n\tb"), r"a\r\n\tb");
        assert_eq!(show("\x1b[2J\x1b[31m"), r"\u{1b}[2J\u{1b}[31m");
        assert_eq!(
            show("\0\x07\x7f\u{85}\u{9b}"),
            r"\u{0}\u{7}\u{7f}\u{85}\u{9b}"
        );
        assert_eq!(show("x\u{2028}y\u{2029}"), r"x\u{2028}y\u{2029}");
        assert_eq!(
            show("\u{202e}gnp\u{2066}\u{2069}\u{200f}\u{61c}"),
            r"\u{202e}gnp\u{2066}\u{2069}\u{200f}\u{61c}"
        );
        // A backslash is doubled: `\n` in the log is always an escaped newline.
        assert_eq!(show(r"a\nb"), r"a\\nb");
        let shown = show("line\nforged: yes\x1b]0;title\x07");
        assert!(shown.chars().all(|c| !c.is_control()), "{shown}");
    }

    #[test]
    fn invisible_characters_are_escaped() {
        // Zero-width and other characters that show nothing, with which a name or a code can
        // imitate another: each shows as its escape.
        assert_eq!(
            show("bo\u{200b}b\u{200c}\u{200d}\u{2060}\u{feff}\u{ad}"),
            r"bo\u{200b}b\u{200c}\u{200d}\u{2060}\u{feff}\u{ad}"
        );
        assert_eq!(
            show("\u{180e}\u{2061}\u{2064}\u{34f}\u{115f}\u{3164}\u{ffa0}"),
            r"\u{180e}\u{2061}\u{2064}\u{34f}\u{115f}\u{3164}\u{ffa0}"
        );
        // Visible text, emoji variation selectors and combining marks are kept.
        assert_eq!(show("é 👍🏽 ❤\u{fe0f} ü"), "é 👍🏽 ❤\u{fe0f} ü");
    }

    #[test]
    fn bytes_that_are_not_utf8() {
        assert_eq!(
            format!("{}", escaped_bytes(b"ok\xff\xfe\n\xc3\xa9")),
            r"ok\xff\xfe\né"
        );
        assert_eq!(format!("{}", escaped_bytes(b"\xe2\x82")), r"\xe2\x82");
    }

    #[test]
    fn capped_in_characters() {
        let long = "A".repeat(1000);
        let shown = show(&long);
        assert_eq!(shown, format!("{}…", "A".repeat(MAX_SHOWN_CHARS)));
        assert_eq!(
            show(&"A".repeat(MAX_SHOWN_CHARS)),
            "A".repeat(MAX_SHOWN_CHARS)
        );
        assert_eq!(format!("{}", escaped("ab\ncd").max_chars(3)), r"ab\n…");
        assert_eq!(format!("{}", escaped("éé").max_chars(1)), "é…");
        assert_eq!(
            format!("{}", escaped_bytes(b"a\xff\xff").max_chars(2)),
            r"a\xff…"
        );
        assert_eq!(format!("{}", escaped("abc").max_chars(0)), "…");
        assert_eq!(format!("{}", escaped("").max_chars(0)), "");
        // The worst case stays bounded: every character escaped at its longest.
        let worst = "\u{9b}".repeat(1000);
        assert!(show(&worst).len() <= MAX_SHOWN_CHARS * 8 + 3);
    }
}
