//! `oauth-dev-server [--port N]`: an OAuth authorization server for trying OAuth on this
//! machine (`mcp_call::authz` says what it does, and what it is not).

use clap::Parser;

/// An OAuth 2.1 authorization server for trying OAuth on this machine: no password, whoever
/// opens its login page gets a token. Listens on 127.0.0.1 only.
#[derive(Parser)]
#[command(name = "oauth-dev-server")]
struct Cli {
    /// The port on 127.0.0.1; the issuer is http://127.0.0.1:PORT.
    #[arg(long, default_value_t = mcp_call::authz::DEFAULT_PORT)]
    port: u16,
}

#[tokio::main(flavor = "current_thread")]
async fn main() -> std::process::ExitCode {
    let cli = Cli::parse();
    let listener = match tokio::net::TcpListener::bind(("127.0.0.1", cli.port)).await {
        Ok(l) => l,
        Err(e) => {
            eprintln!("oauth-dev-server: 127.0.0.1:{}: {e}", cli.port);
            return std::process::ExitCode::from(2);
        }
    };
    let issuer = format!("http://127.0.0.1:{}", cli.port);
    eprintln!(
        "oauth-dev-server: issuer {issuer} (for trying OAuth on this machine: it asks no password)\n\
         oauth-dev-server: try it with device-sim --http 127.0.0.1:8080 --oauth-issuer {issuer} --oauth-scope mcp:tools"
    );
    match mcp_call::authz::serve(listener, issuer).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("oauth-dev-server: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}
