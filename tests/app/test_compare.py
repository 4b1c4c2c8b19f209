"""AppTest: the Compare view over a seeded temp store — decision table, CI statements, greying, charts, downloads."""

import json
import re

import pytest

from planner.capacity.cost import CostInputs
from planner.store import database_url, open_store
from planner.worksheet.budget import Worksheet
from tests.app.conftest import open_page, plotly_array, shown_table, store_snapshot, use_store
from tests.support.compare_seed import seed_endpoint, seed_three
from ttft_planner_app import worksheet_state

# One worker runs the module, so the seeded store below is written once, not once per worker.
pytestmark = pytest.mark.xdist_group("app_test_compare")


def _seed(eng):
    values = seed_three(eng, n=960)
    seed_endpoint(eng, "new-d", median_ms=250, n=12, seed=11)
    return values


@pytest.fixture(scope="module")
def _seeded_store(tmp_path_factory):
    """The four endpoints, seeded once for the module (about 2,900 samples, seconds to write)."""
    return store_snapshot(tmp_path_factory.mktemp("compare"), _seed)


@pytest.fixture
def seeded(_temp_store, _seeded_store):
    """This test's store is its own copy of the seeded one: a test may write to it."""
    path, values = _seeded_store
    use_store(path)
    return values


def _open(app, endpoints=None):
    open_page("compare", app)
    if endpoints is not None:
        app.multiselect(key="cmp_endpoints").set_value(endpoints).run()
    assert not app.exception
    return app


def _per_endpoint(app):
    """The per-endpoint table as shown (a static table: its cells are text)."""
    return next(t.value for t in app.table if "TTFT p99 (ms)" in t.value.columns)


def test_empty_store_says_what_to_do(app):
    _open(app)
    assert "No endpoints yet" in app.info[0].value


def test_decision_table_ranks_and_states_what_the_data_can_tell(app, seeded):
    _open(app, ["fast-a", "slow-b", "twin-c"])
    decision = shown_table(app)
    assert decision["Endpoint"].tolist()[-1] == "slow-b"
    assert (
        decision["Compared with the leader"]
        .iloc[1]
        .startswith(("cannot yet tell apart from", "practically equivalent to"))
    )
    assert any("decided by" in str(v) for v in decision.iloc[0])
    infos = [i.value for i in app.info]
    assert any(
        ("cannot yet tell" in m or "practically equivalent" in m) and "fast-a" in m and "twin-c" in m for m in infos
    )
    successes = [s.value for s in app.success]
    assert any("slow-b − fast-a" in m and "fast-a is faster" in m for m in successes)


def test_too_few_samples_are_greyed_and_charts_overlay_each_endpoint(app, seeded):
    _open(app, ["fast-a", "new-d"])
    table = next(t for t in app.table if "TTFT p99 (ms)" in t.value.columns)  # the per-endpoint table
    rows = table.value["Endpoint"].tolist()
    cols = table.value.columns.tolist()
    styles = table.proto.arrow_data.styler.styles
    greyed = {(rows[int(r)], cols[int(c)]) for r, c in re.findall(r"_row(\d+)_col(\d+)", styles)}
    assert ("new-d", "TTFT p95 (ms)") in greyed and ("new-d", "TTFT p99 (ms)") in greyed
    assert not any(ep == "fast-a" for ep, _ in greyed)
    hourly = json.loads(app.get("plotly_chart")[0].proto.spec)
    names = [t["name"] for t in hourly["data"]]
    assert "fast-a" in names and "new-d (n < 20)" in names
    fast = next(t for t in hourly["data"] if t["name"] == "fast-a")
    assert len(plotly_array(fast["x"])) == 24  # 960 samples over three days: every hour has n ≥ 20


def test_vantage_without_samples_shows_zero_n_not_a_winner(app, seeded):
    _open(app, ["fast-a", "slow-b"])
    app.selectbox(key="cmp_vantage").set_value("office").run()
    assert _per_endpoint(app)["Samples (n)"].tolist() != ["0", "0"]
    eng = open_store(database_url())
    seed_endpoint(eng, "tokyo-only", median_ms=300, n=25, vantage="tokyo")
    eng.dispose()
    app.run()
    app.selectbox(key="cmp_vantage").set_value("tokyo").run()
    assert not app.exception
    assert _per_endpoint(app)["Samples (n)"].tolist() == ["0", "0"]
    decision = shown_table(app)
    assert decision["Rank"].tolist() == ["—", "—"]  # no samples: no winner
    assert all("too few samples" in i.value for i in app.info if " vs " in i.value)


def test_cost_uses_the_capacity_page_inputs_when_present(app, seeded):
    inputs = CostInputs(
        input_usd_per_mtok=1.0,
        cached_input_usd_per_mtok=1.0,
        output_usd_per_mtok=1.0,
        mix_uncached_input_tokens=1,
        mix_cached_input_tokens=0,
        mix_output_tokens=1,
        gpu_usd_per_hour=3.2,
        capacity_tokens_per_min=720_000,
        hourly_tokens=(1e6,) * 24,
        traffic_label="flat 1M/h",
    )
    app.session_state["cost_inputs"] = inputs.to_dict()
    _open(app, ["fast-a", "slow-b"])
    assert any("Capacity & cost page's inputs" in c.value for c in app.caption)
    decision = shown_table(app)
    # 1M tokens/h × 730 h at a blended $1/1M = $730 a month, for both (no endpoint-specific price).
    assert decision["Monthly cost ($)"].tolist() == ["$730"] * 2


def test_verdicts_use_the_worksheet_pages_inputs_when_it_was_opened(app, seeded):
    ws = Worksheet(name="Team plan", targets_ms={"chat": 2000.0}, target_labels={"chat": "Chat"})
    app.session_state["ws_figures"] = {f: getattr(ws, f).to_dict() for f in worksheet_state.FIELDS}
    app.session_state["ws_targets"], app.session_state["ws_labels"] = ws.targets_ms, ws.target_labels
    app.session_state["ws_name"] = ws.name
    _open(app, ["fast-a", "slow-b"])
    assert any("your worksheet “Team plan”" in c.value for c in app.caption)
    decision = shown_table(app)
    assert decision["Targets met (measured p95 ≤ target)"].tolist() == ["1 of 1", "1 of 1"]
    cells = dict(zip(decision["Endpoint"], decision["Chat (2,000 ms)"], strict=True))
    # fast-a's own cold reading (21,000 − 300 ms) is its cold start; slow-b has none and uses the typed 0 ms.
    assert cells["fast-a"].startswith("Over budget") and "Weight loading" in cells["fast-a"]
    assert cells["slow-b"].startswith("OK")


def test_malformed_cost_inputs_get_a_message_not_a_traceback(app, seeded):
    app.session_state["cost_inputs"] = {"input_usd_per_mtok": "lots"}
    _open(app, ["fast-a", "slow-b"])
    assert "Cannot compare with these inputs" in app.error[0].value


def test_one_endpoint_says_a_comparison_needs_a_second_and_ranks_nobody(app, seeded):
    _open(app, ["new-d"])  # one endpoint, 12 samples
    notice = next(i.value for i in app.info if "A comparison needs at least two endpoints" in i.value)
    assert "pick a second endpoint" in notice and "new-d" in notice
    assert shown_table(app)["Rank"].tolist() == ["—"]
    assert any("Ranked by measured TTFT p95, lower first" in c.value for c in app.caption)


def test_the_equivalence_margin_is_shown_and_settable_on_the_page_and_downloads_are_offered(app, seeded):
    _open(app, ["fast-a", "slow-b"])
    labels = [b.label for b in app.get("download_button")]
    assert labels == ["Download HTML report", "Download Markdown", "Download CSV"]
    assert any("larger of 5 ms and 3% of the faster p95" in c.value for c in app.caption)
    assert any("fast-a is faster" in s.value for s in app.success)
    app.number_input(key="cmp_margin_ms").set_value(5000.0).run()
    assert not app.exception
    assert any("larger of 5000 ms" in c.value for c in app.caption)
    assert any("practically equivalent" in i.value and "±5,000 ms" in i.value for i in app.info)
    assert not app.success  # nobody is "faster" inside a 5 s margin
