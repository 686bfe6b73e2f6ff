/* The hccl headers compile as C (C11, warnings as errors): this file is built into
 * hccl_types_test, which calls the function below. */
#include "hccl/hccl.h"
#include "hccl/hccl_sym_win.h"

_Static_assert(sizeof(HcclCommConfig) == 2248, "HcclCommConfig as HCCL's version 11");
_Static_assert(sizeof(HcclRootInfo) == 4108, "HcclRootInfo");

/* HcclCommConfigInit's buffer size and exec timeout, as C code sees them. */
uint32_t VigilCConfigBufferSize(int32_t* exec_timeout) {
  HcclCommConfig config;
  HcclConfigValue value;
  HcclCommSymWindow window = 0;
  HcclCommStatus status = HCCL_COMM_STATUS_READY;
  bool in_group = false;
  (void)window;
  (void)status;
  (void)in_group;
  value.value = 0;
  (void)value;
  HcclCommConfigInit(&config);
  *exec_timeout = config.hcclExecTimeOut;
  return config.hcclBufferSize;
}
