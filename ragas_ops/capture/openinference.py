"""`ragas-ops import`: traces that were logged before ragas-ops, converted into the log lake.

Input: OpenTelemetry spans following the OpenInference semantic conventions (what Arize
Phoenix, OpenLLMetry-style and OpenInference instrumentors of LangChain, LlamaIndex, DSPy...
record), as JSON lines. Each line is one of:

- a span as the OpenTelemetry SDK writes it (`span.to_json()`, e.g. ConsoleSpanExporter or a
  file exporter): `name`, `context.trace_id`, `context.span_id`, `parent_id`, `start_time`,
  `attributes` (flat dotted keys, or nested objects and lists);
- an OTLP/JSON export (`{"resourceSpans": [{"scopeSpans": [{"spans": [...]}]}]}`), spans with
  `traceId`, `spanId`, `parentSpanId`, `startTimeUnixNano` and typed attribute values;
- a span flattened as in Phoenix's exports (`context.span_id`, `attributes.input.value`...).

Each trace's root span is one interaction: its `input.value` is the question, its
`output.value` the answer (from JSON values, the `question`/`query`/`input` and
`answer`/`output`/`response` keys), and the `retrieval.documents.N.document.content` of the
RETRIEVER spans below it, in the order they started, are the contexts (their ids, scores and
metadata go in `context_ids`, `context_scores`, `context_metadata`). The root's start time is
the timestamp (hence the day partition), its span id the interaction's id; `trace_id`,
`session_id`, `user_id`, the first LLM span's `llm.model_name` (as `model`) and the keys of the
root's `metadata` attribute become segment columns. A trace without any retrieved document is
skipped (it is not a RAG interaction) unless `keep_without_contexts` is set.

Files are named after a hash of the input, so importing the same export again replaces its
files instead of duplicating rows.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ragas_ops.capture.writer import RESERVED, Row, day_of, write_rows

QUESTION_KEYS = ("question", "query", "input", "query_str", "user_input")
ANSWER_KEYS = ("answer", "output", "response", "result", "text", "content")


@dataclass
class Span:
    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    start: datetime | None
    attributes: dict[str, Any]

    @property
    def kind(self) -> str:
        return str(self.attributes.get("openinference.span.kind", "")).upper()


@dataclass
class ImportOutcome:
    spans: int = 0
    traces: int = 0
    rows: int = 0
    days: dict[str, int] = field(default_factory=dict)
    files: list[str] = field(default_factory=list)
    skipped: dict[str, int] = field(default_factory=dict)
    """Why traces or lines were not imported -> how many."""

    def skip(self, reason: str) -> None:
        self.skipped[reason] = self.skipped.get(reason, 0) + 1

    def summary_lines(self) -> list[str]:
        lines = [
            f"read {self.spans} span(s) in {self.traces} trace(s); "
            f"imported {self.rows} interaction(s) into {len(self.files)} file(s)"
        ]
        lines += [f"  dt={day}: {rows} row(s)" for day, rows in sorted(self.days.items())]
        lines += [f"  skipped {count}: {reason}" for reason, count in sorted(self.skipped.items())]
        return lines


# -- reading spans ---------------------------------------------------------------------------


def read_spans(lines: Iterable[str], outcome: ImportOutcome) -> Iterator[Span]:
    """The spans of JSON lines in any of the three layouts; bad lines are counted, not fatal."""
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            outcome.skip(f"line {number} is not JSON" if len(outcome.skipped) < 20 else "bad JSON")
            continue
        if not isinstance(record, dict):
            outcome.skip("a line that is not a JSON object")
            continue
        if "\\ud" in line.casefold():  # maybe an escaped lone surrogate, which UTF-8 cannot hold
            record = without_lone_surrogates(record)
        if "resourceSpans" in record:
            for resource in record.get("resourceSpans") or []:
                for scope in (
                    resource.get("scopeSpans") or resource.get("instrumentationLibrarySpans") or []
                ):
                    for span in scope.get("spans") or []:
                        yield _otlp_span(span)
            continue
        span = _sdk_span(record)
        if span is None:
            outcome.skip("a line that is not a span (no trace and span ids)")
            continue
        yield span


def without_lone_surrogates(value: Any) -> Any:
    """`value` with each lone UTF-16 surrogate in its texts as U+FFFD. JSON may escape one
    ("\\udcff", from a UTF-16 string cut in half), but no UTF-8 file can hold it: read as an
    undecodable byte is, it makes its row `invalid_input` when scored, naming the field."""
    if isinstance(value, str):
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace")
    if isinstance(value, list):
        return [without_lone_surrogates(item) for item in value]
    if isinstance(value, dict):
        return {
            without_lone_surrogates(key): without_lone_surrogates(item)
            for key, item in value.items()
        }
    return value


def _sdk_span(record: dict[str, Any]) -> Span | None:
    flat = flatten(record)
    trace_id = flat.get("context.trace_id") or flat.get("trace_id") or flat.get("traceId")
    span_id = flat.get("context.span_id") or flat.get("span_id") or flat.get("spanId")
    if not trace_id or not span_id:
        return None
    attributes = {
        key.removeprefix("attributes."): value
        for key, value in flat.items()
        if key.startswith("attributes.")
    }
    parent = record.get("parent_id") or record.get("parentSpanId") or flat.get("parent_id")
    start = record.get("start_time") or record.get("startTime") or flat.get("start_time")
    return Span(
        trace_id=_hex(trace_id),
        span_id=_hex(span_id),
        parent_id=_hex(parent) if parent else None,
        name=str(record.get("name", "")),
        start=_time(start),
        attributes=attributes,
    )


def _otlp_span(span: dict[str, Any]) -> Span:
    attributes = {
        item["key"]: _otlp_value(item.get("value") or {})
        for item in span.get("attributes") or []
        if isinstance(item, dict) and "key" in item
    }
    parent = span.get("parentSpanId")
    return Span(
        trace_id=_hex(span.get("traceId", "")),
        span_id=_hex(span.get("spanId", "")),
        parent_id=_hex(parent) if parent else None,
        name=str(span.get("name", "")),
        start=_time(span.get("startTimeUnixNano")),
        attributes=flatten(attributes),
    )


_OTLP_SCALARS: dict[str, Any] = {
    "stringValue": str,
    "intValue": int,
    "doubleValue": float,
    "boolValue": bool,
}


def _otlp_value(value: dict[str, Any]) -> Any:
    for kind, convert in _OTLP_SCALARS.items():
        if kind in value:
            return convert(value[kind])
    if "arrayValue" in value:
        return [_otlp_value(item) for item in (value["arrayValue"].get("values") or [])]
    if "kvlistValue" in value:
        return {
            item["key"]: _otlp_value(item.get("value") or {})
            for item in value["kvlistValue"].get("values") or []
        }
    return None


def flatten(value: Any, prefix: str = "") -> dict[str, Any]:
    """Nested objects and lists as one level of dotted keys (`a.b.0.c`)."""
    items: Iterable[tuple[Any, Any]]
    if isinstance(value, Mapping):
        items = value.items()
    elif isinstance(value, list) and prefix:
        items = enumerate(value)
    else:
        return {prefix: value} if prefix else {}
    flat: dict[str, Any] = {}
    for key, item in items:
        name = f"{prefix}.{key}" if prefix else str(key)
        if isinstance(item, Mapping) or (isinstance(item, list) and item and _nested(item)):
            flat.update(flatten(item, name))
        else:
            flat[name] = item
    return flat


def _nested(items: list[Any]) -> bool:
    return any(isinstance(item, Mapping) for item in items)


def _hex(value: Any) -> str:
    return str(value).lower().removeprefix("0x")


def _time(value: Any) -> datetime | None:
    if value is None or value == "":
        return None
    if isinstance(value, int | float) or (isinstance(value, str) and value.isdigit()):
        number = int(value)
        seconds = number / 1e9 if number > 10**14 else number / 1e3 if number > 10**11 else number
        return datetime.fromtimestamp(seconds, UTC)
    try:
        stamp = datetime.fromisoformat(str(value).replace("Z", "+00:00"))
    except ValueError:
        return None
    return stamp.replace(tzinfo=UTC) if stamp.tzinfo is None else stamp.astimezone(UTC)


# -- traces into rows ------------------------------------------------------------------------


def interactions(
    spans: Iterable[Span], outcome: ImportOutcome, *, keep_without_contexts: bool = False
) -> list[Row]:
    """One row per root span of each trace (see the module's doc)."""
    traces: dict[str, dict[str, Span]] = {}
    for span in spans:
        outcome.spans += 1
        trace = traces.setdefault(span.trace_id, {})
        seen = trace.get(span.span_id)
        if seen is not None and seen != span:  # the same span exported twice is no news
            outcome.skip("a span repeated with different content (the later line kept)")
        trace[span.span_id] = span
    outcome.traces = len(traces)
    rows: list[Row] = []
    for trace in traces.values():
        children: dict[str, list[Span]] = {}
        roots = []
        for span in trace.values():
            if span.parent_id and span.parent_id in trace:
                children.setdefault(span.parent_id, []).append(span)
            else:
                roots.append(span)
        for root in roots:
            row = _row(root, _descendants(root, children))
            if row is None:
                outcome.skip("a trace without a start time")
            elif not row[3] and not keep_without_contexts:
                outcome.skip("a trace without retrieved documents (not a RAG interaction)")
            else:
                rows.append(row)
    return rows


def _descendants(root: Span, children: dict[str, list[Span]]) -> list[Span]:
    found: list[Span] = []
    stack = [root]
    seen = {root.span_id}
    while stack:
        for child in children.get(stack.pop().span_id, []):
            if child.span_id not in seen:
                seen.add(child.span_id)
                found.append(child)
                stack.append(child)
    epoch = datetime.min.replace(tzinfo=UTC)
    return sorted(found, key=lambda span: span.start or epoch)


@dataclass
class _Retrieved:
    contexts: list[str] = field(default_factory=list)
    ids: list[Any] = field(default_factory=list)
    scores: list[Any] = field(default_factory=list)
    metadata: list[Any] = field(default_factory=list)
    model: str | None = None


def _retrieved(spans: list[Span]) -> _Retrieved:
    """The documents of the retriever spans, in order, and the first LLM span's model."""
    found = _Retrieved()
    for span in spans:
        for document in _documents(span.attributes):
            found.contexts.append(str(document.get("content", "")))
            found.ids.append(document.get("id"))
            found.scores.append(document.get("score"))
            found.metadata.append(_json_or_text(document.get("metadata")))
        if found.model is None and span.kind == "LLM" and span.attributes.get("llm.model_name"):
            found.model = str(span.attributes["llm.model_name"])
    return found


def _segments(root: Span, found: _Retrieved) -> dict[str, Any]:
    attributes = root.attributes
    metadata: dict[str, Any] = {"trace_id": root.trace_id}
    for name, key in (("session_id", "session.id"), ("user_id", "user.id")):
        if attributes.get(key) is not None:
            metadata[name] = attributes[key]
    if found.model is not None:
        metadata["model"] = found.model
    user_metadata = _json_or_text(attributes.get("metadata"))
    if not isinstance(user_metadata, Mapping):  # nested metadata was flattened
        user_metadata = {
            key.removeprefix("metadata."): value
            for key, value in attributes.items()
            if key.startswith("metadata.")
        }
    for key, value in user_metadata.items():
        if str(key) not in RESERVED:
            metadata.setdefault(str(key), value)
    for name, values in (
        ("context_ids", found.ids),
        ("context_scores", found.scores),
        ("context_metadata", found.metadata),
    ):
        if any(value is not None and value != {} for value in values):
            metadata[name] = json.dumps(values, default=str, ensure_ascii=False)
    return metadata


def _row(root: Span, below: list[Span]) -> Row | None:
    if root.start is None:
        return None
    found = _retrieved([root, *below])
    question = _text_of(root.attributes.get("input.value"), QUESTION_KEYS)
    if question is None:
        question = _first_retrieval_query(below)
    answer = _text_of(root.attributes.get("output.value"), ANSWER_KEYS)
    return (root.span_id, root.start, question, found.contexts, answer, _segments(root, found))


def _documents(attributes: Mapping[str, Any]) -> list[dict[str, Any]]:
    """`retrieval.documents.N.document.FIELD` attributes as a list of {FIELD: value}."""
    documents: dict[int, dict[str, Any]] = {}
    prefix = "retrieval.documents."
    for key, value in attributes.items():
        if not key.startswith(prefix):
            continue
        index, _, rest = key[len(prefix) :].partition(".")
        if not index.isdigit():
            continue
        name = rest.removeprefix("document.")
        head, _, _ = name.partition(".")
        document = documents.setdefault(int(index), {})
        if head == "metadata" and name != "metadata":  # nested metadata was flattened
            document.setdefault("metadata", {})
            if isinstance(document["metadata"], dict):
                document["metadata"][name.removeprefix("metadata.")] = value
        else:
            document[name] = value
    return [documents[index] for index in sorted(documents)]


def _first_retrieval_query(spans: list[Span]) -> str | None:
    for span in spans:
        if span.kind == "RETRIEVER":
            text = _text_of(span.attributes.get("input.value"), QUESTION_KEYS)
            if text is not None:
                return text
    return None


def _json_or_text(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in "{[":
        try:
            return json.loads(value)
        except json.JSONDecodeError:
            return value
    return value


def _text_of(value: Any, keys: tuple[str, ...]) -> str | None:
    """A string value, or the first of `keys` in a JSON object (possibly nested once)."""
    value = _json_or_text(value)
    if isinstance(value, str):
        return value
    if isinstance(value, Mapping):
        for key in keys:
            if key in value:
                found = _text_of(value[key], keys)
                if found is not None:
                    return found
        texts = [item for item in value.values() if isinstance(item, str)]
        if len(texts) == 1:
            return texts[0]
        return None
    if isinstance(value, list) and value:
        last = value[-1]  # chat messages: the last one asks
        content = last.get("content") if isinstance(last, Mapping) else last
        return content if isinstance(content, str) else None
    return None


# -- the import ------------------------------------------------------------------------------


def import_traces(
    paths: list[Path],
    raw_uri: str,
    *,
    s3: Any = None,
    keep_without_contexts: bool = False,
    metadata: Mapping[str, Any] | None = None,
) -> ImportOutcome:
    """Convert the JSON-lines exports at `paths` into `<raw_uri>/dt=DAY/` Parquet files."""
    from ragas_ops.contract.layout import day_folder
    from ragas_ops.storage import locate

    outcome = ImportOutcome()
    digest = hashlib.sha256()
    lines: list[str] = []
    for path in paths:
        # An undecodable byte reads as U+FFFD: its line is skipped if that breaks its JSON,
        # else its row is scored `invalid_input` for the field that holds it.
        with path.open(encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        digest.update(text.encode("utf-8"))  # names the files: imported again, it replaces them
        lines.extend(text.splitlines())
    rows = interactions(
        read_spans(lines, outcome), outcome, keep_without_contexts=keep_without_contexts
    )
    by_day: dict[str, list[Row]] = {}
    for row in sorted(rows, key=lambda row: row[1]):
        by_day.setdefault(day_of(row[1]), []).append(row)
    location = locate(raw_uri, s3)
    name = f"import-openinference-{digest.hexdigest()[:16]}.parquet"
    for day, day_rows in sorted(by_day.items()):
        target = location.child(day_folder(day), name)
        write_rows(target, day_rows, metadata)
        outcome.days[day] = len(day_rows)
        outcome.files.append(target.uri)
        outcome.rows += len(day_rows)
    return outcome


def add_import_parser(commands: Any) -> None:
    """Add `import` to the main parser's subcommands."""
    parser = commands.add_parser(
        "import",
        help="convert exported traces (OpenInference spans, JSON lines) into the log lake",
        description="Convert traces logged before ragas-ops into the input contract, written "
        "as Parquet into <raw_uri>/dt=YYYY-MM-DD/ (the day of each trace's start, in UTC). "
        "Importing the same export again replaces its files.",
    )
    parser.add_argument("files", type=Path, nargs="+", metavar="FILE", help="JSON-lines exports")
    parser.add_argument(
        "--format", choices=["openinference"], default="openinference", help="the export's kind"
    )
    parser.add_argument("--to", dest="raw_uri", help="the log prefix (default: pipeline.raw_uri)")
    parser.add_argument("--config", type=Path, help="TOML config file")
    parser.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="COLUMN=VALUE",
        help="a segment column for every imported row, e.g. --set app=support-bot (repeatable)",
    )
    parser.add_argument(
        "--keep-without-contexts",
        action="store_true",
        help="also import traces without retrieved documents (scored as invalid_input)",
    )
    parser.add_argument("-v", "--verbose", action="store_true")
    parser.set_defaults(run=_run_import)


def _run_import(options: Any) -> int:
    from ragas_ops.config import load_settings

    raw_uri = options.raw_uri or load_settings(options.config).pipeline.raw_uri
    metadata: dict[str, str] = {}
    for pair in options.set:
        column, separator, value = pair.partition("=")
        if not separator or not column or column in RESERVED:
            raise ValueError(f"--set expects COLUMN=VALUE with a segment column, got {pair!r}")
        metadata[column] = value
    missing = [str(path) for path in options.files if not path.is_file()]
    if missing:
        raise ValueError(f"no such file: {', '.join(missing)}")
    outcome = import_traces(
        list(options.files),
        raw_uri,
        keep_without_contexts=options.keep_without_contexts,
        metadata=metadata,
    )
    print("\n".join(outcome.summary_lines()))
    return 0
