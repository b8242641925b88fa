#!/usr/bin/env python3
"""device-sim as an OAuth resource server (--oauth-issuer) driven by the official MCP Python SDK
(`mcp==2.3.0`) and its OAuth client, `mcp.client.auth.OAuthClientProvider`, unmodified, against a
real authorization server on loopback (oidc-provider, oauth_server.mjs).

1. `Client` (mode legacy and auto) over `streamable_http_client` whose httpx client carries the
   provider: the SDK meets the 401, reads the protected-resource metadata (which names the
   authorization server), discovers the server, registers a client (dynamic registration), and
   calls the redirect handler with the authorization URL (PKCE S256, resource = the device's URL,
   the scope of the challenge). The person logs in and approves on the server's own pages
   (headless: the handler follows the URL and fills in each form, as a browser would); the
   callback handler hands the SDK the code and state; the SDK trades them for an access token (a
   JWT for this device), retries, lists the tools and calls self.relay.set, and the relay — read
   through --ui's state, not through MCP — is on only after that call.
2. A device with only a pre-shared token: the SDK's OAuth flow now ends with the device's own
   words (a JSON OAuth error on its /register), not a bare 404.

Needs node (oauth_server.mjs; INSPECTOR_NODE, Node 22, when set) and INTEROP_NODE_DIR with
oidc-provider installed.
"""

from __future__ import annotations

import base64
import json
import os
import re
import subprocess
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlencode, urljoin, urlparse

import anyio
import httpx2

from harness import MODEL_TOOLS, SimProcess, check, finish
from mcp.client.auth import OAuthClientProvider
from mcp.client.client import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.shared._httpx_utils import create_mcp_http_client
from mcp.shared.auth import AuthorizationCodeResult, OAuthClientInformationFull, OAuthClientMetadata, OAuthToken

HERE = Path(__file__).resolve().parent
REDIRECT = "http://127.0.0.1:9/callback"
SCOPE = "mcp:tools"
TIMEOUT = 30.0


class AuthServer:
    """oauth_server.mjs on loopback, for as long as the `with` lasts."""

    def __init__(self, alg: str = "ES256") -> None:
        self.alg = alg

    def __enter__(self) -> "AuthServer":
        node = os.environ.get("INSPECTOR_NODE") or "node"
        env = {**os.environ, "OAUTH_ALG": self.alg}
        self.proc = subprocess.Popen([node, str(HERE / "oauth_server.mjs")], stdin=subprocess.DEVNULL,
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env)
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("the authorization server did not start")
        self.issuer = json.loads(line)["issuer"]
        return self

    def __exit__(self, *exc: object) -> None:
        self.proc.terminate()
        self.proc.wait(5)


class Memory:
    """The SDK's TokenStorage, in memory."""

    def __init__(self) -> None:
        self.tokens: OAuthToken | None = None
        self.client: OAuthClientInformationFull | None = None

    async def get_tokens(self) -> OAuthToken | None:
        return self.tokens

    async def set_tokens(self, tokens: OAuthToken) -> None:
        self.tokens = tokens

    async def get_client_info(self) -> OAuthClientInformationFull | None:
        return self.client

    async def set_client_info(self, client_info: OAuthClientInformationFull) -> None:
        self.client = client_info


def first_form(html: str) -> tuple[str | None, str, list[tuple[str, str, str]]] | None:
    """The first <form>'s action, method and (type, name, value) of its inputs."""
    m = re.search(r"<form\b([^>]*)>(.*?)</form>", html, re.S | re.I)
    if not m:
        return None

    def attr(tag: str, name: str) -> str | None:
        a = re.search(rf'\b{name}="([^"]*)"', tag, re.I)
        return a.group(1) if a else None

    inputs = [((attr(i, "type") or "text").lower(), attr(i, "name") or "", attr(i, "value") or "")
              for i in re.findall(r"<input\b([^>]*)>", m.group(2), re.I)]
    return attr(m.group(1), "action"), (attr(m.group(1), "method") or "get").lower(), inputs


async def log_in(auth_url: str, login: str = "interop-user") -> tuple[str, list[str]]:
    """A person logs in on the authorization server's pages and approves: follows `auth_url`,
    fills in each form it shows, until the server redirects to REDIRECT; that URL, and the steps."""
    steps: list[str] = []
    async with httpx2.AsyncClient(follow_redirects=False, timeout=TIMEOUT) as http:
        url, method, data = auth_url, "GET", None
        for _ in range(20):
            if url.startswith(REDIRECT):
                return url, steps
            r = await http.request(method, url, data=data)
            steps.append(f"{method} {urlparse(url).path} -> {r.status_code}")
            if 300 <= r.status_code < 400:
                url, method, data = urljoin(url, r.headers["location"]), "GET", None
                continue
            form = first_form(r.text)
            if r.status_code != 200 or form is None:
                raise RuntimeError(f"no form at {url} ({r.status_code}): {r.text[:300]}")
            action, form_method, inputs = form
            fields = {}
            for kind, name, value in inputs:
                if not name:
                    continue
                fields[name] = "any-password" if kind == "password" else login if kind in ("text", "email") else value
            steps.append("form " + ",".join(fields))
            url = urljoin(url, action or url)
            if form_method == "post":
                method, data = "POST", fields
            else:
                method, data = "GET", None
                url = f"{url}?{urlencode(fields)}"
    raise RuntimeError(f"the login did not reach {REDIRECT}: {steps}")


class Person:
    """The SDK's redirect and callback handlers: the person at the browser."""

    def __init__(self) -> None:
        self.auth_urls: list[str] = []
        self.steps: list[str] = []
        self.redirect: str | None = None

    async def redirect_handler(self, url: str) -> None:
        self.auth_urls.append(url)
        self.redirect, self.steps = await log_in(url)

    async def callback_handler(self) -> AuthorizationCodeResult:
        assert self.redirect is not None
        q = parse_qs(urlparse(self.redirect).query)
        return AuthorizationCodeResult(code=q["code"][0], state=q.get("state", [None])[0],
                                       iss=q.get("iss", [None])[0])


def claims_of(jwt: str) -> dict[str, Any]:
    part = jwt.split(".")[1]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def header_of(jwt: str) -> dict[str, Any]:
    part = jwt.split(".")[0]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


def metadata() -> OAuthClientMetadata:
    return OAuthClientMetadata(client_name="interop-python-oauth", redirect_uris=[REDIRECT],
                               grant_types=["authorization_code", "refresh_token"], response_types=["code"],
                               token_endpoint_auth_method="none")


async def login_and_call(sim: SimProcess, issuer: str, alg: str, mode: str) -> None:
    tag = f"[python sdk oauth, {alg}, mode={mode}]"
    assert sim.url is not None and sim.ui is not None
    person, storage = Person(), Memory()
    provider = OAuthClientProvider(sim.url, metadata(), storage, person.redirect_handler, person.callback_handler)
    statuses: list[int] = []

    async def keep(response: httpx2.Response) -> None:
        statuses.append(response.status_code)

    http = create_mcp_http_client(auth=provider)
    http.event_hooks = {"request": [], "response": [keep]}
    state = sim.ui.state()
    check(f"{tag} the relay is off before", state["relay"]["on"] is False, state["relay"])
    on = True
    async with http:
        with anyio.fail_after(TIMEOUT):
            async with Client(streamable_http_client(sim.url, http_client=http), mode=mode,
                              read_timeout_seconds=TIMEOUT) as c:
                tools = await c.list_tools()
                names = [t.name for t in tools.tools]
                check(f"{tag} logged in, initialized and listed the tools", names == MODEL_TOOLS, names)
                r = await c.call_tool("self.relay.set", {"on": on})
                check(f"{tag} self.relay.set ran", not r.is_error, r)
                ok, state = sim.ui.state_until(lambda s: s["relay"]["on"] is on)
                check(f"{tag} the relay is on on the device", ok, state["relay"])
                await c.call_tool("self.relay.set", {"on": False})
    auth = urlparse(person.auth_urls[0]) if person.auth_urls else None
    q = parse_qs(auth.query) if auth else {}
    check(f"{tag} the SDK registered a client at the authorization server",
          storage.client is not None and bool(storage.client.client_id), storage.client)
    check(f"{tag} and sent the person to its authorization endpoint",
          auth is not None and f"{auth.scheme}://{auth.netloc}" == issuer and auth.path == "/auth", person.auth_urls)
    # The SDK adds offline_access (a refresh token) when the server offers it.
    check(f"{tag} with PKCE (S256), resource = the device's endpoint, scope {SCOPE}",
          q.get("code_challenge_method") == ["S256"] and q.get("resource") == [sim.url]
          and SCOPE in q.get("scope", [""])[0].split(), q)
    check(f"{tag} the person logged in and approved on the server's pages", person.redirect is not None, person.steps)
    token = storage.tokens.access_token if storage.tokens else ""
    claims = claims_of(token) if token.count(".") == 2 else {}
    check(f"{tag} the access token is a JWT signed {alg} for this device",
          header_of(token).get("alg") == alg and claims.get("aud") == sim.url and claims.get("iss") == issuer,
          claims)
    check(f"{tag} the device answered 401 first, then admitted the token", statuses[:1] == [401] and 200 in statuses,
          statuses)


async def pre_shared() -> None:
    tag = "[python sdk, pre-shared token only]"
    with SimProcess("--http", "127.0.0.1:0", "--token", "interop-Token_0123456789") as sim:
        assert sim.url is not None
        person, storage = Person(), Memory()
        provider = OAuthClientProvider(sim.url, metadata(), storage, person.redirect_handler,
                                       person.callback_handler)
        error: BaseException | None = None
        try:
            async with create_mcp_http_client(auth=provider) as http:
                with anyio.fail_after(TIMEOUT):
                    async with Client(streamable_http_client(sim.url, http_client=http), mode="legacy",
                                      read_timeout_seconds=TIMEOUT) as c:
                        await c.list_tools()
        except BaseException as e:  # the SDK's error, possibly in an exception group
            error = e
        text = repr(error)
        if isinstance(error, BaseExceptionGroup):
            text += " " + " ".join(repr(e) for e in error.exceptions)
        check(f"{tag} the SDK's OAuth flow fails", error is not None, text)
        check(f"{tag} with the device's words (its JSON OAuth error), not a bare 404",
              "pre-shared bearer token" in text or "pre-shared" in str(error), text)
        check(f"{tag} nobody was sent to log in", person.auth_urls == [], person.auth_urls)


async def main() -> None:
    for alg in ("ES256", "RS256"):
        with AuthServer(alg) as server:
            with SimProcess("--http", "127.0.0.1:0", "--oauth-issuer", server.issuer, "--oauth-scope", SCOPE) as sim:
                for mode in ("legacy", "auto") if alg == "ES256" else ("legacy",):
                    await login_and_call(sim, server.issuer, alg, mode)
    await pre_shared()


if __name__ == "__main__":
    try:
        anyio.run(main)
    except BaseException as e:  # a crash is a failure with its reason, not a bare traceback
        import traceback

        traceback.print_exc()
        check("the sessions ran to the end", False, repr(e))
    finish("python sdk oauth against oidc-provider (mcp 2.3.0)")
