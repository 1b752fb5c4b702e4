#include "stores/mapped_file.hpp"

#include <cerrno>
#include <cstring>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "messages/error.hpp"

namespace darcy::stores {

caf::expected<std::shared_ptr<const mapped_file>> mapped_file::open(const std::string& path) {
  auto fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    return make_error(errno == ENOENT ? errc::not_found : errc::io_error,
                      path + ": " + std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    auto why = std::string{std::strerror(errno)};
    ::close(fd);
    return make_error(errc::io_error, path + ": " + why);
  }
  auto size = static_cast<size_t>(st.st_size);
  void* data = nullptr;
  if (size > 0) {
    data = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
    if (data == MAP_FAILED) {
      auto why = std::string{std::strerror(errno)};
      ::close(fd);
      return make_error(errc::io_error, path + ": cannot map: " + why);
    }
  }
  ::close(fd); // the mapping keeps the file
  return std::shared_ptr<const mapped_file>{new mapped_file{path, data, size}};
}

mapped_file::~mapped_file() {
  if (size_ > 0)
    ::munmap(data_, size_);
}

} // namespace darcy::stores
