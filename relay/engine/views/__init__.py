"""The views wing: the frozen dataclasses the verbs return (instances, messages, reports),
each with ``to_json()``.
"""
