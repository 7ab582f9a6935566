/* The nccl.h an NCCL program finds on its include path when it is built against trnccl. */
#include "trnccl/nccl_compat.h"
