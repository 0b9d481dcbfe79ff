"""Facebook posts as m.facebook.com serves them: post text, time, reactions, and every
comment and reply on the page with its author (and reactions where the page shows them)."""

from __future__ import annotations

import json
import re
from typing import Any
from urllib.parse import parse_qs, urlsplit
from zoneinfo import ZoneInfo

import lxml.html
from lxml.html import HtmlElement

from zeroarchive.core.encoding import decode_body
from zeroarchive.core.errors import ParseError
from zeroarchive.core.items import Parsed
from zeroarchive.parser.text import element_text, hashtags, link_urls

# m.facebook.com ships most of the page as HTML inside comments in hidden <code> blocks.
_HIDDEN_RE = re.compile(r"<code\b[^>]*>\s*<!--(.*?)-->\s*</code>", re.DOTALL)
_COUNT_RE = re.compile(r"([\d.,]+)\s*([KkMm萬万]?)")
_POST_ID_RE = re.compile(r"/(?:posts|permalink|videos|photos/[^/]+)/(\d+)")


def unhide(html: str) -> str:
    """The page with its hidden ``<code><!-- ... --></code>`` blocks made live markup.

    >>> unhide('<div><code id="u_0"><!-- <p>hi</p> --></code></div>')
    '<div> <p>hi</p> </div>'
    """
    return _HIDDEN_RE.sub(lambda match: match.group(1), html)


def count(text: str) -> int | None:
    """A displayed count as a number.

    >>> count("17 shares"), count("1.2K"), count("3萬"), count("none")
    (17, 1200, 30000, None)
    """
    match = _COUNT_RE.search(text)
    if match is None:
        return None
    number = float(match.group(1).replace(",", ""))
    scale = {"k": 1e3, "m": 1e6, "萬": 1e4, "万": 1e4}.get(match.group(2).lower(), 1)
    return round(number * scale)


def post_id_of(url: str) -> str | None:
    """The post id a Facebook URL names.

    >>> post_id_of("https://m.facebook.com/story.php?story_fbid=306&id=119")
    '306'
    >>> post_id_of("https://m.facebook.com/Nintendo/posts/4194934713924283")
    '4194934713924283'
    """
    parts = urlsplit(url)
    query = parse_qs(parts.query)
    if "story_fbid" in query:
        return query["story_fbid"][0]
    if "fbid" in query:
        return query["fbid"][0]
    match = _POST_ID_RE.search(parts.path)
    return match.group(1) if match else None


def _data_ft(element: HtmlElement) -> dict[str, Any]:
    try:
        value = json.loads(element.get("data-ft") or "{}")
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _publish_time(ft: dict[str, Any], story: HtmlElement) -> int | None:
    for insight in (ft.get("page_insights") or {}).values():
        context = insight.get("post_context") if isinstance(insight, dict) else None
        if isinstance(context, dict) and isinstance(context.get("publish_time"), int):
            return int(context["publish_time"])
    for stamp in story.xpath('.//abbr[@data-sigil="timestamp"][@data-store]'):
        try:
            value = json.loads(stamp.get("data-store")).get("time")
        except ValueError:
            continue
        if isinstance(value, int):
            return value
    return None


def _story(tree: HtmlElement, post_id: str | None) -> tuple[HtmlElement | None, dict[str, Any]]:
    stories = tree.xpath('//*[@data-ft][contains(@data-ft, "top_level_post_id")]')
    for story in stories:
        ft = _data_ft(story)
        if post_id is None or str(ft.get("top_level_post_id")) == post_id:
            return story, ft
    if stories:
        return stories[0], _data_ft(stories[0])
    # Photo pages carry the post in a "marea" block with a timestamped <abbr>.
    areas = tree.xpath('//*[@data-sigil="marea"][.//abbr[@data-sigil="timestamp"]]')
    return (areas[0], {}) if areas else (None, {})


def _comment(node: HtmlElement, base: str) -> dict[str, Any]:
    body = node.xpath('.//*[@data-sigil="comment-body"]')
    text = element_text(body[0]) if body else ""
    author = node.xpath('string(.//*[contains(concat(" ", @class, " "), " _2b05 ")][1])').strip()
    stamp = node.xpath('.//*[@data-sigil="ufi-inline-comment-actions"]//abbr')
    time_text = stamp[0].text_content().strip() if stamp else None
    at = None
    if stamp and stamp[0].get("data-store"):
        try:
            at = json.loads(stamp[0].get("data-store")).get("time")
        except ValueError:
            at = None
    reactions = node.xpath(
        './/*[@data-sigil="reactions-bling-bar"] | .//*[contains(@class, "_14va")]'
    )
    replies_more = node.xpath('.//*[@data-sigil="replies-see-more"]')
    return {
        "id": node.get("id"),
        "author": author or None,
        "text": text,
        "time": at,
        "time_text": time_text,
        "reactions": count(reactions[0].text_content()) if reactions else None,
        "reply_count": count(replies_more[0].text_content().split("·")[-1]) if replies_more else 0,
        "urls": list(link_urls([a.get("href") for a in body[0].iter("a") if a.get("href")], base))
        if body
        else [],
    }


def parse_facebook(raw: bytes, encoding: str, url: str, _tz: ZoneInfo | None = None) -> Parsed:
    """A rendered Facebook post and its comments; its times are unix stamps, no zone needed."""
    html = unhide(decode_body(raw, encoding))
    if not html.strip():
        raise ParseError("empty page")
    tree = lxml.html.document_fromstring(html)
    if tree.xpath('//form[contains(@action, "/login")]') and not tree.xpath(
        '//*[@data-sigil="comment"]'
    ):
        raise ParseError("login wall, not a post")
    story, ft = _story(tree, post_id_of(url))
    if story is None:
        raise ParseError("no post on the page")
    message = story.xpath('.//div[contains(concat(" ", @class, " "), " _5rgt ")]')
    text = element_text(message[0]) if message else ""
    actor = story.xpath('string((.//h3//strong | .//strong[contains(@class, "actor")])[1])')
    hrefs = [a.get("href") for a in message[0].iter("a") if a.get("href")] if message else []
    comments: list[dict[str, Any]] = []
    for node in tree.xpath('//div[@data-sigil="comment"]'):
        item = _comment(node, url)
        item["replies"] = [
            {**_comment(reply, url), "parent_id": node.get("id")}
            for reply in node.xpath(
                './/div[contains(@data-sigil, "comment") and @data-sigil!="comment"]'
            )
            if reply.xpath('.//*[@data-sigil="comment-body"]')
        ]
        comments.append(item)
    likes = tree.xpath(
        '//*[starts-with(@id, "like_sentence_")] | //*[@data-sigil="reactions-sentence-container"]'
    )
    shares = tree.xpath('//*[@data-sigil="feed-ufi-sharers"]')
    post_id = str(ft.get("top_level_post_id") or post_id_of(url) or "")
    title = text.split("\n", 1)[0][:200] if text else (actor.strip() or "")
    return Parsed(
        canonical_url=url,
        title=title,
        text=text,
        published_at=_publish_time(ft, story),
        author=actor.strip() or None,
        hashtags=hashtags(text),
        urls=link_urls([_unwrap_link(h) for h in hrefs], url),
        metadata={
            "post_id": post_id or None,
            "page_id": ft.get("page_id") or ft.get("content_owner_id_new"),
            "attachment_style": ft.get("story_attachment_style"),
            "photo_ids": ft.get("photo_attachments_list") or [],
            "reactions": count(likes[0].text_content()) if likes else None,
            "shares": count(shares[0].text_content()) if shares else None,
        },
        comments=tuple(comments),
    )


def _unwrap_link(href: str) -> str:
    """Facebook's outbound redirect (l.php?u=...) resolved to its target."""
    parts = urlsplit(href)
    if parts.path == "/l.php":
        target = parse_qs(parts.query).get("u")
        if target:
            return target[0]
    return href
