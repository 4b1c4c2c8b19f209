"""The candidates of a what-if, described in words: one spec per line (the What-if page's box) or per --deployment
(`ttft-planner whatif`), read the same way by both.

Each non-blank spec is planner.whatif.deployment.parse_deployment's, named "#<n> <kind>" unless it says name=…; what
the replay cannot use comes back as sentences (a spec refused, with the key it names; names that repeat), never as
an exception, so the page lists them all and the command prints them as one usage error.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from planner.whatif.deployment import Deployment, SpecError, parse_deployment
from planner.worksheet.provenance import Figure

__all__ = ["Candidates", "parse_candidates"]


@dataclass(frozen=True)
class Candidates:
    """The deployments the specs describe, in order, and one sentence per problem (empty when all can be replayed)."""

    deployments: list[Deployment] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)


def parse_candidates(specs: Iterable[str], defaults: Mapping[str, Figure] | None = None) -> Candidates:
    """Every non-blank spec in `specs` as a Deployment (planner.whatif.deployment.parse_deployment; `defaults`: the
    figures, with provenance, for keys a spec leaves out). Problems: each refused spec's SpecError sentence, then
    "Candidate names must differ (add name=… to a spec): a, a" when two share a name."""
    out = Candidates()
    for i, spec in enumerate(s for s in specs if s.strip()):
        try:
            out.deployments.append(
                parse_deployment(spec, default_name=f"#{i + 1} {spec.partition(':')[0].strip()}", defaults=defaults)
            )
        except SpecError as exc:
            out.problems.append(str(exc))
    names = [d.name for d in out.deployments]
    if len(set(names)) != len(names):
        out.problems.append(f"Candidate names must differ (add name=… to a spec): {', '.join(names)}")
    return out
