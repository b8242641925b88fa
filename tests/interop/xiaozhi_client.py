#!/usr/bin/env python3
"""A xiaozhi-backend-style MCP client, driving device-sim the way xinnan's Python backend
(xiaozhi-esp32-server) drives a device, written from the facts in docs/DESIGN.md ("Facts about the peers"):

- the device speaks first: its hello, with `features.mcp`;
- the backend answers the hello with `initialize` id 1 (protocolVersion 2024-11-05, capabilities
  with `vision {url, token}`), `tools/list` id 2 without params, and its own hello carrying a
  `session_id` — the MCP messages may arrive before the hello exchange completes, so they are sent
  first here; no `notifications/initialized` follows (the backend sends none);
- after the initialize result it asks `tools/list` id 2 again, and repeats id 2 with `cursor`
  while `nextCursor` is present;
- tool calls use ids from 1 (a counter of their own, so id 1 and 2 are reused across methods);
- every message is `json.dumps({"type": "mcp", "payload": ...})` with the defaults: ", " and
  ": " separators, non-ASCII as `\\uXXXX`, no `session_id` in the envelope.

The device speaks first (`--confirm --confirm-timeout 2 --ui`, whose JSON API moves the sensors
and presses the button): without ever subscribing, the backend gets `notifications/resources/updated`
in the envelope after a move (and reads the value); `self.relay.set` on is held inside the call (the
backend hears only the call's answer): the device shows the question, a press runs it and the call's
own answer is the outcome with its evidence; with no press within the timeout nothing runs and the
call's answer says so. A motor move is held the same way (`--hold-answer 1` here): a short one is
answered with the encoder's measurement, a longer one with what was started and how to follow it.

The link, as xinnan's server treats it (`XinnanLinkServer`, WebSocket only): a message that arrives
while the backend still loads the device's configuration (more than 1 s) is dropped — the device's
first hello, on the first connection — so the device must give up after its hello timeout
(`--ws-hello-timeout`, short here), reconnect and get a session within 15 s; a connection without a
`Device-Id` header gets a line of text and is closed, every time, so the device's reconnections must
back off to the cap (`--ws-backoff-first/--ws-backoff-max`, short here), not come every second.

Transports: the stdio envelope (`device-sim --envelope xiaozhi`) and the WebSocket one (this
client runs a WebSocket server on 127.0.0.1 and starts `device-sim --xiaozhi-ws URL`, which
connects out to it). Run with `--transport stdio|ws|both` (default both).

What xinnan's backend makes of each answer is computed too (`backend_view`): for a result it
hands `content[0].text` to the model, for an `isError` result it reads a member named `error`,
for a JSON-RPC error its `message` (spoken via TTS). Where that loses information our server
could give, the check is reported as `KNOWN` (a recorded finding, not a failure, unless
INTEROP_STRICT=1).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import sys
import uuid
from typing import Any

from harness import (
    BATTERY,
    BOARD_TOOLS,
    BUTTON,
    DEVICE_SIM,
    EXPECTED_LISTING,
    FILLERS,
    MODEL_TOOLS,
    PAGE_BYTES,
    PAGING,
    RELAY_QUESTION,
    TEMPERATURE,
    SimApi,
    check,
    finish,
)

TIMEOUT = 10.0
VISION = {"url": "http://127.0.0.1:8003/mcp/vision/explain", "token": "eyJ0eXAi.\u4ee4\u724c.sig"}
STRICT = os.environ.get("INTEROP_STRICT") == "1"


def known(name: str, ok: bool, detail: object = "") -> None:
    """A check that records a reported interoperability finding."""
    if ok or STRICT:
        check(name, ok, detail)
    else:
        print(f"KNOWN - {name}: {detail}", flush=True)


def dumps(obj: Any) -> str:
    """Exactly how xinnan's backend serializes: json.dumps with its defaults."""
    return json.dumps(obj)


def backend_view(payload: dict) -> str:
    """What xinnan's backend does with an answer to tools/call (call_mcp_tool, handle_mcp_message)."""
    if "error" in payload:
        return "MCP错误: " + str(payload["error"].get("message", "未知错误"))
    result = payload.get("result")
    if isinstance(result, dict):
        if result.get("isError") is True:
            return "工具调用错误: " + str(result.get("error", "工具调用返回错误，但未提供具体错误信息"))
        content = result.get("content")
        if isinstance(content, list) and content and isinstance(content[0], dict) and "text" in content[0]:
            return content[0]["text"]
    return str(result)


class StdioLink:
    """device-sim --envelope xiaozhi: one JSON message per line on stdin/stdout."""

    name = "stdio envelope"

    def __init__(self, *args: str) -> None:
        self.args = ["--envelope", "xiaozhi", *args]
        self.stderr: list[str] = []

    async def __aenter__(self) -> StdioLink:
        self.proc = await asyncio.create_subprocess_exec(
            DEVICE_SIM, *self.args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            limit=1 << 20,
        )
        self._err = asyncio.create_task(self._drain_stderr())
        return self

    async def _drain_stderr(self) -> None:
        assert self.proc.stderr
        async for line in self.proc.stderr:
            self.stderr.append(line.decode(errors="replace").rstrip())

    async def send(self, text: str) -> None:
        assert self.proc.stdin
        self.proc.stdin.write(text.encode() + b"\n")
        await self.proc.stdin.drain()

    async def recv(self) -> str:
        assert self.proc.stdout
        line = await asyncio.wait_for(self.proc.stdout.readline(), TIMEOUT)
        if not line:
            raise EOFError("device-sim closed stdout")
        return line.decode()

    async def __aexit__(self, *exc: object) -> None:
        if self.proc.stdin:
            self.proc.stdin.close()
        try:
            self.exit_code = await asyncio.wait_for(self.proc.wait(), 5)
        except asyncio.TimeoutError:
            self.proc.kill()
            self.exit_code = await self.proc.wait()
        await asyncio.wait_for(self._err, 5)


class WsLink:
    """A WebSocket server on 127.0.0.1; device-sim --xiaozhi-ws connects out to it."""

    name = "websocket"
    path = "/xiaozhi/v1/"

    def __init__(self, *args: str) -> None:
        self.args = list(args)
        self.stderr: list[str] = []
        self.request_path = None
        self.request_headers: dict[str, str] = {}

    async def __aenter__(self) -> WsLink:
        from websockets.asyncio.server import serve

        self.connected: asyncio.Future = asyncio.get_running_loop().create_future()
        self.done = asyncio.Event()

        async def handler(ws) -> None:
            if self.connected.done():
                await ws.close(1008, "one device at a time")
                return
            self.request_path = ws.request.path
            self.request_headers = {k.lower(): v for k, v in ws.request.headers.raw_items()}
            self.connected.set_result(ws)
            await self.done.wait()

        self.server = await serve(handler, "127.0.0.1", 0, max_size=1 << 20)
        port = self.server.sockets[0].getsockname()[1]
        self.url = f"ws://127.0.0.1:{port}{self.path}"
        self.proc = await asyncio.create_subprocess_exec(
            DEVICE_SIM, "--xiaozhi-ws", self.url, "--once", *self.args,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )
        self._err = asyncio.create_task(self._drain_stderr())
        self.ws = await asyncio.wait_for(self.connected, TIMEOUT)
        return self

    async def _drain_stderr(self) -> None:
        assert self.proc.stderr
        async for line in self.proc.stderr:
            self.stderr.append(line.decode(errors="replace").rstrip())

    async def send(self, text: str) -> None:
        await self.ws.send(text)  # a str goes out as a text frame, as xinnan's does

    async def recv(self) -> str:
        msg = await asyncio.wait_for(self.ws.recv(), TIMEOUT)
        if isinstance(msg, bytes):
            raise ValueError(f"binary frame from the device ({len(msg)} bytes)")
        return msg

    async def __aexit__(self, *exc: object) -> None:
        self.done.set()
        try:
            await self.ws.close()
        except Exception:
            pass
        self.server.close()
        try:
            self.exit_code = await asyncio.wait_for(self.proc.wait(), 5)
        except asyncio.TimeoutError:
            self.proc.terminate()
            try:
                self.exit_code = await asyncio.wait_for(self.proc.wait(), 5)
            except asyncio.TimeoutError:
                self.proc.kill()
                self.exit_code = await self.proc.wait()
        await asyncio.wait_for(self._err, 5)


class Backend:
    """The backend side of one connection."""

    def __init__(self, link, tag: str) -> None:
        self.link = link
        self.tag = tag
        self.session_id = str(uuid.uuid4())
        self.hello_sent = False
        self.next_id = 1  # tool-call ids, as xinnan's MCPClient counts them
        self.sent: list[str] = []
        self.stray: list[dict] = []
        self.bad_session: list[Any] = []
        #: Every notification envelope, whole (session_id and all), in arrival order.
        self.notes: list[dict] = []
        self.seen_notes = 0

    async def send(self, obj: dict) -> str:
        text = dumps(obj)
        self.sent.append(text)
        await self.link.send(text)
        return text

    async def send_mcp(self, payload: dict) -> str:
        return await self.send({"type": "mcp", "payload": payload})

    async def recv_json(self) -> dict:
        return json.loads(await self.link.recv())

    async def answer(self, want_id: int) -> dict:
        """The next MCP payload answering `want_id` (notifications and others are kept aside)."""
        while True:
            env = await self.recv_json()
            if env.get("type") != "mcp" or not isinstance(env.get("payload"), dict):
                self.stray.append(env)
                continue
            payload = env["payload"]
            if self.hello_sent and env.get("session_id") != self.session_id:
                self.bad_session.append(env.get("session_id"))
            if payload.get("id") == want_id and ("result" in payload or "error" in payload):
                return payload
            if "method" in payload and "id" not in payload:
                self.notes.append(env)
            self.stray.append(payload)

    async def note(self, ok, timeout: float = 5.0) -> dict | None:
        """The next notification envelope (after those already taken) whose payload satisfies `ok`;
        others are passed over. None if none comes within `timeout`."""
        deadline = asyncio.get_running_loop().time() + timeout
        while True:
            while self.seen_notes < len(self.notes):
                env = self.notes[self.seen_notes]
                self.seen_notes += 1
                if ok(env["payload"]):
                    return env
            left = deadline - asyncio.get_running_loop().time()
            if left <= 0:
                return None
            try:
                env = json.loads(await asyncio.wait_for(self.link.recv(), left))
            except asyncio.TimeoutError:
                return None
            payload = env.get("payload") if env.get("type") == "mcp" else None
            if isinstance(payload, dict) and "method" in payload and "id" not in payload:
                self.notes.append(env)
            else:
                self.stray.append(env)

    async def call(self, name: str, arguments: dict) -> tuple[str, dict]:
        call_id = self.next_id
        self.next_id += 1
        text = await self.send_mcp({"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
                                    "params": {"name": name, "arguments": arguments}})
        return text, await self.answer(call_id)


def result_of(payload: dict) -> dict:
    r = payload.get("result")
    return r if isinstance(r, dict) else {}


async def session(link, tag: str) -> None:
    b = Backend(link, tag)

    # 1. The device speaks first.
    hello = await b.recv_json()
    check(
        f"{tag} the device opens with its hello: type hello, features.mcp true",
        hello.get("type") == "hello" and (hello.get("features") or {}).get("mcp") is True
        and hello.get("transport") == "websocket",
        hello,
    )

    # 2. The backend's answer: initialize id 1 and tools/list id 2 go out before its hello.
    init_text = await b.send_mcp({
        "jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {
            "protocolVersion": "2024-11-05",
            "capabilities": {"roots": {"listChanged": True}, "sampling": {}, "vision": VISION},
            "clientInfo": {"name": "XiaozhiClient", "version": "1.0.0"},
        },
    })
    check(
        f"{tag} the initialize goes out as json.dumps writes it (', ' separators, \\uXXXX escapes)",
        init_text.startswith('{"type": "mcp", "payload": {"jsonrpc": "2.0", "id": 1, ')
        and init_text.isascii() and "\\u4ee4\\u724c" in init_text,
        init_text,
    )
    await b.send_mcp({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    await b.send({"type": "hello", "version": 1, "transport": "websocket",
                  "audio_params": {"format": "opus", "sample_rate": 24000, "channels": 1, "frame_duration": 60},
                  "session_id": b.session_id})

    # (Answers to requests sent before our hello may carry no session_id; the rest must.)
    init = await b.answer(1)
    r = result_of(init)
    check(
        f"{tag} initialize (sent before the hello exchange completed) answered: 2024-11-05, tools capability",
        r.get("protocolVersion") == "2024-11-05" and "tools" in (r.get("capabilities") or {})
        and (r.get("serverInfo") or {}).get("name") == "device-sim",
        init,
    )
    early = await b.answer(2)
    early_names = [t.get("name") for t in result_of(early).get("tools", [])]
    check(f"{tag} the early tools/list id 2 (before the initialize result) gets page 1",
          early_names and early_names == EXPECTED_LISTING[: len(early_names)], early)
    b.hello_sent = True

    # 3. After the initialize result: tools/list id 2 again, then id 2 with cursor while nextCursor.
    names: list[str] = []
    cursors: list[str] = []
    sizes: list[int] = []
    await b.send_mcp({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
    for _ in range(60):
        page = await b.answer(2)
        res = result_of(page)
        tools = res.get("tools", [])
        names += [t.get("name") for t in tools]
        sizes.append(len(json.dumps(res, separators=(",", ":"), ensure_ascii=False).encode()))
        cursor = res.get("nextCursor")
        if not cursor:
            check(f"{tag} the last page has no nextCursor member at all", "nextCursor" not in res, res.keys())
            break
        if cursor in cursors:
            check(f"{tag} cursors always advance", False, cursors + [cursor])
            break
        cursors.append(cursor)
        await b.send_mcp({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {"cursor": cursor}})
    check(f"{tag} tools/list: {len(names)} tools over {len(sizes)} pages, every tool once, in order",
          names == EXPECTED_LISTING and len(sizes) >= 4, names)
    check(f"{tag} every page's result fits the {PAGE_BYTES}-byte budget (largest {max(sizes)})",
          max(sizes) <= PAGE_BYTES, sizes)
    check(f"{tag} user-only self.reboot is not listed", "self.reboot" not in names)
    # xiaozhi's own device and backends start a listing with an empty cursor; withUserTools asks
    # for the user-only tools too (to show a person), whoever is connected.
    await b.send_mcp({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                      "params": {"cursor": "", "withUserTools": True}})
    page = result_of(await b.answer(2))
    with_user = BOARD_TOOLS + FILLERS
    listed = [t.get("name") for t in page.get("tools", [])]
    check(f"{tag} an empty cursor (\"cursor\":\"\") is the first page",
          len(listed) > 0 and listed == with_user[:len(listed)], page)
    tools = list(page.get("tools", []))
    for _ in range(60):
        cursor = page.get("nextCursor")
        if not cursor:
            break
        await b.send_mcp({"jsonrpc": "2.0", "id": 2, "method": "tools/list",
                          "params": {"cursor": cursor, "withUserTools": True}})
        page = result_of(await b.answer(2))
        tools += page.get("tools", [])
    reboot = next((t for t in tools if t.get("name") == "self.reboot"), {})
    check(f"{tag} withUserTools: true lists every tool, user-only self.reboot too (audience user), "
          "to the model's connection", [t.get("name") for t in tools] == with_user
          and (reboot.get("annotations") or {}).get("audience") == ["user"], [t.get("name") for t in tools])

    # 4. Calls, ids from 1 (reusing 1 and 2 across methods, as xinnan does). The model hears only
    # content[0].text (backend_view): the value and the evidence must both be in it.
    _, p = await b.call("self.audio_speaker.set_volume", {"volume": 40})
    r = result_of(p)
    ev = r.get("evidence") or {}
    said = backend_view(p)
    check(
        f"{tag} call id 1 set_volume 40: the model hears \"{said}\" (value and read-back evidence); evidence read_back 40 == 40",
        p.get("id") == 1 and r.get("isError") is False and said == "true — read back: 40 (commanded 40)"
        and ev == {"level": "read_back", "commanded": 40, "observed": 40},
        p,
    )
    _, p = await b.call("self.screen.set_brightness", {"brightness": 55})
    ev = result_of(p).get("evidence") or {}
    check(f"{tag} call id 2 set_brightness 55: the model hears it was applied, not verified", p.get("id") == 2
          and backend_view(p) == "true — applied, not verified (commanded 55)"
          and ev.get("level") == "applied" and ev.get("commanded") == 55, p)
    _, p = await b.call("self.screen.set_theme", {"theme": "dark"})
    check(f"{tag} set_theme dark: the model hears true, applied", backend_view(p) == "true — applied, not verified"
          and (result_of(p).get("evidence") or {}).get("level") == "applied", p)
    _, p = await b.call("self.relay.set", {"on": True})
    check(f"{tag} relay on: the model hears measured true == true", backend_view(p) == "true — measured: true (commanded true)"
          and result_of(p).get("evidence") == {"level": "measured", "commanded": True, "observed": True}, p)

    # A long-running action that ends within the hold budget: the backend follows no task, so the
    # call's answer waits for the move, and the model hears where the encoder measured it.
    _, p = await b.call("self.motor.move_to", {"position": 100})
    said = backend_view(p)
    check(f"{tag} move_to 100 (shorter than the {HOLD_ANSWER_S} s budget): the answer waits for the move, and the "
          f"model hears the encoder's measurement: \"{said}\"",
          said == "100 — measured: 100 steps (commanded 100 steps, within ±2 steps)"
          and (result_of(p).get("evidence") or {}).get("level") == "measured", p)
    # One that takes longer: past the budget the model learns from the text alone what started, its
    # task id, and how to learn the outcome, and polls the status tool with that id.
    _, p = await b.call("self.motor.move_to", {"position": 600})
    said = backend_view(p)
    heard = re.search(r"task-[0-9a-f]{16}", said)
    task_id = heard.group(0) if heard else None
    check(f"{tag} move_to 600: the model hears what started, the task id, the evidence and the status tool: \"{said}\"",
          task_id is not None and task_id == (result_of(p).get("structuredContent") or {}).get("task_id")
          and said == f"self.motor.move_to started as task {task_id} — scheduled, not done yet (commanded 600 steps); "
                      "for the outcome, call self.tasks.get_status with this task_id"
          and (result_of(p).get("evidence") or {}).get("level") == "scheduled", p)
    status: dict = {}
    said = ""
    working = None
    for _ in range(60):
        if not isinstance(task_id, str):
            break
        _, p = await b.call("self.tasks.get_status", {"task_id": task_id})
        status, said = result_of(p).get("structuredContent") or {}, backend_view(p)
        if status.get("status") != "working":
            break
        working = working or said
        await asyncio.sleep(0.3)
    check(f"{tag} while it moves, the model hears it is working: \"{working}\"",
          isinstance(working, str) and working.startswith("self.motor.move_to working")
          and working.endswith(" — scheduled, not done yet (commanded 600 steps)"), working)
    ev = status.get("evidence") or {}
    check(f"{tag} the move completes, measured 600 by the encoder",
          status.get("status") == "completed" and ev.get("level") == "measured" and ev.get("observed") == 600, status)
    check(f"{tag} ...and the model hears the outcome with its evidence: \"{said}\"",
          said == "self.motor.move_to completed: 600 — measured: 600 steps (commanded 600 steps, within ±2 steps)", said)

    _, p = await b.call("self.get_device_status", {})
    try:
        st = json.loads(backend_view(p))
    except ValueError:
        st = {}
    check(f"{tag} get_device_status: the text is the status JSON and matches structuredContent",
          st == result_of(p).get("structuredContent") and st.get("audio_speaker") == {"volume": 40}
          and st.get("screen") == {"brightness": 55, "theme": "dark"} and st.get("relay") == {"on": True}
          and st.get("motor") == {"position": 600, "moving": False}, p)

    # Non-ASCII arguments, \uXXXX-escaped on the wire.
    label = "\u6d4b\u8bd5\u6807\u7b7e\u00b7\u6e29\u5ea6"  # 测试标签·温度 (7 characters, 20 UTF-8 bytes)
    text, p = await b.call(FILLERS[0], {"level": 3, "label": label})
    check(f"{tag} a Chinese label, sent as \\uXXXX, is a valid string argument",
          "\\u6d4b\\u8bd5" in text and text.isascii() and result_of(p).get("isError") is False, (text, p))
    ok = []
    for i, name in enumerate(FILLERS):
        _, p = await b.call(name, {} if i % 2 else {"level": i % 11, "label": "\u586b\u5145" * (1 + i % 16)})
        ok.append(backend_view(p) == "This filler tool has no effect.")
    check(f"{tag} all {len(FILLERS)} filler tools answer", all(ok), ok)
    _, p = await b.call(FILLERS[1], {"label": "\u4e2d" * 32})
    check(f"{tag} 32 Chinese characters (96 bytes) meet maxLength 32: lengths count characters",
          result_of(p).get("isError") is False, p)
    _, p = await b.call(FILLERS[1], {"label": "\u4e2d" * 33})
    err = p.get("error") or {}
    check(f"{tag} 33 Chinese characters are refused: -32602 at 2024-11-05", err.get("code") == -32602
          and "label" in err.get("message", ""), p)

    # 5. Validation at 2024-11-05: JSON-RPC -32602 errors whose message the backend speaks.
    for arguments, words in (
        ({"volume": "50"}, ['"volume"', "integer"]),
        ({"volume": 50.5}, ['"volume"', "50.5"]),
        ({"volume": 40, "loud": True}, ['"loud"']),
        ({}, ['"volume"']),
    ):
        _, p = await b.call("self.audio_speaker.set_volume", arguments)
        err = p.get("error") or {}
        msg = err.get("message", "")
        check(f"{tag} {dumps(arguments)}: -32602 with a short message naming {', '.join(words)}",
              err.get("code") == -32602 and all(w in msg for w in words) and 0 < len(msg) <= 200, p)
    _, p = await b.call("self.screen.set_theme", {"theme": "\u6df1\u8272"})  # 深色, not in the enum
    err = p.get("error") or {}
    check(f"{tag} a Chinese enum miss is refused with -32602", err.get("code") == -32602, p)
    known(f"{tag} the refusal echoes the Chinese value as text (the backend speaks it), not as \\u escapes",
          "\u6df1\u8272" in err.get("message", ""), err.get("message"))
    _, p = await b.call("self.reboot", {})
    check(f"{tag} user-only self.reboot is refused to the model with a JSON-RPC error",
          (p.get("error") or {}).get("code") == -32602, p)
    _, p = await b.call("self.no_such_tool", {})
    check(f"{tag} an unknown tool is a JSON-RPC error with a message", isinstance((p.get("error") or {}).get("code"), int)
          and (p.get("error") or {}).get("message"), p)

    check(f"{tag} every answer after the hello carries our session_id", not b.bad_session, b.bad_session[:5])
    unexpected = [m for m in b.stray if not (isinstance(m, dict) and "method" in m and "id" not in m)]
    check(f"{tag} nothing unexpected arrived (only notifications set aside)", not unexpected, unexpected[:3])
    check(f"{tag} every message sent was ASCII json.dumps output",
          all(t.isascii() and t == dumps(json.loads(t)) for t in b.sent), [t for t in b.sent if not t.isascii()][:2])


async def fault_session(link, tag: str) -> None:
    """A handler failure (read-back disagrees) is an isError result; what does the backend say?"""
    b = Backend(link, tag)
    await b.recv_json()
    await b.send({"type": "hello", "version": 1, "transport": "websocket", "session_id": b.session_id})
    b.hello_sent = True
    await b.send_mcp({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2024-11-05", "capabilities": {"vision": VISION},
                                 "clientInfo": {"name": "XiaozhiClient", "version": "1.0.0"}}})
    await b.answer(1)
    b.next_id = 1
    _, p = await b.call("self.audio_speaker.set_volume", {"volume": 40})
    r = result_of(p)
    check(f"{tag} a read-back mismatch fails the call: isError with commanded 40, observed 47",
          r.get("isError") is True and r.get("evidence", {}).get("observed") == 47, p)
    said = backend_view(p)
    failure = "The codec reports a different volume than commanded — read back: 47 (commanded 40)"
    check(f"{tag} the backend tells the user why (result.error): the reason and the mismatch evidence",
          said == "工具调用错误: " + failure, said)
    content = r.get("content") or [{}]
    check(f"{tag} ...and the first text says the same", content[0].get("text") == failure, p)


def is_update(uri: str):
    return lambda p: p.get("method") == "notifications/resources/updated" and (p.get("params") or {}).get("uri") == uri


def is_outcome(p: dict) -> bool:
    return p.get("method") == "notifications/message" and (p.get("params") or {}).get("logger") == "confirmation"


async def ui_of(link) -> SimApi:
    """The `--ui` address device-sim logged on its stderr."""
    for _ in range(300):
        for line in link.stderr:
            if line.startswith("device-sim: UI at http://"):
                api = SimApi(line.removeprefix("device-sim: UI at http://").rstrip("/"))
                await asyncio.to_thread(api.wait_ready)
                return api
        await asyncio.sleep(0.02)
    raise RuntimeError(f"device-sim logged no UI address: {link.stderr[-5:]}")


#: With --confirm: the seconds a person has to press the button (device-sim --confirm-timeout).
CONFIRM_TIMEOUT_S = 2

#: The main session's --hold-answer: a move shorter than it is answered with its outcome, a longer
#: one with what was started (device-sim's default is 25 s, under the backend's 30 s).
HOLD_ANSWER_S = 1


async def speaks_first_session(link, tag: str) -> None:
    """The device speaks first: updates in the envelope without subscribing; a confirmed call held
    for the device's button, completed by a press, or dropped when no press comes in time."""
    b = Backend(link, tag)
    api = await ui_of(link)
    call = lambda fn, *a, **k: asyncio.to_thread(lambda: fn(*a, **k))  # noqa: E731  (blocking API, off the loop)
    await b.recv_json()  # the device hello
    await b.send({"type": "hello", "version": 1, "transport": "websocket", "session_id": b.session_id})
    b.hello_sent = True
    await b.send_mcp({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                      "params": {"protocolVersion": "2024-11-05", "capabilities": {"vision": VISION},
                                 "clientInfo": {"name": "XiaozhiClient", "version": "1.0.0"}}})
    init = await b.answer(1)
    check(f"{tag} initialize 2024-11-05: the device offers resources with subscribe",
          (result_of(init).get("capabilities") or {}).get("resources") == {"subscribe": True}, init)

    # 1. Updates in the envelope, though the backend never subscribes.
    moved = await call(api.sensor, temperature=31.5, battery=20)
    check(f"{tag} POST /sim/sensor: 31.5 °C, 20 %", moved["sensors"] == {"temperature": 31.5, "battery": 20}, moved)
    temp = await b.note(is_update(TEMPERATURE))
    check(f"{tag} without subscribing, the temperature's update arrives in the envelope with our session_id",
          temp == {"session_id": b.session_id, "type": "mcp", "payload": {
              "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": TEMPERATURE}}},
          temp or b.notes[-3:])
    b.seen_notes = 0
    battery = await b.note(is_update(BATTERY))
    check(f"{tag} ...and the battery's", battery is not None and battery.get("session_id") == b.session_id,
          b.notes[-3:])
    b.next_id = 2
    await b.send_mcp({"jsonrpc": "2.0", "id": 2, "method": "resources/read", "params": {"uri": TEMPERATURE}})
    read = result_of(await b.answer(2))
    try:
        value = json.loads(read["contents"][0]["text"])
    except (KeyError, IndexError, TypeError, ValueError):
        value = None
    check(f"{tag} the backend reads it: {{\"celsius\": 31.5}}", value == {"celsius": 31.5}, read)
    b.seen_notes = len(b.notes)
    pressed = await call(api.press)
    check(f"{tag} a press with nothing waiting confirms nothing", pressed == {"pressed": True, "answers": None}, pressed)
    press = await b.note(is_update(BUTTON))
    check(f"{tag} ...and is heard: device://buttons/main updated in the envelope", press is not None, b.notes[-3:])

    # 2. A confirmed call is held inside the call (xinnan's backend hands the model only the call's
    #    answer and waits 30 s for it): the device shows the question; the press runs the call, and
    #    the call's own answer is the outcome, with the relay's measured evidence.
    b.next_id = 3
    answer = asyncio.create_task(b.call("self.relay.set", {"on": True}))
    ok, s = await call(api.state_until, lambda s: (s.get("confirmation") or {}).get("tool") == "self.relay.set")
    check(f"{tag} the device shows the waiting call (on the device), the relay still off, no answer yet",
          ok and s["confirmation"]["on_device"] is True and s["confirmation"]["shown"] is True
          and s["relay"]["on"] is False and not answer.done(), s.get("confirmation"))
    pressed = await call(api.press)
    check(f"{tag} POST /sim/button answers the waiting call", (pressed.get("answers") or {}).get("tool")
          == "self.relay.set", pressed)
    _, p = await asyncio.wait_for(answer, 5)
    r = result_of(p)
    said = backend_view(p)
    check(f"{tag} the call's own answer is the outcome: true, measured true == true",
          r.get("isError") is False
          and r.get("evidence") == {"level": "measured", "commanded": True, "observed": True}, p)
    check(f"{tag} ...and the model hears it: \"{said}\"", said == "true — measured: true (commanded true)", said)
    ok, s = await call(api.state_until, lambda s: s["relay"]["on"] is True and s["confirmation"] is None)
    check(f"{tag} the relay is on", ok, s["relay"])
    _, p = await b.call("self.relay.set", {"on": False})
    check(f"{tag} switching off needs no press: true, measured",
          backend_view(p) == "true — measured: false (commanded false)"
          and (result_of(p).get("evidence") or {}).get("observed") is False, p)

    # 3. No press within the timeout: nothing runs, and the call's answer says so.
    started = asyncio.get_running_loop().time()
    first = b.next_id
    b.next_id += 1
    await b.send_mcp({"jsonrpc": "2.0", "id": first, "method": "tools/call",
                      "params": {"name": "self.relay.set", "arguments": {"on": True}}})
    _, p = await b.call("self.reboot", {})
    check(f"{tag} a second confirmed call meanwhile is refused, and the backend can say why (result.error)",
          result_of(p).get("isError") is True and "Another action is waiting" in backend_view(p), p)
    p = await asyncio.wait_for(b.answer(first), CONFIRM_TIMEOUT_S + 4)
    waited = asyncio.get_running_loop().time() - started
    said = backend_view(p)
    check(f"{tag} no press: after {waited:.1f} s the call's answer says not confirmed, no answer in time, nothing done",
          waited >= CONFIRM_TIMEOUT_S - 0.2 and result_of(p).get("isError") is True
          and "no answer in time" in said and "nothing was done" in said, p)
    s = await call(api.state)
    check(f"{tag} the relay stayed off, nothing waits", s["relay"]["on"] is False and s["confirmation"] is None,
          (s["relay"], s["confirmation"]))
    pressed = await call(api.press)
    await asyncio.sleep(0.3)
    s = await call(api.state)
    check(f"{tag} a late press confirms nothing; the relay stays off",
          pressed.get("answers") is None and s["relay"]["on"] is False, (pressed, s["relay"]))
    check(f"{tag} the backend never sent resources/subscribe", not any("resources/subscribe" in t for t in b.sent))
    unexpected = [m for m in b.stray if not (isinstance(m, dict) and "method" in m and "id" not in m)]
    check(f"{tag} nothing unexpected arrived", not unexpected, unexpected[:3])


#: What a xiaozhi device sends in its WebSocket handshake; xinnan's backend identifies (and, with
#: auth on, admits) devices by these, and turns away a connection without a device id.
WS_HEADERS = {
    "Authorization": "Bearer test-token",
    "Protocol-Version": "1",
    "Device-Id": "d0:ef:76:00:00:01",
    "Client-Id": "5f0e7c1a-interop",
}


async def run(transport: str) -> None:
    link_type = StdioLink if transport == "stdio" else WsLink
    tag = f"[xiaozhi, {link_type.name}]"
    extra: list[str] = []
    if transport == "ws":
        for name, value in WS_HEADERS.items():
            extra += ["--ws-header", f"{name}: {value}"]
    async with link_type(*PAGING, "--hold-answer", str(HOLD_ANSWER_S), *extra) as link:
        try:
            await session(link, tag)
        except Exception as e:
            check(f"{tag} the session ran to the end", False, repr(e))
    check(f"{tag} device-sim exits 0 when the backend ends the connection", link.exit_code == 0,
          (link.exit_code, link.stderr[-3:]))
    check(f"{tag} the device logged the vision endpoint it was given",
          any(VISION["url"] in line for line in link.stderr), link.stderr[-5:])
    if transport == "ws":
        check(f"{tag} the device connected to the URL's path", link.request_path == WsLink.path, link.request_path)
        sent = {k.lower(): v for k, v in WS_HEADERS.items()}
        check(f"{tag} the handshake carried the device's headers (--ws-header)",
              all(link.request_headers.get(k) == v for k, v in sent.items()), link.request_headers)
    async with link_type("--fault", "readback-mismatch") as link:
        try:
            await fault_session(link, tag + "[fault readback-mismatch]")
        except Exception as e:
            check(f"{tag} the fault session ran to the end", False, repr(e))
    confirm = ["--confirm", "--confirm-timeout", str(CONFIRM_TIMEOUT_S), "--ui", "127.0.0.1:0"]
    async with link_type(*confirm) as link:
        try:
            await speaks_first_session(link, tag + "[--confirm]")
        except Exception as e:
            check(f"{tag} the speaks-first session ran to the end", False, repr(e))


# ---- The link as xinnan's backend treats it (issue 23) ----
#
# xinnan's server, on the link: a connection without a `Device-Id` header (nor `?device-id=`) gets
# one line of text and is closed; every message waits at most 1 s for the device's configuration
# to load (`_route_message`: `wait_for(bind_completed_event.wait(), timeout=1)`) and is dropped when
# it is not loaded by then — a device's hello, sent at once, included. Nothing re-sends it: a
# device that waits for the server's hello forever has no session until the idle close (~180 s).

#: What xinnan's backend sends a connection without a device id, before closing it.
NO_DEVICE_ID = "\u7aef\u53e3\u6b63\u5e38\uff0c\u5982\u9700\u6d4b\u8bd5\u8fde\u63a5\uff0c\u8bf7\u4f7f\u7528test_page.html"
#: How long xinnan's backend lets a message wait for the device's configuration.
CONFIG_WAIT_S = 1.0
#: Short hello timeout and backoff steps for CI (the 10 s default and 1 s..30 s steps are
#: exercised by examples/device-sim/tests/links.rs and the unit tests of the rule).
HELLO_TIMEOUT_S = 3
BACKOFF = ("0.2", "1.6")


class XinnanLinkServer:
    """A WebSocket server on 127.0.0.1 that treats the link as xinnan's backend does: no
    `Device-Id`, a text line and close; the first connection's configuration loads slowly (longer
    than CONFIG_WAIT_S), so what comes in its first second is dropped; later connections load at
    once, answer the hello with a server hello and initialize. Each connection is recorded."""

    def __init__(self, *args: str) -> None:
        self.args = list(args)
        self.stderr: list[str] = []
        self.conns: list[dict] = []
        self.session_ready: asyncio.Future | None = None

    async def __aenter__(self) -> XinnanLinkServer:
        from websockets.asyncio.server import serve

        loop = asyncio.get_running_loop()
        self.session_ready = loop.create_future()
        self.done = asyncio.Event()
        self.server = await serve(self._handler, "127.0.0.1", 0, max_size=1 << 20)
        port = self.server.sockets[0].getsockname()[1]
        self.url = f"ws://127.0.0.1:{port}{WsLink.path}"
        self.proc = await asyncio.create_subprocess_exec(
            DEVICE_SIM, "--xiaozhi-ws", self.url, *self.args,
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL, stderr=asyncio.subprocess.PIPE,
        )
        self._err = asyncio.create_task(self._drain_stderr())
        return self

    async def _drain_stderr(self) -> None:
        assert self.proc.stderr
        async for line in self.proc.stderr:
            self.stderr.append(line.decode(errors="replace").rstrip())

    async def _handler(self, ws) -> None:
        loop = asyncio.get_running_loop()
        conn = {"at": loop.time(), "headers": {k.lower(): v for k, v in ws.request.headers.raw_items()},
                "dropped": [], "handled": [], "closed_at": None, "close": None}
        self.conns.append(conn)
        try:
            if "device-id" not in conn["headers"]:
                await ws.send(NO_DEVICE_ID)
                await ws.close()
                return
            slow_config = len([c for c in self.conns if "device-id" in c["headers"]]) == 1
            loaded_at = conn["at"] + (CONFIG_WAIT_S + 0.5 if slow_config else 0.0)
            async for msg in ws:
                now = loop.time()
                # The message waits up to CONFIG_WAIT_S for the configuration, then is dropped.
                if loaded_at > now:
                    if loaded_at - now > CONFIG_WAIT_S:
                        conn["dropped"].append((now - conn["at"], msg))
                        continue
                    await asyncio.sleep(loaded_at - now)
                conn["handled"].append(msg)
                env = json.loads(msg) if isinstance(msg, str) else {}
                if env.get("type") == "hello":
                    sid = str(uuid.uuid4())
                    await ws.send(dumps({"type": "hello", "version": 1, "transport": "websocket",
                                         "session_id": sid}))
                    b = Backend(_Conn(ws), "[link]")
                    b.session_id, b.hello_sent = sid, True
                    await b.send_mcp({"jsonrpc": "2.0", "id": 1, "method": "initialize",
                                      "params": {"protocolVersion": "2024-11-05", "capabilities": {"vision": VISION},
                                                 "clientInfo": {"name": "XiaozhiClient", "version": "1.0.0"}}})
                    init = await b.answer(1)
                    await b.send_mcp({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})
                    listing = await b.answer(2)
                    if self.session_ready and not self.session_ready.done():
                        self.session_ready.set_result((loop.time(), init, listing, b.bad_session))
                    await self.done.wait()
                    return
        except Exception as e:  # a closed connection ends the handler
            conn["error"] = repr(e)
        finally:
            conn["closed_at"] = loop.time()
            conn["close"] = (ws.close_code, ws.close_reason)

    async def __aexit__(self, *exc: object) -> None:
        self.done.set()
        if self.proc.returncode is None:
            self.proc.terminate()
        try:
            self.exit_code = await asyncio.wait_for(self.proc.wait(), 5)
        except asyncio.TimeoutError:
            self.proc.kill()
            self.exit_code = await self.proc.wait()
        self.server.close()
        await asyncio.wait_for(self._err, 5)


class _Conn:
    """One server-side connection as the `Backend` helper's link."""

    def __init__(self, ws) -> None:
        self.ws = ws

    async def send(self, text: str) -> None:
        await self.ws.send(text)

    async def recv(self) -> str:
        return await asyncio.wait_for(self.ws.recv(), TIMEOUT)


def logged_waits(stderr: list[str]) -> list[int]:
    """The reconnection waits device-sim logged ("reconnecting in N ms"), in order."""
    waits = []
    for line in stderr:
        if "reconnecting in " in line:
            try:
                waits.append(int(line.rsplit("reconnecting in ", 1)[1].split()[0]))
            except (IndexError, ValueError):
                pass
    return waits


async def dropped_hello_session(tag: str) -> None:
    """The device's first hello is dropped (it came while the backend still loaded the device's
    configuration): the device gives up on the connection after its hello timeout, reconnects,
    and gets a session within 15 s."""
    headers = [a for name, value in WS_HEADERS.items() for a in ("--ws-header", f"{name}: {value}")]
    async with XinnanLinkServer(*headers, "--ws-hello-timeout", str(HELLO_TIMEOUT_S)) as link:
        try:
            done_at, init, listing, bad_session = await asyncio.wait_for(link.session_ready, 15)
        except asyncio.TimeoutError:
            done_at, init, listing, bad_session = None, {}, {}, []
        first = link.conns[0] if link.conns else {}
        t0 = first.get("at", 0.0)
        dropped = first.get("dropped", [])
        check(f"{tag} the first connection's hello came within {CONFIG_WAIT_S:.0f} s of the accept and was dropped",
              len(dropped) == 1 and dropped[0][0] < CONFIG_WAIT_S and '"hello"' in dropped[0][1]
              and not first.get("handled"), first)
        closed_after = first["closed_at"] - t0 if first.get("closed_at") else None
        check(f"{tag} the device closed that connection itself after its {HELLO_TIMEOUT_S} s hello timeout "
              f"(after {'never' if closed_after is None else f'{closed_after:.1f} s'}, 1000 \"no hello\")",
              first.get("close") == (1000, "no hello") and closed_after is not None
              and HELLO_TIMEOUT_S - 0.2 <= closed_after < HELLO_TIMEOUT_S + 2, first)
        took = None if done_at is None else done_at - t0
        check(f"{tag} it reconnected, said hello again and got a session within 15 s "
              f"({'none' if took is None else f'{took:.1f} s'})",
              took is not None and took < 15 and len(link.conns) == 2, [(c["at"] - t0, c["close"]) for c in link.conns])
        check(f"{tag} ...then initialize and tools/list were answered in that session",
              result_of(init).get("protocolVersion") == "2024-11-05"
              and len(result_of(listing).get("tools", [])) > 0 and not bad_session, (init, listing))


async def missing_device_id_session(tag: str) -> None:
    """A device that sends no Device-Id is turned away after the upgrade, every time: its
    reconnections must back off (the waits grow to the cap), not come every second forever."""
    first, cap = BACKOFF
    async with XinnanLinkServer("--ws-backoff-first", first, "--ws-backoff-max", cap) as link:
        loop = asyncio.get_running_loop()
        deadline = loop.time() + 15
        while len(link.conns) < 7 and loop.time() < deadline:
            await asyncio.sleep(0.05)
        at = [c["at"] for c in link.conns]
        gaps = [round(b - a, 2) for a, b in zip(at, at[1:])]
        check(f"{tag} every connection without a Device-Id got the text line and was closed",
              len(at) >= 7 and all("device-id" not in c["headers"] and c["close"] is not None for c in link.conns),
              [(c["headers"].get("device-id"), c["close"]) for c in link.conns])
        lo, hi = float(cap) / 2, float(cap)
        check(f"{tag} accept-then-close backs off: gaps {gaps} s grow to the {cap} s cap (each >= {lo} s from the 4th)",
              len(gaps) >= 6 and gaps[0] < float(first) + 0.3 and all(g >= lo - 0.05 for g in gaps[3:6])
              and all(g <= hi + 0.5 for g in gaps), gaps)
        waits = logged_waits(link.stderr)
        check(f"{tag} the waits device-sim logged grew and stayed at the cap: {waits} ms",
              len(waits) >= 6 and waits[0] <= float(first) * 1000
              and all(lo * 1000 <= w <= hi * 1000 for w in waits[3:6]), link.stderr[-5:])


async def link_sessions() -> None:
    tag = "[xiaozhi, websocket, xinnan's link]"
    for run_one in (dropped_hello_session, missing_device_id_session):
        try:
            await run_one(tag)
        except Exception as e:
            check(f"{tag} {run_one.__name__} ran to the end", False, repr(e))


def has_ws_option() -> bool:
    import subprocess

    out = subprocess.run([DEVICE_SIM, "--help"], capture_output=True, text=True, timeout=30).stdout
    return "--xiaozhi-ws" in out


async def main(transports: list[str]) -> None:
    for t in transports:
        if t == "ws" and not has_ws_option():
            check("[xiaozhi, websocket] device-sim has a --xiaozhi-ws option", False, "not in device-sim --help")
            continue
        await run(t)
        if t == "ws":
            await link_sessions()


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transport", choices=["stdio", "ws", "both"], default="both")
    a = ap.parse_args()
    try:
        asyncio.run(main(["stdio", "ws"] if a.transport == "both" else [a.transport]))
    except BaseException as e:
        import traceback

        traceback.print_exc()
        check("the client ran to the end", False, repr(e))
    finish("xiaozhi-style client")
