//! `tools/call`: look up, refuse by audience, replay retransmissions, validate, run, render.

use core::fmt::Write as _;

use super::cache::{Seen, call_key};
use super::{Principal, Respond, Server, UserToolPolicy, finish, members};
use crate::fmt::debug;
use crate::registry::Audience;
use crate::result::{Message, Output, Span, ToolError, Value};
use crate::schema::validate;
use crate::wire::json::Json;
use crate::wire::request::Id;
use crate::wire::response::{ErrorCode, write_error, write_result};
use crate::wire::writer::Writer;
use crate::{Reply, ToolResult};

impl<C, const N: usize, const CACHE: usize, const CACHE_BYTES: usize>
    Server<'_, C, N, CACHE, CACHE_BYTES>
{
    pub(super) fn call(
        &mut self,
        id: Id<'_>,
        params: Option<Json<'_>>,
        principal: Principal,
        ctx: &mut C,
        out: &mut [u8],
    ) -> usize {
        let respond = |out| Respond { out, id: Some(id) };
        let [name, arguments] = match members(params, ["name", "arguments"]) {
            Ok(m) => m,
            Err(msg) => return respond(out).error(ErrorCode::InvalidParams, |w| w.text(msg)),
        };
        let Some(name) = name.and_then(|n| n.as_str()) else {
            return respond(out).error(ErrorCode::InvalidParams, |w| {
                w.text("Invalid params: tools/call needs a tool name (a string)");
            });
        };
        let Some(tool) = self.registry.find(name) else {
            return respond(out).error(ErrorCode::InvalidParams, |w| {
                w.text("Unknown tool: ");
                for c in name.chars().take(128) {
                    let _ = w.write_char(c);
                }
            });
        };
        if tool.audience() == Audience::User
            && principal == Principal::Model
            && self.config.user_tools == UserToolPolicy::Enforce
        {
            debug!("refused user-only tool {} for the model", tool.name());
            return respond(out).error(ErrorCode::InvalidParams, |w| {
                w.text("Tool ");
                w.text(tool.name());
                w.text(" is only available to the user, not to the model");
            });
        }

        let key = call_key(&[id.raw(), name.raw(), arguments.map_or(b"", |a| a.raw())]);
        match self.cache.get(key) {
            Some(Seen::Replay(bytes)) => {
                debug!(
                    "retransmission of a {} call answered from the cache",
                    tool.name()
                );
                if let Some(dst) = out.get_mut(..bytes.len()) {
                    dst.copy_from_slice(bytes);
                    return bytes.len();
                }
                return respond(out).error(ErrorCode::InternalError, |w| {
                    w.text("Retransmission of a call that already ran; its response does not fit this buffer");
                });
            }
            Some(Seen::Executed) => {
                return respond(out).error(ErrorCode::InternalError, |w| {
                    w.text("Retransmission of a call that already ran; its response is too large to replay");
                });
            }
            None => {}
        }

        let args = match validate(tool.param_specs(), arguments) {
            Ok(args) => args,
            Err(e) => {
                debug!("refused arguments for {}", tool.name());
                // The handler does not run. The revision decides how the refusal is reported.
                if self.effective_revision().reports_validation_as_tool_error() {
                    return respond(out).result(|w| {
                        w.raw(b"{\"content\":[{\"type\":\"text\",\"text\":");
                        w.begin_string();
                        let _ = e.render(w);
                        w.end_string();
                        w.raw(b"}],\"isError\":true}");
                    });
                }
                return respond(out).error(ErrorCode::InvalidParams, |w| {
                    let _ = e.render(w);
                });
            }
        };

        // Run the handler with the whole output buffer as its scratch area.
        self.call_seq = self.call_seq.wrapping_add(1);
        let seq = self.call_seq;
        let (result, used) = {
            let mut reply = Reply::new(out, principal, seq);
            let result = (tool.handler())(ctx, &args, &mut reply);
            (result, reply.used())
        };
        // Move the scratch bytes to the end of the buffer and render the response in front.
        let tail = out.len().saturating_sub(used);
        out.copy_within(..used.min(out.len()), tail);
        let (head, scratch) = out.split_at_mut(tail);
        let len = finish(head, Some(id), "; the tool did run", |w| {
            write_result(w, id, |w| render_result(w, &result, scratch, seq));
        });
        let len = if len > 0 {
            len
        } else {
            // Not even the short error fits in front of the scratch bytes: use the whole buffer.
            let mut w = Writer::new(out);
            write_error(&mut w, Some(id), ErrorCode::InternalError, |w| {
                w.text("Response too large for the device's output buffer; the tool did run");
            });
            if w.fits() { w.needed() } else { 0 }
        };
        if let Some(sent) = out.get(..len) {
            self.cache.put(key, sent);
        }
        len
    }
}

/// Writes the `CallToolResult` object.
fn render_result(w: &mut Writer<'_>, result: &ToolResult, scratch: &[u8], seq: u32) {
    let span = |s: Span| s.resolve(scratch, seq);
    match result {
        Ok(Output { value, evidence }) => {
            w.raw(b"{\"content\":[");
            match *value {
                Value::Image { mime, data } => {
                    w.raw(b"{\"type\":\"image\",\"data\":\"");
                    w.raw(span(data).unwrap_or_default());
                    w.raw(b"\",\"mimeType\":");
                    w.string(mime);
                    w.raw(b"}");
                }
                value => {
                    w.raw(b"{\"type\":\"text\",\"text\":");
                    w.begin_string();
                    write_plain(w, value, &span);
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
            match *value {
                Value::Image { .. } => {}
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
            w.raw(b",\"isError\":false");
            if let Some(e) = evidence {
                w.raw(b",\"evidence\":");
                e.write_json(w);
            }
            w.raw(b"}");
        }
        Err(ToolError { message, evidence }) => {
            w.raw(b"{\"content\":[{\"type\":\"text\",\"text\":");
            w.begin_string();
            match *message {
                Message::Static(s) => w.text(s),
                Message::Scratch(s) => w.raw(span(s).unwrap_or(b"Tool failed")),
            }
            w.end_string();
            w.raw(b"}");
            if let Some(e) = evidence {
                w.raw(b",{\"type\":\"text\",\"text\":");
                w.begin_string();
                e.write_text(w);
                w.end_string();
                w.raw(b"}");
            }
            w.raw(b"],\"isError\":true");
            if let Some(e) = evidence {
                w.raw(b",\"evidence\":");
                e.write_json(w);
            }
            w.raw(b"}");
        }
    }
}

/// The value's plain rendering (`true`, `40`, the text, the JSON text).
fn write_plain<'s>(w: &mut Writer<'_>, value: Value, span: &impl Fn(Span) -> Option<&'s [u8]>) {
    match value {
        Value::Bool(b) => w.bool(b),
        Value::Int(i) => w.int(i),
        Value::Number(n) => w.number(n),
        Value::Static(s) => w.text(s),
        Value::Text(s) | Value::Json(s) => w.raw(span(s).unwrap_or_default()),
        Value::Image { .. } => {}
    }
}
