"""PlannerError: the root of every exception the planner raises on purpose.

Each of the project's own errors derives from it, and also from the built-in it has always been (ValueError,
RuntimeError, KeyError), so an `except ValueError` written before it still catches the same errors. A front (a page,
a command) catches PlannerError and shows its message, which names what and where and never a secret; anything else
that escapes is a bug. CatalogError is the one error of both catalogs (regions and providers).

The tree, by what the person reading the message can do (tests/planner/test_errors.py holds it to the code):

    PlannerError
    ├── input refused — fix what was typed or uploaded (ValueError)
    │   ├── OutOfRange (validate)         a number outside its rule's range
    │   ├── UrlError (urls)               a URL the product will not use
    │   ├── EnvNameError (env_names)      a value typed where a variable's NAME goes
    │   ├── CatalogError (errors)         a catalog row or a spec a catalog cannot fill
    │   ├── EndpointError (endpoints)     an endpoint's settings
    │   ├── BudgetError (budget)          a worksheet's targets or segments
    │   ├── ColdReadingError (cold_policy)  a cold reading that cannot be asked for
    │   ├── AuthConfigError (auth)        the roles file
    │   ├── CapacityError (capacity.errors)  a deployment that does not fit
    │   ├── SpecError (whatif.deployment), TraceError (whatif.trace), CannotKeepUp (whatif.outcome)  a what-if
    │   │   candidate, its trace, or a candidate that can never keep up with it
    │   ├── PrefixTraceError (kvcache.chains) → BlockSizeError  a prefix trace or its block size
    │   ├── LogFormatError (logs.result), TooLarge (logs.opening)  a log that cannot be read at all; BrokenStream
    │   │   (logs.stream, an OSError)  a compressed log cut short or corrupt
    │   ├── Reject (logs.records) → Skip (logs.gateways)  one record left out, with its reason
    │   ├── OtlpError (sources.otlp_body) → OtlpTooLarge   a body that is not an OTLP export
    │   └── SseLineTooLong (probes.sse), WireError (worker.probe_wire)  a stream or a wire message
    ├── a name that is taken or absent — pick another (ValueError / KeyError)
    │   ├── EndpointNameTaken, DuplicateRule, NameTaken, TargetExists (store)
    │   └── EndpointNotFound (endpoints), UnknownEndpoint (compare.data), SourceNotFound, UploadNotFound,
    │       TargetNotFound, WorksheetNotFound (store)
    ├── something outside answered badly or not at all — try again, or fix it there (RuntimeError)
    │   ├── StoreError (store.engine)     the database
    │   ├── LiteLLMError (sources.litellm), PrometheusError (sources.prometheus_api)  a live source
    │   ├── HttpReadError (http_read)     a bounded HTTP read
    │   ├── DeliveryError (alerts.notify) an alert's webhook or e-mail
    │   ├── SimulatorStartError (simulator.runner), ProbeProcessError (worker.probe_pool)  a process of ours
    │   ├── StepWaitTooLong, StepOverflow (whatif.steps)  a replayed replica that cannot keep up or hold a request
    │   └── ProbeFault (probes.errors)    a probe's internal hand-off (never leaves the probe: a sample says it)
    └── a credential is missing — set it (MissingApiKey → MissingAwsCredentials, MissingGoogleCredentials)
"""

from __future__ import annotations

__all__ = ["CatalogError", "PlannerError"]


class PlannerError(Exception):
    """An error of the planner's own making; the message names what and where (never a secret)."""


class CatalogError(PlannerError, ValueError):
    """A malformed catalog row (regions, providers, or a custom target), or a spec the catalog cannot fill; the
    message names the entry and field."""
