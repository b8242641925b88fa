//! conformance-server: an MCP server built with mcp-core (and served by mcp-host) that exposes
//! the tools, resources and prompts the official conformance suite
//! (`@modelcontextprotocol/conformance`) expects, over Streamable HTTP.
//!
//! `cargo run -p conformance-server -- --port PORT` serves `http://127.0.0.1:PORT/mcp` until
//! killed; both protocol eras on the one endpoint (2025 sessions and the 2026-07-28 stateless
//! rules with the tasks extension). `.ci/conformance.sh` runs the suite against it.

mod fixtures;
mod tools;

use std::net::{Ipv4Addr, SocketAddr};
use std::process::ExitCode;
use std::sync::{Arc, Mutex};

use mcp_host::{HttpHost, HttpOptions};

fn usage() -> ExitCode {
    eprintln!("usage: conformance-server --port PORT   (serves http://127.0.0.1:PORT/mcp)");
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let mut args = std::env::args().skip(1);
    let mut port: u16 = 3000;
    while let Some(a) = args.next() {
        match (a.as_str(), args.next().map(|v| v.parse::<u16>())) {
            ("--port", Some(Ok(p))) => port = p,
            _ => return usage(),
        }
    }
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("conformance-server: {e}");
            return ExitCode::FAILURE;
        }
    };
    let result = runtime.block_on(async {
        let addr = SocketAddr::from((Ipv4Addr::LOCALHOST, port));
        let listener = tokio::net::TcpListener::bind(addr).await?;
        let opts = HttpOptions::default()
            .close_early(&["test_reconnection"])
            .max_sessions(64);
        let host = HttpHost::new(
            opts,
            Arc::new(tools::engine),
            Arc::new(Mutex::new(tools::Fixture)),
        );
        eprintln!(
            "conformance-server: serving http://{}/mcp",
            listener.local_addr()?
        );
        host.serve(listener).await
    });
    match result {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("conformance-server: {e}");
            ExitCode::FAILURE
        }
    }
}
