"""Diagnostic (H200): which C++ constructs make a load_inline extension die by SIGSEGV there, where the CPU machine
runs them (native_read_judge_memory died standalone, with no guard around it). Each function runs in a fresh
process, so one crash does not hide the next. Remove once the cause is known.

    python3 bench/diag/native_segv.py
"""

from __future__ import annotations

import subprocess
import sys
import tempfile

import torch
from torch.utils.cpp_extension import load_inline

SOURCE = r"""
#include <torch/extension.h>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <execinfo.h>
#include <fcntl.h>
#include <fstream>
#include <string>
#include <unistd.h>
std::string str_const() { return "hello"; }
std::vector<int64_t> vec_const() { return {1, 2, 3}; }
int64_t to_string_size() { return (int64_t)std::to_string(getppid()).size(); }
int64_t ifstream_size() {
  std::ifstream in("/proc/self/cmdline", std::ios::binary);
  std::string data(4096, '\0');
  in.read(&data[0], 4096);
  return (int64_t)in.gcount();
}
int64_t readdir_count() {
  DIR* dir = opendir("/proc/self/task");
  if (dir == nullptr) return -1;
  int64_t n = 0;
  while (dirent* entry = readdir(dir)) n += entry->d_name[0] != '.';
  closedir(dir);
  return n;
}
torch::Tensor tensor_twice(torch::Tensor x) { return x * 2; }
static void report(int sig) {
  void* frames[64];
  int n = backtrace(frames, 64);
  fprintf(stderr, "signal %d, %d frames:\n", sig, n);
  backtrace_symbols_fd(frames, n, 2);
  _exit(70);
}
int64_t install_handler() { signal(SIGSEGV, report); return 0; }
static int64_t slurp_size(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string data(1 << 20, '\0');
  in.read(&data[0], data.size());
  return (int64_t)in.gcount();
}
std::string parent() { return "/proc/" + std::to_string(getppid()); }
int64_t parent_environ() { return slurp_size(parent() + "/environ"); }
int64_t parent_cmdline() { return slurp_size(parent() + "/cmdline"); }
int64_t parent_maps() { return slurp_size(parent() + "/maps"); }
int64_t parent_children() {
  int64_t n = 0;
  DIR* dir = opendir((parent() + "/task").c_str());
  if (dir == nullptr) return -1;
  while (dirent* task = readdir(dir)) {
    if (task->d_name[0] == '.') continue;
    std::ifstream children(parent() + "/task/" + task->d_name + "/children");
    for (int64_t pid; children >> pid;) n++;
  }
  closedir(dir);
  return n;
}
int64_t parent_heap() {
  std::ifstream maps(parent() + "/maps");
  int mem = open((parent() + "/mem").c_str(), O_RDONLY);
  int64_t heap = -1;
  for (std::string line; mem >= 0 && std::getline(maps, line);) {
    if (line.find("[heap]") == std::string::npos) continue;
    unsigned long lo = std::strtoul(line.c_str(), nullptr, 16);
    std::string chunk(1 << 20, '\0');
    ssize_t got = pread(mem, &chunk[0], chunk.size(), (off_t)lo);
    heap = got;
  }
  if (mem >= 0) close(mem);
  return heap;
}
"""
FUNCTIONS = ["str_const", "vec_const", "to_string_size", "ifstream_size", "readdir_count", "tensor_twice",
             "install_handler", "parent", "parent_environ", "parent_cmdline", "parent_maps", "parent_children",
             "parent_heap"]


def build(folder: str) -> object:
    return load_inline("segv_probe", cpp_sources=SOURCE, functions=FUNCTIONS, build_directory=folder)


def main() -> None:
    if len(sys.argv) == 3:  # a child: call one function
        ext = build(sys.argv[1])
        ext.install_handler()  # type: ignore[attr-defined]
        fn = getattr(ext, sys.argv[2])
        print(fn(torch.ones(2)) if sys.argv[2] == "tensor_twice" else fn(), flush=True)
        return
    print("torch", torch.__version__, "cxx11 abi", torch._C._GLIBCXX_USE_CXX11_ABI, flush=True)
    print(subprocess.run(["c++", "--version"], capture_output=True, text=True).stdout.splitlines()[0], flush=True)
    with open("/proc/self/maps") as maps:
        print(sorted({line.split()[-1] for line in maps if "libstdc++" in line}), flush=True)
    folder = tempfile.mkdtemp()
    build(folder)
    for name in FUNCTIONS:
        done = subprocess.run([sys.executable, __file__, folder, name], capture_output=True, text=True, timeout=120)
        print(f"{name}: rc {done.returncode} {done.stdout.strip()[:80]}", flush=True)
        if done.returncode:
            print(done.stderr.strip()[-3000:], flush=True)  # the backtrace of a crash


if __name__ == "__main__":
    main()
