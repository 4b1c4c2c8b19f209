"""One URL validator for every place a URL enters: endpoints, probe, RTT targets, the RTT proxy."""

from __future__ import annotations

import pytest

from planner.endpoints.registry import EndpointError, validate
from planner.inputs.urls import UrlError, check_url, mask_url_password, redact_url
from planner.regions.catalog import CatalogError, parse_target

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


# Each credential form libpq accepts in a database URL: (URL, its secrets). The host and the database stay readable.
LIBPQ_FORMS = {
    "userinfo": ("postgresql://reader:Upw-7f3e9a1c@db.internal:5432/litellm", ["Upw-7f3e9a1c"]),
    "query password": ("postgresql://reader@db.internal/litellm?password=Qpw-5b8d2e4f", ["Qpw-5b8d2e4f"]),
    "query sslpassword": ("postgresql://reader@db.internal/litellm?sslmode=require&sslpassword=Spw-9c1a", ["Spw-9c1a"]),
    "percent-encoded": ("postgresql://reader@db.internal/litellm?password=Ppw%2F6d4c%2B2a1", ["Ppw/6d4c+2a1"]),
    "encoded name": ("postgresql://reader@db.internal/litellm?pass%77ord=Npw-3e5f7a9b", ["Npw-3e5f7a9b"]),
    "unencoded @": (
        "postgresql://reader:pw@Hidden7f3e9a1c@db.internal/litellm",
        ["pw@Hidden7f3e9a1c", "Hidden7f3e9a1c"],
    ),
    "unencoded / ? #": ("postgresql://reader:a/b?c#Sharp9d2e@db.internal/litellm", ["a/b?c#Sharp9d2e", "Sharp9d2e"]),
}


@pytest.mark.parametrize("form", list(LIBPQ_FORMS))
def test_every_libpq_credential_form_is_masked_where_a_url_is_shown(form):
    from planner.store.database import redacted
    from tests.support.secret_forms import leaks

    url, secrets = LIBPQ_FORMS[form]
    driver = 'connection to server failed: could not translate host name "Hidden7f3e9a1c@db.internal"; '
    quoted = f"{driver}{url} (password {secrets[0]!r})"  # a driver's message quoting the URL and the password
    for shown in (redact_url(url), redacted(url), redacted(url.replace("postgresql://", "postgresql+psycopg://"))):
        assert not leaks(shown, secrets) and "db.internal" in shown and "litellm" in shown, shown
    assert redacted(url).startswith("postgresql://reader") and "***" in redacted(url)
    assert not leaks(mask_url_password(quoted, url), secrets), mask_url_password(quoted, url)


def test_an_ordinary_database_url_is_shown_as_before():
    """What the worker's state folder and spool are named from (a digest of redacted()): unchanged for URLs
    without a secret in their query."""
    from planner.store.database import redacted

    for url in ("sqlite:////var/lib/planner.db", "postgresql+psycopg://planner@127.0.0.1:5432/planner?sslmode=require"):
        assert redacted(url) == url
    assert redacted("postgresql+psycopg://u:pw@h/db") == "postgresql+psycopg://u:***@h/db"


METADATA = [
    "http://169.254.169.254/latest/meta-data/",
    "http://169.254.170.2:9090",  # the whole link-local range (ECS task metadata)
    "http://[fd00:ec2::254]/",
    "http://metadata.google.internal/computeMetadata/v1/",
    "http://METADATA.google.internal./",
    "http://[fe80::1]:9090/",
    "http://[::ffff:169.254.169.254]/",
    "http://0xa9fea9fe/",  # inet_aton's spelling of 169.254.169.254
]


@pytest.mark.parametrize("url", METADATA)
def test_a_link_local_or_metadata_host_is_refused_unless_allowed(url):
    with pytest.raises(UrlError, match="link-local or cloud metadata address"):
        check_url(url, what="the Prometheus URL")
    assert check_url(url, allow_link_local=True) == url


def test_a_prometheus_source_at_the_metadata_address_is_refused_on_the_command_line(sqlite_store_url):
    from click.testing import CliRunner

    from planner.cli import cli

    args = ["sources", "add", "meta", "--prometheus-url", "http://169.254.169.254/", "--database-url", sqlite_store_url]
    res = CliRunner().invoke(cli, args)
    assert res.exit_code == 2 and "link-local or cloud metadata address" in res.output
    listed = CliRunner().invoke(cli, ["sources", "list", "--database-url", sqlite_store_url])
    assert "meta" not in listed.output
