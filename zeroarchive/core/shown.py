"""What every output shows of stored text (the monitor's pages, GraphQL, feeds, commands,
logs): the credentials of URLs masked, and characters that would act instead of being
read (control characters, terminal escapes, bidi overrides) escaped where they cannot be
isolated. Site names, URLs, titles and evidence come from the web and from whoever filled
the sites' table: none of them is trusted to be plain text.

``masked_url`` is the one masking rule; ``printable`` is for text read outside a browser
(terminals, feeds, JSON lines); ``html_safe`` for text a page isolates itself (``<bdi>``);
``mask_logs`` makes every log record of a process say what ``logged`` lets through.
"""

from __future__ import annotations

import json
import logging
import re
from typing import Any

MASK = "***"

# Everything between "//" and the authority's last "@": a user, a password, or both. A
# password may hold "@", "/", "?" or "#" unescaped (people write them so), so after a ":"
# that does not start a port the userinfo runs to the last "@" before a space. Ad-hoc
# sites of saved pages were once named "saved:<netloc>" (sites.record.ADHOC_PREFIX), a
# netloc with its userinfo: masked the same way wherever such a name is shown. A netloc
# without its scheme ("invalid hostname: user:pw@host" in an error) is masked when a
# user and a password of URL characters come before a host with a dot. A user whose
# password already reads "***" (core.services.safe_url's form, the operator's own
# database and redis URLs) is left as it is, when no other "@" follows in the word (the
# patterns run on a word cut after its last "@" and host).
_USERINFO = re.compile(
    r"(?<=//)(?![^\s/?#@:]*:\*\*\*@[^@]*$)(?:[^\s/?#@:]*:(?![0-9]*(?:[/?#\s]|$))\S*@|[^\s/?#@]*@)"
    r"|(?<=saved:)[^\s/?#]*@"
    r"|(?<![\w.~%!$&'*+;=:-])(?!saved:)(?![\w.~%!$&'*+;=-]+:\*\*\*@[^@]*$)"
    r"[\w.~%!$&'*+;=-]+:[\w.~%!$&'*+;=:-]*@(?=[\w-]+(?:\.[\w-]+)+|\[)"
)
_WORD = re.compile(r"\S+")
_HOST = re.compile(r"[\w.\[-]*")
# C0 and C1 controls (ANSI escapes start with ESC or CSI), DEL, bidi embeddings, overrides
# and isolates, line and paragraph separators, lone surrogates and the XML non-characters.
_BIDI_AND_BEYOND = "\u2028\u2029\u202a-\u202e\u2066-\u2069\ud800-\udfff\ufffe\uffff"
_UNPRINTABLE = re.compile(f"[\x00-\x1f\x7f-\x9f{_BIDI_AND_BEYOND}]")
# The same but for tab and newline: a log message or traceback has lines.
_UNPRINTABLE_LINES = re.compile(f"[\x00-\x08\x0b-\x1f\x7f-\x9f{_BIDI_AND_BEYOND}]")
# The same as _UNPRINTABLE but for tab, newline and carriage return (HTML whitespace) and the bidi
# characters, which a page keeps as written and isolates.
_UNSAFE_IN_HTML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\ud800-\udfff\ufffe\uffff]")


def _masked_word(word: str) -> str:
    if "@" not in word or ":" not in word:
        return word
    # Only up to the word's last "@" and the host after it: a userinfo cannot end later,
    # and a long tail of "//x:y" without an "@" would cost the pattern quadratic time.
    end = word.rindex("@") + 1
    end = _HOST.match(word, end).end()  # type: ignore[union-attr]
    return _USERINFO.sub(f"{MASK}@", word[:end]) + word[end:]


def masked_url(text: str) -> str:
    """``text`` with the credentials of every URL in it masked (and of ad-hoc site names
    made from a URL's host and credentials).

    >>> masked_url("http://bob:s3cret@proxy.example:3128")
    'http://***@proxy.example:3128'
    >>> masked_url("https://news.example/a/1?x=@y")
    'https://news.example/a/1?x=@y'
    >>> masked_url("http://bob:p@ss/w#rd@proxy.example:3128 and socks5://u:x@y@h:1")
    'http://***@proxy.example:3128 and socks5://***@h:1'
    >>> masked_url("https://medium.com:443/@someone/post")
    'https://medium.com:443/@someone/post'
    >>> masked_url("saved:reader:s3cret@farm.example"), masked_url("saved:farm.example")
    ('saved:***@farm.example', 'saved:farm.example')
    >>> masked_url("saved:facebook:https://m.facebook.com/@page")
    'saved:facebook:https://m.facebook.com/@page'
    >>> masked_url("(invalid hostname: reader:pw@127.0.0.1) Re:Zero@Comiket bob@x.tw")
    '(invalid hostname: ***@127.0.0.1) Re:Zero@Comiket bob@x.tw'
    >>> masked_url("mysql+pymysql://arch:***@db:3306/a redis://:***@q:6379 http://root@db/")
    'mysql+pymysql://arch:***@db:3306/a redis://:***@q:6379 http://***@db/'
    >>> masked_url("http://u:***@x:pw@h.example/ u:***@x:pw@h.example")
    'http://***@h.example/ u:***@***@h.example'
    """
    if "@" not in text:
        return text
    return _WORD.sub(lambda word: _masked_word(word.group()), text)


def _escape(found: re.Match[str]) -> str:
    return found.group().encode("unicode_escape").decode("ascii")


def printable(text: str) -> str:
    """``text`` as a terminal or a feed reader should get it: control characters, escape
    sequences, bidi controls and separators written as Python escapes, so they show
    instead of acting (a colour, a cursor move, a line reordered, XML made invalid).

    >>> printable("farm\\x1b[31m red\\x01\\x0b|\\u202egpj.exe|新聞")
    'farm\\\\x1b[31m red\\\\x01\\\\x0b|\\\\u202egpj.exe|新聞'
    >>> printable("a\\tb\\nc\\x9b2J"), printable("\\u200f")
    ('a\\\\tb\\\\nc\\\\x9b2J', '\\u200f')
    """
    return _UNPRINTABLE.sub(_escape, text)


def shown(text: str) -> str:
    """Stored text for a terminal, a feed or a log: credentials masked, then escaped.

    >>> shown("saved:u:pw@farm.example\\x01")
    'saved:***@farm.example\\\\x01'
    """
    return printable(masked_url(text))


def html_safe(text: str) -> str:
    """``text`` for a page, before HTML escaping: control characters escaped as in
    ``printable`` but tab, newline and carriage return (layout) and the bidi controls,
    which the page isolates in ``<bdi>`` instead of rewriting what the text says.

    >>> html_safe("a\\x01\\tb\\u202ec\\x85")
    'a\\\\x01\\tb\\u202ec\\\\x85'
    """
    return _UNSAFE_IN_HTML.sub(_escape, text)


def _masked_values(value: Any) -> Any:
    if isinstance(value, str):
        return masked_url(value)
    if isinstance(value, list):
        return [_masked_values(item) for item in value]
    if isinstance(value, dict):
        return {key: _masked_values(item) for key, item in value.items()}
    return value


def json_line(record: dict[str, Any]) -> str:
    """One JSON object for a command's output: credentials masked in every string, and
    what ``printable`` escapes written as JSON escapes (the same data when parsed).

    >>> json_line({"url": "https://u:p@h/\\x1b", "site": "a\\u202eb"})
    '{"url": "https://***@h/\\\\u001b", "site": "a\\\\u202eb"}'
    >>> json.loads(json_line({"t": "\\x85\\u2028"})) == {"t": "\\x85\\u2028"}
    True
    """
    text = json.dumps(_masked_values(record), ensure_ascii=False)
    return _UNPRINTABLE.sub(lambda found: f"\\u{ord(found.group()):04x}", text)


def logged(text: str) -> str:
    """A log message or traceback as written: credentials masked, controls escaped but
    for tab and newline (a message, a stats dump, a traceback have lines; a carriage
    return or an escape would rewrite the line on a terminal).

    >>> print(logged("Crawled (200) <GET https://u:pw@h/a> (referer: None)\\nnext\\r\\x1b[2J"))
    Crawled (200) <GET https://***@h/a> (referer: None)
    next\\r\\x1b[2J
    """
    return _UNPRINTABLE_LINES.sub(_escape, masked_url(text))


class MaskedLogRecord(logging.LogRecord):
    """A log record whose message and traceback are ``logged``: whatever handler,
    formatter or logger writes it (Scrapy's "Crawled (200) <GET url>", its redirects,
    retries and download errors, our own lines, the settings it prints at the start)."""

    def getMessage(self) -> str:
        return logged(super().getMessage())

    # Formatter.format stores a formatted traceback here and appends it.
    @property
    def exc_text(self) -> str | None:
        # logging.makeLogRecord fills __dict__ directly.
        raw = self.__dict__.get("exc_text", self.__dict__.get("_exc_text"))
        return None if raw is None else logged(raw)

    @exc_text.setter
    def exc_text(self, value: str | None) -> None:
        self._exc_text = value


def mask_logs() -> None:
    """Make every log record of this process from now on a ``MaskedLogRecord`` (records
    are made by a process-wide factory; a handler's filter would be lost each time Scrapy
    installs its root handler again for a crawler's settings). Another factory installed
    before is left alone: it may not make ``LogRecord``s."""
    if logging.getLogRecordFactory() is logging.LogRecord:
        logging.setLogRecordFactory(MaskedLogRecord)
