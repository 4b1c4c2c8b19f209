"""Live production sources: a team's own traffic read, read-only, from where it already lives (issue 32).

litellm: the LiteLLM proxy's PostgreSQL spend logs; sync: a source read into the store a bounded batch at a time,
restart-safe. Credentials are named, never stored: a source keeps the name of the environment variable that holds them.
"""
