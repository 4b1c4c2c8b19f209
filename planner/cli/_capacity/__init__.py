"""The capacity commands (cost, weights, gpu-fit, prefill, warm-pool), one module each, and the options they share.

Private (the leading underscore) so that the registry in planner/cli/__init__.py does not collect it:
planner/cli/capacity.py is the one module that lists these commands in COMMANDS.
"""
