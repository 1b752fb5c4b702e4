#include "stores/embedding/leveldb_env.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <memory>
#include <string>
#include <utility>

#include "stores/embedding/background_priority.hpp"

namespace darcy::stores {

namespace {

class pread_file : public leveldb::RandomAccessFile {
public:
  pread_file(std::string name, int fd) : name_(std::move(name)), fd_(fd) {}
  ~pread_file() override { ::close(fd_); }

  leveldb::Status Read(uint64_t offset, size_t n, leveldb::Slice* result,
                       char* scratch) const override {
    size_t done = 0;
    while (done < n) {
      auto got = ::pread(fd_, scratch + done, n - done, static_cast<off_t>(offset + done));
      if (got < 0 && errno == EINTR)
        continue;
      if (got < 0) {
        *result = leveldb::Slice(scratch, done);
        return leveldb::Status::IOError(name_, std::strerror(errno));
      }
      if (got == 0)
        break;
      done += static_cast<size_t>(got);
    }
    *result = leveldb::Slice(scratch, done);
    return leveldb::Status::OK();
  }

private:
  std::string name_;
  int fd_;
};

class pread_env : public leveldb::EnvWrapper {
public:
  pread_env() : EnvWrapper(leveldb::Env::Default()) {}

  leveldb::Status NewRandomAccessFile(const std::string& name,
                                      leveldb::RandomAccessFile** result) override {
    int fd = ::open(name.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) {
      *result = nullptr;
      return errno == ENOENT ? leveldb::Status::NotFound(name, std::strerror(errno))
                             : leveldb::Status::IOError(name, std::strerror(errno));
    }
    *result = new pread_file(name, fd);
    return leveldb::Status::OK();
  }

  /// LevelDB's compaction thread takes the tier's background priority at its first job.
  void Schedule(void (*function)(void*), void* arg) override {
    auto* job = new scheduled{function, arg};
    target()->Schedule(
      [](void* p) {
        std::unique_ptr<scheduled> job{static_cast<scheduled*>(p)};
        thread_local bool lowered = false;
        if (!std::exchange(lowered, true))
          lower_thread_priority();
        job->function(job->arg);
      },
      job);
  }

private:
  struct scheduled {
    void (*function)(void*);
    void* arg;
  };
};

} // namespace

leveldb::Env* leveldb_env() {
  static leveldb::Env* const env = [] {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
      limit.rlim_cur = limit.rlim_max;
      ::setrlimit(RLIMIT_NOFILE, &limit);
    }
    return new pread_env;
  }();
  return env;
}

} // namespace darcy::stores
