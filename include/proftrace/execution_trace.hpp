// proftrace/execution_trace.hpp — a graph of what ran, for replay and
// simulation tools: torch's ExecutionTraceObserver.
//
//   proftrace::execution_trace_observer et;
//   et.register_callback("et.json");                  // writes an empty graph (checks the path)
//   proftrace::profile p({.record_shapes = true, .execution_trace_observer = &et});
//   p.start(); run(); p.stop();                        // et.json: one node per scope of the window
//
//   et.start(); run(); et.stop();                      // or on its own (a private session)
//
// One node per recorded scope: id, name, parent, thread, start, duration,
// input shapes and types, FLOPs and bytes where known, control dependencies
// (the previous sibling on the same thread) and the Kineto trace's
// "External id"; the README documents the schema field by field. The graph
// covers the window from start() to stop() (with a session: the session's
// traces) and is written at stop(). With PROFTRACE_ENABLED=0 nothing is
// recorded and the file holds a valid graph with no nodes.
//
// Errors: register_callback() and the observer's stop() throw
// std::runtime_error naming the path when it cannot be written (a session's
// stop() warns instead); get_output_file_path() throws std::logic_error when
// no callback is registered; start() on its own throws std::logic_error while
// a session it is not attached to runs (attach the observer to it).
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "config.hpp"
#include "key_averages.hpp"

namespace proftrace {
inline namespace PROFTRACE_SESSION_NAMESPACE {

#if PROFTRACE_ENABLED
class session;

class execution_trace_observer {
 public:
  execution_trace_observer();
  // Unregisters (writing the graph if it was running); problems become warnings.
  ~execution_trace_observer();
  execution_trace_observer(const execution_trace_observer&) = delete;
  execution_trace_observer& operator=(const execution_trace_observer&) = delete;

  // Sets the output and writes an empty graph there. While registered,
  // further calls keep the first path (as torch's).
  execution_trace_observer& register_callback(const std::filesystem::path& output_file_path);
  // Stops (writing the graph) and forgets the path.
  void unregister_callback();
  bool is_registered() const noexcept;
  bool is_running() const noexcept;
  const std::filesystem::path& get_output_file_path() const;

  // Capture on its own: starts a private session (record_shapes, with_flops)
  // unless a session this observer is attached to runs: then a window of
  // that session's scopes from now (registered late, or after a stop()).
  // Does nothing when not registered or already running.
  void start();
  // Ends the capture and writes the graph. Inside a session it is attached
  // to, the window's last scopes are in the trace still recording: the
  // graph (the scopes begun by now) is written when that trace finishes, at
  // the latest at the session's stop(), or at once by unregister_callback().
  void stop();

  // Nodes of the last graph written (0 before any).
  std::size_t node_count() const noexcept;

 private:
  friend class session;
  // Called by the session it is attached to.
  void on_session_start();
  void on_trace(const std::vector<function_event>& events, std::int64_t start_unix_ns, std::int64_t stop_unix_ns);
  void on_session_stop();
  void on_session_abandoned() noexcept;

  struct impl;
  std::unique_ptr<impl> impl_;
};
#else
// Compiled out: the same calls, inline; the file always holds a valid graph
// with no nodes (an unwritable path still throws std::runtime_error).
class execution_trace_observer {
 public:
  execution_trace_observer& register_callback(const std::filesystem::path& output_file_path) {
    if (path_.empty()) {
      path_ = output_file_path;
      write_empty_graph();
    }
    return *this;
  }
  void unregister_callback() {
    stop();
    path_.clear();
  }
  bool is_registered() const noexcept { return !path_.empty(); }
  bool is_running() const noexcept { return running_; }
  const std::filesystem::path& get_output_file_path() const {
    if (path_.empty()) throw std::logic_error("proftrace: the execution trace observer has no output file registered");
    return path_;
  }
  void start() noexcept { running_ = is_registered(); }
  void stop() {
    if (!running_) return;
    running_ = false;
    write_empty_graph();
  }
  std::size_t node_count() const noexcept { return 0; }

 private:
  void write_empty_graph() const {
    std::ofstream out(path_, std::ios::trunc);
    out << "{\n  \"schema\": \"proftrace.execution_trace/1\",\n  \"time_unit\": \"ns\",\n"
           "  \"start_unix_ns\": 0,\n  \"stop_unix_ns\": 0,\n  \"kineto_traces\": 0,\n  \"nodes\": []\n}\n";
    out.flush();
    if (!out) throw std::runtime_error("proftrace: cannot write the execution trace '" + path_.string() + "'");
  }

  std::filesystem::path path_;
  bool running_ = false;
};
#endif

}  // namespace PROFTRACE_SESSION_NAMESPACE
}  // namespace proftrace
