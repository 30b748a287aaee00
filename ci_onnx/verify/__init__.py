"""The verify stage: run a target's runner in its own process, then judge what it observed.

``compare`` holds the verdict logic as pure functions; ``judge`` (with ``serving`` for batch sizes,
placement, latency and memory) turns a bundle and an Observation into a TargetResult; ``junit``
writes it as a JUnit testsuite; ``stage`` runs the whole of it for one target, turning a crash or a
hang of the runtime into an ``error`` result.
"""
