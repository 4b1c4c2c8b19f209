"""The link a signed-out visitor opened, kept through the sign-in round trip in a cookie the browser writes
(`encodeURIComponent(page + location.search)`): it comes back as the same page and query, and anything that is not
one of the dashboard's own pages comes back as nothing (no open redirect)."""

from __future__ import annotations

from urllib.parse import quote, urlencode

import pytest

from planner.team.roles import RETURN_MAX_CHARS, parse_return_cookie

PAGES = {"", "worksheet", "alerts", "admin"}


def cookie(link: str) -> str:
    """What the browser's encodeURIComponent makes of `link` (it leaves !'()* as they are)."""
    return quote(link, safe="!'()*")


def test_a_worksheet_link_comes_back_with_its_query_exactly():
    query = [
        ("interaction", "Chat panel / single-file edit"),
        ("queue_ms", "140"),
        ("cold_ms_from", "eyJzb3VyY2UiOiJjb2xkIHJlYWRpbmcifQ"),
        ("custom", "Review bot:3000|Nightly (eu):9000"),
        ("tag", "a"),
        ("tag", "b"),  # a repeated parameter keeps every value
        ("embed", "true"),  # Streamlit keeps embed itself
    ]
    assert parse_return_cookie(cookie("worksheet?" + urlencode(query)), PAGES) == (
        "worksheet",
        {
            "interaction": ["Chat panel / single-file edit"],
            "queue_ms": ["140"],
            "cold_ms_from": ["eyJzb3VyY2UiOiJjb2xkIHJlYWRpbmcifQ"],
            "custom": ["Review bot:3000|Nightly (eu):9000"],
            "tag": ["a", "b"],
        },
    )


def test_a_page_without_a_query_and_the_home_page_with_one():
    assert parse_return_cookie(cookie("alerts"), PAGES) == ("alerts", {})
    assert parse_return_cookie(cookie("?queue_ms=90"), PAGES) == ("", {"queue_ms": ["90"]})


@pytest.mark.parametrize(
    "target",
    [
        "https://evil.example/worksheet",
        "//evil.example/alerts",
        "/alerts",
        "alerts/",
        "alerts/../../x",
        "nowhere?queue_ms=1",
        "javascript:alert(1)",
        "alerts\\@evil.example",
    ],
)
def test_a_cookie_naming_anything_but_one_of_the_pages_is_ignored(target):
    assert parse_return_cookie(cookie(target), PAGES) is None
    assert parse_return_cookie(target, PAGES) is None


def test_an_empty_oversized_or_malformed_cookie_is_ignored():
    assert parse_return_cookie("", PAGES) is None
    assert parse_return_cookie(cookie("alerts?x=" + "y" * RETURN_MAX_CHARS), PAGES) is None
    assert parse_return_cookie(cookie("alerts?" + "&".join(f"k{i}=1" for i in range(500))), PAGES) is None
