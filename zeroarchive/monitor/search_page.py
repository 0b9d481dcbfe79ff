"""The monitor's /search page: a box, filters, hits with highlighted snippets, links to
each article and its versions, next and previous pages. The same search as the GraphQL
``search`` (search_api.run_search); server-side HTML, no script."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any
from urllib.parse import urlencode

from graphql import GraphQLError
from sqlalchemy.engine import Engine
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from zeroarchive.copies.read import cluster_sizes
from zeroarchive.monitor.pages import render, templates, timed
from zeroarchive.monitor.params import optional_number
from zeroarchive.monitor.search_api import run_search, snippet_html
from zeroarchive.search.index import SORTS, Hit

PER_PAGE = 20
MAX_PAGE = 500

templates.env.filters["snippet_html"] = snippet_html


def collapsed(
    engine: Engine, hits: Sequence[Hit], collapse: bool
) -> tuple[list[Hit], dict[int, int]]:
    """The hits to show and, with ``collapse``, how many copies each shown hit has: a hit
    whose cluster of copies an earlier hit of the page is in is left out."""
    if not collapse:
        return list(hits), {}
    sizes = cluster_sizes(engine, [hit.article_id for hit in hits])
    shown, seen, copies = [], set(), {}
    for hit in hits:
        cluster = sizes.get(hit.article_id)
        if cluster is not None:
            if cluster[0] in seen:
                continue
            seen.add(cluster[0])
            copies[hit.article_id] = cluster[1] - 1
        shown.append(hit)
    return shown, copies


def search_page(request: Request) -> Response:
    params = request.query_params
    q, site = params.get("q", ""), params.get("site", "").strip()
    since, until = params.get("since", ""), params.get("until", "")
    all_versions, fold = params.get("all") == "1", params.get("fold") == "1"
    collapse = params.get("collapse") == "1"
    sort = params.get("sort", "relevance")
    form: dict[str, Any] = {
        "q": q,
        "site": site,
        "since": since,
        "until": until,
        "all": all_versions,
        "fold": fold,
        "collapse": collapse,
        "sort": sort,
    }
    page = optional_number(params, "page", 1, 1, MAX_PAGE)
    context: dict[str, Any] = {"form": form, "sorts": SORTS, "page": page, "error": None}
    context["result"] = None
    status = 200
    if q.strip():
        try:
            result = run_search(
                request.app.state.engine,
                q,
                sites=[site] if site else [],
                since=since or None,
                until=until or None,
                all_versions=all_versions,
                sort=sort,
                fold_chinese=fold,
                first=PER_PAGE,
                offset=(page - 1) * PER_PAGE,
            )
        except GraphQLError as exc:
            context["error"] = exc.message
            status = 400
        else:
            context["result"] = result
            context["hits"], context["copies"] = collapsed(
                request.app.state.engine, result.hits.hits, collapse
            )
            keep = {k: v for k, v in form.items() if v and v is not True}
            keep.update({k: "1" for k in ("all", "fold", "collapse") if form[k]})

            def link(number: int) -> str:
                return "/search?" + urlencode({**keep, "page": number})

            shown = result.offset + len(result.hits.hits)
            context["previous"] = link(page - 1) if page > 1 else None
            context["next"] = link(page + 1) if shown < result.hits.total else None
            context["first_number"] = result.offset + 1
    return render(request, "search.html", context, status)


def routes() -> list[Route]:
    # A plain function (Starlette runs it in its threads) under the monitor's time limit.
    return [Route("/search", timed(search_page), name="search")]
