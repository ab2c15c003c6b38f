// Internal: a file written as a stream, compressed by its name's suffix
// (".gz" gzip, ".zst" zstd, else plain), whole or not at all: written to a
// temporary beside it (export_temporary.hpp) and renamed by commit(). (trace_file.cpp has the same
// suffix rule for whole texts; its helpers are private to that file.)
//
//   compressed_output out("t.json.gz");
//   out.stream() << text;
//   out.commit();  // throws std::runtime_error naming the file on failure
#pragma once

#include "proftrace/config.hpp"

#include <filesystem>
#include <memory>
#include <ostream>

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

class compressed_output {
 public:
  explicit compressed_output(std::filesystem::path dest);
  ~compressed_output();  // without commit(): the temporary is removed
  compressed_output(const compressed_output&) = delete;
  compressed_output& operator=(const compressed_output&) = delete;

  std::ostream& stream();
  void commit();

 private:
  struct impl;
  std::unique_ptr<impl> impl_;
};

}  // namespace proftrace::detail
