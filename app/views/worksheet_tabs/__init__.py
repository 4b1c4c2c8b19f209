"""The Worksheet page's lower tabs, one module each."""
