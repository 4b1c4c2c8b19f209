"""Compare › report: the comparison as HTML, Markdown and CSV downloads."""

import streamlit as st

__all__ = ["render"]


def render(picked: list[str], html_report: str, md_report: str, csv_report: str) -> None:
    """Draw the download buttons; the file names follow the `picked` endpoints."""
    st.subheader("Report")
    stem = "ttft-comparison-" + "-vs-".join(picked)[:80]
    d1, d2, d3 = st.columns(3)
    d1.download_button(
        "Download HTML report", html_report, f"{stem}.html", "text/html", key="cmp_dl_html", on_click="ignore"
    )
    d2.download_button(
        "Download Markdown", md_report, f"{stem}.md", "text/markdown", key="cmp_dl_md", on_click="ignore"
    )
    d3.download_button("Download CSV", csv_report, f"{stem}.csv", "text/csv", key="cmp_dl_csv", on_click="ignore")
