"""Getting logs in: a log writer for application code, the LangChain and LlamaIndex handlers
that feed it, and the importer of existing traces (`ragas-ops import`).

`import ragas_ops.capture` needs no framework: the LangChain handler is in
`ragas_ops.capture.langchain` (extra `langchain`), the LlamaIndex one in
`ragas_ops.capture.llamaindex` (extra `llamaindex`).
"""

from __future__ import annotations

from ragas_ops.capture.writer import (
    LogWriter,
    append,
    configure,
    default_writer,
)

__all__ = ["LogWriter", "append", "configure", "default_writer"]
