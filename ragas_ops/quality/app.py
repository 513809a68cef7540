"""The HTTP side of the "RAG quality" page (`ragas_ops.quality.view`): a small FastAPI app.

    GET /                                   the page (?day=YYYY-MM-DD, ?days=N)
    GET /reports/dt=YYYY-MM-DD/report.html  a day's report from the warehouse (or report.md)

Who may see it is decided by the caller: `create_app(access=...)` takes a FastAPI dependency
that every route depends on (the Airflow plugin passes Airflow's own, so a request without a
valid Airflow session or token gets 401/403 before anything is read). Heavy modules (pyarrow,
the warehouse readers) are imported on the first request, not when the app is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, Response

if TYPE_CHECKING:
    from ragas_ops.config import Settings
    from ragas_ops.storage import Location, S3Options

# The page is static HTML: no script runs, it may only be framed by Airflow's own UI.
PAGE_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'"
# A report holds logged text: shown sandboxed (no script, an origin of its own).
REPORT_POLICY = f"{PAGE_POLICY}; sandbox"


def create_app(
    access: Callable[..., Any],
    *,
    settings: Callable[[], Settings] | None = None,
    s3: Callable[[Settings], S3Options | None] | None = None,
) -> FastAPI:
    """The app. `access` guards every route; `settings` gives the pipeline's settings
    (default: from the environment, as the DAG reads them); `s3` gives S3 credentials for an
    s3:// warehouse (default: the standard AWS chain)."""
    app = FastAPI(
        title="RAG quality",
        dependencies=[Depends(access)],
        docs_url=None,
        redoc_url=None,
        openapi_url=None,
    )

    def warehouse() -> tuple[Settings, Location]:
        from ragas_ops.config import ConfigError, settings_from_environment
        from ragas_ops.storage import StorageError, locate

        try:
            current = settings() if settings else settings_from_environment()
            return current, locate(current.pipeline.warehouse_uri, s3(current) if s3 else None)
        except (ConfigError, StorageError) as error:
            raise HTTPException(500, f"the warehouse cannot be used: {error}") from None

    @app.get("/", response_class=HTMLResponse)
    def quality_page(
        request: Request,
        day: str | None = Query(None, max_length=10),
        days: int = Query(14, ge=1, le=90),
    ) -> HTMLResponse:
        from ragas_ops.config import ConfigError
        from ragas_ops.contract.layout import parse_day
        from ragas_ops.quality.view import load_overview, render_page, tables_at

        try:
            selected = None if day is None else parse_day(day)
        except ValueError as error:
            raise HTTPException(400, str(error)) from None
        current, location = warehouse()
        try:
            tables = tables_at(location, current, s3(current) if s3 else None)
        except ConfigError as error:
            raise HTTPException(500, f"the warehouse cannot be used: {error}") from None
        overview = load_overview(location, current, days=days, selected=selected, tables=tables)
        page = render_page(overview, request.scope.get("root_path", ""), days=days)
        return HTMLResponse(page, headers=_headers(PAGE_POLICY))

    @app.get("/reports/{relative:path}")
    def report(relative: str) -> Response:
        from ragas_ops.quality.view import UnsafePath, read_bytes, report_file

        _, location = warehouse()
        try:
            target, media_type = report_file(location, relative)
        except UnsafePath:
            raise HTTPException(400, "not a report of the warehouse") from None
        content = read_bytes(target)
        if content is None:
            raise HTTPException(404, "no such report")
        return Response(content, media_type=media_type, headers=_headers(REPORT_POLICY))

    return app


def _headers(policy: str) -> dict[str, str]:
    return {
        "Content-Security-Policy": policy,
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store",
        "Referrer-Policy": "same-origin",
    }
