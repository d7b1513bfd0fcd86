"""The inbound wing: a message arrives, is matched to its conversation and recorded (or is
an opt-out, or unknown).

Entry: :mod:`.ingest`.
"""
