"""A LangChain callback handler that logs each run of a retrieval chain to the log lake.

    from ragas_ops.capture.langchain import RagasOpsCallbackHandler

    handler = RagasOpsCallbackHandler(writer, app="support-bot")
    chain.invoke(question, config={"callbacks": [handler]})   # or chain.with_config(...)

For each top-level run (a run without a parent), it logs the question (the run's input: a
string, or the `question`/`query`/`input` key of a dict), the text of every document that a
retriever returned inside the run (in retrieval order; their ids and metadata go in the
`context_ids` and `context_metadata` columns, as JSON) or, when no `BaseRetriever` ran, of
the documents that any step of the run returned (a `RunnableLambda(search)`, a tool, a
custom runnable: any step whose output is a list of LangChain `Document`s; a document
returned by several steps is logged once), and the run's final output as the
answer (a string, a message's content, or the `answer`/`output`/`result` key of a dict). The
interaction's id is the run id. Nested runs are attached to their top-level run through their
parent run ids, so concurrent runs (threads, `abatch`, `ainvoke`) never mix. The run's
`metadata` (from the invoke config, e.g. `{"tenant": "acme"}`) and the chat model's name are
logged as segment columns. A run that fails is not logged. A chain in which no step
returned a document is logged with no contexts (its rows will score `invalid_input`), and
the handler says so once per chain name, as a warning.

Needs the `langchain` extra (langchain-core).
"""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from uuid import UUID

from langchain_core.callbacks import BaseCallbackHandler
from langchain_core.documents import Document

from ragas_ops.capture.writer import RESERVED, LogWriter, check_metadata_names, default_writer

QUESTION_KEYS = ("question", "query", "input", "user_input", "q")
ANSWER_KEYS = ("answer", "output", "result", "response", "text", "content")
logger = logging.getLogger(__name__)


@dataclass
class _Run:
    question: str | None = None
    retriever_query: str | None = None
    contexts: list[str] = field(default_factory=list)
    context_ids: list[str | None] = field(default_factory=list)
    context_metadata: list[dict[str, Any]] = field(default_factory=list)
    metadata: dict[str, Any] = field(default_factory=dict)
    model: str | None = None
    name: str = "chain"
    step_documents: list[Document] = field(default_factory=list)
    """Documents returned by steps that are not retrievers, in the order the steps ended."""

    def add_documents(self, documents: Sequence[Any]) -> None:
        for document in documents:
            self.contexts.append(str(getattr(document, "page_content", document)))
            document_id = getattr(document, "id", None)
            self.context_ids.append(None if document_id is None else str(document_id))
            self.context_metadata.append(dict(getattr(document, "metadata", None) or {}))

    def use_step_documents(self) -> None:
        """Without a retriever, the steps' documents are the contexts, each once."""
        if self.contexts:
            return
        seen: set[tuple[str | None, str]] = set()
        for document in self.step_documents:
            key = (None if document.id is None else str(document.id), document.page_content)
            if key not in seen:
                seen.add(key)
                self.add_documents([document])


class RagasOpsCallbackHandler(BaseCallbackHandler):
    """Logs question, retrieved contexts and answer of each top-level LangChain run."""

    run_inline = True  # cheap and thread-safe: no need for an executor in async runs
    raise_error = False

    def __init__(self, writer: LogWriter | None = None, **metadata: Any) -> None:
        """`writer`: where to log (default: the process-wide writer). `metadata`: segment
        columns written on every row (e.g. `app="support-bot"`, `retriever="bm25"`)."""
        check_metadata_names(metadata)
        super().__init__()
        self.writer = writer
        self.metadata = metadata
        self._lock = threading.Lock()
        self._runs: dict[UUID, _Run] = {}
        self._root_of: dict[UUID, UUID] = {}
        self._warned: set[str] = set()

    # -- run bookkeeping -----------------------------------------------------------------------

    def _root(self, run_id: UUID, parent_run_id: UUID | None) -> UUID | None:
        """The top-level run of `run_id`, remembering it (None if the root is unknown)."""
        with self._lock:
            if parent_run_id is None:
                return run_id if run_id in self._runs else None
            root = self._root_of.get(parent_run_id, parent_run_id)
            if root not in self._runs:
                return None
            self._root_of[run_id] = root
            return root

    def on_chain_start(
        self,
        serialized: dict[str, Any] | None,
        inputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        if parent_run_id is not None:
            self._root(run_id, parent_run_id)
            return
        run = _Run(
            question=_question(inputs),
            metadata=_segment_metadata(metadata),
            name=_chain_name(serialized, kwargs),
        )
        with self._lock:
            self._runs[run_id] = run

    def on_retriever_start(
        self,
        serialized: dict[str, Any] | None,
        query: str,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        root = self._root(run_id, parent_run_id)
        if root is not None:
            with self._lock:
                run = self._runs[root]
                if run.retriever_query is None:
                    run.retriever_query = query

    def on_retriever_end(
        self,
        documents: Sequence[Any],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        with self._lock:
            root = self._root_of.get(run_id)
            run = self._runs.get(root) if root is not None else None
            if run is None:
                return
            run.add_documents(documents)

    def on_chat_model_start(
        self,
        serialized: dict[str, Any] | None,
        messages: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._model_started(run_id, parent_run_id, metadata)

    def on_llm_start(
        self,
        serialized: dict[str, Any] | None,
        prompts: list[str],
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        metadata: dict[str, Any] | None = None,
        **kwargs: Any,
    ) -> None:
        self._model_started(run_id, parent_run_id, metadata)

    def _model_started(
        self, run_id: UUID, parent_run_id: UUID | None, metadata: dict[str, Any] | None
    ) -> None:
        root = self._root(run_id, parent_run_id)
        name = (metadata or {}).get("ls_model_name")
        if root is not None and name:
            with self._lock:
                run = self._runs[root]
                if run.model is None:
                    run.model = str(name)

    def on_chain_end(
        self,
        outputs: Any,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        if parent_run_id is not None:
            self._step_ended(run_id, outputs)
            return
        run = self._finish(run_id)
        if run is None:
            return
        run.use_step_documents()
        if not run.contexts:
            self._warn_no_documents(run.name)
        metadata: dict[str, Any] = {**self.metadata, **run.metadata}
        if run.model is not None:
            metadata.setdefault("model", run.model)
        if run.context_ids and any(value is not None for value in run.context_ids):
            metadata["context_ids"] = json.dumps(run.context_ids)
        if any(run.context_metadata):
            metadata["context_metadata"] = json.dumps(
                run.context_metadata, default=str, ensure_ascii=False
            )
        writer = self.writer or default_writer()
        writer.append(
            run.question if run.question is not None else run.retriever_query,
            run.contexts,
            _answer(outputs),
            id=str(run_id),
            **metadata,
        )

    def _step_ended(self, run_id: UUID, outputs: Any) -> None:
        """Keep the documents a nested step returned (a list of `Document`s, or one)."""
        documents = _documents(outputs)
        if not documents:
            return
        with self._lock:
            root = self._root_of.get(run_id)
            run = self._runs.get(root) if root is not None else None
            if run is not None:
                run.step_documents.extend(documents)

    def _warn_no_documents(self, name: str) -> None:
        with self._lock:
            if name in self._warned:
                return
            self._warned.add(name)
        logger.warning(
            "ragas-ops capture: no step of the LangChain chain %r returned LangChain "
            "Documents (no retriever, no runnable returning a list of Document), so its "
            "interactions are logged with contexts=[] and will score invalid_input. Return "
            "Documents from the retrieval step, or log with LogWriter.append(question, "
            "contexts, answer). Said once per chain.",
            name,
        )

    def on_chain_error(
        self,
        error: BaseException,
        *,
        run_id: UUID,
        parent_run_id: UUID | None = None,
        **kwargs: Any,
    ) -> None:
        if parent_run_id is None:
            self._finish(run_id)

    def _finish(self, root: UUID) -> _Run | None:
        with self._lock:
            run = self._runs.pop(root, None)
            if run is not None:
                for child in [child for child, of in self._root_of.items() if of == root]:
                    del self._root_of[child]
            return run


def _documents(outputs: Any) -> list[Document]:
    """`outputs` as documents when it is a non-empty list (or tuple) of `Document`s only, or
    one `Document`; anything else (text, a dict of several values) holds none."""
    if isinstance(outputs, Document):
        return [outputs]
    if (
        isinstance(outputs, list | tuple)
        and outputs
        and all(isinstance(item, Document) for item in outputs)
    ):
        return list(outputs)
    return []


def _chain_name(serialized: Mapping[str, Any] | None, extra: Mapping[str, Any]) -> str:
    """The run's name as LangChain gives it (`name`, or the serialized class name)."""
    name = extra.get("name") or (serialized or {}).get("name")
    if not name and serialized:
        ids = serialized.get("id") or []
        name = ids[-1] if ids else None
    return str(name or "chain")


def _question(inputs: Any) -> str | None:
    if isinstance(inputs, str):
        return inputs
    if isinstance(inputs, Mapping):
        for key in QUESTION_KEYS:
            value = inputs.get(key)
            if isinstance(value, str):
                return value
        texts = [value for value in inputs.values() if isinstance(value, str)]
        return texts[0] if len(texts) == 1 else None
    content = getattr(inputs, "content", None)
    return content if isinstance(content, str) else None


def _answer(outputs: Any) -> str | None:
    if isinstance(outputs, str):
        return outputs
    content = getattr(outputs, "content", None)
    if isinstance(content, str):
        return content
    if isinstance(outputs, Mapping):
        for key in ANSWER_KEYS:
            if key in outputs:
                return _answer(outputs[key])
    return None if outputs is None else str(outputs)


def _segment_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """The invoke config's metadata, less LangChain's own (`ls_*`) and the log's columns."""
    return {
        key: value
        for key, value in (metadata or {}).items()
        if not key.startswith(("ls_", "langgraph_")) and key not in RESERVED
    }
