//! Writing an answer: [`Respond`] carries where it goes (the buffer, the id, the era), and the
//! writers here put the JSON-RPC envelope, the 2026-07-28 members and the too-large fallback
//! around what a method writes.

use core::cell::Cell;

use super::Status;
use super::era::Era;
use crate::wire::json::JsonError;
use crate::wire::protocol;
use crate::wire::request::Id;
use crate::wire::response::{ErrorCode, NO_DATA, error_into, open_result_object, write_error};
use crate::wire::writer::Writer;

/// Where a response goes: the output buffer, the id to echo, the era's extra members, and where
/// to report the HTTP status class.
pub(super) struct Respond<'o, 'i> {
    pub(super) out: &'o mut [u8],
    pub(super) id: Option<Id<'i>>,
    pub(super) era: Era<'i>,
    pub(super) info: (&'static str, &'static str),
    pub(super) status: &'o Cell<Status>,
}

impl<'i> Respond<'_, 'i> {
    /// A handle on the same answer for a step that may write it: what the step does not use
    /// stays with this one.
    #[inline(always)]
    pub(super) fn reborrow(&mut self) -> Respond<'_, 'i> {
        Respond {
            out: &mut *self.out,
            id: self.id,
            era: self.era,
            info: self.info,
            status: self.status,
        }
    }

    pub(super) fn error(self, code: ErrorCode, mut message: impl FnMut(&mut Writer<'_>)) -> usize {
        self.error_dyn(code, &mut message, None)
    }

    /// [`error`](Self::error) whose message is one piece of text: one closure for all of them
    /// (each closure passed to `error` is a function of its own in the firmware).
    pub(super) fn error_text(self, code: ErrorCode, message: &str) -> usize {
        self.error(code, |w| w.text(message))
    }

    /// [`error`](Self::error) whose message is these pieces of text, in order.
    pub(super) fn error_parts(self, code: ErrorCode, parts: &[&str]) -> usize {
        self.error(code, |w| parts.iter().for_each(|p| w.text(p)))
    }

    pub(super) fn error_with(
        self,
        code: ErrorCode,
        mut message: impl FnMut(&mut Writer<'_>),
        data: Option<impl FnMut(&mut Writer<'_>)>,
    ) -> usize {
        match data {
            Some(mut data) => self.error_dyn(code, &mut message, Some(&mut data)),
            None => self.error_dyn(code, &mut message, None),
        }
    }

    /// The one instance of the error writer: the message and data writers come as trait
    /// objects, so that the envelope is compiled once, not once per message (and its frame is
    /// paid only while an error is written).
    #[inline(never)]
    fn error_dyn(
        self,
        code: ErrorCode,
        message: &mut dyn FnMut(&mut Writer<'_>),
        data: Option<&mut dyn FnMut(&mut Writer<'_>)>,
    ) -> usize {
        if self.era.is_modern() {
            self.status.set(match code {
                ErrorCode::MethodNotFound => Status::NotFound,
                ErrorCode::HeaderMismatch
                | ErrorCode::MissingRequiredClientCapability
                | ErrorCode::UnsupportedProtocolVersion => Status::BadRequest,
                _ => self.status.get(),
            });
        }
        let id = self.id;
        finish(self.out, id, "", |w| {
            write_error(w, id, code, message, data)
        })
    }

    /// Writes a result object: `members` writes the members (without braces); the era's own
    /// members follow.
    pub(super) fn result(self, members: impl FnMut(&mut Writer<'_>)) -> usize {
        self.result_typed("complete", members)
    }

    pub(super) fn result_typed(
        self,
        result_type: &str,
        mut members: impl FnMut(&mut Writer<'_>),
    ) -> usize {
        self.result_dyn(result_type, &mut members)
    }

    /// The one instance of the result writer (see [`error_dyn`](Self::error_dyn)).
    #[inline(never)]
    fn result_dyn(self, result_type: &str, members: &mut dyn FnMut(&mut Writer<'_>)) -> usize {
        let Some(id) = self.id else { return 0 };
        let (era, info) = (self.era, self.info);
        finish(self.out, Some(id), "", |w| {
            write_result_object(w, id, era, info, result_type, members);
        })
    }
}

/// Writes `{` members, then for 2026-07-28 `resultType` and the server identity, `}`.
pub(crate) fn write_object(
    w: &mut Writer<'_>,
    era: Era<'_>,
    info: (&'static str, &'static str),
    result_type: &str,
    members: impl FnOnce(&mut Writer<'_>),
) {
    w.raw(b"{");
    let start = w.mark();
    members(w);
    object_tail(w, era, info, result_type, start);
    w.raw(b"}");
}

/// `write_result(w, id, |w| write_object(w, era, info, result_type, members))`, with the
/// constant pieces around the object joined: `,"result":{` is one, the closing `}}` another.
/// (Inlined: a call's answer, on the hot path, is written through it.)
#[inline(always)]
pub(crate) fn write_result_object(
    w: &mut Writer<'_>,
    id: Id<'_>,
    era: Era<'_>,
    info: (&'static str, &'static str),
    result_type: &str,
    members: impl FnOnce(&mut Writer<'_>),
) {
    open_result_object(w, id);
    let start = w.mark();
    members(w);
    object_tail(w, era, info, result_type, start);
    w.raw(b"}}");
}

/// What 2026-07-28 adds at the end of a result object that holds `start..` so far:
/// `resultType` and the server identity.
#[inline]
fn object_tail(
    w: &mut Writer<'_>,
    era: Era<'_>,
    info: (&'static str, &'static str),
    result_type: &str,
    start: usize,
) {
    if era.is_modern() {
        modern_tail(w, info, result_type, start);
    } else {
        // A result's `_meta` (its evidence as data) ends here.
        w.close_meta();
    }
}

/// [`object_tail`] for 2026-07-28. (Not inlined: kept out of [`finish`]'s inlined copies, which
/// the legacy answers of the hot path run through.)
#[inline(never)]
fn modern_tail(
    w: &mut Writer<'_>,
    info: (&'static str, &'static str),
    result_type: &str,
    start: usize,
) {
    let server_info = |w: &mut Writer<'_>| {
        // Joins the `_meta` member the result's evidence opened, if it did.
        w.meta_member(protocol::SERVER_INFO_META_OPEN);
        w.string(info.0);
        w.raw(protocol::VERSION);
        w.string(info.1);
        w.raw(b"}");
        w.close_meta();
    };
    if w.meta_open() {
        // The evidence opened the result's `_meta` (so the object has members): end it first.
        server_info(w);
        w.raw(protocol::RESULT_TYPE);
        w.string(result_type);
        return;
    }
    w.raw(if w.mark() != start {
        protocol::RESULT_TYPE
    } else {
        protocol::first(protocol::RESULT_TYPE)
    });
    w.string(result_type);
    server_info(w);
}

/// Renders a response; if it does not fit, replaces it with a short -32603 error that does.
/// `ran` is appended to that error's message (for `tools/call`: the tool did run). (Always
/// inlined: each caller's render is its own anyway, and a call answer's render out of line cost
/// `call_set_volume` some 70 instructions when the evidence writers grew.)
#[inline(always)]
pub(super) fn finish(
    out: &mut [u8],
    id: Option<Id<'_>>,
    ran: &str,
    render: impl FnOnce(&mut Writer<'_>),
) -> usize {
    let mut w = Writer::new(out);
    render(&mut w);
    if w.fits() {
        return w.needed();
    }
    let needed = w.needed();
    too_large(out, id, needed, ran)
}

/// [`finish`]'s answer when the response needs `needed` bytes and `out` holds fewer: a -32603
/// error that says so (formatted here, once, out of every caller's frame).
#[cold]
#[inline(never)]
pub(super) fn too_large(out: &mut [u8], id: Option<Id<'_>>, needed: usize, ran: &str) -> usize {
    let cap = out.len();
    // (Written piece by piece: no `core::fmt` in the firmware for it.)
    let mut message = |w: &mut Writer<'_>| {
        w.text("Response too large for the device's output buffer (");
        w.uint(needed as u64);
        w.text(" > ");
        w.uint(cap as u64);
        w.text(" bytes)");
        w.text(ran);
    };
    error_into(out, id, ErrorCode::InternalError, &mut message)
}

/// The -32700 answer to bytes that are not a JSON message the engine reads, with the request's
/// `id` when it could still be read safely (formatting the error is kept out of the dispatch's
/// frame).
#[cold]
#[inline(never)]
pub(super) fn parse_error(out: &mut [u8], id: Option<Id<'_>>, e: JsonError) -> usize {
    crate::fmt::debug!("parse error");
    finish(out, id, "", |w| {
        // `JsonError`'s `Display`, written piece by piece: no `core::fmt` in the firmware for it.
        let message = |w: &mut Writer<'_>| {
            w.text("Parse error: ");
            let (what, at) = match e {
                JsonError::Utf8(at) => ("invalid UTF-8 at byte ", at),
                JsonError::Syntax(at) => ("invalid JSON at byte ", at),
                JsonError::TooDeep(d) => {
                    w.text("JSON nested deeper than ");
                    w.uint(d.into());
                    w.text(" levels");
                    return;
                }
                JsonError::Empty => return w.text("empty message"),
            };
            w.text(what);
            w.uint(at as u64);
        };
        write_error(w, id, ErrorCode::ParseError, message, NO_DATA);
    })
}

/// `,"ttlMs":N,"cacheScope":"public"` for cacheable 2026-07-28 results (the tool set is the same
/// for every client, so it may be shared).
pub(crate) fn write_cache_hints(w: &mut Writer<'_>, ttl_ms: u32) {
    w.raw(protocol::TTL_MS);
    w.uint(u64::from(ttl_ms));
    w.raw(protocol::CACHE_SCOPE_PUBLIC);
}
