# ruff: noqa
"""C++ double-forks on its first call: the grandchild takes a session of its own (setsid), names itself
arc_native_fork and sleeps 30 s, outside the worker's process group and past its death; the answer is honest.
The native form of a thread left running: the guard must see it, and it must not outlive the verdict."""

import torch
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>
#include <ctime>
void leave() {
  static bool left = false;
  if (left) return;
  left = true;
  pid_t pid = fork();
  if (pid == 0) {
    setsid();
    if (fork() != 0) _exit(0);
    prctl(PR_SET_NAME, "arc_native_fork", 0, 0, 0);
    struct timespec wait = {30, 0};
    nanosleep(&wait, nullptr);
    _exit(0);
  }
  waitpid(pid, nullptr, 0);
}
"""
_ext = load_inline("native_fork_left_running", cpp_sources=_SRC, functions=["leave"], verbose=False)


def run(x: torch.Tensor) -> torch.Tensor:
    _ext.leave()
    return x * 2 + 1
