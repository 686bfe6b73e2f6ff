/* Vigil: the subset of CANN's acl API that HCCL programs call. */
#ifndef VIGIL_ACL_ACL_H_
#define VIGIL_ACL_ACL_H_

#include "acl/acl_base.h"
#include "acl/acl_rt.h"
#include "acl/acl_mdl.h"

#endif /* VIGIL_ACL_ACL_H_ */
