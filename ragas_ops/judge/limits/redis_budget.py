"""The account's buckets in Redis (`judge.shared_budget = redis`): the scoring processes of
every machine share one account, e.g. the Celery workers of the compose deployment, which
already runs a Redis server for its broker.

A change of the state (a take, a raise to the provider's headroom, a process leaving) is run on
one key, made atomic by Redis' optimistic transactions (WATCH the key, read it and the
server's clock, MULTI/SET/EXEC; another process's write in between makes EXEC fail and the
change runs again): the same arithmetic as the SQLite file, with the server's clock, so that
hosts whose clocks disagree refill alike. A change that stores nothing (a take that finds too
little) writes nothing. The key names only a hash of the account and expires
after an hour unused.

Redis unreachable, slow (more than `SOCKET_TIMEOUT_SECONDS`) or refusing the password is a
coordinator failure: the process falls back to its static share and keeps scoring. The
password comes from the environment variable `judge.shared_budget_password_env` names, never
from the URL, and no message repeats it.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import threading
from typing import Any, TypeVar
from urllib.parse import urlsplit

from ragas_ops.config import ConfigError
from ragas_ops.judge.limits.account_buckets import (
    AccountPlan,
    Change,
    CoordinatorError,
    loaded_state,
    taking,
)
from ragas_ops.judge.limits.spec import BudgetPool, SharedBudgetSpec
from ragas_ops.secrets import Secret, redact

T = TypeVar("T")

KEY_PREFIX = "ragas-ops:budget:"
KEY_TTL_SECONDS = 3600
SOCKET_TIMEOUT_SECONDS = 1.0
"""A Redis that does not answer within this is down, for this process."""
WATCH_ATTEMPTS = 50
"""Takes that lost the race to another process's write, before that counts as a failure."""


class RedisTarget:
    """Where the Redis server is, and its password (a Secret: never printed)."""

    def __init__(self, url: str, password: Secret | None) -> None:
        self.url = url
        self.password = password
        parts = urlsplit(url)
        self.where = f"{parts.hostname}:{parts.port or 6379}"


def redis_url_for(spec: SharedBudgetSpec, environ: dict[str, str] | None = None) -> RedisTarget:
    """The server of `shared_budget_url`, with the password from `shared_budget_password_env`.
    Refuses a missing URL, another scheme, and a URL with credentials in it (the message does
    not repeat them)."""
    source = "judge.shared_budget_url"
    url = spec.url
    if not url:
        raise ConfigError(f"{source}: judge.shared_budget = redis needs the server's URL")
    parts = urlsplit(url)
    if parts.scheme not in ("redis", "rediss"):
        raise ConfigError(f"{source}: expected redis://host:6379/0 or rediss://...")
    if parts.username is not None or parts.password is not None:
        raise ConfigError(
            f"{source}: the URL holds credentials ({parts.scheme}://***@...): put the password "
            f"in the environment variable {spec.password_env} instead"
        )
    if not parts.hostname:
        raise ConfigError(f"{source}: the URL has no host (expected redis://host:6379/0)")
    environ = dict(os.environ) if environ is None else environ
    password = environ.get(spec.password_env)
    return RedisTarget(url, Secret(password) if password else None)


class RedisCoordinator:
    """An account's buckets in one Redis key (blocking calls: run them in a thread)."""

    def __init__(self, target: RedisTarget, account: str) -> None:
        self.target = target
        self.where = target.where
        self.key = KEY_PREFIX + hashlib.sha256(account.encode()).hexdigest()[:32]
        self._client: Any = None
        self._lock = threading.Lock()

    def take(self, pool: BudgetPool, requests: float, tokens: float, plan: AccountPlan) -> float:
        """A take with no report (tests and diagnostics): the seconds to wait, 0.0 if taken."""
        return self.change(taking(pool, requests, tokens, plan))

    def change(self, change: Change[T]) -> T:
        redis = _redis_module()
        with self._lock:
            try:
                return self._change(redis, change)
            except redis.RedisError as error:
                self._drop_client()
                raise CoordinatorError(self._describe(error)) from None

    def state(self) -> dict[str, Any] | None:
        """The account's stored buckets (for tests and diagnostics)."""
        redis = _redis_module()
        with self._lock:
            try:
                return loaded_state(self._connected().get(self.key))
            except redis.RedisError as error:
                raise CoordinatorError(self._describe(error)) from None

    def close(self) -> None:
        with self._lock:
            self._drop_client()

    def _change(self, redis: Any, change: Change[T]) -> T:
        client = self._connected()
        for _ in range(WATCH_ATTEMPTS):
            with client.pipeline() as pipe:
                try:
                    pipe.watch(self.key)
                    seconds, micros = pipe.time()
                    state, result = change(loaded_state(pipe.get(self.key)), seconds + micros / 1e6)
                    if state is None:
                        pipe.unwatch()
                        return result
                    pipe.multi()
                    pipe.set(self.key, json.dumps(state), ex=KEY_TTL_SECONDS)
                    pipe.execute()
                    return result
                except redis.WatchError:
                    continue  # another process wrote in between: look again
        raise CoordinatorError(f"redis at {self.where}: {WATCH_ATTEMPTS} takes lost the race")

    def _connected(self) -> Any:
        if self._client is None:
            redis = _redis_module()
            password = None if self.target.password is None else self.target.password.reveal()
            self._client = redis.Redis.from_url(
                self.target.url,
                password=password,
                socket_timeout=SOCKET_TIMEOUT_SECONDS,
                socket_connect_timeout=SOCKET_TIMEOUT_SECONDS,
            )
        return self._client

    def _drop_client(self) -> None:
        if self._client is not None:
            client, self._client = self._client, None
            with contextlib.suppress(Exception):  # a broken connection: nothing to close
                client.close()

    def _describe(self, error: Exception) -> str:
        return redact(
            f"redis at {self.where}: {type(error).__name__}: {error}", self.target.password
        )


def _redis_module() -> Any:
    try:
        import redis
    except ImportError:
        raise CoordinatorError(
            "judge.shared_budget = redis needs the redis client: pip install 'ragas-ops[redis]'"
        ) from None
    return redis
