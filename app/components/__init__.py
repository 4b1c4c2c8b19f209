"""Custom Streamlit components (components v2): our own HTML/CSS/JS, mounted from Python."""
