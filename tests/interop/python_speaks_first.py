"""The device speaks first, driven by the official MCP Python SDK (`mcp==2.3.0`), unmodified; called
from python_sdk.py (its sessions count in the same tally).

device-sim runs with `--confirm` and `--ui` (its JSON API plays the person next to the device:
`POST /sim/sensor` moves the thermometer and the battery, `GET /sim/state` shows the relay).

1. `Client(..., mode="legacy")` (2025-11-25) over Streamable HTTP and over stdio:
   `resources/list`, `resources/read`, `resources/subscribe` to the temperature, a sensor move, the
   `notifications/resources/updated` through the SDK's `message_handler`, a read of the new value;
   unsubscribed, a move brings nothing more (while a subscribed battery still does). `self.relay.set`
   with `on: true` asks through the SDK's `elicitation_callback` (`elicitation/create`, form mode, one
   boolean): accept(true) switches the relay on (measured), decline, accept(false), cancel and a
   callback error leave it off and say why; switching off asks nothing.
2. `Client(..., mode="auto")` over Streamable HTTP and over stdio, on 2026-07-28: the reads say `ttlMs: 0` so the
   SDK's response cache never serves a stale reading; `Client.listen` (`subscriptions/listen`):
   acknowledged, the update arrives as a `ResourceUpdated` event (and through `message_handler`,
   tagged with the stream's id), leaving the block ends the stream on the device, a move after that
   brings nothing. The confirmed tool through the SDK's input_required (MRTR) driver: the first
   round is an `InputRequiredResult` (nothing ran), a tampered `requestState` is refused, then accept /
   decline / cancel as above; a client without elicitation is told it needs it (-32021).
"""

from __future__ import annotations

import json
import time
import warnings
from typing import Any

import anyio
import anyio.to_thread

from harness import (
    BATTERY,
    DEVICE_SIM,
    LIVE_RESOURCES,
    RELAY_QUESTION,
    asks_relay,
    TEMPERATURE,
    SimApi,
    SimProcess,
    check,
    free_port,
    timeline,
)
from mcp import types
from mcp.client.client import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.subscriptions import ResourceUpdated
from mcp.shared.exceptions import MCPDeprecationWarning, MCPError

TIMEOUT = 20.0
RELAY = "self.relay.set"

# resources/subscribe is the 2025 wire's way, and the device's; the SDK warns that 2026-07-28 drops it.
warnings.simplefilter("ignore", MCPDeprecationWarning)


class Updates:
    """The SDK's `message_handler`: keeps every `notifications/resources/updated`."""

    def __init__(self) -> None:
        self.seen: list[types.ResourceUpdatedNotification] = []
        self.other: list[Any] = []

    async def __call__(self, message: Any) -> None:
        if isinstance(message, types.ResourceUpdatedNotification):
            self.seen.append(message)
        else:
            self.other.append(message)

    def uris(self, after: int = 0) -> list[str]:
        return [m.params.uri for m in self.seen[after:]]

    async def wait(self, uri: str, after: int, timeout: float = 5.0) -> types.ResourceUpdatedNotification | None:
        with anyio.move_on_after(timeout):
            while True:
                for m in self.seen[after:]:
                    if m.params.uri == uri:
                        return m
                await anyio.sleep(0.02)
        return None


class Person:
    """The SDK's `elicitation_callback`: answers as told, and remembers what it was asked."""

    def __init__(self) -> None:
        self.answer = "accept"
        self.asked: list[Any] = []

    async def __call__(self, context: Any, params: Any) -> types.ElicitResult | types.ErrorData:
        self.asked.append(params)
        if self.answer == "accept":
            return types.ElicitResult(action="accept", content={"confirm": True})
        if self.answer == "accept-false":
            return types.ElicitResult(action="accept", content={"confirm": False})
        if self.answer == "error":
            return types.ErrorData(code=types.INTERNAL_ERROR, message="the dialog could not be shown")
        return types.ElicitResult(action=self.answer)


def texts(result: types.CallToolResult) -> str:
    return "\n".join(getattr(c, "text", "") for c in result.content)


def reading(result: types.ReadResourceResult) -> Any:
    try:
        return json.loads(result.contents[0].text)  # type: ignore[union-attr]
    except (IndexError, AttributeError, ValueError):
        return None


async def api(fn: Any, *args: Any, **kwargs: Any) -> Any:
    """A blocking `SimApi` call, off the event loop."""
    return await anyio.to_thread.run_sync(lambda: fn(*args, **kwargs))


async def relay_on(sim: SimApi) -> bool:
    return (await api(sim.state))["relay"]["on"]


def question_ok(params: Any) -> bool:
    """`elicitation/create` form mode, the relay's question, one required boolean `confirm`."""
    schema = getattr(params, "requested_schema", None) or {}
    return (
        getattr(params, "mode", None) == "form"
        and asks_relay(getattr(params, "message", None))
        and schema.get("type") == "object"
        and (schema.get("properties") or {}).get("confirm", {}).get("type") == "boolean"
        and schema.get("required") == ["confirm"]
    )


async def check_resources_listed(c: Client, tag: str) -> None:
    listed = await c.list_resources()
    uris = [r.uri for r in listed.resources]
    check(f"{tag} resources/list: the three live resources, application/json",
          uris == LIVE_RESOURCES and all(r.mime_type == "application/json" for r in listed.resources), listed)


async def refusals(c: Client, sim: SimApi, person: Person, tag: str) -> None:
    """Every answer but a yes: nothing runs, the result says why (isError, no structuredContent).

    A callback that fails (returns `ErrorData`) is answered to the device as an error on 2025-11-25
    (which the device takes as a cancel); on 2026-07-28 the SDK's input_required driver raises it
    to the caller instead and never retries the call."""
    modern = c.protocol_version == "2026-07-28"
    cases = [
        ("decline", "declined"),
        ("accept-false", "declined"),
        ("cancel", "dismissed the question"),
        ("error", "dismissed the question"),
    ]
    for answer, words in cases:
        person.answer = answer
        asked = len(person.asked)
        try:
            r = await c.call_tool(RELAY, {"on": True})
        except MCPError as e:
            on = await relay_on(sim)
            check(f"{tag} the person answers {answer}: " + (
                "the SDK raises the callback's error, the call is not retried, nothing ran (relay off)"
                if answer == "error" and modern else "a result, not an error"),
                answer == "error" and modern and e.code == types.INTERNAL_ERROR
                and "could not be shown" in e.error.message and len(person.asked) == asked + 1 and on is False,
                (e.error, on))
            continue
        on = await relay_on(sim)
        check(f"{tag} the person answers {answer}: asked once, nothing ran (relay off), the result says "
              f"\"{words}\"",
              len(person.asked) == asked + 1 and r.is_error and words in texts(r)
              and "nothing was done" in texts(r) and r.structured_content is None and on is False,
              (texts(r), r.is_error, on, len(person.asked) - asked))


# --- 2025-11-25: resources/subscribe, elicitation/create -------------------------------------------


async def legacy_session(transport: str) -> None:
    tag = f"[python sdk, {transport}, legacy, --confirm]"
    updates, person = Updates(), Person()
    if transport == "http":
        with SimProcess("--http", "127.0.0.1:0", "--confirm") as sim:
            assert sim.ui and sim.url
            async with Client(sim.url, mode="legacy", message_handler=updates, elicitation_callback=person,
                              read_timeout_seconds=TIMEOUT) as c:
                await legacy_checks(c, sim.ui, updates, person, tag)
    else:
        ui = SimApi(f"127.0.0.1:{free_port()}")
        server = StdioServerParameters(command=DEVICE_SIM, args=["--stdio", "--confirm", "--ui", ui.addr])
        async with Client(server, mode="legacy", message_handler=updates, elicitation_callback=person,
                          read_timeout_seconds=TIMEOUT) as c:
            await api(ui.wait_ready)
            await legacy_checks(c, ui, updates, person, tag)


async def legacy_checks(c: Client, sim: SimApi, updates: Updates, person: Person, tag: str) -> None:
    caps = c.server_capabilities.resources
    check(f"{tag} negotiated 2025-11-25; resources capability with subscribe",
          c.protocol_version == "2025-11-25" and caps is not None and caps.subscribe is True,
          (c.protocol_version, caps))
    await check_resources_listed(c, tag)

    start = (await api(sim.state))["sensors"]["temperature"]
    r = await c.read_resource(TEMPERATURE)
    check(f"{tag} resources/read: the thermometer now ({start} °C, as the device shows it)",
          reading(r) == {"celsius": start}, r)

    await c.subscribe_resource(TEMPERATURE)
    mark = len(updates.seen)
    moved = await api(sim.sensor, temperature=31.5)
    check(f"{tag} POST /sim/sensor moves the thermometer to 31.5 °C", moved["sensors"]["temperature"] == 31.5, moved)
    t0 = time.monotonic()
    note = await updates.wait(TEMPERATURE, mark)
    check(f"{tag} subscribed: notifications/resources/updated for the temperature reaches the message handler "
          f"({time.monotonic() - t0:.2f} s)", note is not None, updates.uris(mark))
    r = await c.read_resource(TEMPERATURE)
    check(f"{tag} the read after the update: 31.5 °C", reading(r) == {"celsius": 31.5}, r)

    # Unsubscribed from the temperature, subscribed to the battery: one move of both brings the
    # battery's update only (the battery proves updates still flow; the wait outlasts the
    # temperature's 1 s minimum interval).
    await c.subscribe_resource(BATTERY)
    await c.unsubscribe_resource(TEMPERATURE)
    mark = len(updates.seen)
    await api(sim.sensor, temperature=36.0, battery=20)
    battery = await updates.wait(BATTERY, mark, timeout=7.0)
    await anyio.sleep(1.5)
    check(f"{tag} unsubscribed: another move brings no temperature update (the subscribed battery's does)",
          battery is not None and TEMPERATURE not in updates.uris(mark), updates.uris(mark))
    r = await c.read_resource(TEMPERATURE)
    b = await c.read_resource(BATTERY)
    check(f"{tag} ...though the thermometer did move: it reads 36.0 °C, the battery 20 %",
          reading(r) == {"celsius": 36.0} and reading(b) == {"percent": 20}, (r, b))

    # The confirmed tool: the client's user is asked through elicitation/create.
    check(f"{tag} the relay starts off", await relay_on(sim) is False)
    person.answer = "accept"
    r = await c.call_tool(RELAY, {"on": True})
    on = await relay_on(sim)
    check(f"{tag} self.relay.set on: the person is asked (form mode, the relay's question, one boolean)",
          len(person.asked) == 1 and question_ok(person.asked[0]), person.asked)
    check(f"{tag} accept(true): the relay switched on, measured by its feedback contact",
          not r.is_error and r.structured_content == {"value": True}
          and "measured: true" in texts(r) and on is True, (r, on))
    asked = len(person.asked)
    r = await c.call_tool(RELAY, {"on": False})
    check(f"{tag} switching off asks nothing and runs", not r.is_error and len(person.asked) == asked
          and await relay_on(sim) is False, (r, len(person.asked) - asked))
    await refusals(c, sim, person, tag)

    s = await api(sim.state)
    decided = [e["confirmed"] for e in timeline(s, "call") if e["tool"] == RELAY and e["confirmed"] is not None]
    check(f"{tag} the device's timeline: one yes, then four refusals", decided == [True, False, False, False, False],
          timeline(s, "call"))
    check(f"{tag} nothing else arrived but resource updates", not updates.other, updates.other[:3])


# --- 2026-07-28: subscriptions/listen, input_required ----------------------------------------------


async def modern_session(transport: str) -> None:
    tag = f"[python sdk, {transport}, 2026-07-28, --confirm]"
    updates, person = Updates(), Person()
    if transport == "stdio":
        ui = SimApi(f"127.0.0.1:{free_port()}")
        server = StdioServerParameters(command=DEVICE_SIM, args=["--stdio", "--confirm", "--ui", ui.addr])
        async with Client(server, mode="auto", message_handler=updates, elicitation_callback=person,
                          read_timeout_seconds=TIMEOUT) as c:
            await api(ui.wait_ready)
            await modern_checks(c, ui, updates, person, tag)
        return
    with SimProcess("--http", "127.0.0.1:0", "--confirm") as sim:
        assert sim.ui and sim.url
        async with Client(sim.url, mode="auto", message_handler=updates, elicitation_callback=person,
                          read_timeout_seconds=TIMEOUT) as c:
            await modern_checks(c, sim.ui, updates, person, tag)
        async with Client(sim.url, mode="auto", read_timeout_seconds=TIMEOUT) as c:
            try:
                r = await c.call_tool(RELAY, {"on": True})
                check(f"{tag} a client without elicitation: -32021, it needs elicitation", False, r)
            except MCPError as e:
                check(f"{tag} a client without elicitation: -32021, it needs elicitation (nothing ran)",
                      e.code == -32021 and "elicitation" in e.error.message and await relay_on(sim.ui) is False,
                      e.error)


async def modern_checks(c: Client, sim: SimApi, updates: Updates, person: Person, tag: str) -> None:
    check(f"{tag} negotiated 2026-07-28", c.protocol_version == "2026-07-28", c.protocol_version)
    await check_resources_listed(c, tag)

    # The SDK caches resources/read by the server's hints: a reading must never be served stale.
    r = await c.read_resource(TEMPERATURE)
    check(f"{tag} resources/read: 21.5 °C, not cacheable (ttlMs 0)", reading(r) == {"celsius": 21.5}
          and r.ttl_ms == 0, r)
    await api(sim.sensor, temperature=25.0)
    r = await c.read_resource(TEMPERATURE)
    check(f"{tag} a move, then a read through the SDK's response cache: 25.0 °C, not the cached 21.5",
          reading(r) == {"celsius": 25.0}, r)

    mark = len(updates.seen)
    async with c.listen(resource_subscriptions=[TEMPERATURE]) as sub:
        check(f"{tag} subscriptions/listen acknowledged, the temperature honoured",
              sub.honored.resource_subscriptions == [TEMPERATURE], sub.honored)
        await api(sim.sensor, temperature=31.5)
        event = None
        t0 = time.monotonic()
        with anyio.move_on_after(5):
            event = await sub.__anext__()
        check(f"{tag} the move arrives on the listen stream as ResourceUpdated ({time.monotonic() - t0:.2f} s)",
              event == ResourceUpdated(TEMPERATURE), event)
        tagged = await updates.wait(TEMPERATURE, mark, timeout=2.0)
        meta = (tagged.params.meta or {}) if tagged else {}
        check(f"{tag} ...and through the message handler, tagged with the listen request's id",
              meta.get("io.modelcontextprotocol/subscriptionId") == sub.subscription_id, tagged)
        r = await c.read_resource(TEMPERATURE)
        check(f"{tag} the read after the event: 31.5 °C", reading(r) == {"celsius": 31.5}, r)
        listen_id = json.dumps(sub.subscription_id)
    if "http" in tag:
        # Over HTTP the SDK closes the stream and the host reports it; over stdio it sends
        # notifications/cancelled (the silence below shows the device took it).
        closed, s = await api(sim.state_until, lambda s: any(
            e["id"] == listen_id and e["open"] is False for e in timeline(s, "listen")))
        check(f"{tag} leaving the listen block ends the stream on the device", closed, timeline(s, "listen"))
    s = await api(sim.state)
    mark, seq = len(updates.seen), s["next_seq"] - 1
    await anyio.sleep(1.1)  # past the temperature's 1 s minimum interval
    await api(sim.sensor, temperature=36.0)
    await anyio.sleep(1.5)
    s = await api(sim.state)
    check(f"{tag} after the stream ended a move reaches no one (no update sent, none received)",
          not updates.uris(mark) and not timeline(s, "update", seq), (updates.uris(mark), timeline(s, "update", seq)))
    r = await c.read_resource(TEMPERATURE)
    check(f"{tag} ...though the thermometer moved: 36.0 °C", reading(r) == {"celsius": 36.0}, r)

    # input_required (MRTR), driven by hand first: nothing runs until the answer comes back.
    first = await c.session.call_tool(RELAY, {"on": True}, allow_input_required=True)
    ask = (first.input_requests or {}).get("confirm") if isinstance(first, types.InputRequiredResult) else None
    check(f"{tag} self.relay.set on: input_required with an elicitation/create for the relay's question, "
          "a requestState, and nothing ran",
          ask is not None and ask.method == "elicitation/create" and question_ok(ask.params)
          and isinstance(first.request_state, str) and first.request_state.startswith("v2.")
          and await relay_on(sim) is False, first)
    if isinstance(first, types.InputRequiredResult) and first.request_state:
        state = first.request_state
        tampered = state[:-1] + ("0" if state[-1] != "0" else "1")
        yes = {"confirm": types.ElicitResult(action="accept", content={"confirm": True})}
        try:
            r = await c.session.call_tool(RELAY, {"on": True}, input_responses=yes, request_state=tampered,
                                          allow_input_required=True)
            check(f"{tag} a tampered requestState is refused (-32602)", False, r)
        except MCPError as e:
            check(f"{tag} a tampered requestState is refused (-32602), nothing ran",
                  e.code == -32602 and await relay_on(sim) is False, e.error)

    # The SDK's own driver: the elicitation callback answers, the call is retried with it.
    person.answer = "accept"
    r = await c.call_tool(RELAY, {"on": True})
    on = await relay_on(sim)
    check(f"{tag} the SDK's input_required driver asks the person (form mode, the relay's question)",
          len(person.asked) == 1 and question_ok(person.asked[0]), person.asked)
    check(f"{tag} accept(true): the retried call switched the relay on, measured",
          not r.is_error and r.structured_content == {"value": True}
          and "measured: true" in texts(r) and on is True, (r, on))
    asked = len(person.asked)
    r = await c.call_tool(RELAY, {"on": False})
    check(f"{tag} switching off asks nothing and runs", not r.is_error and len(person.asked) == asked
          and await relay_on(sim) is False, (r, len(person.asked) - asked))
    await refusals(c, sim, person, tag)


async def run(transports: list[str]) -> None:
    if "stdio" in transports:
        await legacy_session("stdio")
        await modern_session("stdio")
    if "http" in transports:
        await legacy_session("http")
        await modern_session("http")
