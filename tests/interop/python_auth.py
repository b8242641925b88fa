#!/usr/bin/env python3
"""device-sim --http --token T driven by the official MCP Python SDK (`mcp==2.3.0`), unmodified.

1. Without the token, and with a wrong one: `Client` (mode legacy and auto) fails to connect; the
   SDK raises, every HTTP answer it got was 401, and the challenge says `invalid_token` only when
   a token was sent. The SDK's own discovery helpers (`mcp.client.auth.utils`) read the metadata
   URL from the challenge; every URL they would try serves the protected-resource metadata
   (RFC 9728) naming this endpoint.
2. With the token (`create_mcp_http_client(headers={"Authorization": "Bearer T"})` under
   `streamable_http_client`): both modes initialize, list the tools and call one, and the device's
   relay (read through `--ui`'s state, not through MCP) is on only after that call.

The SDK's `ProtectedResourceMetadata` model wants at least one `authorization_servers` entry (the
MCP authorization specification requires one for OAuth); a device with a pre-shared token has no
authorization server, so that model refuses its (RFC 9728-valid) document: reported as KNOWN.
"""

from __future__ import annotations

import os
from typing import Any

import anyio
import httpx2

from harness import MODEL_TOOLS, SimProcess, check, finish
from mcp.client.auth.utils import (
    build_protected_resource_metadata_discovery_urls, extract_resource_metadata_from_www_auth,
)
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import ProtectedResourceMetadata

TOKEN = "interop-Token_0123456789.abc~+/"
TIMEOUT = 20.0
STRICT = os.environ.get("INTEROP_STRICT") == "1"


def known(name: str, ok: object, detail: object = "") -> None:
    """A reported finding: KNOWN, unless INTEROP_STRICT=1 makes it a check."""
    if ok or STRICT:
        check(name, ok, detail)
    else:
        print(f"KNOWN - {name}: {detail}", flush=True)


class Recorder:
    """An httpx2 client for the SDK's transport that keeps every response it got."""

    def __init__(self, token: str | None) -> None:
        headers = {"Authorization": f"Bearer {token}"} if token is not None else None
        self.client = create_mcp_http_client(headers=headers)
        self.responses: list[httpx2.Response] = []

        async def keep(response: httpx2.Response) -> None:
            self.responses.append(response)

        self.client.event_hooks = {"request": [], "response": [keep]}

    def statuses(self) -> list[int]:
        return [r.status_code for r in self.responses]


async def refused(url: str, mode: str, token: str | None, ui: Any) -> None:
    what = "no token" if token is None else "a wrong token"
    tag = f"[python sdk, {what}, mode={mode}]"
    rec = Recorder(token)
    error: BaseException | None = None
    try:
        async with rec.client:
            with anyio.fail_after(TIMEOUT):
                async with Client(streamable_http_client(url, http_client=rec.client), mode=mode,
                                  read_timeout_seconds=TIMEOUT) as c:
                    await c.list_tools()
    except Exception as e:  # the SDK's error, possibly in an exception group
        error = e
    check(f"{tag} the SDK refuses to connect", error is not None and not isinstance(error, TimeoutError), repr(error))
    check(f"{tag} it said why (the device's 401 message)", "Unauthorized" in repr(error) or "401" in repr(error),
          repr(error))
    statuses = rec.statuses()
    check(f"{tag} every answer it got was 401", statuses and all(s == 401 for s in statuses), statuses)
    first = rec.responses[0] if rec.responses else None
    challenge = first.headers.get("WWW-Authenticate", "") if first is not None else ""
    check(f"{tag} the challenge is Bearer with resource_metadata", challenge.startswith("Bearer resource_metadata="),
          challenge)
    check(f"{tag} invalid_token exactly when a token was sent",
          ('error="invalid_token"' in challenge) == (token is not None), challenge)
    state = ui.state()
    check(f"{tag} the relay is untouched", state["relay"]["on"] is False, state["relay"])
    if first is not None and token is None and mode == "legacy":
        await discovery(url, first)


async def discovery(url: str, unauthorized: httpx2.Response) -> None:
    tag = "[python sdk, discovery]"
    from_header = extract_resource_metadata_from_www_auth(unauthorized)
    base = url.removesuffix("/mcp")
    expected = f"{base}/.well-known/oauth-protected-resource/mcp"
    check(f"{tag} the SDK reads the metadata URL from the challenge", from_header == expected, from_header)
    urls = build_protected_resource_metadata_discovery_urls(from_header, url)
    check(f"{tag} it would try the header's URL, then the path and the root well-known URLs",
          urls == [expected, expected, f"{base}/.well-known/oauth-protected-resource"], urls)
    async with httpx2.AsyncClient() as http:
        for u in dict.fromkeys(urls):
            r = await http.get(u)
            doc = r.json() if r.status_code == 200 else None
            check(f"{tag} {u.removeprefix(base)} serves the metadata without a token",
                  r.status_code == 200 and doc == {"resource": url, "bearer_methods_supported": ["header"]},
                  (r.status_code, r.text))
        r = await http.get(expected)
    try:
        ProtectedResourceMetadata.model_validate_json(r.content)
        parsed = True
    except Exception as e:  # pydantic's ValidationError
        parsed = repr(e).splitlines()[0]
    known(f"{tag} the SDK's ProtectedResourceMetadata model accepts a document without authorization servers",
          parsed is True, f"{parsed}: the model requires authorization_servers (min 1); a pre-shared token has none")


async def admitted(url: str, mode: str, ui: Any) -> None:
    tag = f"[python sdk, the token, mode={mode}]"
    rec = Recorder(TOKEN)
    async with rec.client:
        with anyio.fail_after(TIMEOUT):
            async with Client(streamable_http_client(url, http_client=rec.client), mode=mode,
                              read_timeout_seconds=TIMEOUT) as c:
                tools = await c.list_tools()
                names = [t.name for t in tools.tools]
                check(f"{tag} initialized and listed the tools", names == MODEL_TOOLS, names)
                on = mode == "legacy"
                r = await c.call_tool("self.relay.set", {"on": on})
                check(f"{tag} self.relay.set ran", not r.is_error, r)
                ok, state = ui.state_until(lambda s: s["relay"]["on"] is on)
                check(f"{tag} the relay is {'on' if on else 'off'} on the device", ok, state["relay"])
    statuses = rec.statuses()
    check(f"{tag} no answer was 401", statuses and 401 not in statuses, statuses)


async def main() -> None:
    with SimProcess("--http", "127.0.0.1:0", "--token", TOKEN) as sim:
        assert sim.url is not None and sim.ui is not None
        for mode in ("legacy", "auto"):
            await refused(sim.url, mode, None, sim.ui)
            await refused(sim.url, mode, "wrong-" + TOKEN, sim.ui)
        for mode in ("legacy", "auto"):
            await admitted(sim.url, mode, sim.ui)


if __name__ == "__main__":
    try:
        anyio.run(main)
    except BaseException as e:  # a crash is a failure with its reason, not a bare traceback
        import traceback

        traceback.print_exc()
        check("the sessions ran to the end", False, repr(e))
    finish("python sdk with a bearer token (mcp 2.3.0)")
