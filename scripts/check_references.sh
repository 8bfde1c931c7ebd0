#!/usr/bin/env bash
# Fails when a comment names a file that is not in the repository: a name ending in .h, .cc, .cu,
# .cuh, .cpp, .py, .sh, .cmake or .md (with or without folders) in a // comment of a C/C++/CUDA
# file or a # comment of a Python, shell or CMake file must be a tracked file (by its name, or by a
# path that some tracked path ends with). Names of other projects' files that comments cite on
# purpose are listed in EXTERNAL below. scripts/test.sh runs it first, beside check_format.sh.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."

exec "${PYTHON:-python3}" - <<'PYTHON'
import os
import re
import subprocess
import sys

# Files of other projects that comments name on purpose (headers we include, code we follow).
EXTERNAL = {
    "mpi.h", "nccl.h", "nccl_device.h", "cblas.h",  # MPI's, NCCL's and OpenBLAS's headers
    "common.cu",                                    # nccl-tests' harness
    "TorchConfig.cmake",                            # libtorch's CMake package
    "cpp/distributed/dist-mnist.cpp",               # pytorch/examples
    "x.h", "collectives/x.h", "cuda/x.h", "src/x.h",  # placeholders in how-to-include notes
}
CODE = (".h", ".cc", ".cu", ".cuh", ".cpp")
HASH = (".py", ".sh", ".cmake")
NAME = re.compile(r"(?<![\w./<-])(?:[\w.-]+/)*[\w-]+\.(?:h|cc|cu|cuh|cpp|py|sh|cmake|md)\b")

tracked = [f for f in subprocess.check_output(["git", "ls-files"], text=True).split("\n") if f]
paths = set(tracked)
names = {os.path.basename(f) for f in tracked}
# Generated from a tracked template (version.h from version.h.in).
names |= {n[: -len(".in")] for n in names if n.endswith(".in")}


def exists(name):
    if name in names or name in paths or name in EXTERNAL:
        return True
    return "/" in name and any(p.endswith("/" + name) for p in tracked)


missing = []
for path in tracked:
    if path.endswith(CODE):
        marker = "//"
    elif path.endswith(HASH) or os.path.basename(path) == "CMakeLists.txt":
        marker = "#"
    else:
        continue
    with open(path, errors="replace") as text:
        for number, line in enumerate(text, 1):
            stripped = line.lstrip()
            if marker == "//" and stripped.startswith("#include"):
                continue
            if marker == "#" and stripped.startswith("#!"):
                continue
            at = line.find(marker)
            if at < 0:
                continue
            for match in NAME.finditer(line[at + len(marker):]):
                name = match.group(0).strip("./")
                if not exists(name):
                    missing.append(f"{path}:{number}: names {name}, which is not in the repository")

if missing:
    print("\n".join(missing), file=sys.stderr)
    print(f"check_references: FAILED: {len(missing)} comment(s) name files that do not exist", file=sys.stderr)
    sys.exit(1)
print(f"check_references: every file a comment names exists ({len(tracked)} tracked files)")
PYTHON
