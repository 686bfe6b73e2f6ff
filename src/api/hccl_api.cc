// Placeholder: the hccl C API lands here.
