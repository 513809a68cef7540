"""LlamaIndex: log each query of a query engine to the log lake, through its instrumentation API.

    from ragas_ops.capture.llamaindex import instrument

    handler = instrument(writer, query_engine, app="docs-bot")   # or no engine: all of them
    query_engine.query("How do I rotate my API key?")
    handler.remove()                                              # stop logging

A span handler on LlamaIndex's root dispatcher sees every `query`/`aquery` span of a query
engine close, with its arguments and its result: the question (the query string), the text of
the response's source nodes (in ranking order; their node ids, scores and metadata go in the
`context_ids`, `context_scores` and `context_metadata` columns, as JSON) and the response
text. A query made inside another logged query (a sub-question engine, a router) is not
logged on its own: only the outermost query is. Spans are told apart by their ids (one per
call), so concurrent queries never mix. A query that fails is not logged; a streaming response
is logged with its answer once its text is known (`response_txt`), else without answer.

Needs the `llamaindex` extra (llama-index-core).
"""

from __future__ import annotations

import inspect
import json
import threading
from typing import Any

from llama_index.core.base.base_query_engine import BaseQueryEngine
from llama_index.core.instrumentation import (  # type: ignore[attr-defined]
    get_dispatcher,  # re-exported from llama_index_instrumentation, implicitly
)
from llama_index.core.instrumentation.span_handlers import BaseSpanHandler
from pydantic import PrivateAttr

from ragas_ops.capture.writer import LogWriter, check_metadata_names, default_writer


class _Tracker:
    """The handler's state, in a plain object: pydantic's attribute access is slow, and a
    span handler runs on every span of every call."""

    __slots__ = ("engines", "lock", "metadata", "parents", "queries", "writer")

    def __init__(self) -> None:
        self.writer: LogWriter | None = None
        self.engines: tuple[int, ...] = ()
        self.metadata: dict[str, Any] = {}
        self.parents: dict[str, str | None] = {}
        self.queries: set[str] = set()
        self.lock = threading.Lock()

    def enter(self, id_: str, instance: Any, parent_id: str | None) -> None:
        query = _is_query(id_, instance) and (not self.engines or id(instance) in self.engines)
        with self.lock:
            self.parents[id_] = parent_id
            if query:
                self.queries.add(id_)

    def exit(self, id_: str, bound_args: inspect.BoundArguments, result: Any) -> None:
        with self.lock:
            outermost = id_ in self.queries and not self._inside_query(id_)
            self.forget(id_)
        if outermost:
            self._log(id_, bound_args, result)

    def forget(self, id_: str) -> None:
        self.parents.pop(id_, None)
        self.queries.discard(id_)

    def _inside_query(self, id_: str) -> bool:
        parent = self.parents.get(id_)
        seen = 0
        while parent is not None and seen < 1_000:
            if parent in self.queries:
                return True
            parent = self.parents.get(parent)
            seen += 1
        return False

    def _log(self, id_: str, bound_args: inspect.BoundArguments, result: Any) -> None:
        arguments = bound_args.arguments if bound_args is not None else {}
        query = arguments.get("str_or_query_bundle", next(iter(arguments.values()), None))
        question = getattr(query, "query_str", query)
        nodes = list(getattr(result, "source_nodes", None) or [])
        contexts = [node.node.get_content() for node in nodes]
        metadata: dict[str, Any] = dict(self.metadata)
        if nodes:
            metadata["context_ids"] = json.dumps([node.node.node_id for node in nodes])
            metadata["context_scores"] = json.dumps([node.score for node in nodes])
            node_metadata = [dict(node.node.metadata or {}) for node in nodes]
            if any(node_metadata):
                metadata["context_metadata"] = json.dumps(
                    node_metadata, default=str, ensure_ascii=False
                )
        writer = self.writer or default_writer()
        writer.append(
            question if isinstance(question, str) else None,
            contexts,
            _answer(result),
            id=_uuid_of(id_),
            **metadata,
        )


class RagasOpsSpanHandler(BaseSpanHandler[Any]):
    """Logs the outermost query of each query engine call (see the module's doc)."""

    _tracker: _Tracker = PrivateAttr(default_factory=_Tracker)

    @classmethod
    def class_name(cls) -> str:
        return "RagasOpsSpanHandler"

    def configure(
        self, writer: LogWriter | None, engines: tuple[Any, ...], metadata: dict[str, Any]
    ) -> RagasOpsSpanHandler:
        check_metadata_names(metadata)
        tracker = self._tracker
        tracker.writer = writer
        tracker.engines = tuple(id(engine) for engine in engines)
        tracker.metadata = dict(metadata)
        return self

    def remove(self) -> None:
        """Stop logging: take this handler off LlamaIndex's root dispatcher."""
        dispatcher = get_dispatcher()
        if self in dispatcher.span_handlers:
            dispatcher.span_handlers.remove(self)

    def span_enter(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        parent_id: str | None = None,
        tags: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._tracker.enter(id_, instance, parent_id)

    def span_exit(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        result: Any | None = None,
        **kwargs: Any,
    ) -> None:
        self._tracker.exit(id_, bound_args, result)

    def span_drop(
        self,
        id_: str,
        bound_args: inspect.BoundArguments,
        instance: Any | None = None,
        err: BaseException | None = None,
        **kwargs: Any,
    ) -> None:
        tracker = self._tracker
        with tracker.lock:
            tracker.forget(id_)

    # the abstract methods of BaseSpanHandler, unused: span_enter/exit/drop are overridden
    def new_span(self, *args: Any, **kwargs: Any) -> None:
        return None

    def prepare_to_exit_span(self, *args: Any, **kwargs: Any) -> None:
        return None

    def prepare_to_drop_span(self, *args: Any, **kwargs: Any) -> None:
        return None


def _is_query(id_: str, instance: Any) -> bool:
    method = id_.split("-", 1)[0].rsplit(".", 1)[-1]
    return method in ("query", "aquery") and isinstance(instance, BaseQueryEngine)


def _uuid_of(span_id: str) -> str:
    """The uuid at the end of a span id (`RetrieverQueryEngine.query-<uuid>`)."""
    parts = span_id.split("-")
    return "-".join(parts[-5:]) if len(parts) >= 6 else span_id


def _answer(result: Any) -> str | None:
    if result is None:
        return None
    text = getattr(result, "response", None)
    if isinstance(text, str):
        return text
    text = getattr(result, "response_txt", None)
    if isinstance(text, str):
        return text
    if hasattr(result, "response_gen") or hasattr(result, "async_response_gen"):
        return None  # a stream not consumed yet
    return str(result)


def instrument(
    writer: LogWriter | None = None, *query_engines: Any, **metadata: Any
) -> RagasOpsSpanHandler:
    """Start logging the queries of `query_engines` (of every query engine when none is
    given) to `writer` (default: the process-wide writer). `metadata`: segment columns written
    on every row. Returns the handler; its `remove()` stops logging."""
    handler = RagasOpsSpanHandler().configure(writer, query_engines, metadata)
    get_dispatcher().add_span_handler(handler)
    return handler
