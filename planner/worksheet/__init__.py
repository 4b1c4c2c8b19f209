"""The four-segment worksheet: its arithmetic (budget), interaction types (interactions), where each figure comes from
(provenance, segment_figures, first_step), saved worksheets (saved), exports (report) and its URL contract (url)."""
