#include "base/event_log.hpp"

#include <fcntl.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include "messages/error.hpp"

namespace darcy::base {

caf::error append_line(const std::string& path, std::string_view line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return make_error(errc::io_error, "cannot open " + path + ": " + std::strerror(errno));
  std::string text{line};
  text += '\n';
  const char* data = text.data();
  size_t left = text.size();
  caf::error result;
  while (left > 0) {
    auto n = ::write(fd, data, left);
    if (n < 0 && errno == EINTR)
      continue;
    if (n < 0) {
      result = make_error(errc::io_error, "cannot append to " + path + ": " + std::strerror(errno));
      break;
    }
    data += n;
    left -= static_cast<size_t>(n);
  }
  ::close(fd);
  return result;
}

} // namespace darcy::base
