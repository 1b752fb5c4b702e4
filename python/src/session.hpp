// A Darcy session as Python holds it: an ops::session (an in-process service, or a client of a
// cluster) shared by the tables made from it. close() ends it once the calls in flight return;
// every later call raises darcy.Unavailable. Calls run with the GIL released.
#pragma once

#include <memory>
#include <mutex>
#include <shared_mutex>
#include <string>

#include <pybind11/pybind11.h>

#include "ops/session.hpp"
#include "python/src/errors.hpp"
#include "runtime/thread_systems.hpp"

namespace darcy::python {

class session_handle {
public:
  /// `store`: where tables keep their rows unless they name their own ("memory",
  /// "leveldb:DIR", "redis://HOST:PORT").
  session_handle(std::unique_ptr<ops::session> session, std::string store)
    : session_(std::move(session)), store_(std::move(store)) {}

  ~session_handle();

  /// f(ops::session&) with the GIL released and the session held open. Must be called with
  /// the GIL held; throws python_error (errc::unavailable) once the session is closed. The
  /// calling thread keeps nothing of the session's actor system afterwards, so that closing
  /// the session on another thread never waits for it.
  template <class F>
  auto run(F&& f) {
    struct let_go {
      ~let_go() { runtime::let_go_of_actor_systems(); }
    } after;
    pybind11::gil_scoped_release release;
    std::shared_lock<std::shared_mutex> lock{gate_};
    if (!session_)
      raise(errc::unavailable, "the session is closed");
    return f(*session_);
  }

  /// Waits for the calls in flight, then stops the session (its in-process service with it).
  void close();
  bool closed();
  bool in_process();
  const std::string& store() const { return store_; }

private:
  std::shared_mutex gate_;
  std::unique_ptr<ops::session> session_;
  std::string store_;
};

/// An in-process service of `shards` shards. errc::invalid_argument for a bad store or shard
/// count.
std::shared_ptr<session_handle> open_local(size_t shards, const std::string& store,
                                           int64_t timeout_ms);

/// A client of the cluster whose seed is `seed` (HOST:PORT, or a cluster file or its
/// directory), presenting the secret in `secret_file` and using the TLS files in `tls_dir`
/// when given (both process-wide, as the CLI's --secret-file and --tls-dir). With a
/// `checkpoint_dir` (readable by every node) the shards run under a supervisor in this
/// process: a shard whose node dies starts again elsewhere, refilled from the newest
/// checkpoint saved there. With a `service`, the session starts no service of its own: it
/// uses the one a node hosts under that name (`darcy node --embedding-service`), which
/// other sessions share; `shards` and `checkpoint_dir` are then the host's, and giving a
/// checkpoint_dir is errc::invalid_argument.
std::shared_ptr<session_handle> open_cluster(const std::string& seed,
                                             const std::string& secret_file,
                                             const std::string& tls_dir, int64_t timeout_ms,
                                             size_t shards, const std::string& checkpoint_dir,
                                             const std::string& service);

void bind_session(pybind11::module_& m);

} // namespace darcy::python
