"""AppTest: the GPU preset editor shows a GPU without FP8 tensor cores as "—" (never the raw word "None"), says
what "—" means, and reads an edited FP8 cell back ("—" none, a number a figure)."""

from __future__ import annotations

import pytest

from planner.capacity import specs as P
from tests.app.conftest import open_page

NO_FP8 = [g.label for g in P.gpus() if g.fp8_dense_tflops is None]


def _editor(app):
    return next(d for d in app.dataframe if "FP8 dense TFLOPS" in d.value.columns)


def test_a_gpu_without_fp8_shows_a_dash_and_says_why(app):
    assert {"A100 80GB SXM", "A10G 24GB (AWS)"} <= set(NO_FP8)
    open_page("capacity", app)
    editor = _editor(app)
    cells = editor.value.set_index("GPU")["FP8 dense TFLOPS"]
    assert [cells[g] for g in NO_FP8] == ["—"] * len(NO_FP8)
    assert not editor.value.astype(str).apply(lambda col: col.str.fullmatch("None|nan")).any().any()
    assert cells["H100 SXM 80GB"] == "1979"
    assert "no FP8" in editor.proto.columns  # the column's tooltip
    assert any("FP8 dense TFLOPS —: no FP8" in c.value for c in app.caption)


@pytest.mark.parametrize(("typed", "expected"), [("—", None), ("no FP8", None), ("1,200", 1200.0)])
def test_an_edited_fp8_cell_is_read_back(app, typed, expected):
    open_page("capacity", app)
    row = next(i for i, g in enumerate(P.gpus()) if g.label == "A100 80GB SXM")
    app.session_state["cap_gpu_editor"] = {
        "edited_rows": {row: {"FP8 dense TFLOPS": typed}},
        "added_rows": [],
        "deleted_rows": [],
    }
    app.run()
    assert not app.exception, app.exception
    assert not any("A100" in w.value for w in app.warning)
    assert any("A100" in o for o in app.selectbox(key="cap_fit_gpu").options)  # the row is kept
    record = {"key": "a100", "label": "A100", "memory_gib": 80, "bandwidth_tb_per_s": 2, "bf16_dense_tflops": 312}
    assert P.gpu_from_record({**record, "fp8_dense_tflops": typed}).fp8_dense_tflops == expected
