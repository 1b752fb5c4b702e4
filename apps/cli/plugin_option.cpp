#include "apps/cli/plugin_option.hpp"

#include <iostream>

#include "apps/command/command_line.hpp"
#include "messages/error.hpp"
#include "ops/load_plugin.hpp"

namespace darcy::apps {

void add_plugin_option(CLI::App* cmd, std::vector<std::string>& paths) {
  cmd
    ->add_option("--plugin", paths,
                 "A shared library of update rules to load first (repeatable): tables may then "
                 "name its rules")
    ->envname("DARCY_PLUGIN");
}

int load_plugins(const std::vector<std::string>& paths, const std::string& command) {
  for (auto& path : paths) {
    auto names = ops::load_plugin(path);
    if (!names)
      return fail(command + ": --plugin " + path + ": " + render(names.error()));
    std::string list;
    for (auto& name : *names)
      list += (list.empty() ? "" : ", ") + name;
    std::cerr << "darcy " << command << ": rules " << list << " from " << path << std::endl;
  }
  return 0;
}

} // namespace darcy::apps
