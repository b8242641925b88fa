//! Text from the wire, made safe for a log line: [`Shown`] is mcp-core's escaper
//! ([`mcp_core::transport::escape`]: control characters, bidi controls and backslashes escaped
//! as `\n`, `\u{1b}`, `\\`, so that a server cannot forge log lines, move the cursor or hide
//! text) with the firmware's cap of 64 characters. There is one escaper in the project, and this
//! is its firmware-side name.

use core::fmt;

use mcp_core::transport::escape::{Escaped, escaped};

/// Displays the wrapped text escaped, at most 64 characters of it (or [`max`](Self::max); then
/// `…`).
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a>(Escaped<'a>);

impl<'a> Shown<'a> {
    /// At most 64 characters of `text`, escaped.
    pub const fn new(text: &'a str) -> Self {
        Shown(escaped(text).max_chars(64))
    }

    /// At most `max` characters.
    #[must_use]
    pub const fn max(self, max: usize) -> Self {
        Shown(self.0.max_chars(max))
    }
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn control_characters_and_backslashes_are_escaped_and_the_text_capped() {
        let s = format!("{}", Shown::new("12\"34\n\x1b[2Jé\\\u{202e}"));
        assert_eq!(s, "12\"34\\n\\u{1b}[2Jé\\\\\\u{202e}");
        assert_eq!(format!("{}", Shown::new("abcdef").max(3)), "abc…");
        assert_eq!(
            format!("{}", Shown::new(&"x".repeat(70))),
            format!("{}…", "x".repeat(64))
        );
        assert_eq!(format!("{}", Shown::new("")), "");
    }
}
