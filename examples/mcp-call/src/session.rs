//! One MCP session over any wire: `initialize`, then what the command asks — the same code for
//! HTTP, MQTT and stdio, which differ only in how a message travels ([`Wire`]).

use std::collections::VecDeque;
use std::io::Write;
use std::path::Path;
use std::time::Duration;

use mcp_core::transport::escape::escaped;
use serde_json::{Value, json};
use tokio::time::Instant;

use crate::{Command, Settings, http, mqtt, stdio};

/// The protocol revision `mcp-call` speaks: sessions, elicitation, tasks' status tools.
pub(crate) const REVISION: &str = "2025-11-25";

/// The most characters of one text from the device printed (a first text, a description).
const MAX_TEXT: usize = 4096;

/// Notifications kept while a request is waited for (the oldest go first).
const NOTES_KEPT: usize = 1024;

/// `tools/list` pages followed at most (a device whose cursors never end is cut off there).
const MAX_PAGES: usize = 1000;

/// Resources `watch` subscribes to at most.
const MAX_SUBSCRIPTIONS: usize = 64;

/// How `mcp-call` ends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Exit {
    /// Done: the call succeeded, the list or the watch ended, the login completed.
    Done,
    /// The tool failed (`isError`), the device refused the request (a JSON-RPC error), or a
    /// person declined.
    Failed,
    /// The command line, the link or the device's answer could not be used.
    Unusable,
}

impl Exit {
    /// The process's exit status: 0, 1, 2.
    pub const fn code(self) -> u8 {
        match self {
            Exit::Done => 0,
            Exit::Failed => 1,
            Exit::Unusable => 2,
        }
    }
}

/// How messages travel to the device and back.
pub(crate) enum Wire {
    Http(http::Http),
    Mqtt(mqtt::Mqtt),
    Stdio(stdio::Stdio),
}

impl Wire {
    /// The wire TARGET's scheme names, connected (MQTT: the device found).
    pub(crate) async fn open(
        target: &str,
        settings: Settings,
        store: Option<&Path>,
        err: &mut (dyn Write + Send),
    ) -> Result<Wire, String> {
        if let Some(command) = target.strip_prefix("stdio:") {
            return stdio::Stdio::spawn(command, settings.verbose).map(Wire::Stdio);
        }
        let scheme = target
            .split_once("://")
            .map(|(s, _)| s.to_ascii_lowercase());
        match scheme.as_deref() {
            Some("http" | "https") => {
                http::Http::new(http::Endpoint::parse(target)?, settings, store).map(Wire::Http)
            }
            Some("mqtt" | "mqtts" | "tcp" | "ssl") => mqtt::Mqtt::open(target, &settings, err)
                .await
                .map(Wire::Mqtt),
            _ => Err(format!(
                "{} is not a target: http(s)://HOST:PORT/mcp, mqtt(s)://BROKER:PORT[/DEVICE] or \
                 stdio:COMMAND",
                escaped(target)
            )),
        }
    }

    async fn send(&mut self, msg: &Value) -> Result<(), String> {
        match self {
            Wire::Http(w) => w.send(msg).await,
            Wire::Mqtt(w) => w.send(msg).await,
            Wire::Stdio(w) => w.send(msg).await,
        }
    }

    /// The next message from the device; `None` once the link is gone.
    async fn recv(&mut self) -> Option<Result<Value, String>> {
        match self {
            Wire::Http(w) => w.recv().await,
            Wire::Mqtt(w) => w.recv().await,
            Wire::Stdio(w) => w.recv().await,
        }
    }

    /// Makes sure what the device sends on its own reaches [`recv`](Self::recv): over HTTP,
    /// the session's `GET` stream; the other wires carry it already.
    async fn listen(&mut self) -> Result<(), String> {
        match self {
            Wire::Http(w) => w.listen().await,
            Wire::Mqtt(_) | Wire::Stdio(_) => Ok(()),
        }
    }

    async fn close(self) {
        match self {
            Wire::Http(w) => w.close().await,
            Wire::Mqtt(w) => w.close().await,
            Wire::Stdio(w) => w.close().await,
        }
    }
}

/// A session with the device.
pub(crate) struct Session {
    wire: Wire,
    yes: bool,
    json: bool,
    timeout: Duration,
    next_id: i64,
    /// Notifications that came while a request was waited for.
    notes: VecDeque<Value>,
}

impl Session {
    pub(crate) fn new(wire: Wire, yes: bool, json: bool, timeout: Duration) -> Self {
        Session {
            wire,
            yes,
            json,
            timeout,
            next_id: 1,
            notes: VecDeque::new(),
        }
    }

    /// Initializes, then runs `command`.
    pub(crate) async fn run(
        &mut self,
        command: &Command,
        out: &mut (dyn Write + Send),
        err: &mut (dyn Write + Send),
    ) -> Result<crate::Exit, String> {
        self.initialize(err).await?;
        match command {
            Command::List => self.list(out, err).await,
            Command::Call { tool, arguments } => {
                self.call(tool, arguments.as_deref(), out, err).await
            }
            Command::Watch { duration } => {
                self.watch(duration.map(Duration::from_secs), out, err)
                    .await
            }
            Command::Login => Ok(Exit::Done),
        }
    }

    /// Ends the session (HTTP: `DELETE`; MQTT: the client's goodbye; stdio: the command).
    pub(crate) async fn close(self) {
        self.wire.close().await;
    }

    async fn initialize(&mut self, err: &mut (dyn Write + Send)) -> Result<(), String> {
        let capabilities = if self.yes {
            json!({"elicitation": {}})
        } else {
            json!({})
        };
        let params = json!({
            "protocolVersion": REVISION,
            "capabilities": capabilities,
            "clientInfo": {"name": "mcp-call", "version": env!("CARGO_PKG_VERSION")},
        });
        let answer = self.request("initialize", params, err).await?;
        if let Some(e) = answer.get("error") {
            return Err(format!("the device refused initialize: {}", error_text(e)));
        }
        self.wire
            .send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))
            .await
    }

    /// Sends a request and waits for its answer (the whole response object), answering the
    /// device's own requests and keeping its notifications meanwhile.
    async fn request(
        &mut self,
        method: &str,
        params: Value,
        err: &mut (dyn Write + Send),
    ) -> Result<Value, String> {
        let id = self.next_id;
        self.next_id += 1;
        self.wire
            .send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await?;
        let deadline = Instant::now() + self.timeout;
        loop {
            let msg = self.next_message(deadline, method).await?;
            if msg.get("method").is_none() {
                if msg.get("id") == Some(&json!(id)) {
                    return Ok(msg);
                }
                continue; // an answer to nothing this client asked
            }
            if let Some(note) = self.incoming(msg, err).await? {
                if self.notes.len() == NOTES_KEPT {
                    self.notes.pop_front();
                }
                self.notes.push_back(note);
            }
        }
    }

    async fn next_message(
        &mut self,
        deadline: Instant,
        waiting_for: &str,
    ) -> Result<Value, String> {
        match tokio::time::timeout_at(deadline, self.wire.recv()).await {
            Err(_) => Err(format!(
                "no answer to {waiting_for} within {} s (--timeout)",
                self.timeout.as_secs()
            )),
            Ok(None) => Err(format!(
                "the device closed the link before answering {waiting_for}"
            )),
            Ok(Some(r)) => r,
        }
    }

    /// A message from the device with a `method`: its request answered here (`None`), or the
    /// notification handed back.
    async fn incoming(
        &mut self,
        msg: Value,
        err: &mut (dyn Write + Send),
    ) -> Result<Option<Value>, String> {
        let Some(id) = msg.get("id").cloned() else {
            return Ok(Some(msg));
        };
        let method = msg
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let result = match method {
            "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
            "elicitation/create" => {
                let params = msg.get("params").cloned().unwrap_or(Value::Null);
                let question = params
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let content = yes_content(&params);
                let answer = match (self.yes, content) {
                    (true, Some(content)) => {
                        let _ = writeln!(
                            err,
                            "mcp-call: the device asks: {} — answered yes (--yes)",
                            escaped(question).max_chars(MAX_TEXT)
                        );
                        json!({"action": "accept", "content": content})
                    }
                    _ => {
                        let _ = writeln!(
                            err,
                            "mcp-call: the device asks: {} — declined{}",
                            escaped(question).max_chars(MAX_TEXT),
                            if self.yes {
                                " (not a yes/no question)"
                            } else {
                                " (answer yes with --yes)"
                            }
                        );
                        json!({"action": "decline"})
                    }
                };
                json!({"jsonrpc": "2.0", "id": id, "result": answer})
            }
            _ => json!({"jsonrpc": "2.0", "id": id,
                        "error": {"code": -32601, "message": "Method not found"}}),
        };
        self.wire.send(&result).await?;
        Ok(None)
    }

    /// The next notification: a kept one, else the next from the wire until `deadline`.
    async fn next_note(
        &mut self,
        deadline: Option<Instant>,
        err: &mut (dyn Write + Send),
    ) -> Result<Option<Value>, String> {
        if let Some(note) = self.notes.pop_front() {
            return Ok(Some(note));
        }
        loop {
            let next = match deadline {
                Some(d) => match tokio::time::timeout_at(d, self.wire.recv()).await {
                    Ok(m) => m,
                    Err(_) => return Ok(None),
                },
                None => self.wire.recv().await,
            };
            let msg = match next {
                None => return Err("the device closed the link".into()),
                Some(m) => m?,
            };
            if msg.get("method").is_none() {
                continue;
            }
            if let Some(note) = self.incoming(msg, err).await? {
                return Ok(Some(note));
            }
        }
    }

    async fn list(
        &mut self,
        out: &mut (dyn Write + Send),
        err: &mut (dyn Write + Send),
    ) -> Result<Exit, String> {
        let mut tools = Vec::new();
        let mut cursor: Option<Value> = None;
        for _ in 0..MAX_PAGES {
            let params = match cursor.take() {
                Some(c) => json!({"cursor": c}),
                None => json!({}),
            };
            let answer = self.request("tools/list", params, err).await?;
            if let Some(e) = answer.get("error") {
                let _ = writeln!(err, "mcp-call: tools/list refused: {}", error_text(e));
                return Ok(Exit::Failed);
            }
            let result = answer.get("result").cloned().unwrap_or(Value::Null);
            if let Some(page) = result.get("tools").and_then(Value::as_array) {
                tools.extend(page.iter().cloned());
            }
            match result.get("nextCursor") {
                Some(c) if !c.is_null() => cursor = Some(c.clone()),
                _ => break,
            }
        }
        if self.json {
            let _ = writeln!(out, "{}", safe_json(&Value::Array(tools), true));
            return Ok(Exit::Done);
        }
        for tool in &tools {
            let _ = writeln!(out, "{}", tool_line(tool));
        }
        Ok(Exit::Done)
    }

    async fn call(
        &mut self,
        tool: &str,
        arguments: Option<&str>,
        out: &mut (dyn Write + Send),
        err: &mut (dyn Write + Send),
    ) -> Result<Exit, String> {
        let arguments: Value = match arguments {
            None => json!({}),
            Some(text) => serde_json::from_str(text)
                .map_err(|e| format!("the arguments are not JSON: {e}"))?,
        };
        if !arguments.is_object() {
            return Err("the arguments must be a JSON object, e.g. '{\"volume\":40}'".into());
        }
        // Outcomes that come after the answer travel on the session's own stream.
        self.wire.listen().await?;
        let Some(result) = self.call_tool(tool, arguments, err).await? else {
            return Ok(Exit::Failed);
        };
        self.print_result(&result, out);
        let structured = result.get("structuredContent");
        let status = structured
            .and_then(|s| s.get("status"))
            .and_then(Value::as_str);
        if status == Some("awaiting_confirmation") {
            return self.confirmation_outcome(tool, out, err).await;
        }
        if let (Some(task), Some(poll_with)) = (
            structured
                .and_then(|s| s.get("task_id"))
                .and_then(Value::as_str),
            structured
                .and_then(|s| s.get("poll_with"))
                .and_then(Value::as_str),
        ) {
            let (task, poll_with) = (task.to_string(), poll_with.to_string());
            return self.task_outcome(&task, &poll_with, out, err).await;
        }
        Ok(exit_of(&result))
    }

    /// A `tools/call` of `tool`: its result, or `None` after saying on `err` the JSON-RPC error
    /// it was answered with.
    async fn call_tool(
        &mut self,
        tool: &str,
        arguments: Value,
        err: &mut (dyn Write + Send),
    ) -> Result<Option<Value>, String> {
        let params = json!({"name": tool, "arguments": arguments});
        let answer = self.request("tools/call", params, err).await?;
        if let Some(e) = answer.get("error") {
            let _ = writeln!(err, "mcp-call: {tool}: {}", error_text(e));
            return Ok(None);
        }
        Ok(Some(answer.get("result").cloned().unwrap_or(Value::Null)))
    }

    /// Waits for the outcome of a call held for a person: the device's `confirmation`
    /// notification for `tool`.
    async fn confirmation_outcome(
        &mut self,
        tool: &str,
        out: &mut (dyn Write + Send),
        err: &mut (dyn Write + Send),
    ) -> Result<Exit, String> {
        let _ = writeln!(
            err,
            "mcp-call: waiting up to {} s for the outcome (--timeout)",
            self.timeout.as_secs()
        );
        let deadline = Instant::now() + self.timeout;
        while let Some(note) = self.next_note(Some(deadline), err).await? {
            let params = note.get("params").cloned().unwrap_or(Value::Null);
            let data = params.get("data").cloned().unwrap_or(Value::Null);
            let ours = note.get("method").and_then(Value::as_str) == Some("notifications/message")
                && params.get("logger").and_then(Value::as_str) == Some("confirmation")
                && data.get("tool").and_then(Value::as_str) == Some(tool);
            if !ours {
                continue;
            }
            if let Some(result) = data.get("result") {
                self.print_result(result, out);
                return Ok(exit_of(result));
            }
            let text = data
                .get("text")
                .and_then(Value::as_str)
                .unwrap_or("declined");
            let _ = writeln!(out, "{}", escaped(text).max_chars(MAX_TEXT));
            return Ok(Exit::Failed);
        }
        Err(format!(
            "no outcome within {} s (--timeout)",
            self.timeout.as_secs()
        ))
    }

    /// Follows a task the call started with the status tool the answer names, every half
    /// second, until the task is no longer working; prints its answer.
    async fn task_outcome(
        &mut self,
        task: &str,
        poll_with: &str,
        out: &mut (dyn Write + Send),
        err: &mut (dyn Write + Send),
    ) -> Result<Exit, String> {
        let _ = writeln!(
            err,
            "mcp-call: following {} with {} for up to {} s (--timeout)",
            escaped(task),
            escaped(poll_with),
            self.timeout.as_secs()
        );
        let deadline = Instant::now() + self.timeout;
        while Instant::now() < deadline {
            tokio::time::sleep(Duration::from_millis(500)).await;
            let arguments = json!({"task_id": task});
            let Some(result) = self.call_tool(poll_with, arguments, err).await? else {
                return Ok(Exit::Failed);
            };
            let status = result
                .get("structuredContent")
                .and_then(|s| s.get("status"))
                .and_then(Value::as_str);
            if status == Some("working") || status == Some("input_required") {
                continue;
            }
            self.print_result(&result, out);
            return Ok(match status {
                Some("completed") => exit_of(&result),
                _ => Exit::Failed,
            });
        }
        Err(format!(
            "the task did not end within {} s (--timeout)",
            self.timeout.as_secs()
        ))
    }

    async fn watch(
        &mut self,
        duration: Option<Duration>,
        out: &mut (dyn Write + Send),
        err: &mut (dyn Write + Send),
    ) -> Result<Exit, String> {
        let answer = self.request("resources/list", json!({}), err).await?;
        let uris: Vec<String> = answer
            .pointer("/result/resources")
            .and_then(Value::as_array)
            .map(|r| {
                r.iter()
                    .filter_map(|r| r.get("uri").and_then(Value::as_str))
                    .take(MAX_SUBSCRIPTIONS)
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default();
        self.wire.listen().await?;
        let mut subscribed = 0;
        for uri in &uris {
            let a = self
                .request("resources/subscribe", json!({"uri": uri}), err)
                .await?;
            if a.get("result").is_some() {
                subscribed += 1;
            }
        }
        let _ = writeln!(
            err,
            "mcp-call: watching; {subscribed} resource(s) subscribed; {}",
            match duration {
                Some(d) => format!("for {} s", d.as_secs()),
                None => "Ctrl-C ends it".into(),
            }
        );
        let _ = err.flush();
        let deadline = duration.map(|d| Instant::now() + d);
        loop {
            let note = tokio::select! {
                n = self.next_note(deadline, err) => n?,
                _ = tokio::signal::ctrl_c() => None,
            };
            let Some(note) = note else {
                return Ok(Exit::Done);
            };
            self.print_note(&note, out, err).await?;
            let _ = out.flush();
        }
    }

    async fn print_note(
        &mut self,
        note: &Value,
        out: &mut (dyn Write + Send),
        err: &mut (dyn Write + Send),
    ) -> Result<(), String> {
        if self.json {
            let _ = writeln!(out, "{}", safe_json(note, false));
            return Ok(());
        }
        let method = note
            .get("method")
            .and_then(Value::as_str)
            .unwrap_or_default();
        let params = note.get("params").cloned().unwrap_or(Value::Null);
        match method {
            "notifications/resources/updated" => {
                let uri = params
                    .get("uri")
                    .and_then(Value::as_str)
                    .unwrap_or_default();
                let read = self
                    .request("resources/read", json!({"uri": uri}), err)
                    .await?;
                let text = read
                    .pointer("/result/contents/0/text")
                    .and_then(Value::as_str)
                    .unwrap_or("(not readable)");
                let _ = writeln!(
                    out,
                    "updated {}: {}",
                    escaped(uri),
                    escaped(text).max_chars(MAX_TEXT)
                );
            }
            "notifications/message" => {
                let logger = params
                    .get("logger")
                    .and_then(Value::as_str)
                    .unwrap_or("device");
                let data = params.get("data").cloned().unwrap_or(Value::Null);
                let text = match data.get("text").and_then(Value::as_str) {
                    Some(t) => escaped(t).max_chars(MAX_TEXT).to_string(),
                    None => match data.as_str() {
                        Some(t) => escaped(t).max_chars(MAX_TEXT).to_string(),
                        None => safe_json(&data, false),
                    },
                };
                let _ = writeln!(out, "{}: {text}", escaped(logger));
            }
            _ => {
                let _ = writeln!(out, "{}: {}", escaped(method), safe_json(&params, false));
            }
        }
        Ok(())
    }

    /// A tool result as `call` prints it: the first text, then the evidence as data (or the
    /// whole result with `--json`).
    fn print_result(&self, result: &Value, out: &mut (dyn Write + Send)) {
        if self.json {
            let _ = writeln!(out, "{}", safe_json(result, true));
            return;
        }
        let content = result.get("content").and_then(Value::as_array);
        let text = content
            .and_then(|c| {
                c.iter()
                    .find(|b| b.get("type").and_then(Value::as_str) == Some("text"))
            })
            .and_then(|b| b.get("text"))
            .and_then(Value::as_str);
        match text {
            Some(t) => {
                let _ = writeln!(out, "{}", escaped(t).max_chars(MAX_TEXT));
            }
            None => {
                let _ = writeln!(out, "(no text in the result)");
            }
        }
        for block in content.into_iter().flatten() {
            let kind = block
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or_default();
            if kind == "text" {
                continue;
            }
            let mime = block.get("mimeType").and_then(Value::as_str).unwrap_or("?");
            let size = block
                .get("data")
                .and_then(Value::as_str)
                .map_or(0, |d| d.len() / 4 * 3);
            let _ = writeln!(
                out,
                "({} {}, about {size} bytes)",
                escaped(kind),
                escaped(mime)
            );
        }
        // Where the SDKs keep it, else the result's member, else a status tool's report.
        let evidence = result
            .pointer("/_meta/io.github.mcu-mcp~1evidence")
            .or_else(|| result.pointer("/structuredContent/evidence"));
        if let Some(e) = evidence {
            let _ = writeln!(out, "evidence: {}", evidence_json(e));
        }
    }
}

/// Evidence as the device writes it, `level` first (serde_json would sort the members).
fn evidence_json(e: &Value) -> String {
    let Some(members) = e.as_object() else {
        return safe_json(e, false);
    };
    const ORDER: [&str; 5] = ["level", "commanded", "observed", "tolerance", "unit"];
    let known = ORDER
        .iter()
        .filter_map(|k| members.get(*k).map(|v| (*k, v)));
    let rest = members
        .iter()
        .filter(|(k, _)| !ORDER.contains(&k.as_str()))
        .map(|(k, v)| (k.as_str(), v));
    let parts: Vec<String> = known
        .chain(rest)
        .map(|(k, v)| format!("{}:{}", safe_json(&json!(k), false), safe_json(v, false)))
        .collect();
    format!("{{{}}}", parts.join(","))
}

/// `isError: true` is a failure.
fn exit_of(result: &Value) -> Exit {
    if result.get("isError").and_then(Value::as_bool) == Some(true) {
        Exit::Failed
    } else {
        Exit::Done
    }
}

/// The content that says yes to an elicitation's `requestedSchema`: every boolean property
/// `true`. `None` when it asks for anything a yes cannot give (a required non-boolean).
fn yes_content(params: &Value) -> Option<Value> {
    let schema = params.get("requestedSchema")?;
    let properties = schema.get("properties")?.as_object()?;
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut content = serde_json::Map::new();
    for (name, p) in properties {
        if p.get("type").and_then(Value::as_str) == Some("boolean") {
            content.insert(name.clone(), Value::Bool(true));
        } else if required.contains(&name.as_str()) {
            return None;
        }
    }
    (!content.is_empty()).then_some(Value::Object(content))
}

/// A JSON-RPC error as a line: `-32602: Invalid params: …`.
pub(crate) fn error_text(e: &Value) -> String {
    let code = e.get("code").and_then(Value::as_i64).unwrap_or_default();
    let message = e.get("message").and_then(Value::as_str).unwrap_or_default();
    format!("error {code}: {}", escaped(message).max_chars(MAX_TEXT))
}

/// One tool as `list` prints it: `name(param: type, optional?: type)  description`.
fn tool_line(tool: &Value) -> String {
    let name = tool.get("name").and_then(Value::as_str).unwrap_or("?");
    let schema = tool.get("inputSchema").cloned().unwrap_or(Value::Null);
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let params: Vec<String> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|p| {
            p.iter()
                .map(|(k, v)| {
                    let ty = v.get("type").and_then(Value::as_str).unwrap_or("any");
                    let optional = if required.contains(&k.as_str()) {
                        ""
                    } else {
                        "?"
                    };
                    format!("{}{optional}: {}", escaped(k), escaped(ty))
                })
                .collect()
        })
        .unwrap_or_default();
    let description = tool
        .get("description")
        .and_then(Value::as_str)
        .unwrap_or_default()
        .lines()
        .next()
        .unwrap_or_default();
    format!(
        "{}({})  {}",
        escaped(name),
        params.join(", "),
        escaped(description).max_chars(200)
    )
}

/// `v` as JSON a terminal shows as it is: serde_json escapes C0 controls in strings; the
/// other characters [`escaped`] escapes (DEL, C1, bidi controls, line separators) become
/// `\uXXXX` too, which keeps the JSON valid (they only occur inside strings).
pub(crate) fn safe_json(v: &Value, pretty: bool) -> String {
    let text = if pretty {
        serde_json::to_string_pretty(v)
    } else {
        serde_json::to_string(v)
    }
    .unwrap_or_default();
    let mut safe = String::with_capacity(text.len());
    for c in text.chars() {
        let unsafe_char = matches!(c, '\u{7f}'..='\u{9f}' | '\u{61c}' | '\u{200e}' | '\u{200f}'
            | '\u{2028}'..='\u{202e}' | '\u{2066}'..='\u{2069}');
        if unsafe_char {
            safe.push_str(&format!("\\u{:04x}", u32::from(c)));
        } else {
            safe.push(c);
        }
    }
    safe
}

#[cfg(test)]
mod test {
    #![allow(clippy::unwrap_used, clippy::indexing_slicing, reason = "a test")]

    use super::*;

    #[test]
    fn a_yes_fills_every_boolean_and_refuses_a_required_text() {
        let asked = json!({"message": "Switch on?", "requestedSchema": {"type": "object",
            "properties": {"confirm": {"type": "boolean"}}, "required": ["confirm"]}});
        assert_eq!(yes_content(&asked), Some(json!({"confirm": true})));
        let text = json!({"requestedSchema": {"properties": {"name": {"type": "string"}},
            "required": ["name"]}});
        assert_eq!(yes_content(&text), None);
    }

    #[test]
    fn json_from_the_device_shows_no_terminal_controls_and_stays_json() {
        let v = json!({"text": "a\u{1b}[31m\u{202e}b\u{9b}c\n"});
        let shown = safe_json(&v, false);
        assert!(
            !shown.chars().any(|c| c.is_control() || c == '\u{202e}'),
            "{shown}"
        );
        assert_eq!(serde_json::from_str::<Value>(&shown).unwrap(), v);
    }

    #[test]
    fn a_tool_line_names_its_parameters() {
        let tool = json!({"name": "self.audio_speaker.set_volume",
            "description": "Set the volume.\nMore.",
            "inputSchema": {"type": "object", "properties": {"volume": {"type": "integer"},
                "fade": {"type": "boolean"}}, "required": ["volume"]}});
        let line = tool_line(&tool);
        assert!(line.starts_with("self.audio_speaker.set_volume("), "{line}");
        assert!(line.contains("volume: integer"), "{line}");
        assert!(line.contains("fade?: boolean"), "{line}");
        assert!(line.ends_with("  Set the volume."), "{line}");
    }
}
