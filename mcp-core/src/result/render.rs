//! Rendering a handler's result as the members of an MCP `CallToolResult`: the content blocks, the
//! `structuredContent`, `isError`, and the evidence as JSON and as text — the same for a call's
//! answer, a task's final result and a status tool's report.

use super::{Message, Output, Span, ToolError, ToolResult, Value};
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
    match error.message {
        Message::Static(s) => w.text(s),
        Message::Scratch(s) => w.raw(s.resolve(scratch, seq).unwrap_or(b"Tool failed")),
    }
}

/// [`render_result`], with `error_member`: a failure also carries its message as an `error`
/// string member, where xiaozhi's backends (2024-11-05) look for it.
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
        Ok(o) => o.evidence,
        Err(e) => e.evidence,
    };
    w.raw(b"\"content\":[");
    match result {
        Ok(Output {
            value: Value::Content(blocks),
            ..
        }) => {
            w.raw(span(*blocks).unwrap_or(b"{\"type\":\"text\",\"text\":\"\"}"));
        }
        Ok(Output { value, .. }) => {
            w.raw(b"{\"type\":\"text\",\"text\":");
            w.begin_string();
            write_plain(w, *value, &span);
            w.end_string();
            w.raw(b"}");
        }
        Err(ToolError { message, .. }) => {
            w.raw(b"{\"type\":\"text\",\"text\":");
            w.begin_string();
            match *message {
                Message::Static(s) => w.text(s),
                Message::Scratch(s) => w.raw(span(s).unwrap_or(b"Tool failed")),
            }
            if let Some(note) = note {
                w.text("; ");
                w.text(note);
            }
            w.end_string();
            w.raw(b"}");
        }
    }
    if let Some(e) = evidence {
        w.raw(b",{\"type\":\"text\",\"text\":");
        w.begin_string();
        e.write_text(w);
        w.end_string();
        w.raw(b"}");
    }
    w.raw(b"]");
    if let Ok(Output { value, .. }) = result {
        match *value {
            Value::Content(_) | Value::Task(_) => {}
            Value::Json(s) => {
                w.raw(b",\"structuredContent\":");
                w.raw(span(s).unwrap_or(b"{}"));
            }
            Value::Text(_) | Value::Static(_) => {
                w.raw(b",\"structuredContent\":{\"value\":");
                w.begin_string();
                write_plain(w, *value, &span);
                w.end_string();
                w.raw(b"}");
            }
            value => {
                w.raw(b",\"structuredContent\":{\"value\":");
                write_plain(w, value, &span);
                w.raw(b"}");
            }
        }
    }
    w.raw(if result.is_ok() {
        b",\"isError\":false"
    } else {
        b",\"isError\":true"
    });
    if let (true, Err(ToolError { message, evidence })) = (error_member, result) {
        // What a xiaozhi backend says to the user: the reason and what the device observed.
        w.raw(b",\"error\":");
        w.begin_string();
        match *message {
            Message::Static(s) => w.text(s),
            Message::Scratch(s) => w.raw(span(s).unwrap_or(b"Tool failed")),
        }
        if let Some(e) = evidence {
            w.text("; ");
            e.write_text(w);
        }
        w.end_string();
    }
    if let Some(e) = evidence {
        w.raw(b",\"evidence\":");
        e.write_json(w);
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
        Value::Content(_) | Value::Task(_) => {}
    }
}
