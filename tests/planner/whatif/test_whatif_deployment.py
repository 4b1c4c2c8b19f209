"""Parsing `--deployment SPEC` strings into typed candidates, and rejecting bad ones with a clear message."""

from __future__ import annotations

import pytest

from planner.whatif.deployment import Dedicated, Serverless, SpecError, parse_deployment
from planner.worksheet.provenance import Source


def test_serverless_spec_from_the_issue_parses_with_units_and_typed_provenance():
    d = parse_deployment("serverless:window=300,cold=20,slots=8,max=4,prefill=12000,decode=60,rtt=40,usd_per_mtok=0.3")
    assert isinstance(d, Serverless)
    assert (d.scale_down_window_s.value, d.scale_down_window_s.unit) == (300, "s")
    assert (d.cold_start_s.value, d.slots_per_replica, d.max_replicas, d.min_replicas) == (20, 8, 4, 0)
    assert (d.prefill_tokens_per_s.value, d.prefill_tokens_per_s.unit) == (12000, "tokens/s")
    assert (d.rtt_ms.value, d.price_usd_per_mtok.value) == (40, 0.3)
    assert d.prefill_tokens_per_s.source == Source.TYPED
    assert d.max_slots == 32


def test_dedicated_spec_with_overflow_inherits_slots_and_rates():
    d = parse_deployment(
        "dedicated:name=2xH200,replicas=2,slots=8,prefill=12000,decode=60,usd_per_gpu_h=3.2,gpus=1,rtt=40,"
        "overflow_max=3,overflow_cold=25,overflow_window=120,overflow_usd_per_mtok=0.5"
    )
    assert isinstance(d, Dedicated) and d.name == "2xH200"
    assert d.usd_per_h == pytest.approx(6.4)
    o = d.overflow
    assert o is not None and (o.max_replicas, o.cold_start_s.value, o.scale_down_window_s.value) == (3, 25, 120)
    assert (o.slots_per_replica, o.prefill_tokens_per_s.value, o.rtt_ms.value) == (8, 12000, 40)
    assert d.max_slots == 16 + 24


@pytest.mark.parametrize(
    ("spec", "message"),
    [
        ("serverless", "start with 'serverless:' or 'dedicated:'"),
        ("gpu:replicas=1", "start with 'serverless:' or 'dedicated:'"),
        ("serverless:window=300,cold=20,slots=8,max=4,prefill=12000", "missing decode"),
        (
            "serverless:window=300,cold=20,slots=8,max=4,prefill=fast,decode=60",
            "prefill must be a number (tokens/s), got 'fast'",
        ),
        (
            "serverless:window=300,cold=20,slots=8.5,max=4,prefill=1,decode=60",
            "slots must be a whole number, got '8.5'",
        ),
        ("serverless:window=300,cold=20,slots=8,max=4,prefill=0,decode=60", "prefill must be a rate > 0 tokens/s"),
        ("serverless:window=300,cold=-1,slots=8,max=4,prefill=1,decode=60", "cold must be a finite number ≥ 0"),
        (
            "serverless:window=300,cold=20,slots=8,max=4,min=5,prefill=1,decode=60",
            "min replicas must be between 0 and max (4)",
        ),
        ("serverless:window=300,cold=20,slots=8,max=4,prefill=1,decode=60,colour=blue", "unknown key colour"),
        ("dedicated:replicas=0,slots=8,prefill=1,decode=1,usd_per_gpu_h=3", "replicas must be a whole number ≥ 1"),
        (
            "dedicated:replicas=1,slots=8,prefill=1,decode=1,usd_per_gpu_h=3,overflow_max=2",
            "needs overflow_cold, overflow_window",
        ),
        ("dedicated:replicas=1,replicas=2", "replicas given twice"),
        ("dedicated:replicas", "'replicas' is not key=value"),
        (
            "dedicated:replicas=1,slots=1,prefill=1,decode=1,usd_per_gpu_h=3,overhead_tokens=-5",
            "overhead_tokens must be a finite number ≥ 0",
        ),
    ],
)
def test_bad_specs_name_the_spec_and_the_key(spec, message):
    with pytest.raises(SpecError) as err:
        parse_deployment(spec)
    assert message in str(err.value)
    assert spec.split(":")[0] in str(err.value)


def test_figures_from_other_pages_fill_missing_keys_with_their_provenance_and_the_spec_wins():
    from planner.whatif.deployment import defaults_from_worksheet
    from planner.worksheet.provenance import Figure

    figures = {
        "prefill_tokens_per_s": Figure(9000, "tokens/s", Source.PROBE, detail="sim-local slope", n=240),
        "network_ms": Figure(35, "ms", Source.RTT, detail="eu-west", n=30),
        "cold_ms": Figure(18_000, "ms", Source.COLD_READING, detail="sim-local"),
    }
    defaults = defaults_from_worksheet(figures)
    assert (
        defaults["cold"].value == 18 and defaults["cold"].unit == "s" and defaults["cold"].source == Source.COLD_READING
    )
    d = parse_deployment("serverless:window=300,slots=8,max=2,decode=60,rtt=80", defaults=defaults)
    assert d.prefill_tokens_per_s.describe() == "probe · sim-local slope · n=240"
    assert d.cold_start_s.value == 18
    assert d.rtt_ms.value == 80 and d.rtt_ms.source == Source.TYPED  # typed in the spec: it overrides the RTT probe


def test_defaults_taken_names_only_the_candidates_that_left_a_key_out():
    from planner.whatif.deployment import defaults_taken, parse_deployment
    from planner.worksheet.provenance import Figure, Source

    defaults = {
        "prefill": Figure(4000.0, "tokens/s", Source.PROBE, detail="acme"),
        "rtt": Figure.typed(30, "ms"),
        "cold": Figure(9.0, "s", Source.COLD_READING, detail="acme"),
    }
    specs = [
        "serverless:name=sls,window=300,cold=20,slots=8,max=4,decode=60,usd_per_mtok=0.3",
        "dedicated:name=ded,replicas=1,slots=8,prefill=12000,decode=60,usd_per_gpu_h=3.2",
    ]
    deps = [parse_deployment(s, defaults=defaults) for s in specs]
    # sls sets its own cold start; ded sets its own prefill and has no cold start at all
    assert defaults_taken(deps, defaults) == {"prefill": ["sls"], "rtt": ["sls", "ded"]}
