//! Rendering a handler's result as the members of an MCP `CallToolResult`: the content blocks, the
//! `structuredContent`, `isError`, and the evidence as JSON and as text — the same for a call's
//! answer, a task's final result and a status tool's report.

use super::{Evidence, Level, Message, Output, Reading, Span, ToolError, ToolResult, Value};
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
///
/// The constant parts are written as few, large pieces (`"},{"type":"text","text":"` is one);
/// only the value, the messages and the evidence are formatted per call.
pub(crate) fn render_result_for(
    w: &mut Writer<'_>,
    result: &ToolResult,
    scratch: &[u8],
    seq: u32,
    note: Option<&str>,
    error_member: bool,
) {
    const TEXT_BLOCK: &[u8] = b"\"content\":[{\"type\":\"text\",\"text\":\"";
    let span = |s: Span| s.resolve(scratch, seq);
    let evidence = match result {
        Ok(o) => o.evidence.as_ref(),
        Err(e) => e.evidence.as_ref(),
    };
    match result {
        // A boolean (most actions' answer): its text block is a constant.
        Ok(Output {
            value: Value::Bool(b),
            ..
        }) => w.plain(if *b {
            b"\"content\":[{\"type\":\"text\",\"text\":\"true\"}"
        } else {
            b"\"content\":[{\"type\":\"text\",\"text\":\"false\"}"
        }),
        Ok(Output {
            value: Value::Content(blocks),
            ..
        }) => {
            w.raw(b"\"content\":[");
            w.raw(span(*blocks).unwrap_or(b"{\"type\":\"text\",\"text\":\"\"}"));
        }
        Ok(Output { value, .. }) => {
            w.open_string(TEXT_BLOCK);
            write_plain(w, *value, &span);
            w.close_string(b"\"}");
        }
        Err(ToolError { message, .. }) => {
            w.open_string(TEXT_BLOCK);
            match *message {
                Message::Static(s) => w.text(s),
                Message::Scratch(s) => w.raw(span(s).unwrap_or(b"Tool failed")),
            }
            if let Some(note) = note {
                w.plain(b"; ");
                w.text(note);
            }
            w.close_string(b"\"}");
        }
    }
    if let Some(e) = evidence {
        evidence_text_block(w, e);
    }
    if let Ok(Output { value, .. }) = result {
        match *value {
            // As constant as its text block.
            Value::Bool(b) => {
                w.plain(if b {
                    b"],\"structuredContent\":{\"value\":true},\"isError\":false"
                } else {
                    b"],\"structuredContent\":{\"value\":false},\"isError\":false"
                });
            }
            Value::Content(_) | Value::Task(_) => w.plain(b"],\"isError\":false"),
            Value::Json(s) => {
                w.plain(b"],\"structuredContent\":");
                w.raw(span(s).unwrap_or(b"{}"));
                w.plain(b",\"isError\":false");
            }
            Value::Text(_) | Value::Static(_) => {
                w.open_string(b"],\"structuredContent\":{\"value\":\"");
                write_plain(w, *value, &span);
                w.close_string(b"\"},\"isError\":false");
            }
            value => {
                w.plain(b"],\"structuredContent\":{\"value\":");
                write_plain(w, value, &span);
                w.plain(b"},\"isError\":false");
            }
        }
    } else {
        w.plain(b"],\"isError\":true");
    }
    if let (true, Err(ToolError { message, evidence })) = (error_member, result) {
        // What a xiaozhi backend says to the user: the reason and what the device observed.
        w.open_string(b",\"error\":\"");
        match *message {
            Message::Static(s) => w.text(s),
            Message::Scratch(s) => w.raw(span(s).unwrap_or(b"Tool failed")),
        }
        if let Some(e) = evidence {
            w.plain(b"; ");
            e.write_text(w);
        }
        w.close_string(b"\"");
    }
    if let Some(e) = evidence {
        evidence_member(w, e);
    }
}

/// Evidence the fragments below can write: readings absent, integers or on/off, no tolerance, no
/// unit (what most kits report). Anything else is written by [`Evidence::write_text`] and
/// [`Evidence::write_json`].
fn is_common(e: &Evidence) -> bool {
    let plain = |r: Option<Reading>| matches!(r, None | Some(Reading::Int(_) | Reading::Bool(_)));
    e.tolerance == 0 && e.unit.is_none() && plain(e.commanded) && plain(e.observed)
}

/// `,{"type":"text","text":"evidence: <level>` for each [`Level`], in its order.
const TEXT_HEADS: [&[u8]; 4] = [
    concat!(r#",{"type":"text","text":"evidence: "#, "scheduled").as_bytes(),
    concat!(r#",{"type":"text","text":"evidence: "#, "applied").as_bytes(),
    concat!(r#",{"type":"text","text":"evidence: "#, "read_back").as_bytes(),
    concat!(r#",{"type":"text","text":"evidence: "#, "measured").as_bytes(),
];

/// `,"evidence":{"level":"<level>"` for each [`Level`], in its order.
const JSON_HEADS: [&[u8]; 4] = [
    concat!(r#","evidence":{"level":""#, "scheduled", "\"").as_bytes(),
    concat!(r#","evidence":{"level":""#, "applied", "\"").as_bytes(),
    concat!(r#","evidence":{"level":""#, "read_back", "\"").as_bytes(),
    concat!(r#","evidence":{"level":""#, "measured", "\"").as_bytes(),
];

const fn level_index(level: Level) -> usize {
    match level {
        Level::Scheduled => 0,
        Level::Applied => 1,
        Level::ReadBack => 2,
        Level::Measured => 3,
    }
}

/// A reading the fragments can write (see [`is_common`]).
fn write_reading(w: &mut Writer<'_>, r: Reading) {
    match r {
        Reading::Bool(b) => w.bool(b),
        Reading::Int(i) => w.int(i),
        #[allow(
            unreachable_patterns,
            reason = "other readings never get here (is_common)"
        )]
        _ => {}
    }
}

/// The evidence as a second text block: `,{"type":"text","text":"evidence: read_back (commanded
/// 40, observed 40)"}`, the common form from precomputed fragments.
fn evidence_text_block(w: &mut Writer<'_>, e: &Evidence) {
    if !is_common(e) {
        w.open_string(br#",{"type":"text","text":""#);
        e.write_text(w);
        w.close_string(b"\"}");
        return;
    }
    w.plain(
        TEXT_HEADS
            .get(level_index(e.level))
            .copied()
            .unwrap_or_default(),
    );
    match (e.commanded, e.observed) {
        (Some(c), Some(o)) => {
            w.plain(b" (commanded ");
            write_reading(w, c);
            w.plain(b", observed ");
            write_reading(w, o);
            w.plain(b")\"}");
        }
        (Some(c), None) => {
            w.plain(b" (commanded ");
            write_reading(w, c);
            w.plain(b")\"}");
        }
        (None, Some(o)) => {
            w.plain(b" (observed ");
            write_reading(w, o);
            w.plain(b")\"}");
        }
        (None, None) => w.plain(b"\"}"),
    }
}

/// The `evidence` member: `,"evidence":{"level":"read_back","commanded":40,"observed":40}`, the
/// common form from precomputed fragments.
fn evidence_member(w: &mut Writer<'_>, e: &Evidence) {
    if !is_common(e) {
        w.plain(b",\"evidence\":");
        e.write_json(w);
        return;
    }
    w.plain(
        JSON_HEADS
            .get(level_index(e.level))
            .copied()
            .unwrap_or_default(),
    );
    if let Some(c) = e.commanded {
        w.plain(b",\"commanded\":");
        write_reading(w, c);
    }
    if let Some(o) = e.observed {
        w.plain(b",\"observed\":");
        write_reading(w, o);
    }
    w.plain(b"}");
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

#[cfg(test)]
mod test {
    use super::*;

    /// The fragments write exactly what `Evidence::write_text` and `write_json` write.
    #[test]
    fn fragments_match_the_general_rendering() {
        let readings = [
            None,
            Some(Reading::Int(40)),
            Some(Reading::Int(-7)),
            Some(Reading::Int(i64::MIN)),
            Some(Reading::Bool(true)),
            Some(Reading::Bool(false)),
        ];
        for level in [
            Level::Scheduled,
            Level::Applied,
            Level::ReadBack,
            Level::Measured,
        ] {
            for c in readings {
                for o in readings {
                    let mut e = Evidence::new(level);
                    e.commanded = c;
                    e.observed = o;
                    assert!(is_common(&e));
                    let render = |f: &dyn Fn(&mut Writer<'_>)| {
                        let mut buf = [0u8; 256];
                        let mut w = Writer::new(&mut buf);
                        f(&mut w);
                        w.written().unwrap().to_vec()
                    };
                    let fast = render(&|w| evidence_text_block(w, &e));
                    let slow = render(&|w| {
                        w.open_string(br#",{"type":"text","text":""#);
                        e.write_text(w);
                        w.close_string(b"\"}");
                    });
                    assert_eq!(fast, slow, "{e:?}");
                    let fast = render(&|w| evidence_member(w, &e));
                    let slow = render(&|w| {
                        w.plain(b",\"evidence\":");
                        e.write_json(w);
                    });
                    assert_eq!(fast, slow, "{e:?}");
                }
            }
        }
        assert!(!is_common(&Evidence::new(Level::Applied).tolerance(2)));
        assert!(!is_common(&Evidence::new(Level::Applied).unit("mm")));
    }
}
