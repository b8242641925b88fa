#!/usr/bin/env python3
"""Builds the named regression seeds fuzz/seeds/<target>/regression-serde-magic-*.

serde_json reads an object whose first key is `$serde_json::private::Number` (feature
`arbitrary_precision`) or `$serde_json::private::RawValue` (feature `raw_value`) as a number or a
raw value when it deserializes a `serde_json::Value`. For the engine these are ordinary objects
with ordinary keys, and so they must be for the oracles (fuzz/src/lib.rs, `J`). The seeds put
such objects everywhere the oracles look: as the whole message or envelope, as `params`,
`arguments`, an argument's value, the xiaozhi `type`/`session_id`/`payload`, an HTTP body; with
the key plain, spelled with `\\u` escapes, duplicated, after another key, with string, number,
object and invalid values.

Run from the repository root: python3 fuzz/make_regression_seeds.py. The names say what each
seed is (`<where>-<key>-<spelling or value>`); running it again rewrites the same files.
"""
import json
import os

NUMBER = "$serde_json::private::Number"
RAW = "$serde_json::private::RawValue"
# Spellings of each key as it appears inside the quotes: plain, first character escaped,
# a middle character escaped, every character escaped.
def spellings(key):
    return {
        "plain": key,
        "esc-dollar": "\\u0024" + key[1:],
        "esc-middle": key.replace("private", "pr\\u0069vate"),
        "esc-all": "".join("\\u%04x" % ord(c) for c in key),
    }


KEYS = {"number": NUMBER, "rawvalue": RAW}
# Values that serde_json's magic paths read differently (or refuse) after the key.
VALUES = {
    "str-int": '"1"',
    "str-bad": '"x"',
    "int": "1",
    "obj": "{}",
    "str-obj": '"{\\"volume\\":1}"',
}


def objects():
    """(name, JSON object text) pairs carrying the magic keys."""
    for kname, key in KEYS.items():
        for sname, spelled in spellings(key).items():
            yield f"{kname}-{sname}", '{"%s":"1"}' % spelled
        for vname, v in VALUES.items():
            yield f"{kname}-val-{vname}", '{"%s":%s}' % (key, v)
        yield f"{kname}-duplicate", '{"%s":"1","%s":"2"}' % (key, key)
        yield f"{kname}-esc-duplicate", '{"%s":"1","\\u0024%s":"2"}' % (key, key[1:])
        yield f"{kname}-second-key", '{"a":1,"%s":"1"}' % key
        yield f"{kname}-nested", '{"%s":{"%s":"1"}}' % (key, key)
    yield "number-and-rawvalue", '{"%s":"1","%s":"[]"}' % (NUMBER, RAW)


def write(target, name, data):
    d = os.path.join("fuzz", "seeds", target)
    os.makedirs(d, exist_ok=True)
    with open(os.path.join(d, "regression-serde-magic-" + name), "wb") as f:
        f.write(data)
    return 1


def call(args, id=1, tool="t.act"):
    return '{"jsonrpc":"2.0","id":%s,"method":"tools/call","params":{"name":"%s","arguments":%s}}' % (
        id, tool, args)


def http(body):
    """An HTTP seed (fuzz_targets/http.rs format): 9000-byte buffer, body limit 65536,
    a loopback Host, JSON content, an Accept allowing both, then the body."""
    names = ["Host", "Content-Type", "Accept"]
    values = ["127.0.0.1:8080", "application/json", "application/json, text/event-stream"]
    table = ["Host", "Origin", "Content-Type", "Accept"]
    data = bytes([0xFF, 0b0110])
    for n, v in zip(names, values):
        data += bytes([table.index(n), 0, 0x80]) + v.encode() + b"\n"
    return data + b"\xff" + body.encode()


CORE = {"number-plain", "number-esc-dollar", "number-val-int", "number-duplicate",
        "rawvalue-plain", "rawvalue-esc-dollar", "rawvalue-val-str-obj", "rawvalue-nested",
        "number-and-rawvalue"}


def main():
    n = 0
    objs = list(objects())
    # Every variant where each target first looks; the core ones (CORE) everywhere else.
    for name, o in objs:
        n += write("validator", f"args-{name}", b"\x06" + o.encode())
        n += write("engine", f"message-{name}", b"\x03" + o.encode())
        n += write("xiaozhi", f"payload-{name}", b"\x03" + ('{"type":"mcp","payload":%s}' % o).encode())
        n += write("http", f"body-{name}", http(o))
    for name, o in objs:
        if name not in CORE:
            continue
        # validator: preset 6 (all optional: any i64, x f64, s string, task_id) and preset 0.
        n += write("validator", f"args-preset0-{name}", b"\x00" + o.encode())
        for param in ("any", "x", "s"):
            n += write("validator", f"value-{param}-{name}", b"\x06" + ('{"%s":%s}' % (param, o)).encode())
        n += write("validator", f"value-in-array-{name}", b"\x06" + ('{"s":[%s]}' % o).encode())
        # engine: params, arguments, an argument's value, the id.
        n += write("engine", f"params-{name}",
                   b"\x03" + ('{"jsonrpc":"2.0","id":1,"method":"tools/list","params":%s}' % o).encode())
        n += write("engine", f"arguments-{name}", b"\x03" + call(o).encode())
        n += write("engine", f"argument-value-{name}", b"\x03" + call('{"volume":%s}' % o).encode())
        n += write("engine", f"id-{name}", b"\x03" + ('{"jsonrpc":"2.0","id":%s,"method":"ping"}' % o).encode())
        # xiaozhi: the envelope, its type and session_id, and a call inside the payload.
        n += write("xiaozhi", f"envelope-{name}", b"\x03" + o.encode())
        n += write("xiaozhi", f"type-{name}", b"\x03" + ('{"type":%s,"payload":{}}' % o).encode())
        n += write("xiaozhi", f"session-{name}",
                   b"\x03" + ('{"session_id":%s,"type":"mcp","payload":{"jsonrpc":"2.0","id":1,"method":"ping"}}' % o).encode())
        n += write("xiaozhi", f"arguments-{name}",
                   b"\x03" + ('{"session_id":"s","type":"mcp","payload":%s}' % call(o)).encode())
        # http: a call's arguments, and the _meta of a 2026-07-28 request.
        n += write("http", f"arguments-{name}", http(call(o)))
        n += write("http", f"meta-{name}", http(
            '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{"_meta":%s}}' % o))
    # Messages that are something else entirely when read through the magic keys.
    ping = '{"jsonrpc":"2.0","id":1,"method":"ping"}'
    wrapped = '{"%s":%s}' % (RAW, json.dumps(ping))
    n += write("engine", "rawvalue-wraps-a-ping", b"\x03" + wrapped.encode())
    n += write("http", "rawvalue-wraps-a-ping", http(wrapped))
    env = '{"type":"mcp","payload":%s}' % ping
    n += write("xiaozhi", "rawvalue-wraps-an-envelope", b"\x03" + ('{"%s":%s}' % (RAW, json.dumps(env))).encode())
    n += write("validator", "rawvalue-wraps-valid-arguments",
               b"\x00" + ('{"%s":%s}' % (RAW, json.dumps('{"volume":1}'))).encode())
    print(f"{n} seeds")


if __name__ == "__main__":
    main()
