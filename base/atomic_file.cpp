#include "base/atomic_file.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>
#include <filesystem>

#include "messages/error.hpp"

namespace darcy::base {

namespace {

caf::error sys_error(const std::string& what, const std::string& path) {
  return make_error(errc::io_error, what + " " + path + ": " + std::strerror(errno));
}

// Fsyncs the directory holding `path`, so that a rename survives power loss.
void sync_parent(const std::string& path) {
  auto dir = std::filesystem::path{path}.parent_path();
  int fd = ::open(dir.empty() ? "." : dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

} // namespace

caf::error write_file_atomically(const std::string& path, std::string_view content, bool durable) {
  auto tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return sys_error("cannot create", tmp);
  const char* data = content.data();
  size_t left = content.size();
  while (left > 0) {
    auto n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      auto err = sys_error("cannot write", tmp);
      ::close(fd);
      ::unlink(tmp.c_str());
      return err;
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  if ((durable && ::fsync(fd) != 0) || ::close(fd) != 0) {
    auto err = sys_error("cannot flush", tmp);
    ::unlink(tmp.c_str());
    return err;
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    auto err = sys_error("cannot rename onto", path);
    ::unlink(tmp.c_str());
    return err;
  }
  if (durable)
    sync_parent(path);
  return {};
}

caf::expected<std::string> read_file(const std::string& path) {
  int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    if (errno == ENOENT)
      return make_error(errc::not_found, path);
    return sys_error("cannot open", path);
  }
  std::string result;
  char buffer[1 << 16];
  for (;;) {
    auto n = ::read(fd, buffer, sizeof(buffer));
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      auto err = sys_error("cannot read", path);
      ::close(fd);
      return err;
    }
    if (n == 0)
      break;
    result.append(buffer, static_cast<size_t>(n));
  }
  ::close(fd);
  return result;
}

} // namespace darcy::base
