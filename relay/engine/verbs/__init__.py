"""The verbs wing: the operator's commands (start, contact verbs, lookups, operations,
program, waiting, campaigns and bulk, doctor, notify), each a function over a runtime;
:class:`relay.api.Relay` delegates to them.
"""
