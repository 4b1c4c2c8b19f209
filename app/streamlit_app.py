"""TTFT Planner dashboard: the router. Pages live in app/views/ (never pages/)."""

from pathlib import Path

# This folder is the installed package `ttft_planner_app` (setup.py; `pip install -e .` in a checkout, or the wheel):
# the pages import it and `planner` by those names, wherever `streamlit run` puts this script's folder on sys.path.
import streamlit as st
from streamlit.navigation.page import StreamlitPage

# The tab icon is our own file, sent inline (Streamlit turns an SVG file into a data: URL): a Material icon here would
# make every page fetch it from fonts.gstatic.com, which an offline or strict-CSP deployment cannot.
st.set_page_config(page_title="TTFT Planner", page_icon=Path(__file__).parent / "static" / "favicon.svg", layout="wide")

_VIEWS = Path(__file__).resolve().parent / "views"

# (file, title, icon, url_path): the order is the sidebar's order; the url_path is a public contract (deep links).
PAGES = [
    ("worksheet.py", "Worksheet", ":material/calculate:", "worksheet"),
    ("probes.py", "Probes", ":material/monitor_heart:", "probes"),
    ("endpoints.py", "Endpoints", ":material/dns:", "endpoints"),
    ("regions.py", "Regions", ":material/public:", "regions"),
    ("logs.py", "Logs", ":material/receipt_long:", "logs"),
    ("sources.py", "Sources", ":material/cloud_sync:", "sources"),
    ("capacity.py", "Capacity & cost", ":material/payments:", "capacity"),
    ("compare.py", "Compare", ":material/compare_arrows:", "compare"),
    ("whatif.py", "What-if", ":material/query_stats:", "whatif"),
    ("sweep.py", "Load sweep", ":material/trending_up:", "sweep"),
    ("alerts.py", "Alerts", ":material/notifications:", "alerts"),
    ("admin.py", "Admin", ":material/admin_panel_settings:", "admin"),
]

from ttft_planner_app.auth import gate, return_to_link  # noqa: E402

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
from ttft_planner_app.store_errors import run_page  # noqa: E402
from ttft_planner_app.viewer import sidebar_time_zone  # noqa: E402

sidebar_time_zone()
run_page(nav)  # a locked/full/unreachable database is one sentence on the page, never a traceback
