"""SLO alerts: rules over the stored probe samples (rules), their evaluation (evaluate) and notifications (notify)."""
