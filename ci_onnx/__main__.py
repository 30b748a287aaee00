from ci_onnx.cli import main

main()
