"""Logging in to a site before walking it (0archive's ``login_url``): the login form is
the page's form with a password field; the credentials come from the environment, named
after the login page's host, never from the site config (which is exported and synced).

    ZEROARCHIVE_LOGIN_<HOST>_USERNAME, ZEROARCHIVE_LOGIN_<HOST>_PASSWORD
    (<HOST>: the host upper-cased, every other character than A-Z and 0-9 as "_")
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from scrapy.http import FormRequest, Response, TextResponse

from zeroarchive.core.urls import host_of

PASSWORD_FORM = '//form[.//input[@type="password"]]'
_USER_TYPES = ("text", "email", "tel", "")


class LoginError(Exception):
    """Logging in could not even be tried; ``kind`` is the stats/error kind."""

    def __init__(self, kind: str, message: str) -> None:
        super().__init__(message)
        self.kind = kind


def credential_names(login_url: str) -> tuple[str, str]:
    """The environment variables that hold a login page's username and password.

    >>> credential_names("https://news-site.tw/login?next=/")
    ('ZEROARCHIVE_LOGIN_NEWS_SITE_TW_USERNAME', 'ZEROARCHIVE_LOGIN_NEWS_SITE_TW_PASSWORD')
    """
    key = re.sub(r"[^A-Z0-9]", "_", host_of(login_url).upper())
    return f"ZEROARCHIVE_LOGIN_{key}_USERNAME", f"ZEROARCHIVE_LOGIN_{key}_PASSWORD"


def credentials(login_url: str, environ: Mapping[str, str] | None = None) -> tuple[str, str]:
    """(username, password) for a login page; LoginError naming the variables if unset."""
    env = os.environ if environ is None else environ
    user_var, password_var = credential_names(login_url)
    user, password = env.get(user_var), env.get(password_var)
    if not user or not password:
        raise LoginError("login_credentials_missing", f"set {user_var} and {password_var}")
    return user, password


def login_request(response: Response, user: str, password: str, **kwargs: Any) -> FormRequest:
    """The login form of ``response`` filled in: the password into its password field, the
    user name into the text or e-mail field before it. LoginError if there is no such form."""
    if not isinstance(response, TextResponse):
        raise LoginError("login_form_missing", f"{response.url} is not a page")
    forms = response.xpath(PASSWORD_FORM)
    if not forms:
        raise LoginError("login_form_missing", f"no form with a password field on {response.url}")
    inputs = forms[0].xpath(".//input[@name]")
    names = [(field.attrib.get("type", "").lower(), field.attrib["name"]) for field in inputs]
    secret = next(name for kind, name in names if kind == "password")
    before = names[: names.index(("password", secret))]
    user_field = next((name for kind, name in reversed(before) if kind in _USER_TYPES), None)
    if user_field is None:
        raise LoginError("login_form_missing", f"no user name field on {response.url}")
    return FormRequest.from_response(
        response,
        formxpath=PASSWORD_FORM,
        formdata={user_field: user, secret: password},
        dont_click=False,
        **kwargs,
    )


def asks_for_password(response: Response) -> bool:
    """Whether a page still holds a login form: the login did not take."""
    return isinstance(response, TextResponse) and bool(response.xpath(PASSWORD_FORM))
