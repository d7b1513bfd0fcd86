"""relay: orchestrate outreach conversations with a state machine, a store and a daemon."""

__version__ = "0.1.0"
