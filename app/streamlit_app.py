"""TTFT Planner dashboard: the router. Pages live in app/views/ (never pages/)."""

import sys
from pathlib import Path

# `streamlit run app/streamlit_app.py` puts only app/ on sys.path; views import `app.*`.
_ROOT = str(Path(__file__).resolve().parent.parent)
if _ROOT not in sys.path:
    sys.path.insert(0, _ROOT)

import streamlit as st  # noqa: E402
from streamlit.navigation.page import StreamlitPage  # noqa: E402

st.set_page_config(page_title="TTFT Planner", page_icon=":material/timer:", layout="wide")

_VIEWS = Path(__file__).resolve().parent / "views"

# (file, title, icon, url_path): the order is the sidebar's order; the url_path is a public contract (deep links).
PAGES = [
    ("worksheet.py", "Worksheet", ":material/calculate:", "worksheet"),
    ("probes.py", "Probes", ":material/monitor_heart:", "probes"),
    ("endpoints.py", "Endpoints", ":material/dns:", "endpoints"),
    ("regions.py", "Regions", ":material/public:", "regions"),
    ("logs.py", "Logs", ":material/receipt_long:", "logs"),
    ("capacity.py", "Capacity & cost", ":material/payments:", "capacity"),
    ("compare.py", "Compare", ":material/compare_arrows:", "compare"),
    ("whatif.py", "What-if", ":material/query_stats:", "whatif"),
    ("sweep.py", "Load sweep", ":material/trending_up:", "sweep"),
    ("alerts.py", "Alerts", ":material/notifications:", "alerts"),
    ("admin.py", "Admin", ":material/admin_panel_settings:", "admin"),
]

from app.auth import gate, return_to_link  # noqa: E402

# With sign-in on (an [auth] section in secrets.toml), nothing below runs for a visitor who is not signed in; the
# link they opened (page and query) is kept, and return_to_link opens it once they are back from the provider.
gate()

HOME = "worksheet"  # the page served at "/"


def _page(file: str, title: str, icon: str, url: str) -> StreamlitPage:
    # Streamlit serves the default page at "/" only, yet it reserves the page's declared path; the home page declares
    # an internal one so that its public name stays free for the alias below.
    home = url == HOME
    return st.Page(_VIEWS / file, title=title, icon=icon, url_path=f"{url}-home" if home else url, default=home)


def _to_home() -> None:
    """`/worksheet`, the home page's name in the nav and in older links, opens "/" with the same query."""
    st.switch_page(pages[HOME], query_params=[(k, v) for k in st.query_params for v in st.query_params.get_all(k)])


pages = {url: _page(file, title, icon, url) for file, title, icon, url in PAGES}
alias = st.Page(_to_home, title=pages[HOME].title, url_path=HOME, visibility="hidden")
nav = st.navigation([*pages.values(), alias])
return_to_link(pages, nav)
from app.store_errors import run_page  # noqa: E402
from app.viewer import sidebar_time_zone  # noqa: E402

sidebar_time_zone()
run_page(nav)  # a locked/full/unreachable database is one sentence on the page, never a traceback
