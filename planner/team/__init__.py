"""A shared deployment: who may do what (roles) and what they did (audit_trail)."""
