// Internal: a trace window's records as Perfetto's Trace protobuf.
//
// The same calls as kineto_json_writer; the packets accumulate in buffer()
// until the window appends them to the spool, which is a valid .pftrace at
// every commit (packets are only ever appended: a kill loses at most what
// was not committed, and the file loads as it is).
//
// Scopes become SLICE_BEGIN/SLICE_END pairs on their thread's track. A
// scope is written when it closes, after its children; so that a parent's
// begin precedes its children's in the file (Perfetto nests by order where
// timestamps tie), the first child to close writes the begins of the open
// scopes around it (open_scope::announced) and their ends come later.
//
// Everything on a thread's track (its scopes, instants and memory events)
// goes on that thread's own packet sequence, as Perfetto's SDK writes it:
// the track and the clock are the sequence's defaults and timestamps are
// deltas, in order but for rare cases (a negative delta is still exact).
// Everything else (tracks, counters, async ranges, steps, GPU activity)
// goes on one main sequence with absolute timestamps.
//
//   perfetto_writer w(head);
//   w.scope(ts, s, end_ns);
//   file.commit(w.buffer(), ""); w.buffer().clear();
#pragma once

#include <memory>
#include <tuple>
#include <unordered_map>

#include "perfetto_builder.hpp"
#include "formats/recent_cache.hpp"
#include "formats/trace_writer.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

class perfetto_writer : pinned_writer {  // the builder appends to buffer_
 public:
  static constexpr trace_format format = trace_format::pftrace;
  explicit perfetto_writer(const trace_head& head);

  static std::string head() { return {}; }
  // Packets after the last event, on a sequence of their own: the trace's
  // counters (losses included) as args of a "proftrace" instant, and its name.
  static std::string tail(const finished_trace& f, const std::string& trace_name);

  void thread(std::int64_t tid, const std::string& name);
  // Inline for the end of a scope whose begin was written (a scope with
  // children): the scopes around it had theirs written with it, so its end
  // is one short packet.
  void scope(thread_state& ts, const open_scope& s, std::int64_t end_ns) {
    if (s.announced && s.step != step_kind::api_step && only_external_id(s, head_)) {
      packet_sequence& q = sequence_of(ts.tid);
      return q.builder.slice_end(q.track, end_ns, q.external_id_iid, s.external_id);
    }
    written_scope(ts, s, end_ns);
  }
  // Inline for the commonest scopes, leaves (plain by construction): two
  // short packets each, once the scopes around them have their begins written.
  void leaves(thread_state& ts, std::span<const closed_leaf> run) {
    if (PROFTRACE_UNLIKELY(head_.with_stack || head_.with_modules)) {  // not plain_slice()
      for (const closed_leaf& l : run) scope(ts, as_leaf(ts, l), l.end_ns);
      return;
    }
    std::size_t i = 0;
    packet_sequence& q = sequence_of(ts.tid);
    if (!ts.stack.empty() && !ts.stack.back().announced) announce_open(q, ts);  // the begins around them first
    while (i < run.size()) {  // by consecutive leaves of one site: one name, so one packet layout
      const std::size_t first = i;
      const site* where = run[i].where;
      while (++i < run.size() && run[i].where == where) {}
      const site_ids& ids = q.ids_of(*where);
      q.builder.slice_pairs(q.track, ids.name, ids.category, q.external_id_iid, i - first, [&](std::size_t k) {
        const closed_leaf& l = run[first + k];
        return std::tuple{l.begin_ns, l.end_ns, l.external_id};
      });
    }
  }
  void async(const open_async& a, std::uint64_t id, std::int64_t end_ns, std::int64_t end_tid);
  // A scope whose begin this wrote left its thread unclosed (it ended on
  // another thread, written as an async range): its slice ends at `ns`.
  void withdrawn(std::int64_t tid, const open_scope& s, std::int64_t ns);
  void memory(const memory_event& m);
  void instant(std::int64_t tid, const site& where, std::int64_t ns);
  void counter(std::int64_t tid, const site& where, std::int64_t ns, double value);
  void gpu(const std::vector<gpu_activity>& activities, const std::vector<gpu_span>& spans);

  // Every sequence's packets so far.
  std::string& buffer() { return main_.builder.out(); }
  // The thread exited: its sequence is dropped (a later event of its tid
  // starts a new one), so that threads that come and go do not each keep a
  // builder and its interned names (a small entry with the track stays).
  void thread_done(std::int64_t tid);

 private:
  struct site_ids {
    std::uint64_t name, category;
  };
  // A packet sequence: its builder and the ids it interned (per sequence).
  struct packet_sequence {
    template <class... Defaults>
    explicit packet_sequence(packet_stage& stage, std::uint32_t id, Defaults... defaults)
        : builder(stage, id, defaults...) {
      external_id_iid = builder.intern_annotation_name("External id");
    }
    const site_ids& ids_of(const site& where) {
      const site_ids* ids = recent.find(&where, recent_slot_hash(&where));
      return PROFTRACE_LIKELY(ids != nullptr) ? *ids : new_site(where);
    }
    const site_ids& new_site(const site& where);
    perfetto_builder builder;
    std::unordered_map<const site*, site_ids> sites;  // node-based: recent's entries stay valid
    recent_cache<const site*, site_ids> recent;       // sites' recent answers (nested scopes alternate sites)
    std::uint64_t external_id_iid = 0;
    std::uint64_t track = 0;  // a thread's: its track, the sequence's default
  };
  struct thread_entry {
    std::uint64_t track = 0;
    std::unique_ptr<packet_sequence> events;  // made at the thread's first event
  };
  // The thread's track, declared on the main sequence, and its own sequence.
  thread_entry& thread_of(std::int64_t tid) { return tid == last_tid_ ? *last_thread_ : new_thread(tid); }
  thread_entry& new_thread(std::int64_t tid);
  std::uint64_t thread_track(std::int64_t tid) { return thread_of(tid).track; }
  packet_sequence& sequence_of(std::int64_t tid) {
    thread_entry& t = thread_of(tid);
    return PROFTRACE_LIKELY(t.events != nullptr) ? *t.events : new_sequence(t);
  }
  packet_sequence& new_sequence(thread_entry& t);
  // Writes the begins of ts's open scopes that have none written yet
  // (outermost first), before a scope inside them is written.
  void announce_open(packet_sequence& q, thread_state& ts);
  void written_scope(thread_state& ts, const open_scope& s, std::int64_t end_ns);  // scope() past its inline case
  void begin(packet_sequence& q, std::uint64_t track, const thread_state& ts, const open_scope& s, bool with_args);
  // A scope's fixed args (at most 10) and its PROF_ARG values.
  static constexpr std::size_t max_annotations = 10 + max_scope_args;
  std::size_t scope_args(const packet_sequence& q, const thread_state& ts, const open_scope& s,
                         annotation (&out)[max_annotations], std::string (&text)[2]);
  // Appended at out[n]; the new count.
  std::size_t shapes_and_flops(std::span<const std::int64_t> shapes, std::int64_t flops, annotation (&out)[max_annotations],
                               std::size_t n);
  static std::size_t user_args(const std::vector<scope_arg>& args, annotation (&out)[max_annotations], std::size_t n);
  void gpu_activity_slice(const gpu_activity& a);
  std::uint64_t stream_track(std::uint32_t device, std::uint32_t stream);

  const trace_head& head_;
  std::string buffer_;
  std::string shapes_text_;  // the "Input Dims" of the event being written
  packet_stage stage_{buffer_};  // shared by every sequence's builder: one block, packets in order
  packet_sequence main_;
  std::uint64_t process_track_ = 0;
  std::unordered_map<std::int64_t, thread_entry> threads_;  // node-based: last_thread_ stays valid
  std::int64_t last_tid_ = -1;
  thread_entry* last_thread_ = nullptr;
  std::uint32_t next_sequence_;
};

}  // namespace proftrace::detail
