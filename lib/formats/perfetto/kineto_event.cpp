#include "kineto_event.hpp"

#include <boost/json.hpp>
#include <boost/json/basic_parser_impl.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <optional>

#include "formats/kineto_json/kineto_event_keys.hpp"

namespace proftrace::inline PROFTRACE_ABI_NAMESPACE::detail {

namespace json = boost::json;

double json_field::to_double() const noexcept {
  switch (what) {
    case kind::int64: return static_cast<double>(int64);
    case kind::uint64: return static_cast<double>(uint64);
    case kind::double_: return double_;
    default: return 0;
  }
}

id_value read_id(const json_field& v) {
  id_value id;
  using kind = json_field::kind;
  if (v.what == kind::absent) return id;
  if (v.is_string()) {
    id.text = v.text;
  } else if (v.what == kind::int64 || (v.what == kind::uint64 && v.uint64 <= INT64_MAX) ||
             (v.what == kind::double_ && std::trunc(v.double_) == v.double_ &&
              std::fabs(v.double_) < 9.2e18)) {  // a whole number int64 holds; any other is text
    id.is_number = true;
    id.number = v.what == kind::int64 ? v.int64 : v.what == kind::uint64 ? static_cast<std::int64_t>(v.uint64)
                                                                        : static_cast<std::int64_t>(v.double_);
    id.text = std::to_string(id.number);
  } else {
    id.text = v.serialized();
  }
  return id;
}

bool read_ns(const json_field& v, std::int64_t& ns, std::uint64_t& clamped) {
  if (!v.is_number()) return false;
  constexpr double max_abs_ns = 4e18;
  const double given = v.to_double() * 1000.0;
  if (!(std::fabs(given) <= max_abs_ns)) ++clamped;
  ns = static_cast<std::int64_t>(std::llround(std::clamp(given, -max_abs_ns, max_abs_ns)));
  return true;
}

event_use read_timed_event(kineto_event_reader& reader, std::string_view text, kineto_event& e, std::int64_t& ts_ns,
                           std::uint64_t& clamped) {
  if (!reader.read(text, e)) return event_use::unusable;
  if (e.ph.string() == "M") return event_use::metadata;
  return read_ns(e.ts, ts_ns, clamped) ? event_use::timed : event_use::unusable;
}

std::string json_field::serialized() const {
  switch (what) {
    case kind::absent: return {};
    case kind::null: return "null";
    case kind::boolean: return boolean ? "true" : "false";
    case kind::int64: return std::to_string(int64);
    case kind::uint64: return std::to_string(uint64);
    case kind::double_: return json::serialize(json::value(double_));
    case kind::string: return json::serialize(json::string_view(text));
    case kind::composite: break;
  }
  return text;
}

const json_field* kineto_event::arg(std::string_view key) const noexcept {
  for (std::size_t i = 0; i < arg_count; ++i)
    if (args[i].first == key) return &args[i].second;
  return nullptr;
}

namespace {

// The handler basic_parser calls: keeps the top-level fields the converter
// reads and the members of "args"; an array or object value among them is
// built in `stack` (from its first element to its end) and serialized.
struct event_handler {
  static constexpr std::size_t max_object_size = json::object::max_size();
  static constexpr std::size_t max_array_size = json::array::max_size();
  static constexpr std::size_t max_key_size = json::string::max_size();
  static constexpr std::size_t max_string_size = json::string::max_size();

  kineto_event* e = nullptr;
  bool is_object = false;
  int depth = 0;            // containers open; the event is depth 1
  bool args_key = false;    // the value now read is the event's "args"
  bool in_args = false;     // depth 2 is the args object
  int building = 0;         // >0: a composite value, opened at this depth, goes to `stack`
  json_field* target = nullptr;  // where the value now read goes (null: nowhere)
  bool in_parts = false;    // a string or key came in parts
  std::string key;
  // Made anew for each composite: a released monotonic_resource keeps
  // growing the size of the blocks it asks for.
  unsigned char block[4096];
  std::optional<json::monotonic_resource> memory;
  json::value_stack stack;

  void start(kineto_event& event) {
    e = &event;
    is_object = args_key = in_args = in_parts = false;
    key.clear();  // a text refused inside a key leaves its start
    depth = building = 0;
    target = nullptr;
    for (json_field* f : {&e->ph, &e->ts, &e->dur, &e->pid, &e->tid, &e->id, &e->name, &e->cat, &e->scope})
      f->what = json_field::kind::absent;
    e->args_object = false;
    e->arg_count = 0;
  }

  json_field* field_for(std::string_view k) {
    args_key = false;
    switch (identify_event_key(k)) {
      case event_key::s: return &e->scope;
      case event_key::ph: return &e->ph;
      case event_key::ts: return &e->ts;
      case event_key::id: return &e->id;
      case event_key::dur: return &e->dur;
      case event_key::pid: return &e->pid;
      case event_key::tid: return &e->tid;
      case event_key::cat: return &e->cat;
      case event_key::name: return &e->name;
      case event_key::args:
        args_key = true, e->args_object = false, e->arg_count = 0;  // the last "args" is the one
        return nullptr;
      default: return nullptr;
    }
  }

  // Where an arg's value goes: its first place when the key came before.
  json_field* arg_for(std::string_view k) {
    for (std::size_t i = 0; i < e->arg_count; ++i)
      if (e->args[i].first == k) return &e->args[i].second;
    if (e->arg_count == e->args.size()) e->args.emplace_back();
    auto& slot = e->args[e->arg_count++];
    slot.first.assign(k);
    return &slot.second;
  }

  json_field* take_target() { return std::exchange(target, nullptr); }

  bool open(bool object) {
    ++depth;
    if (building) return true;
    if (depth == 1) {
      is_object = object;
    } else if (depth == 2 && args_key && object) {
      in_args = e->args_object = true;
    } else if (target) {
      building = depth;
      stack.reset(json::storage_ptr(&memory.emplace(block, sizeof block)));
    }
    args_key = false;
    return true;
  }

  bool close(bool object, std::size_t n) {
    if (building) {
      object ? stack.push_object(n) : stack.push_array(n);
      if (depth == building) {
        building = 0;
        json_field* f = take_target();
        f->what = json_field::kind::composite;
        f->text = json::serialize(stack.release());
      }
    } else if (depth == 2) {
      in_args = false;
    }
    --depth;
    return true;
  }

  bool key_part(std::string_view s) {
    if (building) stack.push_chars(s);
    else key.append(s.data(), s.size()), in_parts = true;
    return true;
  }

  bool whole_key(std::string_view s) {
    if (building) {
      stack.push_key(s);
      return true;
    }
    if (in_parts) key.append(s.data(), s.size()), s = key;
    target = depth == 1 ? field_for(s) : depth == 2 && in_args ? arg_for(s) : nullptr;
    in_parts = false;
    key.clear();
    return true;
  }

  bool string_part(std::string_view s) {
    if (building) {
      stack.push_chars(s);
    } else if (target) {
      if (!in_parts) target->text.clear();
      target->text.append(s.data(), s.size());
      in_parts = true;
    }
    return true;
  }

  bool whole_string(std::string_view s) {
    if (building) {
      stack.push_string(s);
    } else if (json_field* f = take_target()) {
      if (!in_parts) f->text.clear();
      f->text.append(s.data(), s.size());
      f->what = json_field::kind::string;
    }
    in_parts = false;
    return true;
  }

  // A number, boolean or null: `push` when it is part of a composite, else `set` on its field.
  template <class Push, class Set>
  bool value(Push&& push, Set&& set) {
    if (building) push(stack);
    else if (json_field* f = take_target()) set(*f);
    return true;
  }

  using error_code = json::error_code;
  using sv = json::string_view;
  bool on_document_begin(error_code&) { return true; }
  bool on_document_end(error_code&) { return true; }
  bool on_object_begin(error_code&) { return open(true); }
  bool on_object_end(std::size_t n, error_code&) { return close(true, n); }
  bool on_array_begin(error_code&) { return open(false); }
  bool on_array_end(std::size_t n, error_code&) { return close(false, n); }
  bool on_key_part(sv s, std::size_t, error_code&) { return key_part(s); }
  bool on_key(sv s, std::size_t, error_code&) { return whole_key(s); }
  bool on_string_part(sv s, std::size_t, error_code&) { return string_part(s); }
  bool on_string(sv s, std::size_t, error_code&) { return whole_string(s); }
  bool on_number_part(sv, error_code&) { return true; }
  bool on_int64(std::int64_t i, sv, error_code&) {
    return value([&](json::value_stack& st) { st.push_int64(i); },
                 [&](json_field& f) { f.what = json_field::kind::int64, f.int64 = i; });
  }
  bool on_uint64(std::uint64_t u, sv, error_code&) {
    return value([&](json::value_stack& st) { st.push_uint64(u); },
                 [&](json_field& f) { f.what = json_field::kind::uint64, f.uint64 = u; });
  }
  bool on_double(double d, sv, error_code&) {
    return value([&](json::value_stack& st) { st.push_double(d); },
                 [&](json_field& f) { f.what = json_field::kind::double_, f.double_ = d; });
  }
  bool on_bool(bool b, error_code&) {
    return value([&](json::value_stack& st) { st.push_bool(b); },
                 [&](json_field& f) { f.what = json_field::kind::boolean, f.boolean = b; });
  }
  bool on_null(error_code&) {
    return value([&](json::value_stack& st) { st.push_null(); },
                 [&](json_field& f) { f.what = json_field::kind::null; });
  }
  bool on_comment_part(sv, error_code&) { return true; }
  bool on_comment(sv, error_code&) { return true; }
};

}  // namespace

struct kineto_event_reader::parser {
  json::basic_parser<event_handler> p{json::parse_options{}};
};

kineto_event_reader::kineto_event_reader() : parser_(std::make_unique<parser>()) {}
kineto_event_reader::~kineto_event_reader() = default;

bool kineto_event_reader::read(std::string_view text, kineto_event& e) {
  json::basic_parser<event_handler>& p = parser_->p;
  p.reset();
  p.handler().start(e);
  json::error_code ec;
  const std::size_t n = p.write_some(false, text.data(), text.size(), ec);
  return !ec && n == text.size() && p.handler().is_object;
}

namespace {

enum class tag : std::uint8_t { int64, uint64, double_, boolean, string, json, null };

void put_bytes(std::string& out, const void* p, std::size_t n) { out.append(static_cast<const char*>(p), n); }

void put_text(std::string& out, std::string_view s) {
  const auto n = static_cast<std::uint32_t>(s.size());
  put_bytes(out, &n, sizeof n);
  out.append(s);
}

void put_arg(std::string& out, std::string_view key, const json_field& v) {
  using kind = json_field::kind;
  put_text(out, key);
  const tag t = v.what == kind::int64     ? tag::int64
                : v.what == kind::uint64  ? tag::uint64
                : v.what == kind::double_ ? tag::double_
                : v.what == kind::boolean ? tag::boolean
                : v.what == kind::string  ? tag::string
                : v.what == kind::null    ? tag::null
                                          : tag::json;
  put_bytes(out, &t, 1);
  switch (t) {
    case tag::int64: return put_bytes(out, &v.int64, sizeof v.int64);
    case tag::uint64: return put_bytes(out, &v.uint64, sizeof v.uint64);
    case tag::double_: return put_bytes(out, &v.double_, sizeof v.double_);
    case tag::boolean: return put_bytes(out, &v.boolean, 1);
    case tag::null: return;
    case tag::string: case tag::json: return put_text(out, v.text);
  }
}

// Reads what put_* wrote, in order; the bytes were written by this process.
class record_cursor {
 public:
  explicit record_cursor(std::string_view bytes) : at_(bytes.data()) {}
  template <class T>
  T get() {
    T v;
    std::memcpy(&v, at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  std::string_view text() {
    const auto n = get<std::uint32_t>();
    const std::string_view s(at_, n);
    at_ += n;
    return s;
  }

 private:
  const char* at_;
};

}  // namespace

void write_record(const kineto_event& e, std::string& out) {
  put_text(out, e.name.string());
  put_text(out, e.cat.string());
  put_text(out, e.scope.string());
  put_text(out, e.id.serialized());
  const auto n = static_cast<std::uint32_t>(e.args_object ? e.arg_count : 0);
  put_bytes(out, &e.args_object, 1);
  put_bytes(out, &n, sizeof n);
  for (std::uint32_t i = 0; i < n; ++i) put_arg(out, e.args[i].first, e.args[i].second);
}

void kineto_record::read(std::string_view bytes) {
  record_cursor c(bytes);
  name = c.text();
  cat = c.text();
  scope = c.text();
  id = c.text();
  args_object = c.get<bool>();
  args.resize(c.get<std::uint32_t>());
  for (annotation& a : args) {
    a.name = c.text();
    switch (c.get<tag>()) {
      case tag::int64: a.value = c.get<std::int64_t>(); break;
      case tag::uint64: a.value = c.get<std::uint64_t>(); break;
      case tag::double_: a.value = c.get<double>(); break;
      case tag::boolean: a.value = c.get<bool>(); break;
      case tag::string: a.value = c.text(); break;
      case tag::json: a.value = json_value{c.text()}; break;
      case tag::null: a.value = json_value{"null"}; break;
    }
  }
}

bool is_null(const annotation& a) noexcept {
  const auto* j = std::get_if<json_value>(&a.value);
  return j && j->text == "null";
}

}  // namespace proftrace::detail
