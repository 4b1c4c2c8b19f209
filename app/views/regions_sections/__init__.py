"""The Regions page's sections, one module each; app/views/regions.py is the page that lays them out.

Each module exposes one `render(...)` that draws its section and takes what it needs from the page explicitly (the
engine, the region list). Like capacity_tabs/, these are parts of one page, not pages of the router.
"""
