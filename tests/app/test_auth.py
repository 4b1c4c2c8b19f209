"""Sign-in and roles in the dashboard (AppTest seeds st.user; the real OIDC round trip is tests/e2e/test_sign_in.py):
a visitor who is not signed in sees only the sign-in button; a viewer's write is refused on the server even when
the disabled button is pressed anyway; an admin's write is made and lands in the audit log with their e-mail."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from planner.store import alerts as store
from planner.store import open_store
from planner.store.audit import audit_log
from tests.app.conftest import new_app

AUTH = {
    "redirect_uri": "http://localhost:8501/oauth2callback",
    "cookie_secret": "test-cookie-secret",
    "client_id": "ttft-planner",
    "client_secret": "test-secret",
    "server_metadata_url": "http://127.0.0.1:9/.well-known/openid-configuration",
}


@pytest.fixture(autouse=True)
def _roles(tmp_path, monkeypatch):
    path = tmp_path / "roles.toml"
    path.write_text('default_role = "viewer"\n[roles]\nadmin = ["lead@example.com"]\neditor = ["dev@example.com"]\n')
    monkeypatch.setenv("TTFT_PLANNER_ROLES_FILE", str(path))


def _app(user: dict | None, page: str | None = None) -> AppTest:
    at = new_app()
    at.secrets["auth"] = AUTH
    # a provider that verified the address (the boolean claim): only then does an e-mail rule give its role
    at.user = {"is_logged_in": False} if user is None else {"is_logged_in": True, "email_verified": True, **user}
    at.run()
    if page is not None:
        at.switch_page(f"views/{page}.py").run()
    assert not at.exception, [e.value for e in at.exception]
    return at


def _add_rule(at: AppTest) -> None:
    at.text_input[0].set_value("inline p95")
    at.selectbox(key="alert_interaction").set_value("inline")
    submit = at.button[0]  # the form's submit button
    # A viewer's button is disabled on the page; a crafted websocket message can press it anyway. Clear the flag in
    # the test's copy of the page only, so the press reaches the server as such a message would.
    submit.proto.disabled = False
    submit.click().run()


def test_a_visitor_who_is_not_signed_in_sees_only_the_sign_in_button():
    at = _app(None)
    assert [b.label for b in at.button] == ["Sign in"]
    assert not at.metric and not at.dataframe and [t.value for t in at.title] == ["TTFT Planner"]


def test_a_viewer_reads_but_a_write_is_refused_on_the_server():
    at = _app({"email": "pm@example.com"}, "alerts")
    assert any("pm@example.com" in c.value and "viewer" in c.value for c in at.sidebar.caption)
    assert at.button[0].disabled  # the page does not offer the write...
    _add_rule(at)  # ...and a forged press of it is discarded on the server: nothing is stored
    assert store.load_rules(open_store()) == []
    at.switch_page("views/admin.py").run()
    assert any("needs the admin role" in e.value for e in at.error)  # the audit log is for admins


def test_an_admin_writes_and_the_audit_log_names_them():
    at = _app({"email": "lead@example.com"}, "alerts")
    _add_rule(at)
    assert not at.error
    assert [r.name for r in store.load_rules(open_store())] == ["inline p95"]
    log = audit_log(open_store())
    assert (log.iloc[0]["actor"], log.iloc[0]["role"], log.iloc[0]["action"]) == (
        "lead@example.com",
        "admin",
        "alert.write",
    )
    at.switch_page("views/admin.py").run()
    assert at.dataframe[0].value.iloc[0]["Who"] == "lead@example.com"
    shown = [str(v) for df in at.dataframe for v in df.value.to_numpy().ravel()]
    assert "Add or delete an alert rule" in shown and "alert.write" not in shown  # actions in words, not codes


def test_an_editor_saves_a_worksheet_but_cannot_delete_it_or_add_an_endpoint():
    at = _app({"email": "dev@example.com"})
    at.text_input(key="save_name").set_value("Team plan")
    at.button(key="save").click().run()
    assert not at.exception and not at.error
    log = audit_log(open_store())
    assert (log.iloc[0]["actor"], log.iloc[0]["action"], log.iloc[0]["object_name"]) == (
        "dev@example.com",
        "worksheet.save",
        "Team plan",
    )
    at.checkbox(key="delete_confirm").check().run()
    assert at.button(key="delete").disabled  # deleting is for admins
    at.switch_page("views/endpoints.py").run()
    assert not at.exception
    assert next(b for b in at.button if b.label == "Add endpoint").disabled
