"""A local m.facebook.com for the facebook spider, rebuilt from real recorded responses.

The posts (``<article>`` blocks) and comments (``data-sigil="comment"`` blocks) are the
real ones in tests/fixtures/facebook (m.facebook.com, 2021-06-08; see SOURCE.txt), stripped of
scripts, pictures and every other outside address, with fresh ids so a page can have any
number of posts. What the real site does with JavaScript, a small script here does:

- ``/<page>/posts/`` shows the first posts; scrolling to the bottom fetches the next ones
  from ``/page_content_list_view/more/`` (Facebook's own ``for (;;);`` JSON "replace" action).
- ``group=True`` serves a public group instead, from the recorded group's posts:
  ``/groups/<group id>/`` shows the first posts and a "See more posts…" item
  (``#m_more_item``) that scrolling replaces with the next ones from
  ``/groups/<group id>?bac=<cursor>``.
- ``/<post id>`` redirects to ``/story.php?story_fbid=<id>&id=<page id>`` (as recorded),
  or for a group post to ``/groups/<group name>/permalink/<id>/`` (as recorded);
  a post shows the "Most relevant" comments, 5 at a time; "View more comments…" loads the
  next 5, "Most relevant" opens a menu whose "All comments" reloads them all, and comments
  with replies have a "View more replies" link (2 replies a click).
- ``session="<id>"``: everything is behind the login wall except for requests carrying
  the logged-in session's ``c_user=<id>`` cookie (``with_session`` counts them).
- ``covered_pager_of=<n>``: post n's "View more comments…" pager lies under a
  transparent layer (as under a site's banner or cookie bar), so a click at it hits the
  layer and loads nothing.
- ``gate="login"`` / ``"checkpoint"`` answers page requests, after ``gate_after`` normal
  post pages, with a redirect to ``/login.php?next=...`` or ``/checkpoint/?next=...``;
  ``gate="login_form"`` serves the login form in place of the page.

Every request is counted in ``hits`` (path and query) for "nothing fetched twice" checks;
every comment and reply carries ``data-emu="p<post>-c<n>[-r<m>]"`` for completeness checks.
"""

from __future__ import annotations

import html
import json
import lzma
import re
import threading
from collections import Counter
from dataclasses import dataclass
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qs, quote, urlsplit

from lxml import etree
from lxml import html as lxml_html

from tests.conftest import FIXTURES

RECORDED = FIXTURES / "facebook"
PAGE = "Nintendo"
PAGE_ID = "119240841493711"
GROUP_ID = "117507531664134"
GROUP_NAME = "southamericansincomputing"
FIRST_POSTS = 3
MORE_POSTS = 4
COMMENT_PAGE = 5
REPLY_PAGE = 2
POST_ID_BASE = 9_100_000_000_000_000
_IDS = re.compile(
    r"(?:story_fbid=|/posts/|top_level_post_id\.|mf_story_key\.|tl_objid\.|/permalink/)(\d{8,})"
)
_DROP_TAGS = ("script", "img", "link", "style", "video", "source", "iframe", "noscript", "meta")


@dataclass(frozen=True)
class Post:
    number: int
    post_id: str
    ids: tuple[str, ...]  # every post id its listing block links to
    block: str  # the listing block (<article>)
    comments: int
    replies: tuple[int, ...]  # replies per comment (0 = none)

    def relevant(self) -> list[int]:
        """The comments "Most relevant" shows: all but every fourth."""
        return [c for c in range(self.comments) if c % 4 != 3]

    def markers(self) -> set[str]:
        found = {f"p{self.number}-c{c}" for c in range(self.comments)}
        for c, n in enumerate(self.replies):
            found.update(f"p{self.number}-c{c}-r{r}" for r in range(n))
        return found


def _interactions() -> list[tuple[str, str]]:
    """(request URI, response body) of each recorded response, in INDEX.tsv's order."""
    rows = (RECORDED / "INDEX.tsv").read_text(encoding="utf-8").splitlines()[1:]
    bodies = []
    for row in rows:
        name, _status, uri = row.split("\t")
        bodies.append((uri, lzma.decompress((RECORDED / name).read_bytes()).decode("utf-8")))
    return bodies


def _clean(element: Any) -> str:
    """An element without anything that would make a browser leave 127.0.0.1."""
    etree.strip_elements(element, *_DROP_TAGS, with_tail=False)
    for node in element.iter():
        if not isinstance(node.tag, str):
            continue
        style = node.get("style")
        if style and "url(" in style:
            del node.attrib["style"]
        for name in ("href", "data-ajaxify-href"):
            value = node.get(name)
            if value and value.startswith("https://m.facebook.com/"):
                node.set(name, value[len("https://m.facebook.com") :])
    return lxml_html.tostring(element, encoding="unicode")


@cache
def templates(group: bool = False) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """(listing blocks, comment blocks) from the recorded pages, cleaned and de-duplicated:
    the page's posts, or with ``group`` the group's."""
    articles: dict[str, str] = {}
    comments: dict[str, str] = {}
    for uri, body in _interactions():
        if body.startswith("for (;;);"):
            payload = json.loads(body[len("for (;;);") :])
            body = "".join(a.get("html", "") for a in payload["payload"]["actions"])
        # m.facebook.com ships comment lists inside <code><!-- ... --></code>.
        doc = lxml_html.fromstring(body.replace("<!--", "").replace("-->", ""))
        if (
            ("/posts/" in uri and not uri.endswith("/posts/"))
            or "story.php" in uri
            or ("/permalink/" in uri)
        ):
            for block in doc.xpath('//div[@data-sigil="comment"]'):
                for pager in block.xpath('.//div[starts-with(@id, "comment_replies_more")]'):
                    pager.getparent().remove(pager)
                comments.setdefault(block.get("id", ""), _clean(block))
        listing = (
            uri.endswith(f"/groups/{GROUP_ID}/")
            if group
            else (uri.endswith("/posts/") or "page_content_list_view" in uri)
        )
        if listing:
            for block in doc.xpath("//article"):
                text = _clean(block)
                ids = _IDS.findall(text)
                if ids and ids[0] not in articles:
                    articles[ids[0]] = text
    return tuple(articles.values()), tuple(comments.values())


def make_posts(count: int, group: bool = False) -> list[Post]:
    blocks, _ = templates(group)
    posts = []
    for number in range(count):
        template = blocks[number % len(blocks)]
        old_ids = list(dict.fromkeys(_IDS.findall(template)))
        new_ids = {old: str(POST_ID_BASE + number * 10 + i) for i, old in enumerate(old_ids)}
        block = re.sub("|".join(old_ids), lambda m, ids=new_ids: ids[m.group(0)], template)
        post_id = new_ids[old_ids[0]]
        if group:
            (post_id,) = set(re.findall(r"/permalink/(\d{8,})", block))
        if number % 2 and not group:
            # The other link form Facebook uses for the same post.
            block = re.sub(
                r"/story\.php\?story_fbid=(\d+)&amp;id=\d+(&amp;)?",
                lambda m: f"/{PAGE}/posts/{m.group(1)}?",
                block,
            )
        if number % 3 == 0 and not group:
            block = block.replace(
                "</article>",
                f'<a href="/{PAGE}/posts/{post_id}/?refsrc=timeline">Full story</a></article>',
                1,
            )
        # A group's listing also links what its members shared; only permalinks are its posts.
        forms = r"/permalink/" if group else r"(?:story_fbid=|/posts/)"
        linked = set(re.findall(forms + r"(\d{8,})", block))
        # 6 to 12 comments: each post pages its comments (5 at a time) once or twice, the
        # fewest that still take every pager; more only cost the browser time.
        comments = 6 + (number * 3) % 7
        replies = tuple(1 + (number + c) % 4 if c % 3 == 0 else 0 for c in range(comments))
        posts.append(Post(number, post_id, tuple(sorted(linked)), block, comments, replies))
    return posts


class _Handler(BaseHTTPRequestHandler):
    server: _HTTPServer

    def do_GET(self) -> None:
        site = self.server.site
        with site.lock:
            site.hits[self.path] += 1
            if site.session and f"c_user={site.session}" in (self.headers.get("Cookie") or ""):
                site.with_session += 1
        status, headers, body = site.respond(self.path, self.headers.get("Cookie") or "")
        self.send_response_only(status)
        for name, value in headers:
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format: str, *args: Any) -> None:
        pass


class _HTTPServer(ThreadingHTTPServer):
    daemon_threads = True
    site: FacebookServer

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # a browser closing a page mid-response is normal


_SCRIPT = """
<script>
function replaceFrom(url, target) {
  return fetch(url).then(r => r.text()).then(text => {
    if (text.startsWith('for (;;);')) {
      const payload = JSON.parse(text.slice(9)).payload;
      for (const action of payload.actions) {
        document.getElementById(action.target).outerHTML = action.html;
      }
    } else {
      target.outerHTML = text;
    }
  });
}
let loading = false;
window.addEventListener('scroll', () => {
  const more = document.querySelector('#see_more_cards_id a, #m_more_item a');
  if (!more || loading) return;
  if (window.innerHeight + window.scrollY < document.body.scrollHeight - 200) return;
  loading = true;
  replaceFrom(more.getAttribute('href'), more.closest('#m_more_item'))
    .finally(() => { loading = false; });
});
document.addEventListener('click', event => {
  const link = event.target.closest('a');
  if (!link) return;
  const pager = link.closest('[id^="see_next_"], [data-sigil="replies-see-more"]');
  if (pager) {
    event.preventDefault();
    replaceFrom(link.dataset.ajaxifyHref, pager);
  } else if (link.dataset.sigil === 'comment-filter') {
    event.preventDefault();
    const menu = document.createElement('div');
    menu.setAttribute('role', 'menu');
    menu.innerHTML = '<a href="#" data-filter="relevant">Most relevant</a> ' +
                     '<a href="#" data-filter="all">All comments</a>';
    link.after(menu);
  } else if (link.dataset.filter === 'all') {
    event.preventDefault();
    const section = document.getElementById('comments');
    replaceFrom(section.dataset.allHref, section);
  }
});
</script>
"""


class FacebookServer:
    """``with FacebookServer(posts=12) as fb:`` then crawl ``fb.url(fb.page_path)``."""

    def __init__(
        self,
        posts: int = 12,
        gate: str | None = None,
        gate_after: int = 0,
        hold_comments_of: str | None = None,
        covered_pager_of: int | None = None,
        group: bool = False,
        session: str | None = None,
    ) -> None:
        self.group = group
        #: A logged-in session's c_user cookie: with one, pages without it are login walls.
        self.session = session
        self.with_session = 0
        self.posts = make_posts(posts, group)
        self.by_id = {pid: post for post in self.posts for pid in post.ids}
        self.by_id.update({post.post_id: post for post in self.posts})
        self.gate = gate
        self.gate_after = gate_after
        self.hits: Counter[str] = Counter()
        self.gated_hits = 0
        self.post_pages_served = 0
        self.lock = threading.Lock()
        # Crash tests: the first comment request of this post waits until `release` is set.
        self.hold_comments_of = hold_comments_of
        self.held = threading.Event()
        self.release = threading.Event()
        self.covered_pager_of = covered_pager_of
        self.page_path = f"/groups/{GROUP_ID}/" if group else f"/{PAGE}/posts/"
        self._server: _HTTPServer | None = None

    # --- serving ----------------------------------------------------------------------

    @property
    def base_url(self) -> str:
        assert self._server is not None
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}"

    def url(self, path: str) -> str:
        return self.base_url + path

    def __enter__(self) -> FacebookServer:
        self._server = _HTTPServer(("127.0.0.1", 0), _Handler)
        self._server.site = self
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release.set()
        assert self._server is not None
        self._server.shutdown()
        self._server.server_close()

    def respond(self, target: str, cookie: str = "") -> tuple[int, list[tuple[str, str]], bytes]:
        parts = urlsplit(target)
        if self.session and parts.path != "/login.php" and f"c_user={self.session}" not in cookie:
            where = f"/login.php?next={quote(self.url(target), safe='')}"
            return 302, [("Location", where)], b""
        query = {k: v[0] for k, v in parse_qs(parts.query).items()}
        path = parts.path
        if path == "/login.php":
            return self._html(_gate_page("login"))
        if path.startswith("/checkpoint"):
            return self._html(_gate_page("checkpoint"))
        if path == self.page_path:
            return self._gated(target) or self._html(self._listing())
        if path == "/page_content_list_view/more/":
            return self._more(int(query.get("start_cursor", "0")))
        if self.group and path == f"/groups/{GROUP_ID}":
            return self._html(self._cards(int(query.get("bac", "0")), MORE_POSTS))
        found = re.fullmatch(r"/(\d+)/?", path)
        if found and found.group(1) in self.by_id:
            location = f"/story.php?story_fbid={found.group(1)}&id={PAGE_ID}"
            if self.group:
                location = f"/groups/{GROUP_NAME}/permalink/{found.group(1)}/"
            return 302, [("Location", location)], b""
        permalink = re.fullmatch(rf"/groups/{GROUP_NAME}/permalink/(\d+)/", path)
        if self.group and permalink and permalink.group(1) in self.by_id:
            with self.lock:
                gated = self._gated(target)
                if gated is None:
                    self.post_pages_served += 1
            return gated or self._html(self._post_page(self.by_id[permalink.group(1)]))
        if path == "/story.php" and query.get("story_fbid") in self.by_id:
            with self.lock:
                gated = self._gated(target)
                if gated is None:
                    self.post_pages_served += 1
            return gated or self._html(self._post_page(self.by_id[query["story_fbid"]]))
        if path == "/ajax/comments/":
            post = self.by_id[query["post"]]
            if post.post_id == self.hold_comments_of and not self.held.is_set():
                self.held.set()
                self.release.wait(60)
            return self._html(
                self._comments(post, query["filter"], int(query["offset"]), section=False)
            )
        if path == "/ajax/replies/":
            post = self.by_id[query["post"]]
            return self._html(self._replies(post, int(query["comment"]), int(query["offset"])))
        return 404, [("Content-Type", "text/html")], b"<html><body>Not found</body></html>"

    def _gated(self, target: str) -> tuple[int, list[tuple[str, str]], bytes] | None:
        if self.gate is None or self.post_pages_served < self.gate_after:
            return None
        self.gated_hits += 1
        if self.gate == "login_form":
            return self._html(_gate_page("login"))
        where = "/login.php" if self.gate == "login" else "/checkpoint/"
        return 302, [("Location", f"{where}?next={quote(self.url(target), safe='')}")], b""

    @staticmethod
    def _html(text: str) -> tuple[int, list[tuple[str, str]], bytes]:
        return 200, [("Content-Type", "text/html; charset=utf-8")], text.encode("utf-8")

    # --- pages ------------------------------------------------------------------------

    def _listing(self) -> str:
        cards = self._cards(0, FIRST_POSTS)
        if self.group:
            body = f'<section id="m_group_stories_container">{cards}</section>'
            return _document("South Americans in Computing public group | Facebook", body)
        return _document(f"{PAGE} - Posts | Facebook", f'<div id="m_pages">{cards}</div>')

    def _cards(self, start: int, n: int) -> str:
        blocks = "".join(post.block for post in self.posts[start : start + n])
        end = start + n
        if self.group:
            if end < len(self.posts):
                more = f"/groups/{GROUP_ID}?bac={end}&amp;multi_permalinks&amp;refid=18"
                blocks += (
                    '<div class="item _5v-l fullwidthMore async_elem" id="m_more_item">'
                    f'<a href="{more}">See more posts…</a></div>'
                )
            return blocks
        if end < len(self.posts):
            more = (
                f"/page_content_list_view/more/?page_id={PAGE_ID}&amp;start_cursor={end}"
                f"&amp;num_to_fetch={MORE_POSTS}&amp;surface_type=posts_tab"
            )
            blocks += f'<div id="see_more_cards_id"><a href="{more}">See more stories</a></div>'
        else:
            blocks += '<div id="see_more_cards_id"></div>'
        return blocks

    def _more(self, start: int) -> tuple[int, list[tuple[str, str]], bytes]:
        action = {
            "cmd": "replace",
            "target": "see_more_cards_id",
            "html": self._cards(start, MORE_POSTS),
        }
        body = "for (;;);" + json.dumps({"payload": {"actions": [action]}})
        return 200, [("Content-Type", "application/x-javascript; charset=utf-8")], body.encode()

    def _post_page(self, post: Post) -> str:
        body = post.block + self._comments(post, "relevant", 0, section=True)
        return _document(f"{PAGE} | Facebook", body)

    def _comments(self, post: Post, filter_: str, offset: int, *, section: bool) -> str:
        shown = post.relevant() if filter_ == "relevant" else list(range(post.comments))
        blocks = "".join(self._comment(post, c) for c in shown[offset : offset + COMMENT_PAGE])
        end = offset + COMMENT_PAGE
        if end < len(shown):
            href = f"/ajax/comments/?post={post.post_id}&amp;filter={filter_}&amp;offset={end}"
            cover = (
                '<span style="position:absolute;inset:0"></span>'
                if post.number == self.covered_pager_of
                else ""
            )
            blocks += (
                f'<div class="async_elem" id="see_next_{post.post_id}" style="position:relative">'
                f'<a href="#" data-ajaxify-href="{href}" data-sigil="ajaxify">'
                f"View more comments…</a>{cover}</div>"
            )
        if not section and offset > 0:
            return blocks
        label = "Most relevant" if filter_ == "relevant" else "All comments"
        all_href = f"/ajax/comments/?post={post.post_id}&amp;filter=all&amp;offset=0"
        return (
            f'<div id="comments" data-all-href="{all_href}">'
            f'<a href="#" data-sigil="comment-filter">{label}</a>{blocks}</div>'
        )

    def _comment(self, post: Post, c: int, reply: int | None = None) -> str:
        _, pool = templates()
        marker = f"p{post.number}-c{c}" + ("" if reply is None else f"-r{reply}")
        block = pool[(post.number * 31 + c * 7 + (reply or 0) * 3) % len(pool)]
        block = re.sub(r"^<div ", f'<div data-emu="{marker}" ', block, count=1)
        if reply is None and post.replies[c]:
            block += self._reply_pager(post, c, 0)
        return block

    def _reply_pager(self, post: Post, c: int, offset: int) -> str:
        href = f"/ajax/replies/?post={post.post_id}&amp;comment={c}&amp;offset={offset}"
        left = post.replies[c] - offset
        return (
            f'<div class="_2b1h async_elem" data-sigil="replies-see-more">'
            f'<a href="#" data-ajaxify-href="{href}" data-sigil="ajaxify">'
            f"View more replies ({left})</a></div>"
        )

    def _replies(self, post: Post, c: int, offset: int) -> str:
        end = min(offset + REPLY_PAGE, post.replies[c])
        blocks = "".join(self._comment(post, c, r) for r in range(offset, end))
        if end < post.replies[c]:
            blocks += self._reply_pager(post, c, end)
        return f"<div>{blocks}</div>"


def _document(title: str, body: str) -> str:
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title>"
        "<style>article{display:block;min-height:420px}</style></head>"
        f"<body>{body}{_SCRIPT}</body></html>"
    )


def _gate_page(kind: str) -> str:
    if kind == "login":
        body = (
            "<div>You must log in to continue.</div>"
            '<form method="post" id="login_form" action="/login/device-based/regular/login/">'
            '<input name="email"><input type="password" name="pass"></form>'
        )
        return _document("Log in to Facebook | Facebook", body)
    return _document("Security check", "<div>Your account has been temporarily locked.</div>")
