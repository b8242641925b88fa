//! `mcp-call TARGET list | call TOOL JSON | watch | login`: see the library's docs
//! (`cargo doc -p mcp-call --open`) or `mcp-call --help`.

use std::process::ExitCode;

use clap::Parser as _;

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> ExitCode {
    let cli = mcp_call::Cli::parse();
    let open: mcp_call::OpenUrl = Box::new(open_in_browser);
    let exit = mcp_call::run(cli, &mut std::io::stdout(), &mut std::io::stderr(), &open).await;
    ExitCode::from(exit.code())
}

/// Opens `url` with `$BROWSER` when it is set (the URL printed already says where to go
/// otherwise); only http(s) URLs.
fn open_in_browser(url: String) {
    let Some(browser) = std::env::var_os("BROWSER") else {
        return;
    };
    if !(url.starts_with("http://") || url.starts_with("https://")) {
        return;
    }
    let _ = std::process::Command::new(browser)
        .arg(url)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn();
}
