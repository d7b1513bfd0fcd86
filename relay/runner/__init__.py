"""The process runtime: long-running processes over the engine (``relay serve``)."""
