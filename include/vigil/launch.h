/* Vigil: how a multi-process HCCL program finds its rank, the rank count and the root info
 * without writing its own exchange. Header-only (no extra library), C++17-clean.
 *
 *   rank / size : RANK_ID / RANK_SIZE (set by `vigil run`), else OMPI_COMM_WORLD_RANK / _SIZE
 *                 (OpenMPI's mpirun), else SLURM_PROCID / SLURM_NTASKS (srun), else PMI_RANK / PMI_SIZE.
 *   root info   : VIGIL_ROOT_INFO (hex, set by `vigil run`, whose launcher serves the rendezvous),
 *                 else the file VIGIL_ROOT_INFO_FILE: rank 0 calls HcclGetRootInfo and writes it
 *                 (atomically, readable by its owner only: it carries the job key), the other
 *                 ranks wait for it (up to HCCL_CONNECT_TIMEOUT or 120 s).
 */
#ifndef VIGIL_LAUNCH_H_
#define VIGIL_LAUNCH_H_

#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "hccl/hccl.h"

static inline int VigilEnvU32(const char* name, uint32_t* out) {
  const char* v = getenv(name);
  if (v == NULL || *v == '\0') return 0;
  char* end = NULL;
  unsigned long x = strtoul(v, &end, 10);
  if (end == v || *end != '\0') return 0;
  *out = (uint32_t)x;
  return 1;
}

/* Returns 1 and fills rank/size when a launcher's variables are present. */
static inline int VigilLaunchRank(uint32_t* rank, uint32_t* size) {
  static const char* const kPairs[][2] = {{"RANK_ID", "RANK_SIZE"},
                                          {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                          {"SLURM_PROCID", "SLURM_NTASKS"},
                                          {"PMI_RANK", "PMI_SIZE"}};
  for (size_t i = 0; i < sizeof(kPairs) / sizeof(kPairs[0]); ++i) {
    if (VigilEnvU32(kPairs[i][0], rank) && VigilEnvU32(kPairs[i][1], size)) return 1;
  }
  return 0;
}

static inline int VigilHexNibble(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

/* Decodes VIGIL_ROOT_INFO-style hex; 1 on success. */
static inline int VigilRootInfoFromHex(const char* hex, HcclRootInfo* info) {
  if (hex == NULL || strlen(hex) != 2 * sizeof(info->internal)) return 0;
  for (size_t i = 0; i < sizeof(info->internal); ++i) {
    int hi = VigilHexNibble(hex[2 * i]), lo = VigilHexNibble(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return 0;
    info->internal[i] = (char)((hi << 4) | lo);
  }
  return 1;
}

/* The root info for this rank (see the header comment). HCCL_E_NOT_FOUND when neither
 * VIGIL_ROOT_INFO nor VIGIL_ROOT_INFO_FILE is set; HCCL_E_TIMEOUT when the file never came. */
static inline HcclResult VigilLaunchRootInfo(uint32_t rank, HcclRootInfo* info) {
  const char* hex = getenv("VIGIL_ROOT_INFO");
  if (hex != NULL && *hex != '\0') return VigilRootInfoFromHex(hex, info) ? HCCL_SUCCESS : HCCL_E_PARA;
  const char* path = getenv("VIGIL_ROOT_INFO_FILE");
  if (path == NULL || *path == '\0') return HCCL_E_NOT_FOUND;
  if (rank == 0) {
    HcclResult rc = HcclGetRootInfo(info);
    if (rc != HCCL_SUCCESS) return rc;
    char tmp[4096];
    snprintf(tmp, sizeof(tmp), "%s.tmp.%d", path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    FILE* f = fd >= 0 ? fdopen(fd, "wb") : NULL;
    if (f == NULL) {
      if (fd >= 0) close(fd);
      return HCCL_E_OPEN_FILE_FAILURE;
    }
    size_t written = fwrite(info->internal, 1, sizeof(info->internal), f);
    fclose(f);
    if (written != sizeof(info->internal) || rename(tmp, path) != 0) return HCCL_E_OPEN_FILE_FAILURE;
    return HCCL_SUCCESS;
  }
  uint32_t wait_s = 120;
  VigilEnvU32("HCCL_CONNECT_TIMEOUT", &wait_s);
  for (uint64_t waited_ms = 0; waited_ms <= (uint64_t)wait_s * 1000; waited_ms += 20) {
    FILE* f = fopen(path, "rb");
    if (f != NULL) {
      size_t got = fread(info->internal, 1, sizeof(info->internal), f);
      fclose(f);
      if (got == sizeof(info->internal)) return HCCL_SUCCESS;
    }
    struct timespec ts = {0, 20 * 1000 * 1000};
    nanosleep(&ts, NULL);
  }
  return HCCL_E_TIMEOUT;
}

#endif /* VIGIL_LAUNCH_H_ */
