// kineto_event_reader (lib/formats/perfetto/kineto_event.hpp) against
// boost::json::parse on one text: the same texts refused, the same fields
// and args, and the record written from them read back the same. Used by
// perfetto_test and tests/fuzz/kineto_event_fuzzer.
#pragma once

#include <boost/json.hpp>

#include <cstring>
#include <string>
#include <string_view>
#include <utility>

#include "formats/perfetto/kineto_event.hpp"

namespace test_kineto {

using proftrace::detail::json_field;

// What differs between `f` and what parse() made of the same member (null: absent); empty when nothing.
inline std::string field_mismatch(const json_field& f, const boost::json::value* v) {
  using kind = json_field::kind;
  if (!v) return f.what == kind::absent ? "" : "present, parse() has none";
  if (f.serialized() != boost::json::serialize(*v)) return "serialized as " + f.serialized();
  bool same = false;
  switch (v->kind()) {
    case boost::json::kind::null: same = f.what == kind::null; break;
    case boost::json::kind::bool_: same = f.what == kind::boolean && f.boolean == v->get_bool(); break;
    case boost::json::kind::int64: same = f.what == kind::int64 && f.int64 == v->get_int64(); break;
    case boost::json::kind::uint64: same = f.what == kind::uint64 && f.uint64 == v->get_uint64(); break;
    case boost::json::kind::double_: {
      const double d = v->get_double();
      same = f.what == kind::double_ && std::memcmp(&f.double_, &d, sizeof d) == 0;
      break;
    }
    case boost::json::kind::string: same = f.what == kind::string && f.text == v->get_string(); break;
    default: same = f.what == kind::composite && f.text == boost::json::serialize(*v); break;
  }
  return same ? "" : "another value or kind";
}

inline std::string record_mismatch(const proftrace::detail::kineto_event& e) {
  std::string bytes;
  proftrace::detail::write_record(e, bytes);
  proftrace::detail::kineto_record r;
  r.read(bytes);
  if (r.name != e.name.string() || r.cat != e.cat.string() || r.scope != e.scope.string() || r.id != e.id.serialized())
    return "record: name, cat, s or id";
  if (r.args_object != e.args_object || r.args.size() != (e.args_object ? e.arg_count : 0)) return "record: args";
  for (std::size_t i = 0; i < r.args.size(); ++i)
    if (r.args[i].name != e.args[i].first || is_null(r.args[i]) != (e.args[i].second.what == json_field::kind::null))
      return "record: arg " + e.args[i].first;
  return {};
}

// Empty when the reader and parse() agree on `text`, else what differs.
inline std::string kineto_event_mismatch(proftrace::detail::kineto_event_reader& reader, std::string_view text) {
  proftrace::detail::kineto_event e;
  const bool read = reader.read(text, e);
  boost::system::error_code ec;
  const boost::json::value v = boost::json::parse(text, ec);
  if (read != (!ec && v.is_object())) return read ? "read, parse() refuses it" : "refused, parse() reads an object";
  if (!read) return {};
  const boost::json::object& o = v.get_object();
  const std::pair<const json_field*, std::string_view> fields[] = {
      {&e.ph, "ph"}, {&e.ts, "ts"}, {&e.dur, "dur"}, {&e.pid, "pid"}, {&e.tid, "tid"},
      {&e.id, "id"}, {&e.name, "name"}, {&e.cat, "cat"}, {&e.scope, "s"}};
  for (const auto& [field, key] : fields)
    if (std::string why = field_mismatch(*field, o.if_contains(key)); !why.empty()) return std::string(key) + ": " + why;
  const boost::json::value* args = o.if_contains("args");
  if (e.args_object != (args && args->is_object())) return "args: object or not";
  if (e.args_object) {
    if (e.arg_count != args->get_object().size()) return "args: count";
    std::size_t i = 0;
    for (const auto& kv : args->get_object()) {
      if (e.args[i].first != kv.key()) return "args: key " + e.args[i].first;
      if (std::string why = field_mismatch(e.args[i++].second, &kv.value()); !why.empty())
        return "args: " + std::string(kv.key()) + ": " + why;
    }
  }
  return record_mismatch(e);
}

}  // namespace test_kineto
