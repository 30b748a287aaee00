"""The nightly run against new runtime releases: one tracking issue per broken target family.

``families`` groups a night's results by what an issue follows (the target without its resolved
version), ``bisect`` names the first failing release between one that passed and one that failed,
``state`` says what later nights remember and where, ``night`` decides what each issue needs,
``text`` writes it, ``publish`` carries it out on GitHub, and ``verifier`` verifies a bundle on one
more release for the search (the only piece that installs anything).
"""
