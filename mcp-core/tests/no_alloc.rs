//! Proves the steady-state dispatch path performs no heap allocation: a counting global allocator
//! counts every allocation made by this thread while the engine handles requests.
#![allow(unsafe_code, missing_docs)] // a GlobalAlloc impl is unsafe by definition
#![allow(clippy::unwrap_used, clippy::indexing_slicing)] // a test

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use mcp_core::registry::Tool;
use mcp_core::{
    Args, Caps, Config, Evidence, Level, Output, Param, Principal, Reading, Reply, Server,
    ToolResult,
};

struct Counting;

thread_local! {
    static ACTIVE: Cell<bool> = const { Cell::new(false) };
    static COUNT: Cell<usize> = const { Cell::new(0) };
    static BYTES: Cell<usize> = const { Cell::new(0) };
}

fn note(size: usize) {
    // `try_with`: the allocator can run while thread-locals are being torn down.
    let _ = ACTIVE.try_with(|a| {
        if a.get() {
            let _ = COUNT.try_with(|c| c.set(c.get() + 1));
            let _ = BYTES.try_with(|b| b.set(b.get() + size));
        }
    });
}

// SAFETY: forwards every call to `System` unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        note(layout.size());
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        note(new_size);
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// Runs `f` and returns (allocations, bytes) made by this thread meanwhile.
fn count(f: impl FnOnce()) -> (usize, usize) {
    COUNT.with(|c| c.set(0));
    BYTES.with(|b| b.set(0));
    ACTIVE.with(|a| a.set(true));
    f();
    ACTIVE.with(|a| a.set(false));
    (COUNT.with(Cell::get), BYTES.with(Cell::get))
}

#[derive(Default)]
struct Dev {
    volume: i64,
    on: bool,
    theme_dark: bool,
    /// Labels that reached the handler decoded (they are sent with escapes).
    #[cfg(feature = "strings")]
    decoded_labels: usize,
}

/// A `tools/call` of `tool` with `arguments` (a JSON object), request id `id`.
fn call(id: impl std::fmt::Display, tool: &str, arguments: &str) -> String {
    format!(
        r#"{{"jsonrpc":"2.0","id":{id},"method":"tools/call","params":{{"name":"{tool}","arguments":{arguments}}}}}"#
    )
}

/// A server with `tools`, and its device.
fn rig<'t>(tools: impl IntoIterator<Item = &'t Tool<Dev>>) -> (Server<'t, Dev, Caps<8>>, Dev) {
    let mut server = Server::new(Config::new("t", "1"));
    for t in tools {
        server.register(t).unwrap();
    }
    (server, Dev::default())
}

fn set_volume(d: &mut Dev, a: &Args<'_>, _: &mut Reply<'_>) -> ToolResult {
    d.volume = a.int("volume")?;
    let e = Evidence::new(Level::ReadBack)
        .commanded(Reading::Int(d.volume))
        .observed(Reading::Int(d.volume));
    Ok(Output::bool(true).with_evidence(e))
}

fn configure(d: &mut Dev, a: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    d.on = a.bool("on")?;
    #[cfg(feature = "strings")]
    let label = {
        d.theme_dark = a.str("theme")? == "dark";
        let label = a.str("label")?;
        d.decoded_labels += usize::from(label.starts_with("küche "));
        label
    };
    #[cfg(not(feature = "strings"))]
    let label = "";
    let on = d.on;
    r.json(|o| {
        o.bool("on", on).str("label", label);
    })
}

fn status(d: &mut Dev, _: &Args<'_>, r: &mut Reply<'_>) -> ToolResult {
    let (v, dark) = (d.volume, d.theme_dark);
    r.json(|o| {
        o.object("audio_speaker", |o| {
            o.int("volume", v);
        })
        .object("screen", |o| {
            o.str("theme", if dark { "dark" } else { "light" });
        });
    })
}

const TOOLS: [Tool<Dev>; 3] = [
    Tool::new(
        "self.audio_speaker.set_volume",
        "Set the volume",
        set_volume,
    )
    .params(&[Param::integer("volume", "Volume in percent").range(0, 100)]),
    Tool::new("self.configure", "Configure", configure).params(&[
        Param::boolean("on", "Power"),
        #[cfg(feature = "strings")]
        Param::string("theme", "Theme").one_of(&["light", "dark"]),
        #[cfg(feature = "strings")]
        Param::string("label", "Label").length(0, 32),
    ]),
    Tool::new("self.get_device_status", "Status", status),
];

#[test]
fn steady_state_dispatch_allocates_nothing() {
    let (mut server, mut dev) = rig(&TOOLS);
    let mut out = vec![0u8; 9000];
    let messages: Vec<String> = (0..200)
        .flat_map(|i| {
            [
                call(
                    i,
                    "self.audio_speaker.set_volume",
                    &format!(r#"{{"volume":{}}}"#, i % 101),
                ),
                call(
                    format!(r#""c-{i}""#),
                    "self.configure",
                    &configure_arguments(i),
                ),
                call(i, "self.get_device_status", "{}"),
                call(i, "self.audio_speaker.set_volume", r#"{"volume":101}"#),
                format!(r#"{{"jsonrpc":"2.0","id":{i},"method":"ping"}}"#),
                r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#.to_string(),
                r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#.to_string(),
                r#"{"jsonrpc":"2.0","id":1,"method":"nope"}"#.to_string(),
                "{not json".to_string(),
            ]
        })
        .collect();
    // Warm-up: the first call of each kind (nothing is lazily allocated, but prove it below).
    let init = br#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2024-11-05","capabilities":{}}}"#;
    let (allocs, _) = count(|| {
        server
            .handle(init, Principal::Model, &mut dev, &mut out)
            .unwrap();
    });
    assert_eq!(allocs, 0, "initialize allocated");

    let mut responses = 0;
    let (allocs, bytes) = count(|| {
        for m in &messages {
            responses += usize::from(
                server
                    .handle(m.as_bytes(), Principal::Model, &mut dev, &mut out)
                    .unwrap()
                    .len
                    > 0,
            );
        }
    });
    println!(
        "{} messages ({responses} responses): {allocs} allocations, {bytes} bytes",
        messages.len()
    );
    assert_eq!(
        responses,
        messages.len() - 200,
        "every request but the notifications is answered"
    );
    assert_eq!(
        allocs, 0,
        "steady-state dispatch allocated {allocs} times ({bytes} bytes)"
    );
    assert_eq!(dev.volume, 199 % 101);
    // Escaped free-form strings are decoded too (into the output buffer's tail, not the heap).
    #[cfg(feature = "strings")]
    assert_eq!(dev.decoded_labels, 200);
}

/// `self.configure`'s arguments of call `i`: with escaped strings (feature `strings`).
fn configure_arguments(i: usize) -> String {
    #[cfg(feature = "strings")]
    return format!(
        r#"{{"on":{},"theme":"d\u0061rk","label":"k\u00fcche {i}"}}"#,
        i.is_multiple_of(2)
    );
    #[cfg(not(feature = "strings"))]
    return format!(r#"{{"on":{}}}"#, i.is_multiple_of(2));
}

/// The async tool twin of `set_volume`, served through `handle_async`.
const ASYNC_VOLUME: Tool<Dev> = Tool::new_async("self.async.set_volume", "Set the volume")
    .params(&[Param::integer("volume", "Volume in percent").range(0, 100)]);

/// Polls a future to completion with a no-op waker (the handler here never suspends for long).
fn block_on<F: std::future::Future>(f: F) -> F::Output {
    let mut f = std::pin::pin!(f);
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
    }
}

#[test]
fn the_async_path_allocates_nothing() {
    let (mut server, mut dev) = rig(TOOLS.iter().chain([&ASYNC_VOLUME]));
    let mut out = vec![0u8; 9000];
    let messages: Vec<String> = (0..200)
        .flat_map(|i| {
            [
                call(
                    i,
                    "self.async.set_volume",
                    &format!(r#"{{"volume":{}}}"#, i % 101),
                ),
                call(i, "self.async.set_volume", r#"{"volume":"x"}"#),
                call(i, "self.get_device_status", "{}"),
            ]
        })
        .collect();
    let (allocs, bytes) = count(|| {
        for m in &messages {
            let handled = block_on(server.handle_async(
                mcp_core::Input::new(m.as_bytes(), Principal::Model),
                &mut dev,
                &mut out,
                &mut |_: &[u8]| {},
                async |dev: &mut Dev, call: mcp_core::Call<'_, '_>| {
                    dev.volume = call.args.int("volume")?;
                    std::future::ready(()).await;
                    Ok(Output::bool(true))
                },
            ))
            .unwrap();
            assert!(handled.len > 0);
        }
    });
    assert_eq!(
        allocs, 0,
        "the async path allocated {allocs} times ({bytes} bytes)"
    );
    assert_eq!(dev.volume, 199 % 101);
}

#[test]
fn the_counter_counts() {
    // The harness itself must be able to fail.
    let (allocs, bytes) = count(|| {
        std::hint::black_box(vec![0u8; 100]);
    });
    assert_eq!((allocs, bytes), (1, 100));
}
