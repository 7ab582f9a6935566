// Not part of any build: tests/layering/CMakeLists.txt compiles this file as if it were a source
// of src/algorithms (same include path) and passes only if the compiler refuses the include
// below. Algorithms emit schedules; only the executor below them talks to transports.
#include "transports/core/transport.h"
