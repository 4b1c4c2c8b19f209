"""Page-to-page state besides the worksheet (app/worksheet_state.py): the selected request log and the cost inputs.

Small accessors over session state, so no page reads another page's widget keys: the Capacity & cost page
publishes its Break-even inputs (`put_cost_inputs`), Compare prices from them (`cost_inputs`), and the log picked
on one page is the default on the others (`selected_log` / `select_log`).
"""

from __future__ import annotations

from typing import Any

import streamlit as st

__all__ = ["cost_inputs", "put_cost_inputs", "select_log", "selected_log"]

_LOG = "selected_log_id"
_COST = "cost_inputs"  # CostInputs.to_dict(); the key Compare reads


def selected_log() -> int | None:
    """The id of the request-log upload last picked on any page, or None."""
    v = st.session_state.get(_LOG)
    return int(v) if v else None


def select_log(upload_id: int | None) -> None:
    """Remember `upload_id` (None or 0: typed numbers / no log) as the log in use."""
    st.session_state[_LOG] = int(upload_id) if upload_id else None


def put_cost_inputs(inputs: dict[str, Any]) -> None:
    """Publish the Break-even tab's inputs (CostInputs.to_dict())."""
    st.session_state[_COST] = dict(inputs)


def cost_inputs() -> dict[str, Any] | None:
    """The last published cost inputs, or None before the Capacity & cost page ran."""
    return st.session_state.get(_COST)
