#include "lib/core/error.h"
#include "tools/oxinfer/commands.h"

namespace oxi::cli {

int run_inspect(const Argv&) { throw oxi::Error("oxinfer inspect", "not implemented yet"); }

}  // namespace oxi::cli
