"""Running the generated workflows under act: GitHub's own actions as small stand-ins, the onnx-gate
action as the composite twin of action.yml, and the GitHub API as the OpenAPI-checked fake."""
