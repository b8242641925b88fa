//! The checking pass's index (`mcp_core::wire::Frame`) against serde_json.
//!
//! Input: one control byte (the nesting limit: 0–4, 8, 32 or 128), then a message. Asserts:
//!
//! - `Frame::parse` accepts exactly what serde_json accepts within the nesting limit, and its
//!   root is the text without surrounding whitespace;
//! - for every member the index records (`jsonrpc`, `id`, `method`, `params`, `params.name`,
//!   `.arguments`, `.task`, `._meta`, and the `_meta` keys), what it found agrees with serde_json's
//!   reading (`J`, keys decoded): absent, once with the same value, or repeated — in the last
//!   occurrence of the object that holds it, when that is an object;
//! - `has_escapes` says whether a recorded string was sent with escape sequences;
//! - the members of `params.arguments` are recorded in document order with the same keys and
//!   values (up to `INDEXED_ARGUMENTS`; more are left to walking, and said so);
//! - the classification from the index is the classification from walking the checked root.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_core::wire::frame::INDEXED_ARGUMENTS;
use mcp_core::wire::{Found, Frame, Member, Message};
use mcp_fuzz::{J, depth, json_str};

const LIMITS: [u8; 8] = [0, 1, 2, 3, 4, 8, 32, 128];

/// The object that holds `member` (the last occurrence of its parent), as serde_json reads it.
fn holder(root: &J, member: Member) -> Option<&J> {
    let parent = match member.parent() {
        None => root,
        Some(p) => holder(root, p)?.get(p.key())?,
    };
    parent.is_object().then_some(parent)
}

fuzz_target!(|data: &[u8]| {
    let Some((&control, message)) = data.split_first() else {
        return;
    };
    let limit = LIMITS[usize::from(control & 7)];
    let frame = Frame::parse(message, limit);
    let tree = J::parse(message).filter(|_| depth(message) <= usize::from(limit));
    let (frame, tree) = match (frame, tree) {
        (Ok(f), Some(t)) => (f, t),
        (Err(_), None) => return,
        (f, t) => panic!(
            "validity disagrees at limit {limit}: index {:?}, serde_json {:?}",
            f.map(|f| f.root()),
            t.map(|t| t.to_string())
        ),
    };
    let trimmed = core::str::from_utf8(message)
        .expect("accepted text is UTF-8")
        .trim_matches([' ', '\t', '\n', '\r']);
    assert_eq!(frame.root().as_text(), trimmed);

    for member in Member::ALL {
        let found = frame.get(member);
        let expected: Vec<&J> = holder(&tree, member)
            .and_then(J::as_object)
            .map(|m| {
                m.iter()
                    .filter(|(k, _)| k == member.key())
                    .map(|(_, v)| v)
                    .collect()
            })
            .unwrap_or_default();
        match (found, expected.as_slice()) {
            (Found::Absent, []) | (Found::Repeated, [_, _, ..]) => {}
            (Found::Once(v), [one]) => {
                assert_eq!(J::parse(v.raw()).as_ref(), Some(*one), "{member:?}");
                let escaped = v.as_str().is_some_and(|s| s.raw().contains(&b'\\'));
                assert_eq!(frame.has_escapes(member), escaped, "{member:?} escapes");
            }
            (found, expected) => panic!("{member:?}: index {found:?}, serde_json {expected:?}"),
        }
    }

    let arguments = holder(&tree, Member::Arguments)
        .and_then(|p| p.get("arguments"))
        .and_then(J::as_object)
        .unwrap_or_default();
    match frame.arguments() {
        Some(table) => {
            assert_eq!(table.len(), arguments.len(), "arguments recorded");
            for ((key, value), (k, v)) in table.iter().zip(arguments) {
                let decoded = json_str(&format!("\"{}\"", String::from_utf8_lossy(key.raw())));
                assert_eq!(decoded.as_deref(), Some(k.as_str()));
                assert_eq!(J::parse(value.raw()).as_ref(), Some(v), "argument {k}");
            }
        }
        None => assert!(
            arguments.len() > INDEXED_ARGUMENTS,
            "arguments not recorded"
        ),
    }

    assert_eq!(
        format!("{:?}", frame.message()),
        format!("{:?}", Message::classify(frame.root()))
    );
});
