#include "lib/core/error.h"
#include "tools/oxinfer/commands.h"

namespace oxi::cli {

int run_devices(const Argv&) { throw oxi::Error("oxinfer devices", "not implemented yet"); }

}  // namespace oxi::cli
