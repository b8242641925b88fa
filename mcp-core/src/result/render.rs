//! Rendering a handler's result as the members of an MCP `CallToolResult`: the content blocks, the
//! `structuredContent`, `isError` (written for a failure only: absent, it is false), and the
//! evidence as JSON and as text — the same for a call's
//! answer, a task's final result and a status tool's report.

use super::{Message, Output, Span, ToolError, ToolResult, Value, report_parts};
use crate::wire::protocol::{self, join};
use crate::wire::writer::Writer;

/// Writes the members of a `CallToolResult` (no braces). `note` is appended to a failure's
/// message (a safe-stop).
pub(crate) fn render_result(
    w: &mut Writer<'_>,
    result: &ToolResult,
    scratch: &[u8],
    seq: u32,
    note: Option<&str>,
) {
    render_result_for(w, result, scratch, seq, note, false);
}

#[cfg(feature = "resources")]
/// A successful result's plain rendering as a JSON string (`"true"`, `"40"`, the text, the JSON
/// object's text): the text of a live resource's contents.
pub(crate) fn render_plain_string(w: &mut Writer<'_>, output: &Output, scratch: &[u8], seq: u32) {
    let span = |s: Span| s.resolve(scratch, seq);
    w.begin_string();
    write_plain(w, output.value, &span);
    w.end_string();
}

#[cfg(feature = "resources")]
/// A failure's message as plain text (for a JSON-RPC error message).
pub(crate) fn render_error_text(w: &mut Writer<'_>, error: &ToolError, scratch: &[u8], seq: u32) {
    write_message(w, error.message, scratch, seq);
}

/// A failure's message as text (`Tool failed` when its scratch text is gone).
fn write_message(w: &mut Writer<'_>, message: Message, scratch: &[u8], seq: u32) {
    match message {
        Message::Static(s) => w.text(s),
        Message::Scratch(s) => w.raw(s.resolve(scratch, seq).unwrap_or(b"Tool failed")),
    }
}

/// [`render_result`], with `error_member`: a failure also carries its first text as an `error`
/// string member, where xiaozhi's backends (2024-11-05) look for a failed call's reason.
///
/// The first text content is [`write_first_text`]: a client that hands the model only
/// `content[0].text` (xiaozhi's backend) still passes on the evidence. `structuredContent`,
/// `isError` and the evidence as data in `_meta` carry the same for programs.
pub(crate) fn render_result_for(
    w: &mut Writer<'_>,
    result: &ToolResult,
    scratch: &[u8],
    seq: u32,
    note: Option<&str>,
    error_member: bool,
) {
    let span = |s: Span| s.resolve(scratch, seq);
    let evidence = match result {
        Ok(o) => o.evidence.as_ref(),
        Err(e) => e.evidence.as_ref(),
    };
    match result {
        // A boolean (most actions' answer): its first text is the constant value and the
        // sentence after it, what `write_first_text` writes, in fewer pieces.
        Ok(Output {
            value: Value::Bool(b),
            ..
        }) => {
            w.open_string(if *b {
                join!(protocol::FIRST_TEXT_OPEN, b"true")
            } else {
                join!(protocol::FIRST_TEXT_OPEN, b"false")
            });
            if let Some(e) = evidence {
                e.write_sentence_after(w);
            }
            w.close_string(if *b {
                join!(protocol::FIRST_TEXT_END_VALUE, b"true}")
            } else {
                join!(protocol::FIRST_TEXT_END_VALUE, b"false}")
            });
        }
        Ok(Output {
            value: Value::Content(blocks),
            ..
        }) => {
            w.plain(protocol::CONTENT_OPEN);
            // The handler's blocks carry no evidence: it comes first, on its own.
            if let Some(e) = evidence {
                w.open_string(protocol::TEXT_BLOCK_OPEN);
                e.write_sentence(w);
                w.close_string(br#""},"#);
            }
            w.raw(span(*blocks).unwrap_or(protocol::EMPTY_TEXT_BLOCK));
            w.plain(b"]");
        }
        Ok(Output {
            value: Value::Captioned(s),
            ..
        }) => {
            // The caption and the evidence sentence are the first text; the blocks follow.
            w.open_string(protocol::FIRST_TEXT_OPEN);
            write_first_text(w, result, scratch, seq, note);
            w.close_string(b"\"}");
            w.raw(report_parts(span(*s).unwrap_or_default()).1);
            w.plain(b"]");
        }
        Ok(Output { value, .. }) => {
            w.open_string(protocol::FIRST_TEXT_OPEN);
            write_first_text(w, result, scratch, seq, note);
            match *value {
                Value::Json(s) => {
                    w.close_string(protocol::FIRST_TEXT_END_STRUCTURED);
                    w.raw(span(s).unwrap_or(b"{}"));
                }
                Value::Report(s) => {
                    w.close_string(protocol::FIRST_TEXT_END_STRUCTURED);
                    w.raw(report_parts(span(s).unwrap_or_default()).1);
                }
                Value::Text(_) | Value::Static(_) => {
                    w.close_string(protocol::FIRST_TEXT_END);
                    w.open_string(protocol::STRING_VALUE_OPEN);
                    write_plain(w, *value, &span);
                    w.close_string(b"\"}");
                }
                // (Not a result: a task start is answered in its own form.)
                Value::Task(_) => w.close_string(protocol::FIRST_TEXT_END),
                value => {
                    w.close_string(protocol::FIRST_TEXT_END_VALUE);
                    write_plain(w, value, &span);
                    w.plain(b"}");
                }
            }
        }
        Err(_) => {
            w.open_string(protocol::FIRST_TEXT_OPEN);
            write_first_text(w, result, scratch, seq, note);
            w.close_string(protocol::FIRST_TEXT_END_FAILED);
        }
    }
    if let (true, Err(_)) = (error_member, result) {
        // What a xiaozhi backend says to the user: the first text, reason and evidence.
        w.open_string(protocol::ERROR_STRING_OPEN);
        write_first_text(w, result, scratch, seq, note);
        w.close_string(b"\"");
    }
    if let Some(e) = evidence {
        e.write_member(w);
    }
}

/// The first text of a tool result: what a client that hands the model only `content[0].text`
/// (xiaozhi's backend) passes on, so it carries the business value and the evidence in one
/// sentence. `true — read back: 40`; a failure, `The codec reports a different
/// volume than commanded — read back: 47 (commanded 40)`, with `note` at the end (`… — measured:
/// 120 (commanded 400); safe-stop issued`); without evidence just the value (`true`, the text,
/// the JSON object's text) or the message (and note), as the tool gave it. Content blocks have no value to
/// write here (only the evidence is); a [`Value::Report`] its own text, a [`Value::Captioned`]
/// its caption.
///
/// Written as text: inside a JSON string it must be written in string mode.
pub(crate) fn write_first_text(
    w: &mut Writer<'_>,
    result: &ToolResult,
    scratch: &[u8],
    seq: u32,
    note: Option<&str>,
) {
    let span = |s: Span| s.resolve(scratch, seq);
    let start = w.mark();
    let (evidence, note) = match result {
        Ok(Output { value, evidence }) => {
            match *value {
                Value::Report(s) | Value::Captioned(s) => {
                    w.raw(report_parts(span(s).unwrap_or_default()).0);
                }
                value => write_plain(w, value, &span),
            }
            (evidence, None)
        }
        Err(ToolError { message, evidence }) => {
            write_message(w, *message, scratch, seq);
            (evidence, note)
        }
    };
    if let Some(e) = evidence {
        if w.mark() > start {
            e.write_sentence_after(w);
        } else {
            e.write_sentence(w);
        }
    }
    if let Some(note) = note {
        w.plain(b"; ");
        w.text(note);
    }
}

/// The value's plain rendering (`true`, `40`, the text, the JSON text).
fn write_plain<'s>(w: &mut Writer<'_>, value: Value, span: &impl Fn(Span) -> Option<&'s [u8]>) {
    match value {
        Value::Bool(b) => w.bool(b),
        Value::Int(i) => w.int(i),
        #[cfg(feature = "float")]
        Value::Number(n) => w.number(n),
        Value::Static(s) => w.text(s),
        Value::Text(s) | Value::Json(s) => w.raw(span(s).unwrap_or_default()),
        // The object (a resource's text); the report's own text is its first text.
        Value::Report(s) => w.raw(report_parts(span(s).unwrap_or_default()).1),
        // The caption (a resource's text; its blocks are its contents).
        Value::Captioned(s) => w.raw(report_parts(span(s).unwrap_or_default()).0),
        Value::Content(_) | Value::Task(_) => {}
    }
}

#[cfg(test)]
mod test {
    use super::super::{Evidence, Level, Reading};
    use super::*;

    fn rendered(f: impl FnOnce(&mut Writer<'_>)) -> String {
        let mut buf = [0u8; 512];
        let mut w = Writer::new(&mut buf);
        f(&mut w);
        String::from_utf8(w.written().unwrap().to_vec()).unwrap()
    }

    /// A boolean's first text, written in constant pieces, is what `write_first_text` writes.
    #[test]
    fn a_booleans_first_text_is_the_general_one() {
        let evidence = [
            None,
            Some(Evidence::new(Level::Scheduled)),
            Some(Evidence::new(Level::Applied).commanded(Reading::Int(55))),
            Some(
                Evidence::new(Level::ReadBack)
                    .commanded(Reading::Int(40))
                    .observed(Reading::Int(39))
                    .tolerance(2),
            ),
            Some(
                Evidence::new(Level::Measured)
                    .commanded(Reading::Str("say \"hi\""))
                    .observed(Reading::Bool(false))
                    .unit("mm"),
            ),
        ];
        for b in [true, false] {
            for e in evidence {
                let result: ToolResult = Ok(Output {
                    value: Value::Bool(b),
                    evidence: e,
                });
                let answer: serde_json::Value = serde_json::from_str(&format!(
                    "{{{}}}",
                    rendered(|w| {
                        render_result(w, &result, &[], 0, None);
                        w.close_meta();
                    })
                ))
                .unwrap();
                let first = rendered(|w| {
                    w.begin_string();
                    write_first_text(w, &result, &[], 0, None);
                    w.end_string();
                });
                let first: String = serde_json::from_str(&first).unwrap();
                assert_eq!(answer["content"][0]["text"], first.as_str(), "{e:?}");
                assert_eq!(answer["content"].as_array().unwrap().len(), 1);
                assert_eq!(answer["structuredContent"]["value"], b);
                assert_eq!(answer.get("isError"), None);
            }
        }
    }
}
