"""OpenAI's Files and Batch APIs for the judge test double: uploads, batches and their results.

A batch is processed lazily and deterministically, never by a background thread: it is
`validating` when created, `in_progress` from the first look (retrieve, list or cancel) if its
input file is valid, and finished by the first look once `batch_seconds` have passed since its
creation. Finishing answers every request line through the server's own chat/embeddings code
(the `answer` callable) and writes the output and error files, in input order. A cancelled
batch is `cancelling` in the reply to the cancel call and `cancelled` from the next look.

Faults come from the settings in force when the batch was created: `batch_failure_rate` (lines
answered 500, drawn from a generator seeded with the server seed and the batch id),
`batch_expire_after` (only the first part of the lines is answered, the batch expires) and
`batch_fail` (the whole batch fails). Everything lives in memory; `BatchApi` is thread-safe.
"""

from __future__ import annotations

import itertools
import json
import math
import random
import threading
import time
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from email import policy
from email.parser import BytesParser
from typing import Any, Protocol
from urllib.parse import parse_qs

__all__ = [
    "BATCH_ENDPOINTS",
    "ApiResponse",
    "BatchApi",
    "BatchSettings",
    "LineAnswer",
    "api_of",
    "validate_batch_settings",
]

# The URLs a batch may target, i.e. what the test double answers synchronously too.
BATCH_ENDPOINTS = ("/v1/chat/completions", "/v1/embeddings")
_COMPLETION_WINDOW = "24h"
_COMPLETION_WINDOW_SECONDS = 24 * 3600
_MAX_METADATA_PAIRS = 16
_MAX_METADATA_KEY = 64
_MAX_METADATA_VALUE = 512
_DEFAULT_PAGE = 20
_MAX_PAGE = 100
_ACTIVE = ("validating", "in_progress")
# The moments a batch reports as `<event>_at`, besides created_at and expires_at.
_EVENTS = ("in_progress", "finalizing", "completed", "failed", "expired", "cancelling", "cancelled")

_EXPIRED = "This request could not be executed before the completion window expired."
_CANCELLED = "This request was not executed because the batch was cancelled."
_SERVER_ERROR = (
    "The server had an error while processing your request (injected by the test double)."
)
_BATCH_FAILED = "The batch failed before any request ran (injected by the test double)."


class BatchSettings(Protocol):
    """The server settings batches are processed with; a `JudgeServerConfig` is one."""

    @property
    def seed(self) -> int: ...
    @property
    def batch_seconds(self) -> float: ...
    @property
    def batch_failure_rate(self) -> float: ...
    @property
    def batch_expire_after(self) -> float | None: ...
    @property
    def batch_fail(self) -> bool: ...
    @property
    def batch_max_requests(self) -> int: ...
    @property
    def batch_max_bytes(self) -> int: ...


def validate_batch_settings(settings: BatchSettings) -> None:
    """Refuse batch settings that would make the double behave in an undefined way."""
    if settings.batch_seconds < 0:
        raise ValueError("batch_seconds must not be negative")
    if not 0.0 <= settings.batch_failure_rate <= 1.0:
        raise ValueError(
            f"batch_failure_rate must be a fraction in [0, 1], not {settings.batch_failure_rate}"
        )
    expire_after = settings.batch_expire_after
    if expire_after is not None and not 0.0 <= expire_after <= 1.0:
        raise ValueError(
            f"batch_expire_after must be a fraction in [0, 1] or None, not {expire_after}"
        )
    for name, limit in (
        ("batch_max_requests", settings.batch_max_requests),
        ("batch_max_bytes", settings.batch_max_bytes),
    ):
        if limit <= 0:
            raise ValueError(f"{name} must be positive, not {limit}")


def api_of(route: str) -> str | None:
    """ "files" or "batches" when `route` (a path without query) belongs to that API, else None."""
    for api in ("files", "batches"):
        if route == f"/v1/{api}" or route.startswith(f"/v1/{api}/"):
            return api
    return None


class LineAnswer(Protocol):
    """Answers one request line like a synchronous POST to `url`: (HTTP status, JSON body)."""

    def __call__(self, url: str, body: Mapping[str, Any]) -> tuple[int, Any]: ...


@dataclass(frozen=True)
class ApiResponse:
    """An HTTP reply of these APIs: a JSON-able payload, or bytes for a file's content."""

    status: int
    payload: Any
    content_type: str = "application/json"


class _ApiError(Exception):
    """A request refused with an OpenAI-style error body."""

    def __init__(
        self,
        status: int,
        message: str,
        param: str | None = None,
        code: str | None = None,
    ) -> None:
        super().__init__(message)
        self.status = status
        self.param = param
        self.code = code

    def response(self) -> ApiResponse:
        return ApiResponse(self.status, _error_body(str(self), "invalid_request_error", self))


def _error_body(message: str, kind: str, error: _ApiError | None = None) -> dict[str, Any]:
    param, code = (error.param, error.code) if error is not None else (None, None)
    return {"error": {"message": message, "type": kind, "param": param, "code": code}}


# --------------------------------------------------------------------------------------------
# Files
# --------------------------------------------------------------------------------------------


@dataclass
class _File:
    id: str
    filename: str
    purpose: str
    content: bytes
    created_at: int

    def payload(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "object": "file",
            "bytes": len(self.content),
            "created_at": self.created_at,
            "filename": self.filename,
            "purpose": self.purpose,
            "status": "processed",  # deprecated by OpenAI, still required by the SDK's model
            "status_details": None,
            "expires_at": None,
        }


@dataclass(frozen=True)
class _FormField:
    filename: str | None
    data: bytes


def _form_fields(body: bytes, content_type: str) -> dict[str, _FormField]:
    """The fields of a multipart/form-data body, by name."""
    if not content_type.lower().startswith("multipart/form-data"):
        raise _ApiError(400, "upload files as multipart/form-data")
    header = f"Content-Type: {content_type}\r\n\r\n".encode("latin-1")
    message = BytesParser(policy=policy.HTTP).parsebytes(header + body)
    fields: dict[str, _FormField] = {}
    for part in message.walk():
        name = part.get_param("name", header="content-disposition")
        if isinstance(name, str) and not part.is_multipart():
            data = part.get_payload(decode=True)
            fields[name] = _FormField(part.get_filename(), data if isinstance(data, bytes) else b"")
    return fields


# --------------------------------------------------------------------------------------------
# Batches: reading the input file
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Request:
    """One line of a batch input file, checked."""

    custom_id: str
    body: dict[str, Any]


class _LineError(Exception):
    def __init__(self, code: str, message: str, param: str | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.param = param


def _batch_error(
    code: str, message: str, line: int | None = None, param: str | None = None
) -> dict[str, Any]:
    """An entry of a failed batch's `errors.data`."""
    return {"code": code, "message": message, "line": line, "param": param}


def _read_request(text: bytes, endpoint: str) -> _Request:
    try:
        item = json.loads(text)
    except ValueError:  # also undecodable UTF-8
        raise _LineError("invalid_json_line", "This line is not parseable as valid JSON.") from None
    if not isinstance(item, dict):
        raise _LineError("invalid_json_line", "This line is not a JSON object.")
    for name, kind in (("custom_id", str), ("method", str), ("url", str), ("body", dict)):
        if not isinstance(item.get(name), kind):
            raise _LineError(
                "missing_required_parameter", f"Missing required parameter: '{name}'.", name
            )
    if item["method"] != "POST":
        raise _LineError("invalid_method", "Batch requests must use the POST method.", "method")
    if item["url"] != endpoint:
        raise _LineError(
            "invalid_url",
            f"The URL {item['url']!r} of this request does not match the batch endpoint "
            f"{endpoint!r}.",
            "url",
        )
    return _Request(item["custom_id"], item["body"])


def _read_requests(
    content: bytes, endpoint: str, settings: BatchSettings
) -> tuple[list[_Request], list[dict[str, Any]]]:
    """The requests of an input file, or (no requests and) the errors that fail the batch."""
    if len(content) > settings.batch_max_bytes:
        message = (
            f"The input file has {len(content)} bytes, more than the limit of "
            f"{settings.batch_max_bytes}."
        )
        return [], [_batch_error("file_too_large", message)]
    lines = [(number, text) for number, text in enumerate(content.splitlines(), 1) if text.strip()]
    if not lines:
        return [], [_batch_error("empty_file", "The batch input file is empty.")]
    if len(lines) > settings.batch_max_requests:
        message = (
            f"The input file has {len(lines)} requests, more than the limit of "
            f"{settings.batch_max_requests}."
        )
        return [], [_batch_error("too_many_requests", message)]
    requests: list[_Request] = []
    errors: list[dict[str, Any]] = []
    for number, text in lines:
        try:
            request = _read_request(text, endpoint)
            _check_against_others(request, requests)
        except _LineError as error:
            errors.append(_batch_error(error.code, str(error), number, error.param))
            continue
        requests.append(request)
    return ([] if errors else requests), errors


def _check_against_others(request: _Request, earlier: list[_Request]) -> None:
    """A custom_id must be unique, and every request must ask for the same model."""
    if any(other.custom_id == request.custom_id for other in earlier):
        raise _LineError(
            "duplicate_custom_id",
            "The custom_id for this request is a duplicate of another request. The custom_id "
            "parameter must be unique for each request in a batch.",
            "custom_id",
        )
    if earlier and request.body.get("model") != earlier[0].body.get("model"):
        raise _LineError(
            "mismatched_model",
            f"The model {request.body.get('model')!r} differs from the model "
            f"{earlier[0].body.get('model')!r} of the first request: a batch uses one model.",
            "body.model",
        )


# --------------------------------------------------------------------------------------------
# Batches: state and results
# --------------------------------------------------------------------------------------------


@dataclass
class _Batch:
    id: str
    endpoint: str
    input_file_id: str
    metadata: dict[str, str] | None
    settings: BatchSettings  # as they were when the batch was created
    ready_at: float  # time.monotonic() from which the next look finishes the batch
    requests: list[_Request]
    invalid: list[dict[str, Any]]  # why the input file fails validation, if it does
    created_at: int
    status: str = "validating"
    times: dict[str, int] = field(default_factory=dict)  # "in_progress" -> in_progress_at, ...
    errors: list[dict[str, Any]] = field(default_factory=list)  # reported once failed
    completed: int = 0
    failed: int = 0
    usage: Counter[str] = field(default_factory=Counter)
    output_file_id: str | None = None
    error_file_id: str | None = None

    def payload(self) -> dict[str, Any]:
        model = self.requests[0].body.get("model") if self.requests else None
        counted = self.status not in ("validating", "failed")
        return {
            "id": self.id,
            "object": "batch",
            "endpoint": self.endpoint,
            "errors": {"object": "list", "data": self.errors} if self.errors else None,
            "input_file_id": self.input_file_id,
            "completion_window": _COMPLETION_WINDOW,
            "status": self.status,
            "output_file_id": self.output_file_id,
            "error_file_id": self.error_file_id,
            "created_at": self.created_at,
            "expires_at": self.created_at + _COMPLETION_WINDOW_SECONDS,
            **{f"{event}_at": self.times.get(event) for event in _EVENTS},
            "request_counts": {
                "total": len(self.requests) if counted else 0,
                "completed": self.completed,
                "failed": self.failed,
            },
            "metadata": self.metadata,
            "model": model if isinstance(model, str) else None,
            "usage": {
                "input_tokens": self.usage["input"],
                "input_tokens_details": {"cached_tokens": 0},
                "output_tokens": self.usage["output"],
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": self.usage["input"] + self.usage["output"],
            },
        }

    def enter(self, status: str) -> None:
        self.status = status
        self.times[status] = int(time.time())


def _metadata(value: Any) -> dict[str, str] | None:
    if value is None:
        return None
    if (
        not isinstance(value, dict)
        or len(value) > _MAX_METADATA_PAIRS
        or not all(
            isinstance(key, str)
            and isinstance(text, str)
            and len(key) <= _MAX_METADATA_KEY
            and len(text) <= _MAX_METADATA_VALUE
            for key, text in value.items()
        )
    ):
        raise _ApiError(
            400,
            f"'metadata' must map at most {_MAX_METADATA_PAIRS} keys of at most "
            f"{_MAX_METADATA_KEY} characters to strings of at most {_MAX_METADATA_VALUE}.",
            "metadata",
        )
    return dict(value)


def _json_object(body: bytes) -> dict[str, Any]:
    try:
        request = json.loads(body or b"null")
    except ValueError:
        raise _ApiError(400, "the request body is not valid JSON") from None
    if not isinstance(request, dict):
        raise _ApiError(400, "the request body must be a JSON object")
    return request


def _jsonl(lines: list[dict[str, Any]]) -> bytes:
    return "".join(json.dumps(line, ensure_ascii=False) + "\n" for line in lines).encode("utf-8")


def _page_size(query: Mapping[str, list[str]]) -> int:
    text = query.get("limit", [str(_DEFAULT_PAGE)])[0]
    if not text.isdigit() or not 1 <= int(text) <= _MAX_PAGE:
        raise _ApiError(400, f"'limit' must be an integer in [1, {_MAX_PAGE}]", "limit")
    return int(text)


# --------------------------------------------------------------------------------------------
# The API
# --------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class _Call:
    """One request to these APIs."""

    method: str
    route: str  # the path without query string or trailing slash
    query: dict[str, list[str]]
    body: bytes
    content_type: str

    @property
    def ids(self) -> list[str]:
        """The route after /v1/files or /v1/batches, e.g. ["file-1", "content"]."""
        return self.route.split("/")[3:]

    def unknown(self) -> _ApiError:
        return _ApiError(
            404, f"Unknown request URL: {self.method} {self.route}.", code="unknown_url"
        )


class BatchApi:
    """Files and batches in memory, served by `serve`. One lock guards everything."""

    def __init__(self, answer: LineAnswer) -> None:
        self._answer = answer
        self._lock = threading.Lock()
        self._files: dict[str, _File] = {}
        self._batches: dict[str, _Batch] = {}  # in creation order
        self._file_numbers = itertools.count(1)
        self._batch_numbers = itertools.count(1)
        self._line_numbers = itertools.count(1)
        self._stats = _batch_counter()

    def stats(self) -> dict[str, int]:
        """What the batches did: the `batches` section of the server's statistics."""
        with self._lock:
            return dict(self._stats)

    def reset_stats(self) -> None:
        with self._lock:
            self._stats = _batch_counter()

    def serve(
        self, method: str, path: str, body: bytes, content_type: str, settings: BatchSettings
    ) -> ApiResponse:
        """Answer one request to /v1/files... or /v1/batches... (`path` with its query)."""
        route, _, query = path.partition("?")
        call = _Call(method, route.rstrip("/"), parse_qs(query), body, content_type)
        with self._lock:
            try:
                if api_of(call.route) == "files":
                    return self._serve_files(call)
                return self._serve_batches(call, settings)
            except _ApiError as error:
                return error.response()

    def _serve_files(self, call: _Call) -> ApiResponse:
        match call.method, call.ids:
            case "POST", []:
                return ApiResponse(200, self._upload(call.body, call.content_type).payload())
            case "GET", [file_id]:
                return ApiResponse(200, self._file(file_id).payload())
            case "DELETE", [file_id]:
                del self._files[self._file(file_id).id]
                return ApiResponse(200, {"id": file_id, "object": "file", "deleted": True})
            case "GET", [file_id, "content"]:
                return ApiResponse(200, self._file(file_id).content, "application/octet-stream")
        raise call.unknown()

    def _serve_batches(self, call: _Call, settings: BatchSettings) -> ApiResponse:
        match call.method, call.ids:
            case "POST", []:
                return ApiResponse(200, self._create(_json_object(call.body), settings).payload())
            case "GET", []:
                return ApiResponse(200, self._list(call.query))
            case "GET", [batch_id]:
                return ApiResponse(200, self._batch(batch_id).payload())
            case "POST", [batch_id, "cancel"]:
                return ApiResponse(200, self._cancel(batch_id).payload())
        raise call.unknown()

    # -- files -------------------------------------------------------------------------------

    def _upload(self, body: bytes, content_type: str) -> _File:
        fields = _form_fields(body, content_type)
        purpose = fields.get("purpose")
        if purpose is None or purpose.data != b"batch":
            raise _ApiError(400, "the test double stores files of purpose 'batch' only", "purpose")
        upload = fields.get("file")
        if upload is None:
            raise _ApiError(400, "Missing required parameter: 'file'.", "file")
        self._stats["files_uploaded"] += 1
        return self._store(upload.filename or "upload.jsonl", "batch", upload.data)

    def _store(self, filename: str, purpose: str, content: bytes) -> _File:
        file_id = f"file-testdouble{next(self._file_numbers):08d}"
        stored = _File(file_id, filename, purpose, content, int(time.time()))
        self._files[file_id] = stored
        return stored

    def _file(self, file_id: str) -> _File:
        stored = self._files.get(file_id)
        if stored is None:
            raise _ApiError(404, f"No such File object: {file_id}", "id")
        return stored

    # -- batches -----------------------------------------------------------------------------

    def _create(self, request: dict[str, Any], settings: BatchSettings) -> _Batch:
        input_file_id = request.get("input_file_id")
        if not isinstance(input_file_id, str):
            raise _ApiError(400, "Missing required parameter: 'input_file_id'.", "input_file_id")
        endpoint = request.get("endpoint")
        if endpoint not in BATCH_ENDPOINTS:
            supported = " and ".join(BATCH_ENDPOINTS)
            raise _ApiError(400, f"'endpoint' must be {supported} here", "endpoint")
        if request.get("completion_window") != _COMPLETION_WINDOW:
            message = f"'completion_window' must be {_COMPLETION_WINDOW!r}"
            raise _ApiError(400, message, "completion_window")
        metadata = _metadata(request.get("metadata"))
        source = self._files.get(input_file_id)
        if source is None:
            raise _ApiError(404, f"No such File object: {input_file_id}", "input_file_id")
        if source.purpose != "batch":
            raise _ApiError(400, "the input file must have purpose 'batch'", "input_file_id")
        requests, invalid = _read_requests(source.content, endpoint, settings)
        batch = _Batch(
            id=f"batch_testdouble{next(self._batch_numbers):08d}",
            endpoint=endpoint,
            input_file_id=input_file_id,
            metadata=metadata,
            settings=settings,
            ready_at=time.monotonic() + settings.batch_seconds,
            requests=requests,
            invalid=invalid,
            created_at=int(time.time()),
        )
        self._batches[batch.id] = batch
        self._stats["created"] += 1
        return batch

    def _batch(self, batch_id: str) -> _Batch:
        batch = self._batches.get(batch_id)
        if batch is None:
            raise _ApiError(404, f"No batch found with id '{batch_id}'.", "batch_id")
        self._look_at(batch)
        return batch

    def _list(self, query: Mapping[str, list[str]]) -> dict[str, Any]:
        limit = _page_size(query)
        newest_first = list(reversed(self._batches.values()))
        start = 0
        after = query.get("after", [None])[0]
        if after is not None:
            start = next((i + 1 for i, b in enumerate(newest_first) if b.id == after), -1)
            if start < 0:
                raise _ApiError(400, f"'after' is not a batch id: {after!r}", "after")
        page = newest_first[start : start + limit]
        for batch in page:
            self._look_at(batch)
        return {
            "object": "list",
            "data": [batch.payload() for batch in page],
            "first_id": page[0].id if page else None,
            "last_id": page[-1].id if page else None,
            "has_more": start + limit < len(newest_first),
        }

    def _cancel(self, batch_id: str) -> _Batch:
        batch = self._batch(batch_id)
        if batch.status not in _ACTIVE:
            raise _ApiError(409, f"Cannot cancel a batch with status '{batch.status}'.")
        batch.enter("cancelling")
        return batch

    # -- processing --------------------------------------------------------------------------

    def _look_at(self, batch: _Batch) -> None:
        """Move the batch on as far as the time since its creation allows."""
        if batch.status == "cancelling":
            cancelled = [
                self._unexecuted(request, "batch_cancelled", _CANCELLED)
                for request in batch.requests
            ]
            self._write_results(batch, [], cancelled)
            batch.enter("cancelled")
            self._stats["cancelled"] += 1
            return
        if batch.status == "validating" and not batch.invalid:
            batch.enter("in_progress")
        if batch.status in _ACTIVE and time.monotonic() >= batch.ready_at:
            self._finish(batch)

    def _finish(self, batch: _Batch) -> None:
        settings = batch.settings
        if batch.invalid or settings.batch_fail:
            batch.errors = batch.invalid or [_batch_error("batch_failed", _BATCH_FAILED)]
            batch.enter("failed")
            self._stats["failed"] += 1
            return
        batch.enter("finalizing")
        expire_after = settings.batch_expire_after
        answered = len(batch.requests)
        if expire_after is not None:
            answered = math.floor(expire_after * len(batch.requests))
        draws = random.Random(f"{settings.seed}/{batch.id}")
        outputs: list[dict[str, Any]] = []
        errors: list[dict[str, Any]] = []
        for request in batch.requests[:answered]:
            if draws.random() < settings.batch_failure_rate:
                errors.append(
                    self._executed(request, 500, _error_body(_SERVER_ERROR, "server_error"))
                )
                continue
            status, body = self._answer(batch.endpoint, request.body)
            (outputs if status == 200 else errors).append(self._executed(request, status, body))
        expired = [
            self._unexecuted(request, "batch_expired", _EXPIRED)
            for request in batch.requests[answered:]
        ]
        self._write_results(batch, outputs, errors + expired)
        self._stats["requests_answered"] += len(outputs)
        self._stats["requests_failed"] += len(errors)
        self._stats["requests_expired"] += len(expired)
        final = "completed" if expire_after is None else "expired"
        batch.enter(final)
        self._stats[final] += 1

    def _executed(self, request: _Request, status: int, body: Any) -> dict[str, Any]:
        """A result line for a request that ran: in the output file if `status` is 200."""
        number = next(self._line_numbers)
        return {
            "id": f"batch_req_testdouble{number:08d}",
            "custom_id": request.custom_id,
            "response": {
                "status_code": status,
                "request_id": f"req_testdouble{number:08d}",
                "body": body,
            },
            "error": None,
        }

    def _unexecuted(self, request: _Request, code: str, message: str) -> dict[str, Any]:
        """An error-file line for a request that never ran: expired or cancelled."""
        return {
            "id": f"batch_req_testdouble{next(self._line_numbers):08d}",
            "custom_id": request.custom_id,
            "response": None,
            "error": {"code": code, "message": message},
        }

    def _write_results(
        self, batch: _Batch, outputs: list[dict[str, Any]], errors: list[dict[str, Any]]
    ) -> None:
        for line in outputs:
            usage = line["response"]["body"].get("usage") or {}
            batch.usage["input"] += usage.get("prompt_tokens", 0)
            batch.usage["output"] += usage.get("completion_tokens", 0)
        batch.completed, batch.failed = len(outputs), len(errors)
        if outputs:
            name = f"{batch.id}_output.jsonl"
            batch.output_file_id = self._store(name, "batch_output", _jsonl(outputs)).id
        if errors:
            name = f"{batch.id}_error.jsonl"
            batch.error_file_id = self._store(name, "batch_output", _jsonl(errors)).id


def _batch_counter() -> Counter[str]:
    keys = (
        "created",
        "completed",
        "expired",
        "failed",
        "cancelled",
        "requests_answered",
        "requests_failed",
        "requests_expired",
        "files_uploaded",
    )
    return Counter(dict.fromkeys(keys, 0))
