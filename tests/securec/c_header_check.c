/* securec.h compiles as C (C99, pedantic, warnings as errors) and links from C: this file is
 * built into securec_test, which calls the function below. */
#include "securec.h"

/* Formats "<prefix>-<n>" into out through the C declarations; returns snprintf_s's result. */
int VigilSecurecFromC(char* out, size_t size, const char* prefix, int n) {
  errno_t rc = memset_s(out, size, 0, size);
  if (rc != EOK) return -100 - rc;
  return snprintf_s(out, size, size - 1, "%s-%d", prefix, n);
}
