"""All of onnx-gate's GitHub I/O, behind two seams.

``workflow``: workflow commands, the job summary and step outputs (files and stdout of the job).
``client``: the REST API (requests, timeouts, retries, pagination); ``comments`` and ``checks`` build the
sticky PR comment and the check run / commit status on it. ``context`` holds what the CLI read from the
environment, frozen. Nothing here reads os.environ or prints: the caller passes a ``log`` callable.
"""
