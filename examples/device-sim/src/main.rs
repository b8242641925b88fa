//! device-sim: a simulated xiaozhi-style device (speaker, screen, reboot) driven by mcp-core.
//!
//! With no arguments it prints a short transcript of a demo session against itself. With
//! `--stdio` it is an MCP server on stdin/stdout (one JSON message per line, logs on stderr), so
//! that any MCP client can drive the engine as a black box.

mod device;

use std::io::{self, BufRead, Write};
use std::process::ExitCode;

use clap::{Parser, ValueEnum};
use device::{Device, TOOLS};
use mcp_core::transport::xiaozhi::{self, DEVICE_HELLO, Envelope};
use mcp_core::wire::json::DEFAULT_MAX_DEPTH;
use mcp_core::{Config, Event, Principal, Server};

/// The most tools the simulator's table holds (5 built-in + fillers).
const CAPACITY: usize = 512;

type Sim = Server<'static, Device, CAPACITY>;

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum EnvelopeKind {
    /// xiaozhi's `{"session_id":…,"type":"mcp","payload":{…}}` lines, after a hello exchange.
    Xiaozhi,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum Who {
    /// An LLM through an MCP client: user-only tools are hidden and refused.
    Model,
    /// A person: user-only tools are listed with withUserTools and callable.
    User,
}

/// A simulated xiaozhi-style device driven by mcp-core.
///
/// Without options: print a demo transcript. With --stdio: serve MCP on stdin/stdout.
#[derive(Debug, Parser)]
#[command(version)]
struct Cli {
    /// Serve MCP over stdin/stdout, one JSON message per line (logs go to stderr).
    #[arg(long)]
    stdio: bool,
    /// Wrap messages in a transport envelope (implies --stdio).
    #[arg(long, value_enum)]
    envelope: Option<EnvelopeKind>,
    /// Who is on the other end of the connection.
    #[arg(long, value_enum, default_value = "model")]
    principal: Who,
    /// Byte budget of one tools/list page.
    #[arg(long, default_value_t = 8000)]
    page_bytes: usize,
    /// Add N filler tools (about 300 bytes of schema each) so that paging can be seen.
    #[arg(long, default_value_t = 0)]
    extra_tools: usize,
}

fn build(cli: &Cli) -> Result<Box<Sim>, String> {
    let config = Config::new("device-sim", env!("CARGO_PKG_VERSION")).page_bytes(cli.page_bytes);
    let mut server = Box::new(Sim::new(config));
    for tool in &TOOLS {
        server.register(tool).map_err(|e| e.to_string())?;
    }
    for i in 1..=cli.extra_tools {
        server
            .register(device::filler_tool(i))
            .map_err(|e| e.to_string())?;
    }
    Ok(server)
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let mut server = match build(&cli) {
        Ok(s) => s,
        Err(e) => {
            eprintln!("device-sim: {e}");
            return ExitCode::from(2);
        }
    };
    let principal = match cli.principal {
        Who::Model => Principal::Model,
        Who::User => Principal::User,
    };
    let mut device = Device::default();
    let result = if cli.stdio || cli.envelope.is_some() {
        serve(
            &mut server,
            &mut device,
            principal,
            cli.envelope,
            cli.page_bytes,
        )
    } else {
        demo(&mut server, &mut device)
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("device-sim: {e}");
            ExitCode::FAILURE
        }
    }
}

/// Serves MCP on stdin/stdout until stdin closes.
fn serve(
    server: &mut Sim,
    device: &mut Device,
    principal: Principal,
    envelope: Option<EnvelopeKind>,
    page_bytes: usize,
) -> io::Result<()> {
    let mut stdin = io::stdin().lock();
    let mut stdout = io::stdout().lock();
    // A page plus its envelope, the JSON-RPC head and an id always fit.
    let mut out = vec![0u8; page_bytes + 1024];
    let mut line = Vec::new();
    let mut session_id: Option<String> = None;
    if envelope.is_some() {
        writeln!(stdout, "{DEVICE_HELLO}")?;
        stdout.flush()?;
    }
    loop {
        line.clear();
        if stdin.read_until(b'\n', &mut line)? == 0 {
            return Ok(());
        }
        let msg = line.strip_suffix(b"\n").unwrap_or(&line);
        let msg = msg.strip_suffix(b"\r").unwrap_or(msg);
        if msg.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let len = match envelope {
            None => handle(server, msg, principal, device, &mut out),
            Some(EnvelopeKind::Xiaozhi) => {
                let Ok(env) = Envelope::parse(msg, DEFAULT_MAX_DEPTH) else {
                    eprintln!("device-sim: ignoring a line that is not a JSON envelope");
                    continue;
                };
                if env.is("hello") {
                    session_id = env.session_id.map(|s| s.to_cow().into_owned());
                    eprintln!(
                        "device-sim: hello from the server, session {:?}",
                        session_id.as_deref().unwrap_or("")
                    );
                    continue;
                }
                let Some(payload) = env.mcp_payload() else {
                    eprintln!("device-sim: ignoring a non-MCP message");
                    continue;
                };
                // Answer in the session the server gave us, or the one the message names.
                let sid = session_id
                    .clone()
                    .or_else(|| env.session_id.map(|s| s.to_cow().into_owned()));
                xiaozhi::wrap(sid.as_deref(), &mut out, |buf| {
                    handle(server, payload, principal, device, buf)
                })
            }
        };
        if len > 0 {
            stdout.write_all(out.get(..len).unwrap_or_default())?;
            stdout.write_all(b"\n")?;
            stdout.flush()?;
        }
        if std::mem::take(&mut device.reboot_scheduled) {
            eprintln!("device-sim: reboot scheduled (a simulator only logs it and keeps running)");
        }
    }
}

/// Hands one message to the engine; logs events. Returns the response length.
fn handle(
    server: &mut Sim,
    msg: &[u8],
    principal: Principal,
    device: &mut Device,
    out: &mut [u8],
) -> usize {
    match server.handle(msg, principal, device, out) {
        Ok(h) => {
            if let Some(Event::Initialized { revision, vision }) = h.event {
                eprintln!("device-sim: initialized, protocol {}", revision.as_str());
                if let Some(v) = vision {
                    eprintln!("device-sim: vision endpoint {}", v.url.to_cow());
                }
            }
            h.len
        }
        Err(e) => {
            eprintln!("device-sim: {e}");
            0
        }
    }
}

/// Runs a short session against itself and prints it.
fn demo(server: &mut Sim, device: &mut Device) -> io::Result<()> {
    let mut stdout = io::stdout().lock();
    let mut out = vec![0u8; server.config().page_bytes + 1024];
    let steps: [(&str, &str, Principal); 7] = [
        (
            "The client opens the session",
            r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"demo","version":"1"}}}"#,
            Principal::Model,
        ),
        (
            "It lists the tools (self.reboot is user-only: not listed to the model)",
            r#"{"jsonrpc":"2.0","id":2,"method":"tools/list"}"#,
            Principal::Model,
        ),
        (
            "Volume to 40: the codec register is written, then read back",
            r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"self.audio_speaker.set_volume","arguments":{"volume":40}}}"#,
            Principal::Model,
        ),
        (
            "The status reads the same register",
            r#"{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{"name":"self.get_device_status","arguments":{}}}"#,
            Principal::Model,
        ),
        (
            "A bad argument is refused before any handler runs",
            r#"{"jsonrpc":"2.0","id":5,"method":"tools/call","params":{"name":"self.audio_speaker.set_volume","arguments":{"volume":"loud"}}}"#,
            Principal::Model,
        ),
        (
            "The model tries to reboot the device: refused",
            r#"{"jsonrpc":"2.0","id":6,"method":"tools/call","params":{"name":"self.reboot","arguments":{}}}"#,
            Principal::Model,
        ),
        (
            "A person (principal user) may: the reboot is only scheduled",
            r#"{"jsonrpc":"2.0","id":7,"method":"tools/call","params":{"name":"self.reboot","arguments":{}}}"#,
            Principal::User,
        ),
    ];
    writeln!(
        stdout,
        "device-sim: a simulated xiaozhi-style device, driven through mcp-core\n"
    )?;
    for (i, (title, request, principal)) in steps.iter().enumerate() {
        writeln!(
            stdout,
            "{}. {title}{}",
            i + 1,
            if *principal == Principal::User {
                " [user]"
            } else {
                ""
            }
        )?;
        writeln!(stdout, "   -> {request}")?;
        let len = handle(server, request.as_bytes(), *principal, device, &mut out);
        let response = String::from_utf8_lossy(out.get(..len).unwrap_or_default()).into_owned();
        if request.contains("tools/list") {
            let names: Vec<&str> = response
                .match_indices("{\"name\":\"")
                .filter_map(|(at, m)| {
                    let rest = response.get(at + m.len()..)?;
                    rest.split('"').next()
                })
                .collect();
            writeln!(
                stdout,
                "   <- {} tools: {} ({} bytes)",
                names.len(),
                names.join(", "),
                len
            )?;
        } else {
            writeln!(stdout, "   <- {response}")?;
        }
        writeln!(stdout)?;
    }
    writeln!(
        stdout,
        "Serve it to a real client with: cargo run -p device-sim -- --stdio"
    )?;
    Ok(())
}
