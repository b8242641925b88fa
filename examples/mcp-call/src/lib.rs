//! `mcp-call`: call an MCP device's tools from the shell.
//!
//! ```text
//! mcp-call TARGET list                 the tools, one a line: name, parameters, description
//! mcp-call TARGET call TOOL [JSON]     call TOOL with JSON arguments ({} when left out)
//! mcp-call TARGET watch [--for S]      the device's notifications, as they come
//! mcp-call TARGET login                OAuth: log in, keep the access token for TARGET
//! ```
//!
//! TARGET's scheme picks the wire:
//!
//! - `http://HOST:PORT/mcp`, `https://…`: Streamable HTTP, a 2025-11-25 session
//!   (`Mcp-Session-Id`, ended with `DELETE`). `--token T` / `--token-file F` send
//!   `Authorization: Bearer T`; without either, the OAuth access token that [`login`](oauth)
//!   stored for TARGET, while it is valid.
//! - `mqtt://BROKER:PORT[/DEVICE]`, `mqtts://…`: EMQX's MCP over MQTT, as device-sim and the
//!   ESP32 firmware serve it (`mqtt_fleet::Client`): the device is found by its retained
//!   presence — with no `/DEVICE`, the one online device, or a list of them to choose from —,
//!   `initialize` goes on its control topic, everything after on this client's RPC topic.
//!   Credentials in the URL as device-sim takes them (`mqtts://USER:PASSWORD@HOST:8883`).
//! - `stdio:COMMAND ARGS…`: the command is started (its words split at spaces) and spoken to
//!   over its stdin and stdout, one JSON message a line; its stderr shows with `--verbose`.
//!
//! `https://` and `mqtts://` check the certificate against the system's roots and `--ca-file`s
//! (`mcp_host::tls`), as every link of device-sim does.
//!
//! **What `call` prints.** The result's first text (the value and the evidence in one
//! sentence, `true — read back: 40`), then the evidence as data on a line of its
//! own (`evidence: {"level":"read_back","commanded":40,"observed":40}`); `--json` prints the
//! whole result. A call the device answers later — held for a person who did not press in
//! time (`awaiting_confirmation`), or started as a task — is followed until its outcome comes
//! (`--timeout`), which is printed the same way. Text from the device is escaped (control
//! characters, bidi overrides) and bounded before it reaches the terminal.
//!
//! **Exit status.** 0: the call succeeded (or `list`, `watch`, `login` did); 1: the tool failed
//! (`isError`), the device refused the request (a JSON-RPC error), or a person declined; 2: the
//! command line, the connection or the device's answer could not be used.
//!
//! **A person's yes.** With `--yes` the client declares elicitation and answers a
//! confirmation question (`elicitation/create`) with yes, saying so on stderr. Without it the
//! client cannot be asked, and a call that needs a yes waits for the device's button, as for
//! any client that cannot ask ([docs/CONFIRMATION.md]).
//!
//! [docs/CONFIRMATION.md]: https://github.com/mcu-mcp/mcu-mcp/blob/main/docs/CONFIRMATION.md

pub mod authz;
mod http;
mod mqtt;
pub mod oauth;
mod session;
mod stdio;

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use clap::{Parser, Subcommand};
use mcp_host::tls::Tls;

pub use session::Exit;

/// The command line.
#[derive(Debug, Parser)]
#[command(
    name = "mcp-call",
    version,
    args_override_self = true,
    about = "Call an MCP device's tools from the shell: over Streamable HTTP, MCP over MQTT or stdio",
    after_help = "TARGET: http(s)://HOST:PORT/mcp | mqtt(s)://[USER:PASSWORD@]BROKER:PORT[/DEVICE] | \"stdio:COMMAND ARGS…\"\n\
                  Exit status: 0 done, 1 the tool failed or the device refused, 2 unusable command line, link or answer."
)]
pub struct Cli {
    /// Where the device is (see below).
    pub target: String,
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
    /// HTTP: send `Authorization: Bearer TOKEN` (it shows in `ps`; prefer --token-file).
    #[arg(long, global = true)]
    pub token: Option<String>,
    /// HTTP: the bearer token, from this file (its first line).
    #[arg(long, global = true, value_name = "PATH")]
    pub token_file: Option<PathBuf>,
    /// Where `login` keeps OAuth access tokens, and where they are looked up
    /// [default: $XDG_CONFIG_HOME/mcp-call/tokens.json, else ~/.config/mcp-call/tokens.json].
    #[arg(long, global = true, value_name = "PATH")]
    pub token_store: Option<PathBuf>,
    /// Trust this PEM file's CA certificates besides the system's roots (https://, mqtts://);
    /// repeatable.
    #[arg(long, global = true, value_name = "PEM")]
    pub ca_file: Vec<PathBuf>,
    /// Answer a confirmation question (elicitation) with yes.
    #[arg(long, short = 'y', global = true)]
    pub yes: bool,
    /// Print the whole JSON result (call), the tools (list), each message (watch).
    #[arg(long, global = true)]
    pub json: bool,
    /// Seconds to wait for the device: to connect, for an answer, for a later outcome.
    #[arg(long, global = true, default_value_t = 60, value_name = "S")]
    pub timeout: u64,
    /// stdio: show the command's own log (its stderr).
    #[arg(long, short = 'v', global = true)]
    pub verbose: bool,
}

/// What `mcp-call` does at the target.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// List the tools (every page).
    List,
    /// Call TOOL with ARGUMENTS, a JSON object ({} when left out).
    Call {
        /// The tool's name.
        tool: String,
        /// The arguments, a JSON object.
        arguments: Option<String>,
    },
    /// Print the device's notifications (resource updates with what they read, log messages,
    /// outcomes) until interrupted, or for S seconds.
    Watch {
        /// Stop after S seconds.
        #[arg(long = "for", value_name = "S")]
        duration: Option<u64>,
    },
    /// OAuth (http/https): discover the endpoint's authorization server, register, open its
    /// login page, and keep the access token for TARGET.
    Login,
}

/// How `login` shows the authorization server's login page to the person: the binary tries
/// `$BROWSER` and prints the URL; a test logs in itself.
pub type OpenUrl = Box<dyn Fn(String) + Send + Sync>;

/// What the wire needs to know from the command line.
#[derive(Debug, Clone)]
pub(crate) struct Settings {
    pub(crate) tls: Tls,
    pub(crate) bearer: Option<String>,
    pub(crate) timeout: Duration,
    pub(crate) verbose: bool,
}

/// Runs the command line `cli`, printing results to `out` and messages to `err`; the exit
/// status.
pub async fn run(
    cli: Cli,
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
    open: &OpenUrl,
) -> Exit {
    match run_inner(cli, out, err, open).await {
        Ok(exit) => exit,
        Err(e) => {
            let _ = writeln!(err, "mcp-call: {e}");
            Exit::Unusable
        }
    }
}

async fn run_inner(
    cli: Cli,
    out: &mut (dyn Write + Send),
    err: &mut (dyn Write + Send),
    open: &OpenUrl,
) -> Result<Exit, String> {
    let tls = cli
        .ca_file
        .iter()
        .fold(Tls::system(), |tls, path| tls.ca_file(path));
    let timeout = Duration::from_secs(cli.timeout.max(1));
    let store = cli.token_store.clone().or_else(oauth::default_store);
    if let Command::Login = cli.command {
        let url = http::Endpoint::parse(&cli.target)?;
        let store = store.ok_or("no place to keep the token: give --token-store")?;
        oauth::login(
            &url,
            &tls,
            &store,
            timeout.max(Duration::from_secs(300)),
            open,
            err,
        )
        .await?;
        let _ = writeln!(
            err,
            "mcp-call: logged in; the token for {} is kept in {}",
            url.url,
            store.display()
        );
        return Ok(Exit::Done);
    }
    let bearer = match (&cli.token, &cli.token_file) {
        (Some(t), _) => Some(t.trim().to_string()),
        (None, Some(path)) => Some(
            std::fs::read_to_string(path)
                .map_err(|e| format!("--token-file {}: {e}", path.display()))?
                .lines()
                .next()
                .unwrap_or_default()
                .trim()
                .to_string(),
        ),
        (None, None) => None,
    };
    let settings = Settings {
        tls,
        bearer,
        timeout,
        verbose: cli.verbose,
    };
    let wire = session::Wire::open(&cli.target, settings, store.as_deref(), err).await?;
    let mut session = session::Session::new(wire, cli.yes, cli.json, timeout);
    let exit = session.run(&cli.command, out, err).await;
    session.close().await;
    exit
}

/// Random bytes from the OS, as lowercase hex.
pub(crate) fn random_hex(n: usize) -> Result<String, String> {
    let mut bytes = vec![0u8; n];
    getrandom::fill(&mut bytes).map_err(|e| format!("no randomness from the OS: {e}"))?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}
