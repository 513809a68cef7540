"""The HTTP side of the "RAG quality" page (`ragas_ops.quality.view`): a small FastAPI app.

    GET /                                   the page (?day=YYYY-MM-DD, ?days=N)
    GET /reports/dt=YYYY-MM-DD/report.html  a day's report from the warehouse (or report.md)
    GET /label                              the labelling page (?day=, ?after=N skipped rows)
    POST /label                             a row's labels (a form, with its CSRF token)

Who may see it is decided by the caller: `create_app(access=...)` takes a FastAPI dependency
that every route depends on, and `labeller=...` one that names the logged-in user (without it,
there is no labelling page) (the Airflow plugin passes Airflow's own, so a request without a
valid Airflow session or token gets 401/403 before anything is read). Heavy modules (pyarrow,
the warehouse readers) are imported on the first request, not when the app is built.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs, urlsplit

from fastapi import Depends, FastAPI, HTTPException, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from starlette.concurrency import run_in_threadpool

if TYPE_CHECKING:
    from ragas_ops.config import Settings
    from ragas_ops.storage import Location, S3Options

# The page is static HTML: no script runs, it may only be framed by Airflow's own UI.
PAGE_POLICY = "default-src 'none'; style-src 'unsafe-inline'; img-src data:; frame-ancestors 'self'"
# A report holds logged text: shown sandboxed (no script, an origin of its own).
REPORT_POLICY = f"{PAGE_POLICY}; sandbox"
# The labelling page posts its form to itself, and nowhere else; its one script (the keyboard
# shortcuts) runs by the response's nonce.
LABEL_POLICY = f"{PAGE_POLICY}; form-action 'self'"


def label_policy(nonce: str) -> str:
    return f"{LABEL_POLICY}; script-src 'nonce-{nonce}'"


MAX_FORM_BYTES = 16_384


def create_app(
    access: Callable[..., Any],
    *,
    settings: Callable[[], Settings] | None = None,
    s3: Callable[[Settings], S3Options | None] | None = None,
    labeller: Callable[..., Any] | None = None,
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
        from ragas_ops.metrics.criteria import register_criteria
        from ragas_ops.storage import StorageError, locate

        try:
            current = settings() if settings else settings_from_environment()
            register_criteria(current.criteria)  # their titles and label levels
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

    if labeller is not None:
        _add_labelling(app, warehouse, s3, labeller)
    return app


def _add_labelling(
    app: FastAPI,
    warehouse: Callable[[], tuple[Settings, Location]],
    s3: Callable[[Settings], S3Options | None] | None,
    labeller: Callable[..., Any],
) -> None:
    """GET and POST /label (see `ragas_ops.quality.labelling`)."""
    pages = _LabelPages(warehouse, s3)

    @app.get("/label", response_class=HTMLResponse)
    def label_form(
        request: Request,
        day: str | None = Query(None, max_length=10),
        after: int = Query(0, ge=0, le=100_000),
        saved: int | None = Query(None, ge=0, le=1000),
        who: str = Depends(labeller),
    ) -> Response:
        from ragas_ops.quality.labelling import CSRF_COOKIE, new_csrf_token, new_nonce

        csrf = request.cookies.get(CSRF_COOKIE) or new_csrf_token()
        nonce = new_nonce()
        page = pages.render(request, csrf, who, _day_or_400(day), after, saved=saved, nonce=nonce)
        response = HTMLResponse(page, headers=_headers(label_policy(nonce)))
        return pages.with_cookie(request, csrf, response)

    @app.post("/label")
    async def label_save(request: Request, who: str = Depends(labeller)) -> Response:
        from ragas_ops.quality.labelling import CSRF_COOKIE

        form = await _checked_form(request)
        csrf = str(request.cookies.get(CSRF_COOKIE))
        day = _day_or_400(form.get("day"))
        if day is None or not form.get("row_id"):
            raise HTTPException(400, "the form has no day or row")
        after = int(form["after"]) if form.get("after", "").isdigit() else 0
        saved, refused = await run_in_threadpool(pages.save, form, day, who)
        if refused:
            page = await run_in_threadpool(
                pages.render, request, csrf, who, day, after, refused=refused
            )
            return HTMLResponse(page, status_code=400, headers=_headers(LABEL_POLICY))
        root = request.scope.get("root_path", "")
        return RedirectResponse(
            f"{root}/label?day={day}&after={after}&saved={saved}", status_code=303
        )


async def _checked_form(request: Request) -> dict[str, str]:
    """The posted form, once its origin and its CSRF token are checked."""
    from ragas_ops.quality.labelling import CSRF_COOKIE, csrf_ok

    origin = request.headers.get("origin")
    if origin and urlsplit(origin).netloc != request.headers.get("host"):
        raise HTTPException(403, "a form of another site")
    body = await request.body()
    if len(body) > MAX_FORM_BYTES:
        raise HTTPException(413, "the form is too large")
    try:  # a form of another encoding is the sender's mistake: a 400, never a 500
        fields = parse_qs(body.decode("utf-8"), errors="strict", max_num_fields=100)
    except (UnicodeDecodeError, ValueError):
        raise HTTPException(400, "the form is not UTF-8 URL-encoded text") from None
    form = {key: values[0] for key, values in fields.items()}
    if not csrf_ok(request.cookies.get(CSRF_COOKIE), form.get("csrf")):
        raise HTTPException(403, "missing or wrong CSRF token: reload the page")
    return form


class _LabelPages:
    """What the labelling routes read and write, in the warehouse the settings name."""

    def __init__(
        self,
        warehouse: Callable[[], tuple[Settings, Location]],
        s3: Callable[[Settings], S3Options | None] | None,
    ) -> None:
        self.warehouse = warehouse
        self.s3 = s3

    def tables(self) -> tuple[Settings, Any]:
        from ragas_ops.config import ConfigError
        from ragas_ops.quality.view import tables_at

        current, location = self.warehouse()
        try:
            return current, tables_at(location, current, self.s3(current) if self.s3 else None)
        except ConfigError as error:
            raise HTTPException(500, f"the warehouse cannot be used: {error}") from None

    def render(
        self, request: Request, csrf: str, who: str, day: str | None, after: int, **notes: Any
    ) -> str:
        from ragas_ops.labels.store import queue_rows
        from ragas_ops.quality.labelling import label_page

        current, tables = self.tables()
        if day is None:
            days = tables.metrics_days()
            day = days[-1] if days else None
        rows = [] if day is None else queue_rows(tables, day, current, labeller=who)
        base = request.scope.get("root_path", "")
        return label_page(
            base=base, day=day, labeller=who, rows=rows, after=after, csrf=csrf, **notes
        )

    def save(self, form: dict[str, str], day: str, who: str) -> tuple[int, list[str]]:
        """The labels chosen in `form`, checked and written; (saved, refusals)."""
        from ragas_ops.labels.store import Candidate, add_labels
        from ragas_ops.quality.labelling import PAGE_VERSION

        candidates = [
            Candidate(1, day, form["row_id"], key[2:], value, who)
            for key, value in form.items()
            if key.startswith("m_")
        ]
        if not candidates:
            return 0, ["choose a level, or skip the row"]
        current, tables = self.tables()
        # checked and written under one lock: a double click stores one label
        checked, _ = add_labels(tables, candidates, current.metrics.names, PAGE_VERSION)
        if checked.refused:
            return 0, [f"{refused.metric}: {refused.reason}" for refused in checked.refused]
        return checked.accepted_count, []

    @staticmethod
    def with_cookie(request: Request, csrf: str, response: Response) -> Response:
        from ragas_ops.quality.labelling import CSRF_COOKIE

        response.set_cookie(
            CSRF_COOKIE,
            csrf,
            httponly=True,
            samesite="strict",
            secure=request.url.scheme == "https",
            path=f"{request.scope.get('root_path', '')}/label",
        )
        return response


def _day_or_400(day: str | None) -> str | None:
    from ragas_ops.contract.layout import parse_day

    try:
        return None if day is None else parse_day(day)
    except ValueError as error:
        raise HTTPException(400, str(error)) from None


def _headers(policy: str) -> dict[str, str]:
    return {
        "Content-Security-Policy": policy,
        "X-Content-Type-Options": "nosniff",
        "Cache-Control": "no-store",
        "Referrer-Policy": "same-origin",
    }
