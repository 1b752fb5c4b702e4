// Test helper process: builds the checkpoint drill service, then forever trains one step and
// saves a checkpoint, printing "saving N" before and "saved N" after each save, so that a test
// can SIGKILL it in the middle of a save. Usage: darcy_checkpoint_writer DIR ROWS
#include <iostream>

#include "messages/error.hpp"
#include "runtime/ask.hpp"
#include "runtime/system_config.hpp"
#include "tests/support/checkpoint_drill.hpp"

int main(int argc, char** argv) {
  if (argc != 3) {
    std::cerr << "usage: darcy_checkpoint_writer DIR ROWS" << std::endl;
    return 2;
  }
  std::string dir = argv[1];
  int rows = std::stoi(argv[2]);
  darcy::runtime::system_config cfg{"writer", 2};
  caf::actor_system sys{cfg};
  sys.await_actors_before_shutdown(false);
  auto master = darcy::test::start_drill_service(sys, 2);
  if (auto err = darcy::test::drill_setup(sys, master, rows)) {
    std::cerr << darcy::render(err) << std::endl;
    return 1;
  }
  for (int step = 1;; ++step) {
    if (auto err = darcy::test::drill_step(sys, master, step)) {
      std::cerr << darcy::render(err) << std::endl;
      return 1;
    }
    std::cout << "saving " << step << std::endl;
    auto saved = darcy::runtime::ask<darcy::checkpoint_manifest>(
      sys, master, std::chrono::minutes(1), darcy::save_atom::value, dir, int64_t{step},
      std::string{});
    if (!saved) {
      std::cerr << darcy::render(saved.error()) << std::endl;
      return 1;
    }
    std::cout << "saved " << step << std::endl;
  }
}
