// pstrain man [SUBCOMMAND]: prints pstrain(1), or pstrain-SUBCOMMAND(1),
// generated from the flags and --help texts of this very binary.

#include <iostream>

#include "apps/pstrain/command.h"
#include "apps/pstrain/man_page.h"

namespace pstrain::apps {

RunFn SetupMan(CLI::App* sub) {
  auto name = std::make_shared<std::string>();
  sub->add_option("subcommand", *name, "The subcommand whose page to print");
  return [sub, name] {
    auto page =
        ManPage(BuildCliModel(*sub->get_parent()), *name, PSTRAIN_VERSION);
    if (!page.ok()) {
      std::cerr << "pstrain: error: " << page.status().message() << "\n";
      return 2;
    }
    std::cout << *page;
    return 0;
  };
}

}  // namespace pstrain::apps
