//! `tools/call`: look up, refuse by audience, replay retransmissions, validate, run, render.

use core::fmt::Write as _;

use super::cache::{Seen, call_key};
use super::tasks::{MAX_PROGRESS_TOKEN_LEN, NewTask};
use super::{Notify, Principal, Respond, Server, UserToolPolicy, finish, members};
use crate::fmt::debug;
use crate::registry::{Audience, TaskSupport};
use crate::result::{Message, Output, Span, ToolError, Value};
use crate::schema::validate;
use crate::wire::json::{Integer, Json, Kind};
use crate::wire::request::Id;
use crate::wire::response::{ErrorCode, write_error, write_result};
use crate::wire::writer::Writer;
use crate::{Reply, ToolResult};

impl<C, const N: usize, const TASKS: usize, const CACHE: usize, const CACHE_BYTES: usize>
    Server<'_, C, N, TASKS, CACHE, CACHE_BYTES>
{
    pub(super) fn call(
        &mut self,
        id: Id<'_>,
        params: Option<Json<'_>>,
        principal: Principal,
        ctx: &mut C,
        out: &mut [u8],
        notify: &mut dyn Notify,
    ) -> usize {
        let respond = |out| Respond { out, id: Some(id) };
        let [name, arguments, task, meta] =
            match members(params, ["name", "arguments", "task", "_meta"]) {
                Ok(m) => m,
                Err(msg) => return respond(out).error(ErrorCode::InvalidParams, |w| w.text(msg)),
            };
        let Some(name) = name.and_then(|n| n.as_str()) else {
            return respond(out).error(ErrorCode::InvalidParams, |w| {
                w.text("Invalid params: tools/call needs a tool name (a string)");
            });
        };
        let Some(index) = self.registry.position(name) else {
            return respond(out).error(ErrorCode::InvalidParams, |w| {
                w.text("Unknown tool: ");
                for c in name.chars().take(128) {
                    let _ = w.write_char(c);
                }
            });
        };
        let Some(tool) = self.registry.get(index) else {
            return 0;
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

        // Task augmentation (ignored entirely when this server has no task table).
        let augmented = TASKS > 0 && task.is_some();
        let ttl_ms = match task.filter(|_| TASKS > 0).map(task_ttl) {
            Some(Err(msg)) => return respond(out).error(ErrorCode::InvalidParams, |w| w.text(msg)),
            Some(Ok(ttl)) => ttl,
            None => None,
        };
        match (tool.task_support(), augmented) {
            (TaskSupport::Forbidden, true) => {
                return respond(out).error(ErrorCode::MethodNotFound, |w| {
                    w.text("Tool ");
                    w.text(tool.name());
                    w.text(" does not support task-augmented calls");
                });
            }
            (TaskSupport::Required, false) => {
                return respond(out).error(ErrorCode::MethodNotFound, |w| {
                    w.text("Tool ");
                    w.text(tool.name());
                    w.text(" must be called as a task (params.task)");
                });
            }
            _ => {}
        }

        let key = call_key(&[
            id.raw(),
            name.raw(),
            arguments.map_or(b"", |a| a.raw()),
            if augmented { b"task" } else { b"" },
        ]);
        // Only actions are deduplicated: a read-only tool is answered afresh every time.
        let cached = if tool.is_read_only() {
            None
        } else {
            self.cache.get(key)
        };
        match cached {
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

        let long_running = tool.task_hooks().copied();
        if long_running.is_some() && !self.tasks.has_room() {
            // Refused before the handler runs: nothing is started that could not be tracked.
            const BUSY: &str =
                "Device busy: every task slot holds a running action; nothing was started";
            if augmented {
                return respond(out).error(ErrorCode::InternalError, |w| w.text(BUSY));
            }
            return respond(out)
                .result(|w| render_result(w, &Err(ToolError::new(BUSY)), &[], 0, None, None));
        }

        // Run the handler with the whole output buffer as its scratch area.
        self.call_seq = self.call_seq.wrapping_add(1);
        let seq = self.call_seq;
        let (mut result, used) = {
            let token = meta.and_then(progress_token);
            let mut reply = Reply::new(out, principal, seq)
                .with_tasks(&self.tasks)
                .with_notify(notify, token, self.log_level);
            let result = (tool.handler())(ctx, &args, &mut reply);
            (result, reply.used())
        };
        if long_running.is_none()
            && matches!(
                result,
                Ok(Output {
                    value: Value::Task(_),
                    ..
                })
            )
        {
            result = Err(ToolError::new(
                "Tool bug: Output::task from a tool that is not long-running",
            ));
        }
        let len = match long_running {
            Some(hooks)
                if augmented
                    || matches!(
                        result,
                        Ok(Output {
                            value: Value::Task(_),
                            ..
                        })
                    ) =>
            {
                let token = meta.and_then(progress_token);
                let new = NewTask {
                    tool: index,
                    tool_name: tool.name(),
                    augmented,
                    ttl_ms,
                    token,
                    timeout_ms: hooks.timeout_ms,
                };
                finish(out, Some(id), "; the tool did run", |w| {
                    self.start_task(new, result, id, w)
                })
            }
            _ => self.render_call(id, &result, used, seq, out),
        };
        if let Some(sent) = out.get(..len).filter(|_| !tool.is_read_only()) {
            self.cache.put(key, sent);
        }
        len
    }

    /// Renders a handler's result in front of the scratch bytes it wrote.
    fn render_call(
        &self,
        id: Id<'_>,
        result: &ToolResult,
        used: usize,
        seq: u32,
        out: &mut [u8],
    ) -> usize {
        // Move the scratch bytes to the end of the buffer and render the response in front.
        let tail = out.len().saturating_sub(used);
        out.copy_within(..used.min(out.len()), tail);
        let (head, scratch) = out.split_at_mut(tail);
        let len = finish(head, Some(id), "; the tool did run", |w| {
            write_result(w, id, |w| {
                render_result(w, result, scratch, seq, None, None)
            });
        });
        if len > 0 {
            return len;
        }
        // Not even the short error fits in front of the scratch bytes: use the whole buffer.
        let mut w = Writer::new(out);
        write_error(&mut w, Some(id), ErrorCode::InternalError, |w| {
            w.text("Response too large for the device's output buffer; the tool did run");
        });
        if w.fits() { w.needed() } else { 0 }
    }
}

/// `params.task`: an object with an optional non-negative integer `ttl` (ms).
fn task_ttl(task: Json<'_>) -> Result<Option<u64>, &'static str> {
    const BAD: &str = "Invalid params: task must be an object with an optional integer ttl (ms)";
    if task.kind() != Kind::Object {
        return Err(BAD);
    }
    let [ttl] = members(Some(task), ["ttl"]).map_err(|_| BAD)?;
    match ttl.map(|t| (t.kind(), t.as_integer())) {
        None | Some((Kind::Null, _)) => Ok(None),
        Some((_, Some(Integer::Exact(v)))) => u64::try_from(v).map(Some).map_err(|_| BAD),
        Some((_, Some(Integer::OutOfRange))) => Ok(Some(u64::MAX)),
        Some(_) => Err(BAD),
    }
}

/// `params._meta.progressToken`: a string or an integer, kept when short enough.
fn progress_token(meta: Json<'_>) -> Option<Json<'_>> {
    let [token] = members(
        Some(meta).filter(|m| m.kind() == Kind::Object),
        ["progressToken"],
    )
    .ok()?;
    token.filter(|t| {
        t.raw().len() <= MAX_PROGRESS_TOKEN_LEN
            && (t.kind() == Kind::String || t.is_plain_integer())
    })
}

/// Writes a `CallToolResult` object. `note` is appended to a failure's message (a safe-stop);
/// `related_task` adds the `io.modelcontextprotocol/related-task` metadata.
pub(super) fn render_result(
    w: &mut Writer<'_>,
    result: &ToolResult,
    scratch: &[u8],
    seq: u32,
    note: Option<&str>,
    related_task: Option<u32>,
) {
    let span = |s: Span| s.resolve(scratch, seq);
    let evidence = match result {
        Ok(o) => o.evidence,
        Err(e) => e.evidence,
    };
    w.raw(b"{\"content\":[");
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
    if let Some(e) = evidence {
        w.raw(b",\"evidence\":");
        e.write_json(w);
    }
    if let Some(task) = related_task {
        w.raw(b",\"_meta\":{\"io.modelcontextprotocol/related-task\":{\"taskId\":\"task-");
        w.uint(u64::from(task));
        w.raw(b"\"}}");
    }
    w.raw(b"}");
}

/// The value's plain rendering (`true`, `40`, the text, the JSON text).
fn write_plain<'s>(w: &mut Writer<'_>, value: Value, span: &impl Fn(Span) -> Option<&'s [u8]>) {
    match value {
        Value::Bool(b) => w.bool(b),
        Value::Int(i) => w.int(i),
        Value::Number(n) => w.number(n),
        Value::Static(s) => w.text(s),
        Value::Text(s) | Value::Json(s) => w.raw(span(s).unwrap_or_default()),
        Value::Content(_) | Value::Task(_) => {}
    }
}
