"""The site-to-site copy network: an edge A→B for every story that site B published after
site A had it, A being the site of the story's first (the cluster's member seen earliest),
weighted by the number of such stories, with the median delay from A's first snapshot of
the story to B's earliest one. Edges go from the first alone, not from every member seen
before B: who had a story first is what the archive knows; who took it from whom among
the later ones it does not, and every earlier member would count one copy many times.
A site's own republications (members on the first's site) are no edge.

Written as GEXF 1.3 (Gephi), XML from the standard library's quoting, or as CSV."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import statistics
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any
from xml.sax.saxutils import quoteattr

from sqlalchemy import select
from sqlalchemy.engine import Engine

from zeroarchive.core.shown import printable
from zeroarchive.storage.schema import copy_doc, site

GEXF_NS = "http://gexf.net/1.3"
_XSI = "http://www.w3.org/2001/XMLSchema-instance"
#: The CSV's header, in order.
CSV_COLUMNS = (
    "source",
    "target",
    "stories",
    "median_delay_seconds",
    "source_id",
    "target_id",
)
# What XML 1.0 cannot hold at all, even escaped.
_NOT_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ud800-\udfff\ufffe\uffff]")


@dataclass
class Edge:
    source_id: int
    target_id: int
    #: Seconds from the source's first snapshot of each story to the target's.
    delays: list[int] = field(default_factory=list)

    @property
    def stories(self) -> int:
        return len(self.delays)

    @property
    def median_delay(self) -> float:
        return float(statistics.median(self.delays))


@dataclass(frozen=True)
class Network:
    #: site id → name.
    names: dict[int, str]
    #: Heaviest first, then by source and target id.
    edges: tuple[Edge, ...]

    def copies_from(self, site_id: int) -> list[dict[str, Any]]:
        """The sites this site published stories after (the table's "copies from")."""
        return [self._row(edge.source_id, edge) for edge in self.edges if edge.target_id == site_id]

    def copied_by(self, site_id: int) -> list[dict[str, Any]]:
        """The sites that published this site's stories after it ("copied by")."""
        return [self._row(edge.target_id, edge) for edge in self.edges if edge.source_id == site_id]

    def _row(self, other: int, edge: Edge) -> dict[str, Any]:
        return {
            "site": self.names[other],
            "site_id": other,
            "stories": edge.stories,
            "median_delay_seconds": seconds(edge.median_delay),
        }


def seconds(value: float) -> int | float:
    """A median as written: whole seconds as an integer, a half second kept."""
    return int(value) if value == int(value) else value


def _clusters(engine: Engine, site_id: int | None) -> Iterator[list[tuple[int, int]]]:
    """Each cluster's members as (site id, first seen), first seen first."""
    doc = copy_doc.c
    query = (
        select(doc.cluster_id, doc.site_id, doc.first_seen_at)
        .where(doc.cluster_id.is_not(None))
        .order_by(doc.cluster_id, doc.first_seen_at, doc.article_id)
    )
    if site_id is not None:
        query = query.where(
            doc.cluster_id.in_(
                select(copy_doc.c.cluster_id).where(
                    copy_doc.c.site_id == site_id, copy_doc.c.cluster_id.is_not(None)
                )
            )
        )
    with engine.connect() as conn:
        current: int | None = None
        members: list[tuple[int, int]] = []
        for cluster_id, member_site, seen in conn.execution_options(stream_results=True).execute(
            query
        ):
            if cluster_id != current:
                if members:
                    yield members
                current, members = cluster_id, []
            members.append((int(member_site), int(seen)))
        if members:
            yield members


def network(engine: Engine, since: int | None = None, site_id: int | None = None) -> Network:
    """The network of every cluster; with ``since``, only copies (the target's earliest
    member) first seen at or after it; with ``site_id``, only the clusters with a member
    on that site (its own edges are then whole, the others' are not)."""
    edges: dict[tuple[int, int], Edge] = {}
    for members in _clusters(engine, site_id):
        source, start = members[0]
        earliest: dict[int, int] = {}
        for member_site, seen in members[1:]:
            if member_site != source and member_site not in earliest:
                earliest[member_site] = seen
        for target, seen in earliest.items():
            if since is not None and seen < since:
                continue
            edge = edges.get((source, target))
            if edge is None:
                edge = edges[(source, target)] = Edge(source, target)
            edge.delays.append(seen - start)
    ids = {key for pair in edges for key in pair}
    names: dict[int, str] = {}
    if ids:
        with engine.connect() as conn:
            rows = conn.execute(
                select(site.c.site_id, site.c.name).where(site.c.site_id.in_(sorted(ids)))
            )
            names = {int(row.site_id): row.name for row in rows}
    # A site row gone (deleted by hand) leaves its id as its name.
    names.update({site_id: str(site_id) for site_id in ids - names.keys()})
    ordered = sorted(
        edges.values(), key=lambda edge: (-edge.stories, edge.source_id, edge.target_id)
    )
    return Network(names, tuple(ordered))


def write_csv(graph: Network, out: IO[str]) -> None:
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for edge in graph.edges:
        writer.writerow(
            (
                printable(graph.names[edge.source_id]),
                printable(graph.names[edge.target_id]),
                edge.stories,
                seconds(edge.median_delay),
                edge.source_id,
                edge.target_id,
            )
        )


def _attr(text: str) -> str:
    """Text as a quoted XML attribute: what XML 1.0 cannot hold at all replaced."""
    return quoteattr(_NOT_XML.sub("\ufffd", text))


def write_gexf(graph: Network, out: IO[bytes], now: int) -> None:
    """The network as a GEXF 1.3 document: nodes are sites (id: the site id, label: its
    name), directed edges carry ``weight`` (stories) and the median delay. Written line by
    line (an ElementTree of a large network took ten times as long)."""
    day = dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%d")
    head = f"""<?xml version="1.0" encoding="UTF-8"?>
<gexf xmlns="{GEXF_NS}" xmlns:xsi="{_XSI}" version="1.3"
      xsi:schemaLocation="{GEXF_NS} {GEXF_NS}/gexf.xsd">
  <meta lastmodifieddate="{day}">
    <creator>zeroarchive copy_network</creator>
    <description>Sites; an edge A-&gt;B weighs the stories B published after A had them
first; median_delay_seconds from A's first snapshot to B's.</description>
  </meta>
  <graph defaultedgetype="directed">
    <attributes class="node">
      <attribute id="site_id" title="site_id" type="integer"/>
    </attributes>
    <attributes class="edge">
      <attribute id="stories" title="stories" type="integer"/>
      <attribute id="median_delay_seconds" title="median_delay_seconds" type="double"/>
    </attributes>
    <nodes>
"""
    out.write(head.encode())
    lines = []
    for site_id in sorted(graph.names):
        lines.append(
            f'      <node id="{site_id}" label={_attr(graph.names[site_id])}>'
            f'<attvalues><attvalue for="site_id" value="{site_id}"/></attvalues></node>\n'
        )
    lines.append("    </nodes>\n    <edges>\n")
    for number, edge in enumerate(graph.edges):
        lines.append(
            f'      <edge id="{number}" source="{edge.source_id}" target="{edge.target_id}" '
            f'weight="{edge.stories}"><attvalues>'
            f'<attvalue for="stories" value="{edge.stories}"/>'
            f'<attvalue for="median_delay_seconds" value="{edge.median_delay!r}"/>'
            "</attvalues></edge>\n"
        )
        if len(lines) >= 10_000:
            out.write("".join(lines).encode())
            lines = []
    lines.append("    </edges>\n  </graph>\n</gexf>\n")
    out.write("".join(lines).encode())


def gexf(graph: Network, now: int) -> bytes:
    """``write_gexf``'s document."""
    buffer = io.BytesIO()
    write_gexf(graph, buffer, now)
    return buffer.getvalue()
