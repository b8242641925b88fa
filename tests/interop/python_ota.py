#!/usr/bin/env python3
"""Firmware upgrades over MCP: device-sim --http --flash FILE driven by the official MCP Python SDK
(`mcp==2.3.0`), unmodified, as a person's client (`--principal user`).

1. `self.firmware.status` names the factory firmware (`boot: normal`), matching `serverInfo`.
2. An image built here (header for board `device-sim`, version 5.4.3, 20 KB) goes up as
   `self.upgrade_firmware` (answered at once, `scheduled`, with a task id) and `self.firmware.write`
   pieces of 1 KiB (base64); the task, followed with `self.tasks.get_status`, ends `completed`
   with `read_back` evidence (the slot's contents, hashed on the device).
3. The device restarts for real (the process replaces itself): the SDK's session is gone, a new
   `Client` connects, `serverInfo.version` is 5.4.3, and the first status sees it on trial
   (`measured`: the handshake does not confirm it), the next `upgraded` — the new version answered
   a tool call and kept itself.
4. A piece at the wrong offset, a piece that is not base64 and another client's piece are refused
   with a message and change nothing; a new upgrade replaces one still receiving (whose task fails,
   abandoned); a wrong hash fails the task (`read_back`) and no restart happens.
5. An image for another board (hashed right) fails its task before any restart (its header is
   checked first); the same session goes on, 5.4.3 still runs.
"""

from __future__ import annotations

import base64
import hashlib
import os
import tempfile
import time
from contextlib import asynccontextmanager
from typing import Any

import anyio

from harness import SimProcess, check, finish, free_port
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client

TIMEOUT = 20.0


def image(board: str, version: str, payload: int) -> bytes:
    """A simulated firmware image: `MCPFW1`, the board's and the version's length-prefixed names."""
    b, v = board.encode(), version.encode()
    return b"MCPFW1" + bytes([len(b)]) + b + bytes([len(v)]) + v + bytes(i % 251 for i in range(payload))


def dump(r: Any) -> dict:
    """The result as JSON, as the SDK's model keeps it (its `_meta`, with the evidence as data,
    but no member it does not know): the evidence is read in the first text and a task's status."""
    return r.model_dump(mode="json", by_alias=True, exclude_none=True)


@asynccontextmanager
async def session(url: str, after_restart: bool = False):
    """A session; `after_restart`: first waits out the restart the upgrade armed (1 s after its
    task ended), then retries while the new process comes up."""
    if after_restart:
        await anyio.sleep(1.5)
    deadline = time.monotonic() + TIMEOUT
    while True:
        try:
            async with Client(streamable_http_client(url), mode="legacy", read_timeout_seconds=TIMEOUT) as c:
                yield c
                return
        except OSError:
            if time.monotonic() > deadline:
                raise
            await anyio.sleep(0.2)


async def status(c: Client) -> dict:
    return dump(await c.call_tool("self.firmware.status", {}))


async def upgrade(c: Client, img: bytes, sha: str, tag: str) -> dict:
    started = dump(await c.call_tool("self.upgrade_firmware", {"size": len(img), "sha256": sha}))
    check(f"{tag} self.upgrade_firmware answers at once: scheduled, with a task",
          "scheduled, not done yet" in started["content"][0]["text"] and not started["isError"], started)
    task = started["structuredContent"]["task_id"]
    for at in range(0, len(img), 1024):
        r = dump(await c.call_tool("self.firmware.write",
                                   {"offset": at, "data": base64.b64encode(img[at:at + 1024]).decode()}))
        if r["isError"]:
            check(f"{tag} piece at {at} accepted", False, r)
    for _ in range(200):
        s = dump(await c.call_tool("self.tasks.get_status", {"task_id": task}))
        if s["structuredContent"]["status"] != "working":
            return s["structuredContent"]
        await anyio.sleep(0.05)
    raise RuntimeError("the upgrade's task did not end")


async def first_upgrade(url: str, tag: str) -> None:
    """Steps 1, 2 and 4's refusals, on the factory firmware."""
    async with session(url) as c:
        version = c.server_info.version
        s = await status(c)
        check(f"{tag} the factory firmware runs", s["structuredContent"] == {"running": version, "boot": "normal"},
              (version, s))
        img = image("device-sim", "5.4.3", 20_000)
        sha = hashlib.sha256(img).hexdigest()
        started = dump(await c.call_tool("self.upgrade_firmware", {"size": len(img), "sha256": sha}))
        check(f"{tag} self.upgrade_firmware answers at once: scheduled, with a task",
              "scheduled, not done yet" in started["content"][0]["text"] and not started["isError"], started)
        task = started["structuredContent"]["task_id"]
        bad = dump(await c.call_tool("self.firmware.write", {"offset": 1024, "data": "AAAA"}))
        check(f"{tag} a piece at the wrong offset is refused, nothing written",
              bad["isError"] and "starts at byte 0, not 1024" in bad["content"][0]["text"], bad)
        bad = dump(await c.call_tool("self.firmware.write", {"offset": 0, "data": "not base64!"}))
        check(f"{tag} a piece that is not base64 is refused", bad["isError"], bad)
        s = await status(c)
        check(f"{tag} the upgrade is receiving, 0 bytes in",
              s["structuredContent"].get("upgrade", {}).get("received") == 0, s)
        first = dump(await c.call_tool("self.firmware.write",
                                       {"offset": 0, "data": base64.b64encode(img[:1024]).decode()}))
        check(f"{tag} the first piece is taken", not first["isError"], first)
        async with session(url) as other:
            theirs = dump(await other.call_tool("self.firmware.write",
                                                {"offset": 1024, "data": base64.b64encode(img[1024:2048]).decode()}))
            check(f"{tag} another client's piece is refused, at the right offset too",
                  theirs["isError"] and "belongs to another client" in theirs["content"][0]["text"], theirs)
        # Starting over replaces the upgrade that is receiving; its task fails as abandoned.
        replaced = task
        started = dump(await c.call_tool("self.upgrade_firmware", {"size": len(img), "sha256": sha}))
        task = started["structuredContent"]["task_id"]
        old = dump(await c.call_tool("self.tasks.get_status", {"task_id": replaced}))["structuredContent"]
        for _ in range(100):
            if old["status"] != "working":
                break
            await anyio.sleep(0.05)
            old = dump(await c.call_tool("self.tasks.get_status", {"task_id": replaced}))["structuredContent"]
        check(f"{tag} a new upgrade replaces the one receiving: that task fails, abandoned",
              old["status"] == "failed" and "abandoned" in old.get("error", ""), old)
        for at in range(0, len(img), 1024):
            await c.call_tool("self.firmware.write",
                              {"offset": at, "data": base64.b64encode(img[at:at + 1024]).decode()})
        for _ in range(200):
            t = dump(await c.call_tool("self.tasks.get_status", {"task_id": task}))["structuredContent"]
            if t["status"] != "working":
                break
            await anyio.sleep(0.05)
        check(f"{tag} the image is verified on the device: completed, read_back",
              t["status"] == "completed" and t["evidence"]["level"] == "read_back", t)


async def main() -> None:
    port = free_port()
    flash = os.path.join(tempfile.mkdtemp(prefix="python-ota-"), "flash.bin")
    with SimProcess("--http", f"127.0.0.1:{port}", "--principal", "user", "--flash", flash) as sim:
        url = sim.url
        assert url is not None
        tag = "[python sdk, ota]"
        with anyio.fail_after(120):
            await first_upgrade(url, tag)
            async with session(url, after_restart=True) as c:
                version = c.server_info.version
                check(f"{tag} after the restart serverInfo.version is the new firmware's", version == "5.4.3", version)
                s = await status(c)
                check(f"{tag} the first status sees the trial, measured (the handshake did not confirm it)",
                      s["structuredContent"]["boot"] == "trial" and s["structuredContent"]["running"] == "5.4.3"
                      and s["content"][0]["text"].endswith(" — measured"), s)
                s = await status(c)
                check(f"{tag} the status: upgraded, measured (the new version answered a tool call)",
                      s["structuredContent"]["boot"] == "upgraded"
                      and s["content"][0]["text"].endswith(" — measured"), s)
                check(f"{tag} the first text says it, for a client that reads only that",
                      s["content"][0]["text"].startswith("Firmware 5.4.3 is running: it came up after the upgrade"), s)

                other = image("device-sim", "5.5.0", 3000)
                t = await upgrade(c, other, hashlib.sha256(b"something else").hexdigest(), f"{tag} wrong hash:")
                check(f"{tag} a wrong hash fails the task with read_back evidence",
                      t["status"] == "failed" and t["evidence"]["level"] == "read_back", t)
                await anyio.sleep(1.5)
                s = await status(c)
                check(f"{tag} ... and nothing restarted", s["structuredContent"]["running"] == "5.4.3", s)

                foreign = image("esp32-s3", "6.0.0", 500)
                t = await upgrade(c, foreign, hashlib.sha256(foreign).hexdigest(), f"{tag} foreign image:")
                check(f"{tag} an image for another board fails its task before any restart",
                      t["status"] == "failed" and t["evidence"]["level"] == "read_back"
                      and "built for another board" in t.get("error", ""), t)
                await anyio.sleep(1.5)
                s = await status(c)
                check(f"{tag} ... the same session goes on, 5.4.3 runs, upgraded",
                      s["structuredContent"]["running"] == "5.4.3" and s["structuredContent"]["boot"] == "upgraded", s)
    finish("python sdk, firmware upgrade over MCP")


if __name__ == "__main__":
    anyio.run(main)
