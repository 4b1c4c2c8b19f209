"""Warm pool sized by one rule (planner.capacity.warmpool.plan_warm_pool): the Capacity page's Warm pool tab and
`ttft-planner capacity warm-pool` give the same idle GPU-hours for a replica of 2 GPUs, and the same minimum replicas.

The tab takes the node size from the Break-even tab ("GPUs per replica"); the command from --gpus-per-replica. Before
the rule was one, the command could not be told the replica's GPUs and counted one."""

from __future__ import annotations

import json

from click.testing import CliRunner

from planner.cli import cli
from tests.app.conftest import open_page, table_with


def _page(app) -> tuple[dict[str, str], str, str]:
    """The tab's trade-off table (option → idle GPU-hours per day, as shown), its minimum replicas and the cost of
    one replica per hour it priced (the Break-even tab's)."""
    open_page("capacity", app)
    app.number_input(key="cap_gpr").set_value(2)  # Break-even tab: 2 GPUs per replica
    app.number_input(key="cap_wp_rate_0").set_value(60.0)
    app.number_input(key="cap_wp_service_0").set_value(10.0)
    app.number_input(key="cap_wp_spr").set_value(2)
    app.number_input(key="cap_wp_target").set_value(0.5)
    app.number_input(key="cap_wp_cold").set_value(45.0)
    app.number_input(key="cap_wp_warm").set_value(400.0).run()
    assert not app.exception, app.exception
    table = table_with(app, "Idle GPU-hours per day")
    idle = dict(zip(table["Option"], table["Idle GPU-hours per day"], strict=True))
    minimum = next(m.value for m in app.metric if m.label == "Minimum warm replicas")
    return idle, minimum, app.session_state["cost_inputs"]


def test_the_tab_and_the_command_count_every_gpu_of_the_replica(app):
    idle_on_page, min_on_page, cost_inputs = _page(app)
    replica_usd = cost_inputs["gpu_usd_per_hour"] * 2
    r = CliRunner().invoke(
        cli,
        [
            *("capacity", "warm-pool", "--arrivals-per-hour", "60", "--service-s", "10"),
            *("--slots-per-replica", "2", "--target-wait-s", "0.5"),
            *("--cold-start-s", "45", "--warm-p95-ms", "400", "--replica-usd-per-hour", str(replica_usd)),
            *("--gpus-per-replica", "2", "--json"),
        ],
    )
    assert r.exit_code == 0, r.output
    out = json.loads(r.output)
    idle_in_command = {row["option"]: f"{row['idle_gpu_hours_per_day']:,.1f} h" for row in out["tradeoff"]}
    assert idle_in_command == idle_on_page
    # an always-warm replica of 2 GPUs idles for nearly 2 × 24 GPU-hours a day: more than one GPU could
    assert float(idle_on_page["always warm (1 replica)"].removesuffix(" h")) > 24
    assert str(out["min_replicas"]) == min_on_page
