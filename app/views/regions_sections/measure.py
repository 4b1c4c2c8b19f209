"""Regions › Measure: ask the worker of this server's vantage to probe the chosen regions, or probe them from this
browser and store the browser's samples.

The server probe is a request to the worker (planner.fleet.requests.create_rtt_request), as "Probe now" is on the
Probes page: the page never measures from the server itself, it shows the request's progress and then the samples the
worker stored. The browser's samples are measured by the user's browser, so the page is the one to store them.
"""

import time
from collections import Counter
from collections.abc import Sequence

import streamlit as st
from sqlalchemy.engine import Engine

from planner.fleet.requests import (
    RequestStatus,
    abandon_rtt_request,
    create_rtt_request,
    get_rtt_request,
    rtt_request_targets,
)
from planner.fleet.watch import worker_running
from planner.inputs.untrusted import md_text
from planner.probes.rtt import default_vantage
from planner.probes.rtt_browser import records_from_browser
from planner.regions.catalog import Region, RttMethod
from planner.regions.rtt_history import insert_rtt_samples, load_samples
from ttft_planner_app.auth import can, require
from ttft_planner_app.charts.regions import vantage_label
from ttft_planner_app.components.browser_rtt import browser_rtt
from ttft_planner_app.store_errors import STORE_FAILURES, guarded, show_store_failure

__all__ = ["DEFAULT_REGIONS", "POLL_S", "render"]

POLL_S = 1.0  # how often the page looks at its server request (the worker claims requests every second)

DEFAULT_REGIONS = [
    "aws-us-east-1",
    "aws-us-west-2",
    "aws-eu-west-1",
    "aws-ap-northeast-1",
    "gcp-us-central1",
    "azure-westeurope",
    "openai-api",
    "anthropic-api",
]


def render(eng: Engine, regions: Sequence[Region]) -> None:
    """Draw the Measure section: region picker, the browser's vantage label, the server and browser probes."""
    ss = st.session_state
    by_id = {r.id: r for r in regions}
    labels = {r.id: r.label for r in regions}
    # ---- where the browser measures from: asked once, remembered in the URL and in this browser (localStorage)
    if "rtt_vantage_pending" in ss:
        ss.rtt_vantage = ss.pop("rtt_vantage_pending")
    if "rtt_vantage" not in ss:
        ss.rtt_vantage = st.query_params.get("vantage", "")
    ss.setdefault("rtt_stored_runs", [])

    st.subheader("Measure")
    left, right = st.columns([2, 1])
    linked = [i for i in st.query_params.get("regions", "").split(",") if i in by_id]  # deep link: ?regions=a,b
    selected = left.multiselect(
        "Regions to measure",
        options=[r.id for r in regions],
        format_func=lambda i: labels.get(i, i),
        default=linked or [i for i in DEFAULT_REGIONS if i in by_id],
        key="rtt_regions",
        help="Catalog regions (assets/regions.toml) and your own targets. Anycast entries measure the nearest edge.",
    )
    n = right.number_input(
        "Samples per region",
        min_value=3,
        max_value=100,
        value=10,
        step=1,
        key="rtt_n",
        help="Kept samples; one more is made first and dropped (it pays DNS, TCP and TLS set-up).",
    )
    vantage = st.text_input(
        "Your location / office",
        key="rtt_vantage",
        placeholder="e.g. Berlin office, home (Lisbon)",
        help="Browser samples are stored with this label. It is remembered in this browser and in the page URL.",
    )
    if vantage:
        st.query_params["vantage"] = vantage

    server_col, browser_col = st.columns(2)
    server_vantage = default_vantage()
    with server_col:
        st.markdown(
            f"**From the server** ({md_text(vantage_label(server_vantage))}): the worker of this vantage measures "
            "TCP connects, the TLS handshake and one HTTPS request."
        )
        waiting = "rtt_server_request" in ss  # one request at a time: the button waits for it
        if st.button(
            "Probe from the server",
            key="rtt_probe_server",
            disabled=not selected or not can("rtt.measure") or waiting,
        ) and require("rtt.measure"):
            queued = False
            try:
                if _worker_live(eng, server_vantage):
                    targets = [(i, by_id[i].probe_url) for i in selected]
                    ss.rtt_server_request = create_rtt_request(eng, targets, int(n), vantage=server_vantage)
                    queued = True
                else:
                    st.warning(_no_worker(server_vantage), icon=":material/pause_circle:")
            except STORE_FAILURES as exc:
                show_store_failure(exc)
            if queued:
                st.rerun()  # draw the button disabled and the request's progress
        if "rtt_server_request" in ss:
            _server_progress(eng, server_vantage)
        if "rtt_server_done" in ss:
            _server_outcome(eng, ss.pop("rtt_server_done"))

    with browser_col:
        st.markdown("**From this browser**: Resource Timing (`responseStart − requestStart`), first sample dropped.")
        page_targets = [{"region_id": i, "url": url} for i in selected if (url := by_id[i].target.url)]
        res = browser_rtt(page_targets, vantage=vantage, n=int(n))
        if res.remembered_vantage and not vantage:
            ss.rtt_vantage_pending = res.remembered_vantage
            st.rerun()
        run = res.result
        if run and run.get("run_id") not in ss.rtt_stored_runs and not can("rtt.measure"):
            st.info("Measured in your browser, but your role does not store measurements (an editor's does).")
            ss.rtt_stored_runs.append(run.get("run_id"))
        if run and run.get("run_id") not in ss.rtt_stored_runs:
            records, rejected = records_from_browser(run, vantage=run.get("vantage") or vantage)
            insert_rtt_samples(eng, records)
            ss.rtt_stored_runs.append(run.get("run_id"))
            fallback = sum(r.method == RttMethod.FETCH_PERFORMANCE_NOW and r.error_class is None for r in records)
            measured = sum(r.error_class is None for r in records)
            failed = Counter(r.error_class for r in records if r.error_class is not None)
            failures = "; ".join(f"{k} ×{v}" for k, v in failed.items())
            (st.success if measured else st.error)(
                f"Stored {measured} browser samples as “{md_text(run.get('vantage') or vantage)}”"
                + (f"; {sum(failed.values())} target(s) failed ({md_text(failures)})." if failed else ".")
            )
            if fallback:
                st.warning(
                    f"{fallback} sample(s) used the fallback timing: those targets do not send "
                    "Timing-Allow-Origin, so the figure is the whole fetch (Resource Timing responseEnd − "
                    "fetchStart, or performance.now() around it), not one request round trip."
                )
            for line in rejected:
                st.warning(md_text(line))


def _worker_live(eng: Engine, vantage: str) -> bool:
    """True when a worker holds a live lease for `vantage` (only the lease holder claims requests)."""
    return worker_running(eng, vantage, int(time.time() * 1000))


def _no_worker(vantage: str) -> str:
    named = " with that vantage (`--vantage` or TTFT_PLANNER_VANTAGE)" if vantage else ""
    return (
        f"No worker is running for vantage {md_text(vantage_label(vantage))}: start `ttft-planner worker` or "
        f"`ttft-planner serve`{named}. The server probe is measured by the worker."
    )


@st.fragment(run_every=POLL_S)
@guarded
def _server_progress(eng: Engine, vantage: str) -> None:
    """The queued server probe's progress (pending → running), until it ends; then the whole page runs again so
    Results reads the new samples."""
    ss = st.session_state
    req = get_rtt_request(eng, ss.rtt_server_request)
    if req is None:  # removed meanwhile (a test, an admin): nothing left to wait for
        del ss.rtt_server_request
        return
    if req["status"] in (RequestStatus.DONE, RequestStatus.FAILED):
        ss.rtt_server_done = ss.pop("rtt_server_request")
        st.rerun()
    if not _worker_live(eng, vantage):
        # Waiting would be forever. A pending request is withdrawn (conditionally: a worker claiming it right now
        # wins); a running one is failed by the next worker that holds a lease (its own worker is gone).
        abandon_rtt_request(eng, req["id"], "no worker claimed it", int(time.time() * 1000))
        del ss.rtt_server_request
        st.warning(_no_worker(vantage), icon=":material/pause_circle:")
        return
    n_targets = len(rtt_request_targets(req))
    if req["status"] == RequestStatus.PENDING:
        st.info(f"Server probe of {n_targets} region(s): pending — the worker picks it up within a second or two.")
    else:
        st.info(f"Server probe of {n_targets} region(s): running — the worker is measuring.", icon=":material/sync:")


def _server_outcome(eng: Engine, request_id: int) -> None:
    """What the finished server probe stored, read back from the store."""
    req = get_rtt_request(eng, request_id)
    if req is None:
        return
    if req["status"] != RequestStatus.DONE:
        st.error(f"The server probe failed: {md_text(req['detail'] or 'no reason given')}.")
        return
    region_ids = [region_id for region_id, _ in rtt_request_targets(req)]
    rows = load_samples(
        eng, region_ids=region_ids, vantage=req["vantage"], side="server", since_ms=req["claimed_at_ms"]
    )
    ok = rows["error_class"].isna()
    measured = int((ok & (rows["method"] == RttMethod.TCP_CONNECT)).sum())
    failed = sorted(set(rows.loc[~ok, "region_id"]))
    (st.success if measured else st.error)(
        f"The worker stored {measured} server samples"
        + (f"; {len(failed)} region(s) reported a failure ({md_text(', '.join(failed))})." if failed else ".")
    )
