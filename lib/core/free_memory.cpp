#include "lib/core/free_memory.h"

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace oxi {

void return_free_memory() noexcept {
#if defined(__GLIBC__)
  // Unlike the automatic trim at the top of the main heap, malloc_trim(0) also releases free
  // pages inside every arena (madvise), where a worker thread's freed buffers stay otherwise.
  malloc_trim(0);
#endif
}

}  // namespace oxi
