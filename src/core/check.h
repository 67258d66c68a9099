// TESSERA_CHECK: aborts on a broken invariant (a bug), never on bad input;
// input errors are Status/Result (tessera/status.h).
#pragma once

#include <cstdio>
#include <cstdlib>

#define TESSERA_CHECK(cond)                                                          \
  do {                                                                               \
    if (!(cond)) {                                                                   \
      std::fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      std::abort();                                                                  \
    }                                                                                \
  } while (0)
