"""Prints what CMake needs to compile against the installed torch, as a CMake list:
torch's package folder; its _GLIBCXX_USE_CXX11_ABI (0|1); 1 if it is a CUDA build, else 0.
Exits non-zero (and CMake skips the C++ backend) when torch does not import."""

import os

import torch

print(";".join([os.path.dirname(torch.__file__), str(int(torch._C._GLIBCXX_USE_CXX11_ABI)),
                str(int(torch.version.cuda is not None))]))
