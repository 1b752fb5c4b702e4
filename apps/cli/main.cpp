// darcy: the command-line entry point. CLI parsing is a program edge, so CLI11's exceptions
// are caught there (run_command_line) and turned into one-line errors, and so is any other
// exception a command lets through: a command never aborts. The benchmarks are darcy-bench's.
#include "apps/cli/commands.hpp"
#include "messages/error.hpp"
#include "runtime/cluster/cluster_secret.hpp"
#include "runtime/tls.hpp"

int main(int argc, char** argv) {
  darcy::apps::keep_large_blocks_in_the_heap();
  CLI::App app{"Darcy: an actor runtime for colossal sparse models"};
  app.require_subcommand(1);
  // Every --help shows each option's default; subcommands inherit this.
  app.option_defaults()->always_capture_default();
  // Options of the top level, such as --log-level, may also follow the subcommand.
  app.fallthrough();
  darcy::apps::add_log_level_option(app);
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
  darcy::apps::add_demo_command(app, exit_code);
  darcy::apps::add_word2vec_command(app, exit_code);
  darcy::apps::add_wals_command(app, exit_code);
  darcy::apps::add_serve_command(app, exit_code);
  darcy::apps::add_moe_command(app, exit_code);
  darcy::apps::add_estimator_command(app, exit_code);
  darcy::apps::add_data_command(app, exit_code);
  return darcy::apps::run_command_line(app, argc, argv, exit_code);
}
