#!/usr/bin/env python3
"""Builds fuzz/seeds/<target>/ from the unit-test vectors.

Every raw string literal (r#"..."#) in the unit and integration tests below that is a JSON text
becomes a seed: JSON-RPC messages for the engine (alone, and in short sessions) and for the
xiaozhi envelope (wrapped in one), argument objects for the validator (with each preset spec).
Run from the repository root: python3 fuzz/make_seeds.py. Seeds are named by content hash, so
running it again adds nothing new.
"""
import hashlib
import json
import os
import re

SOURCES = [
    "mcp-core/src/server/test.rs",
    "mcp-core/src/server/test_tasks.rs",
    "mcp-core/src/wire/request.rs",
    "mcp-core/src/wire/json.rs",
    "mcp-core/src/schema/validate.rs",
    "mcp-core/src/transport/xiaozhi.rs",
    "mcp-core/tests/hostile.rs",
    "mcp-core/tests/no_alloc.rs",
    "examples/device-sim/tests/stdio.rs",
]
RAW = re.compile(r'r#"(.*?)"#', re.S)
SEP = b"\xff"


def literals():
    for path in SOURCES:
        if not os.path.exists(path):
            continue
        for m in RAW.finditer(open(path, encoding="utf-8").read()):
            text = m.group(1)
            if "{{" in text or "}}" in text:  # a format! template, not a message
                continue
            yield text.encode("utf-8")


def is_json(b):
    try:
        json.loads(b)
        return True
    except ValueError:
        return False


def write(target, data):
    d = os.path.join("fuzz", "seeds", target)
    os.makedirs(d, exist_ok=True)
    name = hashlib.sha1(data).hexdigest()[:16]
    with open(os.path.join(d, name), "wb") as f:
        f.write(data)


def call(i, tool, args, extra=""):
    return ('{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s%s}}'
            % (i, tool, args, extra)).encode()


INIT = {
    rev: ('{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"%s","capabilities":{}}}' % rev).encode()
    for rev in ["2024-11-05", "2025-06-18", "2025-11-25"]
}


def main():
    lits = list(dict.fromkeys(literals()))
    messages = [b for b in lits if b.lstrip().startswith((b"{", b"[")) and b"jsonrpc" in b]
    args = [b for b in lits if is_json(b) and len(b) < 400 and b"jsonrpc" not in b]
    # Validator: preset spec (mode byte < 0x80) + argument bytes.
    for a in args:
        for mode in range(8):
            write("validator", bytes([mode]) + a)
    # Engine: each message alone, with several buffer sizes and principals.
    for m in messages:
        for control in (0x03, 0xF2, 0x01, 0x0C):
            write("engine", bytes([control]) + m)
    # Engine: the validator's argument vectors as tools/call to the tool with the same parameters.
    for i, a in enumerate(args):
        if a.lstrip().startswith(b"{"):
            write("engine", bytes([0x03]) + call(i, "t.act", a.decode()))
            write("engine", bytes([0x03]) + INIT["2025-11-25"] + SEP + call(i, "t.act", a.decode()))
    # Engine: sessions that reach state (revisions, the cache, tasks, parked results, paging).
    sessions = [
        [INIT["2024-11-05"], call(1, "t.act", '{"volume":40}'), call(1, "t.act", '{"volume":40}')],
        [INIT["2025-11-25"], call(2, "t.act", '{"volume":"40"}'), call(3, "t.act", '{"volume":1,"volume":2}')],
        [call('"a"', "t.task", '{"steps":3}', ',"task":{"ttl":1000},"_meta":{"progressToken":"p"}'),
         b'{"jsonrpc":"2.0","id":"r","method":"tasks/result","params":{"taskId":"task-1"}}',
         b'{"jsonrpc":"2.0","id":"g","method":"tasks/get","params":{"taskId":"task-1"}}',
         b'{"jsonrpc":"2.0","id":"l","method":"tasks/list"}'],
        [call(1, "t.task", '{"steps":2}'), call(2, "self.tasks.get_status", '{"task_id":"task-1"}'),
         b'{"jsonrpc":"2.0","id":3,"method":"tasks/cancel","params":{"taskId":"task-1"}}'],
        [call(1, "t.task", '{"steps":3}', ',"task":{}'), call(2, "t.task", '{"steps":3}', ',"task":{}'),
         call(3, "t.task", '{"steps":3}', ',"task":{}')],
        [b'{"jsonrpc":"2.0","id":2,"method":"tools/list"}',
         b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"withUserTools":true}}',
         b'{"jsonrpc":"2.0","id":2,"method":"tools/list","params":{"cursor":"00010000"}}'],
        [call(1, "t.big", '{"n":3000}'), call(1, "t.big", '{"n":3000}'), call(2, "t.big", '{"n":10}')],
        [b'{"jsonrpc":"2.0","id":1,"method":"prompts/list"}',
         b'{"jsonrpc":"2.0","id":2,"method":"prompts/get","params":{"name":"p.check","arguments":{"part":"r\\u00e9","mood":"\\"x"}}}',
         b'{"jsonrpc":"2.0","id":3,"method":"prompts/get","params":{"name":"p.check","arguments":{"part":"a","part":"b"}}}',
         b'{"jsonrpc":"2.0","id":4,"method":"completion/complete","params":{"ref":{"type":"ref/prompt","name":"p.check"},"argument":{"name":"part","value":"R"}}}',
         b'{"jsonrpc":"2.0","id":5,"method":"prompts/get","params":{"name":"p.intro","arguments":null}}'],
        [call(1, "t.user", "{}"), call(2, "t.read", '{"k":-5}'), call(2, "t.read", '{"k":-6}'),
         call(3, "t.plain", "null"), call(4, "t.plain", "[]")],
    ]
    for s in sessions:
        for control in (0x03, 0xF3, 0x00, 0x0E):
            write("engine", bytes([control]) + SEP.join(s))
    # xiaozhi: envelopes from the transport tests, and every JSON-RPC object wrapped in one.
    for m in lits:
        if b'"type"' in m and is_json(m):
            write("xiaozhi", b"\x03" + m)
    for m in messages:
        if m.lstrip().startswith(b"{") and is_json(m):
            write("xiaozhi", b"\x03" + b'{"session_id":"s\\u00e9","type":"mcp","payload":' + m + b"}")
            write("xiaozhi", b"\x00" + b'{"type":"mcp","payload":' + m + b',"type":"mcp"}')


if __name__ == "__main__":
    main()
