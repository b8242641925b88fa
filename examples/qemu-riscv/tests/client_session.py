#!/usr/bin/env python3
"""The qemu-riscv firmware, driven by the official MCP Python SDK (mcp==2.3.0), unmodified.

The server command is `examples/qemu-riscv/run`: QEMU itself, with the firmware's UART on its
stdin/stdout. Nothing sits in between. Sessions:

1. model, `mode="legacy"` and `mode="auto"` (the SDK probes `server/discover`, gets -32601 and
   falls back to `initialize`): every `tools/list` page, calls with evidence, validation errors
   as the negotiated revision says, a user-only tool refused, a motor task followed to its
   measured end.
2. user (`run --principal user`): the diagnostics tool (stack and heap measured by the firmware
   itself, printed for CI), then `self.reboot`, which really resets the emulated machine.
3. model with faults (`run --fault codec-clamp --door-open`): the evidence tells the truth.
4. user, firmware upgrades over MCP: an image built here sent in pieces with
   `self.firmware.write`, the task followed with `self.tasks.get_status` to its `read_back`
   verdict, the real reset into the new version (`self.firmware.status` measured: on trial until
   its first tool call, then upgraded); an image for another board refused before any reset; a
   wrong sha256 refused with read_back evidence and no reset.
5. raw JSON lines at revision 2024-11-05 (xiaozhi's), where a validation error is a -32602
   JSON-RPC error; `withUserTools` lists the user-only tools to whoever asks (xiaozhi's backend
   asks to show them to a person), and the model's call of one is still refused.

Prints one line per check and `N passed, M failed`; exits non-zero on any failure.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

import anyio
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.shared.exceptions import MCPError

RUN = str(Path(__file__).resolve().parent.parent / "run")
# `--async` (or QEMU_RISCV_ASYNC=1): the same sessions against the build that serves its tools with
# Server::handle_async and the async kits.
ASYNC = "--async" in sys.argv[1:] or os.environ.get("QEMU_RISCV_ASYNC") == "1"
RUN_ARGS = ["--async"] if ASYNC else []



def board_tools() -> list[dict]:
    """The demo board's tools, as device-sim (the same table, mcp-hal `DemoBoard::TABLE`) lists
    them with `--list-tools`: not a copy of the table that would go stale when a row is added."""
    repo = Path(__file__).resolve().parents[3]
    out = subprocess.run(["cargo", "run", "-q", "-p", "device-sim", "--", "--list-tools"], cwd=repo,
                         check=True, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    return json.loads(out.stdout)["tools"]


_BOARD = board_tools()
# The board's tools that a model sees; self.reboot and this firmware's diagnostics are user-only.
# The firmware also registers the demo board's three firmware-upgrade tools: the status for all,
# the upgrade and its pieces for the user only.
MODEL_TOOLS = {t["name"] for t in _BOARD if t["audience"] == "model"} | {"self.firmware.status"}
USER_TOOLS = {t["name"] for t in _BOARD if t["audience"] == "user"} | {
    "self.device.get_diagnostics", "self.upgrade_firmware", "self.firmware.write"}
ALL_TOOLS = len(MODEL_TOOLS | USER_TOOLS)

# The targets (bytes): docs/FOOTPRINT.md's. The async build keeps the handler's future on the
# dispatch stack too (a minimal executor polls it in place; embassy keeps it in task RAM): its
# budget is 5 KiB, and docs/FOOTPRINT.md states both figures.
DISPATCH_STACK_TARGET = (5 if ASYNC else 3) * 1024
HEAP_TARGET = 8 * 1024

passed = 0
failed = 0
diagnostics: dict = {}


def check(name: str, ok: bool, detail: object = "") -> bool:
    global passed, failed
    if ok:
        passed += 1
        print(f"ok   - {name}")
    else:
        failed += 1
        print(f"FAIL - {name}: {detail}")
    return ok


def texts(result) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def params(*args: str) -> StdioServerParameters:
    return StdioServerParameters(command=RUN, args=[*RUN_ARGS, *args])


async def list_all(client: Client) -> tuple[list[str], int]:
    names: list[str] = []
    pages = 0
    cursor = None
    while True:
        page = await client.list_tools(cursor=cursor, cache_mode="bypass") if cursor else await client.list_tools()
        pages += 1
        names += [t.name for t in page.tools]
        cursor = page.next_cursor
        if not cursor or pages > 20:
            return names, pages


async def model_session(mode: str) -> None:
    tag = f"[model, mode={mode}]"
    async with Client(params(), mode=mode, read_timeout_seconds=20) as c:
        revision = c.protocol_version
        check(f"{tag} initialized, revision {revision}", c.server_info.name == "qemu-riscv", c.server_info)

        names, pages = await list_all(c)
        check(f"{tag} tools/list: {len(names)} tools over {pages} pages", pages >= 2, pages)
        check(f"{tag} tools/list is complete, no duplicates", sorted(names) == sorted(MODEL_TOOLS), names)

        r = await c.call_tool("self.audio_speaker.set_volume", {"volume": 40})
        check(
            f"{tag} set_volume 40: read_back evidence",
            not r.is_error and r.structured_content == {"value": True}
            and "true — read back: 40" in texts(r),
            r,
        )

        # A string is not an integer: refused before the handler, as the revision says.
        if revision >= "2025-11-25":
            r = await c.call_tool("self.audio_speaker.set_volume", {"volume": "loud"})
            check(
                f"{tag} validation error is a tool result with isError (>= 2025-11-25)",
                r.is_error and '"volume"' in texts(r) and "integer" in texts(r),
                r,
            )
            r = await c.call_tool("self.audio_speaker.set_volume", {"volume": 50.5})
            check(f"{tag} 50.5 is not an integer", r.is_error and "50.5" in texts(r), r)
            r = await c.call_tool("self.audio_speaker.set_volume", {"volume": 40, "loud": True})
            check(f"{tag} unknown argument refused", r.is_error and "loud" in texts(r), r)
        else:
            try:
                await c.call_tool("self.audio_speaker.set_volume", {"volume": "loud"})
                check(f"{tag} validation error is -32602 (< 2025-11-25)", False, "no error")
            except MCPError as e:
                check(f"{tag} validation error is -32602 (< 2025-11-25)", e.error.code == -32602, e.error)

        r = await c.call_tool("self.get_device_status", {})
        s = r.structured_content or {}
        check(
            f"{tag} get_device_status reads the volume back",
            not r.is_error and s.get("audio_speaker") == {"volume": 40} and "screen" in s,
            r,
        )

        r = await c.call_tool("self.relay.set", {"on": True})
        check(
            f"{tag} relay on: measured by its feedback contact",
            not r.is_error and "true — measured: true" in texts(r),
            r,
        )

        try:
            r = await c.call_tool("self.reboot", {})
            check(f"{tag} the model may not reboot", False, r)
        except MCPError as e:
            check(f"{tag} the model may not reboot (user-only): {e.error.code}", "user" in e.error.message, e.error)

        try:
            await c.call_tool("self.no_such_tool", {})
            check(f"{tag} unknown tool is a JSON-RPC error", False, "no error")
        except MCPError as e:
            check(f"{tag} unknown tool is a JSON-RPC error ({e.error.code})", e.error.code < 0, e.error)

        # A long-running move. A client that declared `tasks` gets a task at once, then follows it
        # to the encoder's measurement; one that did not (what the session negotiated says which)
        # gets the call's answer held back until the move ends (Config::hold_answer_ms), and the
        # answer is the encoder's measurement.
        r = await c.call_tool("self.motor.move_to", {"position": 600})
        task_id = (r.structured_content or {}).get("task_id")
        if task_id is None:
            check(f"{tag} move_to (a client that follows no task): the answer waits for the move, measured 600 "
                  "by the encoder",
                  (r.structured_content or {}).get("value") == 600
                  and "measured: 600 steps" in texts(r), r)
        else:
            check(f"{tag} move_to answers at once with a task, evidence scheduled", "scheduled" in texts(r), r)
            status = {}
            deadline = time.monotonic() + 15
            while time.monotonic() < deadline:
                r = await c.call_tool("self.tasks.get_status", {"task_id": task_id})
                status = r.structured_content or {}
                if status.get("status") != "working":
                    break
                await anyio.sleep(0.5)
            check(
                f"{tag} the move completes with measured evidence at 600",
                status.get("status") == "completed"
                and status.get("evidence", {}).get("level") == "measured"
                and status.get("evidence", {}).get("observed") == 600,
                status,
            )


async def user_session() -> None:
    tag = "[user]"
    async with Client(params("--principal", "user"), mode="legacy", read_timeout_seconds=20) as c:
        # Some traffic first, so that the figures cover real dispatches.
        await list_all(c)
        for v in (10, 20, 30):
            await c.call_tool("self.audio_speaker.set_volume", {"volume": v})
        await c.call_tool("self.screen.set_theme", {"theme": "dark"})
        # The camera streams its PNG into the answer: the figures below cover a capture, and a
        # refusal of a frame this firmware's answer buffer cannot hold.
        r = await c.call_tool("self.camera.capture", {"width": 8, "height": 8})
        images = [b for b in r.content if getattr(b, "type", None) == "image"]
        check(
            f"{tag} camera 8x8: the first text says the frame ({texts(r).splitlines()[0] if r.content else ''}), "
            "then a PNG image",
            not r.is_error and texts(r).startswith("captured frame 1 (8x8 PNG, 268 bytes)")
            and len(images) == 1 and images[0].mime_type == "image/png"
            and base64.b64decode(images[0].data).startswith(b"\x89PNG\r\n\x1a\n"),
            r,
        )
        # The schema admits what device-sim's buffer holds; this firmware's is smaller, so its
        # largest frame is refused with a size that fits.
        r = await c.call_tool("self.camera.capture", {"width": 31, "height": 31})
        check(f"{tag} camera 31x31 refused: {texts(r)}", r.is_error and "ask for at most" in texts(r), r)
        r = await c.call_tool("self.device.get_diagnostics", {})
        d = r.structured_content or {}
        diagnostics.update(d)
        stack, heap = d.get("stack", {}), d.get("heap", {})
        check(f"{tag} diagnostics tool answers the user", not r.is_error and stack and heap, r)
        check(
            f"{tag} peak stack of one dispatch {stack.get('handle_peak')} B <= {DISPATCH_STACK_TARGET} B",
            0 < stack.get("handle_peak", 0) <= DISPATCH_STACK_TARGET and not stack.get("exhausted"),
            stack,
        )
        check(
            f"{tag} heap high-water {heap.get('peak')} B <= {HEAP_TARGET} B",
            heap.get("peak", 1 << 30) <= HEAP_TARGET and heap.get("failures") == 0,
            heap,
        )
        messages, uptime = d.get("messages", 0), d.get("uptime_ms", 0)

        r = await c.call_tool("self.reboot", {})
        check(f"{tag} reboot: evidence scheduled, never done", not r.is_error and "scheduled" in texts(r), r)
        await anyio.sleep(2.0)
        # The machine was reset (QEMU restarts the image and the clock): a fresh firmware answers,
        # with no message handled before this one.
        r = await c.call_tool("self.device.get_diagnostics", {})
        after = r.structured_content or {}
        check(
            f"{tag} the device really restarted: messages handled {messages} -> {after.get('messages')}, "
            f"uptime {uptime} -> {after.get('uptime_ms')} ms",
            not r.is_error and messages >= 5 and after.get("messages") == 0,
            after,
        )


async def fault_session() -> None:
    tag = "[faults codec-clamp, door open]"
    async with Client(params("--fault", "codec-clamp", "--door-open"), mode="legacy", read_timeout_seconds=20) as c:
        r = await c.call_tool("self.audio_speaker.set_volume", {"volume": 80})
        check(
            f"{tag} a clamped codec fails the call with commanded and observed",
            r.is_error and "read back: 63 (commanded 80)" in texts(r),
            r,
        )
        r = await c.call_tool("self.relay.set", {"on": True})
        check(f"{tag} the interlock refuses and says why", r.is_error and "door-closed" in texts(r), r)
        r = await c.call_tool("self.relay.set", {"on": False})
        check(f"{tag} switching off is allowed", not r.is_error, r)


# mcp-hal's simulated firmware image (`mcp_hal::sim::write_image_header`): `MCPFW1`, one byte of
# length and the board's name, one byte of length and the version, then the payload.
# The firmware's built-in version: its Cargo.toml's (env!("CARGO_PKG_VERSION")).
FACTORY_VERSION = re.search(r'(?m)^version = "([^"]+)"',
                            (Path(__file__).resolve().parent.parent / "Cargo.toml").read_text()).group(1)
PIECE = 1024  # mcp_hal::kits::firmware::MAX_CHUNK: 1368 characters of base64 per piece


def image(board: str, version: str, payload: int) -> bytes:
    head = b"MCPFW1" + bytes([len(board)]) + board.encode() + bytes([len(version)]) + version.encode()
    return head + bytes((i * 7) % 251 for i in range(payload))


async def follow(c: Client, task_id: str, seconds: float = 30) -> dict:
    """Follows a task with the board's status tool until it is no longer working."""
    status: dict = {}
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        r = await c.call_tool("self.tasks.get_status", {"task_id": task_id})
        status = r.structured_content or {}
        if status.get("status") != "working":
            break
        await anyio.sleep(0.3)
    return status


async def upgrade(c: Client, tag: str, img: bytes, sha256: str) -> dict:
    """A plain call of self.upgrade_firmware (no task augmentation), the image in pieces, the task
    followed to its end; returns the task's final status. At least 3 + len(img) / PIECE messages."""
    r = await c.call_tool("self.upgrade_firmware", {"size": len(img), "sha256": sha256})
    task_id = (r.structured_content or {}).get("task_id")
    check(f"{tag} upgrade_firmware ({len(img)} B) answers at once: scheduled, task {task_id}",
          not r.is_error and task_id is not None and "scheduled" in texts(r), r)
    wrote = []
    for at in range(0, len(img), PIECE):
        piece = base64.b64encode(img[at:at + PIECE]).decode()
        w = await c.call_tool("self.firmware.write", {"offset": at, "data": piece})
        wrote.append((len(piece), not w.is_error and f"{min(at + PIECE, len(img))} of {len(img)} bytes received" in texts(w)))
        if not wrote[-1][1]:
            check(f"{tag} firmware.write at {at}", False, w)
            break
    check(f"{tag} {len(wrote)} pieces written (up to {max(n for n, _ in wrote)} base64 characters a call), "
          "each applied", all(ok for _, ok in wrote), wrote)
    return await follow(c, task_id) if task_id else {}


async def firmware_session() -> None:
    tag = "[user, firmware upgrades]"
    async with Client(params("--principal", "user"), mode="legacy", read_timeout_seconds=20) as c:
        async def status() -> object:
            return await c.call_tool("self.firmware.status", {})

        async def diagnostics() -> dict:
            return (await c.call_tool("self.device.get_diagnostics", {})).structured_content or {}

        # (The SDK may list the tools itself around a call: the message counts below only fall.)
        names, _ = await list_all(c)
        check(f"{tag} the user's tools/list has self.firmware.status", "self.firmware.status" in names, names)
        r = await status()
        check(f"{tag} status before: {texts(r)!r}",
              not r.is_error and r.structured_content == {"running": FACTORY_VERSION, "boot": "normal"}, r)

        # (b) An upgrade to 9.9.9: verified, then the real reset into it.
        # The messages handled before the reset, counted from here (nothing is sent once the
        # verdict is in: the reset comes 1 s after it).
        new = image("qemu-riscv", "9.9.9", 4000)
        at_least = (await diagnostics()).get("messages", 0) + 4 + len(new) // PIECE
        done = await upgrade(c, tag, new, hashlib.sha256(new).hexdigest())
        ev = done.get("evidence", {})
        check(f"{tag} the task completes with read_back evidence of all {len(new)} bytes",
              done.get("status") == "completed" and ev.get("level") == "read_back"
              and ev.get("commanded") == len(new) and ev.get("observed") == len(new), done)
        await anyio.sleep(2.5)
        r = await status()
        s = r.structured_content or {}
        check(f"{tag} after the reset 9.9.9 runs on trial (its first tool call sees it), measured: {texts(r)!r}",
              not r.is_error and s.get("running") == "9.9.9" and s.get("boot") == "trial"
              and s.get("previous") == FACTORY_VERSION and texts(r).endswith("measured"), r)
        after = await diagnostics()
        check(f"{tag} the machine really restarted: messages handled at least {at_least} -> "
              f"{after.get('messages')}", 0 < after.get("messages", 99) <= 3, after)
        r = await status()
        check(f"{tag} it answered a tool call, so it confirmed itself: {texts(r)!r}",
              not r.is_error and (r.structured_content or {}).get("boot") == "upgraded"
              and (r.structured_content or {}).get("running") == "9.9.9" and texts(r).endswith("measured"), r)

        # (c) An image for another board, hashed correctly: its header is checked before any
        # reset, so the task fails and the device does not restart.
        foreign = image("other-board", "7.7.7", 3000)
        done = await upgrade(c, tag, foreign, hashlib.sha256(foreign).hexdigest())
        check(f"{tag} another board's image fails its task before any reset: {done.get('error')!r}",
              done.get("status") == "failed" and done.get("evidence", {}).get("level") == "read_back"
              and "built for another board" in done.get("error", ""), done)
        before = await diagnostics()
        await anyio.sleep(2.5)
        after = await diagnostics()
        r = await status()
        check(f"{tag} ...no reset: messages handled {before.get('messages')} -> {after.get('messages')}, 9.9.9 runs",
              after.get("messages", 0) > before.get("messages", 0)
              and (r.structured_content or {}).get("running") == "9.9.9", (before, after, r))

        # (d) A wrong sha256: the task fails with the read-back evidence; no reset is armed.
        img = image("qemu-riscv", "8.8.8", 2500)
        wrong = hashlib.sha256(img + b"x").hexdigest()
        done = await upgrade(c, tag, img, wrong)
        ev = done.get("evidence", {})
        check(f"{tag} a wrong sha256 fails the task with read_back evidence: {done.get('error')!r}",
              done.get("status") == "failed" and ev.get("level") == "read_back"
              and ev.get("observed") == len(img) and "does not match" in done.get("error", ""), done)
        before = await diagnostics()
        await anyio.sleep(2.5)
        after = await diagnostics()
        r = await status()
        check(f"{tag} no reset: messages handled {before.get('messages')} -> {after.get('messages')}, "
              "9.9.9 still runs",
              after.get("messages", 0) > before.get("messages", 0)
              and (r.structured_content or {}).get("running") == "9.9.9", (before, after, r))
        # Since the last reset: an upgrade's calls, its pieces, and the slot read back and hashed.
        stack = after.get("stack", {})
        check(f"{tag} peak stack of one dispatch through an upgrade {stack.get('handle_peak')} B "
              f"<= {DISPATCH_STACK_TARGET} B (poll, hashing the slot: {stack.get('poll_peak')} B)",
              0 < stack.get("handle_peak", 0) <= DISPATCH_STACK_TARGET and not stack.get("exhausted"), stack)


def raw_lines(args: list[str], msgs: list[dict]) -> tuple[list[dict], list[str]]:
    """Sends `msgs` over plain JSON lines, then lists every page with `withUserTools: true`;
    returns the answers and the listed names."""
    proc = subprocess.Popen([RUN, *RUN_ARGS, *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL)
    assert proc.stdin and proc.stdout

    def ask(msg: dict) -> dict:
        proc.stdin.write((json.dumps(msg) + "\n").encode())
        proc.stdin.flush()
        return json.loads(proc.stdout.readline())

    try:
        answers = [ask(m) for m in msgs]
        names: list[str] = []
        cursor = None
        for i in range(20):
            params = {"withUserTools": True, **({"cursor": cursor} if cursor else {})}
            page = ask({"jsonrpc": "2.0", "id": 100 + i, "method": "tools/list", "params": params})["result"]
            names += [t["name"] for t in page["tools"]]
            cursor = page.get("nextCursor")
            if not cursor:
                break
    finally:
        proc.kill()
        proc.wait()
    return answers, names


def raw_session() -> None:
    """xiaozhi's revision over plain JSON lines: the other branch of validation reporting; and
    `withUserTools`, which lists the user-only tools to whoever asks; the model still cannot call
    them."""
    tag = "[raw lines, 2024-11-05]"
    init = {"jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2024-11-05", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}
    bad = {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
           "params": {"name": "self.audio_speaker.set_volume", "arguments": {"volume": "50"}}}
    reboot = {"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "self.reboot", "arguments": {}}}
    answers, model_names = raw_lines([], [init, bad, reboot])
    check(f"{tag} revision echoed", answers[0]["result"]["protocolVersion"] == "2024-11-05", answers[0])
    err = answers[1].get("error", {})
    check(f"{tag} \"50\" is not an integer: -32602", err.get("code") == -32602 and "volume" in err.get("message", ""), answers[1])
    check(f"{tag} withUserTools from the model: all {ALL_TOOLS} tools listed", sorted(model_names) == sorted(MODEL_TOOLS | USER_TOOLS), model_names)
    check(f"{tag} ...but the model's call of user-only self.reboot is refused (-32602)",
          answers[2].get("error", {}).get("code") == -32602, answers[2])
    _, user_names = raw_lines(["--principal", "user"], [init])
    check(f"{tag} withUserTools from a user: all {ALL_TOOLS} tools", sorted(user_names) == sorted(MODEL_TOOLS | USER_TOOLS), user_names)


async def main() -> None:
    for mode in ("legacy", "auto"):
        await model_session(mode)
    await user_session()
    await fault_session()
    await firmware_session()


if __name__ == "__main__":
    started = time.monotonic()
    try:
        anyio.run(main)
        raw_session()
    except Exception as e:  # a crash is a failure, not a traceback that hides the count
        check("session ran to the end", False, repr(e))
    if diagnostics:
        s, h, e = diagnostics.get("stack", {}), diagnostics.get("heap", {}), diagnostics.get("engine", {})
        print(
            f"firmware ({'async' if ASYNC else 'blocking'} build) measured itself: stack peak {s.get('peak')} of {s.get('size')} B, "
            f"one dispatch at most {s.get('handle_peak')} B, poll {s.get('poll_peak')} B; "
            f"heap high-water {h.get('peak')} of {h.get('size')} B in {h.get('allocations')} allocations; "
            f"Server {e.get('server')} B"
        )
    print(f"({time.monotonic() - started:.1f} s)")
    print(f"{passed} passed, {failed} failed")
    sys.exit(1 if failed or not passed else 0)
