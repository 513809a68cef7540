"""Azure OpenAI's credentials: an `api-key`, or a Microsoft Entra ID bearer token that is asked
of its source again before it expires. A token is a credential like a key: it is kept in a
`Secret` (masked in every repr), never logged, and only its expiry is ever said."""

from __future__ import annotations

import asyncio
import importlib
import time
from collections.abc import Callable
from typing import Any, Protocol

from ragas_ops.judge.base import JudgeFatalError
from ragas_ops.secrets import Secret

REFRESH_BEFORE_SECONDS = 300.0
"""A token is asked for again this long before it expires (azure-identity's own margin), so
that no request goes with a token that expires on the way."""


class AccessToken(Protocol):
    """What a token source returns: azure-identity's `AccessToken` (or any object alike)."""

    @property
    def token(self) -> str: ...

    @property
    def expires_on(self) -> int | float:
        """When the token expires, in seconds since the epoch."""


TokenSource = Callable[[str], AccessToken]
"""(the scope) -> a token: azure-identity's `credential.get_token`, or the test's fake."""


class BearerTokens:
    """The Entra ID token requests carry: the source's, until `REFRESH_BEFORE_SECONDS` before
    it expires, then a new one (one request at a time asks; the others wait for it)."""

    def __init__(
        self, source: TokenSource, scope: str, clock: Callable[[], float] = time.time
    ) -> None:
        self._source = source
        self._scope = scope
        self._clock = clock
        self._token = Secret("")
        self._expires_on = 0.0
        self._lock = asyncio.Lock()
        self.fetched = 0
        """How many tokens were asked of the source (a test's count)."""

    async def header(self) -> dict[str, str]:
        """The `Authorization` header of a request sent now."""
        token = await self.token()
        return {"Authorization": f"Bearer {token.reveal()}"}

    async def token(self) -> Secret:
        if self._fresh():
            return self._token
        async with self._lock:
            if not self._fresh():
                # The source may block (azure-identity asks Entra ID over HTTP): off the loop.
                found = await asyncio.to_thread(self._source, self._scope)
                self._token = Secret(str(found.token))
                self._expires_on = float(found.expires_on)
                self.fetched += 1
            return self._token

    def _fresh(self) -> bool:
        return bool(self._token) and self._clock() < self._expires_on - REFRESH_BEFORE_SECONDS


def token_source(provider: str | None) -> TokenSource:
    """The token source `azure_token_provider` names (`module:callable`, called once), or
    azure-identity's `DefaultAzureCredential().get_token`; a JudgeFatalError saying what to
    install or fix when there is none."""
    if provider is None:
        try:
            identity: Any = importlib.import_module("azure.identity")
        except ImportError:
            raise JudgeFatalError(
                "judge.azure_auth = entra needs a token source: install azure-identity "
                "(`pip install azure-identity`: DefaultAzureCredential, managed identity, the "
                "Azure CLI), or name one in judge.azure_token_provider (module:callable)"
            ) from None
        source: TokenSource = identity.DefaultAzureCredential().get_token
        return source
    module, _, name = provider.partition(":")
    try:
        factory = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError, ValueError) as error:
        raise JudgeFatalError(
            f"judge.azure_token_provider: {provider!r} does not load ({type(error).__name__}); "
            "expected module:callable"
        ) from None
    made: TokenSource = factory()
    return made
