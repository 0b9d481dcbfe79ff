"""The dashboard's HTML pages: the site monitor, a site, an article (its latest text, a
timeline of its snapshots and versions, a side-by-side diff), a snapshot, and the archived
page itself. Every page carries the navigation bar (``NAV``) and links up and across."""

from __future__ import annotations

import functools
import logging
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import jinja2
from markupsafe import Markup, escape
from sqlalchemy.exc import DBAPIError, NoResultFound
from starlette.convertors import Convertor, register_url_convertor
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route
from starlette.templating import Jinja2Templates

from zeroarchive.copies.network import network
from zeroarchive.copies.read import cluster_of
from zeroarchive.core.clock import utc_minute
from zeroarchive.core.shown import html_safe, masked_url
from zeroarchive.events.next_check import ArticleState, NextCheck, next_check
from zeroarchive.monitor import deadline
from zeroarchive.monitor.archived import HEADERS as ARCHIVED_HEADERS
from zeroarchive.monitor.archived import page_headers, safe_page
from zeroarchive.monitor.charts import bars
from zeroarchive.monitor.clients import SCOPE_KEY as CLIENT_KEY
from zeroarchive.monitor.diff import side_by_side
from zeroarchive.monitor.masking import masked_config
from zeroarchive.monitor.media import item as media_item
from zeroarchive.monitor.media import item_path, screenshot, shown_items
from zeroarchive.monitor.params import optional_number
from zeroarchive.monitor.stats_cache import StatsView
from zeroarchive.monitor.timeline import latest, timeline
from zeroarchive.sources import site_type_names
from zeroarchive.storage.browse import (
    ArticleRow,
    find_article,
    find_sites,
    latest_titles,
    publication_versions,
    recent_articles,
    snapshot_parses,
    snapshot_timeline,
)
from zeroarchive.storage.site_stats import NEW_ARTICLE_DAYS, SiteStats
from zeroarchive.storage.snapshots import read_snapshot

logger = logging.getLogger(__name__)

# The pages themselves run no script and load only this app's stylesheet and frames.
PAGE_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; style-src 'self'; img-src 'self'; frame-src 'self'; "
        "form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}
ACTIVE_CHOICES = {"": "all", "yes": "active", "no": "inactive"}
#: The navigation bar, in one place: (path, label). A page whose path starts with an
#: entry's path shows that entry as current. /search and /events are other modules' pages.
NAV = (("/sites", "Sites"), ("/search", "Search"), ("/events", "Events"))
#: Rows of a site page's "copies from" and "copied by" tables (most stories first).
COPY_SITES = 20


class IdConvertor(Convertor[int]):
    """A database id or unix time in a path: at most 18 digits, so it always fits a signed
    64-bit column (a longer one is a 404, not an overflow in the driver)."""

    regex = "[0-9]{1,18}"

    def convert(self, value: str) -> int:
        return int(value)

    def to_string(self, value: int) -> str:
        return str(value)


register_url_convertor("id", IdConvertor())


def when(ts: int | None) -> str:
    """A unix time as UTC for people; 0 or None is "never".

    >>> when(1_700_000_000), when(0)
    ('2023-11-14 22:13', 'never')
    """
    return utc_minute(ts)


def delay(seconds: float) -> str:
    """A delay for people, to the minute under a day, to the hour beyond.

    >>> delay(0), delay(45), delay(150), delay(3 * 3600 + 120), delay(2 * 86400 + 7300)
    ('0 s', '45 s', '2 min', '3 h 2 min', '2 d 2 h')
    """
    seconds = int(seconds)
    if seconds < 60:
        return f"{seconds} s"
    if seconds < 3600:
        return f"{seconds // 60} min"
    if seconds < 86400:
        return f"{seconds // 3600} h {seconds % 3600 // 60} min"
    return f"{seconds // 86400} d {seconds % 86400 // 3600} h"


def article_check(row: ArticleRow) -> NextCheck:
    """When the article is looked at next, and why (zeroarchive/events/next_check.py)."""
    return next_check(
        ArticleState(
            next_snapshot_at=row.next_snapshot_at,
            watch_at=row.watch_at,
            gone_at=row.gone_at,
            gone_evidence=row.gone_evidence,
            deleted_at=row.deleted_at,
            stop_reason=row.stop_reason,
            redirect_to=row.redirect_to,
            failure_count=row.failure_count,
        )
    )


def _finalize(value: Any) -> Any:
    """Every ``{{ value }}`` of every template, before HTML escaping: no control character
    reaches a page as itself (escaped as in zeroarchive.core.shown)."""
    # Most values are numbers, times and ASCII words: the checks of C are enough for them.
    if type(value) is str and not (value.isascii() and value.isprintable()):
        return html_safe(value)
    return value


def shown_url(url: str | None) -> Markup:
    """A URL shown to a person: credentials masked, controls escaped, isolated left to
    right (an override or right-to-left text in it reorders nothing around it).

    >>> shown_url("https://u:pw@h.example/\\u202ea<b>\\x01")
    Markup('<bdi dir="ltr">https://***@h.example/\\u202ea&lt;b&gt;\\\\x01</bdi>')
    """
    # Concatenated, not Markup.format: that formats in Python, a tenth of the dashboard.
    return Markup(f'<bdi dir="ltr">{escape(html_safe(masked_url(url or "")))}</bdi>')


def shown(text: Any) -> Markup:
    """Text from the web or the sites' table (a site's name, a title, evidence) shown
    inline: credentials masked, controls escaped, isolated in its own direction.

    >>> shown("saved:u:pw@farm.example\\u202e"), shown(None)
    (Markup('<bdi>saved:***@farm.example\\u202e</bdi>'), Markup('<bdi></bdi>'))
    """
    return Markup(f"<bdi>{escape(html_safe(masked_url('' if text is None else str(text))))}</bdi>")


templates = Jinja2Templates(
    env=jinja2.Environment(
        loader=jinja2.FileSystemLoader(Path(__file__).parent / "templates"),
        autoescape=jinja2.select_autoescape(),
        finalize=_finalize,
    )
)
templates.env.filters["when"] = when
templates.env.filters["delay"] = delay
templates.env.filters["next_check"] = article_check
# Plain masked text, for where markup cannot go (a title, an attribute, an option).
templates.env.filters["masked_url"] = masked_url
templates.env.filters["shown_url"] = shown_url
templates.env.filters["shown"] = shown


def current_nav(path: str) -> str:
    """The navigation entry a path belongs to ("/" is the sites' dashboard).

    >>> current_nav("/"), current_nav("/articles/5"), current_nav("/search"), current_nav("/x")
    ('/sites', '/sites', '/search', '')
    """
    if path == "/" or path.startswith(("/sites", "/articles")):
        return "/sites"
    return next((entry for entry, _ in NAV if path.startswith(entry)), "")


def render(request: Request, name: str, context: dict[str, Any], status: int = 200) -> Response:
    """A page of the monitor from ``templates/``, with what base.html needs (the navigation
    bar, the time of the counts) and the pages' security headers. Other pages (search,
    events) render through it too, so they get the same bar."""
    stats: StatsView = request.app.state.stats.current()
    context = {
        "stats_counted_at": stats.counted_at,
        "nav": NAV,
        "current": current_nav(request.url.path),
        **context,
    }
    return templates.TemplateResponse(
        request, name, context, status_code=status, headers=PAGE_HEADERS
    )


def _not_found(request: Request, what: str) -> Response:
    return render(request, "not_found.html", {"what": what}, status=404)


def timed(handler: Callable[[Request], Response]) -> Callable[[Request], Awaitable[Response]]:
    """A page as a GraphQL query is run: in a thread of its own, one of MONITOR_WORKERS
    (503 at once when every one is busy), under MONITOR_REQUEST_SECONDS. At the deadline
    (or when the server stops) its statements are cut, its long loops (diffs, snippets)
    stop at their next check, and the client has its 503, in one log line. The worker is
    given back when the thread ends, not at the 503: the cap counts threads that run."""

    @functools.wraps(handler)
    async def run(request: Request) -> Response:
        state = request.app.state
        workers: threading.BoundedSemaphore = state.workers
        if not workers.acquire(blocking=False):
            why = f"busy: {state.config.limits.workers} requests are running"
            return state.refusals.plain(request.scope, 503, why, **{"Retry-After": "1"})

        def work() -> Response:
            try:
                return handler(request)
            except DBAPIError:
                if deadline.expired():
                    raise deadline.TimeUp("the request ran out of time") from None
                raise
            finally:
                workers.release()

        try:
            return await deadline.run_with_deadline(
                work, state.config.limits.request_seconds, state.stopping
            )
        except deadline.TimeUp:
            why = "the page ran out of time (MONITOR_REQUEST_SECONDS)"
            return state.refusals.plain(request.scope, 503, why)

    return run


def flags(row: SiteStats) -> list[str]:
    """What is wrong with a site, for the dashboard's flag column."""
    found = []
    if row.quiet:
        found.append("quiet")
    if row.failing:
        found.append("failing")
    if row.blocked:
        found.append("blocked")
    if row.unanswered == "never":
        found.append("never-answered")
    elif row.unanswered == "stopped":
        found.append("stopped-answering")
    return found


def _dashboard_label(row: SiteStats) -> str:
    return f"new articles per day of {masked_url(row.name)}"


class Charts:
    """Each site's chart, drawn once per count: the dashboard shows hundreds of them, and
    drawing them took more time than the rest of the page."""

    def __init__(self, days: int) -> None:
        self.days = days
        self._view: StatsView | None = None
        self._drawn: dict[int, Markup] = {}

    def draw_all(self, view: StatsView) -> None:
        """Draw every site's chart of a fresh count (in the background, after counting)."""
        for row in view.sites:
            self.of(view, row.site_id, _dashboard_label(row))

    def of(self, view: StatsView, site_id: int, label: str) -> Markup:
        if view is not self._view:
            self._view, self._drawn = view, {}
        drawn = self._drawn.get(site_id)
        if drawn is None:
            counts = view.recent(site_id, self.days)
            macro = templates.env.get_template("_macros.html").module.chart  # type: ignore[attr-defined]
            drawn = Markup(macro(bars(counts, view.days[-len(counts) :]), label))
            self._drawn[site_id] = drawn
        return drawn


def dashboard(request: Request) -> Response:
    view: StatsView = request.app.state.stats.current()
    charts: Charts = request.app.state.charts
    chosen_type = request.query_params.get("type", "")
    chosen_category = request.query_params.get("category", "")
    chosen_active = request.query_params.get("active", "")
    if chosen_active not in ACTIVE_CHOICES:
        chosen_active = ""
    urls = {site.site_id: site.url for site in find_sites(request.app.state.engine)}
    rows = [
        row
        for row in view.sites
        if (not chosen_type or row.type == chosen_type)
        and (not chosen_category or row.category == chosen_category)
        and (not chosen_active or row.is_active == (chosen_active == "yes"))
    ]
    return render(
        request,
        "dashboard.html",
        {
            "rows": [
                (
                    row,
                    flags(row),
                    charts.of(view, row.site_id, _dashboard_label(row)),
                    urls.get(row.site_id, ""),
                )
                for row in rows
            ],
            "all_sites": len(view.sites),
            "new_days": NEW_ARTICLE_DAYS,
            "types": site_type_names(),
            "categories": sorted({row.category for row in view.sites if row.category}),
            "active_choices": ACTIVE_CHOICES,
            "chosen": {
                "type": chosen_type,
                "category": chosen_category,
                "active": chosen_active,
            },
            "chart_days": charts.days,
            "counting_seconds": view.seconds,
            "refused": request.app.state.refusals.total,
        },
    )


def site_page(request: Request) -> Response:
    site_id = request.path_params["site_id"]
    engine = request.app.state.engine
    found = find_sites(engine, site_id)
    if not found:
        return _not_found(request, f"site {site_id}")
    view: StatsView = request.app.state.stats.current()
    row = view.of_site(site_id)
    articles = recent_articles(engine, site_id, request.app.state.config.site_articles)
    copies = network(engine, site_id=site_id)
    return render(
        request,
        "site.html",
        {
            "site": found[0],
            "config": masked_config(found[0].config),
            "row": row,
            "flags": flags(row) if row is not None else [],
            "new_days": NEW_ARTICLE_DAYS,
            "chart": request.app.state.charts.of(view, site_id, "new articles per day"),
            "chart_days": request.app.state.charts.days,
            "articles": articles,
            "titles": latest_titles(engine, [found.article_id for found in articles]),
            "copies_from": copies.copies_from(site_id)[:COPY_SITES],
            "copied_by": copies.copied_by(site_id)[:COPY_SITES],
        },
    )


def article_page(request: Request) -> Response:
    article_id = request.path_params["article_id"]
    engine = request.app.state.engine
    found = find_article(engine, article_id)
    if found is None:
        return _not_found(request, f"article {article_id}")
    versions = publication_versions(engine, article_id)
    by_id = {version.publication_id: version for version in versions}
    diff = None
    old_id = optional_number(request.query_params, "a", 0)
    new_id = optional_number(request.query_params, "b", 0)
    if old_id in by_id and new_id in by_id:
        diff = side_by_side(by_id[old_id].text, by_id[new_id].text)
    elif len(versions) >= 2:
        old_id, new_id = versions[-2].publication_id, versions[-1].publication_id
    sites = find_sites(engine, found.site_id)
    snapshots = snapshot_timeline(engine, article_id)
    return render(
        request,
        "article.html",
        {
            "article": found,
            "site": sites[0] if sites else None,
            "latest": latest(versions),
            "version_of": {version.publication_id: version.version for version in versions},
            "timeline": timeline(snapshots, versions, snapshot_parses(engine, article_id)),
            "snapshots": snapshots,
            "versions": versions,
            "old": by_id.get(old_id),
            "new": by_id.get(new_id),
            "diff": diff,
            "recheck_token": recheck_token(request),
            "rechecking": request.query_params.get("rechecking") == "1",
            "copies": cluster_of(engine, article_id),
        },
    )


def recheck_token(request: Request) -> str | None:
    """The token of a page's Recheck form when this client may save (save_page.py), else
    None: the page shows no button."""
    saver = getattr(request.app.state, "saver", None)
    return saver.offer(request.scope.get(CLIENT_KEY)) if saver is not None else None


def snapshot_page(request: Request) -> Response:
    article_id = request.path_params["article_id"]
    snapshot_at = request.path_params["snapshot_at"]
    engine = request.app.state.engine
    found = find_article(engine, article_id)
    snapshots = snapshot_timeline(engine, article_id)
    snapshot = next((s for s in snapshots if s.snapshot_at == snapshot_at), None)
    if found is None or snapshot is None:
        return _not_found(request, f"snapshot {snapshot_at} of article {article_id}")
    sites = find_sites(engine, found.site_id)
    shot = screenshot(request, article_id, snapshot_at)
    return render(
        request,
        "snapshot.html",
        {
            "article": found,
            "site": sites[0] if sites else None,
            "snapshot": snapshot,
            "timeline": snapshots,
            "screenshot": shot,
            "screenshot_path": None if shot is None or not shot.sha256 else item_path(shot.sha256),
        },
    )


def archived_page(request: Request) -> Response:
    article_id = request.path_params["article_id"]
    snapshot_at = request.path_params["snapshot_at"]
    try:
        stored = read_snapshot(request.app.state.engine, article_id, snapshot_at)
    except NoResultFound:
        return Response("no such snapshot", 404, headers=ARCHIVED_HEADERS, media_type="text/plain")
    except Exception as exc:
        logger.error(
            "Monitor: snapshot %s of article %s unreadable (%s: %s)",
            snapshot_at,
            article_id,
            type(exc).__name__,
            str(exc)[:200],
        )
        return Response(
            "this snapshot could not be read (see the monitor's log)",
            500,
            headers=ARCHIVED_HEADERS,
            media_type="text/plain",
        )
    items = shown_items(request, article_id, snapshot_at)
    body, media_type = safe_page(stored.raw, stored.encoding, stored.final_url, items)
    origin = f"{request.url.scheme}://{request.url.netloc}"
    return Response(body, headers=page_headers(origin), media_type=f"{media_type}; charset=utf-8")


def routes() -> list[Route]:
    return [
        Route("/", timed(dashboard), name="home"),
        Route("/sites", timed(dashboard), name="dashboard"),
        Route("/sites/{site_id:id}", timed(site_page), name="site"),
        Route("/articles/{article_id:id}", timed(article_page), name="article"),
        Route(
            "/articles/{article_id:id}/snapshots/{snapshot_at:id}",
            timed(snapshot_page),
            name="snapshot",
        ),
        Route(
            "/articles/{article_id:id}/snapshots/{snapshot_at:id}/page",
            timed(archived_page),
            name="archived",
        ),
        Route("/media/{digest}", timed(media_item), name="media"),
    ]
