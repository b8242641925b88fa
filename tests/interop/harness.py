"""Shared bits of the Python interop clients: the device-sim binary, the expected tools, checks.

Every check prints one line (`ok   - ...` or `FAIL - ...: detail`); `finish()` prints the count
and exits non-zero on any failure (or when nothing was checked at all).
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any, Callable

REPO = Path(__file__).resolve().parents[2]

#: The simulator binary (.ci/interop.sh builds it once and passes its path).
DEVICE_SIM = os.environ.get("DEVICE_SIM") or str(REPO / "target" / "debug" / "device-sim")

#: Arguments that make tools/list page: 40 fillers of about 300 bytes, 4000-byte pages.
EXTRA_TOOLS = 40
PAGE_BYTES = 4000
PAGING = ["--extra-tools", str(EXTRA_TOOLS), "--page-bytes", str(PAGE_BYTES)]


def _board_tools() -> list[dict]:
    """The tools device-sim serves, in listing order, as it says itself (`--list-tools`: the demo
    board's table, mcp-hal `DemoBoard::TABLE`), not a copy of it."""
    out = subprocess.run([DEVICE_SIM, "--list-tools"], check=True, capture_output=True, text=True, timeout=60)
    return json.loads(out.stdout)["tools"]


_BOARD = _board_tools()
#: Every tool of device-sim's own, in listing order (what `withUserTools: true` lists).
BOARD_TOOLS = [t["name"] for t in _BOARD]
#: device-sim's own tools that a model sees, in listing order.
MODEL_TOOLS = [t["name"] for t in _BOARD if t["audience"] == "model"]
FILLERS = [f"self.extra.filler_{i:03}" for i in range(1, EXTRA_TOOLS + 1)]
#: The complete model listing with the paging arguments, in order.
EXPECTED_LISTING = MODEL_TOOLS + FILLERS

#: The device's live resources (examples/device-sim/src/sensors.rs) and what they read at start.
TEMPERATURE = "device://sensors/temperature"
BATTERY = "device://sensors/battery"
BUTTON = "device://buttons/main"
LIVE_RESOURCES = [TEMPERATURE, BATTERY, BUTTON]
#: The question `self.relay.set` asks before it switches on (mcp-hal relay::CONFIRM_ON).
RELAY_QUESTION = "Switch the relay-controlled load on?"


def asks_relay(text: Any) -> bool:
    """The relay's question as a device asks it: the question, then which client asks
    (`… (asked by NAME #TAG)`) where the call came with a session; just the question on the
    stateless 2026-07-28 wire."""
    return isinstance(text, str) and (text == RELAY_QUESTION or text.startswith(RELAY_QUESTION + " (asked by "))

_passed = 0
_failed = 0
_started = time.monotonic()


def schema_arguments(schema: dict) -> dict[str, Any]:
    """The plainest arguments a tool's inputSchema admits: each required property at its minimum,
    its first allowed value, `false` or an empty string. For a tool of the board's table that a
    client has no case of its own for (one just added)."""
    args: dict[str, Any] = {}
    for name in schema.get("required", []):
        prop = schema.get("properties", {}).get(name, {})
        if "enum" in prop:
            args[name] = prop["enum"][0]
        elif prop.get("type") in ("integer", "number"):
            args[name] = prop.get("minimum", 0)
        elif prop.get("type") == "boolean":
            args[name] = False
        else:
            args[name] = "x" * prop.get("minLength", 0)
    return args


def check(name: str, ok: object, detail: object = "") -> bool:
    """Records one assertion; never raises."""
    global _passed, _failed
    if ok:
        _passed += 1
        print(f"ok   - {name}", flush=True)
    else:
        _failed += 1
        text = repr(detail)
        if len(text) > 1500:
            text = text[:1500] + "..."
        print(f"FAIL - {name}: {text}", flush=True)
    return bool(ok)


def finish(title: str) -> None:
    """Prints the summary line and exits with the verdict."""
    took = time.monotonic() - _started
    print(f"{title}: {_passed} passed, {_failed} failed ({took:.1f} s)", flush=True)
    sys.exit(1 if _failed or not _passed else 0)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class SimApi:
    """device-sim's `--ui` JSON API (GET /sim/state, POST /sim/button, POST /sim/sensor): the
    person next to the device. Blocking (urllib); async callers run it in a thread."""

    def __init__(self, addr: str) -> None:
        self.addr = addr  # host:port

    def request(self, method: str, path: str, body: dict | None = None) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        headers = {"Content-Type": "application/json"} if body is not None else {}
        req = urllib.request.Request(f"http://{self.addr}{path}", data=data, method=method, headers=headers)
        try:
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read() or b"null")
        except urllib.error.HTTPError as e:
            return e.code, json.loads(e.read() or b"null")

    def state(self) -> dict:
        status, v = self.request("GET", "/sim/state")
        if status != 200:
            raise RuntimeError(f"GET /sim/state: {status} {v}")
        return v

    def sensor(self, **values: float) -> dict:
        """Moves the sensors (`temperature=31.5`, `battery=20`); returns what they read now."""
        status, v = self.request("POST", "/sim/sensor", values)
        if status != 200:
            raise RuntimeError(f"POST /sim/sensor {values}: {status} {v}")
        return v

    def press(self) -> dict:
        """A press, once the question the device shows may be answered: a press counts only for
        a question shown for a second, and not within a second of the last press."""
        self.state_until(lambda s: (s.get("confirmation") or {}).get("press_counts_in_ms") in (None, 0))
        status, v = self.request("POST", "/sim/button")
        if status != 200:
            raise RuntimeError(f"POST /sim/button: {status} {v}")
        return v

    def wait_ready(self, timeout: float = 15.0) -> None:
        deadline = time.monotonic() + timeout
        while True:
            try:
                self.state()
                return
            except (OSError, RuntimeError):
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def state_until(self, ok: Callable[[dict], bool], timeout: float = 5.0) -> tuple[bool, dict]:
        """Polls the state until `ok` holds; returns whether it did, and the last state."""
        deadline = time.monotonic() + timeout
        while True:
            s = self.state()
            if ok(s) or time.monotonic() > deadline:
                return ok(s), s
            time.sleep(0.02)


def timeline(state: dict, kind: str, after: int = 0) -> list[dict]:
    """The timeline entries of `kind` with a seq above `after`."""
    return [e for e in state.get("timeline", []) if e.get("kind") == kind and e.get("seq", 0) > after]


class SimProcess:
    """`device-sim --ui 127.0.0.1:0 ARGS` (with `--http 127.0.0.1:0` when asked): waits until it
    says where it serves, then drains its stderr into `self.stderr`."""

    def __init__(self, *args: str) -> None:
        self.args = ["--ui", "127.0.0.1:0", *args]
        self.stderr: list[str] = []
        self.ui: SimApi | None = None
        self.url: str | None = None

    def __enter__(self) -> "SimProcess":
        self.proc = subprocess.Popen([DEVICE_SIM, *self.args], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True)
        wants_http = "--http" in self.args
        deadline = time.monotonic() + 15
        assert self.proc.stderr is not None
        while self.ui is None or (wants_http and self.url is None):
            line = self.proc.stderr.readline()
            if not line or time.monotonic() > deadline:
                self.proc.kill()
                raise RuntimeError(f"device-sim {' '.join(self.args)} did not start: {self.stderr[-5:]}")
            line = line.rstrip()
            self.stderr.append(line)
            if line.startswith("device-sim: UI at http://"):
                self.ui = SimApi(line.removeprefix("device-sim: UI at http://").rstrip("/"))
            if line.startswith("device-sim: serving MCP (Streamable HTTP) at "):
                self.url = line.removeprefix("device-sim: serving MCP (Streamable HTTP) at ")
        threading.Thread(target=self._drain, daemon=True).start()
        return self

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in self.proc.stderr:
            self.stderr.append(line.rstrip())

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
