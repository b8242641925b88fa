//! The xiaozhi envelope: `Envelope::parse` on arbitrary bytes, checked against serde_json's view
//! of the same bytes (read as `mcp_fuzz::J`, never as `serde_json::Value`: see
//! `mcp_fuzz::json`); the MCP payload it extracts is handed to the engine inside `wrap`, and the
//! wrapped answer must be one envelope carrying one JSON-RPC 2.0 response (checked as in the
//! engine target), with the session id echoed. The envelope is read as deep as the checker can
//! follow (a payload deeper than the engine reads is answered with its id), and a text that is
//! no envelope goes to the engine whole, as the hosts hand it on: -32700 with `id: null`. What
//! the device says of its own is checked on the same bytes: a `[device_call]` detect frame made
//! of any string the envelope holds is one valid JSON object whose text is that string (decoded,
//! cut at `MAX_SAID_CHARS` with `…`), and `Turns` follows any frame without panicking: an
//! outcome may be told (`may_tell`) exactly when the frame did not say the backend speaks, and
//! not again before the backend spoke of it.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_core::Principal;
use mcp_core::transport::xiaozhi::{DEVICE_CALL, Envelope, MAX_SAID_CHARS, Turns, heard, wrap};
use mcp_fuzz::device::Session;
use mcp_fuzz::{CHECKER_DEPTH, J, entries, parse_within};

fuzz_target!(|data: &[u8]| {
    let (out_len, input) = match data.split_first() {
        Some((&c, rest)) => ([360usize, 700, 2000, 9000][usize::from(c & 3)], rest),
        None => return,
    };
    // The envelope is read as deep as the checker can follow: a payload deeper than the engine
    // reads still reaches it (and is answered -32700 with its id).
    let oracle = parse_within(input, CHECKER_DEPTH);
    let env = match Envelope::parse(input) {
        Ok(env) => env,
        Err(e) => {
            assert!(oracle.is_none(), "refused valid JSON ({e}): {input:?}");
            // A text nobody can read as an envelope goes to the engine whole (as the hosts
            // do): answered -32700 with `id: null`, in an `mcp` envelope, running nothing.
            let mut session = Session::new(8000);
            let mut out = vec![0u8; out_len];
            let mut inner_len = 0;
            let n = wrap(None, &mut out, |buf| {
                if let Ok(h) = session
                    .server
                    .handle(input, Principal::Model, &mut session.dev, buf)
                {
                    inner_len = h.len;
                }
                inner_len
            });
            if n > 0 {
                let members = entries(&out[..n]).expect("an object");
                let inner = members
                    .iter()
                    .find(|(k, _)| k == "payload")
                    .map(|(_, v)| v.get().as_bytes().to_vec())
                    .expect("payload");
                let r = mcp_fuzz::check_response(&inner);
                assert_eq!((r.code, r.id.as_str()), (Some(-32700), "null"));
            } else {
                // Only when the envelope head and the smallest answer do not fit.
                assert!(out_len < 400, "no answer to an unreadable text");
            }
            assert!(session.dev.runs.iter().all(|&r| r == 0));
            return;
        }
    };
    let Some(root) = oracle else {
        panic!(
            "accepted invalid JSON: {:?}",
            String::from_utf8_lossy(input)
        );
    };
    // Later members win, as in serde_json's map (`J::get`).
    let str_of = |k: &str| root.get(k).and_then(J::as_str).map(str::to_string);
    let decoded = |s: Option<mcp_core::wire::JsonStr<'_>>| s.map(|s| s.to_cow().into_owned());
    assert_eq!(decoded(env.kind), str_of("type"));
    assert_eq!(decoded(env.session_id), str_of("session_id"));
    assert_eq!(decoded(env.state), str_of("state"));

    // A detect frame of any string it holds (the `type`, as a sentence), in its session.
    let mut turns: Turns<2> = Turns::new();
    turns.heard(&env, 1);
    let _ = turns.quiet(2);
    // An outcome's `[device_call]` text waits exactly while the backend speaks (a detect text
    // would start a new speech and drop what it says): after its `tts` `start` or
    // `sentence_start`, and not after any other frame (a `stop` lets it go at once).
    let speaks = env.is("tts")
        && env
            .state
            .is_some_and(|s| s.eq_str("start") || s.eq_str("sentence_start"));
    assert_eq!(turns.speaking(2), speaks, "{input:?}");
    assert_eq!(turns.may_tell(2), !speaks, "{input:?}");
    turns.said(3);
    assert!(!turns.may_tell(4), "one outcome per speech");
    if let Some(sentence) = env.kind {
        let sid = str_of("session_id");
        let mut frame = vec![0u8; out_len];
        let n = heard(sid.as_deref(), sentence, &mut frame);
        if n > 0 {
            let f = J::parse(&frame[..n]).unwrap_or_else(|| {
                panic!(
                    "a detect frame that is not JSON: {:?}",
                    String::from_utf8_lossy(&frame[..n])
                )
            });
            assert_eq!(f.get("type").and_then(J::as_str), Some("listen"));
            assert_eq!(f.get("state").and_then(J::as_str), Some("detect"));
            assert_eq!(f.get("session_id").and_then(J::as_str), sid.as_deref());
            let said = sentence.to_cow();
            let mut expected = format!("{DEVICE_CALL} ");
            expected.extend(said.chars().take(MAX_SAID_CHARS));
            if said.chars().count() > MAX_SAID_CHARS {
                expected.push('…');
            }
            assert_eq!(f.get("text").and_then(J::as_str), Some(expected.as_str()));
        }
    }
    let expected_payload = root
        .get("payload")
        .filter(|p| p.is_object() && root.get("type").and_then(J::as_str) == Some("mcp"));
    let payload = env.mcp_payload();
    assert_eq!(payload.is_some(), expected_payload.is_some());
    let Some(payload) = payload else { return };
    // The payload is a slice of the input, and the same JSON value serde_json sees there.
    let range = input.as_ptr_range();
    assert!(range.contains(&payload.as_ptr()) || payload.is_empty());
    let seen = J::parse(payload).expect("the payload is JSON");
    assert_eq!(Some(&seen), expected_payload);

    let session_id = str_of("session_id");
    let mut session = Session::new(8000);
    let mut out = vec![0u8; out_len];
    let mut inner_len = 0;
    let mut refused = false;
    let mut called = false;
    let mut deferred = false;
    let before = session.dev.runs;
    let n = wrap(session_id.as_deref(), &mut out, |buf| {
        called = true;
        match session
            .server
            .handle(payload, Principal::Model, &mut session.dev, buf)
        {
            Ok(h) => (inner_len, deferred) = (h.len, h.deferred),
            // No room left for MIN_OUT_LEN after the envelope head: nothing was processed.
            Err(_) => refused = true,
        }
        inner_len
    });
    assert!(n <= out.len());
    if n == 0 {
        assert_eq!(inner_len, 0, "an answer was dropped by wrap");
        if !deferred {
            assert_eq!(session.dev.runs, before);
        }
        // Not called: the envelope head alone does not fit (a long session_id), and wrap says 0.
        if called && !refused && !deferred {
            // Nothing owed: a fresh session has no task to park a tasks/result on.
            assert_eq!(mcp_fuzz::classify(payload), mcp_fuzz::Expect::Silent);
        }
        if deferred {
            // A long-running call whose answer is held for its outcome: the answer comes
            // from poll, and the one handler that ran is the task's start.
            session.check(payload, &[], before, Principal::Model, true);
        }
        return;
    }
    let env_out = J::parse(&out[..n]).unwrap_or_else(|| {
        panic!(
            "wrapped answer is not JSON: {:?}",
            String::from_utf8_lossy(&out[..n])
        )
    });
    let members = entries(&out[..n]).expect("an object");
    let keys: Vec<&str> = members.iter().map(|(k, _)| k.as_str()).collect();
    let expected_keys: &[&str] = if session_id.is_some() {
        &["session_id", "type", "payload"]
    } else {
        &["type", "payload"]
    };
    assert_eq!(keys, expected_keys);
    assert_eq!(env_out["type"].as_str(), Some("mcp"));
    assert_eq!(
        env_out.get("session_id").and_then(J::as_str),
        session_id.as_deref()
    );
    let inner = members
        .iter()
        .find(|(k, _)| k == "payload")
        .map(|(_, v)| v.get().as_bytes().to_vec())
        .expect("payload");
    assert_eq!(inner.len(), inner_len);
    session.check(payload, &inner, before, Principal::Model, deferred);
});
