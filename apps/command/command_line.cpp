#include "apps/command/command_line.hpp"

#include <malloc.h>

#include <iostream>
#include <new>

#include "messages/error.hpp"
#include "runtime/log.hpp"

namespace darcy::apps {

namespace {

std::string& program() {
  static std::string name = "darcy";
  return name;
}

} // namespace

void set_program_name(std::string name) {
  program() = std::move(name);
}

const std::string& program_name() {
  return program();
}

int fail(const std::string& message) {
  std::cerr << program() << ": error: " << message << std::endl;
  return 1;
}

int fail(const std::string& what, const caf::error& err) {
  auto prefix = what + ": ";
  auto context = context_of(err);
  if (err.category() == errc_category && context.rfind(prefix, 0) == 0)
    return fail(prefix +
                render(make_error(static_cast<errc>(err.code()), context.substr(prefix.size()))));
  return fail(prefix + render(err));
}

void keep_large_blocks_in_the_heap() {
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
}

void add_log_level_option(CLI::App& app) {
  static std::string log_level{runtime::default_log_level};
  app.add_option("--log-level", log_level, "Least severe log message shown")
    ->envname("DARCY_LOG_LEVEL")
    ->check(CLI::IsMember(runtime::log_level_names()))
    ->each([](const std::string& level) { runtime::set_log_level(level); });
}

int run_command_line(CLI::App& app, int argc, char** argv, const int& exit_code) {
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << program() << ": error: " << e.what() << " (see " << program() << " --help)"
              << std::endl;
    return 2;
  } catch (const std::bad_alloc&) {
    // Commands bound what they allocate; this is the last line of defence.
    return fail("out of memory: the machine cannot hold what this run asks for");
  } catch (const std::exception& e) {
    // A command's own failures are caf::errors; whatever a library throws becomes one line too.
    return fail(std::string{"unexpected failure: "} + e.what());
  }
  return exit_code;
}

} // namespace darcy::apps
