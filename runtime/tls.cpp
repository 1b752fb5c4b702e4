#include "runtime/tls.hpp"

#include <atomic>
#include <fstream>
#include <mutex>

#include <dlfcn.h>

#include <openssl/err.h>
#include <openssl/ssl.h>
#include <caf/openssl/manager.hpp>

#include "messages/error.hpp"

namespace darcy::runtime {

namespace {

std::optional<tls_files>& tls_slot() {
  static std::optional<tls_files> files;
  return files;
}

struct handshake_failures {
  std::atomic<uint64_t> count{0};
  std::mutex mtx;
  std::string last;
};

handshake_failures& client_failures() {
  static handshake_failures failures;
  return failures;
}

/// Called by the SSL wrappers below after each of their calls: counts a failed handshake that
/// this process began.
void note_tls_call(SSL* ssl, int result) {
  if (result > 0 || SSL_is_server(ssl) || SSL_is_init_finished(ssl) ||
      SSL_get_error(ssl, result) != SSL_ERROR_SSL)
    return;
  auto code = ERR_peek_error();
  auto* reason = code != 0 ? ERR_reason_error_string(code) : nullptr;
  auto& f = client_failures();
  {
    std::lock_guard guard{f.mtx};
    f.last = reason != nullptr ? reason : "no reason given";
  }
  f.count.fetch_add(1);
}

} // namespace

uint64_t tls_client_handshake_failures() {
  return client_failures().count.load();
}

std::string last_tls_client_handshake_failure() {
  auto& f = client_failures();
  std::lock_guard guard{f.mtx};
  return f.last;
}

caf::expected<tls_files> read_tls_dir(const std::string& dir) {
  tls_files files{dir, dir + "/ca.pem", dir + "/node.pem", dir + "/node.key"};
  for (auto* path : {&files.ca, &files.certificate, &files.key}) {
    std::ifstream in{*path};
    if (!in)
      return make_error(errc::invalid_config,
                        "TLS: cannot read " + *path +
                          " (a TLS directory holds ca.pem, node.pem and node.key; "
                          "scripts/make_tls.sh makes one)");
  }
  return files;
}

void set_process_tls(std::optional<tls_files> files) {
  tls_slot() = std::move(files);
}

const std::optional<tls_files>& process_tls() {
  return tls_slot();
}

void configure_tls(caf::actor_system_config& cfg) {
  auto& files = process_tls();
  if (!files)
    return;
  cfg.load<caf::openssl::manager>();
  cfg.openssl_cafile = files->ca;
  cfg.openssl_certificate = files->certificate;
  cfg.openssl_key = files->key;
}

caf::io::middleman_actor connection_manager(caf::actor_system& sys) {
  if (sys.has_openssl_manager())
    return sys.openssl_manager().actor_handle();
  return sys.middleman().actor_handle();
}

} // namespace darcy::runtime

// CAF 0.17's OpenSSL sessions read SSL_get_error after each SSL call without emptying the
// thread's error queue first, as OpenSSL requires, and never empty it on failure. One peer's
// failure (a client that exits without close_notify, a peer without a valid certificate)
// then leaves an entry that the next call on any other connection of the multiplexer reads as
// its own, and CAF closes that healthy connection. These definitions take the place of
// libssl's for CAF (the executable's symbols come first), empty the queue, and call libssl's.
// They also count the handshakes this process began that failed (tls_client_handshake_failures).
namespace {

template <class Fn>
Fn next_definition(const char* name) {
  return reinterpret_cast<Fn>(dlsym(RTLD_NEXT, name));
}

} // namespace

extern "C" {

int SSL_read(SSL* ssl, void* buf, int num) {
  static auto real = next_definition<int (*)(SSL*, void*, int)>("SSL_read");
  ERR_clear_error();
  auto r = real(ssl, buf, num);
  darcy::runtime::note_tls_call(ssl, r);
  return r;
}

int SSL_write(SSL* ssl, const void* buf, int num) {
  static auto real = next_definition<int (*)(SSL*, const void*, int)>("SSL_write");
  ERR_clear_error();
  auto r = real(ssl, buf, num);
  darcy::runtime::note_tls_call(ssl, r);
  return r;
}

int SSL_connect(SSL* ssl) {
  static auto real = next_definition<int (*)(SSL*)>("SSL_connect");
  ERR_clear_error();
  auto r = real(ssl);
  darcy::runtime::note_tls_call(ssl, r);
  return r;
}

int SSL_accept(SSL* ssl) {
  static auto real = next_definition<int (*)(SSL*)>("SSL_accept");
  ERR_clear_error();
  return real(ssl);
}

} // extern "C"
