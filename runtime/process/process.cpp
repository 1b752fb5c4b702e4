#include "runtime/process/process.hpp"

#include <fcntl.h>
#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <csignal>
#include <cstring>
#include <filesystem>

#include "messages/error.hpp"

namespace darcy::runtime {

namespace {

using clock = std::chrono::steady_clock;

caf::error sys_error(const std::string& what) {
  return make_error(errc::io_error, what + ": " + std::strerror(errno));
}

int exit_code(int status) {
  if (WIFEXITED(status))
    return WEXITSTATUS(status);
  if (WIFSIGNALED(status))
    return 128 + WTERMSIG(status);
  return -1;
}

} // namespace

caf::expected<child_process> child_process::start(const std::vector<std::string>& argv) {
  if (argv.empty())
    return make_error(errc::invalid_argument, "no program to start");
  int out[2];
  int err[2];
  if (::pipe2(out, O_CLOEXEC) != 0)
    return sys_error("pipe");
  if (::pipe2(err, O_CLOEXEC) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    return sys_error("pipe");
  }
  std::vector<char*> args;
  for (auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0)
    return sys_error("fork");
  if (pid == 0) {
    ::dup2(out[1], STDOUT_FILENO);
    ::dup2(err[1], STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(out[1]);
  ::close(err[1]);
  ::fcntl(err[0], F_SETFL, O_NONBLOCK);
  child_process result;
  result.pid_ = pid;
  result.out_ = out[0];
  result.err_ = err[0];
  return result;
}

caf::expected<pid_t> start_detached(const std::vector<std::string>& argv, const std::string& log) {
  if (argv.empty())
    return make_error(errc::invalid_argument, "no program to start");
  int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0)
    return sys_error("open " + log);
  std::vector<char*> args;
  for (auto& a : argv)
    args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fd);
    return sys_error("fork");
  }
  if (pid == 0) {
    ::setsid();
    int null = ::open("/dev/null", O_RDONLY);
    ::dup2(null, STDIN_FILENO);
    ::dup2(fd, STDOUT_FILENO);
    ::dup2(fd, STDERR_FILENO);
    sigset_t none;
    sigemptyset(&none);
    ::sigprocmask(SIG_SETMASK, &none, nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  ::close(fd);
  return pid;
}

child_process::child_process(child_process&& other) noexcept {
  *this = std::move(other);
}

child_process& child_process::operator=(child_process&& other) noexcept {
  std::swap(pid_, other.pid_);
  std::swap(out_, other.out_);
  std::swap(err_, other.err_);
  std::swap(out_buffer_, other.out_buffer_);
  std::swap(out_transcript_, other.out_transcript_);
  std::swap(err_buffer_, other.err_buffer_);
  std::swap(status_, other.status_);
  return *this;
}

child_process::~child_process() {
  if (pid_ > 0 && !status_) {
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
  }
  close_fds();
}

void child_process::close_fds() {
  if (out_ >= 0)
    ::close(out_);
  if (err_ >= 0)
    ::close(err_);
  out_ = err_ = -1;
}

caf::expected<std::string> child_process::wait_for_line(const std::string& needle,
                                                        std::chrono::milliseconds timeout) {
  auto deadline = clock::now() + timeout;
  for (;;) {
    for (auto nl = out_buffer_.find('\n'); nl != std::string::npos; nl = out_buffer_.find('\n')) {
      auto line = out_buffer_.substr(0, nl);
      out_buffer_.erase(0, nl + 1);
      if (line.find(needle) != std::string::npos)
        return line;
    }
    auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - clock::now());
    if (left.count() <= 0)
      return make_error(errc::timeout, "no line with '" + needle + "' from pid " +
                                         std::to_string(pid_) + "; stderr: " + read_stderr());
    pollfd fd{out_, POLLIN, 0};
    int ready = ::poll(&fd, 1, static_cast<int>(left.count()));
    if (ready < 0 && errno == EINTR)
      continue;
    if (ready <= 0)
      continue;
    char buffer[4096];
    auto n = ::read(out_, buffer, sizeof(buffer));
    if (n <= 0)
      return make_error(errc::io_error,
                        "pid " + std::to_string(pid_) + " closed stdout; stderr: " + read_stderr());
    out_buffer_.append(buffer, static_cast<size_t>(n));
    out_transcript_.append(buffer, static_cast<size_t>(n));
  }
}

void child_process::signal(int sig) const {
  if (pid_ > 0 && !status_)
    ::kill(pid_, sig);
}

caf::expected<int> child_process::wait(std::chrono::milliseconds timeout) {
  if (status_)
    return exit_code(*status_);
  auto deadline = clock::now() + timeout;
  for (;;) {
    int status = 0;
    auto r = ::waitpid(pid_, &status, WNOHANG);
    if (r == pid_) {
      status_ = status;
      return exit_code(status);
    }
    if (r < 0)
      return sys_error("waitpid");
    if (clock::now() >= deadline)
      return make_error(errc::timeout, "pid " + std::to_string(pid_) + " still running");
    // Block on stderr (closed when the child exits) instead of spinning.
    pollfd fd{err_, POLLIN, 0};
    if (::poll(&fd, 1, 10) > 0) {
      read_stderr();
      if (fd.revents & POLLHUP)
        ::poll(nullptr, 0, 10);
    }
  }
}

std::string child_process::read_stderr() {
  char buffer[4096];
  for (;;) {
    auto n = ::read(err_, buffer, sizeof(buffer));
    if (n <= 0)
      break;
    err_buffer_.append(buffer, static_cast<size_t>(n));
  }
  return err_buffer_;
}

std::string self_executable() {
  char buffer[4096];
  auto n = ::readlink("/proc/self/exe", buffer, sizeof(buffer) - 1);
  if (n <= 0)
    return {};
  return std::string(buffer, static_cast<size_t>(n));
}

std::string sibling_executable(const std::string& name) {
  auto self = self_executable();
  if (self.empty())
    return {};
  return (std::filesystem::path{self}.parent_path() / name).string();
}

caf::expected<launched_node> launch_node(const std::vector<std::string>& argv,
                                         std::chrono::milliseconds timeout) {
  auto child = child_process::start(argv);
  if (!child)
    return std::move(child.error());
  auto line = child->wait_for_line("listening on", timeout);
  if (!line)
    return std::move(line.error());
  auto address = parse_host_port(line->substr(line->rfind(' ') + 1));
  if (!address)
    return make_error(errc::io_error, "unexpected node output: " + *line);
  return launched_node{std::move(*child), *address};
}

} // namespace darcy::runtime
