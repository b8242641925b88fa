//! Property: for random tool sets and page budgets, walking `tools/list` page by page yields every
//! visible tool exactly once, in registration order; each page's `result` fits the budget (in both
//! eras: a 2026-07-28 result carries more members) and is full (the next tool would not have
//! fitted the registry's page budget); cursors never repeat; a cursor goes stale when the table
//! changes.
#![allow(missing_docs, clippy::restriction, reason = "a test")]

use mcp_core::registry::{Annotations, Tool};
use mcp_core::{Args, Caps, Config, Output, Param, Principal, Reply, Server, ToolResult};
use proptest::prelude::*;
use serde_json::Value;

fn noop(_: &mut (), _: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    Ok(Output::bool(true))
}

/// Number parameters exist with feature `float` only: without it, `gain` is left out (and
/// `theme` and `label` without `strings`).
static PARAMS: &[Param] = &[
    Param::integer("volume", "Volume in percent").range(0, 100),
    #[cfg(feature = "strings")]
    Param::string("theme", "Theme")
        .one_of(&["light", "dark"])
        .default_str("light"),
    Param::boolean("on", "On"),
    #[cfg(feature = "float")]
    Param::number("gain", "Gain")
        .range_f64(-1.5, 1.5)
        .optional(),
    #[cfg(feature = "strings")]
    Param::string("label", "A label with \"quotes\" and \u{e9}").length(0, 8),
    Param::integer("any", "Any").optional(),
];

#[derive(Debug, Clone)]
struct Spec {
    desc_len: usize,
    params: usize,
    user: bool,
    annotated: bool,
}

fn spec() -> impl Strategy<Value = Spec> {
    (
        0usize..1500,
        0usize..=PARAMS.len(),
        prop::bool::weighted(0.25),
        any::<bool>(),
    )
        .prop_map(|(desc_len, params, user, annotated)| Spec {
            desc_len,
            params,
            user,
            annotated,
        })
}

fn leak(s: String) -> &'static str {
    Box::leak(s.into_boxed_str())
}

fn tool(i: usize, s: &Spec) -> &'static Tool<()> {
    let desc = leak("d\u{e9}\"".repeat(s.desc_len / 3));
    let mut t = Tool::new(leak(format!("t{i}.set")), desc, noop).params(&PARAMS[..s.params]);
    if s.user {
        t = t.user_only();
    }
    if s.annotated {
        t = t.annotations(Annotations::new().title("T").idempotent(true));
    }
    Box::leak(Box::new(t))
}

const PREFIX: &str = r#"{"jsonrpc":"2.0","id":2,"result":"#;
/// `,"nextCursor":"` + 8 characters + `"`.
const CURSOR_MEMBER: usize = 24;

struct Page {
    result_len: usize,
    names: Vec<String>,
    cursor: Option<String>,
}

const MODERN_META: &str = r#","_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28","io.modelcontextprotocol/clientCapabilities":{}}"#;

fn list(
    server: &mut Server<'static, (), Caps<64>>,
    modern: bool,
    with_user: bool,
    cursor: Option<&str>,
) -> Result<Page, Value> {
    let meta = if modern { MODERN_META } else { "" };
    let params = match cursor {
        Some(c) => format!(r#"{{"cursor":"{c}","withUserTools":{with_user}{meta}}}"#),
        None => format!(r#"{{"withUserTools":{with_user}{meta}}}"#),
    };
    let msg = format!(r#"{{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{params}}}"#);
    let mut out = vec![0u8; 64 * 1024];
    let n = server
        // The model's connection: `withUserTools` adds the user-only tools whoever asks (calling
        // them is another matter).
        .handle(msg.as_bytes(), Principal::Model, &mut (), &mut out)
        .unwrap()
        .len;
    let text = std::str::from_utf8(&out[..n]).unwrap();
    let v: Value = serde_json::from_str(text).unwrap();
    if v.get("error").is_some() {
        return Err(v);
    }
    assert!(text.starts_with(PREFIX) && text.ends_with('}'), "{text}");
    let result = &v["result"];
    Ok(Page {
        result_len: n - PREFIX.len() - 1,
        names: result["tools"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| t["name"].as_str().unwrap().to_string())
            .collect(),
        cursor: result
            .get("nextCursor")
            .map(|c| c.as_str().unwrap().to_string()),
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(if cfg!(miri) { 2 } else { 300 }))]

    #[test]
    fn pages_cover_every_visible_tool_once_in_order(
        specs in prop::collection::vec(spec(), 0..40),
        budget in 300usize..12_000,
        with_user in any::<bool>(),
        modern in any::<bool>(),
    ) {
        let mut server: Server<'static, (), Caps<64>> =
            Server::new(Config::new("prop", "1").page_bytes(budget));
        let mut registered: Vec<(&'static Tool<()>, bool)> = Vec::new();
        for (i, s) in specs.iter().enumerate() {
            let t = tool(i, s);
            match server.register(t) {
                Ok(_) => registered.push((t, s.user)),
                Err(e) => prop_assert!(
                    t.listing_size() + 12 + CURSOR_MEMBER > server.registry().page_bytes(),
                    "refused a tool that fits: {e}"
                ),
            }
        }
        let visible: Vec<&Tool<()>> = registered
            .iter()
            .filter(|(_, user)| with_user || !user)
            .map(|(t, _)| *t)
            .collect();

        let mut pages: Vec<Page> = Vec::new();
        let mut cursor: Option<String> = None;
        loop {
            let page = list(&mut server, modern, with_user, cursor.as_deref()).expect("a page");
            prop_assert!(page.result_len <= budget, "page of {} > {budget}", page.result_len);
            // A legacy page has none of the 2026-07-28 members reserved for: it fits what is left.
            let planned = server.registry().page_bytes();
            prop_assert!(
                modern || page.result_len <= planned,
                "legacy page of {} > {planned}",
                page.result_len
            );
            prop_assert!(!page.names.is_empty() || visible.is_empty(), "an empty page");
            if let Some(c) = &page.cursor {
                prop_assert!(
                    pages.iter().all(|p| p.cursor.as_ref() != Some(c)) && cursor.as_ref() != Some(c),
                    "cursor {c} repeats"
                );
            }
            prop_assert!(pages.len() <= visible.len(), "more pages than tools");
            cursor = page.cursor.clone();
            pages.push(page);
            if cursor.is_none() {
                break;
            }
        }
        let names: Vec<&str> = pages.iter().flat_map(|p| p.names.iter().map(String::as_str)).collect();
        let expected: Vec<&str> = visible.iter().map(|t| t.name()).collect();
        prop_assert_eq!(names, expected);

        // Full pages: the first tool of the next page would not have fitted on this one (a legacy
        // page has exactly the members the registry's budget counts).
        let registry_budget = server.registry().page_bytes();
        let mut at = 0;
        for pair in pages.windows(2).filter(|_| !modern) {
            at += pair[0].names.len();
            let next = visible[at];
            let is_last = at + 1 == visible.len();
            let without_cursor = pair[0].result_len - CURSOR_MEMBER;
            let grown = without_cursor + 1 + next.listing_size() + if is_last { 0 } else { CURSOR_MEMBER };
            prop_assert!(grown > registry_budget, "page ended early: {grown} <= {registry_budget}");
        }

        // A cursor issued before the table changed is refused.
        if let Some(c) = pages.first().and_then(|p| p.cursor.clone()) {
            let extra = tool(99, &Spec { desc_len: 0, params: 0, user: false, annotated: false });
            if server.register(extra).is_ok() {
                let err = list(&mut server, modern, with_user, Some(&c)).err().expect("a stale cursor is refused");
                prop_assert_eq!(&err["error"]["code"], -32602);
            }
        }
    }
}
