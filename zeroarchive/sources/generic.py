"""News sites, content farms, government and organisation pages: any site described by an
``article`` regex and a ``following`` regex (spiders/generic.py)."""

from __future__ import annotations

from zeroarchive.core.schedule import (
    DAILY_LIST_DAILY_FOR_A_WEEK,
    DAILY_THEN_WEEKLY,
    HOURLY_FOR_A_DAY,
    ONCE,
)
from zeroarchive.sources.base import SiteType, Source

SOURCE = Source(
    name="generic",
    article_type="Article",
    site_types=(
        SiteType("news", HOURLY_FOR_A_DAY, aliases=("news_website", "official_media")),
        SiteType("content_farm", DAILY_THEN_WEEKLY),
        SiteType("gov", ONCE),
        SiteType("organization", DAILY_LIST_DAILY_FOR_A_WEEK, aliases=("organization_website",)),
    ),
    parser="zeroarchive.parser.generic:parse_generic",
    labels={
        "新聞網站": "news",
        "新聞": "news",
        "官媒": "news",
        "content farm": "content_farm",
        "內容農場": "content_farm",
        "政府網站": "gov",
        "政府": "gov",
        "組織官網": "organization",
    },
    screenshots=True,
)
