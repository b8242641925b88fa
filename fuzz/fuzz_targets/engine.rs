//! The engine entry point on arbitrary bytes.
//!
//! Input: one control byte (output buffer size, page budget, principal), then up to 12 messages
//! separated by `0xFF`, handled in order by one fresh server, with `poll` between them (tasks
//! progress, time out and answer parked `tasks/result` requests; `poll` gets the same buffer size
//! as `handle`, down to `MIN_OUT_LEN`). Every exchange is checked by
//! `mcp_fuzz::device::Session`: no panic; nothing or exactly one JSON-RPC 2.0 response within
//! the buffer, as the JSON-RPC rules demand; ids echoed byte for byte; no handler runs on
//! arguments that an independent validator refuses, nor for notifications, nor for the model
//! on a user-only tool.
#![no_main]

use libfuzzer_sys::fuzz_target;
use mcp_core::Principal;
use mcp_fuzz::device::{OUT_LENS, PAGE_BYTES, Session, split};

fuzz_target!(|data: &[u8]| {
    let (control, messages) = split(data);
    let out_len = OUT_LENS[usize::from(control & 3)];
    let page = PAGE_BYTES[usize::from((control >> 2) & 3)];
    let mut session = Session::new(page);
    for (i, msg) in messages.iter().enumerate() {
        let principal = if (control >> (4 + i % 4)) & 1 == 0 {
            Principal::Model
        } else {
            Principal::User
        };
        session.exchange(msg, principal, out_len);
        session.poll(60, out_len);
    }
    // Let every task finish or time out, and every parked request be answered.
    for _ in 0..8 {
        session.poll(100, out_len);
    }
    assert!(
        session.parked.is_empty(),
        "parked tasks/result requests never answered: {:?}",
        session.parked
    );
});
