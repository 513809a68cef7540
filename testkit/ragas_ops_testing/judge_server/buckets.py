"""The test judge's rate limits: token buckets for requests and tokens per minute."""

from __future__ import annotations

import math

from ragas_ops_testing.judge_server.config import JudgeServerConfig


def readable_duration(seconds: float) -> str:
    """OpenAI's (Go's) duration format for `x-ratelimit-reset-*`: "120ms", "1s", "6m0s"."""
    millis = math.ceil(max(0.0, seconds) * 1000)
    if millis == 0:
        return "0s"
    if millis < 1000:
        return f"{millis}ms"
    hours, rest = divmod(millis, 3_600_000)
    minutes, rest = divmod(rest, 60_000)
    secs = f"{rest // 1000}.{rest % 1000:03d}".rstrip("0").rstrip(".") + "s"
    if hours:
        return f"{hours}h{minutes}m{secs}"
    return f"{minutes}m{secs}" if minutes else secs


class _Bucket:
    """A token bucket refilled continuously at `limit / 60` per second, starting full; with
    `headers_window = "minute"` its headers describe a minute-long window charged alike."""

    def __init__(
        self, kind: str, limit: int, burst_seconds: float, now: float, window: str = "burst"
    ) -> None:
        self.kind = kind  # "requests" or "tokens", as in OpenAI's headers and error types
        self.limit = limit
        self.rate = limit / 60.0
        self.capacity = self.rate * burst_seconds
        self.level = self.capacity
        self._updated = now
        self._minute = float(limit) if window == "minute" else None
        """The minute window's level, when the headers describe it."""

    def refill(self, now: float) -> None:
        elapsed = now - self._updated
        self.level = min(self.capacity, self.level + elapsed * self.rate)
        if self._minute is not None:
            self._minute = min(float(self.limit), self._minute + elapsed * self.rate)
        self._updated = now

    def charge(self, amount: float) -> None:
        self.level -= amount
        if self._minute is not None:
            self._minute -= amount

    def wait_for(self, amount: float) -> float:
        """Seconds until the bucket holds `amount`.

        A request larger than the whole bucket waits for a full bucket (and then drives it
        negative) instead of being refused forever.
        """
        return max(0.0, (min(amount, self.capacity) - self.level) / self.rate)

    def headers(self) -> dict[str, str]:
        level, capacity = self.level, self.capacity
        if self._minute is not None:
            level, capacity = self._minute, float(self.limit)
        return {
            f"x-ratelimit-limit-{self.kind}": str(self.limit),
            f"x-ratelimit-remaining-{self.kind}": str(max(0, math.floor(level))),
            f"x-ratelimit-reset-{self.kind}": readable_duration((capacity - level) / self.rate),
        }


def rate_buckets(config: JudgeServerConfig, now: float) -> list[_Bucket]:
    limits = (("requests", config.rpm), ("tokens", config.tpm))
    return [
        _Bucket(kind, limit, config.burst_seconds, now, config.headers_window)
        for kind, limit in limits
        if limit is not None
    ]
