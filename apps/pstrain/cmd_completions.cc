// pstrain completions SHELL: prints the completion script for bash, zsh or
// fish, generated from the flags of this very binary.

#include <iostream>

#include "apps/pstrain/command.h"
#include "apps/pstrain/completion_script.h"

namespace pstrain::apps {

RunFn SetupCompletions(CLI::App* sub) {
  auto shell = std::make_shared<std::string>();
  sub->add_option("shell", *shell, "bash, zsh or fish")->required();
  return [sub, shell] {
    auto script = CompletionScript(BuildCliModel(*sub->get_parent()), *shell);
    if (!script.ok()) {
      std::cerr << "pstrain: error: " << script.status().message() << "\n";
      return 2;
    }
    std::cout << *script;
    return 0;
  };
}

}  // namespace pstrain::apps
