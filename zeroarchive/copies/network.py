"""The site-to-site copy network: an edge A→B for every story that site B published after
site A had it, A being the site of the story's first (the cluster's member seen earliest),
weighted by the number of such stories, with the median delay from A's first snapshot of
the story to B's earliest one. Edges go from the first alone, not from every member seen
before B: who had a story first is what the archive knows; who took it from whom among
the later ones it does not, and every earlier member would count one copy many times.
A site's own republications (members on the first's site) are no edge.

Written as GEXF 1.3 (Gephi) with the standard library's ElementTree, or as CSV."""

from __future__ import annotations

import csv
import datetime as dt
import io
import re
import statistics
import xml.etree.ElementTree as ET
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import IO, Any

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


def _xml_text(text: str) -> str:
    return _NOT_XML.sub("\ufffd", text)


def gexf(graph: Network, now: int) -> bytes:
    """The network as a GEXF 1.3 document: nodes are sites (id: the site id, label: its
    name), directed edges carry ``weight`` (stories) and the median delay."""
    ET.register_namespace("", GEXF_NS)
    ET.register_namespace("xsi", _XSI)

    def tag(name: str) -> str:
        return f"{{{GEXF_NS}}}{name}"

    root = ET.Element(
        tag("gexf"),
        {
            "version": "1.3",
            f"{{{_XSI}}}schemaLocation": f"{GEXF_NS} {GEXF_NS}/gexf.xsd",
        },
    )
    day = dt.datetime.fromtimestamp(now, dt.UTC).strftime("%Y-%m-%d")
    meta = ET.SubElement(root, tag("meta"), {"lastmodifieddate": day})
    ET.SubElement(meta, tag("creator")).text = "zeroarchive copy_network"
    ET.SubElement(meta, tag("description")).text = (
        "Sites; an edge A->B weighs the stories B published after A had them first; "
        "median_delay_seconds from A's first snapshot to B's."
    )
    graph_element = ET.SubElement(root, tag("graph"), {"defaultedgetype": "directed"})
    node_attributes = ET.SubElement(graph_element, tag("attributes"), {"class": "node"})
    ET.SubElement(
        node_attributes, tag("attribute"), {"id": "site_id", "title": "site_id", "type": "integer"}
    )
    edge_attributes = ET.SubElement(graph_element, tag("attributes"), {"class": "edge"})
    for name, kind in (("stories", "integer"), ("median_delay_seconds", "double")):
        ET.SubElement(edge_attributes, tag("attribute"), {"id": name, "title": name, "type": kind})
    nodes = ET.SubElement(graph_element, tag("nodes"))
    for site_id in sorted(graph.names):
        node = ET.SubElement(
            nodes, tag("node"), {"id": str(site_id), "label": _xml_text(graph.names[site_id])}
        )
        values = ET.SubElement(node, tag("attvalues"))
        ET.SubElement(values, tag("attvalue"), {"for": "site_id", "value": str(site_id)})
    edges = ET.SubElement(graph_element, tag("edges"))
    for number, edge in enumerate(graph.edges):
        element = ET.SubElement(
            edges,
            tag("edge"),
            {
                "id": str(number),
                "source": str(edge.source_id),
                "target": str(edge.target_id),
                "weight": str(edge.stories),
            },
        )
        values = ET.SubElement(element, tag("attvalues"))
        ET.SubElement(values, tag("attvalue"), {"for": "stories", "value": str(edge.stories)})
        ET.SubElement(
            values,
            tag("attvalue"),
            {"for": "median_delay_seconds", "value": repr(edge.median_delay)},
        )
    ET.indent(root)
    buffer = io.BytesIO()
    ET.ElementTree(root).write(buffer, encoding="UTF-8", xml_declaration=True)
    buffer.write(b"\n")
    return buffer.getvalue()
