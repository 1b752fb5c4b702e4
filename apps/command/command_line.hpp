// What the command lines of `darcy` and `darcy-bench` share: one-line errors naming the program
// and the command, options that take one of a few names, and the parse that turns every
// exception at this program edge into one of those lines.
//
//   CLI::App app{"..."};
//   int exit_code = 0;
//   add_my_command(app, exit_code);          // callbacks set exit_code, or return fail(...)
//   return run_command_line(app, argc, argv, exit_code);
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>
#include <caf/error.hpp>

namespace darcy::apps {

/// The program error lines name: "darcy" until a main sets another. Not thread-safe: set it
/// before any command runs.
void set_program_name(std::string name);
const std::string& program_name();

/// Prints "PROGRAM: error: MESSAGE" on one line to stderr and returns 1.
int fail(const std::string& message);

/// Prints "PROGRAM: error: WHAT: ERROR" and returns 1. A darcy error whose context already
/// begins with "WHAT: " (the ops layer names its operation too) does not name it twice.
int fail(const std::string& what, const caf::error& err);

/// Keeps large blocks in the heap: training moves batches of several MiB between threads every
/// few milliseconds, and mapping and unmapping each costs a page fault per 4 KiB. Call first.
void keep_large_blocks_in_the_heap();

/// Adds --log-level (DARCY_LOG_LEVEL) to `app`, a top-level option that may also follow the
/// subcommand.
void add_log_level_option(CLI::App& app);

/// Parses argv into `app` (whose callbacks run the command) and returns the exit code: the
/// command's `exit_code`; 2 for what the parser refuses (one line, pointing at --help); 1 with
/// one line for any exception a command lets through. Never throws.
int run_command_line(CLI::App& app, int argc, char** argv, const int& exit_code);

/// Adds an option that takes one of `choices` by name. --help lists the names and shows the
/// current value of `value` as the default.
template <class T>
CLI::Option* add_choice(CLI::App* cmd, const std::string& flag, T& value,
                        const std::vector<std::pair<std::string, T>>& choices,
                        const std::string& help) {
  std::map<std::string, T> by_name(choices.begin(), choices.end());
  std::string names;
  std::string current;
  for (auto& [name, x] : choices) {
    names += (names.empty() ? "" : ", ") + name;
    if (x == value)
      current = name;
  }
  return cmd->add_option(flag, value, help)
    ->transform(CLI::CheckedTransformer(by_name).description("one of {" + names + "}"))
    ->default_str(current);
}

} // namespace darcy::apps
