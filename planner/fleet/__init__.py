"""The workers as the pages and the command line see them: which are running and what each reported (watch), and what
a page asks of them: a probe now, a cold reading, a server-side RTT measurement (requests)."""
