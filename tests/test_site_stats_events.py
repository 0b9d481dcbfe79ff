"""The dashboard's monthly event counts, counted in the database on both engines."""

from __future__ import annotations

import datetime as dt
import random
from collections import Counter

from zeroarchive.storage.archive import open_archive
from zeroarchive.storage.schema import article_event
from zeroarchive.storage.site_stats import monthly_events

NOW = 1_800_000_000  # 2027-01-15
DAY = 86_400


def test_monthly_events_count_each_site_kind_and_utc_month_of_the_last_year(
    db_url: str,
) -> None:
    engine = open_archive(url=db_url).engine
    rng = random.Random(7)
    rows = [
        {
            "article_id": n,
            "site_id": rng.choice((1, 2)),
            "kind": rng.choice(("deleted", "edited", "restored")),
            # Some a few seconds either side of a UTC midnight, some older than a year.
            "detected_at": NOW - rng.randrange(400) * DAY + rng.choice((-1, 0, 1, 43_200)),
            "evidence": "404",
            "after_snapshot_at": n,
        }
        for n in range(600)
    ]
    with engine.begin() as conn:
        conn.execute(article_event.insert(), rows)
    expected: Counter[tuple[int, str, str]] = Counter(
        (
            row["site_id"],
            dt.datetime.fromtimestamp(row["detected_at"], dt.UTC).strftime("%Y-%m"),
            row["kind"],
        )
        for row in rows
        if row["detected_at"] >= NOW - 366 * DAY
    )
    with engine.connect() as conn:
        counted = monthly_events(conn, NOW)
    found = Counter(
        {
            (site_id, month, kind): n
            for site_id, months in counted.items()
            for month, kinds in months.items()
            for kind, n in kinds.items()
            if n
        }
    )
    assert found == expected
    assert list(counted[1]) == sorted(counted[1], reverse=True)  # newest month first
