"""Admin: the audit log (who created, changed or deleted what) and how sign-in and roles are configured."""

import pandas as pd
import streamlit as st

from planner import present
from planner.team.audit_trail import audit_log
from planner.team.roles import ACTION_WORDS, ACTIONS
from ttft_planner_app.auth import auth_enabled, can, current_role, require
from ttft_planner_app.cache import engine
from ttft_planner_app.viewer import fmt_ms

st.title("Admin")
if not auth_enabled():
    st.info(
        "Sign-in is off: this is a single-user install and every change is recorded as the local user. "
        "To share the dashboard with a team, add an `[auth]` section to `.streamlit/secrets.toml` and a roles "
        "file (see docs/deploy.md)."
    )
if require("audit.read"):
    log = audit_log(engine())
    st.subheader("Audit log")
    if log.empty:
        st.caption("No change recorded yet.")
    else:
        shown = log.assign(
            at=[fmt_ms(v, fmt="%Y-%m-%d %H:%M:%S") for v in log["at_ms"]],
            action=[ACTION_WORDS.get(a, a) for a in log["action"]],
        )[["at", "actor", "role", "action", "object_name", "detail"]]
        st.dataframe(present.display_frame(shown), hide_index=True, key="audit_log")
st.subheader("Who may do what")
role = current_role()
st.caption(f"Your role: **{role or 'none'}**." if auth_enabled() else "Everyone is an admin while sign-in is off.")
actions = pd.DataFrame(
    [{"action": ACTION_WORDS[a], "least_role": str(r), "you": "yes" if can(a) else "no"} for a, r in ACTIONS.items()]
)
st.dataframe(present.display_frame(actions), hide_index=True, key="auth_actions")
