// darcy: the command-line entry point. CLI parsing is a program edge, so CLI11's exceptions
// are caught here and turned into one-line errors, and so is any other exception a command
// lets through: a command never aborts.
#include <malloc.h>

#include <iostream>

#include "apps/cli/commands.hpp"
#include "messages/error.hpp"
#include "runtime/cluster/cluster_secret.hpp"
#include "runtime/log.hpp"
#include "runtime/tls.hpp"

int main(int argc, char** argv) {
  // Training moves batches of several MiB between threads every few milliseconds. Keeping such
  // blocks in the heap, instead of mapping and unmapping them each time, saves a page fault per
  // 4 KiB of every batch.
  mallopt(M_MMAP_THRESHOLD, 256 << 20);
  mallopt(M_TRIM_THRESHOLD, 512 << 20);
  CLI::App app{"Darcy: an actor runtime for colossal sparse models"};
  app.require_subcommand(1);
  // Every --help shows each option's default; subcommands inherit this.
  app.option_defaults()->always_capture_default();
  // Options of the top level, such as --log-level, may also follow the subcommand.
  app.fallthrough();
  std::string log_level{darcy::runtime::default_log_level};
  app.add_option("--log-level", log_level, "Least severe log message shown")
    ->envname("DARCY_LOG_LEVEL")
    ->check(CLI::IsMember(darcy::runtime::log_level_names()))
    ->each([](const std::string& level) { darcy::runtime::set_log_level(level); });
  std::string secret_file;
  app
    .add_option("--secret-file", secret_file,
                "The cluster secret (a file only its owner can read), for nodes and clients")
    ->envname("DARCY_SECRET_FILE")
    ->each([](const std::string& path) {
      auto secret = darcy::runtime::read_secret_file(path);
      if (!secret)
        throw CLI::ValidationError("--secret-file", darcy::render(secret.error()));
      darcy::runtime::set_client_credential(darcy::runtime::credential_of(*secret));
    });
  std::string tls_dir;
  app
    .add_option("--tls-dir", tls_dir,
                "TLS between nodes and clients: a directory with ca.pem, node.pem and node.key "
                "(scripts/make_tls.sh); every node and client of the cluster needs one")
    ->envname("DARCY_TLS_DIR")
    ->each([](const std::string& dir) {
      auto files = darcy::runtime::read_tls_dir(dir);
      if (!files)
        throw CLI::ValidationError("--tls-dir", darcy::render(files.error()));
      darcy::runtime::set_process_tls(*files);
    });
  int exit_code = 0;
  darcy::apps::add_node_command(app, exit_code);
  darcy::apps::add_cluster_command(app, exit_code);
  darcy::apps::add_chaos_command(app, exit_code);
  darcy::apps::add_bench_command(app, exit_code);
  darcy::apps::add_demo_command(app, exit_code);
  darcy::apps::add_word2vec_command(app, exit_code);
  darcy::apps::add_wals_command(app, exit_code);
  darcy::apps::add_serve_command(app, exit_code);
  darcy::apps::add_moe_command(app, exit_code);
  darcy::apps::add_estimator_command(app, exit_code);
  darcy::apps::add_data_command(app, exit_code);
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "darcy: error: " << e.what() << " (see darcy --help)" << std::endl;
    return 2;
  } catch (const std::bad_alloc&) {
    // Commands bound what they allocate; this is the last line of defence.
    return darcy::apps::fail("out of memory: the machine cannot hold what this run asks for");
  } catch (const std::exception& e) {
    // A command's own failures are caf::errors; whatever a library throws becomes one line too.
    return darcy::apps::fail(std::string{"unexpected failure: "} + e.what());
  }
  return exit_code;
}

namespace darcy::apps {

int fail(const std::string& message) {
  std::cerr << "darcy: error: " << message << std::endl;
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

} // namespace darcy::apps
