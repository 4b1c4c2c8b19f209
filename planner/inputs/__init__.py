"""What comes in from outside, checked one way: untrusted text made inert (untrusted), URLs (urls), numbers (validate),
variable names (env_names), e-mail addresses (email_address), one bounded HTTP read (http_read)."""
