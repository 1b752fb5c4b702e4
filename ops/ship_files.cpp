#include "ops/ship_files.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>

#include <caf/send.hpp>

#include "actors/cluster/file_store.hpp"
#include "base/atomic_file.hpp"
#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "runtime/cluster/spawn_on.hpp"
#include "runtime/log.hpp"

namespace darcy::ops {

namespace fs = std::filesystem;

namespace {

/// A file store on each member of `nodes` that is up; stopped when this goes.
class file_stores {
public:
  ~file_stores() {
    for (auto& store : stores)
      caf::anon_send_exit(store, caf::exit_reason::user_shutdown);
  }

  caf::error start(session& s, const std::vector<std::string>& nodes) {
    auto status = s.status();
    if (!status)
      return std::move(status.error());
    auto targets = runtime::live_targets(*status, nodes);
    if (!targets)
      return std::move(targets.error());
    for (auto& target : *targets) {
      auto store = runtime::spawn_on(s.system(), target, s.timeout(), actors::file_store_name,
                                     caf::make_message());
      if (!store)
        return std::move(store.error());
      stores.push_back(caf::actor_cast<file_store_actor>(*store));
    }
    return {};
  }

  std::vector<file_store_actor> stores;
};

/// Asks `store` with `xs`, asking again after 250 ms, then after twice as long each time,
/// until `timeout` has passed: each request here is idempotent, so a lost message costs one
/// attempt.
template <class R, class... Ts>
caf::expected<R> ask_again(session& s, std::chrono::milliseconds timeout,
                           const file_store_actor& store, const Ts&... xs) {
  auto deadline = std::chrono::steady_clock::now() + timeout;
  caf::error last = make_error(errc::timeout, "file store: no answer");
  for (std::chrono::milliseconds attempt{250};; attempt *= 2) {
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(
      deadline - std::chrono::steady_clock::now());
    if (left.count() <= 0)
      return last;
    auto answer = runtime::ask<R>(s.system(), store, std::min(attempt, left), xs...);
    if (answer)
      return answer;
    last = std::move(answer.error());
    if (last != caf::sec::request_timeout)
      return last;
  }
}

/// Has `store` remove the checkpoint folders under `root` that this host no longer has; logs
/// why it could not.
void prune(session& s, const file_store_actor& store, const std::string& root) {
  if (root.empty())
    return;
  // The member's folders first, this host's after: a folder written meanwhile (here first, or
  // on a host sharing this disk) is in neither list or in both, and a folder removed here never
  // comes back (checkpoint ids are not reused).
  auto there = ask_again<std::vector<std::string>>(s, s.timeout(), store, prune_atom::value, root);
  std::vector<std::string> gone;
  if (there)
    for (auto& name : *there) {
      std::error_code ec;
      if (!fs::exists(fs::path{root} / name, ec) && !ec)
        gone.push_back(name);
    }
  auto removed = there && !gone.empty()
                   ? ask_again<uint64_t>(s, s.timeout(), store, prune_atom::value, root, gone)
                   : caf::expected<uint64_t>{uint64_t{0}};
  if (!there || !removed)
    runtime::log_warn("checkpoints: a shard host keeps folders of {} this host removed: {}", root,
                      render(there ? removed.error() : there.error()));
}

} // namespace

std::vector<std::string> files_under(const std::string& dir, const std::vector<std::string>& skip) {
  std::vector<std::string> out;
  std::error_code ec;
  auto root = fs::absolute(dir, ec);
  if (ec || !fs::is_directory(root, ec))
    return out;
  for (auto it = fs::recursive_directory_iterator(root, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it.depth() == 0 && it->is_directory(ec) &&
        std::find(skip.begin(), skip.end(), it->path().filename().string()) != skip.end()) {
      it.disable_recursion_pending();
      continue;
    }
    if (it->is_regular_file(ec))
      out.push_back(it->path().string());
  }
  std::sort(out.begin(), out.end());
  return out;
}

caf::error ship_files(session& s, const std::vector<std::string>& nodes,
                      const std::vector<std::string>& files,
                      std::optional<std::chrono::milliseconds> timeout,
                      const std::string& mirrored) {
  auto patience = timeout.value_or(s.timeout());
  if (s.in_process() || files.empty())
    return {};
  std::vector<file_info> sized;
  for (auto& file : files) {
    std::error_code ec;
    auto bytes = fs::file_size(file, ec);
    if (ec)
      return make_error(errc::not_found, "ship files: " + file + ": " + ec.message());
    sized.push_back({file, 0, 0, bytes});
  }
  file_stores on;
  if (auto err = on.start(s, nodes))
    return err;
  for (auto& store : on.stores) {
    auto missing =
      ask_again<std::vector<std::string>>(s, patience, store, stats_atom::value, sized);
    if (!missing)
      return std::move(missing.error());
    for (auto& file : *missing) {
      auto bytes = base::read_file(file);
      if (!bytes)
        return std::move(bytes.error());
      if (auto ok = ask_again<ok_atom>(s, patience, store, write_atom::value, file, *bytes); !ok)
        return std::move(ok.error());
    }
    prune(s, store, mirrored);
  }
  return {};
}

caf::error fetch_files(session& s, const std::vector<std::string>& nodes,
                       const std::vector<file_info>& files, const std::string& mirrored) {
  if (s.in_process())
    return {};
  std::vector<file_info> lacking;
  for (auto& f : files) {
    std::error_code ec;
    if (fs::file_size(f.path, ec) != f.bytes || ec)
      lacking.push_back(f);
  }
  if (lacking.empty())
    return {};
  file_stores on;
  if (auto err = on.start(s, nodes))
    return err;
  for (auto& f : lacking) {
    caf::error why = make_error(errc::not_found, "fetch files: no member has " + f.path);
    bool fetched = false;
    for (auto& store : on.stores) {
      auto bytes = ask_again<std::string>(s, s.timeout(), store, fetch_atom::value, f.path);
      if (!bytes) {
        if (!is(bytes.error(), errc::not_found))
          why = std::move(bytes.error());
        continue;
      }
      std::error_code ec;
      fs::create_directories(fs::path{f.path}.parent_path(), ec);
      if (auto err = base::write_file_atomically(f.path, *bytes))
        return err;
      fetched = true;
      break;
    }
    if (!fetched)
      return why;
  }
  for (auto& store : on.stores)
    prune(s, store, mirrored);
  return {};
}

} // namespace darcy::ops
