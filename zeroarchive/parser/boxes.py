"""Promotion boxes: paywall, subscription, newsletter, log-in, campaign and cookie boxes.

On a page whose article is short (a lead above a metered paywall) such a box can hold more
text than the article, and an extractor takes it for the body. :func:`drop_boxes` takes
them out of the page before any extractor sees it. A box is known by general evidence, no
list of sites: a small element (at most ``_MAX_CHARS`` characters of text) whose class or
id names a promotion (``regist``, ``subscribe``, ``paywall``, ``newsletter``, ``cookie``...)
and which either asks for an action (a form, a button, a link to a subscription, sign-up or
log-in address) or says what such boxes say ("続きをお読み", "subscribe", "订阅"...). Two
pieces of evidence, never one: an article paragraph about a newsletter, or a link in the
text to a log-in page, stays.
"""

from __future__ import annotations

import re

from lxml.html import HtmlElement

_MAX_CHARS = 400
# Class and id words of promotion boxes (matched inside longer names: "m-articleRegist",
# "paywall-prompt", "newsletter-signup", "cookie-consent").
_BOX_NAME_RE = re.compile(
    r"regist|subscri|paywall|pay-wall|premium|login|log-in|signin|sign-in|signup|sign-up|"
    r"newsletter|campaign|promo|cookie|consent|gdpr|upsell|callout|optin|opt-in|"
    r"membership|member-only|members-only|meter",
    re.IGNORECASE,
)
# Addresses such boxes link to.
# Case-sensitive, for lower-cased ASCII names: IGNORECASE made this search most of the
# time of drop_boxes, which asks it of nearly every element of the page.
_BOX_NAME_LOWER_RE = re.compile(_BOX_NAME_RE.pattern)
_ACTION_HREF_RE = re.compile(
    r"subscri|signup|sign-up|sign_up|regist|login|log-in|signin|newsletter|premium|"
    r"membership|campaign",
    re.IGNORECASE,
)
# What such boxes say, in the languages archived.
_ACTION_TEXT_RE = re.compile(
    r"続きを(?:お)?読|続きは|全文を読|会員限定|有料会員|会員登録|無料登録|登録すると|ログイン|"
    r"購読|ニュースレター|読み放題|キャンペーン|クッキー|"
    r"订阅|訂閱|登录|登入|注册|註冊|會員|会员|付費|付费|"
    r"구독|로그인|회원|"
    r"subscribe|subscription|sign up|sign in|log in|newsletter|register|cookies?\b|"
    r"free trial|already a member",
    re.IGNORECASE,
)
_BOX_TAGS = ("div", "section", "aside", "p", "form", "ul", "footer", "figure", "dl", "table")
_DIALOG_ROLES = frozenset(["dialog", "alertdialog"])


def is_box(element: HtmlElement) -> bool:
    """Whether ``element`` is a promotion box by two pieces of evidence (see the module).

    >>> from lxml.html import fragment_fromstring as f
    >>> is_box(f('<div class="m-articleRegist"><p>この記事は会員限定です。</p></div>'))
    True
    >>> is_box(f('<div class="callout"><a href="https://subscribe.example/x">Go</a></div>'))
    True
    >>> is_box(f('<div class="member-list"><p>The committee members met on Monday.</p></div>'))
    False
    >>> is_box(f('<p>She said she would subscribe to the plan.</p>'))
    False
    >>> is_box(f('<div class="b1qh" data-newsletter-popup=""><h3>ニュースレターを登録</h3></div>'))
    True
    >>> is_box(f('<k-popover role="dialog"><span>エラー</span></k-popover>'))
    True
    >>> is_box(f('<div class="caas editorialUpsells"><h1>茲韋列夫封王</h1><p>訂閱</p></div>'))
    False
    """
    # data-* attribute names count too: "data-newsletter-popup-container" on a box whose
    # classes are hashes (a Japanese business daily's sign-up box over its short body).
    if element.get("role") in _DIALOG_ROLES or element.tag == "dialog":
        # A small dialog is a pop-up (log-in, follow, error), never the article.
        return len(element.text_content().strip()) <= _MAX_CHARS
    name = f"{element.get('class', '')} {element.get('id', '')}"
    data = [key for key in element.attrib if key.startswith("data-")]
    if data:
        name = f"{name} {' '.join(data)}"
    if not _names_a_box(name):
        return False
    if next(element.iter("h1", "article", "main"), None) is not None:
        # What holds the headline or the article is the article, however its classes read
        # ("editorialUpsells" on a short wire item's container).
        return False
    text = element.text_content()
    if len(text.strip()) > _MAX_CHARS:
        return False
    if _ACTION_TEXT_RE.search(text):
        return True
    for node in element.iter("form", "input", "button", "a"):
        if node.tag != "a" or _ACTION_HREF_RE.search(node.get("href", "")):
            return True
    return False


def _names_a_box(name: str) -> bool:
    if name.isascii():
        return _BOX_NAME_LOWER_RE.search(name.lower()) is not None
    return _BOX_NAME_RE.search(name) is not None


def drop_boxes(tree: HtmlElement) -> int:
    """Take the promotion boxes out of ``tree`` (their tails stay); how many went."""
    boxes = [element for element in tree.iter(*_BOX_TAGS) if is_box(element)]
    boxes += [
        element
        for element in tree.xpath("//*[@role='dialog' or @role='alertdialog'] | //dialog")
        if element.tag not in _BOX_TAGS and is_box(element)
    ]
    for box in boxes:
        box.drop_tree()
    return len(boxes)


_PROMPT_CHARS = 160


def is_prompt(line: str) -> bool:
    """Whether one line of extracted text is a box's call to act (short, and says so).

    >>> is_prompt("［有料会員限定］ この記事は会員限定です。登録すると続きをお読みいただけます。")
    True
    >>> is_prompt("首相は記者会見で、新たな経済対策を発表した。")
    False
    """
    return len(line) <= _PROMPT_CHARS and bool(_ACTION_TEXT_RE.search(line))


def strip_prompts(text: str) -> str:
    """``text`` without the calls to act at its end: what a paywall leaves under a lead.

    >>> strip_prompts("Lead of the story, two sentences long.\\nSubscribe to read the rest.")
    'Lead of the story, two sentences long.'
    """
    lines = text.split("\n")
    while len(lines) > 1 and is_prompt(lines[-1]):
        lines.pop()
    return "\n".join(lines)
