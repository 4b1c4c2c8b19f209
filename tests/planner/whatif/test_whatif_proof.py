"""The proof's set-up: which deployments the single-replica simulated endpoint can play (the proof runs in bench/)."""

from __future__ import annotations

import pytest

from planner.whatif.deployment import parse_deployment
from planner.whatif.proof import simulator_config_for

# The time-compressed proof itself (a two-hour trace at 240× against the simulator) is a benchmark:
# bench/bench_whatif_proof.py. At that compression a loaded machine's late timers are error, so as a
# test it failed on shared machines for reasons that were not the model's.
PROOF_SPEC = "serverless:name=proof,window=600,cold=30,slots=2,max=1,prefill=100,decode=1,usd_per_mtok=0.3"


def test_shapes_the_single_replica_simulator_cannot_play_are_refused():
    with pytest.raises(ValueError, match="one replica; use max=1"):
        simulator_config_for(parse_deployment(PROOF_SPEC.replace("max=1", "max=3")), speedup=10)
    dedicated = parse_deployment("dedicated:replicas=2,slots=4,prefill=100,decode=4,usd_per_gpu_h=3")
    assert simulator_config_for(dedicated, speedup=10).slots == 8
