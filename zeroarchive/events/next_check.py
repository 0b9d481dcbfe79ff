"""When an article is looked at next, and why: its snapshot plan, a retry after failures,
the check that confirms a suspected deletion, the long-tail watch, or never (and why not).
One answer for every page and command that states it."""

from __future__ import annotations

from dataclasses import dataclass

from zeroarchive.core.clock import utc_minute
from zeroarchive.core.schedule import STOP


@dataclass(frozen=True)
class ArticleState:
    """The columns of an Article row that decide its next check."""

    next_snapshot_at: int
    watch_at: int
    gone_at: int
    gone_evidence: str | None
    deleted_at: int
    stop_reason: str | None
    redirect_to: int | None
    failure_count: int


@dataclass(frozen=True)
class NextCheck:
    """The next check's time (0: none) and its reason, in words."""

    at: int
    reason: str

    def text(self) -> str:
        """The check as a line of a page or a command.

        >>> NextCheck(1_700_000_000, "the snapshot plan").text()
        '2023-11-14 22:13 UTC (the snapshot plan)'
        >>> NextCheck(0, "never again: the plan ended").text()
        'never again: the plan ended'
        """
        return f"{utc_minute(self.at)} UTC ({self.reason})" if self.at else self.reason


#: Why an article is looked at no more, as people read its ``stop_reason``.
_STOPS = {
    "plan_complete": "its snapshot plan ended",
    "moved": "it moved",
}


def next_check(state: ArticleState) -> NextCheck:
    """The article's next check.

    >>> base = ArticleState(0, 0, 0, None, 0, "plan_complete", None, 0)
    >>> next_check(base).text()
    'never again: its snapshot plan ended'
    >>> from dataclasses import replace
    >>> next_check(replace(base, watch_at=1_700_000_000)).reason
    'the long-tail watch'
    >>> next_check(replace(base, next_snapshot_at=1_700_000_600, gone_at=1_700_000_000,
    ...                    gone_evidence="404")).text()
    '2023-11-14 22:23 UTC (deletion check: looks gone (404) since 2023-11-14 22:13)'
    """
    if state.redirect_to:
        return NextCheck(0, f"never again: it moved to article {state.redirect_to}")
    if state.gone_at and not state.deleted_at:
        since = utc_minute(state.gone_at)
        evidence = state.gone_evidence or "a sign"
        return NextCheck(
            state.next_snapshot_at, f"deletion check: looks gone ({evidence}) since {since}"
        )
    deleted = f"deleted ({state.gone_evidence or 'gone'}), " if state.deleted_at else ""
    if state.next_snapshot_at != STOP:
        if state.failure_count:
            reason = f"a retry after {state.failure_count} failed fetch(es)"
        else:
            reason = "the snapshot plan"
        if deleted:
            reason = f"{deleted}looked at on its plan for a restoration"
        return NextCheck(state.next_snapshot_at, reason)
    if state.watch_at:
        reason = (
            f"{deleted}the long-tail watch for a restoration" if deleted else "the long-tail watch"
        )
        return NextCheck(state.watch_at, reason)
    why = state.stop_reason or "the plan ended"
    if why.startswith("deleted:"):
        return NextCheck(0, f"never again: deleted ({why.removeprefix('deleted:')})")
    return NextCheck(0, f"never again: {_STOPS.get(why, why)}")
