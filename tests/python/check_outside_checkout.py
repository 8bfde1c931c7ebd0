"""Run by CTest: python_bindings/ copied out of the repository must fail to build with a message
that says why (the extension is built from the repository's C++ sources), not a CMake backtrace."""

import pathlib
import shutil
import subprocess
import sys
import tempfile

source = pathlib.Path(sys.argv[1])
with tempfile.TemporaryDirectory() as tmp:
    lone = pathlib.Path(tmp) / "python_bindings"
    shutil.copytree(source, lone, ignore=shutil.ignore_patterns("build*", "__pycache__"))
    result = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-build-isolation", "--no-deps", "-w", tmp, str(lone)],
        capture_output=True, text=True)
output = result.stdout + result.stderr
wanted = "built from the repository's C++ sources"
if result.returncode == 0 or wanted not in output:
    print(output[-4000:])
    print(f"FAILED: pip returned {result.returncode}; expected a failure saying {wanted!r}")
    sys.exit(1)
print("outside checkout: pip fails with the expected message")
