"""A PTT web server emulator (www.ptt.cc's /bbs pages) built from real saved pages.

Fixtures (tests/fixtures/ptt, see SOURCE.txt there): two real board index pages (LoL, 2016
and 2017 layouts) and two real posts with pushes (Gossiping, 8 pushes; TFSHS66th321, 4).
From them it builds, per board, a chain of index pages linked by their previous-page
(上頁) buttons: the newest (``index.html``) in the 2017 layout with a sticky post after the
separator, the older ones (``index<N-1>.html`` ... ``index1.html``) in the 2016 layout.
One older LoL page is the real 2016 page as saved (its deleted row "(本文已被刪除)" and the
author's fake row ``M.1457622048.A.Z80`` included); the other rows are made from its real
row markup, with a deleted row on some pages. Each post page is one of the real posts, its
own URL and board put in.

Gates, like the real site: a board redirects every page to ``/ask/over18?from=<path>``
unless the request carries ``over18=1`` (``gate="cookie"``). A ``gate="form"`` board
ignores the cookie (as a server does that never gets it, e.g. under another domain) until
the over-18 form has been answered with "yes" once. The over-18 page is reconstructed
around the real form (``from`` hidden field, ``yes`` and ``no`` buttons); a "yes" POST
sets ``over18=1`` and redirects back to ``from``.
"""

from __future__ import annotations

import html
import re
import threading
from dataclasses import dataclass, field
from functools import cache
from pathlib import Path
from urllib.parse import parse_qs, quote, unquote, urlsplit

from tests.emulator import NOT_FOUND, Incoming, Reply
from tests.emulator import html as html_reply

FIXTURES = Path(__file__).parent / "fixtures" / "ptt"
NEW_LAYOUT = "meifamily-ptt-alertor__dummyBody.html"
OLD_LAYOUT = "tommady-pttifierLib__TestBoardHTML.html"
POST_TEMPLATES = (
    # (file, the post's own path in it, its board, pushes)
    (
        "tommady-pttifierLib__TestContentHTML.html",
        "/bbs/Gossiping/M.1459688662.A.CFE.html",
        "Gossiping",
        8,
    ),
    (
        "meifamily-ptt-alertor__dummyArticle.html",
        "/bbs/TFSHS66th321/M.1498563199.A.35C.html",
        "TFSHS66th321",
        4,
    ),
)
ROW = re.compile(r'\t\t<div class="r-ent">\n.*?\n\t\t</div>\n', re.DOTALL)
POST_HREF = re.compile(r'href="(/bbs/[^/]+/M\.\d+\.A\.[0-9A-F]+\.html)"')
PREVIOUS = re.compile(r'<a class="btn wide"( href="[^"]*")?>&lsaquo; 上頁</a>')
NEXT = re.compile(r'<a class="btn wide( disabled)?"( href="[^"]*")?>下頁 &rsaquo;</a>')
REAL_PAGE = 2  # the chain position (0 = newest) of the real 2016 page, served as saved


def _fixture(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


@cache
def _rows() -> tuple[str, str]:
    """The real markup of a post row and of a deleted row (2016 page)."""
    rows = ROW.findall(_fixture(OLD_LAYOUT))
    post = next(r for r in rows if "M.1457622282.A.D4F" in r)
    deleted = next(r for r in rows if "本文已被刪除" in r)
    return post, deleted


def _post_row(board: str, path: str, title: str, pushes: int, author: str) -> str:
    row, _ = _rows()
    return (
        row.replace("/bbs/LoL/M.1457622282.A.D4F.html", path)
        .replace("Re: [問題] AlphaGo打LoL的話會怎麼樣", html.escape(title))
        .replace(">4</span>", f">{pushes}</span>")
        .replace("lzainside", author)
    )


def _deleted_row(author: str) -> str:
    _, row = _rows()
    return row.replace("asdxxg5", author)


def _paging(page: str, previous: str | None, next_: str | None) -> str:
    before = f' href="{previous}"' if previous else ""
    page = PREVIOUS.sub(
        f'<a class="btn wide{"" if previous else " disabled"}"{before}>&lsaquo; 上頁</a>', page
    )
    after = f' href="{next_}"' if next_ else ""
    return NEXT.sub(
        f'<a class="btn wide{"" if next_ else " disabled"}"{after}>下頁 &rsaquo;</a>', page
    )


def _with_rows(layout: str, rows: str) -> str:
    spans = [m.span() for m in ROW.finditer(layout)]
    return layout[: spans[0][0]] + rows + layout[spans[-1][1] :]


@dataclass
class Board:
    name: str
    gate: str  # "cookie" or "form"
    pages: dict[str, str] = field(default_factory=dict)  # path -> html, newest first
    posts: dict[str, tuple[bytes, int]] = field(default_factory=dict)  # path -> (page, pushes)
    deleted_rows: int = 0

    def post_paths(self) -> set[str]:
        """What a reader finds: the valid post links of every index page."""
        return {p for page in self.pages.values() for p in POST_HREF.findall(page)}


def _post_page(board: str, path: str, number: int) -> tuple[bytes, int]:
    name, own_path, own_board, pushes = POST_TEMPLATES[number % len(POST_TEMPLATES)]
    page = _fixture(name).replace(own_path, path).replace(f"/bbs/{own_board}/", f"/bbs/{board}/")
    return page.replace(f"看板 {own_board}", f"看板 {board}").encode("utf-8"), pushes


def build_board(name: str, pages: int, posts_per_page: int, gate: str, real_page: bool) -> Board:
    """A board of ``pages`` index pages (with the real 2016 page at REAL_PAGE if asked)."""
    board = Board(name, gate)
    numbers = list(range(pages, 0, -1))
    paths = {n: f"/bbs/{name}/index{n}.html" for n in numbers}
    paths[pages] = f"/bbs/{name}/index.html"
    serial = 0
    for position, n in enumerate(numbers):
        previous = paths.get(n - 1)
        next_ = None if n == pages else f"/bbs/{name}/index{n + 1}.html"
        if real_page and position == REAL_PAGE:
            page = _fixture(OLD_LAYOUT).replace("/bbs/LoL/", f"/bbs/{name}/")
            board.deleted_rows += page.count("本文已被刪除")
            board.pages[paths[n]] = _paging(page, previous, next_)
            continue
        rows = []
        for r in range(posts_per_page):
            serial += 1
            post_id = f"M.{1457000000 + n * 1000 + r * 37}.A.{(serial * 2741) % 4096:03X}"
            path = f"/bbs/{name}/{post_id}.html"
            rows.append(_post_row(name, path, f"[閒聊] 第{n}頁第{r + 1}篇", r, f"user{serial}"))
        if n % 2 == 0:
            rows.insert(1, _deleted_row(f"gone{n}"))
            board.deleted_rows += 1
        layout = _fixture(NEW_LAYOUT if n == pages else OLD_LAYOUT).replace(
            "/bbs/LoL/", f"/bbs/{name}/"
        )
        layout = layout.replace("</span>LoL</a>", f"</span>{name}</a>")
        body = "".join(rows)
        if n == pages:
            # Sticky posts come after the separator on the newest page only; keep the real one.
            sticky = ROW.findall(layout)[-1]
            body += '        <div class="r-list-sep"></div>\n' + sticky
        board.pages[paths[n]] = _paging(_with_rows(layout, body), previous, next_)
    for number, path in enumerate(sorted(board.post_paths())):
        board.posts[path] = _post_page(name, path, number)
    return board


def over18_page(from_path: str) -> str:
    value = html.escape(from_path, quote=True)
    return f"""<!DOCTYPE html>
<html>
	<head>
		<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>批踢踢實業坊</title>
	</head>
    <body>
<div class="bbs-screen bbs-content center clear">
	<div class="over18-notice">
		<p>本網站已依網站內容分級規定處理</p>
		<p>警告︰您即將進入之看板內容需滿十八歲方可瀏覽。</p>
	</div>
	<form action="/ask/over18" method="post">
		<input type="hidden" name="from" value="{value}">
		<div class="over18-button-container">
			<button class="btn-big" type="submit" name="yes" value="yes">
				我同意，我已年滿十八歲<br><small>進入</small></button>
		</div>
		<div class="over18-button-container">
			<button class="btn-big" type="submit" name="no" value="no">
				未滿十八歲或不同意本條款<br><small>離開</small></button>
		</div>
	</form>
</div>
    </body>
</html>
"""


class PttApp:
    def __init__(self, boards: list[Board]) -> None:
        self.boards = {board.name: board for board in boards}
        self.answered = False
        self.refusals = 0
        self._lock = threading.Lock()

    def handle(self, request: Incoming) -> Reply:
        path = urlsplit(request.path).path
        if path == "/ask/over18":
            return self._over18(request)
        parts = path.split("/")
        board = self.boards.get(parts[2]) if len(parts) == 4 and parts[1] == "bbs" else None
        if board is None:
            return NOT_FOUND
        if not self._passes(board, request):
            location = f"/ask/over18?from={quote(request.path, safe='')}"
            return Reply(302, (("Location", location),), b"")
        if path in board.pages:
            return html_reply(200, board.pages[path])
        if path in board.posts:
            return Reply(200, (("Content-Type", "text/html; charset=utf-8"),), board.posts[path][0])
        return NOT_FOUND

    def _passes(self, board: Board, request: Incoming) -> bool:
        if board.gate == "form":
            return self.answered
        return request.cookies.get("over18") == "1"

    def _over18(self, request: Incoming) -> Reply:
        if request.method == "GET":
            query = parse_qs(urlsplit(request.path).query)
            return html_reply(200, over18_page(unquote(query.get("from", ["/"])[0])))
        form = parse_qs(request.body.decode("utf-8"))
        from_path = form.get("from", ["/"])[0]
        if form.get("yes") != ["yes"] or not from_path.startswith("/"):
            with self._lock:
                self.refusals += 1
            return Reply(302, (("Location", "/"),), b"")
        with self._lock:
            self.answered = True
        return Reply(302, (("Location", from_path), ("Set-Cookie", "over18=1; Path=/")), b"")


def ptt_app() -> PttApp:
    """LoL (6 index pages, the cookie gate) and Gossiping (2 pages, the form gate)."""
    return PttApp(
        [
            build_board("LoL", pages=6, posts_per_page=5, gate="cookie", real_page=True),
            build_board("Gossiping", pages=2, posts_per_page=3, gate="form", real_page=False),
        ]
    )
