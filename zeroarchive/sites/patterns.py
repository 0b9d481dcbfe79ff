"""A site's article pattern: one shape of its links (zeroarchive/core/url_shapes.py), what
was seen of it (links, fetched pages that said article or not) and its verdict, learnt
from the pages or set by a person (zeroarchive/crawl/article_patterns.py decides links
with it; storage/patterns.py keeps it)."""

from __future__ import annotations

from dataclasses import dataclass, field

#: What a shape is: its links are articles, or are not, or it is not decided yet.
ARTICLE_VERDICT = "article"
OTHER_VERDICT = "other"
UNDECIDED = ""
LEARNT = "learnt"
SET = "set"
#: Fetched pages of a shape that must agree before the shape is decided.
MIN_PAGES = 2
#: The share of a shape's fetched pages that must agree.
AGREEMENT = 0.8


@dataclass
class Pattern:
    """One shape of a site's links, what was seen of it, and its verdict."""

    shape: str
    verdict: str = UNDECIDED
    origin: str = LEARNT
    links: int = 0
    article_pages: int = 0
    other_pages: int = 0
    example: str = ""
    #: Counts not yet written to the archive.
    dirty: bool = field(default=False, compare=False)
    #: The counts as last read from or written to the archive.
    saved: tuple[int, int, int] = field(default=(0, 0, 0), compare=False)

    def mark_saved(self) -> None:
        self.saved = (self.links, self.article_pages, self.other_pages)
        self.dirty = False

    def unsaved(self) -> tuple[int, int, int]:
        """Links, article pages and other pages counted since the last save."""
        links, article_pages, other_pages = self.saved
        return (
            self.links - links,
            self.article_pages - article_pages,
            self.other_pages - other_pages,
        )

    def settle(self) -> None:
        """Decide the verdict from the pages' counts (a verdict a person set stays)."""
        if self.origin == SET:
            return
        pages = self.article_pages + self.other_pages
        if pages < MIN_PAGES:
            self.verdict = UNDECIDED
        elif self.article_pages >= AGREEMENT * pages:
            self.verdict = ARTICLE_VERDICT
        elif self.other_pages >= AGREEMENT * pages:
            self.verdict = OTHER_VERDICT
        else:
            self.verdict = UNDECIDED

    def as_json(self) -> dict[str, object]:
        return {
            "pattern": self.shape,
            "verdict": self.verdict or "undecided",
            "origin": self.origin,
            "links": self.links,
            "article_pages": self.article_pages,
            "other_pages": self.other_pages,
            "example": self.example,
        }
