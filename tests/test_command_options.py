"""What a command's ``--site`` names: a site by name or id, else one usage line."""

from __future__ import annotations

import dataclasses

import pytest
from scrapy.exceptions import UsageError

from zeroarchive.commands import site_option
from zeroarchive.sites.record import parse_spec
from zeroarchive.storage.archive import open_archive

NOW = 1_700_000_000


def test_site_option_names_one_site_or_says_why_not(db_url: str) -> None:
    archive = open_archive(url=db_url)
    ids = [
        archive.sites.upsert(
            dataclasses.replace(
                parse_spec(
                    {"name": name, "url": url, "type": "news", "config": {"article": "/a/"}}
                ),
                airtable_id=airtable_id,
            ),
            NOW,
        )[0]
        # Synced from Airtable, two sites may share a name.
        for name, url, airtable_id in (
            ("twin", "https://one.example/", "rec1"),
            ("twin", "https://two.example/", "rec2"),
            ("solo", "https://solo.example/", None),
        )
    ]
    assert site_option(archive, "solo").site_id == ids[2]
    assert site_option(archive, str(ids[0])).name == "twin"
    with pytest.raises(UsageError, match=r"2 sites are named 'twin': #\d+ https://one"):
        site_option(archive, "twin")
    # Numbers no BIGINT holds, and digits that are not ASCII, name no site: never an error
    # of the database.
    for name in ("99999999999999999999999", "0", "²"):
        with pytest.raises(UsageError, match="no site"):
            site_option(archive, name)


def test_a_search_may_span_the_sites_that_share_a_name(db_url: str) -> None:
    archive = open_archive(url=db_url)
    ids = [
        archive.sites.upsert(
            dataclasses.replace(
                parse_spec(
                    {"name": "twin", "url": url, "type": "news", "config": {"article": "/"}}
                ),
                airtable_id=airtable_id,
            ),
            NOW,
        )[0]
        for url, airtable_id in (("https://one.example/", "rec1"), ("https://two.example/", "rec2"))
    ]
    assert archive.sites.ids_named("twin") == ids
    assert archive.sites.ids_named(str(ids[1])) == [ids[1]]
    assert archive.sites.ids_named("9" * 23) == archive.sites.ids_named("nobody") == []
