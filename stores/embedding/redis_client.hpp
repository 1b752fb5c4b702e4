// A blocking Redis connection for the Redis store (hiredis underneath): pipelines of binary-safe
// commands, one reconnect and resend when the connection breaks, and notice when the Redis it
// reaches again is another instance (a restart). Not thread-safe: one store owns each client.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <caf/error.hpp>
#include <caf/expected.hpp>

struct redisContext;

namespace darcy::stores {

/// Where a Redis embedding lives: `redis://HOST:PORT[/PREFIX][/shard-N]`. Rows are keys
/// `PREFIX:NAME:r:KEY` (PREFIX defaults to "darcy"); shard N lists the rows it owns in the set
/// `PREFIX:NAME:index:shard-N`, so rows are found by key alone, whoever wrote them.
struct redis_location {
  std::string host;
  uint16_t port = 6379;
  std::string prefix = "darcy";
  std::optional<uint32_t> shard;

  std::string address() const { return host + ":" + std::to_string(port); }
};

/// errc::invalid_config, naming `url`, when it is not of the form above.
caf::expected<redis_location> parse_redis_location(const std::string& url);

/// One reply. Error replies are kind::error with the message in `str`.
struct redis_reply {
  enum class kind : uint8_t { nil, string, integer, array, status, error };
  kind type = kind::nil;
  std::string str;
  long long integer = 0;
  std::vector<redis_reply> elements;
};

/// A command's arguments, binary-safe: {"MGET", key1, key2, ...}.
using redis_command = std::vector<std::string>;

class redis_client {
public:
  /// errc::io_error naming the address when Redis does not answer within `timeout`.
  static caf::expected<std::unique_ptr<redis_client>> connect(const redis_location& where,
                                                              std::chrono::milliseconds timeout);
  ~redis_client();

  /// Sends `commands` in one pipeline and answers one reply per command, in order. When the
  /// connection breaks on the way, the client connects again and sends the whole pipeline
  /// once more, so every command must be idempotent (GET, MGET, SET, MSET, SADD, DEL...).
  /// Replies of a broken connection are never used. errc::io_error naming the address when
  /// Redis stays unreachable.
  caf::expected<std::vector<redis_reply>> run(const std::vector<redis_command>& commands);

  /// One command; its error reply becomes errc::io_error.
  caf::expected<redis_reply> call(const redis_command& command);

  /// How often the client reached a Redis with another run id than the one before: a restart.
  uint64_t restarts() const { return restarts_; }
  const std::string& address() const { return address_; }

private:
  redis_client(redis_location where, std::chrono::milliseconds timeout);
  caf::error open();
  caf::expected<std::vector<redis_reply>> send(const std::vector<redis_command>& commands);

  redis_location where_;
  std::string address_;
  std::chrono::milliseconds timeout_;
  redisContext* context_ = nullptr;
  std::string run_id_;
  uint64_t restarts_ = 0;
};

} // namespace darcy::stores
