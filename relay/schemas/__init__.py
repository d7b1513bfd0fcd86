"""JSON Schemas of every ``relay ... --json`` output (see docs/json.md)."""
