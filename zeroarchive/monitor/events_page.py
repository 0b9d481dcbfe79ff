"""The events pages: the latest takedowns, restorations and silent edits with per-site
monthly counts (/events), one event with its diff (/events/{id}), and Atom feeds of them
for the whole archive (/events.atom) and per site (/sites/{id}/events.atom), for a
researcher's feed reader."""

from __future__ import annotations

from collections.abc import Mapping
from xml.etree import ElementTree as ET

from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from zeroarchive.core.clock import utc_iso
from zeroarchive.core.shown import shown
from zeroarchive.events.diff import inline
from zeroarchive.events.store import KINDS, Event, get_event, iter_events, monthly_counts
from zeroarchive.monitor import pages
from zeroarchive.monitor.params import optional_number
from zeroarchive.storage.browse import latest_titles

#: Events on the page and in a feed.
PAGE_EVENTS = 200
FEED_EVENTS = 100
ATOM = "http://www.w3.org/2005/Atom"


def _kinds(request: Request) -> list[str]:
    wanted = [k for k in request.query_params.get("kind", "").split(",") if k in KINDS]
    return wanted or list(KINDS)


def _site(request: Request) -> int | None:
    """The ``site`` filter: an id (at most 18 digits, as in paths), none when absent."""
    site_id = optional_number(request.query_params, "site", -1)
    return None if site_id == -1 else site_id


def events_list(request: Request) -> Response:
    engine = request.app.state.engine
    site_id, kinds = _site(request), _kinds(request)
    events = list(iter_events(engine, site_id, kinds, limit=PAGE_EVENTS, newest_first=True))
    months = monthly_counts(engine, site_id)
    names = {e.site_id: e.site for e in events}
    return pages.render(
        request,
        "events.html",
        {"events": events, "months": months, "names": names, "kinds": kinds, "site_id": site_id},
    )


def event_page(request: Request) -> Response:
    event_id = int(request.path_params["event_id"])
    event = get_event(request.app.state.engine, event_id)
    if event is None:
        return pages._not_found(request, f"event {event_id}")
    return pages.render(request, "event.html", {"event": event})


def atom_feed(
    events: list[Event],
    title: str,
    self_url: str,
    base: str,
    headlines: Mapping[int, str] | None = None,
) -> bytes:
    """An Atom 1.0 feed of events, newest first. Its text (site names, URLs, evidence)
    goes through zeroarchive.core.shown.shown: credentials masked, and the control
    characters XML 1.0 forbids (one in one site's name made the whole feed unparseable)
    written as escapes, with the bidi controls a feed reader would act on. An entry is
    titled with its article's headline (``headlines``, by article id; its URL until it is
    parsed) and says what happened: an edit's diff in short, a deletion's evidence.

    >>> e = Event(3, "deleted", 9, 1, "farm", "https://f.tw/a", 1800000000, "404", 1, 2, None)
    >>> feed = atom_feed([e], "farm", "http://m/sites/1/events.atom", "http://m/")
    >>> b"<title>deleted: https://f.tw/a</title>" in feed, b"2027-01-15T08:00:00Z" in feed
    (True, True)
    >>> feed = atom_feed([e], "farm", "http://m/", "http://m/", {9: "市長宣布調漲票價"})
    >>> "<title>deleted: 市長宣布調漲票價</title>" in feed.decode()
    True
    """
    headlines = headlines or {}
    ET.register_namespace("", ATOM)
    feed = ET.Element(f"{{{ATOM}}}feed")
    ET.SubElement(feed, f"{{{ATOM}}}title").text = shown(title)
    ET.SubElement(feed, f"{{{ATOM}}}id").text = self_url
    ET.SubElement(feed, f"{{{ATOM}}}link", rel="self", href=self_url)
    updated = events[0].detected_at if events else 0
    ET.SubElement(feed, f"{{{ATOM}}}updated").text = utc_iso(updated)
    author = ET.SubElement(feed, f"{{{ATOM}}}author")
    ET.SubElement(author, f"{{{ATOM}}}name").text = "zeroarchive"
    for event in events:
        entry = ET.SubElement(feed, f"{{{ATOM}}}entry")
        headline = headlines.get(event.article_id) or event.url
        ET.SubElement(entry, f"{{{ATOM}}}title").text = shown(f"{event.kind}: {headline}")
        link = f"{base}events/{event.event_id}"
        ET.SubElement(entry, f"{{{ATOM}}}id").text = link
        ET.SubElement(entry, f"{{{ATOM}}}link", href=link)
        ET.SubElement(entry, f"{{{ATOM}}}updated").text = utc_iso(event.detected_at)
        ET.SubElement(entry, f"{{{ATOM}}}summary").text = shown(summary(event))
    return ET.tostring(feed, encoding="utf-8", xml_declaration=True)


#: Characters of an edit's diff an entry's summary carries (the event's page has it all).
SUMMARY_DIFF_CHARS = 400


def summary(event: Event) -> str:
    """What an Atom entry says of its event: site, kind, evidence and time, and an edit's
    diff in short (removed text as [-...-], added as {+...+}).

    >>> diff = {"fields": ["text"], "text": [["=", "票價"], ["-", "漲"], ["+", "降"]]}
    >>> e = Event(3, "edited", 9, 1, "farm", "https://f.tw/a", 1800000000, "text", 1, 2, diff)
    >>> summary(e)
    'farm: edited (text) at 2027-01-15T08:00:00Z. text: 票價[-漲-]{+降+}'
    """
    said = f"{event.site}: {event.kind} ({event.evidence}) at {utc_iso(event.detected_at)}"
    if event.kind != "edited" or not event.diff:
        return said
    parts = [
        f"{field}: {inline(event.diff[field])}"
        for field in ("title", "text")
        if field in event.diff.get("fields", []) and event.diff.get(field)
    ]
    changes = " ".join(parts)
    if len(changes) > SUMMARY_DIFF_CHARS:
        changes = changes[:SUMMARY_DIFF_CHARS] + "…"
    return f"{said}. {changes}" if changes else said


def feed(request: Request) -> Response:
    engine = request.app.state.engine
    site_id = request.path_params.get("site_id")
    events = list(iter_events(engine, site_id, limit=FEED_EVENTS, newest_first=True))
    title = "zeroarchive events" + (f" of site {site_id}" if site_id is not None else "")
    if site_id is not None and events:
        title = f"zeroarchive events of {events[0].site}"
    headlines = latest_titles(engine, sorted({event.article_id for event in events}))
    body = atom_feed(events, title, str(request.url), str(request.base_url), headlines)
    return Response(body, media_type="application/atom+xml", headers=pages.PAGE_HEADERS)


def routes() -> list[Route]:
    return [
        # Plain functions (Starlette runs them in its threads) under the monitor's time
        # limit, as every page is; ids as the other pages read them (at most 18 digits).
        Route("/events", pages.timed(events_list), name="events"),
        Route("/events/{event_id:id}", pages.timed(event_page), name="event"),
        Route("/events.atom", pages.timed(feed), name="events_feed"),
        Route("/sites/{site_id:id}/events.atom", pages.timed(feed), name="site_events_feed"),
    ]
