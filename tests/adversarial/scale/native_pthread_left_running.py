# ruff: noqa
"""C++ starts a detached native thread (std::thread) on its first call that sleeps 30 s: neither
threading.enumerate() nor _thread._count() lists a thread the interpreter did not start, so a left-thread check
built on them is blind to it (/proc/self/task is not). The answer is honest; such a thread could as well fill an
output later or signal other processes (native_throttle_siblings)."""

import torch
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>
#include <chrono>
#include <thread>
void leave() {
  static bool left = false;
  if (left) return;
  left = true;
  std::thread([] { std::this_thread::sleep_for(std::chrono::seconds(30)); }).detach();
}
"""
_ext = load_inline("native_pthread_left_running", cpp_sources=_SRC, functions=["leave"], verbose=False)


def run(x: torch.Tensor) -> torch.Tensor:
    _ext.leave()
    return x * 2 + 1
