"""The judge's own settings: the endpoint and how requests are made (`EndpointSpec`), and batch
mode (`BatchSpec`); `[judge]` keys of the config file (see `config.JudgeSettings`). A settings
module: it imports nothing of ragas_ops but the settings toolkit."""

from __future__ import annotations

from dataclasses import dataclass, field
from importlib.metadata import entry_points
from typing import Literal
from urllib.parse import urlsplit

from ragas_ops.settings_fields import ConfigError, at_least_one, positive, setting

StructuredOutput = Literal["json_schema", "json_object", "none"]
JudgeMode = Literal["sync", "batch"]
OnBatchUnanswered = Literal["sync", "status"]

PROVIDER_GROUP = "ragas_ops.judge_providers"
"""The entry point group a judge provider is declared in (`judge.providers`)."""
JUDGE_KINDS: set[str] = {"openai", "local", "azure", "bedrock"}
"""The judge kinds known without looking at the installed packages: the built-in providers,
and each one registered in this process (`judge.providers.register_provider`)."""


def installed_kinds() -> set[str]:
    """The judge kinds the installed packages declare (`PROVIDER_GROUP`): names only, nothing
    imported, so that settings are checked while a DAG file is parsed."""
    return set(entry_points(group=PROVIDER_GROUP).names)


def check_judge_kind(kind: str, source: str = "judge.kind") -> None:
    """Refuse a kind no provider registers or declares, naming the ones known."""
    if kind not in JUDGE_KINDS and kind not in installed_kinds():
        known = ", ".join(sorted(JUDGE_KINDS | installed_kinds()))
        raise ConfigError(f"{source}: unknown judge kind {kind!r}; the known kinds: {known}")


def check_base_url(url: str, source: str = "judge.base_url") -> None:
    """Refuse a base URL that is not http(s)://host[:port][/path] (a query string or fragment
    included), or that holds credentials (they would travel as Basic auth and come back in
    error messages). The message never repeats the credentials."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https"):
        raise ConfigError(f"{source}: the judge's base URL must start with http:// or https://")
    where = f"{parts.scheme}://{parts.hostname or ''}"
    if parts.username is not None or parts.password is not None:
        raise ConfigError(
            f"{source}: the base URL holds credentials ({parts.scheme}://***@...): credentials "
            "never travel in a URL; put the key in the environment variable that "
            "judge.api_key_env names (OPENAI_API_KEY by default)"
        )
    if not parts.hostname:
        raise ConfigError(f"{source}: the base URL has no host (expected http(s)://host/v1)")
    if "?" in url or "#" in url:
        # A query string would be sent in every request line (and logged by every proxy on
        # the way): `?api_key=KEY` is how some gateways take a key.
        raise ConfigError(
            f"{source}: the base URL {where}/... has a query string or fragment: only "
            "http(s)://host[:port][/path] is taken; a key goes in the environment variable "
            "that judge.api_key_env names"
        )
    try:
        parts.port  # noqa: B018 (urllib checks the port when it is read)
    except ValueError:
        port = parts.netloc.rpartition(":")[2]
        raise ConfigError(
            f"{source}: the base URL {where}:... has an invalid port {port!r} (1-65535)"
        ) from None


@dataclass
class EndpointSpec:
    """Which endpoint and models the judge asks, and how a request is made and retried."""

    model: str = "gpt-5.4-mini"
    """The judge's chat model: gpt-5.4-mini, still served next quarter (docs/judge.md)."""
    embedding_model: str = "text-embedding-3-small"
    embedding_kind: str | None = setting(None, check=check_judge_kind)
    """The provider the embeddings come from (answer relevance's), when not the judge's own:
    `openai` (at `OPENAI_BASE_URL` with `OPENAI_API_KEY`), `local` (the local embedder) or a
    registered provider's; none: the judge's kind (Anthropic has no embeddings API: set it)."""
    base_url: str | None = setting(None, check=check_base_url)
    """OpenAI-compatible endpoint; None means the SDK's default (or OPENAI_BASE_URL). Never
    with credentials in it (`user:key@`): the key is read from `api_key_env`."""
    api_key_env: str = "OPENAI_API_KEY"
    conn_id: str | None = "ragas_ops_judge"
    """In Airflow: the connection (type `openai`: host = the base URL, password = the key) the
    scoring tasks and the batch trigger read the endpoint and key from, through a secrets
    backend, `AIRFLOW_CONN_<ID>` or the metadata database; when it is not defined (or None),
    `base_url` and `api_key_env` as outside Airflow. The CLI never reads it."""
    timeout_seconds: float = positive(60.0)
    max_attempts: int = at_least_one(8)
    """Tries per request, counting the first, across 5xx errors, timeouts and replies that are
    no API reply; 429s use none (see `rate_limit_patience_seconds`)."""
    structured_output: StructuredOutput = "json_schema"
    """How to ask for JSON: OpenAI's strict json_schema, plain json_object, or the prompt only."""
    embedding_batch_size: int = at_least_one(512)
    """Texts per embeddings request (OpenAI accepts up to 2048)."""
    retry_failed: bool = False
    """Ask again the requests whose stored reply was unusable (it did not parse after the
    repair, or a content filter refused it); by default a rerun reuses those outcomes and
    pays nothing for them."""
    unreachable_after: int = field(default=20, metadata={"minimum": 0})
    """The run stops (exit 4) when this many attempts in a row failed (connection refused,
    DNS, TLS, timeouts, 5xx, replies that are no API replies) before any request succeeded;
    0: never."""


@dataclass
class BatchSpec:
    """Sync or batch mode, and how batches are cut, waited for and finished."""

    mode: JudgeMode = "sync"
    """`sync`: one request at a time through the rate limiter; `batch`: the OpenAI Batch API
    (half the price, answers within `batch_completion_window`; the pipeline only)."""
    max_requests: int = at_least_one(50_000, key="batch_max_requests")
    """Most requests per batch input file (OpenAI's limit); larger rounds are split."""
    max_bytes: int = at_least_one(190_000_000, key="batch_max_bytes")
    """Most bytes per batch input file (OpenAI's limit is 200 MB); larger rounds are split."""
    completion_window: str = setting("24h", key="batch_completion_window")
    poll_seconds: float = positive(60.0, key="batch_poll_seconds")
    """How often the Airflow triggerer asks whether submitted batches are done."""
    wait_seconds: float = positive(26 * 3600, key="batch_wait_seconds")
    """How long a scoring task waits for its batches before failing (its retry re-attaches to
    them): a little more than the completion window."""
    on_unanswered: OnBatchUnanswered = setting("sync", key="on_batch_unanswered")
    """Requests a batch did not answer (expired, failed, errors): `sync` sends them again in
    sync mode; `status` gives their rows `judge_unavailable` with the batch's reason."""


@dataclass
class CandidateSpec:
    """A shadow judge (`[judge.candidate]`): a second model, or a second endpoint or kind,
    that scores a deterministic sample of each day beside the judge of record. Its scores are
    kept apart from the published ones (`candidate_scored/`), so that a change of judge is
    measured on the same rows before it is made. Each key is `candidate_<name>` when flat
    (`RAGAS_OPS_JUDGE_CANDIDATE_MODEL`); in the config file, `<name>` in `[judge.candidate]`."""

    model: str | None = setting(None, key="candidate_model")
    """The candidate's chat model; none with no `candidate_kind`: no shadow judge."""
    kind: str | None = setting(None, key="candidate_kind", check=check_judge_kind)
    """A judge kind (`judge.kind`: `openai`, `local` or a registered provider's); none: the
    judge of record's kind."""
    sample: float = setting(0.05, key="candidate_sample", exclusive_minimum=0, maximum=1)
    """Share of each day's rows the candidate scores, chosen by a hash of the row id (the rows
    `sampling.is_sampled` picks at this share, among those the judge of record scores)."""
    base_url: str | None = setting(None, key="candidate_base_url", check=check_base_url)
    """The candidate's endpoint; none: the judge of record's (in Airflow, as its connection
    gives it)."""
    api_key_env: str | None = setting(None, key="candidate_api_key_env")
    """The variable holding the candidate's key; none: the judge of record's key."""
    embedding_model: str | None = setting(None, key="candidate_embedding_model")
    """The candidate's embedding model; none: the judge of record's."""
    rpm: int | None = positive(None, key="candidate_rpm")
    """The candidate's requests per minute (providers limit each model apart); none: `rpm`."""
    tpm: int | None = positive(None, key="candidate_tpm")
    """The candidate's tokens per minute; none: `tpm`."""
    max_seconds: float = positive(120.0, key="candidate_max_seconds")
    """Most seconds the candidate may add to a chunk's scoring task: past it, its sample of
    the chunk is left out and recorded as failed (a slow or failing candidate's retries never
    hold the published scores back longer)."""

    @property
    def enabled(self) -> bool:
        """Whether a shadow judge is configured."""
        return self.model is not None or self.kind is not None
