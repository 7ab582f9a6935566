// -J: the results as one JSON document, with the keys nccl-tests uses (a subset of them).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "common/options.h"

namespace trnccl::perf {

struct JsonHalf {  // out-of-place or in-place measurement of one row
  double timeUs = 0;
  double algBw = 0;
  double busBw = 0;
  bool checked = false;
  int64_t wrong = 0;
};

struct JsonRow {
  size_t size = 0;
  size_t count = 0;
  std::string type;
  std::string redop;
  int root = -1;
  JsonHalf outOfPlace;
  std::optional<JsonHalf> inPlace;  // none when the collective has no in-place form
};

class JsonReport {
 public:
  JsonReport(int argc, char** argv) : args_(argv, argv + argc) {}
  void addRow(JsonRow row) { rows_.push_back(std::move(row)); }
  // Writes the document; false (and a message on stderr) if the file cannot be written.
  bool write(const std::string& path, const Options& options, int nranks, int64_t errors,
             double avgBusBw) const;

 private:
  std::vector<std::string> args_;
  std::vector<JsonRow> rows_;
};

// s as a JSON string literal, quotes included.
std::string jsonString(const std::string& s);

}  // namespace trnccl::perf
