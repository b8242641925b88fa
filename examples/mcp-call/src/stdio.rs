//! `stdio:COMMAND ARGS…`: the command started, one JSON message a line each way.

use std::process::Stdio as Pipe;

use mcp_core::transport::escape::escaped;
use serde_json::Value;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};
use tokio::sync::mpsc;

/// The longest line read from the command (bytes); a longer one ends the session.
const MAX_LINE: usize = 16 << 20;

pub(crate) struct Stdio {
    child: Child,
    stdin: Option<ChildStdin>,
    rx: mpsc::UnboundedReceiver<Result<Value, String>>,
}

impl Stdio {
    /// Starts `command` (its words split at whitespace: no quoting), its stderr shown only
    /// when `verbose`.
    pub(crate) fn spawn(command: &str, verbose: bool) -> Result<Stdio, String> {
        let mut words = command.split_whitespace();
        let program = words
            .next()
            .ok_or("stdio: names no command (stdio:COMMAND ARGS…)")?;
        let mut child = Command::new(program)
            .args(words)
            .stdin(Pipe::piped())
            .stdout(Pipe::piped())
            .stderr(if verbose {
                Pipe::inherit()
            } else {
                Pipe::null()
            })
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| format!("stdio: cannot start {}: {e}", escaped(program)))?;
        let stdout = child.stdout.take().ok_or("stdio: no stdout")?;
        let stdin = child.stdin.take();
        let (tx, rx) = mpsc::unbounded_channel();
        let hint = if verbose {
            ""
        } else {
            " (--verbose shows its log)"
        };
        tokio::spawn(async move {
            let mut reader = BufReader::new(stdout);
            let mut line = Vec::new();
            loop {
                line.clear();
                match read_line(&mut reader, &mut line).await {
                    Ok(0) => {
                        let _ = tx.send(Err(format!("the command ended its output{hint}")));
                        return;
                    }
                    Ok(_) => {}
                    Err(e) => {
                        let _ = tx.send(Err(format!("stdio: {e}")));
                        return;
                    }
                }
                let text = line.trim_ascii();
                if text.is_empty() {
                    continue;
                }
                let msg = serde_json::from_slice::<Value>(text).map_err(|_| {
                    format!(
                        "the command wrote a line that is not JSON: {}",
                        mcp_core::transport::escape::escaped_bytes(text)
                    )
                });
                if tx.send(msg).is_err() {
                    return;
                }
            }
        });
        Ok(Stdio { child, stdin, rx })
    }

    pub(crate) async fn send(&mut self, msg: &Value) -> Result<(), String> {
        let stdin = self
            .stdin
            .as_mut()
            .ok_or("stdio: the command's input is closed")?;
        let mut line = msg.to_string().into_bytes();
        line.push(b'\n');
        stdin
            .write_all(&line)
            .await
            .map_err(|e| format!("stdio: writing to the command: {e}"))?;
        stdin
            .flush()
            .await
            .map_err(|e| format!("stdio: writing to the command: {e}"))
    }

    pub(crate) async fn recv(&mut self) -> Option<Result<Value, String>> {
        self.rx.recv().await
    }

    /// Closes the command's input (a stdio server ends there), then ends it if it lingers.
    pub(crate) async fn close(mut self) {
        drop(self.stdin.take());
        let waited = tokio::time::timeout(std::time::Duration::from_secs(2), self.child.wait());
        if waited.await.is_err() {
            let _ = self.child.kill().await;
        }
    }
}

/// One line into `line` (without a limit beyond [`MAX_LINE`]); the bytes read, 0 at the end.
async fn read_line<R: AsyncBufReadExt + Unpin>(
    reader: &mut R,
    line: &mut Vec<u8>,
) -> std::io::Result<usize> {
    let mut total = 0;
    loop {
        let buf = reader.fill_buf().await?;
        if buf.is_empty() {
            return Ok(total);
        }
        let (chunk, done) = match buf.iter().position(|&b| b == b'\n') {
            Some(i) => (i + 1, true),
            None => (buf.len(), false),
        };
        line.extend_from_slice(buf.get(..chunk).unwrap_or_default());
        reader.consume(chunk);
        total += chunk;
        if line.len() > MAX_LINE {
            return Err(std::io::Error::other(format!(
                "a line longer than {MAX_LINE} bytes from the command"
            )));
        }
        if done {
            return Ok(total);
        }
    }
}
