"""The browser draws CJK text with real glyphs, not boxes: the set-up installs Debian's
fonts-noto-cjk (.ci/run) and Chromium, which never downloads web fonts here
(zeroarchive/crawl/browser.py), draws with it. The same page drawn with fontconfig
pointed at no font at all is the control: there every character is the same box."""

from __future__ import annotations

import io
import logging
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from PIL import Image
from playwright.sync_api import Browser, Playwright, sync_playwright

from tests.conftest import require_service
from tests.test_monitor_browser import browser_config, chromium  # noqa: F401 (fixture)
from zeroarchive.crawl.browser import CJK_LANGUAGES, missing_cjk_fonts, warn_without_cjk_fonts

# Traditional and simplified Chinese, Japanese kana and kanji, Korean hangul.
CHARACTERS = "中文報導新闻ひらカナ한국어"
# A private-use character no font has: what a box looks like in this browser.
NO_GLYPH = "\U000f0000"
FAMILIES = ("sans-serif", "serif", "'Noto Sans CJK TC'")
#: Each character's box in the window (left, top, right, bottom; CSS px are pixels here).
BOXES_JS = """n => Array.from({length: n}, (_, i) => {
  const r = document.getElementById("c" + i).getBoundingClientRect();
  return [r.left, r.top, r.right, r.bottom];
})"""
FRAME_DRAWN_JS = (
    "() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))"
)
NO_FONTS = """<?xml version="1.0"?>
<!DOCTYPE fontconfig SYSTEM "fonts.dtd">
<fontconfig><dir>{empty}</dir><cachedir>{empty}/cache</cachedir></fontconfig>
"""


def page_of(characters: str, family: str) -> str:
    spans = "".join(f'<span id="c{i}">{c}</span>' for i, c in enumerate(characters))
    return (
        '<!doctype html><html lang="zh-Hant"><head><meta charset="utf-8"><style>'
        f"body {{ font-family: {family}; font-size: 48px; background: #fff; color: #000 }}"
        "span { display: inline-block; width: 64px; height: 64px; text-align: center }"
        f"</style></head><body>{spans}</body></html>"
    )


def launch(playwright: Playwright, env: dict[str, str] | None = None) -> Browser:
    config = browser_config()
    return playwright.chromium.launch(
        executable_path=config.chromium, args=list(config.chromium_args), headless=True, env=env
    )


@pytest.fixture(scope="module")
def playwright() -> Iterator[Playwright]:
    path = Path(browser_config().chromium)
    require_service("Chromium", None if path.exists() else f"{path} is not installed")
    with sync_playwright() as running:
        yield running


@pytest.fixture(scope="module")
def browser(playwright: Playwright) -> Iterator[Browser]:
    """One browser for every family: a launch costs more than the page it draws."""
    launched = launch(playwright)
    try:
        yield launched
    finally:
        launched.close()


def glyphs(browser: Browser, characters: str, family: str) -> list[bytes]:
    """The pixels of each character as Chromium draws it in ``family``: one shot of the
    window, cut along each character's box (a shot per character cost as much again)."""
    page = browser.new_page()
    try:
        page.set_content(page_of(characters, family))
        boxes = page.evaluate(BOXES_JS, len(characters))
        # A frame drawn before the shot: on a loaded machine Chromium once had none yet
        # ("Unable to capture screenshot"), which an element's shot waited out.
        page.evaluate(FRAME_DRAWN_JS)
        window = Image.open(io.BytesIO(page.screenshot()))
    finally:
        page.close()
    return [window.crop(tuple(round(edge) for edge in box)).tobytes() for box in boxes]


def test_cjk_characters_are_drawn_as_glyphs(browser: Browser) -> None:
    # Every family in one test: pytest-xdist hands out tests one at a time, and a test for
    # each launched a browser on each process that drew one.
    for family in FAMILIES:
        drawn = glyphs(browser, CHARACTERS + NO_GLYPH, family)
        box = drawn.pop()
        # Each character its own shape: boxes would all be one picture.
        assert len(set(drawn)) == len(CHARACTERS), family
        assert box not in drawn, family


def test_without_fonts_the_same_characters_are_boxes(
    playwright: Playwright, tmp_path: Path
) -> None:
    """The control: the check above fails on a machine without CJK fonts."""
    conf = tmp_path / "fonts.conf"
    conf.write_text(NO_FONTS.format(empty=tmp_path), encoding="utf-8")
    control = launch(playwright, {**os.environ, "FONTCONFIG_FILE": str(conf)})
    try:
        drawn = glyphs(control, CHARACTERS, "sans-serif")
    finally:
        control.close()
    assert len(set(drawn)) < len(CHARACTERS) // 2


def test_a_machine_without_cjk_fonts_is_told_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    assert missing_cjk_fonts() == []
    assert warn_without_cjk_fonts() is False
    conf = tmp_path / "fonts.conf"
    conf.write_text(NO_FONTS.format(empty=tmp_path), encoding="utf-8")
    monkeypatch.setenv("FONTCONFIG_FILE", str(conf))
    assert missing_cjk_fonts() == list(CJK_LANGUAGES)
    caplog.set_level(logging.WARNING)
    assert warn_without_cjk_fonts() is True
    assert len(caplog.records) == 1
    assert "fonts-noto-cjk" in caplog.records[0].getMessage()
