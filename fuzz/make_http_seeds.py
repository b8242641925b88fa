#!/usr/bin/env python3
"""Builds fuzz/seeds/http/: realistic Streamable HTTP POSTs of both eras, in the input format of
fuzz/fuzz_targets/http.rs ([out][flags], header lines [name][case][0x80]value, 0xFF, body).
Header values are written raw (value byte 0x80), so the seeds do not depend on the target's
tables. Run from the repository root: python3 fuzz/make_http_seeds.py. Seeds are named by
content hash."""
import hashlib
import json
import os

NAMES = ["Host", "Origin", "Content-Type", "Accept", "MCP-Protocol-Version", "Mcp-Method",
         "Mcp-Name", "Mcp-Session-Id", "Last-Event-ID", "X-Unrelated"]
MODERN = "2026-07-28"
META = {"io.modelcontextprotocol/protocolVersion": MODERN,
        "io.modelcontextprotocol/clientCapabilities": {}}
BASE = [("Host", "127.0.0.1:8080"), ("Content-Type", "application/json"),
        ("Accept", "application/json, text/event-stream")]


def rpc(method, params=None, id=1):
    m = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        m["params"] = params
    return json.dumps(m, separators=(",", ":"), ensure_ascii=False).encode()


def modern(method, params=None, id=1):
    p = dict(params or {})
    p["_meta"] = META
    return rpc(method, p, id)


def seed(headers, body, out=0xFF, flags=0b0110, case=0):
    data = bytes([out, flags])
    for name, value in headers:
        data += bytes([NAMES.index(name), case, 0x80]) + value.encode() + b"\n"
    return data + b"\xff" + body


def mh(method, name=None, version=MODERN):
    h = BASE + [("MCP-Protocol-Version", version), ("Mcp-Method", method)]
    return h + ([("Mcp-Name", name)] if name is not None else [])


act = {"name": "t.act", "arguments": {"volume": 30, "theme": "dark"}}


def nested(depth):
    v = 1
    for _ in range(depth):
        v = {"a": v}
    return v


deep = {"name": "t.act", "arguments": nested(40)}
SEEDS = [
    # Legacy era: initialize, then requests in the session.
    seed(BASE, rpc("initialize", {"protocolVersion": "2025-11-25", "capabilities": {},
                                  "clientInfo": {"name": "c", "version": "1"}})),
    seed(BASE + [("MCP-Protocol-Version", "2025-11-25"), ("Mcp-Session-Id", "fuzz-session")],
         rpc("tools/list", {}, 2)),
    seed(BASE + [("Mcp-Session-Id", "fuzz-session")], rpc("tools/call", act, "a-1")),
    seed(BASE + [("Mcp-Session-Id", "other")], rpc("ping", None, 3)),
    seed(BASE + [("Mcp-Session-Id", "fuzz-session")],
         b'{"jsonrpc":"2.0","method":"notifications/initialized"}'),
    seed(BASE, rpc("tools/call", {"name": "t.task", "arguments": {"steps": 2}}, 9),
         flags=0b1111_0110),
    # 2026-07-28: headers that agree with the body.
    seed(mh("tools/list"), modern("tools/list", {}, 4), flags=0b1101_0110),
    seed(mh("tools/call", "t.act"), modern("tools/call", act, 5)),
    seed(mh("tools/call", "=?base64?dC5wbGFpbg==?="),
         modern("tools/call", {"name": "t.plain", "arguments": {}}, 6), case=0x55),
    seed(mh("server/discover"), modern("server/discover", None, 7)),
    seed(mh("resources/read", "file:///x"), modern("resources/read", {"uri": "file:///x"}, 8)),
    seed(mh("tasks/get", "t1"), modern("tasks/get", {"taskId": "t1"}, 10)),
    # 2026-07-28: headers that disagree, or a body without _meta.
    seed(mh("prompts/list"), modern("tools/list", {}, 11)),
    seed(mh("tools/call"), modern("tools/call", act, "\u00e9t\u00e9")),
    seed(mh("tools/call", "t.act", "2025-11-25"), modern("tools/call", act, 12)),
    seed(mh("tools/list"), rpc("tools/list", {}, 13)),
    # Refused before the engine.
    seed([("Host", "evil.example.com"), ("Origin", "http://evil.example.com")] + BASE[1:],
         rpc("tools/list", {}, 14)),
    seed(BASE + [("Origin", "http://lamp.local")], rpc("ping", None, 15), flags=0b0111),
    # The exact-origin rule: another local server's page is refused, the server's own served,
    # and an origin allowed by name (flag bit 0) served whatever the Host.
    seed([("Host", "localhost:8080"), ("Origin", "http://localhost:3000")] + BASE[1:],
         rpc("ping", None, 19)),
    seed(BASE + [("Origin", "http://127.0.0.1:8080")], rpc("ping", None, 20)),
    seed(BASE + [("Origin", "https://lamp.local")], rpc("ping", None, 21), flags=0b0111),
    seed([BASE[0], ("Content-Type", "text/plain"), BASE[2]], rpc("ping", None, 16), out=40),
    seed([BASE[0], BASE[1], ("Accept", "application/json")], rpc("ping", None, 17), out=100),
    seed(BASE, modern("tools/call", act, 18), flags=0b0000),
    # Nested deeper than the engine reads: -32700 with the id, in a session
    # and on the 2026-07-28 path; a notification that deep: nothing.
    seed(BASE + [("Mcp-Session-Id", "fuzz-session")], rpc("tools/call", deep, 22),
         flags=0b0000_0110),
    seed(mh("tools/call", "t.act"), modern("tools/call", deep, 23), flags=0b0000_0110),
    seed(BASE + [("Mcp-Session-Id", "fuzz-session")],
         b'{"jsonrpc":"2.0","method":"notifications/progress","params":'
         + json.dumps(nested(40), separators=(",", ":")).encode() + b"}", flags=0b0000_0110),
]

d = os.path.join("fuzz", "seeds", "http")
os.makedirs(d, exist_ok=True)
for s in SEEDS:
    with open(os.path.join(d, hashlib.sha1(s).hexdigest()[:16]), "wb") as f:
        f.write(s)
print(f"{len(SEEDS)} seeds in {d}")
