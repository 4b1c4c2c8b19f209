"""One URL validator for every place a URL enters: endpoints, probe, RTT targets, the RTT proxy."""

from __future__ import annotations

import pytest

from planner.endpoints import EndpointError, validate
from planner.regions import CatalogError, parse_target
from planner.urls import UrlError, check_url, mask_url_password, redact_url

GOOD = [
    "https://api.example.com/v1",
    "http://127.0.0.1:8765/v1",
    "http://[::1]:8080/v1",
    "https://eu.api.acme.dev/health?x=1",
]
BAD = {
    "http://[::1/v1": "not a valid URL",
    "https://api.example.com/v1\nX-Injected: 1": "line break",
    "https://api.exa mple.com/v1": "space",
    "https://api.example.com/v1\t": None,  # surrounding whitespace is trimmed: accepted
    "https://user:pw@api.example.com/v1": "credentials",
    "https://api.example.com/v1?api_key=sk-123": "secret in its query",
    "https://api.example.com/v1?x=1&access_token=abc": "secret in its query",
    "ftp://api.example.com/": "must start with",
    "https:///v1": "no host",
    "https://api.example.com:99999/v1": "not a valid URL",
    "https://bad_host!.example.com/": "not a host name",
    "https://" + "a" * 600 + ".com/": "characters long",
}


@pytest.mark.parametrize("url", GOOD)
def test_good_urls_pass(url):
    assert check_url(url) == url


@pytest.mark.parametrize("url,fragment", [(u, f) for u, f in BAD.items() if f])
def test_bad_urls_are_refused_with_a_reason(url, fragment):
    with pytest.raises(UrlError, match=fragment):
        check_url(url, what="base_url")


@pytest.mark.parametrize("url,fragment", [(u, f) for u, f in BAD.items() if f])
def test_every_entry_point_uses_it(url, fragment):
    with pytest.raises(EndpointError) as exc:
        validate({"name": "x", "base_url": url, "model": "m"})
    assert exc.value.field == "base_url" and fragment in str(exc.value)
    with pytest.raises(CatalogError, match=fragment):
        parse_target(url if "://" in url else "https://" + url)


def test_messages_never_show_a_password():
    with pytest.raises(UrlError) as exc:
        check_url("https://user:hunter2@api.example.com/v1\n")
    assert "hunter2" not in str(exc.value)
    assert redact_url("http://bob:hunter2@proxy.local:3128") == "http://***@proxy.local:3128"
    assert check_url("http://bob:hunter2@proxy.local:3128", schemes=("http",), allow_credentials=True)


def test_a_message_quoting_a_url_keeps_no_part_of_its_password():
    url = "postgresql://app:s3cr%2Ft!@db.internal/proxy"
    message = "connect failed for app:s3cr%2Ft! (password 's3cr/t!') at db.internal"
    assert mask_url_password(message, url) == "connect failed for app:*** (password '***') at db.internal"
    assert mask_url_password(message, "http://db.internal") == message  # no password: nothing to mask
    assert mask_url_password(message, "http://[::1") == message  # not a URL
