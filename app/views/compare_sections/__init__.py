"""The Compare page's sections, one module each; app/views/compare.py is the page that lays them out and compares.

Top to bottom: selection (endpoints, vantage, date range), assumptions (prices and the equivalence margin), decision
(whether the data can tell the candidates apart, and the ranked decision table), per_endpoint (metrics, regions,
charts), worksheets (each endpoint's verdicts from its own measurements) and report (the downloads). Each module
exposes one `render(...)` that takes what it needs from the page explicitly. Like regions_sections/, these are parts
of one page, not pages of the router.
"""
