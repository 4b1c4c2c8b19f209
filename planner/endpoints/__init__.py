"""Endpoints: the registry (registry), the provider catalog it fills from (providers), API keys from secrets files
(secrets_file), what counts as a sample (samples), an endpoint's status (status), its cold-reading rules (cold_policy,
cold_readings) and its probe history (probe_history)."""
