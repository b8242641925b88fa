//! `tools/list`: pages filled up to a byte budget, opaque advancing cursors.

use super::params::members;
use super::respond::{Respond, write_cache_hints};
use super::{Capacities, MIN_OUT_LEN, Principal, Server};
use crate::registry::{Audience, CURSOR_MEMBER_LEN, PAGE_CLOSE, PAGE_OPEN};
use crate::wire::json::Json;
use crate::wire::protocol;
use crate::wire::response::ErrorCode;

impl<C, K: Capacities> Server<'_, C, K> {
    /// Answers `tools/list`.
    ///
    /// The page budget counts the bytes of the `result` object, including the members a
    /// 2026-07-28 result adds (reserved up front: see [`Server::new`]). Tool sizes are measured at
    /// registration, so a page is planned without trial rendering, and a tool that could not fit
    /// an empty page was refused then: every page holds at least one tool and cursors always
    /// advance. The user-only tools, annotated `"audience":["user"]`, are listed to a person
    /// ([`Principal::User`]: what they may call, they see), and to anyone who asks with
    /// `withUserTools: true` (the JSON literal; anything else counts as absent, as in xiaozhi),
    /// on every revision: xiaozhi's backend asks with it to show a person what the device offers
    /// them, and xiaozhi's devices list them to it. Listing is not calling: `tools/call` still
    /// refuses a user-only tool to the model (see [`UserToolPolicy`](super::UserToolPolicy)). An
    /// empty cursor (`""`) asks for the first page, as an absent one does; any other unknown cursor is -32602. A page never outgrows the buffer
    /// it is written into: its budget is at most that buffer less room for the answer's head
    /// ([`MIN_OUT_LEN`]), so a transport that must send smaller frames (an MCP endpoint after a
    /// 1009 close) gets smaller pages by lending a smaller buffer.
    // Not inlined into `Server::request` (whose frame is under every tools/call).
    #[inline(never)]
    pub(super) fn list(
        &self,
        params: Option<Json<'_>>,
        principal: Principal,
        respond: Respond<'_, '_>,
    ) -> usize {
        let [cursor, with_user] = match members(params, ["cursor", "withUserTools"]) {
            Ok(m) => m,
            Err(msg) => return respond.error_text(ErrorCode::InvalidParams, msg),
        };
        let Some(start) = self.first_of_page(cursor) else {
            return respond.error_text(
                ErrorCode::InvalidParams,
                "Invalid params: unknown cursor (start again without one)",
            );
        };
        // A person sees the user-only tools, and so does whoever asks with `withUserTools: true`
        // (xiaozhi's backend asks to show them to a person); `tools/call` still refuses them to
        // the model.
        let with_user =
            principal == Principal::User || with_user.and_then(|v| v.as_bool()) == Some(true);
        let entries = self.registry.entries();
        let visible = |i: &usize| {
            entries
                .get(*i)
                .is_some_and(|e| with_user || e.tool.audience() == Audience::Model)
        };
        let budget = self
            .registry
            .page_bytes()
            .min(respond.out.len().saturating_sub(MIN_OUT_LEN));
        let next = self.next_page(start, visible, budget);
        let end = next.unwrap_or(entries.len());
        let cursor = next.map(|i| self.registry.cursor(i));
        let modern = respond.era.is_modern();
        let ttl = self.config.list_ttl_ms;
        respond.result(|w| {
            w.raw(protocol::TOOLS_OPEN);
            let mut first = true;
            for e in (start..end).filter(visible).filter_map(|i| entries.get(i)) {
                if !first {
                    w.raw(b",");
                }
                first = false;
                e.tool.write_listing(w);
            }
            w.raw(b"]");
            if let Some(c) = cursor {
                w.raw(protocol::NEXT_CURSOR_OPEN);
                w.raw(&c);
                w.raw(b"\"");
            }
            // (`cfg!` here, in the writer: it runs through a `dyn FnMut` and sees `modern` only
            // as a captured value, so without the feature the hints are not even compiled.)
            if cfg!(feature = "modern") && modern {
                write_cache_hints(w, ttl);
            }
        })
    }

    /// The first tool of the page a cursor asks for. An empty cursor is the first page:
    /// xiaozhi's devices and backends send `"cursor":""` to start a listing
    /// (`{"cursor":"","withUserTools":true}`). `None`: a cursor this table did not issue.
    fn first_of_page(&self, cursor: Option<Json<'_>>) -> Option<usize> {
        match cursor.map(|c| c.as_str()) {
            None => Some(0),
            Some(Some(c)) if c.eq_str("") => Some(0),
            Some(c) => c.and_then(|s| self.registry.parse_cursor(s)),
        }
    }

    /// Plans the page from `start`: the visible tools that fit the budget (at least one), with
    /// room for a cursor while more follow. Returns where the next page starts, if one does.
    fn next_page(
        &self,
        start: usize,
        visible: impl Fn(&usize) -> bool,
        budget: usize,
    ) -> Option<usize> {
        let entries = self.registry.entries();
        let mut used = PAGE_OPEN.len() + PAGE_CLOSE.len();
        let last_visible = (start..entries.len()).rev().find(|i| visible(i));
        for (count, i) in (start..entries.len()).filter(|i| visible(i)).enumerate() {
            let size = entries.get(i).map_or(0, |e| e.size() as usize) + usize::from(count > 0);
            let reserve = if last_visible.is_some_and(|last| i < last) {
                CURSOR_MEMBER_LEN
            } else {
                0
            };
            if count > 0 && used + size + reserve > budget {
                return Some(i);
            }
            used += size;
        }
        None
    }
}
