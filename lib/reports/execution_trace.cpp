#include "proftrace/execution_trace.hpp"

#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <map>
#include <mutex>
#include <stdexcept>
#include <string>

#include "proftrace/profile.hpp"
#include "helpers/warn.hpp"

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {

namespace {

struct traced_event {
  std::size_t trace;  // which of the window's Kineto traces it came from
  function_event e;
};

boost::json::object node(std::int64_t id, std::string_view name, std::int64_t parent, std::string_view category,
                         std::int64_t thread, std::int64_t start_ns, std::int64_t dur_ns) {
  return {{"id", id},
          {"name", name},
          {"parent", parent},
          {"category", category},
          {"thread", thread},
          {"start_ns", start_ns},
          {"dur_ns", dur_ns},
          {"inputs", boost::json::object{{"shapes", boost::json::array{}}, {"types", boost::json::array{}}}},
          {"ctrl_deps", boost::json::array{}},
          {"external_id", 0},
          {"trace", -1},
          {"async", false}};
}

// A scope's node, under `parent`.
boost::json::object scope_node(const traced_event& t, std::int64_t id, std::int64_t parent) {
  const function_event& e = t.e;
  boost::json::object n = node(id, e.name, parent, e.category.empty() ? "user_annotation" : e.category, e.thread,
                               e.start_unix_ns, e.duration_ns);
  n["external_id"] = e.external_id;
  n["trace"] = static_cast<std::int64_t>(t.trace);
  n["async"] = e.is_async;
  if (e.is_async) n["end_thread"] = e.end_thread;
  if (!e.input_shapes.empty()) {
    boost::system::error_code ec;
    boost::json::value shapes = boost::json::parse(e.input_shapes, ec);
    if (!ec && shapes.is_array()) {
      boost::json::array types;
      for (std::size_t i = 0; i < shapes.as_array().size(); ++i) types.emplace_back("Tensor");
      n["inputs"] = boost::json::object{{"shapes", std::move(shapes)}, {"types", std::move(types)}};
    }
  }
  if (e.flops > 0) n["flops"] = e.flops;
  if (e.bytes >= 0) n["bytes"] = e.bytes;
  return n;
}

// Per thread, the scope nodes open at the current start, innermost last:
// (end_ns, id).
using open_scopes = std::vector<std::pair<std::int64_t, std::int64_t>>;

// build_graph()'s state while it adds the events in start order.
struct graph_builder {
  std::vector<boost::json::object> nodes;
  std::map<std::int64_t, std::size_t> thread_node;                       // tid -> index in nodes
  std::map<std::pair<std::size_t, std::uint64_t>, std::int64_t> by_scope;  // (trace, External id) -> node id
  std::map<std::int64_t, std::int64_t> last_child;                      // parent node id -> its latest child
  std::map<std::int64_t, open_scopes> open_on;                          // tid -> its open scopes

  boost::json::object& thread_of(std::int64_t tid, std::int64_t first_ns) {
    auto [it, fresh] = thread_node.try_emplace(tid, nodes.size());
    if (fresh) {
      // No ctrl_deps: a thread follows no sibling on its own thread.
      nodes.push_back(node(static_cast<std::int64_t>(nodes.size()) + 1, "[proftrace|execution_trace|thread]", 1,
                           "thread", tid, first_ns, 0));
    }
    return nodes[it->second];
  }

  // The recorded parent's node, else its thread's. A scope whose recorded
  // parent is no node (an async range: a scope that ended on another
  // thread) goes under the innermost open scope that encloses it in time.
  std::int64_t parent_of(const traced_event& t, std::int64_t thread_id, const open_scopes& open) const {
    const function_event& e = t.e;
    if (e.is_async) return thread_id;
    const auto p = e.parent_external_id != 0 ? by_scope.find({t.trace, e.parent_external_id}) : by_scope.end();
    if (p != by_scope.end()) return p->second;
    if (e.parent_external_id != 0 && !open.empty()) return open.back().second;
    return thread_id;
  }

  void add(const traced_event& t) {
    const function_event& e = t.e;
    const std::int64_t end_ns = e.start_unix_ns + e.duration_ns;
    boost::json::object& thread = thread_of(e.thread, e.start_unix_ns);
    const std::int64_t thread_start = thread["start_ns"].as_int64();
    thread["dur_ns"] = std::max(thread["dur_ns"].as_int64(), end_ns - thread_start);
    const std::int64_t id = static_cast<std::int64_t>(nodes.size()) + 1;
    open_scopes& open = open_on[e.thread];
    while (!open.empty() && open.back().first <= e.start_unix_ns) open.pop_back();
    const std::int64_t parent = parent_of(t, thread["id"].as_int64(), open);
    boost::json::object n = scope_node(t, id, parent);
    if (!e.is_async) {
      if (auto prev = last_child.find(parent); prev != last_child.end())
        n["ctrl_deps"].as_array().push_back(prev->second);
      last_child[parent] = id;
      by_scope[{t.trace, e.external_id}] = id;
      open.emplace_back(end_ns, id);
    }
    nodes.push_back(std::move(n));
  }
};

// The nodes of a window's events: the process, one node per thread, one
// per scope under its enclosing scope (or its thread).
std::vector<boost::json::object> build_graph(std::vector<traced_event> events, std::int64_t start_ns,
                                             std::int64_t stop_ns) {
  std::stable_sort(events.begin(), events.end(), [](const traced_event& a, const traced_event& b) {
    if (a.e.start_unix_ns != b.e.start_unix_ns) return a.e.start_unix_ns < b.e.start_unix_ns;
    return a.e.duration_ns > b.e.duration_ns;
  });
  graph_builder graph;
  if (events.empty()) return {};
  graph.nodes.push_back(node(1, "[proftrace|execution_trace|process]", 0, "process", 0, start_ns, stop_ns - start_ns));
  graph.nodes.back()["pid"] = static_cast<std::int64_t>(::getpid());
  for (const traced_event& t : events) graph.add(t);
  return std::move(graph.nodes);
}

void write_graph(const std::filesystem::path& path, const std::vector<boost::json::object>& nodes,
                 std::int64_t start_ns, std::int64_t stop_ns, std::size_t traces) {
  std::string text = "{\n  \"schema\": \"proftrace.execution_trace/1\",\n  \"pid\": " + std::to_string(::getpid()) +
                     ",\n  \"time_unit\": \"ns\",\n  \"start_unix_ns\": " + std::to_string(start_ns) +
                     ",\n  \"stop_unix_ns\": " + std::to_string(stop_ns) +
                     ",\n  \"kineto_traces\": " + std::to_string(traces) + ",\n  \"nodes\": [";
  for (std::size_t i = 0; i < nodes.size(); ++i) {
    text += i ? ",\n    " : "\n    ";
    text += boost::json::serialize(nodes[i]);
  }
  text += nodes.empty() ? "]\n}\n" : "\n  ]\n}\n";
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out)
    throw std::runtime_error("proftrace: cannot write the execution trace '" + path.string() + "': " + std::strerror(errno));
  out << text;
  out.flush();
  if (!out) throw std::runtime_error("proftrace: cannot write the execution trace '" + path.string() + "'");
}

std::int64_t unix_now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct execution_trace_observer::impl {
  // The session calls the on_* hooks under its own lock, from whichever
  // thread steps or stops it; the program calls start() and stop() from
  // its own. Never held while calling into a session (lock order: the
  // session's, then this).
  mutable std::mutex mutex;
  std::filesystem::path path;
  bool registered = false;
  bool running = false;
  bool attached_running = false;  // a session it is attached to runs: start() joins it
  bool started_mid_session = false;  // start() joined it: earlier events of its traces are left out
  bool stopping_own = false;         // stop() is ending the private session: a write error is stop()'s
  // stop() came while the session it is attached to runs: the trace then
  // recording holds the window's last scopes, so the graph is written when
  // that trace finishes (or the session stops), of the scopes that began by window_end_ns.
  bool pending = false;
  std::int64_t window_end_ns = 0;
  std::string own_error;
  std::unique_ptr<session> own;  // the private session of a capture on its own
  std::vector<traced_event> events;
  std::size_t traces = 0;
  std::int64_t start_ns = 0;
  std::size_t nodes_written = 0;

  void begin(bool mid_session) {
    running = true;
    pending = false;
    started_mid_session = mid_session;
    events.clear();
    traces = 0;
    start_ns = unix_now_ns();
  }

  void finish(std::int64_t stop_ns) {
    running = false;
    pending = false;
    const auto nodes = build_graph(std::move(events), start_ns, stop_ns);
    events.clear();
    write_graph(path, nodes, start_ns, stop_ns, traces);
    nodes_written = nodes.size();
  }

  // A pending window written now, with the traces finished so far; a
  // failure is a warning (the caller is starting or leaving, not writing).
  void finish_pending_now() noexcept {
    if (!pending) return;
    try {
      finish(window_end_ns);
    } catch (const std::exception& e) {
      pending = false;
      detail::warn(e.what());
    }
  }
};

execution_trace_observer::execution_trace_observer() : impl_(std::make_unique<impl>()) {}

execution_trace_observer::~execution_trace_observer() {
  try {
    unregister_callback();
  } catch (const std::exception& e) {
    detail::warn(std::string("execution_trace_observer: ") + e.what());
  } catch (...) {
  }
}

execution_trace_observer& execution_trace_observer::register_callback(const std::filesystem::path& output_file_path) {
  std::lock_guard lock(impl_->mutex);
  if (impl_->registered) return *this;
  write_graph(output_file_path, {}, 0, 0, 0);  // the path must be writable now, not at the end of a run
  impl_->path = output_file_path;
  impl_->registered = true;
  return *this;
}

void execution_trace_observer::unregister_callback() {
  {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->registered) return;
  }
  stop();
  std::lock_guard lock(impl_->mutex);
  impl_->finish_pending_now();  // no waiting for the trace: what has finished
  impl_->registered = false;
}

bool execution_trace_observer::is_registered() const noexcept {
  std::lock_guard lock(impl_->mutex);
  return impl_->registered;
}
bool execution_trace_observer::is_running() const noexcept {
  std::lock_guard lock(impl_->mutex);
  return impl_->running;
}

const std::filesystem::path& execution_trace_observer::get_output_file_path() const {
  std::lock_guard lock(impl_->mutex);
  if (!impl_->registered)
    throw std::logic_error(
        "proftrace: execution_trace_observer: register_callback(path) must be called before get_output_file_path()");
  return impl_->path;
}

void execution_trace_observer::start() {
  {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->registered || impl_->running) return;
    if (impl_->attached_running) {  // the session it is attached to drives it
      impl_->finish_pending_now();  // the last window's graph first: this one replaces it at its stop()
      return impl_->begin(true);
    }
  }
  auto own = std::make_unique<profile>(
      profile_options{.record_shapes = true, .with_flops = true, .execution_trace_observer = this});
  try {
    own->start();  // calls on_session_start
  } catch (const std::logic_error&) {
    throw std::logic_error(
        "proftrace: execution_trace_observer::start(): another proftrace session is running; attach the observer "
        "to it with profile_options::execution_trace_observer");
  }
  std::lock_guard lock(impl_->mutex);
  impl_->own = std::move(own);
}

void execution_trace_observer::stop() {
  std::unique_ptr<session> own;
  {
    std::lock_guard lock(impl_->mutex);
    if (!impl_->running) return;
    if (!impl_->own) {
      if (impl_->attached_running) {  // the rest of the window is in the trace still recording
        impl_->running = false;
        impl_->pending = true;
        impl_->window_end_ns = unix_now_ns();
        return;
      }
      return impl_->finish(unix_now_ns());
    }
    own = std::move(impl_->own);
    impl_->stopping_own = true;
    impl_->own_error.clear();
  }
  own->stop();  // calls on_session_stop, which writes
  std::lock_guard lock(impl_->mutex);
  impl_->stopping_own = false;
  if (!impl_->own_error.empty()) throw std::runtime_error(impl_->own_error);
}

std::size_t execution_trace_observer::node_count() const noexcept {
  std::lock_guard lock(impl_->mutex);
  return impl_->nodes_written;
}

void execution_trace_observer::on_session_start() {
  std::lock_guard lock(impl_->mutex);
  impl_->attached_running = true;
  if (impl_->registered && !impl_->running) impl_->begin(false);
}

void execution_trace_observer::on_trace(const std::vector<function_event>& events, std::int64_t, std::int64_t) {
  std::lock_guard lock(impl_->mutex);
  impl& o = *impl_;
  if (!o.running && !o.pending) return;
  const std::size_t before = o.events.size();
  for (const function_event& e : events)
    if ((!o.started_mid_session || e.start_unix_ns >= o.start_ns) && (!o.pending || e.start_unix_ns <= o.window_end_ns))
      o.events.push_back({o.traces, e});
  // A trace that finished after a pending window ended counts only if it held some of it.
  if (!o.pending || o.events.size() > before) ++o.traces;
  if (!o.pending) return;
  try {
    o.finish(o.window_end_ns);
  } catch (const std::exception& e) {
    detail::warn(std::string(e.what()) + "; the session's trace is not affected");  // inside the session's work
  }
}

void execution_trace_observer::on_session_stop() {
  std::lock_guard lock(impl_->mutex);
  impl_->attached_running = false;
  if (!impl_->running && !impl_->pending) return;
  try {
    impl_->finish(impl_->pending ? impl_->window_end_ns : unix_now_ns());
  } catch (const std::exception& e) {
    if (!impl_->stopping_own) throw;  // the session's stop() makes it a warning
    impl_->own_error = e.what();
  }
}

void execution_trace_observer::on_session_abandoned() noexcept {
  std::lock_guard lock(impl_->mutex);
  impl_->attached_running = false;
  impl_->running = false;
  impl_->pending = false;
  impl_->events.clear();
}

}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
