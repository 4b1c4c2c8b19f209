"""Provider regions: the catalog and custom RTT targets (catalog), and the RTT stored for them (rtt_history)."""
