#!/usr/bin/env python3
"""A backend that drives device-sim the way xinnan-tech's xiaozhi-esp32-server (the most used
xiaozhi backend, Python) drives a device, and records what its user hears and what its model's
dialogue holds.

Every behaviour below was read in that server's source (github.com/xinnan-tech/xiaozhi-esp32-server,
`main/xiaozhi-server/`, at commit 7475ea2b, 2026-08-06); the file and function are named so each
can be checked there. Nothing of its code is copied: this is a model of it, written here.

The connection (`core/connection.py`):
- `ConnectionHandler.handle_connection` starts loading the device's configuration in the background
  and handles the device's messages one at a time (`async for message … await _route_message`).
- `_route_message`: while the configuration is not loaded, each message waits for it at most 1 s
  (`wait_for(bind_completed_event.wait(), timeout=1)`); past that it is dropped, and
  `_discard_message_with_bind_prompt` plays the bind prompt, at most once per 60 s
  (`bind_prompt_interval`). Here the main session's configuration takes `CONFIG_LOAD_S` (as a
  manager-api fetch does, so the device's hello waits and the backend's hello comes ~1 s after
  it); the link session's first connection takes longer than 1 s, so its hello is dropped.
- The bind prompt (`core/handle/receiveAudioHandle.py`, `check_bind_device`) starts with
  `send_stt_message`: an `stt` frame with the prompt (punctuation trimmed at both ends,
  `core/utils/textUtils.py` `get_string_no_punctuation_or_emoji`) and a `tts` `start` frame
  (`core/handle/sendAudioHandle.py`). The rest (audio) needs the TTS, which is not set up before
  the configuration loads: on a dropped hello only those two frames reach the device.
- Text frames (`core/handle/textMessageProcessor.py`, `TextMessageProcessor.process_message`):
  JSON objects go to the handler of their `type`; an unknown type is only logged; a frame that is
  not JSON, or a bare number, is sent back as it came.
- `hello` (`core/handle/helloHandle.py`, `handleHelloMessage`): with `features.mcp` it creates the
  MCP client and schedules `send_mcp_initialize_message` as a task, then awaits sending its own
  hello (`config.yaml` `xiaozhi:` with the device's `audio_params` and the `session_id`): the
  backend's hello goes out first, `initialize` right after it.
- `ping` is answered with `pong` (`pingMessageHandler.py`); `abort` sends `tts` `stop`
  (`core/handle/abortHandle.py`).

MCP (`core/providers/tools/device_mcp/`):
- Every `mcp` frame is handled in a task of its own (`mcpMessageHandler.py`,
  `McpTextMessageHandler.handle` → `mcp_handler.py` `handle_mcp_message`).
- `send_mcp_initialize_message`: `initialize` id 1, protocolVersion 2024-11-05, capabilities
  `roots`, `sampling`, `vision {url, token}`, clientInfo XiaozhiClient 1.0.0. No
  `notifications/initialized` is ever sent.
- `handle_mcp_message`, a result: its id (`int(id)`) is looked up among the calls waiting
  (`MCPClient.call_results`) first; else id 1 is taken as the initialize result (then, after
  `asyncio.sleep(1)`, `send_mcp_tools_list_request`: `tools/list` id 2, no params) — so a late
  call answer with id 1 makes it list the tools again; else id 2 as a tools/list page (tools added
  under `sanitize_tool_name` names, `core/utils/util.py`; `nextCursor` → the same id 2 with
  `{"cursor": …}`, `send_mcp_tools_list_continue_request`; no cursor → ready); any other id is
  ignored. A message with a `method` (every notification) is only logged. An error whose id
  waits fails that call with `MCP错误: <message>`.
- `MCPClient`: call ids count from 1, separately from the fixed ids 1 and 2 above.
- `call_mcp_tool` (timeout 30 s): not ready or an unknown tool never reaches the device; the
  answer's `isError: true` becomes `RuntimeError("工具调用错误: " + result["error"])` (a member
  MCP does not define; without it, a fixed "no details" text); otherwise `content[0].text` (only
  that) is the result; on its timeout the id is forgotten (`cleanup_call_result`), so a later
  answer with it is taken for something else (above).
- `mcp_executor.py`, `DeviceMCPExecutor.execute`: a text that parses as a JSON object with an
  `action` member is acted on directly; any other text goes to the model (`Action.REQLLM`); an
  exception becomes `Action.ERROR` with its text (`ValueError`: `Action.NOTFOUND`).
- `core/connection.py`, `ConnectionHandler.chat`: the model's tool calls wait at most
  `tool_call_timeout` (`config.yaml`: 30 s); past it the call's result is `Action.ERROR` with
  "哎呀，网络遇到点问题，请稍后再试下！" (this 30 s starts a little before `call_mcp_tool`'s, so it
  is what the user hears). `_handle_function_result`: `ERROR`, `NOTFOUND` and `RESPONSE` texts are
  spoken (TTS) and put in the dialogue as the assistant's words — the model never gets them as a
  tool result; `REQLLM` texts go to the model as the tool's result, and the model continues.

What the device sends itself (`core/handle/textHandler/listenMessageHandler.py`,
`ListenTextMessageHandler.handle`): `{"type":"listen","state":"detect","text":T}` is the only
device frame that is spoken or starts a turn. `T` starting with `[device_call]`: the rest,
stripped, is sent as `stt`, spoken (TTS) and added to the dialogue as the assistant's words.
Any other `T` (unless a wake word, `config.yaml` `wakeup_words`) is the user's words:
`receiveAudioHandle.py` `startToChat` stops what is being spoken (`abort`) unless the listen mode
is manual, sends `stt`, `tts` `start`, and runs a model turn (`chat`) that may call tools.

Speech (`sendAudioHandle.py`): `send_stt_message` sends `stt` then `tts` `start` (from then on the
device is speaking); each sentence is `tts` `sentence_start` with its text, then audio (binary
frames; one short frame here, on the WebSocket only), and the turn ends with `tts` `stop`.

Recorded, so checks assert on them: `heard` (what the user hears, in order), `dialogue` (the
model's messages: `user`, `assistant`, `assistant` tool calls and `tool` results), `logged`
(what it only logs: every notification), `detects` (the device's detect texts). The model is a
stand-in: it calls the tools a check tells it to, says what a check scripts, and nothing after a
tool result unless scripted.

Beyond the backend, clearly marked as probes: a few requests it never sends (a listing with
`withUserTools`, tools it does not list, `resources/read`), sent with ids from 1000, to check the
device; and, once, `initialize` before the backend's hello (the rare order when sending that hello
has to wait for the socket).

Timings are the real ones: device-sim's defaults (`--hold-answer` 25 s, `--confirm-timeout` 30 s)
and the backend's 30 s. Sessions that need an answer to come before the outcome use short values
on purpose (`--hold-answer 0/1/2`, said in their tags). `XIAOZHI_SLOW=1` (or `--slow`) adds the
sessions that cross the 25/30 s boundary with the real values (about 1.5 min more; run by hand,
not in CI).

What is checked of what happens after the answer (each was a `KNOWN` finding until the device
had it; now a plain check): (1) an outcome after the call's answer — a press on a call answered "waiting",
a task that ends after the budget, a timeout after the answer — reaches the user and the dialogue
as a `[device_call]` text; (2) with `--speak-first`, a doorbell press with nothing waiting starts
a model turn that can call a tool, 50 presses in 2 s are rate-limited, no detect text carries a
string that came from the wire; (3) the pending text's deadline leaves the person time after it
is heard, `--hold-answer` above 30 s is refused at start, no late answer with a reused id; (4)
every failure the user hears names what was commanded and the evidence; (5) `/sim/state` shows the
question when the waiting answer arrives.

Transports: the stdio envelope (`device-sim --envelope xiaozhi`) and the WebSocket (this client
serves ws://127.0.0.1 and starts `device-sim --xiaozhi-ws URL`). `--transport stdio|ws|both`.
"""

from __future__ import annotations

import argparse
import asyncio
import base64
import hashlib
import json
import os
import tempfile
import re
import subprocess
import threading
import time
import uuid
from typing import Any, Awaitable, Callable

from harness import (
    BATTERY,
    BOARD_TOOLS,
    BUTTON,
    DEVICE_SIM,
    EXPECTED_LISTING,
    FILLERS,
    PAGE_BYTES,
    PAGING,
    RELAY_QUESTION,
    asks_relay,
    TEMPERATURE,
    SimApi,
    check,
    finish,
)

STRICT = os.environ.get("INTEROP_STRICT") == "1"
SLOW = os.environ.get("XIAOZHI_SLOW") == "1"

#: How long a step of a check waits for the device (a session start, a state change).
TIMEOUT = 10.0
#: The backend's tool-call timeout (`call_mcp_tool(timeout=30)`, `tool_call_timeout: 30`).
CALL_TIMEOUT_S = 30.0
#: How long a message waits for the device's configuration before it is dropped (`_route_message`).
CONFIG_WAIT_S = 1.0
#: How long the main session's configuration takes to load (a manager-api fetch): under the 1 s,
#: so the device's hello waits for it and is handled, not dropped.
CONFIG_LOAD_S = 0.8
#: The wait between the initialize result and tools/list (`handle_mcp_message`, `asyncio.sleep(1)`).
LIST_AFTER_INIT_S = 1.0
#: The bind prompt plays at most once in this many seconds (`bind_prompt_interval`).
BIND_PROMPT_INTERVAL_S = 60.0
#: device-sim's own defaults (`--hold-answer`, `--confirm-timeout`).
HOLD_DEFAULT_S = 25
CONFIRM_DEFAULT_S = 30
#: The time a person needs after hearing "press the button within N s": a margin a person can
#: act in.
PERSON_MARGIN_S = 10

VISION = {"url": "http://127.0.0.1:8003/mcp/vision/explain", "token": "eyJ0eXAi.\u4ee4\u724c.sig"}
#: The backend's own hello (`config.yaml` `xiaozhi:`); `audio_params` become the device's.
WELCOME = {"type": "hello", "version": 1, "transport": "websocket",
           "audio_params": {"format": "opus", "sample_rate": 24000, "channels": 1, "frame_duration": 60}}
DEVICE_CALL = "[device_call]"
#: 哎呀，网络遇到点问题，请稍后再试下！ ("oops, the network has a problem, try again later")
NETWORK_PROBLEM = "\u54ce\u5440\uff0c\u7f51\u7edc\u9047\u5230\u70b9\u95ee\u9898\uff0c\u8bf7\u7a0d\u540e\u518d\u8bd5\u4e0b\uff01"
TOOL_ERROR = "\u5de5\u5177\u8c03\u7528\u9519\u8bef: "  # 工具调用错误:
#: 工具调用返回错误，但未提供具体错误信息 ("the call returned an error without details")
TOOL_ERROR_NO_DETAIL = "\u5de5\u5177\u8c03\u7528\u8fd4\u56de\u9519\u8bef\uff0c\u4f46\u672a\u63d0\u4f9b\u5177\u4f53\u9519\u8bef\u4fe1\u606f"
MCP_ERROR = "MCP\u9519\u8bef: "  # MCP错误:
#: 设备端MCP客户端未准备就绪 ("the device's MCP client is not ready")
NOT_READY = "\u8bbe\u5907\u7aefMCP\u5ba2\u6237\u7aef\u672a\u51c6\u5907\u5c31\u7eea"
#: `check_bind_device` without a bind code (a device the manager does not know).
BIND_PROMPT = ("\u6ca1\u6709\u627e\u5230\u8be5\u8bbe\u5907\u7684\u7248\u672c\u4fe1\u606f\uff0c\u8bf7\u6b63\u786e"
               "\u914d\u7f6e OTA\u5730\u5740\uff0c\u7136\u540e\u91cd\u65b0\u7f16\u8bd1\u56fa\u4ef6\u3002")
WAKEUP_WORDS = ["\u4f60\u597d\u5c0f\u667a", "\u563f\u4f60\u597d\u5440", "\u5c0f\u7231\u540c\u5b66"]
#: What xinnan's backend sends a connection without a device id, before closing it
#: (`core/websocket_server.py`, `_handle_connection`).
NO_DEVICE_ID = "\u7aef\u53e3\u6b63\u5e38\uff0c\u5982\u9700\u6d4b\u8bd5\u8fde\u63a5\uff0c\u8bf7\u542f\u52a8digital-human\u6d4b\u8bd5"
#: Put into strings the backend sends (the model's words, a free-text argument): none may come
#: back in a detect text.
UNTRUSTED = "zq7-untrusted"
#: The words a failure's sentence uses for its evidence (mcp-core's first-text rule; "not applied"
#: is the word for a change that was refused or failed before it took effect).
EVIDENCE_WORDS = ("not applied", "applied, not verified", "read back", "measured", "scheduled")


def known(name: str, ok: bool, detail: object = "") -> None:
    """A check that records a reported interoperability finding."""
    if ok or STRICT:
        check(name, ok, detail)
    else:
        print(f"KNOWN - {name}: {detail}", flush=True)


def dumps(obj: Any) -> str:
    """Exactly how xinnan's backend serializes: json.dumps with its defaults."""
    return json.dumps(obj)


def sanitize_tool_name(name: str) -> str:
    """`core/utils/util.py` `sanitize_tool_name`: anything but letters, digits, _ - and CJK → _."""
    return re.sub(r"[^a-zA-Z0-9_\-\u4e00-\u9fff]", "_", name)


#: `is_punctuation_or_emoji`'s set: ，,。.！!“”"：:-－、[]【】 (and white space; emoji left aside).
_TRIM = set("\uff0c,\u3002.\uff01!\u201c\u201d\"\uff1a:-\uff0d\u3001[]\u3010\u3011")


def trim_punctuation(text: str) -> str:
    """`get_string_no_punctuation_or_emoji` (`core/utils/textUtils.py`), for the stt frame: that
    punctuation and white space off both ends."""
    start, end = 0, len(text)
    while start < end and (text[start] in _TRIM or text[start].isspace()):
        start += 1
    while end > start and (text[end - 1] in _TRIM or text[end - 1].isspace()):
        end -= 1
    return text[start:end]


def short(arguments: dict) -> str:
    """Arguments as a check's name shows them (readable, at most 40 characters)."""
    text = json.dumps(arguments, ensure_ascii=False)
    return text if len(text) <= 40 else text[:37] + "..."


def result_of(payload: dict | None) -> dict:
    r = (payload or {}).get("result")
    return r if isinstance(r, dict) else {}


def evidence_of(payload: dict | None) -> dict:
    """A tool result's evidence as data: its `_meta`, under the device's own key."""
    meta = result_of(payload).get("_meta")
    ev = meta.get("io.github.mcu-mcp/evidence") if isinstance(meta, dict) else None
    return ev if isinstance(ev, dict) else {}


def first_text(payload: dict | None) -> str:
    content = result_of(payload).get("content") or [{}]
    return content[0].get("text", "") if isinstance(content[0], dict) else ""


def speakable_failure(said: str, commanded: str) -> bool:
    """The failure the user hears names what was commanded and the evidence."""
    return f"commanded {commanded}" in said and any(w in said for w in EVIDENCE_WORDS)


class StdioLink:
    """device-sim --envelope xiaozhi: one JSON message per line on stdin/stdout."""

    name = "stdio envelope"

    def __init__(self, *args: str) -> None:
        self.args = ["--envelope", "xiaozhi", *args]
        self.stderr: list[str] = []
        self.accepted_at = 0.0

    async def __aenter__(self) -> StdioLink:
        self.proc = await asyncio.create_subprocess_exec(
            DEVICE_SIM, *self.args,
            stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            limit=1 << 20,
        )
        self.accepted_at = asyncio.get_running_loop().time()
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

    async def send_audio(self, data: bytes) -> None:
        """A line carries no binary frame: audio is left out on this link."""

    async def recv(self) -> str:
        assert self.proc.stdout
        line = await self.proc.stdout.readline()
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
        self.accepted_at = 0.0

    async def __aenter__(self) -> WsLink:
        from websockets.asyncio.server import serve

        loop = asyncio.get_running_loop()
        self.connected: asyncio.Future = loop.create_future()
        self.done = asyncio.Event()

        async def handler(ws) -> None:
            if self.connected.done():
                await ws.close(1008, "one device at a time")
                return
            self.accepted_at = loop.time()
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
        try:
            self.ws = await asyncio.wait_for(self.connected, TIMEOUT)
        except asyncio.TimeoutError:
            await self.__aexit__()
            raise RuntimeError(f"device-sim did not connect: {self.stderr[-3:]}") from None
        return self

    async def _drain_stderr(self) -> None:
        assert self.proc.stderr
        async for line in self.proc.stderr:
            self.stderr.append(line.decode(errors="replace").rstrip())

    async def send(self, text: str) -> None:
        await self.ws.send(text)  # a str goes out as a text frame, as xinnan's does

    async def send_audio(self, data: bytes) -> None:
        await self.ws.send(data)

    async def recv(self) -> str | bytes:
        from websockets.exceptions import ConnectionClosed

        try:
            return await self.ws.recv()
        except ConnectionClosed as e:
            raise EOFError(f"the device closed the WebSocket: {e}") from None

    async def __aexit__(self, *exc: object) -> None:
        self.done.set()
        ws = getattr(self, "ws", None)
        if ws is not None:
            try:
                await ws.close()
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


class McpError(Exception):
    """A JSON-RPC error answering a call (`reject_call_result`, `Exception("MCP错误: …")`)."""


class Outcome:
    """What one tool call of the model came to in xinnan's backend."""

    def __init__(self, payload: dict | None, action: str, text: str, sent: bool, took: float) -> None:
        #: The device's answer as it came on the wire (None: never sent, or none within 30 s).
        self.payload = payload
        #: `REQLLM` (the model got `text` as the tool's result), `ERROR` / `NOTFOUND` /
        #: `RESPONSE` (the user heard `text`, the dialogue holds it as the assistant's words).
        self.action = action
        self.text = text
        self.sent = sent
        self.took = took

    @property
    def to_model(self) -> bool:
        return self.action == "REQLLM"

    def __repr__(self) -> str:
        return f"Outcome({self.action}, {self.text!r}, took {self.took:.2f} s, payload={self.payload!r})"


class Backend:
    """One connection as xinnan's server handles it (see the module docstring for the sources).

    `start()` runs its reader: the device's frames, one at a time, through the configuration wait,
    to the handlers. The checks drive the model (`model_call`, `plans`) and read `heard`,
    `dialogue`, `logged`, `detects`."""

    def __init__(self, link, tag: str, *, config_load_s: float = 0.0, init_before_hello: bool = False,
                 speech_s_per_char: float | None = None) -> None:
        self.link = link
        #: How long a sentence takes to speak, per character (`None`: a short fixed time, so that
        #: sessions that do not look at speech run fast).
        self.speech_s_per_char = speech_s_per_char
        self.tag = tag
        self.loop = asyncio.get_running_loop()
        self.t0 = getattr(link, "accepted_at", 0.0) or self.loop.time()
        self.loaded_at = self.t0 + config_load_s
        self.init_before_hello = init_before_hello
        self.session_id = str(uuid.uuid4())
        self.last_bind_prompt = -BIND_PROMPT_INTERVAL_S
        # What went out and came in.
        self.sent: list[str] = []
        self.sent_at: list[float] = []
        self.probe_ids: set[int] = set()
        self.received: list[tuple[float, Any]] = []
        self.device_hello: dict | None = None
        self.hello_at: float | None = None
        self.welcome_sent = False
        #: Ids of MCP requests sent before the backend's hello: their answers may carry no session.
        self.pre_hello_ids: set[Any] = set()
        self.dropped: list[tuple[float, float, Any]] = []
        self.bad_session: list[Any] = []
        self.errors: list[str] = []
        # The MCP client (MCPClient).
        self.mcp = False
        self.init_result: dict | None = None
        self.init_answers = 0
        self.list_requests = 0
        self.pages: list[tuple[dict | None, dict]] = []
        self.tools: dict[str, dict] = {}
        self.name_mapping: dict[str, str] = {}
        self.ready = asyncio.Event()
        self.next_id = 1
        self.call_results: dict[int, asyncio.Future] = {}
        self.on_answer: dict[int, Callable[[dict], Awaitable[None]]] = {}
        self.gave_up: set[int] = set()
        self.probes: dict[int, asyncio.Future] = {}
        #: Results and errors that matched no waiting call (a late answer, an unknown id).
        self.late: list[dict] = []
        # What the user hears, what the model's dialogue holds, what is only logged.
        self.heard: list[str] = []
        self.dialogue: list[dict] = []
        self.logged: list[tuple[float, str, Any]] = []
        self.notes: list[dict] = []
        self.detects: list[tuple[float, str]] = []
        self.turns: list[str] = []
        self.plans: list[list[tuple]] = []
        self.listen_mode = "auto"
        self.speaking = False
        self.speaking_since = 0.0
        self.speech: list[tuple[float, float]] = []
        #: Speech a detect text of the device cut off: (when, the text that cut it).
        self.interrupted: list[tuple[float, str]] = []
        #: `tts` `stop` frames that could not be sent (the device had gone): when.
        self.stop_lost: list[float] = []
        self._speech_q: asyncio.Queue = asyncio.Queue()
        self._cut = False
        self._n_tool_calls = 0
        self._tasks: set[asyncio.Task] = set()
        self.closed = asyncio.Event()

    # ---- plumbing ----

    def now(self) -> float:
        return self.loop.time() - self.t0

    def spawn(self, coro) -> asyncio.Task:
        t = self.loop.create_task(coro)
        self._tasks.add(t)
        t.add_done_callback(self._task_done)
        return t

    def _task_done(self, t: asyncio.Task) -> None:
        self._tasks.discard(t)
        if not t.cancelled() and t.exception() is not None:
            self.errors.append(repr(t.exception()))

    def start(self) -> Backend:
        self.spawn(self._reader())
        self.spawn(self._speaker())
        return self

    async def stop(self) -> None:
        for t in list(self._tasks):
            t.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)

    async def send(self, obj: dict) -> str:
        text = dumps(obj)
        if not self.welcome_sent and obj.get("type") == "mcp":
            self.pre_hello_ids.add((obj.get("payload") or {}).get("id"))
        self.sent.append(text)
        self.sent_at.append(self.now())
        await self.link.send(text)
        return text

    async def send_mcp(self, payload: dict) -> str:
        return await self.send({"type": "mcp", "payload": payload})

    def sent_methods(self, probes: bool = False) -> list[str]:
        """The methods of the MCP messages sent (the probes' too when asked)."""
        out = []
        for text in self.sent:
            p = json.loads(text).get("payload")
            if isinstance(p, dict) and "method" in p and (probes or p.get("id") not in self.probe_ids):
                out.append(p["method"])
        return out

    # ---- the connection: _route_message ----

    async def _reader(self) -> None:
        try:
            while True:
                msg = await self.link.recv()
                self.received.append((self.now(), msg))
                try:
                    await self._route(msg)
                except Exception as e:  # the real one logs a handler's exception and goes on
                    self.errors.append(f"{type(e).__name__}: {e}")
        except EOFError:
            pass
        finally:
            self.closed.set()

    async def _route(self, msg: str | bytes) -> None:
        came = self.now()
        if self.loop.time() < self.loaded_at:
            left = self.loaded_at - self.loop.time()
            if left > CONFIG_WAIT_S:
                await asyncio.sleep(CONFIG_WAIT_S)
                self.dropped.append((came, self.now(), msg))
                if self.loop.time() - self.last_bind_prompt >= BIND_PROMPT_INTERVAL_S:
                    self.last_bind_prompt = self.loop.time()
                    self.spawn(self._bind_prompt())
                return
            await asyncio.sleep(left)
        if isinstance(msg, bytes):
            self.logged.append((self.now(), "audio", len(msg)))  # no VAD/ASR here
            return
        await self._text(msg)

    async def _bind_prompt(self) -> None:
        """`check_bind_device` before the TTS exists: stt + tts start, then it fails."""
        await self.send({"type": "stt", "text": trim_punctuation(BIND_PROMPT), "session_id": self.session_id})
        await self.send({"type": "tts", "state": "start", "session_id": self.session_id})
        self.speaking = True

    async def _text(self, msg: str) -> None:
        try:
            obj = json.loads(msg)
        except json.JSONDecodeError:
            self.logged.append((self.now(), "not JSON, sent back", msg))
            await self.link.send(msg)
            return
        if isinstance(obj, int):
            await self.link.send(msg)
            return
        if not isinstance(obj, dict):
            return
        kind = obj.get("type")
        if kind == "hello":
            await self._hello(obj)
        elif kind == "mcp":
            pid = (obj.get("payload") or {}).get("id") if isinstance(obj.get("payload"), dict) else None
            if self.welcome_sent and obj.get("session_id") != self.session_id and pid not in self.pre_hello_ids:
                self.bad_session.append(obj.get("session_id"))
            if "payload" in obj:
                self.spawn(self._mcp(obj["payload"], obj))
        elif kind == "listen":
            await self._listen(obj)
        elif kind == "ping":
            await self.send({"type": "pong", "timestamp": time.strftime("%Y-%m-%d %H:%M:%S")})
        elif kind == "abort":
            await self._abort()
        else:
            self.logged.append((self.now(), f"unknown type {kind!r}", obj))

    async def _hello(self, obj: dict) -> None:
        self.device_hello = obj
        welcome = dict(WELCOME)
        if obj.get("audio_params"):
            welcome["audio_params"] = obj["audio_params"]
        welcome["session_id"] = self.session_id
        features = obj.get("features") or {}
        self.mcp = bool(features.get("mcp"))
        if self.mcp and self.init_before_hello:  # a probe: the rare order
            await self._initialize()
        await self.send(welcome)
        self.welcome_sent = True
        self.hello_at = self.now()
        if self.mcp and not self.init_before_hello:
            self.spawn(self._initialize())

    async def _initialize(self) -> None:
        await self.send_mcp({
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {
                "protocolVersion": "2024-11-05",
                "capabilities": {"roots": {"listChanged": True}, "sampling": {}, "vision": VISION},
                "clientInfo": {"name": "XiaozhiClient", "version": "1.0.0"},
            },
        })

    async def _list(self, cursor: str | None = None) -> None:
        payload: dict = {"jsonrpc": "2.0", "id": 2, "method": "tools/list"}
        if cursor is not None:
            payload["params"] = {"cursor": cursor}
        self.list_requests += 1
        await self.send_mcp(payload)

    # ---- MCP: handle_mcp_message ----

    async def _mcp(self, payload: Any, env: dict) -> None:
        if not isinstance(payload, dict):
            self.logged.append((self.now(), "mcp payload not an object", payload))
            return
        pid = payload.get("id")
        if isinstance(pid, int) and pid in self.probes and ("result" in payload or "error" in payload):
            fut = self.probes.pop(pid)  # our probe's answer, not the backend's business
            if not fut.done():
                fut.set_result(payload)
            return
        if "result" in payload:
            result = payload["result"]
            msg_id = int(payload.get("id", 0))  # a string id raises here, as it does there
            if msg_id in self.call_results:
                hook = self.on_answer.pop(msg_id, None)
                if hook is not None:
                    await hook(payload)
                fut = self.call_results.pop(msg_id)
                if not fut.done():
                    fut.set_result(payload)
                return
            if msg_id in self.gave_up:
                self.late.append(payload)
            if msg_id == 1:
                self.init_answers += 1
                if self.init_answers > 1 and payload not in self.late:
                    self.late.append(payload)
                self.init_result = result if isinstance(result, dict) else {}
                await asyncio.sleep(LIST_AFTER_INIT_S)
                await self._list()
            elif msg_id == 2:
                if isinstance(result, dict) and isinstance(result.get("tools"), list):
                    self.pages.append((payload, result))
                    for tool in result["tools"]:
                        if isinstance(tool, dict):
                            name = tool.get("name", "")
                            self.tools[sanitize_tool_name(name)] = tool
                            self.name_mapping[sanitize_tool_name(name)] = name
                    cursor = result.get("nextCursor", "")
                    if cursor:
                        await self._list(cursor)
                    else:
                        self.ready.set()
                elif payload not in self.late:
                    self.late.append(payload)
            elif payload not in self.late:
                self.late.append(payload)
        elif "method" in payload:
            self.logged.append((self.now(), payload["method"], payload))
            self.notes.append(env)
        elif "error" in payload:
            error = payload["error"] if isinstance(payload["error"], dict) else {}
            message = error.get("message", "\u672a\u77e5\u9519\u8bef")
            self.logged.append((self.now(), "error", payload))
            msg_id = int(payload.get("id", 0) or 0)
            if msg_id in self.call_results:
                hook = self.on_answer.pop(msg_id, None)
                if hook is not None:
                    await hook(payload)
                fut = self.call_results.pop(msg_id)
                if not fut.done():
                    fut.set_exception(McpError(f"{MCP_ERROR}{message}"))
            else:
                self.late.append(payload)

    async def until_ready(self, timeout: float = TIMEOUT) -> bool:
        try:
            await asyncio.wait_for(self.ready.wait(), timeout)
            return True
        except asyncio.TimeoutError:
            return False

    # ---- the model's tool calls: chat → DeviceMCPExecutor.execute → call_mcp_tool ----

    async def model_call(self, name: str, arguments: dict,
                         on_answer: Callable[[dict], Awaitable[None]] | None = None) -> Outcome:
        """The model calls `name` (as it sees it: sanitized) with `arguments`; the outcome is
        handled as `_handle_function_result` does (spoken, or given to the model)."""
        started = self.loop.time()
        self._n_tool_calls += 1
        tool_call = {"id": f"call_{self._n_tool_calls}", "name": sanitize_tool_name(name),
                     "arguments": json.dumps(arguments)}
        payload: dict | None = None
        sent = False
        sanitized = sanitize_tool_name(name)
        if not self.ready.is_set():
            action, text = "ERROR", NOT_READY
        elif sanitized not in self.tools:
            action, text = "NOTFOUND", f"\u5de5\u5177 {sanitized} \u4e0d\u5b58\u5728"
        else:
            call_id = self.next_id
            self.next_id += 1
            fut: asyncio.Future = self.loop.create_future()
            self.call_results[call_id] = fut
            if on_answer is not None:
                self.on_answer[call_id] = on_answer
            await self.send_mcp({"jsonrpc": "2.0", "id": call_id, "method": "tools/call",
                                 "params": {"name": self.name_mapping[sanitized], "arguments": arguments}})
            sent = True
            try:
                payload = await asyncio.wait_for(asyncio.shield(fut), CALL_TIMEOUT_S)
                raw = payload.get("result")
                action, text = "REQLLM", str(raw)
                if isinstance(raw, dict):
                    if raw.get("isError") is True:
                        action = "ERROR"
                        text = TOOL_ERROR + str(raw.get("error", TOOL_ERROR_NO_DETAIL))
                    else:
                        content = raw.get("content")
                        if isinstance(content, list) and content and isinstance(content[0], dict) \
                                and "text" in content[0]:
                            text = content[0]["text"]
                if action == "REQLLM":
                    try:
                        as_json = json.loads(text)
                    except ValueError:
                        as_json = None
                    if isinstance(as_json, dict) and "action" in as_json:
                        action = str(as_json["action"])
                        text = str(as_json.get("response", ""))
            except McpError as e:
                action, text = "ERROR", str(e)
            except asyncio.TimeoutError:
                # chat's tool_call_timeout, then call_mcp_tool's own: the id is forgotten.
                self.call_results.pop(call_id, None)
                self.on_answer.pop(call_id, None)
                self.gave_up.add(call_id)
                action, text = "ERROR", NETWORK_PROBLEM
        self._function_result(action, text, tool_call)
        return Outcome(payload, action, text, sent, self.loop.time() - started)

    def _function_result(self, action: str, text: str, tool_call: dict) -> None:
        """`_handle_function_result`."""
        if action in ("ERROR", "NOTFOUND", "RESPONSE"):
            self.say(text)
            self.dialogue.append({"role": "assistant", "content": text})
        elif action == "REQLLM":
            self.dialogue.append({"role": "assistant", "tool_calls": [tool_call]})
            if text:
                self.dialogue.append({"role": "tool", "tool_call_id": tool_call["id"], "content": text})

    async def probe(self, method: str, params: dict | None = None, *, timeout: float = TIMEOUT) -> dict:
        """A request xinnan's backend never sends (ids from 1000), to check the device."""
        pid = 1000 + len(self.probe_ids)
        self.probe_ids.add(pid)
        fut: asyncio.Future = self.loop.create_future()
        self.probes[pid] = fut
        payload: dict = {"jsonrpc": "2.0", "id": pid, "method": method}
        if params is not None:
            payload["params"] = params
        await self.send_mcp(payload)
        try:
            return await asyncio.wait_for(fut, timeout)
        except asyncio.TimeoutError:
            self.probes.pop(pid, None)
            return {}

    # ---- what the device says: ListenTextMessageHandler.handle, startToChat, chat ----

    async def _listen(self, obj: dict) -> None:
        if "mode" in obj:
            self.listen_mode = obj["mode"]
        state = obj["state"]
        if state != "detect" or "text" not in obj:
            self.logged.append((self.now(), f"listen {state}", obj))
            return
        text = obj["text"]
        self.detects.append((self.now(), text))
        if not isinstance(text, str):
            raise TypeError("detect text is not a string")
        if text.startswith(DEVICE_CALL):
            call_text = text[len(DEVICE_CALL):].strip()
            # It starts a speech of its own: whatever was still being said is dropped (the
            # device should have waited for its `tts` `stop`).
            if self.speaking:
                self.interrupted.append((self.now(), text))
                await self._abort()
            self._begin_turn(call_text)
            self.say(call_text)
            self._end_turn()
            self.dialogue.append({"role": "assistant", "content": call_text})
            return
        if trim_punctuation(text) in WAKEUP_WORDS:
            text = "\u563f\uff0c\u4f60\u597d\u5440"  # 嘿，你好呀: the greeting turn
        if self.speaking and self.listen_mode != "manual":
            await self._abort()
        self._begin_turn(text)
        self.spawn(self._chat(text))

    async def _chat(self, query: str) -> None:
        self.turns.append(query)
        self.dialogue.append({"role": "user", "content": query})
        plan = self.plans.pop(0) if self.plans else [("say", f"OK ({UNTRUSTED})")]
        for step in plan[:5]:  # MAX_DEPTH
            if step[0] == "call":
                await self.model_call(step[1], step[2])
            else:
                self.say(step[1])
                self.dialogue.append({"role": "assistant", "content": step[1]})
        self._end_turn()

    async def _abort(self) -> None:
        while not self._speech_q.empty():
            self._speech_q.get_nowait()
        self._cut = True
        await self._send_stop()

    async def _send_stop(self) -> None:
        """`tts` `stop`; one the device is no longer there for is recorded (its last words were
        cut off)."""
        try:
            await self.send({"type": "tts", "state": "stop", "session_id": self.session_id})
        except Exception:
            self.stop_lost.append(self.now())
        self._stopped()

    # ---- speech: send_stt_message, sendAudioMessage, send_tts_message ----

    def say(self, text: str) -> None:
        """One sentence to the TTS: the user hears it."""
        self.heard.append(text)
        self._speech_q.put_nowait(("say", text))

    def _begin_turn(self, stt_text: str) -> None:
        self._speech_q.put_nowait(("start", stt_text))

    def _end_turn(self) -> None:
        self._speech_q.put_nowait(("stop", None))

    def _stopped(self) -> None:
        if self.speaking:
            self.speech.append((self.speaking_since, self.now()))
        self.speaking = False

    async def _speaker(self) -> None:
        open_turn = False
        while True:
            kind, text = await self._speech_q.get()
            if kind == "start":
                open_turn = True
                await self.send({"type": "stt", "text": trim_punctuation(text), "session_id": self.session_id})
                await self.send({"type": "tts", "state": "start", "session_id": self.session_id})
                if not self.speaking:
                    self.speaking, self.speaking_since = True, self.now()
            elif kind == "say":
                if not self.speaking:
                    self.speaking, self.speaking_since = True, self.now()
                self._cut = False
                await self.send({"type": "tts", "state": "sentence_start", "text": text,
                                 "session_id": self.session_id})
                await self.link.send_audio(bytes(60))
                rate = self.speech_s_per_char
                await asyncio.sleep(min(0.6, 0.1 + 0.005 * len(text)) if rate is None else rate * len(text))
                if self._cut:  # an abort stopped it meanwhile (and said so)
                    continue
                if not open_turn and self._speech_q.empty():
                    await self._send_stop()
            else:
                open_turn = False
                await self._send_stop()

    # ---- for the checks ----

    def device_calls(self) -> list[str]:
        """The `[device_call]` texts the device sent, without the prefix."""
        return [t[len(DEVICE_CALL):].strip() for _, t in self.detects if isinstance(t, str) and t.startswith(DEVICE_CALL)]

    def events(self) -> list[tuple[float, str]]:
        """The detect texts that start a model turn (no `[device_call]` prefix)."""
        return [(at, t) for at, t in self.detects if isinstance(t, str) and not t.startswith(DEVICE_CALL)]

    async def device_call_after(self, n: int, timeout: float) -> str | None:
        """The first `[device_call]` text beyond the first `n`, waiting up to `timeout`."""
        deadline = self.loop.time() + timeout
        while True:
            calls = self.device_calls()
            if len(calls) > n:
                return calls[n]
            if self.loop.time() >= deadline:
                return None
            await asyncio.sleep(0.05)

    def untrusted(self) -> list[str]:
        """Strings this backend sent that came from outside the device (none may come back in a
        detect text): its session id, the vision endpoint and token, anything marked."""
        return [self.session_id, VISION["url"], VISION["token"], UNTRUSTED]

    def tainted_detects(self) -> list[str]:
        marks = self.untrusted()
        return [t for _, t in self.detects if not isinstance(t, str) or any(m in t for m in marks)]


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


def off_loop(fn, *a, **k):
    """A blocking SimApi call, in a thread."""
    return asyncio.to_thread(lambda: fn(*a, **k))


async def opened(link, tag: str, **kw) -> Backend:
    """A backend on `link`, started, with the device's tools listed."""
    b = Backend(link, tag, **kw).start()
    ok = await b.until_ready(TIMEOUT + kw.get("config_load_s", 0.0))
    if not ok:
        raise RuntimeError(f"no tool listing within {TIMEOUT} s (sent {b.sent[:4]}, received {b.received[:4]}, "
                           f"errors {b.errors[:2]})")
    return b


def tool_result(b: Backend) -> str | None:
    """The model's last dialogue message when it is a tool's result (what the model got)."""
    last = b.dialogue[-1] if b.dialogue else {}
    return last.get("content") if last.get("role") == "tool" else None


def closing_checks(b: Backend, *, probes_used: bool = False) -> None:
    """What every session must end with."""
    tag = b.tag
    check(f"{tag} every MCP message after the backend's hello carried its session_id (answers to requests sent "
          "before it aside)", not b.bad_session,
          b.bad_session[:5])
    check(f"{tag} no answer came for a call the backend was not waiting for (late or unknown ids)", not b.late,
          b.late[:3])
    check(f"{tag} the backend handled every frame (no handler raised)", not b.errors, b.errors[:3])
    methods = set(b.sent_methods())
    check(f"{tag} the backend itself sent only initialize, tools/list and tools/call"
          f"{' (the probes aside)' if probes_used else ''}",
          methods <= {"initialize", "tools/list", "tools/call"}, methods)
    check(f"{tag} every frame the backend sent is ASCII json.dumps output",
          all(t.isascii() and t == dumps(json.loads(t)) for t in b.sent), [t for t in b.sent if not t.isascii()][:2])
    check(f"{tag} no detect text carries a string that came from the wire "
          f"({len(b.detects)} detect texts)", not b.tainted_detects(), b.tainted_detects()[:3])


# ---- 1. The main session: the real order, paging, calls, what the model and the user get ----


async def session(link, tag: str) -> None:
    b = Backend(link, tag, config_load_s=CONFIG_LOAD_S).start()
    try:
        await main_session(b, tag)
    finally:
        await b.stop()


async def main_session(b: Backend, tag: str) -> None:
    ready = await b.until_ready(TIMEOUT + CONFIG_LOAD_S)
    hello = b.device_hello or {}
    check(f"{tag} the device opens with its hello: type hello, features.mcp true",
          hello.get("type") == "hello" and (hello.get("features") or {}).get("mcp") is True
          and hello.get("transport") == "websocket", b.received[:1])
    first = b.received[0][0] if b.received else None
    check(f"{tag} the hello waited for the configuration ({CONFIG_LOAD_S} s, under the 1 s limit): the backend's "
          f"hello went out {b.hello_at} s after the connection", b.hello_at is not None
          and CONFIG_LOAD_S - 0.05 <= b.hello_at < CONFIG_WAIT_S + 0.5 and not b.dropped, (first, b.hello_at, b.dropped))
    order = [json.loads(t).get("type") + ":" + str((json.loads(t).get("payload") or {}).get("method", ""))
             for t in b.sent[:3]]
    check(f"{tag} the real order: the backend's hello, then initialize id 1, then (after its result) tools/list id 2",
          order == ["hello:", "mcp:initialize", "mcp:tools/list"], order)
    init_text = next((t for t in b.sent if '"initialize"' in t), "")
    check(f"{tag} the initialize goes out as json.dumps writes it (', ' separators, \\uXXXX escapes)",
          init_text.startswith('{"type": "mcp", "payload": {"jsonrpc": "2.0", "id": 1, ')
          and init_text.isascii() and "\\u4ee4\\u724c" in init_text, init_text)
    r = b.init_result or {}
    check(f"{tag} initialize answered: 2024-11-05, tools capability, device-sim",
          r.get("protocolVersion") == "2024-11-05" and "tools" in (r.get("capabilities") or {})
          and (r.get("serverInfo") or {}).get("name") == "device-sim", r)
    names = [t.get("name") for _, page in b.pages for t in page.get("tools", [])]
    sizes = [len(json.dumps(page, separators=(",", ":"), ensure_ascii=False).encode()) for _, page in b.pages]
    check(f"{tag} tools/list: {len(names)} tools over {len(sizes)} pages (id 2, then id 2 with the cursor), "
          "every tool once, in order", ready and names == EXPECTED_LISTING and len(sizes) >= 4, names)
    check(f"{tag} the last page has no nextCursor member at all", bool(b.pages) and "nextCursor" not in b.pages[-1][1],
          b.pages[-1][1].keys() if b.pages else None)
    check(f"{tag} every page's result fits the {PAGE_BYTES}-byte budget (largest {max(sizes, default=0)})",
          bool(sizes) and max(sizes) <= PAGE_BYTES, sizes)
    check(f"{tag} user-only self.reboot is not listed", "self.reboot" not in names)
    if not ready:
        return

    # Probes (xinnan's backend sends neither): an empty cursor, and withUserTools.
    page = result_of(await b.probe("tools/list", {"cursor": "", "withUserTools": True}))
    with_user = BOARD_TOOLS + FILLERS
    listed = [t.get("name") for t in page.get("tools", [])]
    check(f"{tag} probe: an empty cursor (\"cursor\":\"\") is the first page",
          len(listed) > 0 and listed == with_user[:len(listed)], page)
    tools = list(page.get("tools", []))
    for _ in range(60):
        cursor = page.get("nextCursor")
        if not cursor:
            break
        page = result_of(await b.probe("tools/list", {"cursor": cursor, "withUserTools": True}))
        tools += page.get("tools", [])
    reboot = next((t for t in tools if t.get("name") == "self.reboot"), {})
    check(f"{tag} probe: withUserTools: true lists every tool, user-only self.reboot too (audience user)",
          [t.get("name") for t in tools] == with_user
          and (reboot.get("annotations") or {}).get("audience") == ["user"], [t.get("name") for t in tools])

    # Calls, ids from 1. The model gets content[0].text only: value and evidence must be in it.
    o = await b.model_call("self.audio_speaker.set_volume", {"volume": 40})
    ev = evidence_of(o.payload)
    check(f"{tag} call id 1 set_volume 40: the model gets \"{o.text}\" (value and read-back evidence) as the "
          "tool's result; evidence read_back 40 == 40",
          (o.payload or {}).get("id") == 1 and o.to_model and o.text == "true — read back: 40"
          and tool_result(b) == o.text and ev == {"level": "read_back", "commanded": 40, "observed": 40}, o)
    check(f"{tag} ...and the user hears nothing of it (the model speaks next)", not b.heard, b.heard)
    o = await b.model_call("self.screen.set_brightness", {"brightness": 55})
    check(f"{tag} call id 2 set_brightness 55: the model gets \"applied, not verified\"",
          (o.payload or {}).get("id") == 2 and o.text == "true — applied, not verified (commanded 55)"
          and evidence_of(o.payload).get("level") == "applied", o)
    o = await b.model_call("self.screen.set_theme", {"theme": "dark"})
    check(f"{tag} set_theme dark: the model gets true, applied", o.text == "true — applied, not verified", o)
    o = await b.model_call("self.relay.set", {"on": True})
    check(f"{tag} relay on: the model gets measured true == true", o.text == "true — measured: true"
          and evidence_of(o.payload) == {"level": "measured", "commanded": True, "observed": True}, o)

    # Long-running actions within the default 25 s budget: the answer waits for the move and the
    # model gets where the encoder measured it.
    for position in (100, 600):
        o = await b.model_call("self.motor.move_to", {"position": position})
        check(f"{tag} move_to {position} (within the default {HOLD_DEFAULT_S} s budget, {o.took:.1f} s): the answer "
              f"waits for the move; the model gets the encoder's measurement: \"{o.text}\"",
              o.text == f"{position} — measured: {position} steps (within ±2 steps)"
              and evidence_of(o.payload).get("level") == "measured", o)

    o = await b.model_call("self.get_device_status", {})
    try:
        st = json.loads(o.text)
    except ValueError:
        st = {}
    check(f"{tag} get_device_status: the model gets the status JSON, as structuredContent has it",
          o.to_model and st == result_of(o.payload).get("structuredContent") and st.get("audio_speaker") == {"volume": 40}
          and st.get("screen") == {"brightness": 55, "theme": "dark"} and st.get("relay") == {"on": True}
          and st.get("motor") == {"position": 600, "moving": False}, o)

    # Non-ASCII arguments, \uXXXX-escaped on the wire.
    label = "\u6d4b\u8bd5\u6807\u7b7e\u00b7\u6e29\u5ea6"  # 测试标签·温度 (7 characters, 20 UTF-8 bytes)
    n = len(b.sent)
    o = await b.model_call(FILLERS[0], {"level": 3, "label": label})
    text = b.sent[n] if len(b.sent) > n else ""
    check(f"{tag} a Chinese label, sent as \\uXXXX, is a valid string argument",
          "\\u6d4b\\u8bd5" in text and text.isascii() and o.to_model, (text, o))
    ok = []
    for i, name in enumerate(FILLERS):
        o = await b.model_call(name, {} if i % 2 else {"level": i % 11, "label": "\u586b\u5145" * (1 + i % 16)})
        ok.append(o.text == "This filler tool has no effect.")
    check(f"{tag} all {len(FILLERS)} filler tools answer", all(ok), ok)
    o = await b.model_call(FILLERS[1], {"label": "\u4e2d" * 32})
    check(f"{tag} 32 Chinese characters (96 bytes) meet maxLength 32: lengths count characters", o.to_model, o)

    # Validation at 2024-11-05: JSON-RPC -32602 errors, which the backend speaks to the user
    # ("MCP错误: …") and puts in the dialogue as the assistant's words; the model gets no result.
    heard_before = len(b.heard)
    cases = [(FILLERS[1], {"label": "\u4e2d" * 33}, ['"label"']),
             ("self.audio_speaker.set_volume", {"volume": "50"}, ['"volume"', "integer"]),
             ("self.audio_speaker.set_volume", {"volume": 50.5}, ['"volume"', "50.5"]),
             ("self.audio_speaker.set_volume", {"volume": 40, "loud": True}, ['"loud"']),
             ("self.audio_speaker.set_volume", {}, ['"volume"'])]
    for name, arguments, words in cases:
        o = await b.model_call(name, arguments)
        err = (o.payload or {}).get("error") if o.payload else None
        msg = (o.text or "").removeprefix(MCP_ERROR)
        check(f"{tag} {name} {short(arguments)}: -32602; the user hears \"{o.text[:80]}\", which names "
              f"{', '.join(words)}; the dialogue has it as the assistant's words",
              o.action == "ERROR" and o.text.startswith(MCP_ERROR) and all(w in msg for w in words)
              and 0 < len(msg) <= 200 and b.dialogue[-1] == {"role": "assistant", "content": o.text}, (o, err))
        check(f"{tag} the refusal the user hears ends with what happened: \"{msg[-40:]}\"",
              msg.endswith("nothing was changed"), msg)
    o = await b.model_call("self.screen.set_theme", {"theme": "\u6df1\u8272"})  # 深色, not in the enum
    check(f"{tag} a Chinese enum miss is refused, and the user hears why", o.action == "ERROR"
          and o.text.startswith(MCP_ERROR), o)
    known(f"{tag} the refusal echoes the Chinese value as text (the user hears it), not as \\u escapes",
          "\u6df1\u8272" in o.text, o.text)
    check(f"{tag} the user heard the {len(cases) + 1} refusals, in order", len(b.heard) - heard_before == len(cases) + 1,
          b.heard[heard_before:])
    # Tools it does not list never reach the device from the backend; the device refuses them too.
    n = len(b.sent)
    o = await b.model_call("self.reboot", {})
    check(f"{tag} self.reboot (not listed): the backend says it does not exist and sends nothing",
          o.action == "NOTFOUND" and not o.sent and len(b.sent) == n and b.heard[-1] == o.text, o)
    p = await b.probe("tools/call", {"name": "self.reboot", "arguments": {}})
    check(f"{tag} probe: user-only self.reboot is refused to the model with a JSON-RPC error",
          (p.get("error") or {}).get("code") == -32602, p)
    p = await b.probe("tools/call", {"name": "self.no_such_tool", "arguments": {}})
    check(f"{tag} probe: an unknown tool is a JSON-RPC error with a message",
          isinstance((p.get("error") or {}).get("code"), int) and (p.get("error") or {}).get("message"), p)
    closing_checks(b, probes_used=True)


# ---- 2. Failures: spoken to the user, never given to the model ----


async def failures(b: Backend, tag: str, cases: list[tuple[str, dict, str, str | None]]) -> None:
    """Each case: tool, arguments, the commanded value as the sentence must name it, and the
    exact reason the device gives today (None: not pinned)."""
    for name, arguments, commanded, reason in cases:
        before = len(b.dialogue)
        o = await b.model_call(name, arguments)
        r = result_of(o.payload)
        check(f"{tag} {name} {short(arguments)} fails (isError): the user hears \"{o.text}\"; the dialogue has it as "
              "the assistant's words; the model gets no tool result",
              r.get("isError") is True and o.action == "ERROR" and o.text.startswith(TOOL_ERROR)
              and b.heard[-1:] == [o.text] and b.dialogue[before:] == [{"role": "assistant", "content": o.text}], o)
        if reason is not None:
            check(f"{tag} ...which is result.error, as the first text says it", o.text == TOOL_ERROR + reason
                  and first_text(o.payload) == reason, o)
        check(f"{tag} the failure the user hears names what was commanded ({commanded}) and the "
              f"evidence ({' / '.join(EVIDENCE_WORDS)})", speakable_failure(o.text, commanded), o.text)


async def refused_session(link, tag: str) -> None:
    """--fault codec-nack --fault queue-full --door-open: failures before anything changes."""
    b = await opened(link, tag)
    try:
        await failures(b, tag, [
            ("self.audio_speaker.set_volume", {"volume": 40}, "40", None),
            ("self.motor.move_to", {"position": 600}, "600", None),
            ("self.relay.set", {"on": True}, "true", None),
        ])
        closing_checks(b)
    finally:
        await b.stop()


async def measured_failures_session(link, tag: str) -> None:
    """--fault readback-mismatch --fault relay-stuck --fault motor-stall, and (a probe) the
    initialize sent before the backend's hello, the order that sending the hello may cause."""
    b = await opened(link, tag, init_before_hello=True)
    try:
        order = [json.loads(t).get("type") for t in b.sent[:2]]
        check(f"{tag} probe: initialize before the backend's hello is answered as well (then the listing)",
              order == ["mcp", "hello"] and (b.init_result or {}).get("protocolVersion") == "2024-11-05",
              (order, b.init_result))
        await failures(b, tag, [
            ("self.audio_speaker.set_volume", {"volume": 40}, "40",
             "The codec reports a different volume than commanded — read back: 47 (commanded 40)"),
            ("self.relay.set", {"on": True}, "true",
             "The relay's feedback contact disagrees with the command — measured: false (commanded true)"),
            ("self.motor.move_to", {"position": 600}, "600 steps",
             "The actuator stopped before reaching its target — measured: 240 steps (commanded 600 steps, "
             "not within ±2 steps); safe-stop issued"),
        ])
        closing_checks(b)
    finally:
        await b.stop()


# ---- 3. A person in the loop, within the call; updates only logged ----


def is_update(uri: str):
    return lambda p: p.get("method") == "notifications/resources/updated" and (p.get("params") or {}).get("uri") == uri


async def note(b: Backend, ok, after: int = 0, timeout: float = 5.0) -> dict | None:
    """The first notification envelope beyond the first `after` whose payload satisfies `ok`."""
    deadline = b.loop.time() + timeout
    while True:
        for env in b.notes[after:]:
            if ok(env.get("payload") or {}):
                return env
        if b.loop.time() >= deadline:
            return None
        await asyncio.sleep(0.02)


async def confirm_session(link, tag: str) -> None:
    """--confirm --confirm-timeout 2 --ui (default hold): updates reach the backend and are only
    logged; a confirmed call is held inside the call until a press, or answered when no press
    comes within the timeout (before the hold budget ends)."""
    api = await ui_of(link)
    b = await opened(link, tag)
    try:
        check(f"{tag} initialize 2024-11-05: the device offers resources with subscribe",
              ((b.init_result or {}).get("capabilities") or {}).get("resources") == {"subscribe": True}, b.init_result)

        # 1. Updates in the envelope (the backend never subscribes); it only logs them.
        sent_before = len(b.sent)
        moved = await off_loop(api.sensor, temperature=31.5, battery=20)
        check(f"{tag} POST /sim/sensor: 31.5 °C, 20 %", moved["sensors"] == {"temperature": 31.5, "battery": 20}, moved)
        temp = await note(b, is_update(TEMPERATURE))
        check(f"{tag} without subscribing, the temperature's update arrives in the envelope with the session_id",
              temp == {"session_id": b.session_id, "type": "mcp", "payload": {
                  "jsonrpc": "2.0", "method": "notifications/resources/updated", "params": {"uri": TEMPERATURE}}},
              temp or b.notes[-3:])
        battery = await note(b, is_update(BATTERY))
        check(f"{tag} ...and the battery's", battery is not None and battery.get("session_id") == b.session_id,
              b.notes[-3:])
        n_notes = len(b.notes)
        pressed = await off_loop(api.press)
        check(f"{tag} a press with nothing waiting confirms nothing", pressed == {"pressed": True, "answers": None}, pressed)
        press = await note(b, is_update(BUTTON), after=n_notes)
        check(f"{tag} ...and reaches the backend: device://buttons/main updated", press is not None, b.notes[-3:])
        await asyncio.sleep(0.3)
        check(f"{tag} the backend only logged the updates: the user heard nothing, the dialogue is empty, "
              "nothing was sent back (no resources/read)",
              not b.heard and not b.dialogue and len(b.sent) == sent_before
              and sum(1 for _, what, _ in b.logged if what == "notifications/resources/updated") >= 3,
              (b.heard, b.dialogue, b.sent[sent_before:]))
        check(f"{tag} without --speak-first, that press started no turn", not b.detects, b.detects)

        # 2. A confirmed call held inside the call: the device shows the question, the press runs
        #    it, the call's own answer is the outcome.
        answer = asyncio.create_task(b.model_call("self.relay.set", {"on": True}))
        ok, s = await off_loop(api.state_until, lambda s: (s.get("confirmation") or {}).get("tool") == "self.relay.set")
        check(f"{tag} the device shows the waiting call (on the device), the relay still off, no answer yet",
              ok and s["confirmation"]["on_device"] is True and s["confirmation"]["shown"] is True
              and s["relay"]["on"] is False and not answer.done(), s.get("confirmation"))
        pressed = await off_loop(api.press)
        check(f"{tag} POST /sim/button answers the waiting call", (pressed.get("answers") or {}).get("tool")
              == "self.relay.set", pressed)
        o = await asyncio.wait_for(answer, 5)
        check(f"{tag} the call's own answer is the outcome, and the model gets it: \"{o.text}\"",
              o.to_model and o.text == "true — measured: true" and tool_result(b) == o.text
              and evidence_of(o.payload) == {"level": "measured", "commanded": True, "observed": True}, o)
        ok, s = await off_loop(api.state_until, lambda s: s["relay"]["on"] is True and s["confirmation"] is None)
        check(f"{tag} the relay is on", ok, s["relay"])
        o = await b.model_call("self.relay.set", {"on": False})
        check(f"{tag} switching off needs no press: true, measured", o.text == "true — measured: false", o)

        # 3. Two calls in one model turn (the backend runs them side by side): the second
        #    confirmed call is refused; the first gets no press within the timeout.
        first = asyncio.create_task(b.model_call("self.relay.set", {"on": True}))
        await off_loop(api.state_until, lambda s: (s.get("confirmation") or {}).get("tool") == "self.relay.set")
        started = b.loop.time()
        o = await b.model_call("self.reboot", {})
        check(f"{tag} a second confirmed call meanwhile is refused, and the user hears why: \"{o.text}\"",
              o.action == "ERROR" and "Another action is waiting" in o.text and b.heard[-1:] == [o.text], o)
        o = await asyncio.wait_for(first, CONFIRM_TIMEOUT_S + 5)
        waited = b.loop.time() - started
        check(f"{tag} no press: after {waited:.1f} s the call's answer says not confirmed, no answer in time, "
              f"nothing done — spoken to the user: \"{o.text}\"",
              o.action == "ERROR" and "no answer in time" in o.text and "nothing was done" in o.text
              and b.heard[-1:] == [o.text] and b.dialogue[-1:] == [{"role": "assistant", "content": o.text}], o)
        check(f"{tag} that refusal names what was commanded (true) and the evidence",
              speakable_failure(o.text, "true"), o.text)
        s = await off_loop(api.state)
        check(f"{tag} the relay stayed off, nothing waits", s["relay"]["on"] is False and s["confirmation"] is None,
              (s["relay"], s["confirmation"]))
        pressed = await off_loop(api.press)
        await asyncio.sleep(0.3)
        s = await off_loop(api.state)
        check(f"{tag} a late press confirms nothing; the relay stays off",
              pressed.get("answers") is None and s["relay"]["on"] is False, (pressed, s["relay"]))

        # A probe (the backend never reads a resource): the value the update was about.
        read = result_of(await b.probe("resources/read", {"uri": TEMPERATURE}))
        try:
            value = json.loads(read["contents"][0]["text"])
        except (KeyError, IndexError, TypeError, ValueError):
            value = None
        check(f"{tag} probe: resources/read in the envelope gives {{\"celsius\": 31.5}}", value == {"celsius": 31.5}, read)
        closing_checks(b, probes_used=True)
    finally:
        await b.stop()


#: The confirm session's --confirm-timeout: shorter than the hold budget, so the timeout comes
#: inside the call.
CONFIRM_TIMEOUT_S = 2


# ---- 4. After the answer ----


def within_s(text: str) -> int | None:
    m = re.search(r"within (\d+) s", text)
    return int(m.group(1)) if m else None


def outcome_sentence(said: str | None, commanded: str, evidence: str) -> bool:
    """A later outcome as the user should hear it: value and evidence, short enough to speak. The
    commanded value is said as what was observed (`measured: true`) or, when the two differ, beside
    it (`(commanded true)`)."""
    return (isinstance(said, str) and evidence in said and len(said) <= 300
            and (f"{evidence}: {commanded}" in said or f"commanded {commanded}" in said))


def in_dialogue(b: Backend, said: str | None) -> bool:
    return said is not None and said in b.heard and {"role": "assistant", "content": said} in b.dialogue


async def after_answer_session(link, tag: str, repeats: int = 6) -> None:
    """--confirm --ui --hold-answer 0: the call is answered "waiting" at once; the press comes
    after the answer. /sim/state, read the moment each waiting answer arrives, shows the
    question; the press's outcome reaches the user and the dialogue."""
    api = await ui_of(link)
    b = await opened(link, tag)
    try:
        polls: list[tuple[dict, dict]] = []
        lags: list[int] = []

        async def poll(payload: dict) -> None:  # runs as the answer arrives, before anything else
            at = time.monotonic()
            s = await off_loop(api.state)
            polls.append((payload, s))
            if not (s.get("confirmation") or {}).get("shown"):  # how long until it does
                await off_loop(api.state_until, lambda s: bool((s.get("confirmation") or {}).get("shown")), 1)
                lags.append(round((time.monotonic() - at) * 1000))

        switched = 0
        said_all: list[str | None] = []
        for i in range(repeats):
            o = await b.model_call("self.relay.set", {"on": True}, on_answer=poll)
            sc = result_of(o.payload).get("structuredContent") or {}
            if i == 0:
                check(f"{tag} relay on is answered at once that it waits for a press; the model gets \"{o.text}\"",
                      sc.get("status") == "awaiting_confirmation" and o.to_model and tool_result(b) == o.text
                      and o.text.startswith("Waiting for a person") and o.took < 2, o)
                n = within_s(o.text)
                _, s = await off_loop(api.state_until, lambda s: s.get("confirmation") is not None, 2)
                left = (s.get("confirmation") or {}).get("expires_in_ms", 0) / 1000
                check(f"{tag} heard at once, the pending text leaves time: \"within {n} s\" "
                      f"(>= {PERSON_MARGIN_S} s), and the device waits that long ({left:.1f} s left)",
                      n is not None and n >= PERSON_MARGIN_S and left >= n - 1.5, (o.text, s.get("confirmation")))
            if sc.get("status") != "awaiting_confirmation":
                break
            seen = len(b.device_calls())
            await off_loop(api.press)
            ok, s = await off_loop(api.state_until, lambda s: s["relay"]["on"] is True, 5)
            switched += ok
            # The first outcome may take a moment; later ones come as fast, or (today) not at all.
            said_all.append(await b.device_call_after(seen, 3.0 if i == 0 else 1.0 if said_all[0] else 0.3))
            off = await b.model_call("self.relay.set", {"on": False})
            if off.text != "true — measured: false":
                check(f"{tag} switching off again", False, off)
                break
        check(f"{tag} each press after the waiting answer ran the call: the relay switched on ({switched}/{repeats})",
              switched == repeats, switched)
        check(f"{tag} each press's outcome reached the user and the model's dialogue as a "
              f"[device_call] text with value and evidence ({sum(s is not None for s in said_all)}/{repeats}): "
              f"{said_all[:1]}",
              len(said_all) == repeats and all(outcome_sentence(s, "true", "measured") and in_dialogue(b, s)
                                                for s in said_all),
              {"said": said_all[:2], "only logged": [what for _, what, _ in b.logged if what.startswith("notif")][:3]})
        shown = [bool((s.get("confirmation") or {}).get("shown"))
                 and asks_relay((s.get("confirmation") or {}).get("question")) for _, s in polls]
        check(f"{tag} /sim/state read the moment the waiting answer arrived shows the question "
              f"({sum(shown)}/{len(polls)})", len(polls) == repeats and all(shown),
              {"read then": [s.get("confirmation") for _, s in polls][:6], "shown after (ms)": lags})
        closing_checks(b)
    finally:
        await b.stop()


async def outcome_while_speaking_session(link, tag: str) -> None:
    """--confirm --hold-answer 0 --door-open --ui: the relay's call is answered "waiting"; the
    backend then speaks at length (a real speech's pace) and, meanwhile, the person presses. The
    outcome's `[device_call]` text waits until the backend stopped speaking — a detect text starts
    a new speech there, dropping what it was saying — and then comes at once. The interlock
    refused the confirmed call, and the user hears that in that order."""
    api = await ui_of(link)
    b = await opened(link, tag, speech_s_per_char=0.04)
    try:
        o = await b.model_call("self.relay.set", {"on": True})
        sc = result_of(o.payload).get("structuredContent") or {}
        check(f"{tag} relay on is answered at once that it waits for a press",
              sc.get("status") == "awaiting_confirmation", o)
        await off_loop(api.state_until, lambda s: bool((s.get("confirmation") or {}).get("shown")), 3)
        # The backend speaks (about 5 s), and the person presses while it does.
        seen = len(b.device_calls())
        b._begin_turn("a story")
        for i in range(3):
            b.say(f"Here is part {i + 1} of a long story the user asked for, told at the pace of speech.")
        b._end_turn()
        while not b.speaking:
            await asyncio.sleep(0.02)
        await asyncio.sleep(0.5)
        await off_loop(api.press)
        said = await b.device_call_after(seen, 15.0)
        at = next((t for t, text in reversed(b.detects) if text.startswith(DEVICE_CALL)), None)
        ended = next((e for s0, e in b.speech if at is not None and s0 <= at + 0.05), None)
        check(f"{tag} the outcome did not cut the backend's speech off",
              not b.interrupted, b.interrupted)
        check(f"{tag} the outcome came once the backend stopped speaking, promptly "
              f"({None if at is None or ended is None else round(at - ended, 2)} s after the stop)",
              at is not None and ended is not None and 0 <= at - ended < 1.5, (b.speech, at))
        check(f"{tag} the user hears that the person confirmed, then the interlock refused "
              f"and nothing switched: {said!r}",
              isinstance(said, str) and "the person confirmed it, then it failed" in said
              and "interlock" in said and "not switched" in said and "commanded true" in said, said)
        ok, s = await off_loop(api.state_until, lambda s: s["relay"]["on"] is False, 1)
        check(f"{tag} the relay stayed off", ok, s.get("relay"))
        closing_checks(b)
    finally:
        await b.stop()


async def pending_text_session(link, tag: str, hold: int, timeout: int, slow: bool) -> None:
    """--confirm --ui with a hold budget close to the confirmation timeout: the pending text
    reaches the person late: it must leave them time. Then the press after it reaches the user
    and the dialogue, and in the slow mode, a timeout after the answer."""
    api = await ui_of(link)
    b = await opened(link, tag)
    try:
        o = await b.model_call("self.relay.set", {"on": True})
        sc = result_of(o.payload).get("structuredContent") or {}
        check(f"{tag} relay on, no press: after the {hold} s budget ({o.took:.1f} s) the model gets the pending text, "
              "within the backend's 30 s", sc.get("status") == "awaiting_confirmation" and o.to_model
              and hold - 0.3 <= o.took < CALL_TIMEOUT_S, o)
        n = within_s(o.text)
        _, s = await off_loop(api.state_until, lambda s: s.get("confirmation") is not None, 2)
        conf = s.get("confirmation") or {}
        left = conf.get("expires_in_ms", 0) / 1000
        check(f"{tag} the pending text, heard {o.took:.1f} s after the call, leaves the person time: "
              f"\"within {n} s\" (>= {PERSON_MARGIN_S} s)", n is not None and n >= PERSON_MARGIN_S, o.text)
        check(f"{tag} ...and the device waits as long as the text says ({left:.1f} s left when it was heard)",
              n is not None and left >= n - 1.5, (o.text, conf))
        if sc.get("status") != "awaiting_confirmation":
            return
        seen = len(b.device_calls())
        await asyncio.sleep(1.0)
        await off_loop(api.press)
        ok, s = await off_loop(api.state_until, lambda s: s["relay"]["on"] is True, 3)
        check(f"{tag} a press 1 s after the pending text was heard runs the call", ok, s.get("relay"))
        said = await b.device_call_after(seen, 2.0)
        check(f"{tag} the outcome of that press reached the user and the dialogue: {said!r}",
              outcome_sentence(said, "true", "measured") and in_dialogue(b, said), said)
        if slow:
            o = await b.model_call("self.relay.set", {"on": False})
            seen = len(b.device_calls())
            o = await b.model_call("self.relay.set", {"on": True})
            n = within_s(o.text) or 0
            said = await b.device_call_after(seen, n + 5.0)
            s = await off_loop(api.state)
            check(f"{tag} no press after the pending text: the relay stays off, nothing waits",
                  s["relay"]["on"] is False and s["confirmation"] is None, (s["relay"], s["confirmation"]))
            check(f"{tag} the timeout after the answer reached the user and the dialogue "
                  f"(not confirmed, nothing done): {said!r}",
                  isinstance(said, str) and "not confirmed" in said.lower() and in_dialogue(b, said), said)
        closing_checks(b)
    finally:
        await b.stop()


async def late_answer_session(link, tag: str, hold: int) -> None:
    """--confirm --confirm-timeout 60 --ui --hold-answer 35 (above the backend's 30 s): the backend
    gives up at 30 s; the device's answer at 35 s carries id 1, which the backend then takes for an
    initialize result (and lists the tools again); a press after that still runs the call."""
    api = await ui_of(link)
    b = await opened(link, tag)
    try:
        lists = b.list_requests
        o = await b.model_call("self.relay.set", {"on": True})  # call id 1; nobody presses
        check(f"{tag} the backend gives up after {o.took:.1f} s and the user hears \"{o.text}\"",
              o.payload is None and o.text == NETWORK_PROBLEM and b.heard[-1:] == [NETWORK_PROBLEM], o)
        await asyncio.sleep(hold - CALL_TIMEOUT_S + 2)
        await off_loop(api.press)
        ok, s = await off_loop(api.state_until, lambda s: s["relay"]["on"] is True, 2)
        check(f"{tag} no late answer with a reused id after the backend gave up",
              not b.late and b.list_requests == lists,
              {"late": b.late[:1], "tools/list sent again": b.list_requests - lists,
               "a press after that switched the relay on": ok})
        b.late.clear()  # recorded above
        closing_checks(b)
    finally:
        await b.stop()


async def task_session(link, tag: str) -> None:
    """--fault slow --hold-answer 1: a move that outlasts the hold budget is answered as a task;
    its end reaches the user and the dialogue. The model can still ask the status tool."""
    b = await opened(link, tag)
    try:
        seen = len(b.device_calls())
        o = await b.model_call("self.motor.move_to", {"position": 150})
        heard = re.search(r"task-[0-9a-f]{16}", o.text)
        task_id = heard.group(0) if heard else None
        check(f"{tag} move_to 150 at quarter speed (~2.4 s), past the 1 s budget: the model gets what started, the "
              f"task id and the status tool: \"{o.text}\"",
              task_id is not None and task_id == (result_of(o.payload).get("structuredContent") or {}).get("task_id")
              and o.text == f"self.motor.move_to started as task {task_id} — scheduled, not done yet (commanded 150 "
                            "steps); for the outcome, call self.tasks.get_status with this task_id", o)
        said = await b.device_call_after(seen, 3.0)  # it ends ~1.4 s after the answer
        check(f"{tag} the task's end reached the user and the dialogue: {said!r}",
              outcome_sentence(said, "150 steps", "measured") and "150" in (said or "") and in_dialogue(b, said), said)

        o = await b.model_call("self.motor.move_to", {"position": 0})
        heard = re.search(r"task-[0-9a-f]{16}", o.text)
        task_id = heard.group(0) if heard else None
        status: dict = {}
        text, working = "", None
        for _ in range(60):
            if not task_id:
                break
            p = await b.model_call("self.tasks.get_status", {"task_id": task_id})
            status, text = result_of(p.payload).get("structuredContent") or {}, p.text
            if status.get("status") != "working":
                break
            working = working or text
            await asyncio.sleep(0.3)
        check(f"{tag} the model polls the status tool: while it moves, it gets \"{working}\"",
              isinstance(working, str) and working.startswith("self.motor.move_to working")
              and working.endswith(" — scheduled, not done yet (commanded 0 steps)"), working)
        check(f"{tag} ...and then the outcome with its evidence: \"{text}\"",
              status.get("status") == "completed"
              and text == "self.motor.move_to completed: 0 — measured: 0 steps (within ±2 steps)", text)
        closing_checks(b)
    finally:
        await b.stop()


# ---- 4b. An upgrade that comes up after the restart ----


def firmware_image(board: str, version: str, payload: int) -> bytes:
    """A simulated firmware image (as tests/interop/python_ota.py builds one): `MCPFW1`, the
    board's and the version's length-prefixed names, then the payload."""
    b, v = board.encode(), version.encode()
    return b"MCPFW1" + bytes([len(b)]) + b + bytes([len(v)]) + v + bytes(i % 251 for i in range(payload))


async def ota_session(link, tag: str) -> None:
    """--flash F --confirm --ui, on the stdio envelope (device-sim restarts in place, keeping its
    pipes, as a device reconnects): the model upgrades the firmware, a person confirms on the
    device, the model sends the pieces; the task's end (verified, read back) is heard; after the
    restart (a new hello, initialize, listing) the new firmware is on trial until it answers a tool
    call, and then the backend hears that it came up (measured), in the user's ears and the
    model's dialogue."""
    api = await ui_of(link)
    b = await opened(link, tag, speech_s_per_char=0.04)
    try:
        img = firmware_image("device-sim", "5.4.3", 2500)
        sha = hashlib.sha256(img).hexdigest()
        start = asyncio.create_task(b.model_call("self.upgrade_firmware", {"size": len(img), "sha256": sha}))
        ok, s = await off_loop(api.state_until,
                               lambda s: (s.get("confirmation") or {}).get("tool") == "self.upgrade_firmware")
        check(f"{tag} the upgrade waits for a person: the device shows its question", ok, s.get("confirmation"))
        await off_loop(api.press)
        o = await asyncio.wait_for(start, 10)
        check(f"{tag} confirmed on the device, the upgrade starts as a task: \"{o.text}\"",
              o.to_model and "started as task" in o.text and "scheduled" in o.text, o)
        seen = len(b.device_calls())
        for at in range(0, len(img), 1024):
            piece = base64.b64encode(img[at:at + 1024]).decode()
            p = await b.model_call("self.firmware.write", {"offset": at, "data": piece})
            if not p.to_model:
                check(f"{tag} the piece at {at} is taken", False, p)
                return
        said = await b.device_call_after(seen, 10.0)
        check(f"{tag} the upgrade's task ended after its answer, and that reached the user "
              f"and the dialogue: {said!r}",
              outcome_sentence(said, f"{len(img)} bytes", "read back") and in_dialogue(b, said), said)
        # The device restarts 1 s after the verified image: a new hello, initialize and listing.
        # The new image is on trial until it answered a tool call (the trial is
        # visible to a client); that answer confirms it, and then the backend hears it came up.
        def hellos() -> int:
            return sum(1 for _, m in b.received if isinstance(m, str) and '"hello"' in m)
        before = hellos()
        deadline = asyncio.get_running_loop().time() + 30.0
        while hellos() == before and asyncio.get_running_loop().time() < deadline:
            await asyncio.sleep(0.05)
        check(f"{tag} the device restarted: a new hello", hellos() > before, hellos())
        # The sentence was spoken to its end before the restart (at a real
        # speech's pace it takes seconds; the device waits for the backend's `tts` `stop`).
        said_at = next((t for t, text in reversed(b.detects) if "completed" in str(text)), None)
        spoken = next(((s0, e) for s0, e in b.speech if said_at is not None and s0 >= said_at - 0.05), None)
        restart = next((t for t, m in b.received if isinstance(m, str) and '"hello"' in m and t > (said_at or 0)), None)
        check(f"{tag} the \"completed\" sentence was spoken to its end before the restart "
              f"(speech {spoken}, new hello at {restart})",
              spoken is not None and restart is not None and spoken[1] <= restart and not b.interrupted,
              (b.speech, restart, b.interrupted))
        await b.until_ready()
        seen = len(b.device_calls())
        o = await b.model_call("self.firmware.status", {})
        check(f"{tag} the model's first status call after the restart sees the trial: \"{o.text}\"",
              o.to_model and o.text.startswith("Firmware 5.4.3 is running on trial"), o)
        said = await b.device_call_after(seen, 10.0)
        check(f"{tag} once the new firmware answered, the backend heard that it came up, "
              f"measured: {said!r}",
              isinstance(said, str) and "5.4.3 came up" in said and "measured" in said
              and len(said) <= 300 and in_dialogue(b, said), said)
        o = await b.model_call("self.firmware.status", {})
        check(f"{tag} the model's next status call agrees: \"{o.text}\"",
              o.to_model and o.text.startswith("Firmware 5.4.3 is running: it came up"), o)
        # (A restart is a new connection in reality; here the same backend saw a second initialize
        # answer with id 1, which it counts as late.)
        b.late = [p for p in b.late if not (p.get("id") == 1 and "protocolVersion" in (p.get("result") or {}))]
        closing_checks(b)
    finally:
        await b.stop()


# ---- 5. The device speaks first ----


async def new_event(b: Backend, after: int, timeout: float) -> str | None:
    deadline = b.loop.time() + timeout
    while True:
        events = b.events()
        if len(events) > after:
            return events[after][1]
        if b.loop.time() >= deadline:
            return None
        await asyncio.sleep(0.05)


async def speak_first_session(link, tag: str) -> None:
    """--speak-first --confirm --ui --extra-tools 1: a press with nothing waiting is a doorbell, a hot
    reading an event; each starts a model turn, rate-limited; none carries a wire string."""
    api = await ui_of(link)
    b = await opened(link, tag)
    try:
        await b.model_call(FILLERS[0], {"level": 1, "label": UNTRUSTED})  # a wire string the device keeps
        b.plans.append([("call", "self.get_device_status", {}), ("say", f"Someone is at the door ({UNTRUSTED}).")])
        seen = len(b.events())
        await off_loop(api.press)
        text = await new_event(b, seen, 3.0)
        for _ in range(20):  # the turn starts in a task of its own
            if text is None or text in b.turns:
                break
            await asyncio.sleep(0.05)
        check(f"{tag} a press with nothing waiting sends a detect text that starts a turn: {text!r}",
              isinstance(text, str) and ("button" in text.lower() or "doorbell" in text.lower()) and len(text) <= 200
              and text in b.turns, text)
        # What the backend shows the user of it is the text with punctuation trimmed off its ends
        # (the stt frame): it must still read as the text does, not "event] the doorbell …".
        shown = trim_punctuation(text) if isinstance(text, str) else ""
        check(f"{tag} the event reads well where it is shown: {shown!r}",
              isinstance(text, str) and shown[:1].isalpha() and text.startswith(shown) and "]" not in shown, shown)
        # Wait for the turn's own tool result and words: after the turn's user message (a tool
        # result of an earlier call may still be among the last messages when the turn starts).
        def turn_so_far() -> list[dict]:
            user_at = max((i for i, m in enumerate(b.dialogue) if m.get("role") == "user"), default=None)
            return b.dialogue[user_at:] if user_at is not None else []

        deadline = b.loop.time() + TIMEOUT
        while b.loop.time() < deadline and not any(m.get("role") == "assistant" and "door" in str(m.get("content"))
                                                    for m in turn_so_far()):
            await asyncio.sleep(0.05)
        after = turn_so_far()
        check(f"{tag} ...and the model's turn called a tool (self.get_device_status) and spoke",
              text is not None and any(m.get("role") == "tool" for m in after)
              and any(m.get("role") == "assistant" and "door" in str(m.get("content")) for m in after),
              after)
        seen = len(b.events())
        await off_loop(api.sensor, temperature=50)
        text = await new_event(b, seen, 3.0)
        check(f"{tag} a temperature over the threshold (50 °C) starts a turn: {text!r}",
              isinstance(text, str) and "temperature" in text.lower(), text)
        await off_loop(api.sensor, temperature=21.5)
        await asyncio.sleep(1.0)
        seen = len(b.events())
        t0 = b.loop.time()
        for i in range(50):
            await off_loop(api.press)
            await asyncio.sleep(max(0.0, t0 + (i + 1) * 0.04 - b.loop.time()))
        took = b.loop.time() - t0
        await asyncio.sleep(3.0)
        burst = [t for _, t in b.events()[seen:]]
        check(f"{tag} 50 presses in {took:.1f} s start at most 2 turns (rate-limited, coalesced): "
              f"{len(burst)}", len(burst) <= 2, burst[:3])
        # (Not in the first 0.1 s of a turn: the device may have sent it before our tts start came.)
        during = [t for at, t in b.events() if any(s + 0.1 < at < e for s, e in b.speech)]
        check(f"{tag} no device turn arrived while the backend was speaking", not during, during[:3])
        o = await b.model_call("self.get_device_status", {})
        check(f"{tag} the device still serves calls after the burst", o.to_model, o)
        closing_checks(b)
    finally:
        await b.stop()


# ---- Start-up refusals ----


def start_refusal(transport: str, *args: str) -> tuple[bool, str]:
    """Starts device-sim with `args` (on the stdio envelope, or --xiaozhi-ws at a port nobody
    serves): (True, its message) when it exits at once with an error, (False, …) when it runs."""
    if transport == "stdio":
        cmd = [DEVICE_SIM, "--envelope", "xiaozhi", *args]
    else:
        with __import__("socket").socket() as s:
            s.bind(("127.0.0.1", 0))
            port = s.getsockname()[1]
        cmd = [DEVICE_SIM, "--xiaozhi-ws", f"ws://127.0.0.1:{port}/xiaozhi/v1/", *args]
    p = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    timer = threading.Timer(5, p.kill)
    timer.start()
    try:
        if transport == "stdio":
            assert p.stdout is not None
            if p.stdout.readline():  # its hello: it runs
                p.kill()
                p.communicate()
                return False, "it started"
        else:
            try:
                p.wait(1.5)
            except subprocess.TimeoutExpired:
                p.kill()
                p.communicate()
                return False, "it started"
    finally:
        timer.cancel()
    _, err = p.communicate()
    return p.returncode != 0, " ".join(err.split())[:300]  # on one line


# ---- The sessions, per transport ----

#: What a xiaozhi device sends in its WebSocket handshake; xinnan's backend identifies (and, with
#: auth on, admits) devices by these, and turns away a connection without a device id.
WS_HEADERS = {
    "Authorization": "Bearer test-token",
    "Protocol-Version": "1",
    "Device-Id": "d0:ef:76:00:00:01",
    "Client-Id": "5f0e7c1a-interop",
}
UI = ["--ui", "127.0.0.1:0"]


async def run_one(link_type, tag: str, args: list[str], fn, *fn_args) -> Any:
    """One device-sim, one session; a failure to start or an exception is one failed check."""
    started = time.monotonic()
    try:
        async with link_type(*args) as link:
            try:
                await fn(link, tag, *fn_args)
            except Exception as e:
                check(f"{tag} the session ran to the end", False, repr(e))
        return link
    except Exception as e:
        check(f"{tag} device-sim started and connected", False, repr(e))
        return None
    finally:
        print(f"# {tag}: {time.monotonic() - started:.1f} s", flush=True)


async def run(transport: str) -> list[Awaitable]:
    """The sessions on one transport; returns the slow ones (none unless SLOW), to run later."""
    link_type = StdioLink if transport == "stdio" else WsLink
    tag = f"[xiaozhi, {link_type.name}]"
    headers = [a for k, v in WS_HEADERS.items() for a in ("--ws-header", f"{k}: {v}")] if transport == "ws" else []

    link = await run_one(link_type, tag, [*PAGING, *headers], session)
    if link is not None:
        check(f"{tag} device-sim exits 0 when the backend ends the connection", link.exit_code == 0,
              (link.exit_code, link.stderr[-3:]))
        check(f"{tag} the device logged the vision endpoint it was given",
              any(VISION["url"] in line for line in link.stderr), link.stderr[-5:])
        if transport == "ws":
            check(f"{tag} the device connected to the URL's path", link.request_path == WsLink.path, link.request_path)
            sent = {k.lower(): v for k, v in WS_HEADERS.items()}
            check(f"{tag} the handshake carried the device's headers (--ws-header)",
                  all(link.request_headers.get(k) == v for k, v in sent.items()), link.request_headers)

    await run_one(link_type, tag + "[faults codec-nack, queue-full, door open]",
                  ["--fault", "codec-nack", "--fault", "queue-full", "--door-open", *headers], refused_session)
    await run_one(link_type, tag + "[faults readback-mismatch, relay-stuck, motor-stall]",
                  ["--fault", "readback-mismatch", "--fault", "relay-stuck", "--fault", "motor-stall", *headers],
                  measured_failures_session)
    await run_one(link_type, tag + f"[--confirm --confirm-timeout {CONFIRM_TIMEOUT_S}]",
                  ["--confirm", "--confirm-timeout", str(CONFIRM_TIMEOUT_S), *UI, *headers], confirm_session)
    await run_one(link_type, tag + "[--confirm --hold-answer 0]",
                  ["--confirm", "--hold-answer", "0", *UI, *headers], after_answer_session)
    await run_one(link_type, tag + "[--confirm --hold-answer 0 --door-open, the backend speaking]",
                  ["--confirm", "--hold-answer", "0", "--door-open", "--press-after-ms", "0", *UI, *headers],
                  outcome_while_speaking_session)
    short = ["--confirm", "--hold-answer", "2", "--confirm-timeout", "4"]
    refused, why = await asyncio.to_thread(start_refusal, "stdio", *short, *UI)
    if refused:
        check(f"{tag}[{' '.join(short)}] device-sim refuses a hold budget that leaves the person "
              f"no time, with a message: {why!r}", bool(why), why)
    else:
        await run_one(link_type, tag + f"[{' '.join(short)}]", [*short, *UI, *headers], pending_text_session,
                      2, 4, False)
    await run_one(link_type, tag + "[--fault slow --hold-answer 1]",
                  ["--fault", "slow", "--hold-answer", "1", *headers], task_session)
    if transport == "stdio":
        flash = os.path.join(tempfile.mkdtemp(prefix="xiaozhi-ota-"), "flash.bin")
        await run_one(link_type, tag + "[--flash --confirm]", ["--flash", flash, "--confirm", *UI], ota_session)
    speak_first = ["--speak-first", "--confirm", "--extra-tools", "1", *UI]
    refused, why = await asyncio.to_thread(start_refusal, "stdio", *speak_first)
    if refused:
        check(f"{tag}[--speak-first] device-sim takes --speak-first "
              "(a press with nothing waiting is a doorbell, a hot reading an event)", False, why)
    else:
        await run_one(link_type, tag + "[--speak-first --confirm]", [*speak_first, *headers], speak_first_session)
    refused, why = await asyncio.to_thread(start_refusal, transport, "--hold-answer", "35")
    check(f"{tag} --hold-answer 35 (above the backend's 30 s) is refused at start with a clear "
          f"message: {why[:120]!r}", refused and "30" in why, why)

    if not SLOW:
        return []
    # The real values, across the 25/30 s boundary.
    slow: list[Awaitable] = [run_one(link_type, tag + "[slow: --confirm, defaults 25/30 s]",
                                     ["--confirm", *UI, *headers], pending_text_session,
                                     HOLD_DEFAULT_S, CONFIRM_DEFAULT_S, True)]
    if refused:
        check(f"{tag}[slow: --hold-answer 35] not run: device-sim refuses it (no late answer possible)", True)
    else:
        late = ["--confirm", "--confirm-timeout", "60", "--hold-answer", "35"]
        slow.append(run_one(link_type, tag + f"[slow: {' '.join(late)}]", [*late, *UI, *headers],
                            late_answer_session, 35))
    return slow


# ---- The link as xinnan's backend treats it ----
#
# A connection without a `Device-Id` header (nor `?device-id=`) gets one line of text and is
# closed (`core/websocket_server.py`); every message waits at most 1 s for the device's
# configuration (`_route_message`) and is dropped if it is not loaded by then — a device's hello,
# sent at once, included — and the bind prompt's stt and tts frames follow. Nothing re-sends the
# hello: a device that waits for the server's hello forever has no session until the idle close.

#: Short hello timeout and backoff steps for CI (the 10 s default and 1 s..30 s steps are
#: exercised by examples/device-sim/tests/links.rs and the unit tests of the rule).
HELLO_TIMEOUT_S = 3
BACKOFF = ("0.2", "1.6")


class _Conn:
    """One server-side connection as a `Backend`'s link."""

    def __init__(self, ws, accepted_at: float) -> None:
        self.ws = ws
        self.accepted_at = accepted_at

    async def send(self, text: str) -> None:
        await self.ws.send(text)

    async def send_audio(self, data: bytes) -> None:
        await self.ws.send(data)

    async def recv(self) -> str | bytes:
        from websockets.exceptions import ConnectionClosed

        try:
            return await self.ws.recv()
        except ConnectionClosed as e:
            raise EOFError(str(e)) from None


class XinnanLinkServer:
    """A WebSocket server on 127.0.0.1 that treats the link as xinnan's backend does: no
    `Device-Id`, a text line and close; the first connection's configuration loads slowly (longer
    than CONFIG_WAIT_S), so what comes in its first second is dropped, after waiting that second;
    later connections load at once. Each connection is recorded with its `Backend`."""

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
        conn: dict = {"at": loop.time(), "headers": {k.lower(): v for k, v in ws.request.headers.raw_items()},
                      "backend": None, "closed_at": None, "close": None}
        self.conns.append(conn)
        try:
            if "device-id" not in conn["headers"]:
                await ws.send(NO_DEVICE_ID)
                await ws.close()
                return
            slow_config = len([c for c in self.conns if "device-id" in c["headers"]]) == 1
            b = Backend(_Conn(ws, conn["at"]), "[link]", config_load_s=CONFIG_WAIT_S + 0.5 if slow_config else 0.0)
            conn["backend"] = b.start()
            ready = asyncio.create_task(b.ready.wait())
            closed = asyncio.create_task(b.closed.wait())
            done = asyncio.create_task(self.done.wait())
            try:
                await asyncio.wait({ready, closed}, return_when=asyncio.FIRST_COMPLETED)
                if b.ready.is_set() and self.session_ready and not self.session_ready.done():
                    self.session_ready.set_result((loop.time(), b))
                await asyncio.wait({closed, done}, return_when=asyncio.FIRST_COMPLETED)
            finally:
                for t in (ready, closed, done):
                    t.cancel()
                await b.stop()
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
    configuration, and waited 1 s for it), the bind prompt's stt/tts frames follow: the device
    gives up on the connection after its hello timeout, reconnects, and gets a session within 15 s."""
    headers = [a for name, value in WS_HEADERS.items() for a in ("--ws-header", f"{name}: {value}")]
    async with XinnanLinkServer(*headers, "--ws-hello-timeout", str(HELLO_TIMEOUT_S)) as link:
        try:
            done_at, b = await asyncio.wait_for(link.session_ready, 15)
        except asyncio.TimeoutError:
            done_at, b = None, None
        first = link.conns[0] if link.conns else {}
        fb: Backend | None = first.get("backend")
        t0 = first.get("at", 0.0)
        dropped = fb.dropped if fb else []
        check(f"{tag} the first connection's hello came within {CONFIG_WAIT_S:.0f} s of the accept, waited "
              f"{CONFIG_WAIT_S:.0f} s for the configuration and was dropped",
              len(dropped) == 1 and dropped[0][0] < CONFIG_WAIT_S and dropped[0][1] - dropped[0][0] >= CONFIG_WAIT_S - 0.05
              and isinstance(dropped[0][2], str) and '"hello"' in dropped[0][2] and fb is not None
              and fb.device_hello is None, dropped)
        prompt = [json.loads(t) for t in fb.sent] if fb else []
        check(f"{tag} ...then the bind prompt went out: stt with its text, tts start (nothing else on that connection)",
              prompt == [{"type": "stt", "text": trim_punctuation(BIND_PROMPT), "session_id": fb.session_id},
                         {"type": "tts", "state": "start", "session_id": fb.session_id}] if fb else False, prompt)
        closed_after = first["closed_at"] - t0 if first.get("closed_at") else None
        check(f"{tag} the device closed that connection itself after its {HELLO_TIMEOUT_S} s hello timeout "
              f"(after {'never' if closed_after is None else f'{closed_after:.1f} s'}, 1000 \"no hello\")",
              first.get("close") == (1000, "no hello") and closed_after is not None
              and HELLO_TIMEOUT_S - 0.2 <= closed_after < HELLO_TIMEOUT_S + 2, {k: first.get(k) for k in ("close", "error")})
        took = None if done_at is None else done_at - t0
        check(f"{tag} it reconnected, said hello again and got a session within 15 s "
              f"({'none' if took is None else f'{took:.1f} s'})",
              took is not None and took < 15 and len(link.conns) == 2, [(c["at"] - t0, c["close"]) for c in link.conns])
        order = [json.loads(t).get("type") + ":" + str((json.loads(t).get("payload") or {}).get("method", ""))
                 for t in b.sent[:3]] if b else []
        check(f"{tag} ...in the real order: the backend's hello, initialize, and after its result tools/list, answered",
              b is not None and order == ["hello:", "mcp:initialize", "mcp:tools/list"]
              and (b.init_result or {}).get("protocolVersion") == "2024-11-05" and len(b.tools) > 0
              and not b.bad_session, order)


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
    for run_one_link in (dropped_hello_session, missing_device_id_session):
        try:
            await run_one_link(tag)
        except Exception as e:
            check(f"{tag} {run_one_link.__name__} ran to the end", False, repr(e))


def has_ws_option() -> bool:
    out = subprocess.run([DEVICE_SIM, "--help"], capture_output=True, text=True, timeout=30).stdout
    return "--xiaozhi-ws" in out


async def main(transports: list[str]) -> None:
    slow: list[Awaitable] = []
    for t in transports:
        if t == "ws" and not has_ws_option():
            check("[xiaozhi, websocket] device-sim has a --xiaozhi-ws option", False, "not in device-sim --help")
            continue
        slow += await run(t)
        if t == "ws":
            await link_sessions()
    # The slow sessions mostly wait: all at once.
    await asyncio.gather(*slow)


if __name__ == "__main__":
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--transport", choices=["stdio", "ws", "both"], default="both")
    ap.add_argument("--slow", action="store_true", help="also the sessions that cross the 25/30 s boundary "
                    "(as XIAOZHI_SLOW=1)")
    a = ap.parse_args()
    SLOW = SLOW or a.slow
    try:
        asyncio.run(main(["stdio", "ws"] if a.transport == "both" else [a.transport]))
    except BaseException as e:
        import traceback

        traceback.print_exc()
        check("the client ran to the end", False, repr(e))
    finish("xiaozhi-style client" + (" (slow)" if SLOW else ""))
