#include "cli/run_args.h"

namespace vigil::cli {

void SeparateRunCommand(const CLI::App& app, std::vector<std::string>* args) {
  if (args->empty() || (*args)[0] != "run") return;
  const auto runs = app.get_subcommands([](const CLI::App* a) { return a->get_name() == "run"; });
  if (runs.empty()) return;
  const CLI::App* run = runs[0];
  for (size_t i = 1; i < args->size(); ++i) {
    const std::string& word = (*args)[i];
    if (word == "--") return;
    if (word.size() < 2 || word[0] != '-') {
      args->insert(args->begin() + static_cast<std::ptrdiff_t>(i), "--");
      return;
    }
    // "--name=value", "-nVALUE", "--name VALUE", "-n VALUE" or a flag.
    const bool is_long = word[1] == '-';
    const size_t eq = word.find('=');
    const std::string name = is_long ? word.substr(0, eq) : word.substr(0, 2);
    const CLI::Option* opt = run->get_option_no_throw(name);
    if (opt == nullptr) return;  // not ours: the parser says so
    const bool value_attached = is_long ? eq != std::string::npos : word.size() > 2;
    if (opt->get_expected_min() > 0 && !value_attached) ++i;  // flags expect no value
  }
}

}  // namespace vigil::cli
