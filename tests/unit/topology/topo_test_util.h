// Helpers for the topology tests: load a built-in or fail the test, scoped env variables and
// temporary description files.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <optional>
#include <string>

#include "topology/loader.h"

namespace trnccl::topology::testing {

inline Topology builtin(const std::string& name) {
  auto topo = loadTopology(name);
  EXPECT_TRUE(topo) << topo.status().message();
  return topo ? *topo : Topology{};
}

class ScopedEnv {
 public:
  ScopedEnv(const char* name, const std::string& value) : name_(name) {
    if (const char* old = std::getenv(name)) old_ = old;
    setenv(name, value.c_str(), 1);
  }
  ~ScopedEnv() {
    if (old_) {
      setenv(name_, old_->c_str(), 1);
    } else {
      unsetenv(name_);
    }
  }
  ScopedEnv(const ScopedEnv&) = delete;
  ScopedEnv& operator=(const ScopedEnv&) = delete;

 private:
  const char* name_;
  std::optional<std::string> old_;
};

// A file under a fresh temporary directory, removed with it.
class TempFile {
 public:
  TempFile(const std::string& name, const std::string& text) {
    char pattern[] = "/tmp/trnccl-topo-XXXXXX";
    dir_ = mkdtemp(pattern);
    path_ = dir_ + "/" + name;
    std::ofstream(path_) << text;
  }
  ~TempFile() {
    std::remove(path_.c_str());
    rmdir(dir_.c_str());
  }
  TempFile(const TempFile&) = delete;
  TempFile& operator=(const TempFile&) = delete;
  const std::string& path() const { return path_; }
  const std::string& dir() const { return dir_; }

 private:
  std::string dir_;
  std::string path_;
};

}  // namespace trnccl::topology::testing
