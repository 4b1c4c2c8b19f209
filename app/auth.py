"""Sign-in and roles on the page: the gate every page passes, who is signed in, and the check at every write.

Off unless `.streamlit/secrets.toml` has an `[auth]` section (Streamlit's OpenID Connect): then nobody reaches a
page without signing in, and each write calls `require(action)` where it happens — on the server, so a viewer who
replays a button press over the websocket is refused exactly like one who clicks it. Roles: planner.team.roles.

Streamlit's sign-in comes back to the home page whatever was opened. So the gate keeps the link a signed-out
visitor opened (page and query: a shared worksheet's inputs and provenance) in a short-lived cookie, written by the
browser (which knows the address exactly), and `return_to_link` takes the just-signed-in visitor back there
(planner.team.roles reads the cookie only as one of the dashboard's own pages, so it is never an open redirect).
"""

from __future__ import annotations

import getpass
import json
from collections.abc import Mapping
from pathlib import Path

import streamlit as st
from streamlit import config
from streamlit.navigation.page import StreamlitPage

from planner.inputs.untrusted import md_text
from planner.store import audit
from planner.team.roles import (
    RETURN_COOKIE,
    RETURN_COOKIE_MAX_AGE_S,
    RETURN_MAX_CHARS,
    AuthConfigError,
    Role,
    allowed,
    load_roles,
    parse_return_cookie,
    refusal,
)
from ttft_planner_app.cache import engine

__all__ = ["actor", "auth_enabled", "can", "current_role", "gate", "record", "require", "return_to_link"]

_RETURNED = "_auth_returned_to_link"  # session state: this session has used the link kept before sign-in


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


def _js_literal(value: str | int) -> str:
    """`value` as a JavaScript literal that cannot close the script element it stands in."""
    return json.dumps(value).replace("<", "\\u003c")


def _cookie_script(body: str) -> None:
    """Run `body` (JavaScript) in the page itself, with NAME, BASE (the cookie's path: server.baseUrlPath, "" at
    the root), AGE (s), MAX (characters) and SECURE (the attribute over https) defined."""
    base = "/" + (config.get_option("server.baseUrlPath") or "").strip("/")
    consts: dict[str, str | int] = {
        "NAME": RETURN_COOKIE,
        "BASE": base.rstrip("/"),
        "AGE": RETURN_COOKIE_MAX_AGE_S,
        "MAX": RETURN_MAX_CHARS,
    }
    # json literals; "<" escaped so that no value can close the script element
    decl = "".join(f"const {k} = {_js_literal(v)};" for k, v in consts.items())
    secure = "const SECURE = location.protocol === 'https:' ? '; Secure' : '';"
    st.html(f"<script>(() => {{{decl}{secure}{body}}})();</script>", unsafe_allow_javascript=True)


# What the signed-out visitor opened, read in the browser: the path below the app's base and the query, exactly as
# typed. The bare home page keeps what an earlier try kept (a sign-in that failed at the provider comes back there);
# a link too long for a cookie drops it rather than steer the sign-in to an older one.
_KEEP_LINK_JS = """
let path = location.pathname;
if (BASE && path.startsWith(BASE)) path = path.slice(BASE.length);
path = path.replace(/^\\/+|\\/+$/g, "");
if (!path && !location.search) return;
const value = encodeURIComponent(path + location.search);
const age = value.length <= MAX ? AGE : 0;
document.cookie = `${NAME}=${age ? value : ""}; Path=${BASE || "/"}; Max-Age=${age}; SameSite=Lax${SECURE}`;
"""
_DROP_LINK_JS = 'document.cookie = `${NAME}=; Path=${BASE || "/"}; Max-Age=0; SameSite=Lax${SECURE}`;'


def gate() -> None:
    """Stop the page unless the visitor is signed in with a role; show who is signed in in the sidebar. A visitor who
    is not signed in has the link they opened kept in the browser for after sign-in (see return_to_link)."""
    try:
        enabled = auth_enabled()
    except AuthConfigError as exc:
        st.error(md_text(str(exc)))
        st.stop()
    if not enabled:
        return
    if not _user().get("is_logged_in"):
        _cookie_script(_KEEP_LINK_JS)  # first, so the browser has it before the button can be pressed
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


def return_to_link(pages: Mapping[str, StreamlitPage], nav: StreamlitPage) -> None:
    """Once per session, right after sign-in: switch to the page and query the visitor opened while signed out.

    `pages`: url_path as declared in st.Page → the page (the home page answers to its own name and to "");
    `nav`: what st.navigation returned for this run. Only when this run is the home page without a query (where
    sign-in comes back to; a link opened while signed in wins) and the kept link names one of `pages`. The cookie is
    deleted in the browser once read.
    """
    kept = st.context.cookies.get(RETURN_COOKIE)
    # (not a str outside a browser session: AppTest's runtime is a mock)
    if not isinstance(kept, str) or not auth_enabled() or not _user().get("is_logged_in"):
        return
    with st.sidebar:
        _cookie_script(_DROP_LINK_JS)  # Streamlit reports the session's first cookies on every run: drop each time
    if st.session_state.get(_RETURNED):
        return
    st.session_state[_RETURNED] = True
    if nav.url_path or len(st.query_params):
        return
    by_path: dict[str, StreamlitPage] = {**pages, **{p.url_path: p for p in pages.values() if not p.url_path}}
    target = parse_return_cookie(kept, by_path.keys())
    if target is None or target == ("", {}):
        return
    path, query = target
    st.switch_page(by_path[path], query_params=query)


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
