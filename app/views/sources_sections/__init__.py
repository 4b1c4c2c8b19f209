"""The Sources page's sections; app/views/sources.py is the page that lays them out. hours: production TTFT per hour
as one source gives it (its table, chart and the queue-p95 hand-off to the worksheet), drawn for a stored source and
for the Prometheus read alike."""
