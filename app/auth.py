"""Sign-in and roles on the page: the gate every page passes, who is signed in, and the check at every write.

Off unless `.streamlit/secrets.toml` has an `[auth]` section (Streamlit's OpenID Connect): then nobody reaches a
page without signing in, and each write calls `require(action)` where it happens — on the server, so a viewer who
replays a button press over the websocket is refused exactly like one who clicks it. Roles: planner.auth.
"""

from __future__ import annotations

import getpass
from pathlib import Path

import streamlit as st
from streamlit import config

from app.cache import engine
from planner.auth import AuthConfigError, Role, allowed, load_roles, refusal
from planner.store import audit
from planner.untrusted import md_text

__all__ = ["actor", "auth_enabled", "can", "current_role", "gate", "record", "require"]


def auth_enabled() -> bool:
    """Whether sign-in is on. No secrets file at all is a laptop install (off); a secrets file that exists but
    cannot be parsed raises here, so a broken file never silently opens a shared dashboard."""
    if st.secrets.load_if_toml_exists():
        return "auth" in st.secrets
    broken = [p for p in config.get_option("secrets.files") if Path(p).is_file()]
    if broken:
        raise AuthConfigError(
            f"{broken[0]} exists but cannot be read as TOML, so whether sign-in is on is unknown; "
            "fix the file (the dashboard stays closed until then)"
        )
    return False


def _user() -> dict:
    try:
        return st.user.to_dict()
    except Exception:  # noqa: BLE001 - outside a signed-in session
        return {}


def current_role() -> Role | None:
    """The signed-in user's role; with sign-in off, the single local user may do everything."""
    if not auth_enabled():
        return Role.ADMIN
    if not _user().get("is_logged_in"):
        return None
    return load_roles().role_for(_user())


def actor() -> str:
    """Who made a change, for the audit log: the signed-in e-mail, else the local user."""
    if _user().get("is_logged_in"):
        return str(_user().get("email") or _user().get("sub") or "unknown")
    return f"local:{getpass.getuser()}"


def gate() -> None:
    """Stop the page unless the visitor is signed in with a role; show who is signed in in the sidebar."""
    try:
        enabled = auth_enabled()
    except AuthConfigError as exc:
        st.error(md_text(str(exc)))
        st.stop()
    if not enabled:
        return
    if not _user().get("is_logged_in"):
        st.title("TTFT Planner")
        st.write("This dashboard is shared by a team: sign in to continue.")
        st.button("Sign in", type="primary", on_click=st.login, key="auth_sign_in")
        st.stop()
    try:
        role = current_role()
    except AuthConfigError as exc:
        st.error(f"Sign-in is on, but the roles file cannot be used: {md_text(str(exc))}")
        st.stop()
    who = md_text(actor())
    if role is None:
        st.error(f"Signed in as {who}, but this dashboard gives you no role. Ask an admin to add you.")
        st.button("Sign out", on_click=st.logout, key="auth_sign_out_refused")
        st.stop()
    with st.sidebar:
        st.caption(f"Signed in as **{who}** · {role}")
        st.button("Sign out", on_click=st.logout, key="auth_sign_out")


def can(action: str) -> bool:
    """Whether the current user may make this write (to disable a control; the write itself calls `require`)."""
    try:
        return allowed(current_role(), action)
    except AuthConfigError:
        return False


def require(action: str) -> bool:
    """True when the current user may make this write; else the refusal is shown and False returned."""
    if can(action):
        return True
    try:
        role = current_role()
    except AuthConfigError:
        role = None
    st.error(refusal(role, action))
    return False


def record(action: str, object_name: str, detail: str = "") -> None:
    """One line in the audit log for a write that was made."""
    try:
        role = str(current_role() or "")
    except AuthConfigError:
        role = ""
    audit.record(engine(), actor=actor(), role=role, action=action, object_name=object_name, detail=detail)
