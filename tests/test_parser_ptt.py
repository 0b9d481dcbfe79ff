"""The PTT parser on real saved posts: one test per field."""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest

from zeroarchive.parser import Parsed, ParseError, parse_snapshot

# The same real posts the PTT spider's emulator serves.
FIXTURES = Path(__file__).parent / "fixtures" / "ptt"
REPLY_URL = "https://www.ptt.cc/bbs/Gossiping/M.1459688662.A.CFE.html"


@cache
def post(name: str = "tommady-pttifierLib__TestContentHTML.html") -> Parsed:
    return parse_snapshot("PTT", (FIXTURES / name).read_bytes(), "utf-8", REPLY_URL)


def test_author() -> None:
    assert post().author == "senyek9527"


def test_board() -> None:
    assert post().metadata["board"] == "Gossiping"


def test_title_and_category() -> None:
    assert post().title == "Re: [新聞] 5年7起隨機殺人 台灣社會學到甚麼？"
    assert post().tags == ("新聞",)


def test_published_at_from_the_header_in_taipei_time() -> None:
    assert post().published_at == 1459688655  # Sun Apr  3 21:04:15 2016 +08:00


def test_body_is_the_authors_own_text() -> None:
    text = post().text
    assert text.startswith("學不到什麼的啦")
    assert "大概就是台灣人學到的教訓" in text


def test_body_leaves_out_the_quoted_reply() -> None:
    assert "引述" not in post().text
    assert "新唐人亞太台" not in post().text
    assert post().metadata["quoted"].startswith("※ 引述《sunbysea (忠言逆耳良藥苦口)》之銘言：")


def test_body_leaves_out_signature_and_footer() -> None:
    text = post().text
    assert "機會就像老二" not in text
    assert "發信站" not in text
    assert post().metadata["signature"] == "機會就像老二 握緊就會變大\n時間就像乳溝 擠擠還是有的"


def test_poster_ip_and_canonical_url_from_the_footer() -> None:
    assert post().metadata["ip"] == "126.148.111.173"
    assert post().canonical_url == REPLY_URL


def test_every_push_is_a_comment() -> None:
    comments = post().comments
    assert [c["type"] for c in comments] == ["噓", "→", "推", "→", "噓", "→", "推", "→"]
    assert post().metadata["push_counts"] == {"推": 2, "噓": 2, "→": 4}


def test_push_fields() -> None:
    first = post().comments[0]
    assert first["user"] == "skyexers"
    assert first["text"] == "還沒崩潰完？"
    assert first["time_text"] == "04/03 21:07"
    assert first["time"] == 1459688820  # 2016-04-03 21:07 +08:00, the post's year
    assert first["ip"] is None


def test_cloudflare_hidden_text_in_a_push_is_restored() -> None:
    other = post("meifamily-ptt-alertor__dummyArticle.html")
    assert other.comments[1]["text"] == "好了~今天先做到這~預祝空軍今天賺飽飽~睡好覺@v@b"
    assert other.text == "測"
    assert other.author == "ChoDino"
    assert other.metadata["board"] == "TFSHS66th321"


def test_a_page_without_a_post_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_snapshot("PTT", b"<html><body>over18?</body></html>", "utf-8", REPLY_URL)
