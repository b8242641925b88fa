//! Text from the wire, made safe for a log line: [`Shown`] prints a string with every control
//! character, quote, backslash and non-ASCII character escaped (`\n`, `\"`, `\u{1b}`), so that a
//! server cannot forge log lines, move the cursor or hide text with terminal escapes, and caps
//! its length. (A local escaper: mcp-core has none to share yet.)

use core::fmt;

/// Displays the wrapped text escaped, at most `max` characters of it (then `…`).
#[derive(Debug, Clone, Copy)]
pub struct Shown<'a> {
    text: &'a str,
    max: usize,
}

impl<'a> Shown<'a> {
    /// At most 64 characters of `text`, escaped.
    pub const fn new(text: &'a str) -> Self {
        Shown { text, max: 64 }
    }

    /// At most `max` characters.
    #[must_use]
    pub const fn max(mut self, max: usize) -> Self {
        self.max = max;
        self
    }
}

impl fmt::Display for Shown<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, c) in self.text.chars().enumerate() {
            if i == self.max {
                return f.write_str("…");
            }
            match c {
                '"' => f.write_str("\\\"")?,
                '\\' => f.write_str("\\\\")?,
                '\n' => f.write_str("\\n")?,
                '\r' => f.write_str("\\r")?,
                '\t' => f.write_str("\\t")?,
                ' '..='~' => fmt::Write::write_char(f, c)?,
                c => write!(f, "\\u{{{:x}}}", u32::from(c))?,
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod test {
    use super::*;

    #[test]
    fn control_characters_quotes_and_non_ascii_are_escaped() {
        let s = format!("{}", Shown::new("12\"34\n\x1b[2Jé\\"));
        assert_eq!(s, "12\\\"34\\n\\u{1b}[2J\\u{e9}\\\\");
        assert_eq!(format!("{}", Shown::new("abcdef").max(3)), "abc…");
        assert_eq!(format!("{}", Shown::new("")), "");
    }
}
