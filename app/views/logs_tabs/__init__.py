"""The Logs page's parts, one module each; app/views/logs.py is the page that lays them out.

Top to bottom: picker (which log: an upload, a sample, a stored upload or a live source), options (how to read it),
source (the upload kept on disk across pages, and reading it), mapping (the column mapping form), headline (what was
read, the headline figures, the worksheet hand-off, saving), one module per tab (prompt, traffic, cold, ttft, models)
and stored (the stored uploads). Each module but source exposes one `render(...)`; source gives the log on show
(`current`) and reads it (`read`). All take what they need from the page explicitly. Like capacity_tabs/, these are
parts of one page, not pages of the router.
"""
