"""The verbs wing: the operator's commands (conversations, incoming, starting, contact
verbs, lookups, operations, program, waiting, campaigns and bulk, doctor, notify), each
a function over the runtime (:mod:`relay.engine.runtime`); :class:`relay.api.Relay`
hands its runtime to them, a line a verb.
"""
