"""The Capacity & cost page's tabs, one module each; app/views/capacity.py is the page that lays them out.

Each module exposes one `render(...)` that draws its tab into the current container and takes what it needs
from the page explicitly (the chosen traffic, and what an earlier tab produced). Not a `pages/` folder: the
router (app/streamlit_app.py) lists the pages; these are parts of one page.
"""
