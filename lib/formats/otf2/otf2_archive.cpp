#include "otf2_archive.hpp"

#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>
#include <system_error>

namespace proftrace {
inline namespace PROFTRACE_ABI_NAMESPACE {
namespace detail {

namespace {

// Every full chunk goes to its file: memory holds one chunk per location.
OTF2_FlushType flush_always(void*, OTF2_FileType, OTF2_LocationRef, void*, bool) { return OTF2_FLUSH; }
const OTF2_FlushCallbacks flush_callbacks{flush_always, nullptr};

constexpr std::uint64_t event_chunk_bytes = std::uint64_t{1} << 20;
constexpr std::uint64_t definition_chunk_bytes = std::uint64_t{4} << 20;

std::filesystem::path directory_of(const std::filesystem::path& anchor) {
  return anchor.has_parent_path() ? anchor.parent_path() : std::filesystem::path(".");
}

}  // namespace

otf2_archive::otf2_archive(const std::filesystem::path& anchor) : anchor_(anchor), name_(anchor.stem().string()) {
  const std::filesystem::path dir = directory_of(anchor);
  scratch_ = dir / ("." + anchor.filename().string() + ".writing-" + std::to_string(::getpid()));
  std::error_code ec;
  std::filesystem::remove_all(scratch_, ec);
  if (!std::filesystem::create_directory(scratch_, ec) || ec)
    throw std::runtime_error("proftrace: cannot write '" + anchor.string() + "': " +
                             (ec ? ec.message() : std::string("cannot make ") + scratch_.string()));
  archive_ = OTF2_Archive_Open(scratch_.c_str(), name_.c_str(), OTF2_FILEMODE_WRITE, event_chunk_bytes,
                               definition_chunk_bytes, OTF2_SUBSTRATE_POSIX, OTF2_COMPRESSION_NONE);
  if (archive_ == nullptr) {
    discard_scratch();
    throw std::runtime_error("proftrace: cannot write '" + anchor.string() + "': libotf2 cannot open the archive");
  }
  check(OTF2_Archive_SetFlushCallbacks(archive_, &flush_callbacks, nullptr), "its flush callbacks");
  check(OTF2_Archive_SetSerialCollectiveCallbacks(archive_), "its collective callbacks");
  check(OTF2_Archive_SetCreator(archive_, "proftrace"), "its creator");
  check(OTF2_Archive_OpenEvtFiles(archive_), "its event files");
}

otf2_archive::~otf2_archive() {
  if (archive_ != nullptr) OTF2_Archive_Close(archive_);
  discard_scratch();
}

void otf2_archive::check(OTF2_ErrorCode status, const char* what) const {
  if (status == OTF2_SUCCESS) return;
  throw std::runtime_error("proftrace: cannot write '" + anchor_.string() + "': libotf2 failed on " + what + ": " +
                           OTF2_Error_GetDescription(status));
}

OTF2_EvtWriter* otf2_archive::events(std::uint64_t location) {
  const auto [it, fresh] = writers_.try_emplace(location, nullptr);
  if (fresh) {
    it->second = OTF2_Archive_GetEvtWriter(archive_, location);
    if (it->second == nullptr) check(OTF2_ERROR_INVALID, "an event writer");
  }
  return it->second;
}

void otf2_archive::close_events(const std::vector<std::uint64_t>& locations) {
  for (const std::uint64_t location : locations) events(location);  // readers open every location's event file
  for (const auto& [location, writer] : writers_) check(OTF2_Archive_CloseEvtWriter(archive_, writer), "closing events");
  writers_.clear();
  check(OTF2_Archive_CloseEvtFiles(archive_), "closing the event files");
  check(OTF2_Archive_OpenDefFiles(archive_), "the definition files");
  for (const std::uint64_t location : locations) {
    OTF2_DefWriter* local = OTF2_Archive_GetDefWriter(archive_, location);
    if (local == nullptr) check(OTF2_ERROR_INVALID, "a local definition writer");
    check(OTF2_Archive_CloseDefWriter(archive_, local), "closing local definitions");
  }
  check(OTF2_Archive_CloseDefFiles(archive_), "closing the definition files");
}

OTF2_GlobalDefWriter* otf2_archive::definitions() {
  OTF2_GlobalDefWriter* w = OTF2_Archive_GetGlobalDefWriter(archive_);
  if (w == nullptr) check(OTF2_ERROR_INVALID, "the global definition writer");
  return w;
}

void otf2_archive::close_archive() {
  OTF2_Archive* a = archive_;
  archive_ = nullptr;
  check(OTF2_Archive_Close(a), "closing the archive");
}

void otf2_archive::commit() {
  close_archive();
  const std::filesystem::path dir = directory_of(anchor_);
  for (const std::string& part : {name_ + ".otf2", name_ + ".def", name_}) {
    std::error_code ec;
    std::filesystem::remove_all(dir / part, ec);
    std::filesystem::rename(scratch_ / part, dir / part, ec);
    if (ec) throw std::runtime_error("proftrace: cannot write '" + (dir / part).string() + "': " + ec.message());
  }
  discard_scratch();
}

void otf2_archive::discard_scratch() noexcept {
  std::error_code ec;
  std::filesystem::remove_all(scratch_, ec);
}

}  // namespace detail
}  // namespace PROFTRACE_ABI_NAMESPACE
}  // namespace proftrace
