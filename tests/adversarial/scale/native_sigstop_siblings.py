# ruff: noqa
"""C++ finds its sibling processes (the other children of its parent, the judge: the reference's, the
incumbent's and the baseline's workers, from /proc/<ppid>/task/*/children) and sends each SIGSTOP on its first
call. The judge runs the reference itself for correctness, so nothing shows until timing, where the stopped
reference never answers. The answer is honest."""

import torch
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>
#include <csignal>
#include <dirent.h>
#include <fstream>
#include <unistd.h>
std::vector<int64_t> siblings() {
  std::vector<int64_t> found;
  std::string tasks = "/proc/" + std::to_string(getppid()) + "/task";
  DIR* dir = opendir(tasks.c_str());
  if (dir == nullptr) return found;
  while (dirent* task = readdir(dir)) {
    if (task->d_name[0] == '.') continue;
    std::ifstream children(tasks + "/" + task->d_name + "/children");
    for (int64_t pid; children >> pid;)
      if (pid != getpid()) found.push_back(pid);
  }
  closedir(dir);
  return found;
}
std::vector<int64_t> stop() {
  static std::vector<int64_t> stopped;
  if (!stopped.empty()) return stopped;
  stopped = siblings();
  for (int64_t pid : stopped) kill((pid_t)pid, SIGSTOP);
  return stopped;
}
"""
_ext = load_inline("native_sigstop_siblings", cpp_sources=_SRC, functions=["stop"], verbose=False)


def run(x: torch.Tensor) -> torch.Tensor:
    _ext.stop()
    return x * 2 + 1
