"""AppTest: the Regions page's server probe is a request to the worker (issue 16), like "Probe now" on Probes. The
page queues it, a real worker process claims it once and measures a local HTTP target, the page shows the progress
and then the samples from the store; with no worker running the page says so in one sentence instead of waiting.

The tests wait for what the worker does (its lease, the request's status), with hang guards, never for a time."""

from __future__ import annotations

import time

import sqlalchemy as sa

from planner.store import leases, open_store
from planner.store.requests import (
    RequestStatus,
    claim_rtt_requests,
    create_rtt_request,
    finish_rtt_request,
    get_rtt_request,
)
from planner.store.rtt import add_target, load_samples
from tests.app.conftest import open_page, shown_table
from tests.support.rtt_target import serve_in_thread
from tests.support.worker_proc import spawn_worker, stop_worker, wait_logged

NO_WORKER = "No worker is running for vantage this server (default vantage)"


def _request_ids(eng) -> list[int]:
    with eng.connect() as c:
        return [r[0] for r in c.execute(sa.text("SELECT id FROM rtt_request ORDER BY id"))]


def _infos(at) -> list[str]:
    return [i.value for i in at.info]


def test_the_page_shows_the_request_go_from_pending_to_running_to_done(monkeypatch):
    monkeypatch.delenv("TTFT_PLANNER_VANTAGE", raising=False)
    eng = open_store()
    add_target(eng, "local-box", "127.0.0.1:9")
    now_ms = int(time.time() * 1000)
    # A worker elsewhere holds this vantage, for longer than any machine takes to run the page.
    assert leases.acquire(eng, "", "another-host:1:w", now_ms, 3600)
    at = open_page("regions")
    at.multiselect(key="rtt_regions").set_value(["local-box"]).run()
    at.button(key="rtt_probe_server").click().run()
    assert not at.exception, at.exception
    assert any(t.startswith("Server probe of 1 region(s): pending") for t in _infos(at)), _infos(at)
    assert at.button(key="rtt_probe_server").disabled  # one request at a time
    [claimed] = claim_rtt_requests(eng, "", "another-host:1:w", now_ms)
    at.run()
    assert any(t.startswith("Server probe of 1 region(s): running") for t in _infos(at)), _infos(at)
    finish_rtt_request(eng, claimed["id"], RequestStatus.FAILED, "the worker stopped during the measurement", now_ms)
    at.run()
    assert not at.exception, at.exception
    assert "The server probe failed: the worker stopped during the measurement." in at.error[0].value
    assert not any(t.startswith("Server probe") for t in _infos(at))
    assert at.button(key="rtt_probe_server").disabled is False


def test_the_worker_measures_the_server_probe_once_and_the_page_shows_it(tmp_path, monkeypatch):
    monkeypatch.delenv("TTFT_PLANNER_VANTAGE", raising=False)
    eng = open_store()  # the AppTest's temp store (tests/app/conftest.py), which the worker process opens too
    server = serve_in_thread()
    add_target(eng, "local-box", f"{server.base_url}/ping", lat=52.5, lon=13.4)
    env = {"TTFT_PLANNER_DATABASE_URL": None, "TTFT_PLANNER_VANTAGE": None}
    log = tmp_path / "worker.log"
    worker = spawn_worker(log, "--probe-processes", "0", env=env)
    try:
        wait_logged(lambda: leases.live_leases(leases.current(eng), int(time.time() * 1000), ""), "the lease", log)
        at = open_page("regions")
        at.multiselect(key="rtt_regions").set_value(["local-box"]).run()
        at.button(key="rtt_probe_server").click().run()
        assert not at.exception, at.exception
        [rid] = _request_ids(eng)
        req = wait_logged(lambda: (r := get_rtt_request(eng, rid))["status"] in ("done", "failed") and r, "done", log)
        at.run()  # the page's next look at the request (the fragment polls every second in a browser)
    finally:
        stop_worker(worker)
        server.stop()
    assert not at.exception, at.exception
    assert req["status"] == "done", (req, log.read_text()[-2000:])
    assert req["claimed_by"].split(":")[1] == str(worker.pid)  # measured by the worker, not by the page
    assert "The worker stored 10 server samples." in at.success[0].value
    row = shown_table(at).iloc[0]
    assert (row["Region"], row["Side"], row["Samples (n)"]) == ("custom · local-box", "server", "10")
    assert row["Method"] == "TCP connect" and row["Status"] == "ok"
    samples = load_samples(eng, region_ids=["local-box"])
    assert (samples["method"] == "tcp-connect").sum() == 10 and samples["run_id"].nunique() == 1  # landed once
    # A forged second claim gets nothing, and the page's reruns store nothing more.
    assert claim_rtt_requests(eng, "", "forger:1:x", int(time.time() * 1000)) == []
    at.run()
    assert len(load_samples(eng)) == len(samples) and "rtt_server_request" not in at.session_state
    assert at.button(key="rtt_probe_server").disabled is False


def test_without_a_worker_the_page_says_so_and_queues_nothing(monkeypatch):
    monkeypatch.delenv("TTFT_PLANNER_VANTAGE", raising=False)
    eng = open_store()
    add_target(eng, "local-box", "127.0.0.1:9")
    at = open_page("regions")
    at.multiselect(key="rtt_regions").set_value(["local-box"]).run()
    at.button(key="rtt_probe_server").click().run()
    assert not at.exception, at.exception
    [warning] = [w.value for w in at.warning if NO_WORKER in w.value]
    assert "`ttft-planner worker`" in warning and "`ttft-planner serve`" in warning
    assert _request_ids(eng) == [] and load_samples(eng).empty


def test_a_request_no_worker_claims_is_withdrawn_instead_of_waited_for(monkeypatch):
    monkeypatch.delenv("TTFT_PLANNER_VANTAGE", raising=False)
    eng = open_store()
    rid = create_rtt_request(eng, [("local-box", "127.0.0.1:9")], 3)  # queued, then its worker went away
    at = open_page("regions")
    at.session_state["rtt_server_request"] = rid
    at.run()
    assert not at.exception, at.exception
    assert any(NO_WORKER in w.value for w in at.warning)
    req = get_rtt_request(eng, rid)
    assert (req["status"], req["detail"]) == ("failed", "no worker claimed it")
    assert "rtt_server_request" not in at.session_state
