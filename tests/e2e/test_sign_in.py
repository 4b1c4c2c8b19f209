"""Sign-in in real Chromium against a real OpenID Connect provider running locally (oidc-provider-mock): a visitor
is sent to the provider before any page renders, comes back signed in with the role the roles file gives their
e-mail, a viewer's write controls are disabled and a forged write stores nothing, an admin's write lands in the
audit log under their e-mail, and signing out ends the session. A link opened while signed out (a shared
worksheet with its inputs and provenance in the query, or another page) is where the visitor lands after signing in.
An address the provider did not verify (its `email_verified` the string "false", as some providers send it) or one
with two `@` gets no e-mail rule's role."""

from __future__ import annotations

import re
import subprocess
import sys
from dataclasses import replace
from urllib.parse import parse_qs, urlsplit

import httpx
import pytest
from playwright.sync_api import Page, expect

from planner.store import alerts as alert_store
from planner.store import open_store
from planner.store.audit import audit_log
from planner.worksheet.budget import Worksheet
from planner.worksheet.interactions import interactions
from planner.worksheet.provenance import Figure, Source
from planner.worksheet.url import query_for
from tests.e2e.conftest import START_S, StreamlitServer, answers, free_port, open_expander, wait_for_app
from tests.support.waiting import wait_for

HANG_S = 120.0  # a hang guard for waits on the store: four suites may share two cores

#: The people the provider knows (subject → the claims of its ID token). oidc-provider-mock sends only `email` for a
#: subject it does not know; these carry `email_verified` as providers send it: the boolean for a verified address,
#: the string "false" for one nobody verified (typed by whoever signed up as mallory), and a verified address with
#: two @ that a domain rule's text would match.
PEOPLE = {
    "lead@example.com": {"email": "lead@example.com", "email_verified": True},
    "pm@example.com": {"email": "pm@example.com", "email_verified": True},
    "mallory": {"email": "lead@example.com", "email_verified": "false"},
    "two-ats": {"email": "a@b@platform.example.com", "email_verified": True},
}


@pytest.fixture(scope="module")
def provider():
    port = free_port()
    proc = subprocess.Popen(
        [sys.executable, "-m", "oidc_provider_mock", "--port", str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_for(lambda: answers(url + "/.well-known/openid-configuration"), START_S, "oidc-provider-mock to start")
    except AssertionError:
        proc.kill()
        raise
    for sub, claims in PEOPLE.items():
        httpx.put(f"{url}/users/{sub}", json=claims, timeout=30).raise_for_status()
    yield url
    proc.terminate()
    proc.wait(10)


@pytest.fixture(scope="module")
def signed_app(provider, tmp_path_factory):
    data = tmp_path_factory.mktemp("signin-data")
    port = free_port()
    secrets = data / "secrets.toml"
    secrets.write_text(
        "[auth]\n"
        f'redirect_uri = "http://127.0.0.1:{port}/oauth2callback"\n'
        'cookie_secret = "a-long-random-string-for-the-test-only"\n'
        'client_id = "ttft-planner"\nclient_secret = "any-secret"\n'
        f'server_metadata_url = "{provider}/.well-known/openid-configuration"\n'
    )
    roles = data / "roles.toml"
    roles.write_text(
        'default_role = "viewer"\n[roles]\nadmin = ["lead@example.com"]\neditor = ["*@platform.example.com"]\n'
    )
    server = StreamlitServer(
        data, {"TTFT_PLANNER_ROLES_FILE": str(roles)}, port=port, args=(f"--secrets.files={secrets}",)
    )
    yield server
    server.stop()


def _sign_in(page: Page, app_url: str, email: str, link: str = "/alerts", *, shown: str | None = None) -> None:
    """Open `link` while signed out, sign in at the provider's own form as subject `email`, and wait for the
    dashboard's first run (its sidebar names `shown`: the subject's e-mail claim, by default the subject)."""
    page.goto(app_url + link)
    wait_for_app(page)
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()
    expect(page.get_by_text("Add a rule")).to_have_count(0)  # no page content before sign-in
    expect(page.get_by_role("spinbutton")).to_have_count(0)
    page.get_by_role("button", name="Sign in").click()
    page.locator("input[name='sub']").fill(email)  # the provider's own login form
    page.get_by_role("button", name="Authorize").click()
    page.wait_for_url(f"{app_url}/**")
    wait_for_app(page)
    expect(page.get_by_text(f"Signed in as {shown or email}")).to_be_visible()


@pytest.mark.parametrize(
    ("subject", "email"), [("mallory", "lead@example.com"), ("two-ats", "a@b@platform.example.com")]
)
def test_an_unverified_or_two_at_address_gets_no_role_from_its_text(page: Page, signed_app, subject, email):
    # mallory's provider account says lead's address, verified "false" (a string): before, anything but the boolean
    # false counted as verified and mallory was an admin; two-ats matched "*@platform.example.com" and was an editor
    _sign_in(page, signed_app.url, subject, shown=email)
    expect(page.get_by_text(f"Signed in as {email} · viewer")).to_be_visible()
    open_expander(page, "Add a rule")
    expect(page.get_by_role("button", name="Add rule")).to_be_disabled()


def test_a_viewer_signs_in_reads_and_cannot_write(page: Page, signed_app):
    _sign_in(page, signed_app.url, "pm@example.com")
    expect(page.get_by_text("Signed in as pm@example.com · viewer")).to_be_visible()
    page.goto(signed_app.url + "/alerts")
    open_expander(page, "Add a rule")  # idle first, then opened and checked open: a rerun cannot eat the click
    expect(page.get_by_role("button", name="Add rule")).to_be_disabled()
    page.goto(signed_app.url + "/admin")
    wait_for_app(page)
    expect(page.get_by_text("needs the admin role")).to_be_visible()
    page.get_by_role("button", name="Sign out").click()
    # Streamlit drops its identity cookie and sends the browser to the provider's end-session page
    page.get_by_role("button", name="End session").click()
    page.goto(signed_app.url + "/alerts")
    wait_for_app(page)
    expect(page.get_by_role("button", name="Sign in")).to_be_visible()


def test_an_admin_adds_a_rule_and_the_audit_log_names_them(page: Page, signed_app):
    _sign_in(page, signed_app.url, "lead@example.com")
    page.goto(signed_app.url + "/alerts")
    wait_for_app(page)
    page.get_by_role("textbox", name="Name", exact=True).fill("chat p95")
    page.get_by_role("button", name="Add rule").click()
    wait_for_app(page)
    engine = open_store(f"sqlite:///{signed_app.data_dir / 'planner.db'}")
    # No threshold given: the run that handled the click refused with a reason (shown once it has checked the
    # input, before any write), and stored nothing.
    expect(page.get_by_text("threshold: give a number > 0")).to_be_visible()
    assert [r.name for r in alert_store.load_rules(engine)] == []
    page.get_by_label("Threshold (ms, %, or s by kind)").fill("500")
    page.get_by_role("button", name="Add rule").click()
    wait_for_app(page)
    rules = wait_for(lambda: alert_store.load_rules(engine), HANG_S, "the rule in the store")
    assert [r.name for r in rules] == ["chat p95"]
    # the audit row is written just after the rule, in the same script run
    wait_for(lambda: "alert.write" in set(audit_log(engine)["action"]), HANG_S, "the rule's audit row")
    log = audit_log(engine)
    assert (log.iloc[0]["actor"], log.iloc[0]["role"], log.iloc[0]["action"]) == (
        "lead@example.com",
        "admin",
        "alert.write",
    )
    page.goto(signed_app.url + "/admin")
    wait_for_app(page)
    expect(page.get_by_text("lead@example.com").first).to_be_visible()


def _spin(page: Page, label: str):
    return page.get_by_role("spinbutton", name=label, exact=True)


def test_a_shared_worksheet_link_opened_signed_out_is_there_after_sign_in(page: Page, signed_app):
    # a teammate's link: typed queueing and network, a measured cold start with its provenance (none of them defaults)
    cold = Figure(value=4200.0, unit="ms", source=Source.COLD_READING, detail="sim-local", n=3)
    ws = replace(Worksheet(), queue_ms=Figure.typed(140, "ms"), cold_ms=cold, network_ms=Figure.typed(35, "ms"))
    link = "/worksheet?" + query_for(ws, {i.key for i in interactions()})
    _sign_in(page, signed_app.url, "pm@example.com", link)
    expect(_spin(page, "Admission / queueing (ms)")).to_have_value("140")
    expect(_spin(page, "Weight loading (cold start) (ms)")).to_have_value("4200")
    expect(_spin(page, "Network / first-token delivery (ms)")).to_have_value("35")
    expect(page.get_by_text("cold reading · sim-local · n=3")).to_be_visible()  # still measured, not typed
    # the address bar still reproduces the link (the page rewrites it after its run: wait for that)
    expect(page).to_have_url(re.compile(r"[?&]queue_ms=140(&|$)"))
    query = parse_qs(urlsplit(page.url).query)
    assert (query["queue_ms"], query["cold_ms"], query["network_ms"]) == (["140"], ["4200"], ["35"])
    assert query["cold_ms_from"] == parse_qs(link.partition("?")[2])["cold_ms_from"]
    assert urlsplit(page.url).path in ("/", "/worksheet")  # the Worksheet is the home page
    # the link is used once: the browser drops it, and the home page opened later in another tab is the home page
    wait_for(lambda: "ttft_return_to" not in {c["name"] for c in page.context.cookies()}, HANG_S, "the link dropped")
    later = page.context.new_page()
    later.goto(signed_app.url)
    wait_for_app(later)
    expect(later.get_by_text("Signed in as pm@example.com")).to_be_visible()
    expect(_spin(later, "Admission / queueing (ms)")).to_have_value("60")
    later.close()


def test_a_page_opened_signed_out_is_the_page_shown_after_sign_in(page: Page, signed_app):
    _sign_in(page, signed_app.url, "pm@example.com", "/alerts")
    expect(page).to_have_url(signed_app.url + "/alerts")
    expect(page.get_by_role("heading", name="Alerts", exact=True)).to_be_visible()
    expect(page.get_by_text("Add a rule")).to_be_visible()
