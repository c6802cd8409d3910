#include "lib/core/error.h"
#include "tools/oxinfer/commands.h"

namespace oxi::cli {

int run_pull(const Argv&) { throw oxi::Error("oxinfer pull", "not implemented yet"); }

}  // namespace oxi::cli
